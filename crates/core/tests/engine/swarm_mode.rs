//! Swarm mode (`Op::SetSwarmMode`, `/swarm`): the enter reminder reaches the model once when
//! the mode turns on, the exit reminder once when it turns off; `/swarm on` lasts across turns
//! and a resume, a `/swarm <task>` turn and an AgentSwarm-started turn end it with them (the
//! tool trigger with no reminder at all), and a change while a turn is queued is refused.

use kimi_core::session::Resume;
use kimi_llm::ProviderType;
use kimi_llm::scripted::ScriptTurn;
use kimi_protocol::ops::{Event, Op, SwarmTrigger, TurnEndReason};
use serde_json::json;

use crate::harness::{Dirs, Options, Session};

const ENTER: &str = "You are now in \\\"agent swarm\\\" mode";
const EXIT: &str = "Swarm mode is off.";

fn on(trigger: SwarmTrigger) -> Op {
    Op::SetSwarmMode {
        enabled: true,
        trigger,
    }
}

fn off() -> Op {
    Op::SetSwarmMode {
        enabled: false,
        trigger: SwarmTrigger::Manual,
    }
}

async fn swarm_event(s: &mut Session) -> (bool, Option<SwarmTrigger>) {
    match s.wait_for(|e| matches!(e, Event::SwarmMode { .. })).await {
        Event::SwarmMode { active, trigger } => (active, trigger),
        _ => unreachable!(),
    }
}

/// How often `needle` occurs in the raw body of request `index`.
fn count_in(s: &Session, index: usize, needle: &str) -> usize {
    s.requests()[index].raw_body.matches(needle).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn swarm_on_lasts_across_turns_and_a_resume_until_off() {
    let dirs = Dirs::new();
    let mut s = Session::start(
        &dirs,
        ProviderType::OpenAi,
        vec![ScriptTurn::text("one"), ScriptTurn::text("two")],
    )
    .await;
    s.send(on(SwarmTrigger::Manual));
    assert_eq!(
        swarm_event(&mut s).await,
        (true, Some(SwarmTrigger::Manual))
    );
    assert_eq!(s.run("first").await.0, TurnEndReason::Completed);
    assert_eq!(s.run("second").await.0, TurnEndReason::Completed);
    // Reminded once, and still on after the turns.
    assert_eq!(count_in(&s, 0, ENTER), 1);
    assert_eq!(count_in(&s, 1, ENTER), 1);
    assert_eq!(
        s.opened.agent.handle.runtime().shared().swarm,
        Some(SwarmTrigger::Manual)
    );
    let id = s.session_id();
    s.close().await;
    drop(s);

    let mut options = Options::new(ProviderType::OpenAi);
    options.resume = Resume::Id(id);
    let mut s = Session::start_with(
        &dirs,
        options,
        vec![ScriptTurn::text("three"), ScriptTurn::text("four")],
    )
    .await;
    assert_eq!(
        s.opened.agent.handle.runtime().shared().swarm,
        Some(SwarmTrigger::Manual),
        "a resumed session comes back in swarm mode"
    );
    assert_eq!(s.run("third").await.0, TurnEndReason::Completed);
    assert_eq!(count_in(&s, 0, ENTER), 1, "not reminded again after resume");
    s.send(off());
    assert_eq!(swarm_event(&mut s).await, (false, None));
    assert_eq!(s.run("fourth").await.0, TurnEndReason::Completed);
    assert_eq!(count_in(&s, 1, EXIT), 1);
    let body = &s.requests()[1].raw_body;
    assert!(body.rfind(EXIT) > body.rfind(ENTER), "exit follows enter");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swarm_task_ends_swarm_mode_with_its_turn() {
    let dirs = Dirs::new();
    let mut s = Session::start(
        &dirs,
        ProviderType::Anthropic,
        vec![
            ScriptTurn::text("split and done"),
            ScriptTurn::text("plain"),
        ],
    )
    .await;
    s.send(on(SwarmTrigger::Task));
    s.submit("review every module");
    assert_eq!(swarm_event(&mut s).await, (true, Some(SwarmTrigger::Task)));
    assert_eq!(s.turn_end().await.0, TurnEndReason::Completed);
    // The mode ends before the turn's end is announced.
    assert_eq!(
        s.count(|e| matches!(e, Event::SwarmMode { active: false, .. })),
        1
    );
    assert_eq!(s.opened.agent.handle.runtime().shared().swarm, None);
    assert_eq!(count_in(&s, 0, ENTER), 1);
    assert_eq!(count_in(&s, 0, EXIT), 0);
    assert_eq!(s.run("something else").await.0, TurnEndReason::Completed);
    assert_eq!(
        count_in(&s, 1, EXIT),
        1,
        "the next turn hears swarm mode ended"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn swarm_mode_changes_only_while_idle() {
    let dirs = Dirs::new();
    // The turn waits in a tool until the test has tried to change the mode.
    let fifo = dirs.cwd().join("gate");
    crate::harness::mkfifo(&fifo);
    let read = json!({"command": format!("cat {}", fifo.display())});
    let mut s = Session::start(
        &dirs,
        ProviderType::OpenAi,
        vec![
            ScriptTurn::tool_calls(&[("call_wait", "Bash", &read.to_string())]),
            ScriptTurn::text("done"),
        ],
    )
    .await;
    s.submit("wait for the gate");
    s.wait_for(|e| matches!(e, Event::ToolStarted { .. })).await;
    s.send(on(SwarmTrigger::Manual));
    let refused = s
        .wait_for(|e| matches!(e, Event::Error { message } if message.contains("only be changed while the agent is idle")))
        .await;
    assert!(matches!(refused, Event::Error { .. }));
    assert_eq!(swarm_event(&mut s).await, (false, None));
    std::fs::write(&fifo, "open\n").unwrap();
    assert_eq!(s.turn_end().await.0, TurnEndReason::Completed);
    assert_eq!(s.opened.agent.handle.runtime().shared().swarm, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calling_agent_swarm_enters_swarm_mode_for_its_turn_without_a_reminder() {
    let dirs = Dirs::new();
    let args = json!({
        "description": "two looks",
        "prompt_template": "Look at {{item}} and report.",
        "items": ["part MARK-ONE", "part MARK-TWO"],
    });
    let mut s = Session::start(
        &dirs,
        ProviderType::OpenAi,
        vec![ScriptTurn::tool_calls(&[(
            "call_swarm",
            "AgentSwarm",
            &args.to_string(),
        )])],
    )
    .await;
    let report = "Looked at the part: it holds one function and nothing that needs a change. No files were modified and no commands were run; the findings are complete and nothing is left open for this item or its caller.";
    s.server.push_for("MARK-ONE", ScriptTurn::text(report));
    s.server.push_for("MARK-TWO", ScriptTurn::text(report));
    s.server.push(ScriptTurn::text("Both parts are fine."));
    s.submit("look at both parts");
    assert_eq!(swarm_event(&mut s).await, (true, Some(SwarmTrigger::Tool)));
    assert_eq!(swarm_event(&mut s).await, (false, None));
    assert_eq!(s.turn_end().await.0, TurnEndReason::Completed);
    for request in s.requests() {
        assert!(
            !request.raw_body.contains(ENTER),
            "a tool-started swarm is not reminded"
        );
        assert!(!request.raw_body.contains(EXIT));
    }
}
