//! The per-session cron service: the job table (restored from the journal), an injectable
//! clock, the 1 s poll and delivery. A due job is handed to the agent like a steer — it joins
//! the running turn at its next gate, or starts a turn of its own when the agent is idle —
//! as a `<cron-fire>` prompt with a `cron_job` origin.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use chrono::Local;
use kimi_protocol::origin::KnownOrigin;
use kimi_protocol::{ContentPart, Origin, RecordPayload};
use tokio::task::JoinHandle;

use super::expr::{CronExpr, CronExprError};
use super::schedule::{self, Fire};
use super::{
    CronJob, CronOptions, MAX_JOBS, MAX_PROMPT_BYTES, ONE_SHOT_MAX_AHEAD_MS, add_record,
    cursor_record, delete_record,
};
use crate::engine::runtime::Runtime;

/// How often the poll looks for due jobs.
pub const POLL_INTERVAL: Duration = Duration::from_secs(1);
/// Expressions must fire within this many years.
const FIRE_WITHIN_YEARS: i64 = 5;

/// Wall-clock time in Unix milliseconds; tests substitute a [`ManualClock`].
pub trait Clock: Send + Sync {
    fn now_ms(&self) -> i64;
}

/// The system clock.
#[derive(Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        chrono::Utc::now().timestamp_millis()
    }
}

/// A clock that only moves when told to.
#[derive(Debug, Default)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    pub fn new(now_ms: i64) -> ManualClock {
        ManualClock(AtomicI64::new(now_ms))
    }

    pub fn set(&self, now_ms: i64) {
        self.0.store(now_ms, Ordering::SeqCst);
    }

    pub fn advance(&self, by: Duration) {
        let ms = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// Why a job was not scheduled; the text goes back to the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CronError {
    #[error("Cron scheduling is disabled (KIMI_DISABLE_CRON=1).")]
    Disabled,
    #[error(
        "Invalid cron expression: {0}. Use 5 fields (minute hour day-of-month month day-of-week) with digits, `*`, ranges `a-b`, steps `/n` and lists `a,b`, e.g. \"*/15 9-17 * * 1-5\"."
    )]
    Invalid(#[from] CronExprError),
    #[error(
        "Cron expression {0:?} has no fire within 5 years; refusing to schedule. Check the day-of-month/month combination (e.g. 31 in a 30-day month)."
    )]
    NeverFires(String),
    #[error(
        "One-shot cron {cron:?} would not fire until {at} (more than a year out). If you meant \"today\" or a near date, the pinned day/month has already passed this year — pick a future date or use wildcards."
    )]
    OneShotTooFar { cron: String, at: String },
    #[error(
        "Cron job cap reached (max {MAX_JOBS} per session). Delete jobs you no longer need with CronDelete (CronList shows their ids) and try again."
    )]
    Cap,
    #[error(
        "Prompt exceeds {MAX_PROMPT_BYTES} bytes (got {0}). Shorten it, or put the details in a file and have the prompt refer to it."
    )]
    PromptTooLong(usize),
    #[error("Prompt must not be empty: say what should happen when the job fires.")]
    EmptyPrompt,
}

/// A job that was just scheduled.
#[derive(Debug, Clone, PartialEq)]
pub struct Created {
    pub job: CronJob,
    /// The job's `cron.add` record, for the engine to journal.
    pub record: RecordPayload,
    pub human_schedule: String,
    /// The first fire time with jitter applied.
    pub next_fire_at: Option<i64>,
}

/// One session's cron jobs and their delivery.
pub struct CronService {
    options: CronOptions,
    clock: Mutex<Arc<dyn Clock>>,
    jobs: Mutex<Vec<CronJob>>,
}

impl std::fmt::Debug for CronService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CronService")
            .field("options", &self.options)
            .field("jobs", &*self.jobs())
            .finish_non_exhaustive()
    }
}

impl CronService {
    /// A service holding `restored` jobs (from the journal), on the system clock.
    pub fn new(options: CronOptions, restored: Vec<CronJob>) -> Arc<CronService> {
        Arc::new(CronService {
            options,
            clock: Mutex::new(Arc::new(SystemClock)),
            jobs: Mutex::new(restored),
        })
    }

    pub fn options(&self) -> CronOptions {
        self.options
    }

    /// Replace the clock (tests drive time with a [`ManualClock`]).
    pub fn set_clock(&self, clock: Arc<dyn Clock>) {
        *self
            .clock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = clock;
    }

    pub fn now_ms(&self) -> i64 {
        self.clock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .now_ms()
    }

    fn jobs(&self) -> MutexGuard<'_, Vec<CronJob>> {
        self.jobs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The scheduled jobs in creation order.
    pub fn list(&self) -> Vec<CronJob> {
        self.jobs().clone()
    }

    pub fn len(&self) -> usize {
        self.jobs().len()
    }

    pub fn is_empty(&self) -> bool {
        self.jobs().is_empty()
    }

    /// A job's next fire time (jitter applied).
    pub fn next_fire(&self, job: &CronJob) -> Option<i64> {
        let expr = CronExpr::parse(&job.cron).ok()?;
        schedule::next_fire(job, &expr, self.options, &Local)
    }

    pub fn is_stale(&self, job: &CronJob) -> bool {
        schedule::is_stale(job, self.now_ms(), self.options)
    }

    /// Check a request without scheduling it; returns the parsed expression.
    pub fn validate(
        &self,
        cron: &str,
        prompt: &str,
        recurring: bool,
    ) -> Result<CronExpr, CronError> {
        if self.options.disabled {
            return Err(CronError::Disabled);
        }
        let expr = CronExpr::parse(cron)?;
        let now = self.now_ms();
        let window = FIRE_WITHIN_YEARS * 366 * 24 * 60;
        let Some(first) = expr.next_within(now, &Local, window) else {
            return Err(CronError::NeverFires(expr.as_str().to_owned()));
        };
        if self.len() >= MAX_JOBS {
            return Err(CronError::Cap);
        }
        if prompt.trim().is_empty() {
            return Err(CronError::EmptyPrompt);
        }
        if prompt.len() > MAX_PROMPT_BYTES {
            return Err(CronError::PromptTooLong(prompt.len()));
        }
        if !recurring && first - now > ONE_SHOT_MAX_AHEAD_MS {
            return Err(CronError::OneShotTooFar {
                cron: expr.as_str().to_owned(),
                at: schedule::format_time(first, &Local),
            });
        }
        Ok(expr)
    }

    /// Validate and schedule a job; [`Created::record`] is its `cron.add` for the engine to
    /// journal (the tool returns it with its result).
    pub fn create(&self, cron: &str, prompt: &str, recurring: bool) -> Result<Created, CronError> {
        let expr = self.validate(cron, prompt, recurring)?;
        let job = {
            let mut jobs = self.jobs();
            if jobs.len() >= MAX_JOBS {
                return Err(CronError::Cap);
            }
            let job = CronJob {
                id: unique_id(&jobs),
                cron: expr.as_str().to_owned(),
                prompt: prompt.to_owned(),
                created_at: self.now_ms(),
                recurring,
                last_fired_at: None,
            };
            jobs.push(job.clone());
            job
        };
        Ok(Created {
            record: add_record(&job),
            next_fire_at: schedule::next_fire(&job, &expr, self.options, &Local),
            human_schedule: expr.to_human(),
            job,
        })
    }

    /// Remove a job; its `cron.delete` record for the engine to journal, `None` when there is
    /// no such job.
    #[must_use = "the returned cron.delete record must be committed"]
    pub fn delete(&self, id: &str) -> Option<RecordPayload> {
        // The ids as stored: replay matches them exactly, whatever case the model typed.
        let removed: Vec<String> = {
            let mut jobs = self.jobs();
            let ids = jobs
                .iter()
                .filter(|j| j.id.eq_ignore_ascii_case(id))
                .map(|j| j.id.clone())
                .collect();
            jobs.retain(|j| !j.id.eq_ignore_ascii_case(id));
            ids
        };
        (!removed.is_empty()).then(|| delete_record(&removed))
    }

    /// One poll: deliver every due job, advance recurring jobs' cursors, remove one-shots and
    /// stale jobs, journaling what changed through `rt` (the agent the fires go to). Returns
    /// how many fires were delivered. Safe to call from several places: the table is updated
    /// under its lock before anything is delivered.
    pub fn tick(&self, rt: &Runtime) -> usize {
        if self.options.disabled {
            return 0;
        }
        // A stopping agent takes no prompt: leave due jobs as they are so they fire after
        // resume instead of being journaled as fired.
        if rt.shared().shutting_down {
            return 0;
        }
        let now = self.now_ms();
        let mut due: Vec<(CronJob, Fire)> = Vec::new();
        {
            let mut jobs = self.jobs();
            for job in jobs.iter_mut() {
                let Ok(expr) = CronExpr::parse(&job.cron) else {
                    continue;
                };
                if let Some(fire) = schedule::evaluate(job, &expr, now, self.options, &Local) {
                    if !fire.remove {
                        job.last_fired_at = Some(fire.covered_until);
                    }
                    due.push((job.clone(), fire));
                }
            }
            jobs.retain(|j| !due.iter().any(|(d, f)| f.remove && d.id == j.id));
        }
        if due.is_empty() {
            return 0;
        }
        let mut records = Vec::new();
        let mut removed = Vec::new();
        let mut delivered = 0;
        for (job, fire) in &due {
            if deliver(rt, job, fire) {
                delivered += 1;
            }
            if fire.remove {
                removed.push(job.id.clone());
            } else {
                records.push(cursor_record(&job.id, fire.covered_until));
            }
        }
        if !removed.is_empty() {
            records.push(delete_record(&removed));
        }
        rt.commit(records);
        delivered
    }

    /// Poll every [`POLL_INTERVAL`], delivering to `runtime`, until the agent shuts down or
    /// either is dropped (the poll holds neither alive: a closed session releases its journal).
    pub fn spawn_poll(self: &Arc<Self>, runtime: &Arc<Runtime>) -> JoinHandle<()> {
        let weak = Arc::downgrade(self);
        let runtime = Arc::downgrade(runtime);
        tokio::spawn(async move {
            let mut timer = tokio::time::interval(POLL_INTERVAL);
            timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                timer.tick().await;
                let (Some(service), Some(rt)) = (weak.upgrade(), runtime.upgrade()) else {
                    return;
                };
                if rt.shared().shutting_down {
                    return;
                }
                service.tick(&rt);
            }
        })
    }
}

/// 8 lowercase hex digits, unique among `jobs`.
fn unique_id(jobs: &[CronJob]) -> String {
    loop {
        let id: String = uuid::Uuid::new_v4().simple().to_string()[..8].to_owned();
        if !jobs.iter().any(|j| j.id == id) {
            return id;
        }
    }
}

/// Hand a fire to the agent: a steer when a turn is running, otherwise a queued prompt that
/// starts a turn. `false` when the agent is shutting down.
fn deliver(rt: &Runtime, job: &CronJob, fire: &Fire) -> bool {
    rt.inject(
        vec![ContentPart::text(schedule::envelope(
            job,
            fire.coalesced_count,
            fire.stale,
        ))],
        Origin::Known(KnownOrigin::CronJob {
            job_id: job.id.clone(),
            cron: job.cron.clone(),
            recurring: job.recurring,
            coalesced_count: fire.coalesced_count,
            stale: fire.stale,
        }),
    )
}
