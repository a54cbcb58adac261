//! Crash-safety harness: a writer process appends realistic records and acknowledges each durable
//! batch on stdout; the driver kills it with SIGKILL at a random moment, reopens the journal and
//! checks that nothing acknowledged was lost. Used by `tests/crash_safety.rs` and by the soak mode
//! of the `kimi-store-crash` binary (`cargo run --release -p kimi-test-support --bin
//! kimi-store-crash -- soak 1000`).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use kimi_protocol::loop_event::{ContentPartEvent, StepBegin, ToolCallEvent};
use kimi_protocol::record::{AppendLoopEvent, AppendMessage};
use kimi_protocol::{ContentPart, LoopEvent, Message, Record, RecordPayload};
use serde_json::{Value, json};

use kimi_store::journal::{FsyncPolicy, Journal, JournalOptions, Repair};

/// xorshift64*: deterministic, dependency-free randomness for record contents and kill moments.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

const WORDS: &[&str] = &[
    "fn",
    "データ",
    "журнал",
    "🦀",
    "λ",
    "naïve",
    "\"quoted\"",
    "tab\there",
    "line\nbreak",
    "ok",
];

/// Text of `min..max` bytes: a random slice of a fixed pool of mixed-script words (cheap, so the
/// writer spends its time writing rather than generating).
fn text(rng: &mut Rng, min: u64, max: u64) -> String {
    static POOL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let pool = POOL.get_or_init(|| {
        let mut rng = Rng::new(42);
        let mut s = String::with_capacity(70_000);
        while s.len() < 64_000 {
            s.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
            s.push(' ');
        }
        s
    });
    let len = (min + rng.below(max - min)) as usize;
    let mut start = rng.below((pool.len() - len) as u64) as usize;
    while !pool.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = start + len;
    while !pool.is_char_boundary(end) {
        end -= 1;
    }
    pool[start..end].to_owned()
}

/// Record number `seq` of the stream for `seed`: the same inputs always give the same record, so
/// the checker can regenerate what must be on disk.
pub fn record_for(seed: u64, seq: u64) -> Record {
    let mut rng = Rng::new(seed ^ seq.wrapping_mul(0xD6E8_FEB8_6659_FD93));
    let step = format!("step-{}", seq / 4);
    let payload = match seq % 4 {
        0 => RecordPayload::AppendMessage(AppendMessage {
            agent_id: Some("main".to_owned()),
            message: Message::user_text(format!("#{seq} {}", text(&mut rng, 16, 400))),
        }),
        1 => RecordPayload::AppendLoopEvent(AppendLoopEvent {
            agent_id: Some("main".to_owned()),
            event: LoopEvent::StepBegin(StepBegin {
                uuid: step,
                turn_id: Some((seq / 8).to_string()),
                step: Some(1),
            }),
        }),
        2 => RecordPayload::AppendLoopEvent(AppendLoopEvent {
            agent_id: Some("main".to_owned()),
            event: LoopEvent::ContentPart(ContentPartEvent {
                step_uuid: step,
                part: ContentPart::text(text(&mut rng, 2_000, 48_000)),
                uuid: None,
                turn_id: None,
                step: None,
            }),
        }),
        _ => RecordPayload::AppendLoopEvent(AppendLoopEvent {
            agent_id: Some("main".to_owned()),
            event: LoopEvent::ToolCall(ToolCallEvent {
                step_uuid: step,
                tool_call_id: format!("call_{seq}"),
                name: "Bash".to_owned(),
                args: Some(json!({"command": text(&mut rng, 8, 120)})),
                extras: None,
                uuid: None,
                turn_id: None,
                step: None,
                display: None,
            }),
        }),
    };
    Record::new(payload, 1_700_000_000_000 + seq)
}

/// The fsync policy a trial's writer uses: half the trials skip fsync so that the kill lands in
/// `write` more often (torn tails), the other half exercise the default durable path.
pub fn policy_for(seed: u64) -> FsyncPolicy {
    if seed.is_multiple_of(2) {
        FsyncPolicy::EveryBatch
    } else {
        FsyncPolicy::Never
    }
}

/// The writer process: append batches forever (or `max_batches`), printing `ACK <records>` after
/// each acknowledged batch, where `<records>` is the total acknowledged so far. A SIGKILL does not
/// lose the page cache, so acknowledged records must survive it under either fsync policy.
pub fn writer_main(journal: &Path, seed: u64, max_batches: u64) -> Result<(), String> {
    let options = JournalOptions {
        fsync: policy_for(seed),
    };
    let (mut journal, read) = Journal::open(journal, options).map_err(|e| e.to_string())?;
    let mut seq = read.entries.len().saturating_sub(1) as u64;
    let mut rng = Rng::new(seed);
    let stdout = std::io::stdout();
    for _ in 0..max_batches {
        let size = 1 + rng.below(24);
        let batch: Vec<Record> = (seq..seq + size).map(|s| record_for(seed, s)).collect();
        journal.append(&batch).map_err(|e| e.to_string())?;
        seq += size;
        let mut out = stdout.lock();
        writeln!(out, "ACK {seq}")
            .and_then(|()| out.flush())
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Poll the journal until its last byte is not a newline (a batch is being written) or `limit`
/// passes. Busy polling on purpose: the window is microseconds wide.
#[cfg(not(unix))]
fn watch_for_partial_line(_journal: &Path, _limit: Duration) {}

#[cfg(unix)]
fn watch_for_partial_line(journal: &Path, limit: Duration) {
    use std::os::unix::fs::FileExt;
    let started = std::time::Instant::now();
    let mut file = None;
    while started.elapsed() < limit {
        if file.is_none() {
            file = std::fs::File::open(journal).ok();
        }
        if let Some(f) = &file
            && let Ok(meta) = f.metadata()
            && meta.len() > 0
        {
            let mut last = [0u8];
            if f.read_exact_at(&mut last, meta.len() - 1).is_ok() && last[0] != b'\n' {
                return;
            }
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Figures {
    pub trials: u64,
    pub torn_tails_repaired: u64,
    pub newlines_added: u64,
    pub records_acknowledged: u64,
    pub records_found: u64,
    pub records_lost: u64,
}

/// One trial: run `writer` (a command that runs `writer_main(journal, seed, ..)`), kill it at a
/// random moment, reopen and check. Returns what happened, or a description of the violation.
pub fn run_trial(
    mut writer: Command,
    journal: &Path,
    seed: u64,
    figures: &mut Figures,
) -> Result<(), String> {
    let mut rng = Rng::new(seed ^ 0xA5A5);
    let wait_acks = rng.below(4);
    let delay = Duration::from_micros(rng.below(4_000));
    let mut child = writer
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("spawn writer: {e}"))?;
    let stdout = child.stdout.take().ok_or("writer has no stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let mut acked = 0u64;
    let parse_ack = |line: &str| {
        line.strip_prefix("ACK ")
            .and_then(|n| n.trim().parse::<u64>().ok())
    };
    for _ in 0..wait_acks {
        match lines.next() {
            Some(Ok(line)) => acked = parse_ack(&line).unwrap_or(acked),
            _ => break,
        }
    }
    if rng.below(2) == 0 {
        // The random kill moment: this short delay is the point of the test, not synchronisation.
        std::thread::sleep(delay);
    } else {
        // Aim at a write in flight: kill as soon as the file is seen not ending in `\n`
        // (give up after a bound and kill anyway).
        watch_for_partial_line(journal, Duration::from_millis(30));
    }
    child.kill().map_err(|e| format!("kill writer: {e}"))?;
    for line in lines.map_while(Result::ok) {
        acked = parse_ack(&line).unwrap_or(acked);
    }
    let _ = child.wait();

    let raw = std::fs::read(journal).unwrap_or_default();
    let tail_start = raw.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let tail = raw[tail_start..].to_vec();
    let (mut reopened, read) =
        Journal::open(journal, JournalOptions::default()).map_err(|e| format!("reopen: {e}"))?;
    if !read.reported.is_empty() {
        return Err(format!("seed {seed}: reopen reported {:?}", read.reported));
    }
    for repair in &read.repairs {
        match repair {
            Repair::TornTail { side_file, .. } => {
                let kept = std::fs::read(side_file).map_err(|e| format!("read side file: {e}"))?;
                if kept != tail {
                    return Err(format!(
                        "seed {seed}: side file does not hold the torn bytes"
                    ));
                }
                figures.torn_tails_repaired += 1;
            }
            Repair::NewlineAdded => figures.newlines_added += 1,
            Repair::Rewritten { .. } if raw.is_empty() => {}
            other => return Err(format!("seed {seed}: unexpected repair {other:?}")),
        }
    }
    let records = &read.entries[read.entries.len().min(1)..];
    for (k, entry) in records.iter().enumerate() {
        let expected = record_for(seed, k as u64).to_value();
        if entry.value != expected {
            return Err(format!(
                "seed {seed}: record {k} differs from what was written"
            ));
        }
    }
    let found = records.len() as u64;
    figures.trials += 1;
    figures.records_acknowledged += acked;
    figures.records_found += found;
    figures.records_lost += acked.saturating_sub(found);
    if found < acked {
        return Err(format!(
            "seed {seed}: {acked} records acknowledged, only {found} on disk"
        ));
    }

    // The repaired journal takes a new append and reads back whole.
    let extra = record_for(seed, found);
    reopened
        .append(std::slice::from_ref(&extra))
        .map_err(|e| format!("append after repair: {e}"))?;
    drop(reopened);
    let (_, again) =
        Journal::open(journal, JournalOptions::default()).map_err(|e| format!("re-reopen: {e}"))?;
    let last: Option<&Value> = again.entries.last().map(|e| &e.value);
    if !again.repairs.is_empty()
        || again.entries.len() as u64 != found + 2
        || last != Some(&extra.to_value())
    {
        return Err(format!(
            "seed {seed}: append after repair did not read back cleanly"
        ));
    }
    Ok(())
}
