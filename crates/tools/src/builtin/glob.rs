//! Glob: files under a directory matching a glob pattern (brace sets allowed), newest first.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::walk::{mtime, walk_builder};
use crate::context::{ProgressSink, ToolContext};
use crate::error::ToolError;
use crate::path::{PathUse, is_sensitive_path, resolve_path};
use crate::result::ToolResult;
use crate::tool::{Execution, Resolution, Tool, ToolPlan, parse_args};

pub const MAX_RESULTS: usize = 100;
pub const TIME_BUDGET: Duration = Duration::from_secs(20);

#[derive(Debug, Deserialize)]
struct Params {
    pattern: String,
    path: Option<String>,
    #[serde(default)]
    include_ignored: bool,
    /// Accepted for compatibility; results are files only.
    #[serde(default)]
    #[allow(dead_code)]
    include_dirs: bool,
}

#[derive(Debug, Default)]
pub struct GlobTool;

#[async_trait]
impl Tool for GlobTool {
    fn name(&self) -> &str {
        "Glob"
    }

    fn description(&self) -> String {
        format!(
            "Find files by glob pattern (for example `**/*.rs` or `src/**/*.{{ts,tsx}}`), relative to `path` \
             (default: the working directory). Returns absolute paths, most recently modified first, at most {MAX_RESULTS}. \
             Files ignored by .gitignore are skipped unless include_ignored is true."
        )
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Glob pattern relative to path; `**` crosses directories, `{a,b}` alternatives."},
                "path": {"type": "string", "description": "Directory to search (default: working directory)."},
                "include_ignored": {"type": "boolean", "description": "Also return files ignored by ignore files."},
                "include_dirs": {"type": "boolean", "description": "Accepted but ignored: results are files only."}
            },
            "required": ["pattern"],
            "additionalProperties": false
        })
    }

    fn resolve(&self, args: Value, ctx: &ToolContext) -> Result<Resolution, ToolError> {
        let params: Params = parse_args(args)?;
        let root = match &params.path {
            Some(p) => resolve_path(ctx, p, PathUse::Read)?,
            None => crate::path::canonical_cwd(ctx)?,
        };
        let mut pattern = params.pattern.trim_start_matches("./").to_owned();
        // An absolute pattern inside the searched directory is made relative to it.
        if pattern.starts_with('/') {
            let prefix = format!("{}/", root.display());
            match pattern.strip_prefix(&prefix) {
                Some(rest) => pattern = rest.to_owned(),
                None => {
                    return Err(ToolError::InvalidArgs(format!(
                        "pattern `{pattern}` is absolute and outside `{}`; put the directory in path and keep the pattern relative.",
                        root.display()
                    )));
                }
            }
        }
        if pattern.is_empty() {
            return Err(ToolError::InvalidArgs(
                "pattern must not be empty".to_owned(),
            ));
        }
        let matcher = compile(&pattern)?;
        let plan = ToolPlan::search("Glob", &params.pattern, &root, "Find files matching");
        Ok(Resolution::Run(Box::new(GlobExecution {
            plan,
            root,
            matcher,
            pattern,
            include_ignored: params.include_ignored,
        })))
    }
}

fn compile(pattern: &str) -> Result<globset::GlobMatcher, ToolError> {
    Ok(globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| ToolError::InvalidArgs(format!("invalid glob pattern `{pattern}`: {e}")))?
        .compile_matcher())
}

/// The walk of an already-resolved `root` for a relative `pattern`: what the executor runs on
/// a remote target (the same code as a local Glob).
pub fn search(
    root: &std::path::Path,
    pattern: &str,
    include_ignored: bool,
    cancel: &CancellationToken,
) -> ToolResult {
    match compile(pattern) {
        Ok(matcher) => GlobExecution {
            plan: ToolPlan::search("Glob", pattern, root, "Find files matching"),
            root: root.to_path_buf(),
            matcher,
            pattern: pattern.to_owned(),
            include_ignored,
        }
        .run(cancel),
        Err(e) => ToolResult::error(e.to_string()),
    }
}

struct GlobExecution {
    plan: ToolPlan,
    root: PathBuf,
    matcher: globset::GlobMatcher,
    pattern: String,
    include_ignored: bool,
}

#[async_trait]
impl Execution for GlobExecution {
    fn plan(&self) -> &ToolPlan {
        &self.plan
    }

    async fn execute(
        self: Box<Self>,
        ctx: &ToolContext,
        cancel: CancellationToken,
        _progress: ProgressSink,
    ) -> ToolResult {
        let this = *self;
        if ctx.environment.is_local() {
            return tokio::task::spawn_blocking(move || this.run(&cancel))
                .await
                .unwrap_or_else(|e| ToolResult::error(format!("Glob failed: {e}")));
        }
        // On a remote target the walk runs where the files are; only results come back.
        let request = crate::environment::GlobRequest {
            root: this.root,
            pattern: this.pattern,
            include_ignored: this.include_ignored,
        };
        let env = ctx.environment.clone();
        tokio::task::spawn_blocking(move || env.glob(&request, &cancel))
            .await
            .map_err(|e| format!("Glob failed: {e}"))
            .and_then(|r| r.map_err(|e| e.to_string()))
            .unwrap_or_else(ToolResult::error)
    }
}

impl GlobExecution {
    fn run(&self, cancel: &CancellationToken) -> ToolResult {
        let shown = self.root.display();
        if !self.root.is_dir() {
            return ToolResult::error(format!(
                "`{shown}` is not a directory. Give Glob a directory as path."
            ));
        }
        let started = Instant::now();
        let mut found: Vec<(std::time::SystemTime, PathBuf)> = Vec::new();
        let mut sensitive = 0usize;
        let mut timed_out = false;
        for entry in walk_builder(&self.root, self.include_ignored).build() {
            if cancel.is_cancelled() {
                return ToolResult::error("Glob was cancelled.");
            }
            if started.elapsed() > TIME_BUDGET {
                timed_out = true;
                break;
            }
            let Ok(entry) = entry else { continue };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let Ok(rel) = entry.path().strip_prefix(&self.root) else {
                continue;
            };
            if !self.matcher.is_match(rel) {
                continue;
            }
            if is_sensitive_path(entry.path()) {
                sensitive += 1;
                continue;
            }
            found.push((mtime(entry.path()), entry.path().to_path_buf()));
        }
        found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        let total = found.len();
        let mut lines: Vec<String> = found
            .iter()
            .take(MAX_RESULTS)
            .map(|(_, p)| p.display().to_string())
            .collect();
        if total == 0 {
            lines.push(format!("No files matched the pattern in {shown}."));
        }
        if total > MAX_RESULTS {
            lines.push(format!(
                "Found {total} files; only the {MAX_RESULTS} most recently modified are shown. Use a more specific pattern or path."
            ));
        }
        if sensitive > 0 {
            lines.push(format!(
                "{sensitive} sensitive file(s) were filtered from the results."
            ));
        }
        if timed_out {
            lines.push(format!(
                "Glob timed out after {} s; the results are partial.",
                TIME_BUDGET.as_secs()
            ));
        }
        ToolResult::ok(lines.join("\n"))
    }
}
