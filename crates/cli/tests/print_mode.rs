//! The real `kimi-rs` binary in print mode against a loopback scripted server: a temp
//! `KIMI_RS_HOME`, the model chosen through `KIMI_MODEL_*` variables given to the child process
//! only, in several wire formats. Every request the server captured must pair tool calls and
//! results (checked when the fixture drops).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{
    CORE_FORMATS, FORMATS, Fixture, mkfifo, open_fifo_writer, tool_results, user_texts, wait_child,
    wait_until,
};
use kimi_llm::scripted::ScriptTurn;
use pretty_assertions::assert_eq;
use serde_json::Value;
use std::process::Command;

#[test]
fn text_output_is_a_bullet_block_with_the_resume_hint_on_stderr_in_every_format() {
    for format in FORMATS {
        let fx = Fixture::new(
            format,
            vec![ScriptTurn::text("Hello from the scripted model.")],
        );
        let run = fx.run(&["-p", "Say hello"]);
        assert_eq!(run.code, Some(0), "{}: {run:?}", format.1);
        assert!(
            run.stdout.starts_with("• Hello from the scripted model."),
            "{}: {run:?}",
            format.1
        );
        let ids = fx.session_ids();
        assert_eq!(ids.len(), 1, "{}", format.1);
        assert!(
            run.stderr.contains(&format!(
                "To resume this session: cd {} && kimi-rs -r {}",
                fx.cwd().display(),
                ids[0]
            )),
            "{}: {run:?}",
            format.1
        );
        assert!(
            !run.stdout.contains("To resume"),
            "the hint is not on stdout"
        );
        let requests = fx.requests();
        assert_eq!(requests.len(), 1);
        assert!(requests[0].raw_body.contains("Say hello"));
    }
}

#[test]
fn stream_json_lines_have_the_reference_shapes() {
    for format in CORE_FORMATS {
        let fx = Fixture::new(
            format,
            vec![
                ScriptTurn::Error {
                    status: 429,
                    body: r#"{"error":{"message":"slow down","type":"rate_limit_error"}}"#
                        .to_owned(),
                    headers: vec![("retry-after-ms".to_owned(), "20".to_owned())],
                },
                ScriptTurn::tool_calls(&[("call_1", "Read", r#"{"path":"notes.txt"}"#)]),
                ScriptTurn::text("The notes say hi."),
            ],
        );
        std::fs::write(fx.cwd().join("notes.txt"), "hi there\n").unwrap();
        let run = fx.run(&["-p", "Read notes.txt", "--output-format", "stream-json"]);
        assert_eq!(run.code, Some(0), "{}: {run:?}", format.1);
        let lines: Vec<Value> = run
            .stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect();
        assert_eq!(lines.len(), 5, "{}: {run:?}", format.1);

        let retry = &lines[0];
        assert_eq!(retry["role"], "meta");
        assert_eq!(retry["type"], "turn.step.retrying");
        assert_eq!(retry["failed_attempt"], 1);
        assert_eq!(retry["next_attempt"], 2);
        assert_eq!(retry["delay_ms"], 20);
        assert_eq!(retry["status_code"], 429);
        assert!(retry["error_name"].is_string() && retry["error_message"].is_string());

        let assistant = &lines[1];
        assert_eq!(assistant["role"], "assistant", "{}: {run:?}", format.1);
        let calls = assistant["tool_calls"].as_array().unwrap();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0]["id"], "call_1");
        assert_eq!(calls[0]["function"]["name"], "Read");
        let args: Value =
            serde_json::from_str(calls[0]["function"]["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(args["path"], "notes.txt");

        let tool = &lines[2];
        assert_eq!(tool["role"], "tool");
        assert_eq!(tool["tool_call_id"], "call_1");
        assert!(
            tool["content"].as_str().unwrap().contains("hi there"),
            "{tool}"
        );

        assert_eq!(lines[3]["role"], "assistant");
        assert_eq!(lines[3]["content"], "The notes say hi.");
        assert!(lines[3].get("tool_calls").is_none_or(Value::is_null));

        let hint = &lines[4];
        let id = fx.session_ids().remove(0);
        assert_eq!(hint["role"], "meta");
        assert_eq!(hint["type"], "session.resume_hint");
        assert_eq!(hint["session_id"], id.as_str());
        assert!(
            hint["command"]
                .as_str()
                .unwrap()
                .ends_with(&format!("kimi-rs -r {id}"))
        );
        assert_eq!(
            hint["content"],
            format!(
                "To resume this session: {}",
                hint["command"].as_str().unwrap()
            )
        );
        assert_eq!(fx.requests().len(), 3);
    }
}

#[test]
fn a_401_exits_1_and_names_where_the_key_came_from() {
    for format in CORE_FORMATS {
        let fx = Fixture::new(
            format,
            vec![ScriptTurn::error(
                401,
                r#"{"error":{"message":"invalid api key","type":"authentication_error"}}"#,
            )],
        );
        let run = fx.run(&["-p", "hi"]);
        assert_eq!(run.code, Some(1), "{}: {run:?}", format.1);
        assert!(
            run.stderr.contains("KIMI_MODEL_API_KEY"),
            "{}: {run:?}",
            format.1
        );
        assert!(run.stderr.contains("401"), "{}: {run:?}", format.1);
        assert_eq!(fx.requests().len(), 1, "an auth error is not retried");
    }
}

#[test]
fn kill_9_mid_stream_then_resume_by_id_continues_the_same_conversation() {
    for format in CORE_FORMATS {
        let fx = Fixture::new(
            format,
            vec![ScriptTurn::reply(vec![
                kimi_llm::scripted::ScriptEvent::text("Working on it"),
                kimi_llm::scripted::ScriptEvent::Delay { ms: 60_000 },
                kimi_llm::scripted::ScriptEvent::text(" — never arrives"),
            ])],
        );
        let mut child = fx.spawn(&["-p", "FIRST PROMPT: count the files"]);
        wait_until("the first request", || !fx.requests().is_empty());
        child.kill().unwrap(); // SIGKILL
        let _ = wait_child(child);

        let ids = fx.session_ids();
        assert_eq!(ids.len(), 1, "{}", format.1);
        fx.server.push(ScriptTurn::text("Resumed fine."));
        let run = fx.run(&["-S", &ids[0], "-p", "SECOND PROMPT: go on"]);
        assert_eq!(run.code, Some(0), "{}: {run:?}", format.1);
        assert!(run.stdout.contains("Resumed fine."), "{run:?}");
        assert!(run.stderr.contains("resuming session"), "{run:?}");
        assert_eq!(fx.session_ids(), ids, "no new session");

        let requests = fx.requests();
        assert_eq!(requests.len(), 2);
        let users = user_texts(&requests[1].body);
        assert!(
            users.iter().any(|u| u.contains("FIRST PROMPT"))
                && users.iter().any(|u| u.contains("SECOND PROMPT")),
            "{}: {users:#?}",
            format.1
        );
        assert!(
            !requests[1].raw_body.contains("never arrives"),
            "nothing after the kill is invented"
        );
        let journal = fx.journal(&ids[0]);
        let ended: Vec<&str> = journal
            .iter()
            .filter(|r| r["type"] == "turn.ended")
            .map(|r| r["reason"].as_str().unwrap())
            .collect();
        assert_eq!(ended, vec!["completed"], "only the resumed turn ended");
    }
}

#[test]
fn kill_9_mid_tool_then_resume_marks_the_missing_result_as_not_completed() {
    for format in CORE_FORMATS {
        let fx = Fixture::new(
            format,
            vec![ScriptTurn::tool_calls(&[(
                "call_block",
                "Bash",
                r#"{"command":"cat gate.fifo"}"#,
            )])],
        );
        let fifo = fx.cwd().join("gate.fifo");
        mkfifo(&fifo);
        let mut child = fx.spawn(&["-p", "Run the blocking command"]);
        let writer = open_fifo_writer(&fifo);
        child.kill().unwrap();
        let _ = wait_child(child);
        drop(writer); // the orphaned `cat` sees end of file and exits

        let ids = fx.session_ids();
        fx.server.push(ScriptTurn::text("Understood."));
        let run = fx.run(&["-S", &ids[0], "-p", "What happened?"]);
        assert_eq!(run.code, Some(0), "{}: {run:?}", format.1);
        let requests = fx.requests();
        assert_eq!(requests.len(), 2);
        let results = tool_results(&requests[1].body);
        assert_eq!(results.len(), 1, "{}: {results:#?}", format.1);
        assert_eq!(results[0].0, "call_block");
        assert!(
            results[0]
                .1
                .contains("interrupted before its result was recorded"),
            "{}: {results:#?}",
            format.1
        );
        let users = user_texts(&requests[1].body);
        assert!(
            users.iter().any(|u| u.contains("What happened?")),
            "{users:#?}"
        );
    }
}

#[test]
fn sigint_mid_tool_exits_130_and_the_session_resumes_with_an_error_result() {
    for format in CORE_FORMATS {
        let fx = Fixture::new(
            format,
            vec![ScriptTurn::tool_calls(&[(
                "call_block",
                "Bash",
                r#"{"command":"cat gate.fifo"}"#,
            )])],
        );
        let fifo = fx.cwd().join("gate.fifo");
        mkfifo(&fifo);
        let child = fx.spawn(&["-p", "Run the blocking command"]);
        let writer = open_fifo_writer(&fifo);
        let status = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let run = wait_child(child);
        drop(writer);
        assert_eq!(run.code, Some(130), "{}: {run:?}", format.1);

        let ids = fx.session_ids();
        let journal = fx.journal(&ids[0]);
        let ended: Vec<&str> = journal
            .iter()
            .filter(|r| r["type"] == "turn.ended")
            .map(|r| r["reason"].as_str().unwrap())
            .collect();
        assert_eq!(ended, vec!["cancelled"], "{}", format.1);

        fx.server.push(ScriptTurn::text("Okay."));
        let run = fx.run(&["-S", &ids[0], "-p", "Never mind."]);
        assert_eq!(run.code, Some(0), "{}: {run:?}", format.1);
        let requests = fx.requests();
        let results = tool_results(&requests[1].body);
        assert_eq!(results.len(), 1, "{}: {results:#?}", format.1);
        assert!(
            results[0].1.starts_with("<system>ERROR"),
            "{}: the cancelled call reads as an error: {results:#?}",
            format.1
        );
    }
}

#[test]
fn continue_picks_the_newest_session_of_the_directory() {
    for format in CORE_FORMATS {
        let fx = Fixture::new(
            format,
            vec![
                ScriptTurn::text("First answer."),
                ScriptTurn::text("Second answer."),
            ],
        );
        let first = fx.run(&["-p", "FIRST: remember the number 42"]);
        assert_eq!(first.code, Some(0), "{first:?}");
        let second = fx.run(&["-c", "-p", "SECOND: what was the number?"]);
        assert_eq!(second.code, Some(0), "{second:?}");
        assert!(second.stdout.contains("Second answer."));
        assert_eq!(
            fx.session_ids().len(),
            1,
            "{}: -c reused the session",
            format.1
        );
        let requests = fx.requests();
        assert_eq!(requests.len(), 2);
        let users = user_texts(&requests[1].body);
        assert!(
            users.iter().any(|u| u.contains("FIRST: remember"))
                && users.iter().any(|u| u.contains("SECOND: what")),
            "{}: {users:#?}",
            format.1
        );
        assert!(requests[1].raw_body.contains("First answer."));
    }
}
