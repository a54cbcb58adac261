//! Cron scheduling (surface.md §2.6, §9.3): jobs the model creates with `CronCreate` fire a
//! prompt into the session on a five-field schedule. Jobs live per session, are journaled as
//! `cron.add` / `cron.delete` / `cron.cursor` records and restored on resume.
//!
//! - [`expr`]: parsing and next-fire computation;
//! - [`schedule`]: jitter, due/coalescing/stale rules and the `<cron-fire>` envelope (pure);
//! - [`service`]: the per-session job table, the clock, the 1 s poll and delivery;
//! - [`tools`]: `CronCreate`, `CronList`, `CronDelete`.

pub mod expr;
pub mod schedule;
pub mod service;
pub mod tools;

use kimi_protocol::RecordPayload;
use kimi_protocol::record::{CronAdd, CronCursor, CronDelete};

pub use service::{Clock, CronService, ManualClock, SystemClock};

/// At most this many jobs per session.
pub const MAX_JOBS: usize = 50;
/// A job's prompt may be at most this many UTF-8 bytes.
pub const MAX_PROMPT_BYTES: usize = 8 * 1024;
/// A one-shot must first fire within this long (~350 days) of its creation.
pub const ONE_SHOT_MAX_AHEAD_MS: i64 = 350 * 24 * 60 * 60 * 1000;

/// A scheduled job, as journaled in `cron.add` (camelCase keys).
pub use kimi_protocol::record::CronJob;

/// Switches from the environment (`KIMI_DISABLE_CRON`, `KIMI_CRON_NO_JITTER`,
/// `KIMI_CRON_NO_STALE`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CronOptions {
    /// No scheduling at all: the tools are not registered and nothing fires.
    pub disabled: bool,
    pub no_jitter: bool,
    pub no_stale: bool,
}

impl CronOptions {
    /// `[cron]` of the parsed config (its environment overrides already applied).
    pub fn from_config(cron: &kimi_config::Cron) -> CronOptions {
        CronOptions {
            disabled: cron.disabled.unwrap_or(false),
            no_jitter: cron.no_jitter.unwrap_or(false),
            no_stale: cron.no_stale.unwrap_or(false),
        }
    }

    pub fn from_env() -> CronOptions {
        CronOptions::from_lookup(|name| std::env::var(name).ok())
    }

    /// Read the switches through `lookup` (a value of `1`, `true`, `yes` or `on` sets one).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> CronOptions {
        let on = |name: &str| {
            lookup(name).is_some_and(|v| {
                matches!(
                    v.trim().to_ascii_lowercase().as_str(),
                    "1" | "true" | "yes" | "on"
                )
            })
        };
        CronOptions {
            disabled: on("KIMI_DISABLE_CRON"),
            no_jitter: on("KIMI_CRON_NO_JITTER"),
            no_stale: on("KIMI_CRON_NO_STALE"),
        }
    }
}

/// `cron.add`: a new job.
pub fn add_record(job: &CronJob) -> RecordPayload {
    RecordPayload::CronAdd(CronAdd { task: job.clone() })
}

/// `cron.delete`: jobs removed (by the model, after a one-shot fired, or when stale).
pub fn delete_record(ids: &[String]) -> RecordPayload {
    RecordPayload::CronDelete(CronDelete { ids: ids.to_vec() })
}

/// `cron.cursor`: a recurring job delivered its fires up to `last_fired_at`.
pub fn cursor_record(id: &str, last_fired_at: i64) -> RecordPayload {
    RecordPayload::CronCursor(CronCursor {
        id: id.to_owned(),
        last_fired_at,
    })
}

/// Fold the cron records of a journal into the jobs that exist at its end, in creation order.
pub fn fold_records<'a>(records: impl IntoIterator<Item = &'a RecordPayload>) -> Vec<CronJob> {
    let mut jobs: Vec<CronJob> = Vec::new();
    for payload in records {
        match payload {
            RecordPayload::CronAdd(add) => {
                jobs.retain(|j| j.id != add.task.id);
                jobs.push(add.task.clone());
            }
            RecordPayload::CronDelete(delete) => {
                jobs.retain(|j| !delete.ids.contains(&j.id));
            }
            RecordPayload::CronCursor(cursor) => {
                if let Some(job) = jobs.iter_mut().find(|j| j.id == cursor.id) {
                    job.last_fired_at = Some(cursor.last_fired_at);
                }
            }
            _ => {}
        }
    }
    jobs
}
