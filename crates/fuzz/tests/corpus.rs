//! Every fuzz target over its committed seed corpus (`corpus/<target>/`, which also holds the
//! regression inputs of crashes found and fixed), then over generated inputs: random bytes and
//! seeds with random bytes spliced in. Plain `cargo test`, no AFL needed.

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use kimi_fuzz::TARGETS;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

fn corpus(name: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(name);
    let mut files: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("no corpus at {}: {e}", dir.display()))
        .map(|entry| {
            let path = entry.unwrap().path();
            let bytes = std::fs::read(&path).unwrap();
            (path, bytes)
        })
        .collect();
    files.sort();
    files
}

#[test]
fn every_target_has_a_seed_corpus_and_runs_it() {
    for (name, target) in TARGETS {
        let files = corpus(name);
        assert!(files.len() >= 3, "{name}: only {} seeds", files.len());
        for (path, bytes) in files {
            eprintln!("{name}: {}", path.display());
            target(&bytes);
        }
    }
}

#[test]
fn every_target_has_a_binary() {
    let bins = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/bin");
    for (name, _) in TARGETS {
        assert!(
            bins.join(format!("{name}.rs")).is_file(),
            "{name} has no bin"
        );
    }
}

/// A seed with a random slice overwritten, inserted or removed: most of the structure stays,
/// so generated inputs get past the first parse step.
fn mutated(seeds: Vec<Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
    (
        0..seeds.len(),
        any::<u16>(),
        prop::collection::vec(any::<u8>(), 0..12),
        0u8..3,
    )
        .prop_map(move |(i, at, bytes, how)| {
            let mut seed = seeds[i].clone();
            let at = usize::from(at) % (seed.len() + 1);
            match how {
                0 => {
                    let end = (at + bytes.len()).min(seed.len());
                    seed.splice(at..end, bytes);
                }
                1 => {
                    seed.splice(at..at, bytes);
                }
                _ => {
                    let end = (at + bytes.len()).min(seed.len());
                    seed.drain(at..end);
                }
            }
            seed
        })
}

#[test]
fn generated_inputs_never_break_a_target() {
    // A few thousand inputs in all: cheap enough for every CI run; AFL does the deep search.
    let cases = std::env::var("KIMI_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    for (name, target) in TARGETS {
        let started = std::time::Instant::now();
        let seeds: Vec<Vec<u8>> = corpus(name).into_iter().map(|(_, b)| b).collect();
        let strategy = prop_oneof![prop::collection::vec(any::<u8>(), 0..256), mutated(seeds),];
        let mut runner = TestRunner::new(Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        });
        let result = runner.run(&strategy, |input| {
            target(&input);
            Ok(())
        });
        if let Err(err) = result {
            panic!("{name}: {err}");
        }
        // The figures a long run reports (`--nocapture`).
        eprintln!(
            "{name}: {cases} generated inputs, no failure, {:.1}s",
            started.elapsed().as_secs_f64()
        );
    }
}
