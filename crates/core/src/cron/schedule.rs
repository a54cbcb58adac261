//! The scheduling rules as pure functions of a job, an expression, "now" and a time zone:
//! deterministic jitter, the next (jittered) fire, whether a job is due and how many missed
//! fires collapse into one delivery, staleness, and the `<cron-fire>` envelope.

use chrono::{TimeZone, Timelike};

use super::expr::CronExpr;
use super::{CronJob, CronOptions};

/// Recurring jobs fire late by at most this fraction of their period …
pub const RECURRING_JITTER_FRACTION: f64 = 0.1;
/// … and never more than this.
pub const RECURRING_JITTER_CAP_MS: i64 = 15 * 60 * 1000;
/// One-shots on :00 or :30 fire up to this much early.
pub const ONE_SHOT_LEAD_MS: i64 = 90 * 1000;
/// Recurring jobs this old fire one last time and are removed.
pub const STALE_AFTER_MS: i64 = 7 * 24 * 60 * 60 * 1000;
/// At most this many missed fires are counted into one delivery.
pub const MAX_COALESCE: u64 = 10_000;

/// A fraction in [0, 1) derived from the job id: the first 8 characters read as hex (our ids
/// are 8 hex digits), otherwise a stable hash of the id.
pub fn jitter_fraction(id: &str) -> f64 {
    let n = id
        .get(..8)
        .and_then(|h| u32::from_str_radix(h, 16).ok())
        .unwrap_or_else(|| {
            id.bytes().fold(0x811c_9dc5u32, |h, b| {
                (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
            })
        });
    f64::from(n) / 4_294_967_296.0
}

/// A recurring job's fire time for the ideal fire `ideal`: late by
/// `fraction · min(10 % of the period, 15 min)`, the period being the gap to the fire after.
pub fn jittered_recurring<Tz: TimeZone>(
    expr: &CronExpr,
    id: &str,
    ideal: i64,
    options: CronOptions,
    tz: &Tz,
) -> i64 {
    if options.no_jitter {
        return ideal;
    }
    let Some(following) = expr.next_after(ideal, tz) else {
        return ideal;
    };
    let period = (following - ideal) as f64;
    let late = (jitter_fraction(id) * RECURRING_JITTER_FRACTION * period)
        .min(RECURRING_JITTER_CAP_MS as f64);
    ideal + late as i64
}

/// A one-shot's fire time for the ideal fire `ideal`: when it falls on minute :00 or :30 of
/// local time it fires up to 90 s early, but never before `created_at`.
pub fn jittered_one_shot<Tz: TimeZone>(
    id: &str,
    ideal: i64,
    created_at: i64,
    options: CronOptions,
    tz: &Tz,
) -> i64 {
    if options.no_jitter {
        return ideal;
    }
    let on_half_hour = tz
        .timestamp_millis_opt(ideal)
        .single()
        .is_some_and(|t| t.minute() % 30 == 0);
    if !on_half_hour {
        return ideal;
    }
    let lead = (jitter_fraction(id) * ONE_SHOT_LEAD_MS as f64) as i64;
    (ideal - lead).max(created_at)
}

fn jittered<Tz: TimeZone>(
    job: &CronJob,
    expr: &CronExpr,
    ideal: i64,
    options: CronOptions,
    tz: &Tz,
) -> i64 {
    if job.recurring {
        jittered_recurring(expr, &job.id, ideal, options, tz)
    } else {
        jittered_one_shot(&job.id, ideal, job.created_at, options, tz)
    }
}

/// Where the search for a job's next fire starts: its last delivered (ideal) fire, or its
/// creation.
pub fn cursor(job: &CronJob) -> i64 {
    job.last_fired_at
        .filter(|at| *at > job.created_at)
        .unwrap_or(job.created_at)
}

/// The job's next fire time (jitter applied); `None` when it never fires again.
pub fn next_fire<Tz: TimeZone>(
    job: &CronJob,
    expr: &CronExpr,
    options: CronOptions,
    tz: &Tz,
) -> Option<i64> {
    let ideal = expr.next_after(cursor(job), tz)?;
    Some(jittered(job, expr, ideal, options, tz))
}

/// Whether a recurring job has outlived its week (never, with `no_stale`).
pub fn is_stale(job: &CronJob, now: i64, options: CronOptions) -> bool {
    !options.no_stale && job.recurring && now - job.created_at >= STALE_AFTER_MS
}

/// What one poll decides for a due job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fire {
    /// Missed fires collapsed into this delivery (at least 1).
    pub coalesced_count: u64,
    /// The ideal time of the last fire covered; becomes the job's cursor.
    pub covered_until: i64,
    pub stale: bool,
    /// One-shots and stale jobs go away after this delivery.
    pub remove: bool,
}

/// Whether `job` is due at `now`, and how its delivery looks.
pub fn evaluate<Tz: TimeZone>(
    job: &CronJob,
    expr: &CronExpr,
    now: i64,
    options: CronOptions,
    tz: &Tz,
) -> Option<Fire> {
    let first = expr.next_after(cursor(job), tz)?;
    if now < jittered(job, expr, first, options, tz) {
        return None;
    }
    let mut count = 1;
    let mut last = first;
    if job.recurring {
        while count < MAX_COALESCE {
            let Some(next) = expr.next_after(last, tz) else {
                break;
            };
            if next > now || jittered(job, expr, next, options, tz) > now {
                break;
            }
            count += 1;
            last = next;
        }
    }
    let stale = is_stale(job, now, options);
    Some(Fire {
        coalesced_count: count,
        covered_until: last,
        stale,
        remove: !job.recurring || stale,
    })
}

/// `2026-05-01T09:00:00.000+02:00` in the given zone.
pub fn format_time<Tz: TimeZone>(ms: i64, tz: &Tz) -> String
where
    Tz::Offset: std::fmt::Display,
{
    match tz.timestamp_millis_opt(ms).single() {
        Some(t) => t.format("%Y-%m-%dT%H:%M:%S%.3f%:z").to_string(),
        None => "null".to_owned(),
    }
}

fn attr(value: &str) -> String {
    if value.is_empty() {
        return "unknown".to_owned();
    }
    value.replace('&', "&amp;").replace('"', "&quot;")
}

/// The text a fire delivers: attributes escaped, the prompt verbatim.
pub fn envelope(job: &CronJob, coalesced_count: u64, stale: bool) -> String {
    format!(
        "<cron-fire jobId=\"{}\" cron=\"{}\" recurring=\"{}\" coalescedCount=\"{coalesced_count}\" stale=\"{stale}\">\n<prompt>\n{}\n</prompt>\n</cron-fire>",
        attr(&job.id),
        attr(&job.cron),
        job.recurring,
        job.prompt
    )
}

/// At most `max` bytes of `text` (cut at a character boundary), marked when cut.
pub fn preview(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…(truncated)", &text[..end])
}
