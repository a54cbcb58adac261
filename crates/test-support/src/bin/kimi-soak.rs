//! The kill -9 soak across every durable part: `kimi-soak <kimi-rs binary> [trials] [--only
//! journal|engine|compaction|web]` splits the trials between
//! - journal: the store's writer killed mid-append (`crash_harness`), 70% of the trials;
//! - engine: `kimi-rs -p` killed mid-stream, mid-tool and mid-append, continued with `-c`;
//! - compaction: the same with a small window, so kills land mid-compaction too;
//! - web: `kimi-rs web` killed after prompts were queued and approvals answered over REST;
//!
//! 10% each. It prints the figures of each and exits 1 when anything acknowledged was lost,
//! a request was unpaired, a side effect ran twice, a task never finished or a session did not
//! reopen.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use kimi_test_support::crash_harness::{self, Figures};
use kimi_test_support::engine_soak::{self, EngineFigures, Variant};
use kimi_test_support::web_soak::{self, WebFigures};

#[derive(Default)]
struct Totals {
    journal: Figures,
    engine: EngineFigures,
    compaction: EngineFigures,
    web: WebFigures,
    harness_errors: u64,
}

impl Totals {
    fn print(&self, elapsed: f64) {
        let j = &self.journal;
        println!(
            "journal:    trials {}, records acknowledged {}, lost {}, torn tails repaired {}",
            j.trials, j.records_acknowledged, j.records_lost, j.torn_tails_repaired
        );
        println!("engine:     {}", self.engine);
        println!("compaction: {}", self.compaction);
        println!("web:        {}", self.web);
        println!("harness errors {}, {elapsed:.1}s", self.harness_errors);
    }

    fn clean(&self) -> bool {
        let engine_clean = |e: &EngineFigures| {
            e.results_lost == 0
                && e.pairing_violations == 0
                && e.duplicated_side_effects == 0
                && e.unfinished == 0
        };
        self.harness_errors == 0
            && self.journal.records_lost == 0
            && engine_clean(&self.engine)
            && engine_clean(&self.compaction)
            && self.web.prompts_lost == 0
            && self.web.answers_lost == 0
            && self.web.reopen_failures == 0
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Journal,
    Engine,
    Compaction,
    Web,
}

fn kind_of(trial: u64) -> Kind {
    match trial % 10 {
        7 => Kind::Engine,
        8 => Kind::Compaction,
        9 => Kind::Web,
        _ => Kind::Journal,
    }
}

fn parse_kind(name: &str) -> Option<Kind> {
    match name {
        "journal" => Some(Kind::Journal),
        "engine" => Some(Kind::Engine),
        "compaction" => Some(Kind::Compaction),
        "web" => Some(Kind::Web),
        _ => None,
    }
}

fn run(kind: Kind, bin: &Path, exe: &Path, base: &Path, trial: u64, totals: &mut Totals) {
    let seed = trial.wrapping_mul(7919) ^ u64::from(std::process::id());
    let result = match kind {
        Kind::Journal => {
            let dir = base.join(trial.to_string());
            let journal = dir.join("wire.jsonl");
            let mut writer = Command::new(exe);
            writer.arg("writer").arg(&journal).arg(seed.to_string());
            let result = crash_harness::run_trial(writer, &journal, seed, &mut totals.journal);
            let _ = std::fs::remove_dir_all(&dir);
            result
        }
        Kind::Engine => engine_soak::run_variant(bin, seed, Variant::Plain, &mut totals.engine),
        Kind::Compaction => {
            engine_soak::run_variant(bin, seed, Variant::Compaction, &mut totals.compaction)
        }
        Kind::Web => web_soak::run_trial(bin, seed, &mut totals.web),
    };
    if let Err(err) = result {
        totals.harness_errors += 1;
        eprintln!("trial {trial} (seed {seed}): {err}");
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("writer") {
        // The journal writer, run by this binary's own journal trials.
        let (Some(path), Some(seed)) = (args.get(2), args.get(3).and_then(|s| s.parse().ok()))
        else {
            eprintln!("usage: kimi-soak writer <journal> <seed>");
            return ExitCode::from(2);
        };
        return match crash_harness::writer_main(Path::new(path), seed, 100_000) {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("writer failed: {err}");
                ExitCode::FAILURE
            }
        };
    }
    let usage =
        "usage: kimi-soak <path to kimi-rs> [trials] [--only journal|engine|compaction|web]";
    let Some(bin) = args.get(1).map(PathBuf::from) else {
        eprintln!("{usage}");
        return ExitCode::from(2);
    };
    // Trials start in their own work directories, so a relative path would not be found there.
    let bin = match std::fs::canonicalize(&bin) {
        Ok(bin) => bin,
        Err(err) => {
            eprintln!("kimi-soak: cannot find {}: {err}", bin.display());
            return ExitCode::from(2);
        }
    };
    let trials: u64 = args.get(2).and_then(|n| n.parse().ok()).unwrap_or(1000);
    let only = match args.iter().position(|a| a == "--only") {
        Some(i) => match args.get(i + 1).and_then(|k| parse_kind(k)) {
            Some(kind) => Some(kind),
            None => {
                eprintln!("{usage}");
                return ExitCode::from(2);
            }
        },
        None => None,
    };
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(err) => {
            eprintln!("cannot find own executable: {err}");
            return ExitCode::FAILURE;
        }
    };
    let base = std::env::temp_dir().join(format!("kimi-soak-{}", std::process::id()));
    let started = Instant::now();
    let mut totals = Totals::default();
    for trial in 0..trials {
        let kind = only.unwrap_or_else(|| kind_of(trial));
        run(kind, &bin, &exe, &base, trial, &mut totals);
        if (trial + 1) % 50 == 0 {
            eprintln!("after {} trials:", trial + 1);
            totals.print(started.elapsed().as_secs_f64());
        }
    }
    let _ = std::fs::remove_dir_all(&base);
    totals.print(started.elapsed().as_secs_f64());
    if totals.clean() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
