//! MCP start-up benchmark (issue 12): the time from launching `kimi-rs -p` to its first model
//! request reaching the loopback scripted server, with no MCP server and with one stdio server
//! that never answers `initialize` (`sleep 1000`). Runs alternate between the two setups;
//! prints min / median / max of each and the difference of the medians.
//!
//! Run: `cargo bench -p kimi-cli --bench mcp_startup [runs]` (default 10 runs of each; under
//! `cargo test` one of each). `KIMI_RS_BENCH_BIN=<path>` measures another build of the binary
//! (e.g. one from before MCP servers connected in the background).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use kimi_llm::ProviderType;
use kimi_llm::scripted::ScriptTurn;
use kimi_test_support::ScriptServer;

/// How long one run may wait for the first request (an old build waits out the 30 s start-up
/// timeout of the hanging server).
const FIRST_REQUEST_LIMIT: Duration = Duration::from_secs(90);

fn binary() -> String {
    std::env::var("KIMI_RS_BENCH_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_kimi-rs").to_owned())
}

/// Spawn → first request received, in milliseconds.
async fn first_request_ms(hanging_server: bool) -> f64 {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    if hanging_server {
        let config =
            serde_json::json!({"mcpServers": {"hang": {"command": "sleep", "args": ["1000"]}}});
        std::fs::write(home.path().join("mcp.json"), config.to_string()).unwrap();
    }
    let server = ScriptServer::start(vec![ScriptTurn::text("ok")])
        .await
        .unwrap();
    let model = server.model(ProviderType::OpenAi, "scripted-model");
    let mut cmd = Command::new(binary());
    cmd.args(["-p", "hi"])
        .current_dir(work.path())
        .env("KIMI_RS_HOME", home.path())
        .env("HOME", home.path())
        .env("KIMI_MODEL_NAME", "scripted-model")
        .env("KIMI_MODEL_API_KEY", "sk-bench")
        .env("KIMI_MODEL_PROVIDER_TYPE", "openai")
        .env("KIMI_MODEL_BASE_URL", &model.base_url)
        .env("NO_PROXY", "127.0.0.1,localhost")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let child = cmd.spawn().unwrap();
    // Polling is fine here: the figure is the server's own arrival timestamp.
    let arrived = loop {
        if let Some(first) = server.requests().first() {
            break first.received_at;
        }
        assert!(
            started.elapsed() < FIRST_REQUEST_LIMIT,
            "no request within {FIRST_REQUEST_LIMIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    };
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "kimi-rs -p failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    arrived.duration_since(started).as_secs_f64() * 1000.0
}

fn summary(times: &mut [f64]) -> (f64, String) {
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    let text = format!(
        "min {:.1} ms · median {median:.1} ms · max {:.1} ms ({} runs)",
        times[0],
        times[times.len() - 1],
        times.len()
    );
    (median, text)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let benching = std::env::args().any(|a| a == "--bench");
    let runs: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(if benching { 10 } else { 1 });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    println!(
        "== MCP start-up: launch → first model request ({})",
        binary()
    );
    let (mut plain, mut hanging) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        plain.push(rt.block_on(first_request_ms(false)));
        hanging.push(rt.block_on(first_request_ms(true)));
    }
    let (plain_median, plain_text) = summary(&mut plain);
    let (hanging_median, hanging_text) = summary(&mut hanging);
    println!("  no MCP server                       {plain_text}");
    println!("  one MCP server that never answers   {hanging_text}");
    println!(
        "  delay the hanging server adds (median) {:.1} ms",
        hanging_median - plain_median
    );
}
