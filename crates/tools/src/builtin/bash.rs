//! Bash: run a shell command in its own process group, streaming output; a foreground command
//! that hits its timeout moves to the background instead of dying (when allowed).

use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::context::{ProgressSink, ToolContext, ToolProgress};
use crate::error::ToolError;
use crate::path::{PathUse, canonical_cwd, resolve_path};
use crate::result::{ToolResult, ToolResultBuilder};
use crate::tasks::{OutputChunk, TaskInfo, TaskSpec, TaskStatus};
use crate::tool::{Execution, Resolution, RuleSubject, Tool, ToolDisplay, ToolPlan, parse_args};

pub const FOREGROUND_DEFAULT_S: u64 = 60;
pub const FOREGROUND_MAX_S: u64 = 300;
pub const BACKGROUND_DEFAULT_S: u64 = 600;
pub const BACKGROUND_MAX_S: u64 = 86_400;

#[derive(Debug, Deserialize)]
struct Params {
    command: String,
    cwd: Option<String>,
    timeout: Option<u64>,
    description: Option<String>,
    #[serde(default)]
    run_in_background: bool,
    #[serde(default)]
    disable_timeout: bool,
}

#[derive(Debug, Default)]
pub struct BashTool;

#[async_trait]
impl Tool for BashTool {
    fn name(&self) -> &str {
        "Bash"
    }

    fn description(&self) -> String {
        format!(
            "Run a shell command. stdin is closed; NO_COLOR=1 and TERM=dumb are set. `timeout` is in seconds: foreground \
             default {FOREGROUND_DEFAULT_S}, max {FOREGROUND_MAX_S}; a foreground command that runs out of time is moved \
             to the background. With run_in_background (description required) the command runs as a background task \
             (default {BACKGROUND_DEFAULT_S} s, max {BACKGROUND_MAX_S} s, or no limit with disable_timeout); you are \
             notified when it finishes. Use TaskOutput, WaitFor and TaskStop to manage background tasks."
        )
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "minLength": 1, "description": "The command to run."},
                "cwd": {"type": "string", "description": "Working directory (default: the session's working directory)."},
                "timeout": {"type": "integer", "minimum": 1, "description": "Timeout in seconds."},
                "description": {"type": "string", "description": "Short description; required with run_in_background."},
                "run_in_background": {"type": "boolean", "description": "Run as a background task and return at once."},
                "disable_timeout": {"type": "boolean", "description": "Background only: no time limit."}
            },
            "required": ["command"],
            "additionalProperties": false
        })
    }

    fn resolve(&self, args: Value, ctx: &ToolContext) -> Result<Resolution, ToolError> {
        let p: Params = parse_args(args)?;
        if p.command.trim().is_empty() {
            return Err(ToolError::InvalidArgs(
                "command must not be empty.".to_owned(),
            ));
        }
        let timeout = if p.run_in_background {
            if !ctx.settings.background_enabled {
                return Err(ToolError::InvalidArgs(
                    "run_in_background is not available for this agent; run the command in the foreground.".to_owned(),
                ));
            }
            if p.description.as_deref().is_none_or(|d| d.trim().is_empty()) {
                return Err(ToolError::InvalidArgs(
                    "description is required when run_in_background is true.".to_owned(),
                ));
            }
            match (p.disable_timeout, p.timeout) {
                (true, _) => None,
                (false, Some(t)) if t == 0 || t > BACKGROUND_MAX_S => {
                    return Err(ToolError::InvalidArgs(format!(
                        "timeout must be between 1 and {BACKGROUND_MAX_S} seconds for a background command, or use disable_timeout."
                    )));
                }
                (false, t) => Some(Duration::from_secs(t.unwrap_or(BACKGROUND_DEFAULT_S))),
            }
        } else {
            if p.disable_timeout {
                return Err(ToolError::InvalidArgs(
                    "disable_timeout only applies to background commands (set run_in_background to true).".to_owned(),
                ));
            }
            match p.timeout {
                Some(t) if t == 0 || t > FOREGROUND_MAX_S => {
                    return Err(ToolError::InvalidArgs(format!(
                        "timeout must be between 1 and {FOREGROUND_MAX_S} seconds for a foreground command; \
                         use run_in_background for longer commands."
                    )));
                }
                t => Some(Duration::from_secs(t.unwrap_or(FOREGROUND_DEFAULT_S))),
            }
        };
        let cwd = match &p.cwd {
            Some(dir) => resolve_path(ctx, dir, PathUse::Read)?,
            None => canonical_cwd(ctx)?,
        };
        let plan = ToolPlan {
            // Shell commands can touch anything: they run exclusively.
            accesses: None,
            approval_rule: p.command.clone(),
            subject: RuleSubject::Text(p.command.clone()),
            display: ToolDisplay {
                kind: "shell".to_owned(),
                summary: p.command.clone(),
                detail: p.description.clone(),
                diff: None,
            },
            description: p
                .description
                .clone()
                .unwrap_or_else(|| format!("Run `{}`", p.command)),
            stop_batch_after_this: false,
        };
        Ok(Resolution::Run(Box::new(BashExecution {
            plan,
            cwd,
            timeout,
            params: p,
        })))
    }
}

struct BashExecution {
    plan: ToolPlan,
    cwd: PathBuf,
    timeout: Option<Duration>,
    params: Params,
}

/// The child environment: the host's, plus non-interactive defaults unless already set. On a
/// remote target only the defaults are sent; the executor adds them to its own environment
/// (this machine's variables never reach the target). The user's `!` commands run with it too,
/// so they see what the model's commands see.
pub fn child_env(ctx: &ToolContext) -> Vec<(String, String)> {
    if !ctx.environment.is_this_machine() {
        return [
            ("NO_COLOR", "1"),
            ("TERM", "dumb"),
            ("GIT_TERMINAL_PROMPT", "0"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    }
    let mut env = ctx.env.clone();
    for (k, v) in [
        ("NO_COLOR", "1"),
        ("TERM", "dumb"),
        ("GIT_TERMINAL_PROMPT", "0"),
    ] {
        if !env.iter().any(|(key, _)| key == k) {
            env.push((k.to_owned(), v.to_owned()));
        }
    }
    env.retain(|(k, _)| k != "SHELL");
    let shell = if std::path::Path::new("/bin/bash").exists() {
        "/bin/bash"
    } else {
        "/bin/sh"
    };
    env.push(("SHELL".to_owned(), shell.to_owned()));
    env
}

#[async_trait]
impl Execution for BashExecution {
    fn plan(&self) -> &ToolPlan {
        &self.plan
    }

    async fn execute(
        self: Box<Self>,
        ctx: &ToolContext,
        cancel: CancellationToken,
        progress: ProgressSink,
    ) -> ToolResult {
        let is_dir = if ctx.environment.is_local() {
            self.cwd.is_dir()
        } else {
            let env = ctx.environment.clone();
            let cwd = self.cwd.clone();
            match tokio::task::spawn_blocking(move || env.stat(&cwd)).await {
                Ok(Ok(stat)) => stat.is_some_and(|s| s.kind == crate::environment::FileKind::Dir),
                Ok(Err(e)) => return ToolResult::error(e.to_string()),
                Err(e) => return ToolResult::error(format!("Bash failed: {e}")),
            }
        };
        if !is_dir {
            return ToolResult::error(format!("cwd `{}` is not a directory.", self.cwd.display()));
        }
        let spec = TaskSpec {
            command: self.params.command.clone(),
            description: self.params.description.clone().unwrap_or_default(),
            cwd: self.cwd.clone(),
            env: child_env(ctx),
            foreground: !self.params.run_in_background,
            timeout: self.timeout,
            launcher: ctx.settings.launcher.clone(),
            environment: ctx.environment.clone(),
        };
        let tasks = &ctx.tasks;
        let (info, mut output) = match tasks.spawn(spec) {
            Ok(started) => started,
            Err(e) => return ToolResult::error(e.to_string()),
        };
        let id = info.id.clone();
        let output_path = tasks.output_path(&id);
        if self.params.run_in_background {
            return ToolResult::ok(format!(
                "Started background task {id}: {}\noutput_path: {}\nYou will be notified when it finishes. \
                 Use TaskOutput to check its output, WaitFor to wait for it, or TaskStop to stop it.",
                info.description,
                output_path.display()
            ));
        }
        let timeout = self
            .timeout
            .unwrap_or(Duration::from_secs(FOREGROUND_DEFAULT_S));
        let waited = {
            let forward = async {
                loop {
                    match output.recv().await {
                        Ok(OutputChunk { stderr, text }) => progress.send(if stderr {
                            ToolProgress::Stderr(text)
                        } else {
                            ToolProgress::Stdout(text)
                        }),
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                            std::future::pending::<()>().await
                        }
                    }
                }
            };
            tokio::select! {
                done = tasks.wait(&id, timeout) => done.ok().flatten().map(Ok),
                () = cancel.cancelled() => Some(Err(())),
                () = forward => None,
            }
        };
        match waited {
            Some(Ok(info)) => {
                tasks.mark_reported(&id);
                foreground_result(ctx, &info)
            }
            Some(Err(())) => {
                let _ = tasks.stop(&id, "Interrupted by the user").await;
                tasks.mark_reported(&id);
                let mut result =
                    render_output(ctx, &id, Some("Command was interrupted by the user."));
                result.is_error = true;
                result
            }
            None if ctx.settings.bash_auto_background_on_timeout
                && ctx.settings.background_enabled =>
            {
                let limit = ctx.settings.bash_task_timeout_s;
                let moved =
                    tasks.move_to_background(&id, (limit > 0).then(|| Duration::from_secs(limit)));
                if let Err(e) = moved {
                    return ToolResult::error(e.to_string());
                }
                let (so_far, _) = tasks.tail_output(&id, 4 * 1024);
                let limit_text = if limit > 0 {
                    format!("{limit} s")
                } else {
                    "no".to_owned()
                };
                ToolResult::ok(format!(
                    "{so_far}{}Command did not finish within {} s and was moved to the background as task {id} \
                     ({limit_text} time limit).\noutput_path: {}\nYou will be notified when it finishes. \
                     Use TaskOutput to check its output, WaitFor to wait for it, or TaskStop to stop it.",
                    if so_far.is_empty() || so_far.ends_with('\n') {
                        ""
                    } else {
                        "\n"
                    },
                    timeout.as_secs(),
                    output_path.display()
                ))
            }
            None => {
                let _ = tasks.stop(&id, "Command killed by timeout").await;
                tasks.mark_reported(&id);
                let mut result = render_output(
                    ctx,
                    &id,
                    Some(&format!(
                        "Command killed by timeout ({} s)",
                        timeout.as_secs()
                    )),
                );
                result.is_error = true;
                result
            }
        }
    }
}

/// The command's output bounded by the result builder, with `message` as its closing line.
fn render_output(ctx: &ToolContext, id: &str, error: Option<&str>) -> ToolResult {
    let (text, saved) = ctx.tasks.tail_output(id, crate::tasks::OUTPUT_CAP_BYTES);
    let mut builder = ToolResultBuilder::default();
    builder.write(&text);
    // Output the log could not hold (a full disk) is gone: say so instead of passing off what
    // is left as the whole output.
    let produced = ctx.tasks.get(id).map_or(0, |info| info.output_bytes);
    if produced > saved && produced <= crate::tasks::OUTPUT_CAP_BYTES {
        builder.write(&format!(
            "\n[{} bytes of output were lost: the output log {} could not be written (is the disk full?)]",
            produced - saved,
            ctx.tasks.output_path(id).display()
        ));
    }
    let truncated = builder.is_truncated();
    let mut result = match error {
        Some(message) => builder.error(message),
        None => builder.ok("Command executed successfully"),
    };
    if truncated {
        result.note = Some(format!(
            "The full output is in {}; use Read on it to see everything.",
            ctx.tasks.output_path(id).display()
        ));
    }
    result
}

fn foreground_result(ctx: &ToolContext, info: &TaskInfo) -> ToolResult {
    match info.status {
        TaskStatus::Completed => render_output(ctx, &info.id, None),
        TaskStatus::Failed
        | TaskStatus::TimedOut
        | TaskStatus::Killed
        | TaskStatus::Lost
        | TaskStatus::Running => {
            let message = match (info.status, info.exit_code, &info.reason) {
                (TaskStatus::Failed, Some(code), _) => {
                    format!("Command failed with exit code {code}.")
                }
                (_, _, Some(reason)) => format!("Command failed: {reason}"),
                (status, _, None) => format!("Command ended with status {}.", status.as_str()),
            };
            render_output(ctx, &info.id, Some(&message))
        }
    }
}
