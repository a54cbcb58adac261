//! Crash-safety writer and soak driver.
//!
//! `kimi-store-crash writer <journal> <seed>`: append batches until killed, acking each on stdout.
//! `kimi-store-crash soak [trials]`: run that many kill-and-reopen trials and print the figures.

use std::process::{Command, ExitCode};
use std::time::Instant;

use kimi_test_support::crash_harness::{Figures, run_trial, writer_main};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("writer") => {
            let (Some(path), Some(seed)) = (args.get(2), args.get(3).and_then(|s| s.parse().ok()))
            else {
                eprintln!("usage: kimi-store-crash writer <journal> <seed>");
                return ExitCode::from(2);
            };
            match writer_main(std::path::Path::new(path), seed, 100_000) {
                Ok(()) => ExitCode::SUCCESS,
                Err(err) => {
                    eprintln!("writer failed: {err}");
                    ExitCode::FAILURE
                }
            }
        }
        Some("soak") => soak(args.get(2).and_then(|n| n.parse().ok()).unwrap_or(1000)),
        _ => {
            eprintln!("usage: kimi-store-crash soak [trials] | writer <journal> <seed>");
            ExitCode::from(2)
        }
    }
}

fn soak(trials: u64) -> ExitCode {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(err) => {
            eprintln!("cannot find own executable: {err}");
            return ExitCode::FAILURE;
        }
    };
    let base = std::env::temp_dir().join(format!("kimi-store-soak-{}", std::process::id()));
    let started = Instant::now();
    let mut figures = Figures::default();
    let mut failures = 0u64;
    for trial in 0..trials {
        let dir = base.join(trial.to_string());
        let journal = dir.join("wire.jsonl");
        let seed = trial.wrapping_mul(7919) ^ u64::from(std::process::id());
        let mut writer = Command::new(&exe);
        writer.arg("writer").arg(&journal).arg(seed.to_string());
        if let Err(err) = run_trial(writer, &journal, seed, &mut figures) {
            failures += 1;
            eprintln!("trial {trial}: {err}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    let _ = std::fs::remove_dir_all(&base);
    println!(
        "trials {} (failed {failures}), torn tails repaired {}, newlines added {}, records acknowledged {}, found {}, lost {}, {:.1}s",
        figures.trials,
        figures.torn_tails_repaired,
        figures.newlines_added,
        figures.records_acknowledged,
        figures.records_found,
        figures.records_lost,
        started.elapsed().as_secs_f64()
    );
    if failures == 0 && figures.records_lost == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
