//! Faults that used to hang kimi-rs or exhaust the machine, on the real binary in print mode
//! against the loopback scripted model: a response asking for 2,000 tool calls, a day-long
//! Retry-After, and a FIFO where config.toml should be.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{FORMATS, Fixture, mkfifo, user_texts};
use kimi_llm::scripted::ScriptTurn;

#[test]
fn a_response_with_2000_tool_calls_runs_none_and_fails_the_turn_clearly() {
    let calls: Vec<(String, String)> = (0..2000)
        .map(|i| {
            (
                format!("call_{i}"),
                format!(r#"{{"path":"f{i}.txt","content":"x"}}"#),
            )
        })
        .collect();
    let refs: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|(id, args)| (id.as_str(), "Write", args.as_str()))
        .collect();
    let fx = Fixture::new(
        FORMATS[0],
        vec![
            ScriptTurn::tool_calls(&refs),
            ScriptTurn::text("never reached"),
        ],
    );
    let run = fx.run(&["-p", "write the files"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(
        run.stderr
            .contains("more than 128 tool calls in one response")
            && run.stderr.contains("none of them ran"),
        "{run:?}"
    );
    assert_eq!(fx.requests().len(), 1, "not retried, no next step: {run:?}");
    let written = std::fs::read_dir(fx.cwd()).unwrap().count();
    assert_eq!(written, 0, "no call ran");

    // The session goes on: the next request's history pairs every call with a result (the
    // fixture checks pairing on every request when it drops).
    fx.server.push(ScriptTurn::text("fine"));
    let run = fx.run(&["-c", "-p", "smaller batches please"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let last = fx.requests().last().unwrap().body.clone();
    assert!(
        user_texts(&last)
            .iter()
            .any(|t| t.contains("smaller batches")),
        "{last}"
    );
}

#[test]
fn a_day_long_retry_after_fails_at_once_naming_the_key() {
    let fx = Fixture::new(
        FORMATS[0],
        vec![
            ScriptTurn::Error {
                status: 429,
                body: r#"{"error":{"message":"Rate limit reached","type":"rate_limit_error"}}"#
                    .to_owned(),
                headers: vec![("Retry-After".to_owned(), "86000".to_owned())],
            },
            ScriptTurn::text("never reached"),
        ],
    );
    std::fs::write(
        fx.home.path().join("config.toml"),
        "[loop_control]\nmax_retry_after_s = 5\n",
    )
    .unwrap();
    let run = fx.run(&["-p", "hi"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(
        run.stderr.contains("asked to wait 86000 s")
            && run.stderr.contains("max_retry_after_s = 5 s"),
        "{run:?}"
    );
    assert_eq!(fx.requests().len(), 1, "no retry: {run:?}");
}

#[test]
fn a_fifo_in_place_of_a_config_file_refuses_the_start_without_blocking() {
    for name in ["config.toml", "mcp.json"] {
        let fx = Fixture::new(FORMATS[0], vec![ScriptTurn::text("hello")]);
        let path = fx.home.path().join(name);
        mkfifo(&path);
        // `run` waits a bounded time: a blocked open fails the test instead of hanging it.
        let run = fx.run(&["-p", "hi"]);
        assert!(
            run.stderr
                .contains("a FIFO (named pipe), not a regular file"),
            "{name}: {run:?}"
        );
        if name == "config.toml" {
            assert_eq!(run.code, Some(1), "{run:?}");
            assert!(fx.requests().is_empty(), "{run:?}");
        }
    }
}
