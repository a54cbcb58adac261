//! What file checkpoints cost on a large workspace: a 50,000-file tree (plus 5,000 files under
//! `target/`, which scans skip). Prints the time of the first Bash step (it reads every file
//! into the session's content snapshot), of later Bash steps (two stat scans plus the files
//! that changed), of a Write/Edit step (one pre-image), and the disk the checkpoint store
//! takes next to the tree's own size. The page cache is warm (the tree was just written).
//!
//! Run: `cargo bench -p kimi-core --bench checkpoint` (`KIMI_BENCH_FILES=N` for another size).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kimi_core::checkpoint::{CaptureKind, CheckpointSettings, Checkpoints};

const PER_DIR: usize = 100;

/// Deterministic file sizes between 200 B and ~8 KB (source-file-like).
fn size_of(i: usize) -> usize {
    200 + (i * 7919) % 7800
}

fn content(i: usize, round: usize) -> Vec<u8> {
    let line = format!("// file {i} round {round}: fn item_{i}() -> u64 {{ {i} }}\n");
    line.as_bytes()
        .iter()
        .copied()
        .cycle()
        .take(size_of(i))
        .collect()
}

fn file_path(root: &Path, i: usize) -> PathBuf {
    root.join(format!("src/mod_{:04}/file_{i}.rs", i / PER_DIR))
}

fn build_tree(root: &Path, files: usize) -> u64 {
    let mut bytes = 0u64;
    for i in 0..files {
        let path = file_path(root, i);
        if i % PER_DIR == 0 {
            std::fs::create_dir_all(path.parent().unwrap_or(root)).ok();
        }
        let data = content(i, 0);
        bytes += data.len() as u64;
        std::fs::write(&path, data).ok();
    }
    // Build output the scan skips by default.
    for i in 0..5_000 {
        let path = root.join(format!("target/debug/deps/obj_{:03}/o_{i}.o", i / PER_DIR));
        if i % PER_DIR == 0 {
            std::fs::create_dir_all(path.parent().unwrap_or(root)).ok();
        }
        std::fs::write(&path, content(i, 9)).ok();
    }
    std::fs::write(root.join(".gitignore"), "target/\n").ok();
    bytes
}

/// What one scripted "command" does: change 20 files, create 5 (one in a new directory),
/// delete 5.
fn command(root: &Path, files: usize, round: usize) {
    let base = round * 997;
    for k in 0..20 {
        let i = (base + k * 131) % files;
        std::fs::write(file_path(root, i), content(i, round)).ok();
    }
    let dir = root.join(format!("generated/round_{round}"));
    std::fs::create_dir_all(&dir).ok();
    for k in 0..5 {
        std::fs::write(dir.join(format!("new_{k}.rs")), content(k, round)).ok();
    }
    for k in 0..5 {
        let i = (base + 50_000 + k * 17) % files;
        std::fs::remove_file(file_path(root, i)).ok();
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let files: usize = std::env::var("KIMI_BENCH_FILES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50_000);
    let Ok(work) = tempfile::tempdir() else {
        eprintln!("cannot create a temporary directory");
        std::process::exit(1);
    };
    let root = work.path().join("workspace");
    let session = work.path().join("home/sessions/key/session");
    let started = Instant::now();
    let tree_bytes = build_tree(&root, files);
    println!(
        "tree: {files} files, {:.1} MB (+5000 files under target/, skipped) built in {:.1} s",
        tree_bytes as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    let checkpoints = Checkpoints::new(
        CheckpointSettings::default(),
        &session,
        vec![root.clone()],
        &work.path().join("home"),
    );
    let mut warm = Vec::new();
    for round in 1..=6 {
        let t0 = Instant::now();
        let Some(ticket) = checkpoints.before(&CaptureKind::Scan) else {
            eprintln!("a Bash step took no checkpoint");
            std::process::exit(1);
        };
        let before = t0.elapsed();
        command(&root, files, round);
        let t1 = Instant::now();
        let step = checkpoints.after(ticket, round as u64, "call", "Bash");
        let after = t1.elapsed();
        let changes = step.as_ref().map_or(0, |s| s.changes.len());
        let skipped = step.as_ref().map_or(0, |s| s.skipped.len());
        println!(
            "Bash step {round}: before {:>8.1} ms, after {:>7.1} ms, total {:>8.1} ms; {changes} changes recorded, {skipped} skipped{}",
            ms(before),
            ms(after),
            ms(before + after),
            if round == 1 {
                " (first step: fills the content snapshot)"
            } else {
                ""
            }
        );
        if round > 1 {
            warm.push(before + after);
        }
    }
    let avg = warm.iter().sum::<Duration>() / u32::try_from(warm.len()).unwrap_or(1);
    println!("later Bash steps: {:.1} ms on average", ms(avg));
    let target = file_path(&root, 7);
    let t0 = Instant::now();
    let ticket = checkpoints.before(&CaptureKind::Declared(vec![target.clone()]));
    std::fs::write(&target, content(7, 99)).ok();
    let step = ticket.and_then(|t| checkpoints.after(t, 7, "call", "Edit"));
    println!(
        "Edit step (one pre-image): {:.2} ms, {} change(s)",
        ms(t0.elapsed()),
        step.map_or(0, |s| s.changes.len())
    );
    let store = checkpoints.blobs().disk_bytes();
    println!(
        "checkpoint store: {:.1} MB on disk for a {:.1} MB tree ({:.0}% of it)",
        store as f64 / 1e6,
        tree_bytes as f64 / 1e6,
        store as f64 * 100.0 / tree_bytes.max(1) as f64
    );
}
