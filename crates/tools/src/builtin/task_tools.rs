//! TaskList, TaskOutput, TaskStop and WaitFor: the model's view of its background tasks.

use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::context::{ProgressSink, ToolContext};
use crate::error::ToolError;
use crate::result::ToolResult;
use crate::tasks::{TaskInfo, TaskManager, TaskStatus};
use crate::tool::{Execution, Resolution, RuleSubject, Tool, ToolDisplay, ToolPlan, parse_args};

pub const OUTPUT_TAIL_BYTES: u64 = 32 * 1024;
pub const WAIT_MAX_S: u64 = 600;

fn plan(
    kind: &str,
    summary: String,
    rule: String,
    subject: RuleSubject,
    accesses: Option<Vec<crate::Access>>,
) -> ToolPlan {
    ToolPlan {
        accesses,
        approval_rule: rule,
        subject,
        display: ToolDisplay {
            kind: kind.to_owned(),
            summary: summary.clone(),
            detail: None,
            diff: None,
        },
        description: summary,
        stop_batch_after_this: false,
    }
}

/// One line per task for listings.
fn status_line(info: &TaskInfo) -> String {
    let exit = info
        .exit_code
        .map(|c| format!(", exit code {c}"))
        .unwrap_or_default();
    let label = if info.description.is_empty() {
        &info.command
    } else {
        &info.description
    };
    format!("{}\t{}{exit}\t{label}", info.id, info.status.as_str())
}

/// Status, command and the last 32 KiB of output, with the log path for paging.
pub fn render_task(tasks: &TaskManager, info: &TaskInfo) -> String {
    let (tail, total) = tasks.tail_output(&info.id, OUTPUT_TAIL_BYTES);
    let mut out = vec![
        format!("task_id: {}", info.id),
        format!("status: {}", info.status.as_str()),
    ];
    if let Some(code) = info.exit_code {
        out.push(format!("exit_code: {code}"));
    }
    if let Some(reason) = &info.reason {
        out.push(format!("reason: {reason}"));
    }
    if !info.description.is_empty() {
        out.push(format!("description: {}", info.description));
    }
    out.push(format!("command: {}", info.command));
    out.push(format!(
        "output_path: {}",
        tasks.output_path(&info.id).display()
    ));
    if total > OUTPUT_TAIL_BYTES {
        out.push(format!(
            "[output: last {OUTPUT_TAIL_BYTES} of {total} bytes; Read output_path for the rest]"
        ));
    } else if total == 0 {
        out.push("[no output yet]".to_owned());
    } else {
        out.push("[output]".to_owned());
    }
    let mut text = out.join("\n");
    if !tail.is_empty() {
        text.push('\n');
        text.push_str(&tail);
    }
    text
}

struct Simple<F> {
    plan: ToolPlan,
    run: F,
}

#[async_trait]
impl<F> Execution for Simple<F>
where
    F: FnOnce(&ToolContext) -> ToolResult + Send + Sync,
{
    fn plan(&self) -> &ToolPlan {
        &self.plan
    }

    async fn execute(
        self: Box<Self>,
        ctx: &ToolContext,
        _cancel: CancellationToken,
        _progress: ProgressSink,
    ) -> ToolResult {
        (self.run)(ctx)
    }
}

#[derive(Debug, Deserialize)]
struct ListParams {
    active_only: Option<bool>,
    limit: Option<usize>,
}

#[derive(Debug, Default)]
pub struct TaskListTool;

#[async_trait]
impl Tool for TaskListTool {
    fn name(&self) -> &str {
        "TaskList"
    }

    fn description(&self) -> String {
        "List background tasks (running only by default) with their ids and states.".to_owned()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "active_only": {"type": "boolean", "description": "Only running tasks (default true)."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "Maximum tasks to list (default 20)."}
            },
            "additionalProperties": false
        })
    }

    fn resolve(&self, args: Value, _ctx: &ToolContext) -> Result<Resolution, ToolError> {
        let p: ListParams = parse_args(args)?;
        let limit = p.limit.unwrap_or(20);
        if !(1..=100).contains(&limit) {
            return Err(ToolError::InvalidArgs(
                "limit must be between 1 and 100.".to_owned(),
            ));
        }
        let active_only = p.active_only.unwrap_or(true);
        Ok(Resolution::Run(Box::new(Simple {
            plan: plan(
                "task",
                "List tasks".to_owned(),
                "TaskList".to_owned(),
                RuleSubject::NameOnly,
                Some(Vec::new()),
            ),
            run: move |ctx: &ToolContext| {
                let all = ctx.tasks.list();
                let mut shown: Vec<&TaskInfo> = all
                    .iter()
                    .filter(|t| !active_only || t.status == TaskStatus::Running)
                    .collect();
                // Newest first: the model usually asks about what it just started.
                shown.reverse();
                let total = shown.len();
                shown.truncate(limit);
                if total == 0 {
                    return ToolResult::ok(if active_only {
                        "No running tasks."
                    } else {
                        "No tasks."
                    });
                }
                let mut lines: Vec<String> = shown.iter().map(|t| status_line(t)).collect();
                if total > limit {
                    lines.push(format!(
                        "({} more not shown; raise limit to see them)",
                        total - limit
                    ));
                }
                ToolResult::ok(lines.join("\n"))
            },
        })))
    }
}

#[derive(Debug, Deserialize)]
struct IdParams {
    task_id: String,
    reason: Option<String>,
}

#[derive(Debug, Default)]
pub struct TaskOutputTool;

#[async_trait]
impl Tool for TaskOutputTool {
    fn name(&self) -> &str {
        "TaskOutput"
    }

    fn description(&self) -> String {
        "Show a background task's status and the last 32 KiB of its output, without waiting. The full output is at \
         output_path (page through it with Read)."
            .to_owned()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"task_id": {"type": "string"}},
            "required": ["task_id"],
            "additionalProperties": false
        })
    }

    fn resolve(&self, args: Value, _ctx: &ToolContext) -> Result<Resolution, ToolError> {
        let p: IdParams = parse_args(args)?;
        let id = p.task_id;
        Ok(Resolution::Run(Box::new(Simple {
            plan: plan(
                "task",
                format!("Output of {id}"),
                "TaskOutput".to_owned(),
                RuleSubject::Text(id.clone()),
                Some(Vec::new()),
            ),
            run: move |ctx: &ToolContext| match ctx.tasks.get(&id) {
                Ok(info) => ToolResult::ok(render_task(&ctx.tasks, &info)),
                Err(e) => ToolResult::error(e.to_string()),
            },
        })))
    }
}

#[derive(Debug, Default)]
pub struct TaskStopTool;

#[async_trait]
impl Tool for TaskStopTool {
    fn name(&self) -> &str {
        "TaskStop"
    }

    fn description(&self) -> String {
        "Stop a background task and everything it started (SIGTERM, then SIGKILL after a grace period). Safe on tasks \
         that already finished."
            .to_owned()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "task_id": {"type": "string"},
                "reason": {"type": "string", "description": "Why the task is stopped (default \"Stopped by TaskStop\")."}
            },
            "required": ["task_id"],
            "additionalProperties": false
        })
    }

    fn resolve(&self, args: Value, _ctx: &ToolContext) -> Result<Resolution, ToolError> {
        let p: IdParams = parse_args(args)?;
        let reason = p.reason.unwrap_or_else(|| "Stopped by TaskStop".to_owned());
        Ok(Resolution::Run(Box::new(StopExecution {
            plan: plan(
                "task",
                format!("Stop {}", p.task_id),
                format!("TaskStop({})", p.task_id),
                RuleSubject::Text(p.task_id.clone()),
                Some(Vec::new()),
            ),
            id: p.task_id,
            reason,
        })))
    }
}

struct StopExecution {
    plan: ToolPlan,
    id: String,
    reason: String,
}

#[async_trait]
impl Execution for StopExecution {
    fn plan(&self) -> &ToolPlan {
        &self.plan
    }

    async fn execute(
        self: Box<Self>,
        ctx: &ToolContext,
        _cancel: CancellationToken,
        _progress: ProgressSink,
    ) -> ToolResult {
        let before = match ctx.tasks.get(&self.id) {
            Ok(info) => info,
            Err(e) => return ToolResult::error(e.to_string()),
        };
        if before.status.is_terminal() {
            return ToolResult::ok(format!(
                "Task {} had already finished with status {}; nothing to stop.",
                self.id,
                before.status.as_str()
            ));
        }
        match ctx.tasks.stop(&self.id, &self.reason).await {
            Ok(info) => {
                ctx.tasks.mark_reported(&self.id);
                ToolResult::ok(format!(
                    "Task {} stopped (status {}).",
                    self.id,
                    info.status.as_str()
                ))
            }
            Err(e) => ToolResult::error(e.to_string()),
        }
    }
}

#[derive(Debug, Deserialize)]
struct WaitParams {
    timeout: u64,
    task_id: Option<String>,
}

#[derive(Debug, Default)]
pub struct WaitForTool;

#[async_trait]
impl Tool for WaitForTool {
    fn name(&self) -> &str {
        "WaitFor"
    }

    fn description(&self) -> String {
        format!(
            "Wait until a background task finishes (or, without task_id, until any task running now finishes), for at \
             most `timeout` seconds (1-{WAIT_MAX_S}). Running out of time is not an error. Tasks reported here are not \
             notified again."
        )
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "timeout": {"type": "integer", "minimum": 1, "maximum": WAIT_MAX_S, "description": "Seconds to wait at most."},
                "task_id": {"type": "string", "description": "The task to wait for (default: any running task)."}
            },
            "required": ["timeout"],
            "additionalProperties": false
        })
    }

    fn resolve(&self, args: Value, _ctx: &ToolContext) -> Result<Resolution, ToolError> {
        let p: WaitParams = parse_args(args)?;
        if !(1..=WAIT_MAX_S).contains(&p.timeout) {
            return Err(ToolError::InvalidArgs(format!(
                "timeout must be between 1 and {WAIT_MAX_S} seconds."
            )));
        }
        let summary = match &p.task_id {
            Some(id) => format!("Wait for {id}"),
            None => "Wait for running tasks".to_owned(),
        };
        Ok(Resolution::Run(Box::new(WaitExecution {
            plan: plan(
                "task",
                summary,
                "WaitFor".to_owned(),
                RuleSubject::NameOnly,
                Some(Vec::new()),
            ),
            timeout: Duration::from_secs(p.timeout),
            task_id: p.task_id,
        })))
    }
}

struct WaitExecution {
    plan: ToolPlan,
    timeout: Duration,
    task_id: Option<String>,
}

#[async_trait]
impl Execution for WaitExecution {
    fn plan(&self) -> &ToolPlan {
        &self.plan
    }

    async fn execute(
        self: Box<Self>,
        ctx: &ToolContext,
        cancel: CancellationToken,
        _progress: ProgressSink,
    ) -> ToolResult {
        let tasks = &ctx.tasks;
        let ids: Vec<String> = match &self.task_id {
            Some(id) => match tasks.get(id) {
                Ok(_) => vec![id.clone()],
                Err(e) => return ToolResult::error(e.to_string()),
            },
            None => tasks
                .list()
                .into_iter()
                .filter(|t| t.status == TaskStatus::Running)
                .map(|t| t.id)
                .collect(),
        };
        if ids.is_empty() {
            return ToolResult::ok("No running tasks to wait for.");
        }
        let ended = tokio::select! {
            ended = tasks.wait_any(&ids, self.timeout) => ended,
            () = cancel.cancelled() => {
                return ToolResult::ok("WaitFor was interrupted by a new message; the tasks are still running.");
            }
        };
        if ended.is_empty() {
            return ToolResult::ok(format!(
                "Waited {} s; still running: {}. Waiting longer is fine, or use TaskOutput to check progress.",
                self.timeout.as_secs(),
                ids.join(", ")
            ));
        }
        let mut parts = Vec::new();
        for info in &ended {
            tasks.mark_reported(&info.id);
            parts.push(render_task(tasks, info));
        }
        ToolResult::ok(parts.join("\n\n"))
    }
}

/// The text the engine delivers to the agent when a background task finishes on its own
/// (drained from [`TaskManager::drain_notifications`]).
pub fn task_notification_text(tasks: &TaskManager, info: &TaskInfo) -> String {
    let label = if info.description.is_empty() {
        info.command.as_str()
    } else {
        info.description.as_str()
    };
    format!(
        "Background task {} ({label}) finished with status {}.\n{}",
        info.id,
        info.status.as_str(),
        render_task(tasks, info)
    )
}
