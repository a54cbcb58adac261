//! Crash and continue: a 40-step scripted task run by the real `kimi-rs -p`, killed with SIGKILL
//! at six random points (each right after the model request of a random step arrives, so the
//! kill lands while the answer streams, a tool runs or records are appended), each time
//! continued with `kimi-rs -c`. Every request the model receives, before and after every
//! restart, must pair each tool call with exactly one result (checked by the fixture), the
//! conversation stays one session, and the task finishes.
//!
//! The kill points come from a seed printed by the test; `KIMI_RS_KILL_SEED=<n>` replays a run.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{CORE_FORMATS, Fixture, wait_child, wait_until};
use kimi_llm::scripted::ScriptTurn;

const STEPS: usize = 40;
const KILLS: usize = 6;

/// Kill points stay this many steps before the end, so a killed run cannot have finished the
/// task before the kill lands.
const MARGIN: usize = 10;

/// Six distinct request counts in 1..=STEPS-MARGIN, ascending, from a small LCG over `seed`.
fn kill_points(seed: u64) -> Vec<usize> {
    let mut state = seed | 1;
    let mut points: Vec<usize> = Vec::new();
    while points.len() < KILLS {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let point = 1 + ((state >> 33) as usize % (STEPS - MARGIN));
        if !points.contains(&point) {
            points.push(point);
        }
    }
    points.sort_unstable();
    points
}

fn script() -> Vec<ScriptTurn> {
    let mut turns: Vec<ScriptTurn> = (0..STEPS)
        .map(|i| {
            let id = format!("call_{i:02}");
            let args = format!(r#"{{"command":"echo step-{i:02} >> steps.log"}}"#);
            ScriptTurn::tool_calls(&[(id.as_str(), "Bash", args.as_str())])
        })
        .collect();
    turns.push(ScriptTurn::text("TASK DONE"));
    turns
}

#[test]
fn six_kill_9_at_random_points_of_a_40_step_task_each_continued_with_c() {
    let seed = std::env::var("KIMI_RS_KILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(7, |d| d.as_nanos() as u64)
        });
    let points = kill_points(seed);
    eprintln!("kill seed {seed}: kills after requests {points:?}");
    for format in CORE_FORMATS {
        let fx = Fixture::new(format, script());
        let mut first = true;
        for &point in &points {
            let args: &[&str] = if first {
                &["-p", "Do the 40 steps"]
            } else {
                &["-c", "-p", "continue"]
            };
            first = false;
            let mut child = fx.spawn(args);
            wait_until("the request to kill at", || fx.requests().len() >= point);
            child.kill().unwrap(); // SIGKILL
            let run = wait_child(child);
            assert_ne!(
                run.code,
                Some(0),
                "seed {seed}: killed, not finished: {run:?}"
            );
        }
        let run = fx.run(&["-c", "-p", "continue"]);
        assert_eq!(run.code, Some(0), "seed {seed} {}: {run:?}", format.1);
        assert!(run.stdout.contains("TASK DONE"), "seed {seed}: {run:?}");
        assert_eq!(
            fx.session_ids().len(),
            1,
            "seed {seed}: one session throughout"
        );
        assert_eq!(
            fx.requests().len(),
            STEPS + 1,
            "seed {seed}: every scripted step was asked for once"
        );
        let log = std::fs::read_to_string(fx.cwd().join("steps.log")).unwrap_or_default();
        let ran = log.lines().count();
        assert!(
            (STEPS - KILLS..=STEPS).contains(&ran),
            "seed {seed}: each step's command ran at most once: {log}"
        );
        let mut lines: Vec<&str> = log.lines().collect();
        lines.dedup();
        assert_eq!(lines.len(), ran, "seed {seed}: no step ran twice: {log}");
    }
}

/// A short run of the engine soak (the long one is `kimi-engine-soak`, see README).
#[test]
fn engine_soak_loses_nothing_acknowledged() {
    let mut figures = kimi_test_support::engine_soak::EngineFigures::default();
    for seed in 1..=4u64 {
        kimi_test_support::engine_soak::run_trial(
            std::path::Path::new(common::BIN),
            seed,
            &mut figures,
        )
        .unwrap();
    }
    eprintln!("{figures}");
    assert_eq!(figures.trials, 4);
    assert!(figures.kills >= 4, "{figures}");
    assert!(figures.results_acknowledged > 0, "{figures}");
    assert_eq!(
        (
            figures.results_lost,
            figures.pairing_violations,
            figures.duplicated_side_effects,
            figures.unfinished
        ),
        (0, 0, 0, 0),
        "{figures}"
    );
}
