//! Write: create or overwrite a file (or append to it), creating missing parent directories.

use std::io::Write as _;
use std::path::PathBuf;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{diff_base, unified_diff};
use crate::access::{Access, FileOperation};
use crate::context::{ProgressSink, ToolContext};
use crate::error::ToolError;
use crate::path::{PathUse, resolve_path};
use crate::result::ToolResult;
use crate::tool::{Execution, Resolution, RuleSubject, Tool, ToolDisplay, ToolPlan, parse_args};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
enum Mode {
    #[default]
    Overwrite,
    Append,
}

#[derive(Debug, Deserialize)]
struct Params {
    path: String,
    content: String,
    #[serde(default)]
    mode: Mode,
}

#[derive(Debug, Default)]
pub struct WriteTool;

#[async_trait]
impl Tool for WriteTool {
    fn name(&self) -> &str {
        "Write"
    }

    fn description(&self) -> String {
        "Write a file. `content` is written verbatim; mode `overwrite` (default) replaces the file, `append` adds to its end \
         (no newline is added). Missing parent directories are created. An existing file must have been read first."
            .to_owned()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path of the file to write."},
                "content": {"type": "string", "description": "The content to write."},
                "mode": {"type": "string", "enum": ["overwrite", "append"], "description": "overwrite (default) or append."}
            },
            "required": ["path", "content"],
            "additionalProperties": false
        })
    }

    fn resolve(&self, args: Value, ctx: &ToolContext) -> Result<Resolution, ToolError> {
        let params: Params = parse_args(args)?;
        let path = resolve_path(ctx, &params.path, PathUse::Write)?;
        let shown = path.display().to_string();
        let (exists, base) = if ctx.environment.is_local() {
            (path.exists(), diff_base(&path))
        } else {
            let stat = ctx.environment.stat(&path)?;
            let base = stat
                .filter(|s| s.len <= super::MAX_DIFF_BYTES)
                .and_then(|_| ctx.environment.read_regular(&path).ok()?.ok())
                .and_then(|bytes| String::from_utf8(bytes).ok());
            (stat.is_some(), base)
        };
        let diff = match (exists, base) {
            (false, _) => Some(unified_diff(&shown, "", &params.content)),
            (true, Some(old)) => Some(match params.mode {
                Mode::Overwrite => unified_diff(&shown, &old, &params.content),
                Mode::Append => unified_diff(&shown, &old, &format!("{old}{}", params.content)),
            }),
            (true, None) => None,
        };
        let plan = ToolPlan {
            accesses: Some(vec![Access::file(FileOperation::Write, shown.clone())]),
            approval_rule: format!("Write({shown})"),
            subject: RuleSubject::Path(shown.clone()),
            display: ToolDisplay {
                kind: "write".to_owned(),
                summary: shown.clone(),
                detail: None,
                diff,
            },
            description: format!("Write {shown}"),
            stop_batch_after_this: false,
        };
        Ok(Resolution::Run(Box::new(WriteExecution {
            plan,
            path,
            content: params.content,
            mode: params.mode,
        })))
    }
}

struct WriteExecution {
    plan: ToolPlan,
    path: PathBuf,
    content: String,
    mode: Mode,
}

#[async_trait]
impl Execution for WriteExecution {
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
            return write_remote(ctx, *self).await;
        }
        let shown = self.path.display().to_string();
        // Checked now rather than at planning: a Read earlier in the same batch counts.
        if let Err(err) = ctx.stale.check(&self.path) {
            return ToolResult::error(err.to_string());
        }
        if let Err(msg) = crate::path::check_unchanged_since_approval(&self.path) {
            return ToolResult::error(msg);
        }
        if self.path.is_dir() {
            return ToolResult::error(format!(
                "`{shown}` is a directory; give the path of a file."
            ));
        }
        // Opening a FIFO for writing blocks until a reader appears: refuse non-regular files.
        if let Err(err) = super::regular::check_writable_target(&self.path) {
            return ToolResult::error(err.to_string());
        }
        if let Some(parent) = self.path.parent()
            && let Err(e) = std::fs::create_dir_all(parent)
        {
            return ToolResult::error(format!(
                "Cannot create the parent directories of `{shown}`: {e}"
            ));
        }
        let written = match self.mode {
            Mode::Overwrite => std::fs::write(&self.path, &self.content),
            Mode::Append => std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.path)
                .and_then(|mut f| f.write_all(self.content.as_bytes())),
        };
        if let Err(e) = written {
            return ToolResult::error(format!("Cannot write `{shown}`: {e}"));
        }
        ctx.stale.record(&self.path);
        let bytes = self.content.len();
        match self.mode {
            Mode::Overwrite => ToolResult::ok(format!("Wrote {bytes} bytes to {shown}")),
            Mode::Append => ToolResult::ok(format!("Appended {bytes} bytes to {shown}")),
        }
    }
}

/// Write on a remote target: the same checks in the same order, each on the target.
async fn write_remote(ctx: &ToolContext, this: WriteExecution) -> ToolResult {
    let env = ctx.environment.clone();
    let stale = ctx.stale.clone();
    let done = tokio::task::spawn_blocking(move || {
        let path = &this.path;
        let shown = path.display().to_string();
        if let Err(err) = stale.check_stat(path, env.stat(path)?) {
            return Ok(ToolResult::error(err.to_string()));
        }
        if let Err(msg) = env.check_unchanged(path)? {
            return Ok(ToolResult::error(msg));
        }
        let append = this.mode == Mode::Append;
        match env.write_file(path, this.content.as_bytes(), append)? {
            Ok(stamp) => stale.record_stat(path, stamp),
            Err(msg) => return Ok(ToolResult::error(msg)),
        }
        let bytes = this.content.len();
        Ok::<_, crate::environment::EnvError>(if append {
            ToolResult::ok(format!("Appended {bytes} bytes to {shown}"))
        } else {
            ToolResult::ok(format!("Wrote {bytes} bytes to {shown}"))
        })
    })
    .await;
    match done {
        Ok(Ok(result)) => result,
        Ok(Err(e)) => ToolResult::error(e.to_string()),
        Err(e) => ToolResult::error(format!("Write failed: {e}")),
    }
}
