//! Cron end to end: the model schedules a job, the injected clock moves past its fire time,
//! the fire reaches the model as a new turn in a `<cron-fire>` envelope, CronList shows the
//! job, a resumed session still has it, and CronDelete removes it for good.

use std::sync::Arc;
use std::time::Duration;

use chrono::{Local, TimeZone};
use kimi_core::cron::{CronService, ManualClock};
use kimi_core::session::Resume;
use kimi_llm::ProviderType;
use kimi_llm::scripted::ScriptTurn;
use kimi_protocol::ops::{Event, TurnEndReason};
use pretty_assertions::assert_eq;

use crate::harness::{Dirs, Options, Session, record_kind, tool_results, user_texts};

fn cron_of(s: &Session) -> Arc<CronService> {
    s.opened.cron.clone().expect("cron is enabled by default")
}

async fn start(
    dirs: &Dirs,
    resume: Resume,
    turns: Vec<ScriptTurn>,
    clock: &Arc<ManualClock>,
) -> Session {
    let mut options = Options::new(ProviderType::OpenAi);
    options.resume = resume;
    let s = Session::start_with(dirs, options, turns).await;
    cron_of(&s).set_clock(clock.clone());
    s
}

fn last_tool_result(s: &Session) -> String {
    let requests = s.requests();
    let body = &requests.last().expect("a request").body;
    tool_results(body)
        .last()
        .expect("a tool result")
        .text
        .clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scheduled_job_fires_as_a_turn_survives_resume_and_is_deleted() {
    let dirs = Dirs::new();
    let start_ms = Local
        .with_ymd_and_hms(2030, 1, 1, 10, 2, 0)
        .earliest()
        .unwrap()
        .timestamp_millis();
    let clock = Arc::new(ManualClock::new(start_ms));
    let mut s = start(
        &dirs,
        Resume::New,
        vec![
            ScriptTurn::tool_calls(&[(
                "call_create",
                "CronCreate",
                r#"{"cron":"*/5 * * * *","prompt":"check the build"}"#,
            )]),
            ScriptTurn::text("Scheduled."),
        ],
        &clock,
    )
    .await;
    let (reason, error) = s.run("Check the build every five minutes.").await;
    let tools = s.requests();
    assert_eq!(reason, TurnEndReason::Completed, "{error:?}");
    let created = last_tool_result(&s);
    let cron = cron_of(&s);
    let jobs = cron.list();
    assert_eq!(jobs.len(), 1);
    let id = jobs[0].id.clone();
    assert!(created.contains(&format!("id: {id}")), "{created}");
    assert!(
        created.contains("humanSchedule: every 5 minutes"),
        "{created}"
    );
    assert!(
        tools[0].raw_body.contains("\"CronList\""),
        "the cron tools are offered"
    );

    // 10:02 → 10:12: the 10:05 and 10:10 fires are due and collapse into one delivery.
    s.server.push(ScriptTurn::text("The build is green."));
    clock.advance(Duration::from_secs(10 * 60));
    cron.tick(s.opened.agent.handle.runtime());
    let (reason, error) = s.turn_end().await;
    assert_eq!(reason, TurnEndReason::Completed, "{error:?}");
    let requests = s.requests();
    let texts = user_texts(&requests.last().unwrap().body);
    let fire = texts.last().unwrap();
    assert_eq!(
        fire,
        &format!(
            "<cron-fire jobId=\"{id}\" cron=\"*/5 * * * *\" recurring=\"true\" coalescedCount=\"2\" stale=\"false\">\n<prompt>\ncheck the build\n</prompt>\n</cron-fire>"
        )
    );
    // Nothing more is due until 10:15.
    assert_eq!(cron.tick(s.opened.agent.handle.runtime()), 0);

    // CronList shows the job with its next fire.
    s.server
        .push(ScriptTurn::tool_calls(&[("call_list", "CronList", "{}")]));
    s.server.push(ScriptTurn::text("One job."));
    s.run("What is scheduled?").await;
    let listed = last_tool_result(&s);
    assert!(
        listed.starts_with(&format!("cron_jobs: 1\nid: {id}\n")),
        "{listed}"
    );
    assert!(listed.contains("nextFireAt: 2030-01-01T10:1"), "{listed}");
    let session_id = s.session_id();
    let kinds: Vec<String> = s.journal().iter().map(record_kind).collect();
    assert!(
        kinds.contains(&"cron.add".to_owned()) && kinds.contains(&"cron.cursor".to_owned()),
        "{kinds:?}"
    );
    let fired_turns = s
        .journal()
        .iter()
        .filter(|r| r["type"] == "turn.prompt" && r["origin"]["kind"] == "cron_job")
        .count();
    assert_eq!(fired_turns, 1);
    s.close().await;
    drop(s);

    // Resumed: the job and its cursor are back; delete it.
    let mut s = start(
        &dirs,
        Resume::Id(session_id.clone()),
        vec![
            ScriptTurn::tool_calls(&[(
                "call_delete",
                "CronDelete",
                // Ids match in any case; the journal must still name the stored one.
                &format!(r#"{{"id":"{}"}}"#, id.to_uppercase()),
            )]),
            ScriptTurn::text("Deleted."),
        ],
        &clock,
    )
    .await;
    let cron = cron_of(&s);
    let restored = cron.list();
    assert_eq!(restored.len(), 1);
    assert_eq!(restored[0].id, id);
    assert!(restored[0].last_fired_at.is_some());
    s.run("Stop checking the build.").await;
    assert!(
        last_tool_result(&s).eq_ignore_ascii_case(&format!("Deleted cron job {id}.")),
        "{}",
        last_tool_result(&s)
    );
    assert!(cron.is_empty());
    clock.advance(Duration::from_secs(3600));
    assert_eq!(
        cron.tick(s.opened.agent.handle.runtime()),
        0,
        "a deleted job never fires"
    );
    s.close().await;
    drop(s);

    let s = start(&dirs, Resume::Id(session_id), Vec::new(), &clock).await;
    assert!(cron_of(&s).is_empty(), "the deletion is journaled");
    assert_eq!(s.count(|e| matches!(e, Event::TurnStarted { .. })), 0);
}
