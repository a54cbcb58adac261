//! The scheduling tools (surface.md §2.6): `CronCreate` (default ask, vetoed in plan mode),
//! `CronList` (default approve) and `CronDelete` (default ask, vetoed in plan mode). Their
//! outputs are `key: value` lines; CronList separates jobs with `---`.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::Local;
use kimi_tools::tool::{RuleSubject, ToolDisplay, parse_args};
use kimi_tools::{
    Execution, ProgressSink, Resolution, Tool, ToolContext, ToolError, ToolPlan, ToolResult,
};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::expr::CronExpr;
use super::schedule::{format_time, preview};
use super::service::CronService;
use super::{CronJob, MAX_PROMPT_BYTES};

pub const CRON_CREATE: &str = "CronCreate";
pub const CRON_LIST: &str = "CronList";
pub const CRON_DELETE: &str = "CronDelete";

/// CronList shows this many bytes of each prompt.
const PREVIEW_BYTES: usize = 200;
const MS_PER_DAY: f64 = 24.0 * 60.0 * 60.0 * 1000.0;

const CREATE_DESCRIPTION: &str = "Schedule a prompt to be sent into this session later, once or on a cron schedule. `cron` is a standard 5-field expression in the user's local time zone: minute hour day-of-month month day-of-week (digits, `*`, ranges `a-b`, steps `/n`, lists `a,b`; day-of-week 0-7, 0 and 7 = Sunday). `prompt` is what you will receive when the job fires, wrapped in a <cron-fire> element — write it as an instruction to your future self. `recurring` defaults to true; set it to false for a one-shot that fires once and is removed (pin minute, hour, day and month for a specific date). Recurring jobs fire a little late (up to 10% of their period, at most 15 minutes) and expire after 7 days; one-shots on :00 or :30 may fire up to 90 s early. Jobs belong to this session only. At most 50 jobs per session.";

const LIST_DESCRIPTION: &str = "List the cron jobs scheduled in this session: id, cron expression, schedule in words, next fire time, whether it recurs, age in days, whether it is stale (recurring jobs expire after 7 days; recreate one to keep it) and the start of its prompt. No parameters.";

const DELETE_DESCRIPTION: &str = "Cancel a scheduled cron job by its id (from CronCreate or CronList). One-shot jobs that already fired no longer exist. To refresh a stale recurring job, delete it and create it again.";

fn plan(kind: &str, summary: String, approval_rule: String, subject: RuleSubject) -> ToolPlan {
    ToolPlan {
        accesses: Some(Vec::new()),
        approval_rule,
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

/// A finished call: the plan plus a closure producing the result.
struct Run<F> {
    plan: ToolPlan,
    run: F,
}

#[async_trait]
impl<F> Execution for Run<F>
where
    F: FnOnce() -> ToolResult + Send + Sync,
{
    fn plan(&self) -> &ToolPlan {
        &self.plan
    }

    async fn execute(
        self: Box<Self>,
        _ctx: &ToolContext,
        _cancel: CancellationToken,
        _progress: ProgressSink,
    ) -> ToolResult {
        (self.run)()
    }
}

fn time_or_null(ms: Option<i64>) -> String {
    ms.map_or_else(|| "null".to_owned(), |ms| format_time(ms, &Local))
}

/// `CronCreate`.
pub struct CronCreateTool {
    service: Arc<CronService>,
}

impl CronCreateTool {
    pub fn new(service: Arc<CronService>) -> Self {
        CronCreateTool { service }
    }
}

#[derive(Debug, Deserialize)]
struct CreateParams {
    cron: String,
    prompt: String,
    #[serde(default)]
    recurring: Option<bool>,
}

#[async_trait]
impl Tool for CronCreateTool {
    fn name(&self) -> &str {
        CRON_CREATE
    }

    fn description(&self) -> String {
        CREATE_DESCRIPTION.to_owned()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "cron": {"type": "string", "description": "5-field cron expression in local time: minute hour day-of-month month day-of-week, e.g. \"*/5 * * * *\" or \"30 14 28 2 *\"."},
                "prompt": {"type": "string", "minLength": 1, "description": format!("The prompt to deliver when the job fires (at most {MAX_PROMPT_BYTES} bytes).")},
                "recurring": {"type": "boolean", "default": true, "description": "true (default): fire on every match until deleted or stale after 7 days. false: fire once, then delete the job."}
            },
            "required": ["cron", "prompt"],
            "additionalProperties": false
        })
    }

    fn resolve(&self, args: Value, _ctx: &ToolContext) -> Result<Resolution, ToolError> {
        let p: CreateParams = parse_args(args)?;
        let recurring = p.recurring.unwrap_or(true);
        let expr = match self.service.validate(&p.cron, &p.prompt, recurring) {
            Ok(expr) => expr,
            Err(err) => return Ok(Resolution::Result(ToolResult::error(err.to_string()))),
        };
        let cron = expr.as_str().to_owned();
        let subject = json!({"cron": cron, "prompt": p.prompt, "recurring": recurring}).to_string();
        let summary = if recurring {
            format!("Scheduling cron {cron}")
        } else {
            format!("Scheduling one-shot {cron}")
        };
        let service = self.service.clone();
        Ok(Resolution::Run(Box::new(Run {
            plan: plan(
                "cron",
                summary,
                format!("{CRON_CREATE}({subject})"),
                RuleSubject::Text(subject),
            ),
            run: move || match service.create(&cron, &p.prompt, recurring) {
                Ok(created) => ToolResult::ok(
                    [
                        format!("id: {}", created.job.id),
                        format!("cron: {}", created.job.cron),
                        format!("humanSchedule: {}", created.human_schedule),
                        format!("recurring: {}", created.job.recurring),
                        format!("nextFireAt: {}", time_or_null(created.next_fire_at)),
                    ]
                    .join("\n"),
                )
                .with_records([created.record]),
                Err(err) => ToolResult::error(err.to_string()),
            },
        })))
    }
}

/// `CronList`.
pub struct CronListTool {
    service: Arc<CronService>,
}

impl CronListTool {
    pub fn new(service: Arc<CronService>) -> Self {
        CronListTool { service }
    }
}

/// One CronList record.
fn render_job(service: &CronService, job: &CronJob, now: i64) -> String {
    let human = CronExpr::parse(&job.cron).map_or_else(|_| job.cron.clone(), |e| e.to_human());
    let age_days = (now - job.created_at) as f64 / MS_PER_DAY;
    [
        format!("id: {}", job.id),
        format!("cron: {}", job.cron),
        format!("humanSchedule: {human}"),
        format!(
            "prompt: {}",
            serde_json::to_string(&preview(&job.prompt, PREVIEW_BYTES)).unwrap_or_default()
        ),
        format!("nextFireAt: {}", time_or_null(service.next_fire(job))),
        format!("recurring: {}", job.recurring),
        format!("ageDays: {age_days:.2}"),
        format!("stale: {}", service.is_stale(job)),
    ]
    .join("\n")
}

#[async_trait]
impl Tool for CronListTool {
    fn name(&self) -> &str {
        CRON_LIST
    }

    fn description(&self) -> String {
        LIST_DESCRIPTION.to_owned()
    }

    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    }

    fn resolve(&self, _args: Value, _ctx: &ToolContext) -> Result<Resolution, ToolError> {
        let service = self.service.clone();
        Ok(Resolution::Run(Box::new(Run {
            plan: plan(
                "cron",
                "Listing scheduled cron jobs".to_owned(),
                CRON_LIST.to_owned(),
                RuleSubject::NameOnly,
            ),
            run: move || {
                let jobs = service.list();
                let now = service.now_ms();
                let header = format!("cron_jobs: {}", jobs.len());
                if jobs.is_empty() {
                    return ToolResult::ok(format!("{header}\nNo cron jobs scheduled."));
                }
                let records: Vec<String> = jobs
                    .iter()
                    .map(|job| render_job(&service, job, now))
                    .collect();
                ToolResult::ok(format!("{header}\n{}", records.join("\n---\n")))
            },
        })))
    }
}

/// `CronDelete`.
pub struct CronDeleteTool {
    service: Arc<CronService>,
}

impl CronDeleteTool {
    pub fn new(service: Arc<CronService>) -> Self {
        CronDeleteTool { service }
    }
}

#[derive(Debug, Deserialize)]
struct DeleteParams {
    id: String,
}

/// 8 hex digits, or a 26-character ULID (Crockford base 32).
pub fn is_job_id(id: &str) -> bool {
    let hex = id.len() == 8 && id.bytes().all(|b| b.is_ascii_hexdigit());
    let ulid = id.len() == 26
        && id.bytes().all(|b| {
            let b = b.to_ascii_uppercase();
            b.is_ascii_digit()
                || (b.is_ascii_uppercase() && !matches!(b, b'I' | b'L' | b'O' | b'U'))
        });
    hex || ulid
}

#[async_trait]
impl Tool for CronDeleteTool {
    fn name(&self) -> &str {
        CRON_DELETE
    }

    fn description(&self) -> String {
        DELETE_DESCRIPTION.to_owned()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "The job id returned by CronCreate or shown by CronList."}
            },
            "required": ["id"],
            "additionalProperties": false
        })
    }

    fn resolve(&self, args: Value, _ctx: &ToolContext) -> Result<Resolution, ToolError> {
        let p: DeleteParams = parse_args(args)?;
        let id = p.id.trim().to_owned();
        if !is_job_id(&id) {
            return Ok(Resolution::Result(ToolResult::error(format!(
                "Invalid cron job id {id:?}: ids are 8 hex digits (or a 26-character ULID). Call CronList to see the ids."
            ))));
        }
        let service = self.service.clone();
        Ok(Resolution::Run(Box::new(Run {
            plan: plan(
                "cron",
                format!("Deleting cron {id}"),
                CRON_DELETE.to_owned(),
                RuleSubject::NameOnly,
            ),
            run: move || {
                if let Some(record) = service.delete(&id) {
                    ToolResult::ok(format!("Deleted cron job {id}.")).with_records([record])
                } else {
                    ToolResult::error(format!(
                        "No cron job with id {id}. It may have fired already (one-shots delete themselves) or been deleted; call CronList to see the current jobs."
                    ))
                }
            },
        })))
    }
}
