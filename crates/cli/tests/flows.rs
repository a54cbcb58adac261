//! Flow skills through the real binary: `/flow:<name>` walks a mermaid or d2 chart one turn per
//! node against the scripted model (decisions answered with `<choice>`, asked again when a
//! reply names no branch), stops with its reason, is journaled, and is reported when a resume
//! finds one cut off; `/skill:<name>` sends the same skill as one prompt. In ACP the prompt that
//! starts a flow is answered when the flow ends.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod acp_editor;
mod common;

use acp_editor::Editor;
use common::{CORE_FORMATS, Fixture, json_lines, user_texts};
use kimi_llm::scripted::ScriptTurn;
use serde_json::Value;

const PLAN_FLOW: &str = r#"---
name: plan
description: Plan, check the plan, then build it
type: flow
---
Plan before building.

```mermaid
flowchart TD
    S([BEGIN]) --> A[Write the plan into PLAN.md]
    A --> B{Is the plan complete?}
    B -->|yes| C[Implement the plan]
    B -->|no| A
    C --> E([END])
```
"#;

const DECISION: &str = "Is the plan complete?\n\nAvailable branches:\n- yes\n- no\n\nReply with a choice using <choice>...</choice>.";
const NUDGE: &str = "Your last response did not include a valid choice. Reply with one of the choices using <choice>...</choice>.";

fn write_skill(fx: &Fixture, name: &str, text: &str) {
    let dir = fx.home.path().join("skills").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), text).unwrap();
}

/// The last user message of each request the model got.
fn last_prompts(fx: &Fixture) -> Vec<String> {
    fx.requests()
        .iter()
        .map(|r| user_texts(&r.body).pop().unwrap_or_default())
        .collect()
}

fn flow_states(fx: &Fixture, session: &str) -> Vec<String> {
    fx.journal(session)
        .into_iter()
        .filter(|r| r["type"] == "flow.update")
        .map(|r| {
            let state = &r["state"];
            match state["kind"].as_str().unwrap() {
                "entered" => format!(
                    "entered {}{}",
                    state["node"].as_str().unwrap(),
                    state["choice"]
                        .as_str()
                        .map(|c| format!(" ({c})"))
                        .unwrap_or_default()
                ),
                "reasked" => format!("reasked {}", state["node"].as_str().unwrap()),
                kind => kind.to_owned(),
            }
        })
        .collect()
}

#[test]
fn a_flow_walks_its_chart_turn_by_turn_and_asks_again_for_a_missing_choice() {
    for format in CORE_FORMATS {
        let fx = Fixture::new(
            format,
            vec![
                ScriptTurn::text("Plan v1 written."),
                ScriptTurn::text("I think it is mostly fine."),
                ScriptTurn::text("Step 3 is missing. <choice>no</choice>"),
                // A node's turn runs tools like any other.
                ScriptTurn::tool_calls(&[("c1", "Glob", r#"{"pattern":"*.md"}"#)]),
                ScriptTurn::text("Plan v2 written."),
                ScriptTurn::text("<choice>maybe</choice> ... on reflection <choice>yes</choice>"),
                ScriptTurn::text("Implemented."),
            ],
        );
        write_skill(&fx, "plan", PLAN_FLOW);
        let run = fx.run(&["-p", "/flow:plan"]);
        assert_eq!(run.code, Some(0), "{}: {run:?}", format.1);
        let nudged = format!("{DECISION}\n\n{NUDGE}");
        assert_eq!(
            last_prompts(&fx),
            vec![
                "Write the plan into PLAN.md".to_owned(),
                DECISION.to_owned(),
                nudged,
                "Write the plan into PLAN.md".to_owned(),
                // The same turn's second request, after the Glob call.
                "Write the plan into PLAN.md".to_owned(),
                DECISION.to_owned(),
                "Implement the plan".to_owned(),
            ],
            "{}",
            format.1
        );
        // One conversation: the last request carries every node's exchange.
        let last = &fx.requests()[6].body;
        let all = user_texts(last);
        assert_eq!(all.len(), 6, "{all:?}");
        assert!(run.stdout.contains("Implemented."), "{run:?}");
        for line in [
            "flow plan: started",
            "flow plan: A: Write the plan into PLAN.md",
            "flow plan: the reply at B named no branch; asking again (attempt 2)",
            "flow plan: chose no → A: Write the plan into PLAN.md",
            "flow plan: chose yes → C: Implement the plan",
            "flow plan: finished after 5 moves",
        ] {
            assert!(run.stderr.contains(line), "{line:?} in {}", run.stderr);
        }
        let session = fx.session_ids().pop().unwrap();
        assert_eq!(
            flow_states(&fx, &session),
            vec![
                "started",
                "entered A",
                "entered B",
                "reasked B",
                "entered A (no)",
                "entered B",
                "entered C (yes)",
                "finished",
            ]
        );
        // Node prompts are the engine's: journaled with a `flow` system-trigger origin.
        let origins: Vec<Value> = fx
            .journal(&session)
            .into_iter()
            .filter(|r| r["type"] == "context.append_message" && r["message"]["role"] == "user")
            .map(|r| r["message"]["origin"].clone())
            .collect();
        assert_eq!(origins.len(), 6);
        assert!(
            origins
                .iter()
                .all(|o| o["kind"] == "system_trigger" && o["name"] == "flow"),
            "{origins:?}"
        );
    }
}

const REVIEW_D2: &str = r#"---
name: review
description: Review until green
type: flow
---
```d2
start: BEGIN
check: |md
  Are the tests green?
|
done: END
start -> check
check -> done: green
check -> check: red
```
"#;

#[test]
fn a_decision_that_never_names_a_branch_stops_the_flow_and_fails_the_run() {
    let replies = (0..4)
        .map(|i| ScriptTurn::text(format!("Hmm {i}.")))
        .collect();
    let fx = Fixture::new(CORE_FORMATS[0], replies);
    write_skill(&fx, "review", REVIEW_D2);
    let run = fx.run(&["-p", "/flow:review", "--output-format", "stream-json"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert_eq!(fx.requests().len(), 4, "asked once and again three times");
    assert!(
        last_prompts(&fx)[0]
            .starts_with("Are the tests green?\n\nAvailable branches:\n- green\n- red\n"),
        "{:?}",
        last_prompts(&fx)
    );
    assert!(
        run.stderr
            .contains("flow review: stopped: the reply at check named no branch after 4 tries (got no <choice>; branches: green, red)"),
        "{}",
        run.stderr
    );
    let updates: Vec<Value> = json_lines(&run)
        .into_iter()
        .filter(|l| l["type"] == "flow.updated")
        .map(|l| l["update"]["state"]["kind"].clone())
        .collect();
    assert_eq!(
        updates,
        [
            "started", "entered", "reasked", "reasked", "reasked", "stopped"
        ]
    );
}

#[test]
fn a_failing_turn_stops_the_flow_and_the_skill_command_sends_it_as_one_prompt() {
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![
            ScriptTurn::text("Plan written."),
            ScriptTurn::error(400, r#"{"error":{"message":"bad request"}}"#),
        ],
    );
    write_skill(&fx, "plan", PLAN_FLOW);
    let run = fx.run(&["-p", "/flow:plan"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(
        run.stderr
            .contains("flow plan: stopped: the turn at B failed:"),
        "{}",
        run.stderr
    );
    let session = fx.session_ids().pop().unwrap();
    assert_eq!(
        flow_states(&fx, &session).last().map(String::as_str),
        Some("stopped")
    );

    // `/skill:plan` is the reference's behaviour: the whole skill, chart included, once.
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![ScriptTurn::text("Following the flow.")],
    );
    write_skill(&fx, "plan", PLAN_FLOW);
    let run = fx.run(&["-p", "/skill:plan"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let prompts = last_prompts(&fx);
    assert_eq!(prompts.len(), 1);
    assert!(
        prompts[0].contains("Plan before building.") && prompts[0].contains("B -->|yes| C"),
        "{prompts:?}"
    );
}

#[test]
fn charts_that_cannot_run_are_named_at_start_up_and_refused_without_a_request() {
    let fx = Fixture::new(CORE_FORMATS[0], vec![ScriptTurn::text("unused")]);
    write_skill(
        &fx,
        "broken",
        "---\nname: broken\ndescription: d\ntype: flow\n---\n```mermaid\ngraph TD\nS[BEGIN] --> A[x]\nA --> B\nA --> C\nB --> E[END]\nC --> E\n```\n",
    );
    write_skill(&fx, "plan", PLAN_FLOW);
    let run = fx.run(&["-p", "/flow:broken"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(
        run.stderr.contains("flow skill broken (")
            && run
                .stderr
                .contains("/flow:broken cannot run: node \"A\" branches to \"B\" without a label"),
        "{}",
        run.stderr
    );
    assert!(fx.requests().is_empty());

    for (prompt, want) in [
        (
            "/flow:nope",
            "no skill named \"nope\"; flow skills: broken, plan",
        ),
        ("/flow:plan now", "takes no arguments"),
    ] {
        let run = fx.run(&["-p", prompt]);
        assert_eq!(run.code, Some(1), "{prompt}: {run:?}");
        assert!(run.stderr.contains(want), "{prompt}: {}", run.stderr);
    }
    assert!(fx.requests().is_empty());
}

#[test]
fn a_flow_cut_off_by_the_process_ending_is_reported_on_resume() {
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![
            ScriptTurn::text("Hi."),
            ScriptTurn::text("Hello."),
            ScriptTurn::text("Again."),
        ],
    );
    write_skill(&fx, "plan", PLAN_FLOW);
    // A session whose journal ends as a kill -9 during a flow's first node leaves it: the
    // flow started and entered its first node, nothing after.
    let run = fx.run(&["-p", "hi"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let session = fx.session_ids().pop().unwrap();
    let wire = common::find_file(fx.home.path(), &session, "wire.jsonl").unwrap();
    let mut journal = std::fs::read_to_string(&wire).unwrap();
    for state in [
        r#"{"kind":"started"}"#,
        r#"{"kind":"entered","node":"A","label":"Write the plan into PLAN.md"}"#,
    ] {
        journal.push_str(&format!(
            "{{\"type\":\"flow.update\",\"name\":\"plan\",\"state\":{state},\"moves\":1,\"time\":1}}\n"
        ));
    }
    std::fs::write(&wire, journal).unwrap();
    let run = fx.run(&["-S", &session, "-p", "hello again"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        run.stderr.contains(
            "flow plan: stopped: the previous kimi-rs process ended during the flow; run /flow:plan to start it again"
        ),
        "{}",
        run.stderr
    );
    assert_eq!(
        flow_states(&fx, &session),
        vec!["started", "entered A", "stopped"]
    );
    // Said once: a second resume is quiet about it.
    let run = fx.run(&["-S", &session, "-p", "again"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(!run.stderr.contains("flow plan"), "{}", run.stderr);
}

#[test]
fn over_acp_the_flow_prompt_is_answered_when_the_flow_ends() {
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![
            ScriptTurn::text("Plan written."),
            ScriptTurn::text("<choice>yes</choice>"),
            ScriptTurn::text("Built."),
        ],
    );
    write_skill(&fx, "plan", PLAN_FLOW);
    let mut editor = Editor::start(&fx);
    let session = editor.new_session(&fx);
    let response = editor.prompt(&session, "/flow:plan");
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    assert_eq!(
        fx.requests().len(),
        3,
        "all three nodes ran before the answer"
    );
    let text = editor.agent_text();
    for part in [
        "flow plan: A: Write the plan into PLAN.md",
        "Plan written.",
        "flow plan: chose yes → C: Implement the plan",
        "Built.",
        "flow plan: finished after 3 moves",
    ] {
        assert!(text.contains(part), "{part:?} in {text}");
    }
    let commands = editor
        .updates
        .iter()
        .find(|u| u["sessionUpdate"] == "available_commands_update")
        .expect("commands are advertised");
    assert!(
        commands["availableCommands"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == "flow:plan"),
        "{commands}"
    );
    editor.close();
}

/// The web API: a `/flow:<name>` prompt is acknowledged like any prompt, its progress arrives
/// as `flow.updated` frames (with a readable `text`), and a second flow is refused while the
/// first runs.
#[test]
fn over_the_web_api_flow_progress_arrives_as_frames() {
    use common::web_client::{Incoming, WebServer, connect, next, subscribe};
    use kimi_llm::scripted::ScriptEvent;
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![
            ScriptTurn::text("Plan written."),
            ScriptTurn::reply(vec![ScriptEvent::text("thinking"), ScriptEvent::stall()]),
        ],
    );
    write_skill(&fx, "plan", PLAN_FLOW);
    let server = WebServer::start(fx.command(&["web", "--port", "0", "--no-open"]));
    let session = server.create_session(&fx.cwd());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut socket = connect(server.port, &server.token, None).await;
        subscribe(&mut socket, &session, None).await;
        server.prompt(&session, "/flow:plan");
        let mut texts = Vec::new();
        while texts.len() < 3 {
            match next(&mut socket, common::WAIT).await {
                Some(Incoming::Frame(frame)) if frame["type"] == "flow.updated" => {
                    texts.push(frame["payload"]["text"].as_str().unwrap().to_owned());
                }
                Some(Incoming::Frame(_)) => {}
                other => panic!("the socket ended: {other:?} after {texts:?}"),
            }
        }
        assert_eq!(
            texts,
            [
                "flow plan: started",
                "flow plan: A: Write the plan into PLAN.md",
                "flow plan: B: Is the plan complete?",
            ]
        );
        // The decision's turn is stalled: another flow is refused, naming the running one.
        let refused = server.call(
            "POST",
            &format!("/api/v1/sessions/{session}/prompts"),
            serde_json::json!({"content": [{"type": "text", "text": "/flow:plan"}]}),
        );
        assert_ne!(refused["code"], 0, "{refused}");
        assert!(
            refused["msg"]
                .as_str()
                .unwrap_or_default()
                .contains("flow plan is still running (at B)"),
            "{refused}"
        );
    });
}
