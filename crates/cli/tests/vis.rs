//! `kimi-rs vis` on the real binary (issue #17): two scripted turns (a Write, a Bash command
//! that takes a measurable time) are journaled, then the visualizer is started on that session
//! and its JSON and page are fetched over loopback: the turn, step and tool figures, the tool
//! durations and the token counts match what the session did; a request naming another host
//! (DNS rebinding) is refused.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Child;

use common::{CORE_FORMATS, Fixture, WAIT};
use kimi_llm::scripted::ScriptTurn;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// `GET path` with the given Host header; (status, body).
fn get(addr: &str, path: &str, host: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(WAIT)).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_owned()
    };
    (status, body)
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    loop {
        let (size, rest) = body.split_once("\r\n").unwrap();
        let size = usize::from_str_radix(size.trim(), 16).unwrap();
        if size == 0 {
            return out;
        }
        out.push_str(&rest[..size]);
        body = &rest[size + 2..];
    }
}

/// Starts `kimi-rs vis ARGS --no-open --port 0` and returns it with its `host:port`.
fn start_vis(fx: &Fixture, session: Option<&str>) -> (Child, String) {
    let mut args = vec!["vis"];
    args.extend(session);
    args.extend(["--no-open", "--port", "0"]);
    let mut child = fx.spawn(&args);
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some((_, url)) = line.split_once(" at http://") {
                let _ = tx.send(url.trim_end_matches('/').to_owned());
            }
        }
    });
    let addr = rx.recv_timeout(WAIT).expect("kimi-rs vis printed its URL");
    (child, addr)
}

#[test]
fn vis_serves_the_figures_of_a_scripted_session_over_loopback() {
    let format = CORE_FORMATS[0];
    let fx = Fixture::new(
        format,
        vec![
            ScriptTurn::tool_calls(&[(
                "c_write",
                "Write",
                r#"{"path":"notes.txt","content":"hello\n"}"#,
            )]),
            ScriptTurn::tool_calls(&[(
                "c_bash",
                "Bash",
                r#"{"command":"sleep 0.6 && echo slept"}"#,
            )]),
            ScriptTurn::text("Both done."),
            ScriptTurn::text("Second answer."),
        ],
    );
    let first = fx.run(&["-p", "write notes then wait"]);
    assert_eq!(first.code, Some(0), "{first:?}");
    let id = fx.session_ids().pop().unwrap();
    let second = fx.run(&["-S", &id, "-p", "and again"]);
    assert_eq!(second.code, Some(0), "{second:?}");

    // No id: the newest session of the working directory.
    let (mut vis, addr) = start_vis(&fx, None);
    let (status, body) = get(&addr, "/api/session", &addr);
    let _ = vis.kill();
    let _ = vis.wait();
    assert_eq!(status, 200, "{body}");
    let data: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(data["sessionId"], json!(id));

    let (mut vis, addr) = start_vis(&fx, Some(&id));
    let (status, body) = get(&addr, "/api/session", &addr);
    assert_eq!(status, 200, "{body}");
    let data: Value = serde_json::from_str(&body).unwrap();
    let totals = &data["totals"];
    // Three steps in the first turn and one in the second, 10 input and 5 output tokens each
    // (the script's usage).
    assert_eq!(
        (
            totals["agents"].as_u64(),
            totals["turns"].as_u64(),
            totals["steps"].as_u64(),
            totals["toolCalls"].as_u64(),
            totals["toolErrors"].as_u64(),
            totals["inputTokens"].as_u64(),
            totals["outputTokens"].as_u64(),
            totals["peakContextTokens"].as_u64(),
            totals["compactions"].as_u64(),
        ),
        (
            Some(1),
            Some(2),
            Some(4),
            Some(2),
            Some(0),
            Some(40),
            Some(20),
            Some(15),
            Some(0)
        ),
        "{totals:#}"
    );
    let main = &data["agents"][0];
    assert_eq!(main["id"], "main");
    let prompts: Vec<&str> = main["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["prompt"].as_str().unwrap())
        .collect();
    assert_eq!(prompts, ["write notes then wait", "and again"]);
    for turn in main["turns"].as_array().unwrap() {
        assert_eq!(turn["reason"], "completed", "{turn:#}");
    }
    let calls = main["toolCalls"].as_array().unwrap();
    let names: Vec<&str> = calls.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Write", "Bash"]);
    let bash_ms = calls[1]["durationMs"].as_u64().unwrap();
    assert!(
        (600..30_000).contains(&bash_ms),
        "the Bash call slept 0.6 s: {bash_ms} ms"
    );
    assert_eq!(calls[1]["summary"], "sleep 0.6 && echo slept");
    assert_eq!(
        calls[1]["endMs"].as_u64().unwrap() - calls[1]["startMs"].as_u64().unwrap(),
        bash_ms
    );
    // The per-tool table: Bash took longest, so it comes first.
    assert_eq!(data["tools"][0]["name"], "Bash");
    assert_eq!(data["tools"][0]["totalMs"].as_u64(), Some(bash_ms));
    assert_eq!(
        totals["toolMs"].as_u64().unwrap(),
        bash_ms + calls[0]["durationMs"].as_u64().unwrap()
    );

    // The page is self-contained: no script, style or font from elsewhere.
    let (status, page) = get(&addr, "/", &addr);
    assert_eq!(status, 200);
    assert!(page.contains("id=\"timeline\""), "{page}");
    assert!(page.contains("fetch(\"api/session\")"));
    for remote in ["src=\"http", "href=\"http", "@import", "cdn"] {
        assert!(!page.contains(remote), "the page loads {remote}");
    }
    // Another name for this address (DNS rebinding) is refused.
    let port = addr.rsplit(':').next().unwrap();
    let (status, _) = get(&addr, "/api/session", &format!("evil.example:{port}"));
    assert_eq!(status, 403);
    let (status, _) = get(&addr, "/api/session", &format!("localhost:{port}"));
    assert_eq!(status, 200);
    let _ = vis.kill();
    let _ = vis.wait();
}

#[test]
fn vis_names_a_session_it_cannot_find() {
    let fx = Fixture::new(CORE_FORMATS[0], vec![]);
    let run = fx.run(&["vis", "session_nope", "--no-open"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(run.stderr.contains("no session session_nope"), "{run:?}");
    let run = fx.run(&["vis", "--no-open"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(
        run.stderr.contains("no session with a prompt in"),
        "{run:?}"
    );
}

#[test]
fn vis_draws_a_subagent_in_its_own_lane() {
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![
            ScriptTurn::tool_calls(&[(
                "call_agent",
                "Agent",
                r#"{"prompt":"Summarise the repo.","description":"summarise repo","subagent_type":"plan"}"#,
            )]),
            ScriptTurn::text(
                "The repository is empty apart from its session files; there is nothing to plan yet. Suggested first step: create the project skeleton, then add a build script and one test so later steps can be verified.",
            ),
            ScriptTurn::text("Nothing to do yet."),
        ],
    );
    let run = fx.run(&["-p", "Plan it."]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let id = fx.session_ids().pop().unwrap();
    let (mut vis, addr) = start_vis(&fx, Some(&id));
    let (status, body) = get(&addr, "/api/session", &addr);
    let _ = vis.kill();
    let _ = vis.wait();
    assert_eq!(status, 200, "{body}");
    let data: Value = serde_json::from_str(&body).unwrap();
    let agents = data["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 2, "{data:#}");
    assert_eq!(agents[0]["id"], "main");
    let sub = &agents[1];
    assert_eq!(sub["kind"], "sub", "{sub:#}");
    assert_eq!(sub["parent"], "main", "{sub:#}");
    assert_eq!(sub["steps"].as_array().unwrap().len(), 1, "{sub:#}");
    assert_eq!(agents[0]["toolCalls"][0]["name"], "Agent");
    // The main agent's Agent call lasts at least as long as the subagent's work.
    let call = &agents[0]["toolCalls"][0];
    let sub_step = &sub["steps"][0];
    assert!(
        call["startMs"].as_u64() <= sub_step["startMs"].as_u64()
            && call["endMs"].as_u64() >= sub_step["endMs"].as_u64(),
        "{call:#} {sub_step:#}"
    );
    assert_eq!(data["totals"]["steps"].as_u64(), Some(3));
}
