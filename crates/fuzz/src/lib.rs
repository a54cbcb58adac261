//! Fuzz targets for every parser kimi-rs feeds untrusted bytes: the SSE parser and each wire
//! decoder, journal lines and repair, `config.toml`, `mcp.json`, tool arguments and preflight,
//! cron expressions, the web API's request bodies, the shell command parser and flow skills'
//! mermaid/d2 charts.
//!
//! Each target is a `fn(&[u8])` in [`targets`] that must return for every input without
//! panicking or hanging; a broken invariant is a panic. `src/bin/<target>.rs` wraps one in
//! [`run`], which reads stdin in a normal build (replay a crash file with
//! `cargo run -p kimi-fuzz --bin <target> < file`) and becomes AFL++'s persistent loop when
//! built with `cargo afl build --features afl`. `tests/corpus.rs` runs every target over the
//! committed seed corpus (`corpus/<target>/`) and over generated inputs in plain `cargo test`.

pub mod targets;

/// A target's name (its binary and its corpus directory) and its function.
pub type Target = (&'static str, fn(&[u8]));

/// Every target, in the order `run.sh all` runs them.
pub const TARGETS: &[Target] = &[
    ("sse", targets::sse),
    ("wire_openai_chat", targets::wire_openai_chat),
    ("wire_kimi", targets::wire_kimi),
    ("wire_openai_responses", targets::wire_openai_responses),
    ("wire_anthropic", targets::wire_anthropic),
    ("wire_gemini", targets::wire_gemini),
    ("journal_lines", targets::journal_lines),
    ("journal_open", targets::journal_open),
    ("config_toml", targets::config_toml),
    ("mcp_json", targets::mcp_json),
    ("tool_args", targets::tool_args),
    ("cron", targets::cron),
    ("web_body", targets::web_body),
    ("shell", targets::shell),
    ("flow_chart", targets::flow_chart),
];

/// Runs `target` on stdin (normal build) or under AFL++'s persistent loop (`afl` feature).
#[cfg(not(feature = "afl"))]
pub fn run(target: fn(&[u8])) {
    use std::io::Read;
    let mut input = Vec::new();
    if let Err(err) = std::io::stdin().read_to_end(&mut input) {
        eprintln!("cannot read stdin: {err}");
        std::process::exit(2);
    }
    target(&input);
}

/// Runs `target` on stdin (normal build) or under AFL++'s persistent loop (`afl` feature).
#[cfg(feature = "afl")]
pub fn run(target: fn(&[u8])) {
    afl::fuzz!(|data: &[u8]| target(data));
}
