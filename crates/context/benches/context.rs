//! Figures for issue 3, without criterion: projection time for 1k/10k/100k-message histories,
//! estimator throughput, and compaction planning time for 10k messages.
//! Run with `cargo bench -p kimi-context`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use kimi_context::compaction::service::{BeginInput, CompactionService, Trigger};
use kimi_context::compaction::split::{
    CompactSource, SplitConfig, compute_compact_count, reduce_compact_on_overflow,
};
use kimi_context::compaction::trigger::CompactionConfig;
use kimi_context::projector::{project, project_strict};
use kimi_context::tokens::{estimate_messages, estimate_text};
use kimi_protocol::{ContentPart, Message, Origin, ToolCall};

/// A coding-session-like history: prompt, assistant with two calls, their results (one long),
/// a reminder, a final answer; repeated until `len` messages.
fn history(len: usize) -> Vec<Message> {
    let mut out = Vec::with_capacity(len + 8);
    let output = "fn main() { println!(\"hello\"); } // line of tool output\n".repeat(8);
    let mut turn = 0usize;
    while out.len() < len {
        turn += 1;
        out.push(Message::user_text(format!(
            "Please fix bug #{turn} in src/lib.rs"
        )));
        let a = format!("call_{turn}_a");
        let b = format!("call_{turn}_b");
        out.push(Message::assistant(
            vec![ContentPart::text("Let me look at the file first.")],
            vec![
                ToolCall::new(a.clone(), "Read", Some(r#"{"path":"src/lib.rs"}"#.into())),
                ToolCall::new(b.clone(), "Grep", Some(r#"{"pattern":"fn main"}"#.into())),
            ],
        ));
        out.push(Message::tool_result(
            a,
            vec![ContentPart::text(output.clone())],
            None,
        ));
        let mut reminder =
            Message::user_text("<system-reminder>\nplan mode is off\n</system-reminder>");
        reminder.origin = Some(Origin::injection("plan_mode"));
        out.push(reminder);
        out.push(Message::tool_result(
            b,
            vec![ContentPart::text("src/lib.rs:1")],
            Some(false),
        ));
        out.push(Message::assistant(
            vec![ContentPart::text(
                "Fixed: the loop now stops at the end of input.",
            )],
            vec![],
        ));
    }
    out.truncate(len);
    out
}

/// CPU time this thread has used (`utime + stime` of `/proc/thread-self/stat`, 10 ms ticks).
/// The machine is shared, so wall time includes waiting for a core; CPU time does not.
fn cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = stat.rsplit_once(')')?.1;
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(Duration::from_millis((utime + stime) * 10))
}

/// Timing of repeated calls of `f`: median and minimum wall time per call, and the average CPU
/// time per call (calls are repeated for at least a second so the 10 ms ticks average out).
struct Timing {
    median: Duration,
    min: Duration,
    cpu: Option<Duration>,
}

fn median(min_runs: usize, mut f: impl FnMut()) -> Timing {
    let mut walls = Vec::new();
    let cpu_start = cpu_time();
    let begin = Instant::now();
    while walls.len() < min_runs || begin.elapsed() < Duration::from_secs(1) {
        let start = Instant::now();
        f();
        walls.push(start.elapsed());
    }
    let runs = walls.len();
    let cpu = match (cpu_start, cpu_time()) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a) / u32::try_from(runs).unwrap_or(u32::MAX)),
        _ => None,
    };
    walls.sort();
    Timing {
        median: walls.get(runs / 2).copied().unwrap_or_default(),
        min: walls.first().copied().unwrap_or_default(),
        cpu,
    }
}

impl std::fmt::Display for Timing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "median {:>8.3} ms, min {:>8.3} ms wall",
            ms(self.median),
            ms(self.min)
        )?;
        if let Some(cpu) = self.cpu {
            write!(f, ", {:>8.3} ms cpu/call", ms(cpu))?;
        }
        Ok(())
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    println!("kimi-context benchmark (each line: calls repeated for >= 1 s)");
    for len in [1_000usize, 10_000, 100_000] {
        let h = history(len);
        let runs = if len >= 100_000 { 7 } else { 21 };
        let clone = median(runs, || {
            black_box(black_box(&h).clone());
        });
        let normal = median(runs, || {
            black_box(project(black_box(&h)));
        });
        let strict = median(runs, || {
            black_box(project_strict(black_box(&h)));
        });
        println!("project        {len:>7} messages: {normal}");
        println!("project_strict {len:>7} messages: {strict}");
        println!("  (baseline: cloning the history: {clone})");
    }

    // Estimator throughput over mixed text (mostly ASCII code, some CJK prose).
    let chunk = "let value = compute(input)?; // 计算结果 and return it\n";
    let text = chunk.repeat((32 << 20) / chunk.len());
    let bytes = text.len() as f64;
    let took = median(9, || {
        black_box(estimate_text(black_box(&text)));
    });
    let secs = took.min.as_secs_f64();
    println!(
        "estimate_text  {:.0} MB mixed text: {took}  => {:.0} MB/s at the minimum",
        bytes / 1e6,
        bytes / 1e6 / secs
    );
    let h = history(10_000);
    let took = median(21, || {
        black_box(estimate_messages(black_box(&h)));
    });
    println!("estimate_messages 10000 messages: {took}");

    // Compaction planning for 10k messages.
    let config = CompactionConfig::default();
    let split = SplitConfig::new(256_000, &config);
    let auto = median(21, || {
        black_box(compute_compact_count(
            black_box(&h),
            CompactSource::Auto,
            &split,
        ));
    });
    let manual = median(21, || {
        black_box(compute_compact_count(
            black_box(&h),
            CompactSource::Manual,
            &split,
        ));
    });
    let reduce = median(21, || {
        black_box(reduce_compact_on_overflow(black_box(&h), &split));
    });
    let begin = median(21, || {
        let mut service = CompactionService::new(config);
        let started = service.begin(BeginInput {
            trigger: Trigger::Auto { turn_id: Some(1) },
            history: &h,
            loop_idle: true,
            max_tokens: 256_000,
            request_overhead_tokens: 8_000,
            profile_max_output: None,
        });
        if let Ok((_, mut round)) = started {
            black_box(round.first_request());
        }
    });
    println!("compute_compact_count auto   10000 messages: {auto}");
    println!("compute_compact_count manual 10000 messages: {manual}");
    println!("reduce_compact_on_overflow   10000 messages: {reduce}");
    println!("service.begin + first request 10000 messages: {begin}");
}
