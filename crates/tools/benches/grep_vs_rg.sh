#!/usr/bin/env bash
# Benchmark the in-process Grep tool against ripgrep on a generated tree (or a given one).
# Usage: crates/tools/benches/grep_vs_rg.sh [tree-dir] [file-count]
set -euo pipefail
if ! command -v rg >/dev/null; then
    apt-get install -y ripgrep >/dev/null
fi
tree="${1:-$(mktemp -d)}"
count="${2:-20000}"
cd "$(dirname "$0")/../../.."
cargo build --release -q -p kimi-tools --example grep_bench
bin="${CARGO_TARGET_DIR:-target}/release/examples/grep_bench"
if [ -z "$(ls -A "$tree" 2>/dev/null)" ]; then
    "$bin" "$tree" --generate "$count"
else
    "$bin" "$tree"
fi
