//! Kill -9 soak of the engine through the real binary (see `engine_soak`):
//! `kimi-engine-soak <kimi-rs binary> [trials]` prints the figures and exits 1 when anything
//! acknowledged was lost, a request was unpaired, a side effect ran twice or a task never
//! finished.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use kimi_test_support::engine_soak::{EngineFigures, run_trial};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let Some(bin) = args.get(1).map(PathBuf::from) else {
        eprintln!("usage: kimi-engine-soak <path to kimi-rs> [trials]");
        return ExitCode::from(2);
    };
    // Each run starts in its own work directory, so a relative path would not be found there.
    let bin = match std::fs::canonicalize(&bin) {
        Ok(bin) => bin,
        Err(err) => {
            eprintln!("kimi-engine-soak: cannot find {}: {err}", bin.display());
            return ExitCode::from(2);
        }
    };
    let trials: u64 = args.get(2).and_then(|n| n.parse().ok()).unwrap_or(100);
    let started = Instant::now();
    let mut figures = EngineFigures::default();
    let mut harness_errors = 0u64;
    for trial in 0..trials {
        let seed = trial.wrapping_mul(7919) ^ u64::from(std::process::id());
        if let Err(err) = run_trial(&bin, seed, &mut figures) {
            harness_errors += 1;
            eprintln!("trial {trial} (seed {seed}): {err}");
        }
        if (trial + 1) % 100 == 0 {
            eprintln!("{}: {figures}", trial + 1);
        }
    }
    println!(
        "{figures}, harness errors {harness_errors}, {:.1}s",
        started.elapsed().as_secs_f64()
    );
    let clean = harness_errors == 0
        && figures.results_lost == 0
        && figures.pairing_violations == 0
        && figures.duplicated_side_effects == 0
        && figures.unfinished == 0;
    if clean {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
