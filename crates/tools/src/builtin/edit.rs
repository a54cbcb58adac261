//! Edit: exact string replacement in a file, matched against the Read view (LF for pure-CRLF
//! files, whose CRLF endings are restored on write).

use std::path::PathBuf;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::unified_diff;
use crate::access::{Access, FileOperation};
use crate::context::{ProgressSink, ToolContext};
use crate::error::ToolError;
use crate::path::{PathUse, resolve_path};
use crate::result::ToolResult;
use crate::tool::{Execution, Resolution, RuleSubject, Tool, ToolDisplay, ToolPlan, parse_args};

#[derive(Debug, Deserialize)]
struct Params {
    path: String,
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

#[derive(Debug, Default)]
pub struct EditTool;

/// A file as Edit sees it.
struct EditView {
    bom: bool,
    crlf: bool,
    text: String,
}

fn load(path: &std::path::Path) -> Result<EditView, String> {
    let shown = path.display();
    // Only regular files: a FIFO would block the open (at planning already) forever.
    let bytes = match super::regular::read_regular(path) {
        Ok(b) => b,
        Err(super::regular::NotRegular::Missing(_)) => {
            return Err(format!(
                "`{shown}` does not exist. Use Write to create a new file."
            ));
        }
        Err(err) => return Err(err.to_string()),
    };
    view_of(path, bytes)
}

/// [`load`] through the context's environment (a remote target reads over its connection).
fn load_in(
    env: &dyn crate::environment::Environment,
    path: &std::path::Path,
) -> Result<Result<EditView, String>, crate::environment::EnvError> {
    Ok(match env.read_regular(path)? {
        Ok(bytes) => view_of(path, bytes),
        Err(crate::environment::ReadError::Missing(_)) => Err(format!(
            "`{}` does not exist. Use Write to create a new file.",
            path.display()
        )),
        Err(crate::environment::ReadError::Other(msg)) => Err(msg),
    })
}

fn view_of(path: &std::path::Path, bytes: Vec<u8>) -> Result<EditView, String> {
    let shown = path.display();
    let (bom, body) = match bytes.strip_prefix(&[0xEF, 0xBB, 0xBF]) {
        Some(rest) => (true, rest.to_vec()),
        None => (false, bytes),
    };
    let text = String::from_utf8(body)
        .map_err(|_| format!("`{shown}` is not UTF-8 text; Edit only changes UTF-8 files."))?;
    if text.contains('\0') {
        return Err(format!(
            "`{shown}` appears to be a binary file; Edit only changes text files."
        ));
    }
    let crlf_count = text.matches("\r\n").count();
    let lf_count = text.matches('\n').count();
    let crlf = crlf_count > 0 && crlf_count == lf_count;
    let text = if crlf {
        text.replace("\r\n", "\n")
    } else {
        text
    };
    Ok(EditView { bom, crlf, text })
}

/// The edited text, or the message telling the model what to do instead.
fn apply(
    view: &EditView,
    path: &str,
    old: &str,
    new: &str,
    replace_all: bool,
) -> Result<(String, usize), String> {
    let (old, new) = if view.crlf {
        (old.replace("\r\n", "\n"), new.replace("\r\n", "\n"))
    } else {
        (old.to_owned(), new.to_owned())
    };
    let count = view.text.matches(old.as_str()).count();
    match count {
        0 => Err(format!(
            "old_string was not found in `{path}`. Read the file again and copy the exact text to replace, \
             including whitespace and indentation."
        )),
        1 => Ok((view.text.replacen(old.as_str(), &new, 1), 1)),
        n if replace_all => Ok((view.text.replace(old.as_str(), &new), n)),
        n => Err(format!(
            "old_string matches {n} places in `{path}`. Include more surrounding lines in old_string to make it unique, \
             or set replace_all to true to replace every occurrence."
        )),
    }
}

fn encode(view: &EditView, text: &str) -> Vec<u8> {
    let text = if view.crlf {
        text.replace('\n', "\r\n")
    } else {
        text.to_owned()
    };
    let mut out = Vec::with_capacity(text.len() + 3);
    if view.bom {
        out.extend_from_slice(&[0xEF, 0xBB, 0xBF]);
    }
    out.extend_from_slice(text.as_bytes());
    out
}

#[async_trait]
impl Tool for EditTool {
    fn name(&self) -> &str {
        "Edit"
    }

    fn description(&self) -> String {
        "Replace exact text in a file. old_string must match the file as Read shows it and must be unique unless \
         replace_all is true. The file must have been read first."
            .to_owned()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path of the file to edit."},
                "old_string": {"type": "string", "minLength": 1, "description": "The exact text to replace."},
                "new_string": {"type": "string", "description": "The replacement text."},
                "replace_all": {"type": "boolean", "description": "Replace every occurrence (default false)."}
            },
            "required": ["path", "old_string", "new_string"],
            "additionalProperties": false
        })
    }

    fn resolve(&self, args: Value, ctx: &ToolContext) -> Result<Resolution, ToolError> {
        let params: Params = parse_args(args)?;
        if params.old_string.is_empty() {
            return Err(ToolError::InvalidArgs(
                "old_string must not be empty".to_owned(),
            ));
        }
        if params.old_string == params.new_string {
            return Ok(Resolution::Result(ToolResult::error(
                "old_string and new_string are identical, so there is nothing to change. Provide different text in new_string.",
            )));
        }
        let path = resolve_path(ctx, &params.path, PathUse::Write)?;
        let shown = path.display().to_string();
        // The diff is only for the approval display; the edit itself re-reads the file.
        let view = if ctx.environment.is_local() {
            let small = std::fs::metadata(&path).is_ok_and(|m| m.len() <= super::MAX_DIFF_BYTES);
            small.then(|| load(&path).ok()).flatten()
        } else {
            let small = ctx
                .environment
                .stat(&path)?
                .is_some_and(|s| s.len <= super::MAX_DIFF_BYTES);
            if small {
                load_in(ctx.environment.as_ref(), &path)?.ok()
            } else {
                None
            }
        };
        let diff = view.and_then(|view| {
            apply(
                &view,
                &shown,
                &params.old_string,
                &params.new_string,
                params.replace_all,
            )
            .ok()
            .map(|(new, _)| unified_diff(&shown, &view.text, &new))
        });
        let plan = ToolPlan {
            accesses: Some(vec![Access::file(FileOperation::Readwrite, shown.clone())]),
            approval_rule: format!("Edit({shown})"),
            subject: RuleSubject::Path(shown.clone()),
            display: ToolDisplay {
                kind: "edit".to_owned(),
                summary: shown.clone(),
                detail: None,
                diff,
            },
            description: format!("Edit {shown}"),
            stop_batch_after_this: false,
        };
        Ok(Resolution::Run(Box::new(EditExecution {
            plan,
            path,
            params,
        })))
    }
}

struct EditExecution {
    plan: ToolPlan,
    path: PathBuf,
    params: Params,
}

#[async_trait]
impl Execution for EditExecution {
    fn plan(&self) -> &ToolPlan {
        &self.plan
    }

    async fn execute(
        self: Box<Self>,
        ctx: &ToolContext,
        _cancel: CancellationToken,
        _progress: ProgressSink,
    ) -> ToolResult {
        if !ctx.environment.is_local() {
            return edit_remote(ctx, *self).await;
        }
        let shown = self.path.display().to_string();
        if let Err(msg) = crate::path::check_unchanged_since_approval(&self.path) {
            return ToolResult::error(msg);
        }
        let view = match load(&self.path) {
            Ok(v) => v,
            Err(msg) => return ToolResult::error(msg),
        };
        if let Err(err) = ctx.stale.check(&self.path) {
            return ToolResult::error(err.to_string());
        }
        let p = &self.params;
        let (new_text, count) =
            match apply(&view, &shown, &p.old_string, &p.new_string, p.replace_all) {
                Ok(done) => done,
                Err(msg) => return ToolResult::error(msg),
            };
        if let Err(e) = std::fs::write(&self.path, encode(&view, &new_text)) {
            return ToolResult::error(format!("Cannot write `{shown}`: {e}"));
        }
        ctx.stale.record(&self.path);
        ToolResult::ok(format!("Replaced {count} occurrence(s) in {shown}"))
    }
}

/// Edit on a remote target: the file is read, changed here and written back, with the same
/// checks as locally, each on the target.
async fn edit_remote(ctx: &ToolContext, this: EditExecution) -> ToolResult {
    let env = ctx.environment.clone();
    let stale = ctx.stale.clone();
    let done = tokio::task::spawn_blocking(move || {
        let path = &this.path;
        let shown = path.display().to_string();
        if let Err(msg) = env.check_unchanged(path)? {
            return Ok(ToolResult::error(msg));
        }
        let view = match load_in(env.as_ref(), path)? {
            Ok(v) => v,
            Err(msg) => return Ok(ToolResult::error(msg)),
        };
        if let Err(err) = stale.check_stat(path, env.stat(path)?) {
            return Ok(ToolResult::error(err.to_string()));
        }
        let p = &this.params;
        let (new_text, count) =
            match apply(&view, &shown, &p.old_string, &p.new_string, p.replace_all) {
                Ok(done) => done,
                Err(msg) => return Ok(ToolResult::error(msg)),
            };
        match env.write_file(path, &encode(&view, &new_text), false)? {
            Ok(stamp) => stale.record_stat(path, stamp),
            Err(msg) => return Ok(ToolResult::error(msg)),
        }
        Ok::<_, crate::environment::EnvError>(ToolResult::ok(format!(
            "Replaced {count} occurrence(s) in {shown}"
        )))
    })
    .await;
    match done {
        Ok(Ok(result)) => result,
        Ok(Err(e)) => ToolResult::error(e.to_string()),
        Err(e) => ToolResult::error(format!("Edit failed: {e}")),
    }
}
