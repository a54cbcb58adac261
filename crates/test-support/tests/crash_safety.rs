//! Crash safety: a real writer process is killed with SIGKILL at random moments while appending
//! multi-KB unicode records; every acknowledged record must be on disk after reopening, the file
//! must parse completely, torn bytes must sit in the side file, and appending must work again.
//! (`cargo run --release -p kimi-test-support --bin kimi-store-crash -- soak 5000` runs more trials.)

// Test helpers outside `#[test]` functions unwrap too.
#![allow(clippy::unwrap_used)]

use std::process::Command;

use kimi_test_support::crash_harness::{Figures, run_trial};

const TRIALS: u64 = 200;

#[test]
fn acknowledged_records_survive_sigkill() {
    let exe = env!("CARGO_BIN_EXE_kimi-store-crash");
    let base = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let mut figures = Figures::default();
    let mut failures = Vec::new();
    for trial in 0..TRIALS {
        let journal = base.path().join(trial.to_string()).join("wire.jsonl");
        let seed = 0x5EED_0000 + trial;
        let mut writer = Command::new(exe);
        writer.arg("writer").arg(&journal).arg(seed.to_string());
        if let Err(err) = run_trial(writer, &journal, seed, &mut figures) {
            failures.push(format!("trial {trial}: {err}"));
        }
    }
    eprintln!(
        "crash safety: {figures:?} in {:.1}s",
        started.elapsed().as_secs_f64()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(figures.trials, TRIALS);
    assert_eq!(figures.records_lost, 0);
    assert!(
        figures.records_acknowledged > 0,
        "the writer never acknowledged anything"
    );
}
