//! Per-step overhead of a scripted Read + Bash step on a remote environment against the same
//! step locally, and the round trips each step costs.
//!
//! ```text
//! cargo run --release -p kimi-exec --example env_bench -- <target-cwd> <command> [args...]
//! ```
//! The command is the launcher that reaches `kimi-rs exec-server`, e.g.
//! `ssh -F cfg host -- ~/.kimi-rs/bin/kimi-rs exec-server` (loopback SSH) or
//! `kimi-rs exec-server` (a local pipe: the protocol without SSH). `<target-cwd>` must exist on
//! the target and locally (the same step runs in both).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kimi_config::environments::{EnvironmentDecl, Launcher};
use kimi_tools::builtin::{BashTool, ReadTool};
use kimi_tools::tool::run_tool;
use kimi_tools::{Environment, ToolContext};
use serde_json::json;

const STEPS: u32 = 40;

async fn run_steps(ctx: &ToolContext) -> Duration {
    let read = ReadTool;
    let bash = BashTool;
    let started = Instant::now();
    for _ in 0..STEPS {
        let (a, b) = tokio::join!(
            run_tool(&read, json!({"path": "bench.txt"}), ctx),
            run_tool(&bash, json!({"command": "echo ok"}), ctx)
        );
        assert!(!a.is_error && !b.is_error, "{a:?} {b:?}");
    }
    started.elapsed()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(cwd), Some(command)) = (args.next(), args.next()) else {
        eprintln!("usage: env_bench <target-cwd> <launcher command> [args...]");
        std::process::exit(2);
    };
    let cwd = PathBuf::from(cwd);
    let rest: Vec<String> = args.collect();
    let decl = EnvironmentDecl {
        id: "bench".to_owned(),
        launcher: Launcher::Command {
            command,
            args: rest,
            env: Default::default(),
        },
        default_cwd: Some(cwd.display().to_string()),
        source: PathBuf::from("bench"),
    };
    let agent = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    let started = Instant::now();
    let remote = Arc::new(kimi_exec::connect(&decl, None).unwrap_or_else(|e| panic!("{e}")));
    let connect = started.elapsed();
    let mut local_ctx = ToolContext::new(&cwd, agent.path());
    local_ctx.settings.background_enabled = false;
    let mut remote_ctx = local_ctx.clone();
    remote_ctx.environment = remote.clone() as Arc<dyn Environment>;
    let text: String = (1..=200).map(|i| format!("line {i}\n")).collect();
    std::fs::write(cwd.join("bench.txt"), text).unwrap_or_else(|e| panic!("bench.txt: {e}"));
    // Warm both paths once.
    rt.block_on(run_steps(&local_ctx));
    rt.block_on(run_steps(&remote_ctx));
    let local = rt.block_on(run_steps(&local_ctx));
    let before = remote.connection().round_trips();
    let over = rt.block_on(run_steps(&remote_ctx));
    let trips = remote.connection().round_trips() - before;
    let per = |d: Duration| d.as_secs_f64() * 1000.0 / f64::from(STEPS);
    println!(
        "connect + handshake: {:.1} ms",
        connect.as_secs_f64() * 1000.0
    );
    println!("step = Read (200 lines) + Bash `echo ok`, run in parallel; {STEPS} steps");
    println!("local:  {:.2} ms/step", per(local));
    println!("remote: {:.2} ms/step", per(over));
    println!("overhead: {:.2} ms/step", per(over) - per(local));
    println!(
        "round trips: {:.1} per step ({} requests, pipelined on one connection)",
        f64::from(u32::try_from(trips).unwrap_or(u32::MAX)) / f64::from(STEPS),
        trips
    );
}
