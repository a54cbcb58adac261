#!/usr/bin/env bash
# Fuzz one target (or every target, one after another) with AFL++ for MINUTES each.
#
#   crates/fuzz/run.sh TARGET|all MINUTES
#
# Needs Debian's afl++ (`apt-get install afl++`) and cargo-afl (`cargo install cargo-afl
# --locked`); both only for fuzzing, never for the normal build or CI. Targets are listed in
# crates/fuzz/src/lib.rs (TARGETS). Findings land in $KIMI_FUZZ_OUT (default
# target/fuzz-out/<target>/default/{crashes,hangs}); replay one without AFL with
#   cargo run -p kimi-fuzz --bin TARGET < FILE
# and, once fixed, copy it into crates/fuzz/corpus/TARGET/ so `cargo test -p kimi-fuzz` keeps it.
set -euo pipefail

if [ $# -ne 2 ]; then
    echo "usage: $0 TARGET|all MINUTES" >&2
    exit 2
fi
target=$1
minutes=$2
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
targets=$(sed -n 's/^    ("\([a-z_]*\)", targets::.*/\1/p' "$here/src/lib.rs")
if [ "$target" = all ]; then
    selected=$targets
elif grep -qx "$target" <<<"$targets"; then
    selected=$target
else
    echo "unknown target $target; one of: all" $targets >&2
    exit 2
fi

# AFL instrumentation needs its own build; keep it apart from the normal target dir.
export CARGO_TARGET_DIR=${KIMI_FUZZ_TARGET_DIR:-$root/target/afl}
out_root=${KIMI_FUZZ_OUT:-$root/target/fuzz-out}
(cd "$root" && cargo afl build --release -p kimi-fuzz --features afl --bins)

# Containers rarely allow changing the core pattern or CPU governor; AFL only warns then.
export AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_NO_UI=1
for name in $selected; do
    echo "== $name for $minutes min"
    mkdir -p "$out_root/$name"
    # -i - resumes an earlier run in the same output directory.
    input="$here/corpus/$name"
    if [ -d "$out_root/$name/default/queue" ]; then
        input=-
    fi
    (cd "$root" && cargo afl fuzz -i "$input" -o "$out_root/$name" -V $((minutes * 60)) \
        -t 2000 "$CARGO_TARGET_DIR/release/$name") >"$out_root/$name.log" 2>&1 || true
    stats="$out_root/$name/default/fuzzer_stats"
    if [ -f "$stats" ]; then
        grep -E '^(execs_done|execs_per_sec|corpus_count|saved_crashes|saved_hangs|bitmap_cvg)' "$stats"
    else
        echo "no fuzzer_stats: see $out_root/$name.log" >&2
        tail -20 "$out_root/$name.log" >&2
    fi
done
