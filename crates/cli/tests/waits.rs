//! No silent waits: a model that cannot be reached fails fast with its retries on stderr; MCP
//! servers connect in the background, so one that never answers holds nothing up and one that
//! is slow joins the session when it is ready.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{CORE_FORMATS, Fixture, mcp_fixture, wait_child};
use kimi_llm::scripted::ScriptTurn;
use serde_json::json;

#[test]
fn an_unreachable_model_fails_with_its_retries_on_stderr() {
    let fx = Fixture::new(CORE_FORMATS[0], Vec::new());
    // Port 1 on loopback: nothing listens, every connect is refused at once.
    let mut cmd = fx.command(&["-p", "hi"]);
    cmd.env("KIMI_MODEL_BASE_URL", "http://127.0.0.1:1/v1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let run = wait_child(cmd.spawn().unwrap());
    assert_eq!(run.code, Some(1), "{run:?}");
    let retries: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("retrying: "))
        .collect();
    assert_eq!(
        retries.len(),
        3,
        "four attempts, three retries: {}",
        run.stderr
    );
    for (i, line) in retries.iter().enumerate() {
        let n = i + 1;
        assert!(
            line.contains(&format!("attempt {n}/4 failed"))
                && line.contains(&format!("attempt {}/4 in ", n + 1))
                && line.contains("127.0.0.1:1"),
            "{line}"
        );
    }
    assert!(
        run.stderr.contains("the turn failed: could not reach")
            && run.stderr.contains("gave up after 4 attempts"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_hanging_mcp_server_does_not_hold_up_the_turn() {
    let fx = Fixture::new(CORE_FORMATS[0], vec![ScriptTurn::text("Answered anyway.")]);
    // `sleep` never answers `initialize`; its start-up timeout (30 s) is far beyond this run.
    let config = json!({"mcpServers": {
        "hang": {"command": "sleep", "args": ["1000"]},
        "gone": {"command": "/nonexistent/mcp-server"},
    }});
    std::fs::write(fx.home.path().join("mcp.json"), config.to_string()).unwrap();
    let run = fx.run(&["-p", "hi"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stdout.contains("Answered anyway."), "{run:?}");
    // A server still connecting at the end is not an error; a failed one is one line.
    assert!(!run.stderr.contains("`hang`"), "{}", run.stderr);
    assert_eq!(
        run.stderr
            .matches("MCP server `gone` failed to start")
            .count(),
        1,
        "{}",
        run.stderr
    );
    assert_eq!(fx.requests().len(), 1);
}

#[test]
fn a_server_that_becomes_ready_later_offers_its_tools_in_a_later_step() {
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![
            // The server answers nothing until this file exists: the first request has gone.
            ScriptTurn::tool_calls(&[("call_go", "Bash", r#"{"command":"touch go"}"#)]),
            // Called while the server may still be finishing its handshake: the call waits
            // for it instead of failing as an unknown tool.
            ScriptTurn::tool_calls(&[(
                "call_echo",
                "mcp__late__echo",
                r#"{"text":"hello from later"}"#,
            )]),
            ScriptTurn::text("Done."),
        ],
    );
    let go = fx.cwd().join("go");
    let config = json!({"mcpServers": {"late": {
        "command": mcp_fixture(),
        "args": ["--wait-for", go.display().to_string()],
    }}});
    std::fs::write(fx.home.path().join("mcp.json"), config.to_string()).unwrap();
    let run = fx.run(&[
        "-p",
        "use the late server",
        "--output-format",
        "stream-json",
    ]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let requests = fx.requests();
    assert_eq!(requests.len(), 3, "{run:?}");
    let tools = |i: usize| requests[i].body["tools"].to_string();
    assert!(!tools(0).contains("mcp__late__echo"), "{}", tools(0));
    assert!(tools(2).contains("mcp__late__echo"), "{}", tools(2));
    let result = run
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|l| l["tool_call_id"] == "call_echo")
        .expect("the MCP call has a result line");
    assert!(
        result["content"].to_string().contains("hello from later"),
        "{result}"
    );
}
