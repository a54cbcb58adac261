//! The fuzz targets. Each takes arbitrary bytes, drives one real parsing entry point of a
//! kimi-rs crate, and panics only when an invariant breaks (the parsers themselves must never
//! panic). Nothing here touches the network; files are written only under temp dirs.

use std::cell::RefCell;
use std::path::Path;

use futures::StreamExt;
use kimi_llm::sse::{SseEvent, SseParser};
use kimi_llm::{Accumulator, ProviderType, ResolvedModel, decode_sse};

/// Splits `data` into a chunk size (its first byte, 1..=64) and the payload, so the fuzzer
/// also explores how network reads cut a stream.
fn chunked(data: &[u8]) -> (usize, &[u8]) {
    match data.split_first() {
        Some((first, rest)) => (usize::from(first % 64) + 1, rest),
        None => (1, data),
    }
}

fn sse_events(payload: &[u8], piece: usize) -> Vec<SseEvent> {
    let mut parser = SseParser::new();
    let mut out = Vec::new();
    for chunk in payload.chunks(piece) {
        parser.feed(chunk, &mut out);
    }
    parser.finish(&mut out);
    out
}

/// The SSE parser: any split of the same bytes gives the same events.
pub fn sse(data: &[u8]) {
    let (piece, payload) = chunked(data);
    let whole = sse_events(payload, payload.len().max(1));
    let split = sse_events(payload, piece);
    assert_eq!(whole, split, "events depend on how the stream is split");
}

fn model(provider_type: ProviderType) -> ResolvedModel {
    // Never contacted: decoding replays bytes already in memory.
    kimi_test_support::test_model(provider_type, "http://127.0.0.1:9/v1", "m")
}

/// One wire format end to end: bytes (cut into chunks) → SSE → decoder → deltas → accumulated
/// message. The stream must end, yield nothing after an error, and stay proportional to input.
fn wire(provider_type: ProviderType, data: &[u8]) {
    let (piece, payload) = chunked(data);
    let chunks: Vec<Result<bytes::Bytes, std::io::Error>> = payload
        .chunks(piece)
        .map(|c| Ok(bytes::Bytes::copy_from_slice(c)))
        .collect();
    let model = model(provider_type);
    let limit = 4 * payload.len() + 64;
    futures::executor::block_on(async {
        let mut stream = decode_sse(&model, futures::stream::iter(chunks));
        let mut acc = Accumulator::new();
        let mut items = 0usize;
        while let Some(item) = stream.next().await {
            items += 1;
            assert!(
                items <= limit,
                "{items} deltas from {} bytes",
                payload.len()
            );
            match item {
                Ok(delta) => acc.push(delta),
                Err(_) => {
                    assert!(stream.next().await.is_none(), "items after an error");
                    break;
                }
            }
        }
        let _ = acc.snapshot();
        let _ = acc.finish().check_not_empty(model.provider_type.as_str());
    });
}

/// OpenAI Chat Completions streaming.
pub fn wire_openai_chat(data: &[u8]) {
    wire(ProviderType::OpenAi, data);
}

/// Kimi (OpenAI Chat shape with Kimi's extensions).
pub fn wire_kimi(data: &[u8]) {
    wire(ProviderType::Kimi, data);
}

/// OpenAI Responses streaming.
pub fn wire_openai_responses(data: &[u8]) {
    wire(ProviderType::OpenAiResponses, data);
}

/// Anthropic Messages streaming.
pub fn wire_anthropic(data: &[u8]) {
    wire(ProviderType::Anthropic, data);
}

/// Gemini `streamGenerateContent?alt=sse`.
pub fn wire_gemini(data: &[u8]) {
    wire(ProviderType::GoogleGenAi, data);
}

/// Journal bytes without I/O: line scanning, torn-line salvage, the typed fast decoder
/// (which must agree with the general decoder whenever it answers), the envelope and replay.
pub fn journal_lines(data: &[u8]) {
    use kimi_protocol::Record;
    use kimi_store::lines::{salvage, scan};
    use kimi_store::{Entry, read_envelope, replay_input};

    let scanned = scan(data);
    let mut entries = Vec::new();
    let mut corrupt = Vec::new();
    for line in &scanned.lines {
        let bytes = &data[line.start..line.end];
        if let Some(fast) = Record::from_line(bytes)
            && let Ok(value) = serde_json::from_slice(bytes)
        {
            let general = Record::from_value(value).ok();
            assert_eq!(
                Some(&fast),
                general.as_ref(),
                "fast and general record decoders disagree"
            );
        }
        match &line.parsed {
            Ok(value) => entries.push(Entry {
                line: line.number,
                value: value.clone(),
            }),
            Err(_) => {
                corrupt.push(line.number);
                if let Some((offset, _)) = salvage(bytes) {
                    assert!(offset < bytes.len(), "salvage offset past the line");
                }
            }
        }
    }
    let _ = replay_input(&entries, "main");
    let _ = read_envelope(entries, &corrupt, 0);
}

thread_local! {
    static JOURNAL_DIR: RefCell<Option<tempfile::TempDir>> = const { RefCell::new(None) };
}

/// A fresh journal path holding `data`, in a temp dir kept for the process (AFL's persistent
/// loop reuses it); side files of earlier runs are cleared first.
fn journal_file(dir: &Path, name: &str, data: &[u8]) -> std::path::PathBuf {
    let path = dir.join(name);
    if let Ok(read) = std::fs::read_dir(dir) {
        for entry in read.flatten() {
            if entry.file_name().to_string_lossy().starts_with(name) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
    if let Err(err) = std::fs::write(&path, data) {
        panic!("cannot write the temp journal {}: {err}", path.display());
    }
    path
}

/// Opening a journal file: repair (torn tail, missing newline, corrupt lines, salvage),
/// migration and replay. The resume fast path must read what the general path reads, and a
/// second open of a repaired journal must find nothing more to repair.
pub fn journal_open(data: &[u8]) {
    use kimi_store::{FsyncPolicy, Journal, JournalOptions, Repair, replay_input_owned};

    JOURNAL_DIR.with(|cell| {
        let mut slot = cell.borrow_mut();
        let dir = match &mut *slot {
            Some(dir) => dir,
            None => match tempfile::tempdir() {
                Ok(dir) => slot.insert(dir),
                Err(err) => panic!("cannot create a temp dir: {err}"),
            },
        };
        let options = || JournalOptions {
            fsync: FsyncPolicy::Never,
        };
        let fast = journal_file(dir.path(), "fast.jsonl", data);
        let general = journal_file(dir.path(), "general.jsonl", data);
        let replayed = Journal::open_replay(&fast, options(), "main").map(|(_, read)| read);
        let opened = Journal::open(&general, options()).map(|(_, read)| read);
        let (Ok(replayed), Ok(opened)) = (replayed, opened) else {
            return;
        };
        if let Ok(input) = replay_input_owned(opened.entries.clone(), "main") {
            assert_eq!(
                replayed.input, input,
                "resume fast path differs from the general path"
            );
        }
        let Ok((_, again)) = Journal::open(&general, options()) else {
            panic!("a journal that opened once no longer opens");
        };
        // A rewritten journal (empty or migrated) does not yield its fresh metadata line on
        // the open that wrote it; later opens do. Only the records must stay the same.
        let records = |entries: &[kimi_store::Entry]| -> Vec<kimi_store::Entry> {
            entries
                .iter()
                .filter(|e| e.value.get("type").and_then(|t| t.as_str()) != Some("metadata"))
                .cloned()
                .collect()
        };
        assert_eq!(
            records(&again.entries),
            records(&opened.entries),
            "re-opening changed the records"
        );
        for repair in &again.repairs {
            match repair {
                Repair::TornTail { .. } | Repair::NewlineAdded | Repair::Rewritten { .. } => {
                    panic!(
                        "second open repaired again: {repair:?} (first: {:?})",
                        opened.repairs
                    )
                }
                // Corrupt and salvaged lines stay in place (line numbers are referenced by
                // undo records), so they are reported on every open.
                Repair::CorruptLines { .. } | Repair::Salvaged { .. } => {}
            }
        }
    });
}

fn text(data: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(data)
}

/// `config.toml` and `tui.toml`: parse, validate, and report with lines.
pub fn config_toml(data: &[u8]) {
    let text = text(data);
    let config = kimi_config::Config::parse(&text, Path::new("/fuzz/config.toml"));
    let _ = config.check();
    for diagnostic in &config.diagnostics {
        let _ = diagnostic.to_string();
    }
    let _ = config.thinking_effort();
    let _ = kimi_config::key_line(&text, &["loop_control", "max_steps_per_turn"]);
    let _ = kimi_config::tui::TuiFile::parse(&text, Path::new("/fuzz/tui.toml"));
}

/// `mcp.json` / `.mcp.json` as the user's and the project's file.
pub fn mcp_json(data: &[u8]) {
    let text = text(data);
    let path = Path::new("/fuzz/mcp.json");
    let _ = kimi_mcp::config::parse_file(&text, path, None);
    let _ = kimi_mcp::config::parse_file(&text, path, Some(Path::new("/fuzz/project")));
}

thread_local! {
    static TOOLS: RefCell<Option<ToolBench>> = const { RefCell::new(None) };
}

struct ToolBench {
    _dir: tempfile::TempDir,
    registry: kimi_tools::registry::ToolRegistry,
    validator: kimi_tools::args::ArgsValidator,
    ctx: kimi_tools::ToolContext,
}

/// A tool call: the first line is the tool name, the rest its raw argument string. Preflight
/// (lookup, JSON decoding, schema validation), then the tool's own argument parsing in
/// `resolve` — which plans the call but never runs it — in a temp workspace.
pub fn tool_args(data: &[u8]) {
    use kimi_tools::args::{Preflight, RawArgs, parse_tool_call_arguments};

    let text = text(data);
    let (name, raw) = text.split_once('\n').unwrap_or((&text, ""));
    let _ = parse_tool_call_arguments(RawArgs::Text(raw));
    TOOLS.with(|cell| {
        let mut slot = cell.borrow_mut();
        let bench = match &mut *slot {
            Some(bench) => bench,
            None => {
                let dir = match tempfile::tempdir() {
                    Ok(dir) => dir,
                    Err(err) => panic!("cannot create a temp dir: {err}"),
                };
                let ctx = kimi_tools::ToolContext::new(dir.path(), &dir.path().join("agent"));
                slot.insert(ToolBench {
                    _dir: dir,
                    registry: kimi_tools::builtin::default_registry(),
                    validator: kimi_tools::args::ArgsValidator::new(),
                    ctx,
                })
            }
        };
        let preflight =
            bench
                .registry
                .preflight(&bench.validator, name, RawArgs::Text(raw), |_| None);
        if let Preflight::Runnable { args } = preflight
            && let Some(tool) = bench.registry.get(name)
        {
            let _ = tool.resolve(args, &bench.ctx);
        }
    });
}

/// Cron expressions: parse, describe, match and search for the next fire.
pub fn cron(data: &[u8]) {
    use chrono::{DateTime, FixedOffset, Utc};
    use kimi_core::cron::expr::CronExpr;

    let text = text(data);
    let Ok(expr) = CronExpr::parse(&text) else {
        return;
    };
    let again = CronExpr::parse(expr.as_str());
    assert!(
        again.as_ref().is_ok_and(|e| e.as_str() == expr.as_str()),
        "normalised text {:?} does not parse back: {again:?}",
        expr.as_str()
    );
    let _ = expr.to_human();
    // 2026-03-29 00:30 UTC: close to a DST change in Europe; fixed so runs are repeatable.
    let from = 1_774_744_200_000i64;
    if let Some(at) = DateTime::<Utc>::from_timestamp_millis(from) {
        let _ = expr.matches(&at.naive_utc());
    }
    let next = expr.next_within(from, &Utc, 60 * 24 * 40);
    if let Some(next) = next {
        assert!(next > from, "next fire {next} is not after {from}");
    }
    if let Some(east) = FixedOffset::east_opt(5 * 3600 + 1800) {
        let _ = expr.next_within(from, &east, 60 * 24 * 40);
    }
}

/// The web API's request bodies and query strings; the first byte picks which.
pub fn web_body(data: &[u8]) {
    use kimi_web::fuzzing::{Input, decode};

    let Some((first, rest)) = data.split_first() else {
        return;
    };
    let input = Input::ALL[usize::from(*first) % Input::ALL.len()];
    let _ = decode(input, rest);
}

/// The shell command parser behind permission rules and the protected floor, and the danger
/// labels computed from it: any command line must parse (or report why not) without panicking.
pub fn shell(data: &[u8]) {
    use kimi_core::permission::shell::parse;
    use kimi_core::permission::{danger_labels, danger_summary, labels_of};

    let text = text(data);
    let parsed = parse(&text);
    for command in &parsed.commands {
        let _ = command.program();
        let _ = command.normalized();
        let _ = command.hoisted();
        let _ = command.display();
    }
    let _ = labels_of(&parsed);
    let _ = danger_labels(&text);
    let _ = danger_summary(&text);
}

/// Flow skills' charts, read as mermaid and as d2: a chart either fails with an error or is a
/// graph a walk can follow — its BEGIN and END exist, END is reachable, every edge joins known
/// nodes, and every reachable decision's labels lead where their edges go.
pub fn flow_chart(data: &[u8]) {
    use kimi_protocol::flow::{FlowGraph, FlowNodeKind};

    fn check(graph: &FlowGraph) {
        let known = |id: &str| graph.node(id).is_some();
        assert!(known(&graph.begin) && known(&graph.end), "{graph:?}");
        let mut ids: Vec<&str> = graph.nodes.iter().map(|n| n.id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), graph.nodes.len(), "node ids repeat: {graph:?}");
        for edge in &graph.edges {
            assert!(
                known(&edge.from) && known(&edge.to),
                "{edge:?} in {graph:?}"
            );
        }
        // Only what a walk can reach matters (nodes drawn apart from the flow never run).
        let mut reachable = vec![graph.begin.as_str()];
        let mut at = 0;
        while let Some(id) = reachable.get(at).copied() {
            for edge in graph.outgoing(id) {
                if !reachable.contains(&edge.to.as_str()) {
                    reachable.push(&edge.to);
                }
            }
            at += 1;
        }
        assert!(reachable.contains(&graph.end.as_str()), "{graph:?}");
        for node in graph
            .nodes
            .iter()
            .filter(|n| n.kind == FlowNodeKind::Decision && reachable.contains(&n.id.as_str()))
        {
            for edge in graph.outgoing(&node.id) {
                let label = edge.label.as_deref().unwrap_or_default();
                assert_eq!(
                    graph.follow(&node.id, label),
                    Some(edge.to.as_str()),
                    "{graph:?}"
                );
            }
        }
    }

    let text = text(data);
    let parsed = [
        kimi_skills::flow::parse_mermaid(&text),
        kimi_skills::flow::parse_d2(&text),
    ];
    for graph in parsed.iter().flatten() {
        check(graph);
    }
}
