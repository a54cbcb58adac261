//! Compare the in-process Grep tool with ripgrep (`rg`) on one tree.
//!
//! Usage: `grep_bench <dir> [--generate <files>]`. With `--generate`, a synthetic source tree of
//! that many files is written under `<dir>` first. Prints wall times (best of 3) for a literal
//! and a regex search in files_with_matches mode, and the ratio to rg.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use kimi_tools::ToolContext;
use kimi_tools::builtin::GrepTool;
use kimi_tools::tool::run_tool;
use serde_json::json;

const WORDS: [&str; 12] = [
    "alpha", "beta", "gamma", "delta", "parse", "render", "token", "buffer", "stream", "config",
    "value", "error",
];

fn generate(root: &Path, files: usize) -> std::io::Result<()> {
    for i in 0..files {
        let dir = root.join(format!("d{}/s{}", i % 100, i % 7));
        std::fs::create_dir_all(&dir)?;
        let mut body = String::new();
        for line in 0..200 {
            let w = WORDS[(i * 31 + line * 7) % WORDS.len()];
            let v = WORDS[(i + line) % WORDS.len()];
            body.push_str(&format!(
                "fn {w}_{line}(x: u32) -> u32 {{ let {v} = x * {line}; {v} + {i} }}\n"
            ));
        }
        if i % 97 == 0 {
            body.push_str("// NEEDLE_LITERAL marks a rare line\n");
        }
        std::fs::write(dir.join(format!("f{i}.rs")), body)?;
    }
    Ok(())
}

fn best_of_3(mut f: impl FnMut() -> usize) -> (Duration, usize) {
    let mut best = Duration::MAX;
    let mut hits = 0;
    for _ in 0..3 {
        let start = Instant::now();
        hits = f();
        best = best.min(start.elapsed());
    }
    (best, hits)
}

fn rg(root: &Path, pattern: &str) -> usize {
    let out = Command::new("rg")
        .args([
            "--hidden",
            "-g",
            "!.git",
            "-l",
            "--max-columns",
            "500",
            pattern,
        ])
        .arg(root)
        .output();
    out.map(|o| String::from_utf8_lossy(&o.stdout).lines().count())
        .unwrap_or(0)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let root = PathBuf::from(
        args.next()
            .ok_or("usage: grep_bench <dir> [--generate <files>]")?,
    );
    if args.next().as_deref() == Some("--generate") {
        let n: usize = args
            .next()
            .ok_or("--generate needs a file count")?
            .parse()?;
        generate(&root, n)?;
    }
    let root = std::fs::canonicalize(&root)?;
    let agent = std::env::temp_dir().join(format!("grep-bench-{}", std::process::id()));
    let ctx = ToolContext::new(root.clone(), &agent);
    let runtime = tokio::runtime::Runtime::new()?;
    println!("| search | kimi Grep | rg | ratio | files matched (kimi / rg) |");
    println!("|---|---|---|---|---|");
    for (label, pattern) in [
        ("literal", "NEEDLE_LITERAL"),
        ("regex", r"fn (parse|render)_1\d+\(x"),
    ] {
        let (ours, our_hits) = best_of_3(|| {
            let args = json!({"pattern": pattern, "head_limit": 0});
            let result = runtime.block_on(run_tool(&GrepTool, args, &ctx));
            result
                .text()
                .map_or(0, |t| t.lines().filter(|l| l.starts_with('/')).count())
        });
        let (theirs, their_hits) = best_of_3(|| rg(&root, pattern));
        let ratio = ours.as_secs_f64() / theirs.as_secs_f64().max(1e-9);
        println!(
            "| {label} | {ours:.2?} | {theirs:.2?} | {ratio:.2}x | {our_hits} / {their_hits} |"
        );
    }
    let _ = std::fs::remove_dir_all(&agent);
    Ok(())
}
