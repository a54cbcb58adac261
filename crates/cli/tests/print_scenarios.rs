//! Agent scenarios on the real `kimi-rs` binary in print mode (`--output-format stream-json`)
//! against a loopback scripted server, in every wire format: a multi-step read/edit/run task,
//! parallel tool calls, invalid tool arguments, and a 429 that is retried. Every request the
//! server captured must pair tool calls and results (checked when the fixture drops).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{FORMATS, Fixture, json_lines, tool_lines, wire_tool_results};
use kimi_llm::scripted::ScriptTurn;
use pretty_assertions::assert_eq;
use serde_json::Value;

/// `(id, name, arguments)` of every tool call the assistant lines announced, in order.
fn announced_calls(lines: &[Value]) -> Vec<(String, String, Value)> {
    lines
        .iter()
        .filter(|l| l["role"] == "assistant")
        .flat_map(|l| l["tool_calls"].as_array().into_iter().flatten())
        .map(|c| {
            let args = c["function"]["arguments"].as_str().unwrap_or_default();
            (
                c["id"].as_str().unwrap_or_default().to_owned(),
                c["function"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                serde_json::from_str(args).unwrap_or(Value::Null),
            )
        })
        .collect()
}

/// The text of the last assistant line (the final answer).
fn final_answer(lines: &[Value]) -> String {
    lines
        .iter()
        .rfind(|l| l["role"] == "assistant")
        .and_then(|l| l["content"].as_str())
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn multi_step_read_edit_run_in_every_wire_format() {
    for format in FORMATS {
        let name = format.1;
        let fx = Fixture::new(
            format,
            vec![
                ScriptTurn::tool_calls(&[("call_read", "Read", r#"{"path":"calc.txt"}"#)]),
                ScriptTurn::tool_calls(&[(
                    "call_edit",
                    "Edit",
                    r#"{"path":"calc.txt","old_string":"value = 1","new_string":"value = 2"}"#,
                )]),
                ScriptTurn::tool_calls(&[(
                    "call_run",
                    "Bash",
                    r#"{"command":"cat calc.txt; echo ran-ok"}"#,
                )]),
                ScriptTurn::text("The value is 2 now."),
            ],
        );
        std::fs::write(fx.cwd().join("calc.txt"), "value = 1\n").unwrap();
        let run = fx.run(&[
            "-p",
            "Set the value to 2 and show the file.",
            "--output-format",
            "stream-json",
        ]);
        assert_eq!(run.code, Some(0), "{name}: {run:?}");
        assert_eq!(
            std::fs::read_to_string(fx.cwd().join("calc.txt")).unwrap(),
            "value = 2\n",
            "{name}: the edit reached the disk"
        );

        let lines = json_lines(&run);
        let calls = announced_calls(&lines);
        let names: Vec<&str> = calls.iter().map(|c| c.1.as_str()).collect();
        assert_eq!(names, vec!["Read", "Edit", "Bash"], "{name}: {run:?}");
        let tools = tool_lines(&lines);
        assert_eq!(tools.len(), 3, "{name}: {run:?}");
        for (call, tool) in calls.iter().zip(&tools) {
            assert_eq!(call.0, tool.0, "{name}: each result answers its call");
        }
        // Each tool line comes after the assistant line that announced its call, and before
        // the next assistant line.
        let roles: Vec<&str> = lines
            .iter()
            .map(|l| l["role"].as_str().unwrap_or_default())
            .collect();
        assert_eq!(
            roles,
            vec![
                "assistant",
                "tool",
                "assistant",
                "tool",
                "assistant",
                "tool",
                "assistant",
                "meta"
            ],
            "{name}: {run:?}"
        );
        assert!(tools[0].1.contains("value = 1"), "{name}: {tools:#?}");
        assert!(
            !tools[1].1.contains("ERROR") && !tools[1].1.is_empty(),
            "{name}: {tools:#?}"
        );
        assert!(
            tools[2].1.contains("value = 2") && tools[2].1.contains("ran-ok"),
            "{name}: {tools:#?}"
        );
        assert_eq!(final_answer(&lines), "The value is 2 now.", "{name}");

        let requests = fx.requests();
        assert_eq!(requests.len(), 4, "{name}: one request per step");
        let results = wire_tool_results(&requests[3].body);
        assert_eq!(results.len(), 3, "{name}: {results:#?}");
        assert!(results[0].1.contains("value = 1"), "{name}: {results:#?}");
        assert!(
            results[2].1.contains("value = 2") && results[2].1.contains("ran-ok"),
            "{name}: the command's output reaches the model: {results:#?}"
        );
    }
}

#[test]
fn two_reads_in_one_answer_both_run_and_both_results_go_back_in_every_wire_format() {
    for format in FORMATS {
        let name = format.1;
        let fx = Fixture::new(
            format,
            vec![
                ScriptTurn::tool_calls(&[
                    ("call_a", "Read", r#"{"path":"a.txt"}"#),
                    ("call_b", "Read", r#"{"path":"b.txt"}"#),
                ]),
                ScriptTurn::text("Both read."),
            ],
        );
        std::fs::write(fx.cwd().join("a.txt"), "alpha contents\n").unwrap();
        std::fs::write(fx.cwd().join("b.txt"), "beta contents\n").unwrap();
        let run = fx.run(&[
            "-p",
            "Read a.txt and b.txt",
            "--output-format",
            "stream-json",
        ]);
        assert_eq!(run.code, Some(0), "{name}: {run:?}");

        let lines = json_lines(&run);
        let calls = announced_calls(&lines);
        assert_eq!(calls.len(), 2, "{name}: {run:?}");
        let paths: Vec<&str> = calls
            .iter()
            .map(|c| c.2["path"].as_str().unwrap_or_default())
            .collect();
        assert_eq!(paths, vec!["a.txt", "b.txt"], "{name}");
        assert_ne!(calls[0].0, calls[1].0, "{name}: distinct call ids");
        let assistants_with_calls = lines
            .iter()
            .filter(|l| l["role"] == "assistant" && l["tool_calls"].is_array())
            .count();
        assert_eq!(assistants_with_calls, 1, "{name}: both calls in one answer");

        let tools = tool_lines(&lines);
        assert_eq!(tools.len(), 2, "{name}: {run:?}");
        for (id, path, text) in [
            (&calls[0].0, "a.txt", "alpha contents"),
            (&calls[1].0, "b.txt", "beta contents"),
        ] {
            let tool = tools
                .iter()
                .find(|t| &t.0 == id)
                .unwrap_or_else(|| panic!("{name}: no tool line for {path}: {run:?}"));
            assert!(tool.1.contains(text), "{name}: {tools:#?}");
        }
        assert_eq!(final_answer(&lines), "Both read.", "{name}");

        let requests = fx.requests();
        assert_eq!(requests.len(), 2, "{name}");
        let mut results = wire_tool_results(&requests[1].body);
        results.sort_by(|x, y| x.1.cmp(&y.1));
        assert_eq!(results.len(), 2, "{name}: {results:#?}");
        assert!(
            results[0].1.contains("alpha contents"),
            "{name}: {results:#?}"
        );
        assert!(
            results[1].1.contains("beta contents"),
            "{name}: {results:#?}"
        );
        assert!(
            results.iter().all(|r| !r.1.starts_with("<system>ERROR")),
            "{name}: {results:#?}"
        );
    }
}

#[test]
fn a_write_without_content_is_an_error_result_and_the_file_is_not_created_in_every_wire_format() {
    for format in FORMATS {
        let name = format.1;
        let fx = Fixture::new(
            format,
            vec![
                ScriptTurn::tool_calls(&[("call_missing", "Write", r#"{"path":"missing.txt"}"#)]),
                ScriptTurn::text("I will fix the arguments."),
            ],
        );
        let run = fx.run(&["-p", "Write a file.", "--output-format", "stream-json"]);
        assert_eq!(run.code, Some(0), "{name}: {run:?}");
        assert!(
            !fx.cwd().join("missing.txt").exists(),
            "{name}: Write without content did not run"
        );

        let lines = json_lines(&run);
        let tools = tool_lines(&lines);
        assert_eq!(tools.len(), 1, "{name}: {run:?}");
        assert!(
            tools[0].1.contains(r#"Invalid args for tool "Write""#)
                && tools[0].1.contains("'content'"),
            "{name}: the validation error names the missing field: {tools:#?}"
        );
        let calls = announced_calls(&lines);
        assert_eq!(calls.len(), 1, "{name}: {run:?}");
        assert_eq!(calls[0].1, "Write", "{name}");
        assert_eq!(
            calls[0].0, tools[0].0,
            "{name}: the result answers the call"
        );
        assert_eq!(
            final_answer(&lines),
            "I will fix the arguments.",
            "{name}: the turn completes"
        );

        let requests = fx.requests();
        assert_eq!(requests.len(), 2, "{name}");
        let results = wire_tool_results(&requests[1].body);
        assert_eq!(results.len(), 1, "{name}: {results:#?}");
        assert!(
            results[0].1.starts_with("<system>ERROR")
                && results[0].1.contains(r#"Invalid args for tool "Write""#)
                && results[0].1.contains("'content'"),
            "{name}: the model is told it failed and why: {results:#?}"
        );
    }
}

#[test]
fn a_429_with_retry_after_is_retried_and_then_answers_in_every_wire_format() {
    for format in FORMATS {
        let name = format.1;
        let fx = Fixture::new(
            format,
            vec![
                ScriptTurn::Error {
                    status: 429,
                    body: r#"{"error":{"message":"slow down","type":"rate_limit_error"}}"#
                        .to_owned(),
                    headers: vec![("retry-after".to_owned(), "1".to_owned())],
                },
                ScriptTurn::text("Hello after the retry."),
            ],
        );
        let run = fx.run(&["-p", "hi", "--output-format", "stream-json"]);
        assert_eq!(run.code, Some(0), "{name}: {run:?}");
        let lines = json_lines(&run);
        let roles: Vec<(&str, &str)> = lines
            .iter()
            .map(|l| {
                (
                    l["role"].as_str().unwrap_or_default(),
                    l["type"].as_str().unwrap_or_default(),
                )
            })
            .collect();
        assert_eq!(
            roles,
            vec![
                ("meta", "turn.step.retrying"),
                ("assistant", ""),
                ("meta", "session.resume_hint")
            ],
            "{name}: {run:?}"
        );
        let retry = &lines[0];
        assert_eq!(retry["status_code"], 429, "{name}: {retry}");
        assert_eq!(retry["failed_attempt"], 1, "{name}: {retry}");
        assert_eq!(retry["next_attempt"], 2, "{name}: {retry}");
        assert_eq!(
            retry["delay_ms"], 1000,
            "{name}: the server's Retry-After is honoured: {retry}"
        );
        assert_eq!(lines[1]["content"], "Hello after the retry.", "{name}");
        assert_eq!(fx.requests().len(), 2, "{name}");
    }
}

#[test]
fn the_same_tool_in_consecutive_steps_gets_each_result_in_every_wire_format() {
    // Gemini carries no call ids: the client numbers calls per answer, so both steps' calls
    // may get the same id. Each result must still answer its own call.
    for format in FORMATS {
        let name = format.1;
        let fx = Fixture::new(
            format,
            vec![
                ScriptTurn::tool_calls(&[("call_1", "Read", r#"{"path":"a.txt"}"#)]),
                ScriptTurn::tool_calls(&[("call_2", "Read", r#"{"path":"b.txt"}"#)]),
                ScriptTurn::text("Read both, one after the other."),
            ],
        );
        std::fs::write(fx.cwd().join("a.txt"), "alpha contents\n").unwrap();
        std::fs::write(fx.cwd().join("b.txt"), "beta contents\n").unwrap();
        let run = fx.run(&[
            "-p",
            "Read a.txt, then b.txt",
            "--output-format",
            "stream-json",
        ]);
        assert_eq!(run.code, Some(0), "{name}: {run:?}");
        let lines = json_lines(&run);
        let tools = tool_lines(&lines);
        assert_eq!(tools.len(), 2, "{name}: {run:?}");
        assert!(tools[0].1.contains("alpha contents"), "{name}: {tools:#?}");
        assert!(tools[1].1.contains("beta contents"), "{name}: {tools:#?}");
        assert_eq!(
            final_answer(&lines),
            "Read both, one after the other.",
            "{name}"
        );

        let requests = fx.requests();
        assert_eq!(requests.len(), 3, "{name}");
        let results = wire_tool_results(&requests[2].body);
        assert_eq!(results.len(), 2, "{name}: {results:#?}");
        assert!(
            results[0].1.contains("alpha contents"),
            "{name}: {results:#?}"
        );
        assert!(
            results[1].1.contains("beta contents"),
            "{name}: {results:#?}"
        );

        // The journal replays to the same pairing.
        fx.server.push(ScriptTurn::text("Still both."));
        let again = fx.run(&["-c", "-p", "And now?", "--output-format", "stream-json"]);
        assert_eq!(again.code, Some(0), "{name}: {again:?}");
        let requests = fx.requests();
        assert_eq!(requests.len(), 4, "{name}");
        let replayed = wire_tool_results(&requests[3].body);
        assert_eq!(
            replayed, results,
            "{name}: the resumed history pairs the same way"
        );
    }
}
