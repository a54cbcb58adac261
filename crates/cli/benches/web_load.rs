//! Web server load (issue 20): the real `kimi-rs web` with CLIENTS WebSocket clients (default
//! 300) subscribed to one session while it streams a long answer, plus one client that never
//! reads. Prints how long the turn took to reach every client, frames and bytes delivered,
//! whether every client got every event in order, what happened to the stalled client, and
//! the server's peak memory (VmHWM) before and during the load.
//!
//! Run: `cargo bench -p kimi-cli --bench web_load [clients] [deltas]`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/common/web_client.rs"]
mod web_client;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use kimi_llm::scripted::{ScriptEvent, ScriptTurn};
use kimi_llm::{FinishReason, ProviderType};
use kimi_test_support::ScriptServer;
use web_client::{Incoming, Seen, WebServer, connect, next, subscribe};

const BIN: &str = env!("CARGO_BIN_EXE_kimi-rs");
const WAIT: Duration = Duration::from_secs(120);

/// A long answer streamed in `deltas` pieces of 200 characters, paced like a fast model
/// (a 1 ms pause every 20 deltas).
fn answer(deltas: usize) -> (ScriptTurn, String) {
    let mut events = Vec::new();
    let mut full = String::new();
    for i in 0..deltas {
        let text = format!("{i:0>200}");
        full.push_str(&text);
        events.push(ScriptEvent::text(text));
        if i % 20 == 19 {
            events.push(ScriptEvent::Delay { ms: 1 });
        }
    }
    events.push(ScriptEvent::usage(10, 5));
    events.push(ScriptEvent::finish(FinishReason::Stop));
    (ScriptTurn::reply(events), full)
}

fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let clients: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(300);
    let deltas: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(2_000);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (turn, full) = answer(deltas);
    let script = rt.block_on(ScriptServer::start(vec![turn])).unwrap();
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let model = script.model(ProviderType::OpenAi, "bench-model");
    let mut command = Command::new(BIN);
    command
        .args(["web", "--port", "0", "--no-open"])
        .current_dir(work.path())
        .env("KIMI_RS_HOME", home.path())
        .env("HOME", home.path())
        .env("KIMI_MODEL_NAME", "bench-model")
        .env("KIMI_MODEL_API_KEY", "sk-bench")
        .env("KIMI_MODEL_PROVIDER_TYPE", "openai")
        .env("KIMI_MODEL_BASE_URL", &model.base_url)
        .env("NO_PROXY", "127.0.0.1,localhost")
        .stdin(Stdio::null());
    let server = WebServer::start(command);
    let session = server.create_session(work.path());
    let idle_rss = peak_rss_kib(server.pid());

    let (port, token) = (server.port, server.token.clone());
    let mut sockets = rt.block_on(async {
        let mut sockets = Vec::with_capacity(clients);
        for _ in 0..clients {
            let mut socket = connect(port, &token, None).await;
            subscribe(&mut socket, &session, None).await;
            sockets.push(socket);
        }
        sockets
    });
    let mut stalled = rt.block_on(async {
        let mut socket = connect(port, &token, Some(4096)).await;
        subscribe(&mut socket, &session, None).await;
        socket
    });
    let connected_rss = peak_rss_kib(server.pid());

    let started = Instant::now();
    server.prompt(&session, "write a long answer");
    let readers: Vec<_> = sockets
        .drain(..)
        .map(|mut socket| {
            rt.spawn(async move {
                let mut seen = Seen::default();
                while !seen.turn_ended {
                    match next(&mut socket, WAIT).await {
                        Some(Incoming::Frame(frame)) => seen.add(&frame),
                        _ => break,
                    }
                }
                (seen, started.elapsed())
            })
        })
        .collect();
    let results: Vec<(Seen, Duration)> = rt.block_on(async {
        let mut out = Vec::new();
        for reader in readers {
            out.push(reader.await.unwrap());
        }
        out
    });
    let load_rss = peak_rss_kib(server.pid());
    let complete = results
        .iter()
        .filter(|(s, _)| s.turn_ended && s.out_of_order.is_none() && s.text == full)
        .count();
    let slowest = results.iter().map(|(_, t)| *t).max().unwrap_or_default();
    let fastest = results.iter().map(|(_, t)| *t).min().unwrap_or_default();
    let frames: u64 = results.iter().map(|(s, _)| s.frames).sum();
    let bytes: u64 = results.iter().map(|(s, _)| s.bytes).sum();

    let stalled_outcome = rt.block_on(async {
        let mut seen = Seen::default();
        loop {
            match next(&mut stalled, Duration::from_secs(30)).await {
                Some(Incoming::Frame(frame)) if frame["type"] == "resync_required" => {
                    break format!(
                        "cut off after {} frames with resync_required (last_seq {}: {})",
                        seen.frames, frame["payload"]["last_seq"], frame["payload"]["reason"]
                    );
                }
                Some(Incoming::Frame(frame)) => seen.add(&frame),
                Some(Incoming::Closed(close)) => {
                    break format!("closed after {} frames: {close:?}", seen.frames);
                }
                None if seen.turn_ended => {
                    break format!("kept up: all {} frames", seen.frames);
                }
                None => break format!("silent after {} frames", seen.frames),
            }
        }
    });

    println!(
        "web load: {clients} clients + 1 that does not read, one session, {deltas} deltas of 200 chars"
    );
    println!(
        "  every event in order: {complete}/{clients} clients; first done {:.0} ms, last done {:.0} ms after the prompt",
        fastest.as_secs_f64() * 1e3,
        slowest.as_secs_f64() * 1e3
    );
    println!(
        "  delivered {frames} frames, {:.1} MB ({:.0} frames/s over all clients)",
        bytes as f64 / 1e6,
        frames as f64 / slowest.as_secs_f64().max(1e-9)
    );
    println!("  stalled client: {stalled_outcome}");
    println!(
        "  server peak RSS: {:.1} MB idle, {:.1} MB with the clients connected, {:.1} MB after the turn",
        idle_rss as f64 / 1024.0,
        connected_rss as f64 / 1024.0,
        load_rss as f64 / 1024.0
    );
}
