//! Cron scheduling as pure logic: expression parsing (table tests), next-fire and jitter
//! properties, coalescing, staleness, the envelope, journal folding, limits and the tools'
//! validation messages. Times are computed in UTC so results do not depend on the host zone.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use chrono::{TimeZone, Utc};
use kimi_core::cron::expr::{CronExpr, CronExprError};
use kimi_core::cron::schedule::{
    self, ONE_SHOT_LEAD_MS, RECURRING_JITTER_CAP_MS, STALE_AFTER_MS, envelope, evaluate,
    jittered_one_shot, jittered_recurring,
};
use kimi_core::cron::service::CronError;
use kimi_core::cron::tools::{CronCreateTool, CronDeleteTool, CronListTool, is_job_id};
use kimi_core::cron::{
    CronJob, CronOptions, CronService, MAX_JOBS, ManualClock, add_record, cursor_record,
    delete_record, fold_records,
};
use kimi_tools::tool::run_tool;
use kimi_tools::{Tool, ToolContext};
use pretty_assertions::assert_eq;
use proptest::prelude::*;
use serde_json::json;

const MIN: i64 = 60_000;

fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> i64 {
    Utc.with_ymd_and_hms(y, mo, d, h, mi, 0)
        .single()
        .unwrap()
        .timestamp_millis()
}

fn next(expr: &str, from: i64) -> Option<i64> {
    CronExpr::parse(expr).unwrap().next_after(from, &Utc)
}

fn job(id: &str, cron: &str, created_at: i64, recurring: bool) -> CronJob {
    CronJob {
        id: id.to_owned(),
        cron: cron.to_owned(),
        prompt: "do it".to_owned(),
        created_at,
        recurring,
        last_fired_at: None,
    }
}

const NO_JITTER: CronOptions = CronOptions {
    disabled: false,
    no_jitter: true,
    no_stale: false,
};

#[test]
fn next_fire_table() {
    // 2024-06-01 is a Saturday.
    let sat = at(2024, 6, 1, 10, 7);
    let cases: &[(&str, i64, i64)] = &[
        ("*/15 * * * *", sat, at(2024, 6, 1, 10, 15)),
        ("* * * * *", sat, at(2024, 6, 1, 10, 8)),
        ("5,10 * * * *", sat, at(2024, 6, 1, 10, 10)),
        (
            "10-30/10 * * * *",
            at(2024, 6, 1, 10, 30),
            at(2024, 6, 1, 11, 10),
        ),
        (
            "5/20 * * * *",
            at(2024, 6, 1, 10, 26),
            at(2024, 6, 1, 10, 45),
        ),
        ("0 9 * * 1-5", sat, at(2024, 6, 3, 9, 0)),
        // 7 and 0 are both Sunday.
        ("0 0 * * 7", sat, at(2024, 6, 2, 0, 0)),
        ("0 0 * * 0", sat, at(2024, 6, 2, 0, 0)),
        // Both day fields restricted: the 13th OR a Friday, whichever comes first.
        ("0 0 13 * 5", sat, at(2024, 6, 7, 0, 0)),
        ("0 0 13 * *", sat, at(2024, 6, 13, 0, 0)),
        // Day-of-month restricted, day-of-week `*`: only the day of month counts.
        ("0 0 1 * *", sat, at(2024, 7, 1, 0, 0)),
        // A step on day-of-week is a restriction, so the either rule applies.
        ("0 0 15 * */7", sat, at(2024, 6, 2, 0, 0)),
        ("30 14 28 2 *", sat, at(2025, 2, 28, 14, 30)),
        ("0 0 29 2 *", sat, at(2028, 2, 29, 0, 0)),
        ("0 12 * 1,7 *", sat, at(2024, 7, 1, 12, 0)),
        ("  0   12 * *   *  ", sat, at(2024, 6, 1, 12, 0)),
    ];
    for (expr, from, want) in cases {
        assert_eq!(next(expr, *from), Some(*want), "{expr}");
    }
    // Strictly after `from`, even when `from` is itself a match.
    assert_eq!(
        next("0 * * * *", at(2024, 6, 1, 10, 0)),
        Some(at(2024, 6, 1, 11, 0))
    );
    // Never fires: 31 February.
    assert_eq!(next("0 0 31 2 *", sat), None);
    assert_eq!(
        CronExpr::parse(" 1  2 3 4 5 ").unwrap().as_str(),
        "1 2 3 4 5"
    );
}

#[test]
fn invalid_expressions_say_what_is_wrong() {
    let cases: &[(&str, CronExprError, &str)] = &[
        ("", CronExprError::Empty, "empty"),
        ("* * * *", CronExprError::FieldCount(4), "exactly 5 fields"),
        ("* * * * * *", CronExprError::FieldCount(6), "got 6"),
        (
            "60 * * * *",
            CronExprError::OutOfRange {
                field: "minute",
                value: 60,
                min: 0,
                max: 59,
            },
            "minute value 60 out of range 0..59",
        ),
        (
            "* * * * 8",
            CronExprError::OutOfRange {
                field: "day-of-week",
                value: 8,
                min: 0,
                max: 7,
            },
            "day-of-week",
        ),
        (
            "* * 0 * *",
            CronExprError::OutOfRange {
                field: "day-of-month",
                value: 0,
                min: 1,
                max: 31,
            },
            "day-of-month value 0",
        ),
        (
            "* * * MON *",
            CronExprError::NotDigits {
                field: "month",
                role: "value",
                got: "MON".to_owned(),
            },
            "digits only",
        ),
        (
            "* * L * *",
            CronExprError::NotDigits {
                field: "day-of-month",
                role: "value",
                got: "L".to_owned(),
            },
            "\"L\"",
        ),
        (
            "*/0 * * * *",
            CronExprError::BadStep {
                field: "minute",
                got: "0".to_owned(),
            },
            "positive integer",
        ),
        (
            "* 5-1 * * *",
            CronExprError::BadRange {
                field: "hour",
                lo: 5,
                hi: 1,
                min: 0,
                max: 23,
            },
            "ascending",
        ),
        (
            "1,,2 * * * *",
            CronExprError::EmptyTerm { field: "minute" },
            "empty term",
        ),
        (
            "/5 * * * *",
            CronExprError::StepWithoutRange {
                field: "minute",
                term: "/5".to_owned(),
            },
            "before \"/\"",
        ),
        (
            "* * * * 1#2",
            CronExprError::NotDigits {
                field: "day-of-week",
                role: "value",
                got: "1#2".to_owned(),
            },
            "digits only",
        ),
    ];
    for (text, want, message) in cases {
        let err = CronExpr::parse(text).unwrap_err();
        assert_eq!(&err, want, "{text:?}");
        assert!(err.to_string().contains(message), "{text:?}: {err}");
    }
}

#[test]
fn human_schedules() {
    let cases = [
        ("* * * * *", "every minute"),
        ("*/5 * * * *", "every 5 minutes"),
        ("7 * * * *", "at minute 7 of every hour"),
        ("0 */2 * * *", "every 2 hours at minute 00"),
        ("30 9 * * *", "at 09:30 every day"),
        ("0 9 * * 1-5", "at 09:00 on weekdays"),
        ("0 9 * * 0,6", "at 09:00 on weekends"),
        ("0 9 * * 1,3", "at 09:00 on Monday, Wednesday"),
        ("30 14 28 2 *", "at 14:30 on day 28 of February"),
        ("1,2 3 4 * 5", "1,2 3 4 * 5"),
    ];
    for (expr, want) in cases {
        assert_eq!(CronExpr::parse(expr).unwrap().to_human(), want, "{expr}");
    }
}

fn field(max: u32) -> impl Strategy<Value = String> {
    prop_oneof![
        Just("*".to_owned()),
        (0..=max).prop_map(|v| v.to_string()),
        (1..=max.max(1)).prop_map(|s| format!("*/{s}")),
        (0..=max, 0..=max).prop_map(|(a, b)| format!("{}-{}", a.min(b), a.max(b))),
        (0..=max, 0..=max).prop_map(|(a, b)| format!("{a},{b}")),
    ]
}

fn expr_text() -> impl Strategy<Value = String> {
    (field(59), field(23)).prop_map(|(m, h)| format!("{m} {h} * * *"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The next fire is after `from`, matches, and no minute in between matches.
    #[test]
    fn next_fire_is_the_first_match(text in expr_text(), offset in 0i64..(400 * 24 * 60)) {
        let expr = CronExpr::parse(&text).unwrap();
        let from = at(2024, 1, 1, 0, 0) + offset * MIN + 17_000;
        let next = expr.next_after(from, &Utc).unwrap();
        prop_assert!(next > from);
        let naive = Utc.timestamp_millis_opt(next).unwrap().naive_utc();
        prop_assert!(expr.matches(&naive));
        let mut t = (from / MIN + 1) * MIN;
        while t < next {
            let naive = Utc.timestamp_millis_opt(t).unwrap().naive_utc();
            prop_assert!(!expr.matches(&naive), "{} matches before {}", t, next);
            t += MIN;
        }
    }

    /// Recurring jitter: late by at most min(10 % of the period, 15 min), deterministic.
    #[test]
    fn recurring_jitter_bounds(text in expr_text(), id in "[0-9a-f]{8}", offset in 0i64..100_000) {
        let expr = CronExpr::parse(&text).unwrap();
        let ideal = expr.next_after(at(2024, 3, 1, 0, 0) + offset * MIN, &Utc).unwrap();
        let period = expr.next_after(ideal, &Utc).unwrap() - ideal;
        let options = CronOptions::default();
        let fired = jittered_recurring(&expr, &id, ideal, options, &Utc);
        prop_assert!(fired >= ideal);
        prop_assert!(fired - ideal <= (period / 10).min(RECURRING_JITTER_CAP_MS));
        prop_assert_eq!(fired, jittered_recurring(&expr, &id, ideal, options, &Utc));
        prop_assert_eq!(jittered_recurring(&expr, &id, ideal, NO_JITTER, &Utc), ideal);
    }

    /// One-shot jitter: only on :00/:30, at most 90 s early, never before creation.
    #[test]
    fn one_shot_jitter_bounds(minute in 0i64..(48 * 60), id in "[0-9a-f]{8}", created_before in 0i64..200_000) {
        let ideal = at(2024, 3, 1, 0, 0) + minute * MIN;
        let created = ideal - created_before;
        let fired = jittered_one_shot(&id, ideal, created, CronOptions::default(), &Utc);
        prop_assert!(fired <= ideal);
        prop_assert!(fired >= created);
        prop_assert!(ideal - fired <= ONE_SHOT_LEAD_MS);
        if minute % 30 != 0 {
            prop_assert_eq!(fired, ideal);
        }
    }
}

#[test]
fn one_shot_on_the_hour_fires_early_by_the_id_fraction() {
    let ideal = at(2024, 5, 1, 14, 0);
    // 0x80000000 → fraction 0.5 → 45 s early.
    let fired = jittered_one_shot(
        "80000000",
        ideal,
        ideal - 3_600_000,
        CronOptions::default(),
        &Utc,
    );
    assert_eq!(ideal - fired, 45_000);
    // Created inside the lead window: clamped to creation.
    let fired = jittered_one_shot(
        "80000000",
        ideal,
        ideal - 1_000,
        CronOptions::default(),
        &Utc,
    );
    assert_eq!(fired, ideal - 1_000);
    // Hourly job, fraction 0.5: 0.5 · 10 % · 1 h = 3 min late.
    let hourly = CronExpr::parse("0 * * * *").unwrap();
    let late = jittered_recurring(&hourly, "80000000", ideal, CronOptions::default(), &Utc);
    assert_eq!(late - ideal, 180_000);
    // Daily job: capped at 15 minutes.
    let daily = CronExpr::parse("0 14 * * *").unwrap();
    let late = jittered_recurring(&daily, "ffffffff", ideal, CronOptions::default(), &Utc);
    assert_eq!(late - ideal, RECURRING_JITTER_CAP_MS);
}

#[test]
fn missed_fires_coalesce_and_the_cursor_advances() {
    let created = at(2024, 6, 1, 10, 0) + 30_000;
    let hourly = CronExpr::parse("0 * * * *").unwrap();
    let mut j = job("0000abcd", "0 * * * *", created, true);
    // Not due before the first fire.
    assert_eq!(
        evaluate(&j, &hourly, at(2024, 6, 1, 10, 59), NO_JITTER, &Utc),
        None
    );
    // Asleep until 13:30: 11:00, 12:00 and 13:00 collapse into one delivery.
    let fire = evaluate(&j, &hourly, at(2024, 6, 1, 13, 30), NO_JITTER, &Utc).unwrap();
    assert_eq!(fire.coalesced_count, 3);
    assert_eq!(fire.covered_until, at(2024, 6, 1, 13, 0));
    assert!(!fire.remove && !fire.stale);
    j.last_fired_at = Some(fire.covered_until);
    assert_eq!(
        evaluate(&j, &hourly, at(2024, 6, 1, 13, 59), NO_JITTER, &Utc),
        None
    );
    assert_eq!(
        schedule::next_fire(&j, &hourly, NO_JITTER, &Utc),
        Some(at(2024, 6, 1, 14, 0))
    );
    // A one-shot fires once, uncoalesced, and goes away.
    let once = job("0000abcd", "0 * * * *", created, false);
    let fire = evaluate(&once, &hourly, at(2024, 6, 1, 13, 30), NO_JITTER, &Utc).unwrap();
    assert_eq!((fire.coalesced_count, fire.remove), (1, true));
}

#[test]
fn week_old_recurring_jobs_fire_stale_and_are_removed() {
    let created = at(2024, 6, 1, 10, 0);
    let expr = CronExpr::parse("0 9 * * *").unwrap();
    let mut j = job("0000abcd", "0 9 * * *", created, true);
    j.last_fired_at = Some(created + STALE_AFTER_MS - 2 * 3_600_000);
    let now = created + STALE_AFTER_MS;
    let fire = evaluate(&j, &expr, now, NO_JITTER, &Utc).unwrap();
    assert!(fire.stale && fire.remove);
    let keep = CronOptions {
        no_stale: true,
        ..NO_JITTER
    };
    let fire = evaluate(&j, &expr, now, keep, &Utc).unwrap();
    assert!(!fire.stale && !fire.remove);
    // One-shots are never stale.
    assert!(!schedule::is_stale(
        &job("a", "0 9 * * *", created, false),
        now,
        NO_JITTER
    ));
}

#[test]
fn the_envelope_escapes_attributes_and_keeps_the_prompt() {
    let mut j = job("1234abcd", "*/5 * * * *", 0, true);
    j.prompt = "run \"tests\" & <report>".to_owned();
    assert_eq!(
        envelope(&j, 2, false),
        "<cron-fire jobId=\"1234abcd\" cron=\"*/5 * * * *\" recurring=\"true\" coalescedCount=\"2\" stale=\"false\">\n<prompt>\nrun \"tests\" & <report>\n</prompt>\n</cron-fire>"
    );
    assert_eq!(schedule::preview("héllo", 2), "h…(truncated)");
}

#[test]
fn journal_records_fold_into_the_live_jobs() {
    let a = job("aaaaaaaa", "* * * * *", 1, true);
    let b = job("bbbbbbbb", "0 9 * * *", 2, false);
    let records = [
        add_record(&a),
        add_record(&b),
        cursor_record("aaaaaaaa", 120_000),
        delete_record(&["bbbbbbbb".to_owned()]),
        cursor_record("bbbbbbbb", 5),
    ];
    let jobs = fold_records(records.iter());
    assert_eq!(
        jobs,
        vec![CronJob {
            last_fired_at: Some(120_000),
            ..a
        }]
    );
}

#[test]
fn options_come_from_the_environment_switches() {
    let options = CronOptions::from_lookup(|name| match name {
        "KIMI_DISABLE_CRON" => Some("1".to_owned()),
        "KIMI_CRON_NO_STALE" => Some("true".to_owned()),
        "KIMI_CRON_NO_JITTER" => Some("0".to_owned()),
        _ => None,
    });
    assert_eq!(
        options,
        CronOptions {
            disabled: true,
            no_jitter: false,
            no_stale: true
        }
    );
    let service = CronService::new(options, Vec::new());
    assert_eq!(
        service.create("* * * * *", "x", true).unwrap_err(),
        CronError::Disabled
    );
}

fn service_at(now: i64) -> Arc<CronService> {
    let service = CronService::new(CronOptions::default(), Vec::new());
    service.set_clock(Arc::new(ManualClock::new(now)));
    service
}

#[test]
fn limits_jobs_and_prompt_size() {
    let service = service_at(at(2030, 1, 1, 0, 0));
    let big = "é".repeat(4097);
    assert_eq!(
        service.create("* * * * *", &big, true).unwrap_err(),
        CronError::PromptTooLong(8194)
    );
    assert!(service.create("* * * * *", &"x".repeat(8192), true).is_ok());
    assert_eq!(
        service.create("* * * * *", "  ", true).unwrap_err(),
        CronError::EmptyPrompt
    );
    for _ in 1..MAX_JOBS {
        service.create("*/5 * * * *", "ping", true).unwrap();
    }
    assert_eq!(service.len(), MAX_JOBS);
    let err = service.create("*/5 * * * *", "one more", true).unwrap_err();
    assert_eq!(err, CronError::Cap);
    assert!(err.to_string().contains("max 50 per session"));
    let ids: std::collections::HashSet<String> = service.list().into_iter().map(|j| j.id).collect();
    assert_eq!(ids.len(), MAX_JOBS);
    assert!(ids.iter().all(|id| is_job_id(id) && id.len() == 8));
}

#[test]
fn schedule_windows_are_enforced() {
    let service = service_at(at(2030, 5, 2, 0, 0));
    assert!(matches!(
        service.create("0 0 31 2 *", "never", true).unwrap_err(),
        CronError::NeverFires(_)
    ));
    // A one-shot whose date passed this year would wait almost a year: refused.
    let err = service.create("0 0 1 5 *", "late", false).unwrap_err();
    assert!(matches!(err, CronError::OneShotTooFar { .. }), "{err}");
    assert!(err.to_string().contains("pick a future date"));
    // The same expression recurring is fine.
    assert!(service.create("0 0 1 5 *", "yearly", true).is_ok());
}

#[test]
fn job_ids_are_hex_or_ulid() {
    assert!(is_job_id("0a1B2c3D"));
    assert!(is_job_id("01ARZ3NDEKTSV4RRFFQ69G5FAV"));
    assert!(!is_job_id("0a1b2c3"));
    assert!(!is_job_id("0a1b2c3g"));
    assert!(!is_job_id("01ARZ3NDEKTSV4RRFFQ69G5FAU"));
}

#[tokio::test]
async fn tools_validate_and_report() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext::new(dir.path(), dir.path());
    let service = service_at(at(2030, 1, 1, 10, 2));
    let create = CronCreateTool::new(service.clone());
    let list = CronListTool::new(service.clone());
    let delete = CronDeleteTool::new(service.clone());

    let bad = run_tool(&create, json!({"cron": "61 * * * *", "prompt": "x"}), &ctx).await;
    assert!(bad.is_error);
    let text = bad.text().unwrap();
    assert!(
        text.starts_with("Invalid cron expression: cron minute value 61"),
        "{text}"
    );

    let ok = run_tool(
        &create,
        json!({"cron": "*/5  * * * *", "prompt": "check"}),
        &ctx,
    )
    .await;
    assert!(!ok.is_error, "{ok:?}");
    let text = ok.text().unwrap();
    let id = service.list()[0].id.clone();
    assert!(text.contains(&format!("id: {id}")), "{text}");
    assert!(text.contains("cron: */5 * * * *\nhumanSchedule: every 5 minutes\nrecurring: true\nnextFireAt: 2030-01-01T"), "{text}");

    let listed = run_tool(&list, json!({}), &ctx).await.text().unwrap();
    assert!(listed.starts_with("cron_jobs: 1\nid: "), "{listed}");
    assert!(
        listed.contains("prompt: \"check\"")
            && listed.contains("ageDays: 0.00")
            && listed.contains("stale: false"),
        "{listed}"
    );

    let bad_id = run_tool(&delete, json!({"id": "nope"}), &ctx).await;
    assert!(bad_id.is_error && bad_id.text().unwrap().contains("Invalid cron job id"));
    let missing = run_tool(&delete, json!({"id": "00000000"}), &ctx).await;
    assert!(
        missing.is_error
            && missing
                .text()
                .unwrap()
                .contains("No cron job with id 00000000")
    );
    let gone = run_tool(&delete, json!({"id": id}), &ctx).await;
    assert!(!gone.is_error);
    let listed = run_tool(&list, json!({}), &ctx).await.text().unwrap();
    assert_eq!(listed, "cron_jobs: 0\nNo cron jobs scheduled.");
    assert_eq!(create.name(), "CronCreate");
}
