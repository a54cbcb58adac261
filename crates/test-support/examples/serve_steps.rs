//! A standalone scripted model for comparing agents on the same work: serves N steps that each
//! Read one file, then a final answer, in every wire format (OpenAI-style under `/v1`). Prints
//! its base URL, then, once stdin closes, the arrival gaps between requests (per-step harness
//! overhead: the time each agent takes from the end of a response to its next request).
//!
//! `cargo run --release -p kimi-test-support --example serve_steps -- 40 'dir/file_{i}.txt'`
//! (`{i}` is replaced by the step number, so no two consecutive calls are identical and the
//! agents' repeat guards stay out of the way).

use std::io::Read as _;

use kimi_llm::scripted::ScriptTurn;
use kimi_test_support::ScriptServer;

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let steps: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(40);
    let pattern = args.next().unwrap_or_else(|| "file_{i}.txt".to_owned());
    let mut turns = Vec::with_capacity(steps + 1);
    for i in 0..steps {
        let path = pattern.replace("{i}", &i.to_string());
        let args = serde_json::json!({ "path": path }).to_string();
        turns.push(ScriptTurn::tool_calls(&[(
            &format!("call_{i}"),
            "Read",
            &args,
        )]));
    }
    turns.push(ScriptTurn::text("done"));
    let server = ScriptServer::start(turns).await?;
    println!("{}", server.base_url());
    // Wait until the driver closes our stdin (the agent under test has finished).
    tokio::task::spawn_blocking(|| {
        let mut sink = Vec::new();
        let _ = std::io::stdin().read_to_end(&mut sink);
    })
    .await
    .map_err(std::io::Error::other)?;
    let requests = server.requests();
    let gaps: Vec<f64> = requests
        .windows(2)
        .map(|w| (w[1].received_at - w[0].received_at).as_secs_f64() * 1000.0)
        .collect();
    eprintln!("requests: {}", requests.len());
    if !gaps.is_empty() {
        let mut sorted = gaps.clone();
        sorted.sort_by(f64::total_cmp);
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        eprintln!(
            "request-to-request gap (ms): mean {mean:.1}, median {:.1}, min {:.1}, max {:.1}",
            sorted[sorted.len() / 2],
            sorted[0],
            sorted[sorted.len() - 1]
        );
    }
    Ok(())
}
