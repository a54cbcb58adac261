//! MCP OAuth through the real binary, against the loopback OAuth stand-in
//! (`kimi_test_support::mcp_fixture::oauth`); the test plays the browser.
//!
//! - Print mode: the server answers 401, so the model is offered `mcp__web__authenticate`; calling
//!   it prints the sign-in URL on stderr and waits; after the browser comes back the server's
//!   tools are there and the next call reaches it.
//! - `kimi-rs mcp login web` does the same from a shell and stores the token (0600);
//!   `kimi-rs mcp logout web` deletes it; an unknown or stdio server is refused with a reason.
//! - In the terminal UI, `/mcp-config` lists the servers with their state, reason and source
//!   file, and `/mcp-config login web` shows the sign-in URL and connects the server once the
//!   browser comes back.
//! - `kimi-rs web` serves the same per session: `GET …/mcp/servers`, and `:login` (answers with
//!   the URL), `:restart` and `:logout` on `…/mcp/servers/<name>`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod pty;

use std::io::BufRead;
use std::process::Child;
use std::time::Duration;

use common::web_client::WebServer;
use common::{CORE_FORMATS, Fixture, tool_results, wait_child, wait_until};
use kimi_llm::scripted::ScriptTurn;
use kimi_test_support::mcp_fixture::oauth::{AppState, play_browser, start};
use serde_json::{Value, json};

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

/// The pty harness's trampoline (see `pty/mod.rs`); does nothing in a normal run.
#[test]
fn exec_in_new_session() {
    pty::trampoline(common::BIN);
}

#[test]
fn mcp_config_in_the_tui_lists_servers_and_signs_in() {
    let fx = Fixture::new(CORE_FORMATS[0], Vec::new());
    let rt = runtime();
    let (_url, state) = serve(&rt, &fx);
    // Wide enough that the sign-in URL is on one line.
    let mut s = pty::Session::spawn_sized(
        &fx.cwd(),
        fx.home.path(),
        &fx.server.base_url(),
        &[],
        50,
        500,
    );
    s.wait_for("the prompt with both servers settled", |t| {
        t.contains("ask anything") && !t.contains("connecting")
    });
    s.send(b"/mcp-config\r");
    let panel = s.wait_for("the server list", |t| {
        t.contains("MCP servers") && t.contains("needs login") && t.contains("from:")
    });
    let squeezed = |line: &str| line.split_whitespace().collect::<Vec<_>>().join(" ");
    let lines: Vec<String> = panel.lines().map(squeezed).collect();
    let row = |name: &str| {
        lines
            .iter()
            .position(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no row for {name}:\n{panel}"))
    };
    let mcp_json = fx.home.path().join("mcp.json").display().to_string();
    let web = row("web");
    assert!(lines[web].starts_with("web needs login http"), "{panel}");
    assert_eq!(lines[web + 1], format!("from: {mcp_json}"), "{panel}");
    assert!(lines[web + 2].starts_with("login: "), "{panel}");
    let local = row("local");
    assert!(lines[local].starts_with("local failed stdio"), "{panel}");
    assert_eq!(lines[local + 1], format!("from: {mcp_json}"), "{panel}");
    assert!(lines[local + 2].starts_with("error: "), "{panel}");

    s.send(b"/mcp-config login web\r");
    let shown = s.wait_for("the sign-in URL", |t| t.contains("/authorize?"));
    assert!(
        shown.contains("Open this URL in a browser to sign in to MCP server `web`"),
        "{shown}"
    );
    let url = shown
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:") && w.contains("/authorize?"))
        .unwrap()
        .to_owned();
    rt.block_on(play_browser(&url)).unwrap();
    let done = s.wait_for("the sign-in result and the panel", |t| {
        t.contains("Signed in to MCP server `web`") && squeezed(t).contains("web connected http")
    });
    assert!(done.contains("MCP server `web` is connected."), "{done}");
    assert_eq!(state.log().grants[0], "authorization_code");
    let dir = fx.home.path().join("credentials").join("mcp");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    s.send(b"\x04");
}

#[test]
fn the_web_api_lists_mcp_servers_signs_in_restarts_and_signs_out() {
    let fx = Fixture::new(CORE_FORMATS[0], Vec::new());
    let rt = runtime();
    let (_url, state) = serve(&rt, &fx);
    let web = WebServer::start(fx.command(&["web", "--port", "0", "--no-open"]));
    let session = web.create_session(&fx.cwd());
    let base = format!("/api/v1/sessions/{session}/mcp/servers");
    let server = |listed: &Value, name: &str| -> Value {
        listed["data"]["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no {name} in {listed}"))
    };
    let mut listed = Value::Null;
    wait_until("both servers settled", || {
        listed = web.call("GET", &base, json!({}));
        listed["data"]["items"]
            .as_array()
            .is_some_and(|items| items.iter().all(|s| s["status"] != "connecting"))
    });
    let mcp_json = fx.home.path().join("mcp.json").display().to_string();
    let web_server = server(&listed, "web");
    assert_eq!(web_server["status"], "needs_login", "{listed}");
    assert_eq!(web_server["transport"], "http");
    assert_eq!(web_server["source"], mcp_json.as_str());
    assert!(
        web_server["reason"]
            .as_str()
            .unwrap()
            .contains("asks for an OAuth sign-in"),
        "{listed}"
    );
    let local = server(&listed, "local");
    assert_eq!(local["status"], "failed", "{listed}");
    assert!(local["reason"].as_str().is_some(), "{listed}");

    let login = web.call("POST", &format!("{base}/web:login"), json!({}));
    assert_eq!(login["code"], 0, "{login}");
    let url = login["data"]["authorization_url"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(url.contains("/authorize?"), "{login}");
    rt.block_on(play_browser(&url)).unwrap();
    wait_until("the server connected after the sign-in", || {
        server(&web.call("GET", &base, json!({})), "web")["status"] == "connected"
    });
    assert_eq!(state.log().grants[0], "authorization_code");

    let restarted = web.call("POST", &format!("{base}/web:restart"), json!({}));
    assert_eq!(restarted["code"], 0, "{restarted}");
    assert_eq!(
        restarted["data"]["message"],
        "MCP server `web` is connected."
    );
    assert_eq!(restarted["data"]["server"]["status"], "connected");

    let failed = web.call("POST", &format!("{base}/local:restart"), json!({}));
    assert_eq!(failed["code"], 80001, "{failed}");
    assert!(
        failed["msg"]
            .as_str()
            .unwrap()
            .starts_with("MCP server `local` failed to start:"),
        "{failed}"
    );

    let out = web.call("POST", &format!("{base}/web:logout"), json!({}));
    assert_eq!(out["code"], 0, "{out}");
    let message = out["data"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("Deleted the stored sign-in of MCP server `web`.")
            && message.contains("needs login"),
        "{out}"
    );
    assert_eq!(out["data"]["server"]["status"], "needs_login");
    let dir = fx.home.path().join("credentials").join("mcp");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);

    let unknown = web.call("POST", &format!("{base}/nosuch:restart"), json!({}));
    assert_eq!(unknown["code"], 80001, "{unknown}");
    assert!(
        unknown["msg"]
            .as_str()
            .unwrap()
            .contains("there is no MCP server `nosuch`"),
        "{unknown}"
    );
    let bad = web.call("POST", &format!("{base}/web:frob"), json!({}));
    assert_eq!(bad["code"], 40001, "{bad}");
    let doc = web.call("GET", "/api/v1/openapi.json", json!({}));
    for path in [
        "/api/v1/sessions/{id}/mcp/servers",
        "/api/v1/sessions/{id}/mcp/servers/{name}:login",
        "/api/v1/sessions/{id}/mcp/servers/{name}:logout",
        "/api/v1/sessions/{id}/mcp/servers/{name}:restart",
    ] {
        assert!(
            doc["data"]["paths"].get(path).is_some(),
            "{path} documented"
        );
    }
}
