//! The built-in tools, one file each, plus helpers they share.

pub mod ask;
pub mod bash;
pub mod edit;
pub mod fetch;
pub mod glob;
pub mod grep;
pub mod media;
pub mod read;
pub(crate) mod regular;
pub mod task_tools;
mod text;
pub mod todo;
mod walk;
pub mod web_search;
pub mod write;

pub use ask::AskUserQuestionTool;
pub use bash::BashTool;
pub use edit::EditTool;
pub use fetch::{FetchService, FetchUrlTool};
pub use glob::GlobTool;
pub use grep::GrepTool;
pub use media::ReadMediaFileTool;
pub use read::ReadTool;
pub use task_tools::{TaskListTool, TaskOutputTool, TaskStopTool, WaitForTool};
pub use todo::TodoListTool;
pub use web_search::WebSearchTool;
pub use write::WriteTool;

/// Files larger than this get no diff in the approval display (too slow and too long to show).
pub(crate) const MAX_DIFF_BYTES: u64 = 1024 * 1024;

/// The current text of a file for a display diff; `None` when missing, not text, or too large.
pub(crate) fn diff_base(path: &std::path::Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if meta.len() > MAX_DIFF_BYTES {
        return None;
    }
    String::from_utf8(regular::read_regular(path).ok()?).ok()
}

/// Unified diff of a file change for the approval display.
pub(crate) fn unified_diff(path: &str, old: &str, new: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

/// A registry with every built-in tool that needs no host services.
pub fn default_registry() -> crate::registry::ToolRegistry {
    let mut reg = crate::registry::ToolRegistry::new();
    reg.register(std::sync::Arc::new(ReadTool));
    reg.register(std::sync::Arc::new(WriteTool));
    reg.register(std::sync::Arc::new(EditTool));
    reg.register(std::sync::Arc::new(GlobTool));
    reg.register(std::sync::Arc::new(GrepTool));
    reg.register(std::sync::Arc::new(BashTool));
    reg.register(std::sync::Arc::new(TaskListTool));
    reg.register(std::sync::Arc::new(TaskOutputTool));
    reg.register(std::sync::Arc::new(TaskStopTool));
    reg.register(std::sync::Arc::new(WaitForTool));
    reg.register(std::sync::Arc::new(TodoListTool));
    reg.register(std::sync::Arc::new(AskUserQuestionTool));
    reg.register(std::sync::Arc::new(FetchUrlTool::default()));
    reg.register(std::sync::Arc::new(ReadMediaFileTool));
    reg
}
