//! MCP OAuth through the real binary, against the loopback OAuth stand-in
//! (`kimi_test_support::mcp_fixture::oauth`); the test plays the browser.
//!
//! - Print mode: the server answers 401, so the model is offered `mcp__web__authenticate`; calling
//!   it prints the sign-in URL on stderr and waits; after the browser comes back the server's
//!   tools are there and the next call reaches it.
//! - `kimi-rs mcp login web` does the same from a shell and stores the token (0600);
//!   `kimi-rs mcp logout web` deletes it; an unknown or stdio server is refused with a reason.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::BufRead;
use std::process::Child;
use std::time::Duration;

use common::{CORE_FORMATS, Fixture, tool_results, wait_child};
use kimi_llm::scripted::ScriptTurn;
use kimi_test_support::mcp_fixture::oauth::{AppState, play_browser, start};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(60);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

/// Start the stand-in and name it `web` in the home's mcp.json.
fn serve(rt: &tokio::runtime::Runtime, fx: &Fixture) -> (String, AppState) {
    let (url, state) = rt.block_on(start(false)).unwrap();
    let config = json!({"mcpServers": {"web": {"url": url}, "local": {"command": "true"}}});
    std::fs::write(fx.home.path().join("mcp.json"), config.to_string()).unwrap();
    (url, state)
}

/// Read the child's stderr until it shows the sign-in URL; the rest of stderr keeps flowing
/// into the returned receiver (so the child never blocks on a full pipe).
fn sign_in_url(child: &mut Child) -> (String, std::sync::mpsc::Receiver<String>) {
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    loop {
        let line = rx
            .recv_timeout(WAIT)
            .unwrap_or_else(|_| panic!("no sign-in URL on stderr: {seen:?}"));
        if let Some(url) = line
            .split_whitespace()
            .find(|w| w.starts_with("http://127.0.0.1:") && w.contains("/authorize?"))
        {
            return (url.to_owned(), rx);
        }
        seen.push(line);
    }
}

#[test]
fn print_mode_signs_in_through_the_authenticate_tool_then_uses_the_server() {
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![
            ScriptTurn::tool_calls(&[("call_a", "mcp__web__authenticate", "{}")]),
            ScriptTurn::tool_calls(&[("call_b", "mcp__web__add", r#"{"a":2,"b":3}"#)]),
            ScriptTurn::text("done"),
        ],
    );
    let rt = runtime();
    let (_url, state) = serve(&rt, &fx);
    let mut child = fx.spawn(&["-p", "add 2 and 3"]);
    let (url, _rest) = sign_in_url(&mut child);
    rt.block_on(play_browser(&url)).unwrap();
    let run = wait_child(child);
    assert_eq!(run.code, Some(0), "{run:?}");

    let requests = fx.requests();
    assert_eq!(requests.len(), 3, "{run:?}");
    let offered = |i: usize| -> Vec<String> {
        requests[i].body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| {
                t["function"]["name"]
                    .as_str()
                    .or(t["name"].as_str())
                    .map(str::to_owned)
            })
            .filter(|n| n.starts_with("mcp__web__"))
            .collect()
    };
    assert_eq!(offered(0), vec!["mcp__web__authenticate".to_owned()]);
    assert!(
        offered(2).contains(&"mcp__web__add".to_owned()),
        "{:?}",
        offered(2)
    );
    assert!(!offered(2).contains(&"mcp__web__authenticate".to_owned()));
    let results = tool_results(&requests[2].body);
    let signed_in = &results.iter().find(|(id, _)| id == "call_a").unwrap().1;
    assert!(
        signed_in.contains("Signed in to MCP server `web`"),
        "{results:?}"
    );
    let added = &results.iter().find(|(id, _)| id == "call_b").unwrap().1;
    assert_eq!(added, "5", "{results:?}");
    assert_eq!(
        state.log().grants,
        vec!["authorization_code", "refresh_token"]
    );
}

#[test]
fn mcp_login_stores_a_private_token_and_logout_deletes_it() {
    let fx = Fixture::new(CORE_FORMATS[0], Vec::new());
    let rt = runtime();
    let (_url, state) = serve(&rt, &fx);
    let mut child = fx.spawn(&["mcp", "login", "web"]);
    let (url, _rest) = sign_in_url(&mut child);
    rt.block_on(play_browser(&url)).unwrap();
    let run = wait_child(child);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        run.stdout.contains("Signed in to MCP server `web`"),
        "{run:?}"
    );
    assert_eq!(state.log().grants, vec!["authorization_code"]);
    let dir = fx.home.path().join("credentials").join("mcp");
    let files: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let name = files[0].file_name().to_string_lossy().into_owned();
    assert!(
        name.starts_with("web-") && name.ends_with(".json"),
        "{name}"
    );
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = files[0].metadata().unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    let run = fx.run(&["mcp", "logout", "web"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stdout.contains("Deleted the stored sign-in"), "{run:?}");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);

    let run = fx.run(&["mcp", "login", "nosuch"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(
        run.stderr.contains("no MCP server `nosuch`") && run.stderr.contains("local, web"),
        "{run:?}"
    );
    let run = fx.run(&["mcp", "login", "local"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(run.stderr.contains("is a stdio server"), "{run:?}");
}
