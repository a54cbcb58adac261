//! Workspace trust through the real binary: a repository's `.mcp.json` whose command creates a
//! file does not run in print mode until the folder is trusted (`kimi-rs trust`), runs after,
//! stops again after `kimi-rs trust --untrust`, and `--trust-workspace` runs it for one run
//! without recording anything. User-level servers are unaffected throughout.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{CORE_FORMATS, Fixture, json_lines, mcp_fixture, tool_lines};
use kimi_llm::scripted::ScriptTurn;
use serde_json::json;

/// One print run: the model calls the project server's echo tool, then answers.
fn turns(runs: usize) -> Vec<ScriptTurn> {
    (0..runs)
        .flat_map(|_| {
            [
                ScriptTurn::tool_calls(&[("call_e", "mcp__repo__echo", r#"{"text":"hi there"}"#)]),
                ScriptTurn::text("done"),
            ]
        })
        .collect()
}

/// `.mcp.json` in the work folder: a stdio server that first creates `pwned`, then serves.
fn write_project_config(fx: &Fixture) {
    let fixture = mcp_fixture();
    let command = format!("touch pwned && exec '{}'", fixture.display());
    let config = json!({"mcpServers": {"repo": {"command": "sh", "args": ["-c", command]}}});
    std::fs::write(fx.work.path().join(".mcp.json"), config.to_string()).unwrap();
}

fn echo_result(run: &common::Run) -> String {
    tool_lines(&json_lines(run))
        .into_iter()
        .find(|(id, _)| id == "call_e")
        .map(|(_, content)| content)
        .unwrap_or_else(|| panic!("no tool result: {run:?}"))
}

#[test]
fn project_mcp_servers_run_only_once_the_folder_is_trusted() {
    let fx = Fixture::new(CORE_FORMATS[0], turns(3));
    write_project_config(&fx);
    let marker = fx.cwd().join("pwned");
    let args = ["-p", "echo please", "--output-format", "stream-json"];

    let run = fx.run(&args);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(!marker.exists(), "an untrusted folder's command ran");
    let folder = fx.cwd().display().to_string();
    assert!(
        run.stderr
            .contains("this folder is not trusted, so its project commands were not run")
            && run.stderr.contains("MCP server `repo` (stdio: sh -c")
            && run.stderr.contains("touch pwned")
            && run.stderr.contains(&format!(
                "kimi-rs trust {folder}` (or pass --trust-workspace"
            )),
        "the skipped server and how to trust are named: {run:?}"
    );
    assert!(
        echo_result(&run).contains("not found") || echo_result(&run).contains("unknown"),
        "the tool was not offered: {run:?}"
    );
    assert!(
        !fx.requests()[0]
            .body
            .to_string()
            .contains("mcp__repo__echo"),
        "the untrusted server's tools never reach the model"
    );

    let trust = fx.run(&["trust"]);
    assert_eq!(trust.code, Some(0), "{trust:?}");
    assert!(
        trust.stdout.contains(&format!("Trusted: {folder}."))
            && trust.stdout.contains("MCP server `repo` (stdio: sh -c"),
        "{trust:?}"
    );

    let run = fx.run(&args);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        marker.exists(),
        "the trusted folder's server started: {run:?}"
    );
    assert!(echo_result(&run).contains("hi there"), "{run:?}");
    assert!(!run.stderr.contains("not trusted"), "{run:?}");

    let untrust = fx.run(&["trust", "--untrust"]);
    assert_eq!(untrust.code, Some(0), "{untrust:?}");
    std::fs::remove_file(&marker).unwrap();
    let list = fx.run(&["trust", "--list"]);
    assert_eq!(list.stdout, format!("untrusted {folder}\n"), "{list:?}");
    let run = fx.run(&args);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(!marker.exists(), "an untrusted folder's command ran again");
    assert!(run.stderr.contains("not trusted"), "{run:?}");
}

#[test]
fn trust_workspace_runs_project_servers_for_one_run_and_user_servers_never_need_trust() {
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![
            ScriptTurn::tool_calls(&[
                ("call_e", "mcp__repo__echo", r#"{"text":"hi there"}"#),
                ("call_u", "mcp__mine__echo", r#"{"text":"user level"}"#),
            ]),
            ScriptTurn::text("done"),
        ],
    );
    write_project_config(&fx);
    let user = json!({"mcpServers": {"mine": {"command": mcp_fixture()}}});
    std::fs::write(fx.home.path().join("mcp.json"), user.to_string()).unwrap();
    let run = fx.run(&[
        "-p",
        "echo please",
        "--output-format",
        "stream-json",
        "--trust-workspace",
    ]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(fx.cwd().join("pwned").exists(), "{run:?}");
    let results = tool_lines(&json_lines(&run));
    assert!(
        results
            .iter()
            .any(|(id, c)| id == "call_e" && c.contains("hi there")),
        "{run:?}"
    );
    assert!(
        results
            .iter()
            .any(|(id, c)| id == "call_u" && c.contains("user level")),
        "{run:?}"
    );
    // Nothing was recorded.
    let list = fx.run(&["trust", "--list"]);
    assert!(list.stdout.starts_with("No folder is trusted"), "{list:?}");
}
