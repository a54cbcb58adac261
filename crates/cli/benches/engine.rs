//! Engine benchmark (issue 5): a scripted 40-step task whose tool outputs are ~4 KB each, run
//! in process through `open_session` against the loopback `ScriptServer` (real HTTP), and the
//! same task through the real `kimi-rs -p` binary. Prints wall time, per-step harness overhead
//! (end of one model response → the next request leaving the engine), how it moves from steps
//! 1–10 to 31–40, peak RSS, the time to resume a 10,000-record journal, and `kimi-rs --version`.
//!
//! `steps1000` (only when named) runs 1,000 small steps and prints the per-step overhead by
//! hundreds of steps.
//!
//! Run: `cargo bench -p kimi-cli --bench engine [steps] [binary] [resume] [version] [steps1000]`
//! (no names: all but steps1000).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use kimi_cli::run::ModelChoice;
use kimi_core::engine::log::AgentLog;
use kimi_core::engine::records as rec;
use kimi_core::session::{Resume, SessionSetup, open_session};
use kimi_llm::scripted::ScriptTurn;
use kimi_llm::{ChatRequest, DeltaStream, LlmError, ModelParams, Provider, ProviderType};
use kimi_protocol::loop_event::ToolOutput;
use kimi_protocol::ops::{Event, Op, TurnEndReason};
use kimi_protocol::record::PromptKind;
use kimi_protocol::{ContentPart, Message, Origin, Role, ToolCall};
use kimi_store::{FsyncPolicy, JournalOptions, MAIN_AGENT};
use kimi_test_support::ScriptServer;

const BIN: &str = env!("CARGO_BIN_EXE_kimi-rs");
const STEPS: usize = 40;
const RECORDS: usize = 10_000;

/// Timestamps of each `stream()` call and of the end of each response stream.
#[derive(Default)]
struct Marks {
    starts: Vec<Instant>,
    ends: Vec<Instant>,
}

struct TimedProvider {
    inner: Arc<dyn Provider>,
    marks: Arc<Mutex<Marks>>,
}

#[async_trait::async_trait]
impl Provider for TimedProvider {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn model(&self) -> &str {
        self.inner.model()
    }
    async fn stream(&self, request: ChatRequest) -> Result<DeltaStream, LlmError> {
        self.marks.lock().unwrap().starts.push(Instant::now());
        let inner = self.inner.stream(request).await?;
        let marks = Arc::clone(&self.marks);
        let timed = futures::stream::unfold(Some((inner, marks)), |state| async move {
            let (mut inner, marks) = state?;
            match inner.next().await {
                Some(item) => Some((item, Some((inner, marks)))),
                None => {
                    marks.lock().unwrap().ends.push(Instant::now());
                    None
                }
            }
        });
        Ok(Box::pin(timed))
    }
}

/// The task's shape: how many Read steps, and lines per file read (64 lines ≈ 4 KB).
#[derive(Clone, Copy)]
struct Task {
    steps: usize,
    lines: usize,
}

const TASK: Task = Task {
    steps: STEPS,
    lines: 64,
};
/// The long run: 1,000 steps of small reads (the context stays within the window, so what
/// grows is the history, not the compaction work).
const LONG_TASK: Task = Task {
    steps: 1_000,
    lines: 2,
};

fn script(task: Task) -> Vec<ScriptTurn> {
    let mut turns: Vec<ScriptTurn> = (0..task.steps)
        .map(|i| {
            let args = format!(r#"{{"path":"src/file_{i:04}.txt"}}"#);
            ScriptTurn::tool_calls(&[(&format!("call_{i:04}"), "Read", &args)])
        })
        .collect();
    turns.push(ScriptTurn::text("Read all the files."));
    turns
}

/// `task.steps` files of `task.lines` lines (Read numbers the lines, so the output is a little
/// larger).
fn write_project(dir: &Path, task: Task) {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    for i in 0..task.steps {
        let body: String = (0..task.lines)
            .map(|line| format!("{i:04}:{line:02} the quick brown fox jumps over the lazy dog\n"))
            .collect();
        std::fs::write(dir.join(format!("src/file_{i:04}.txt")), body).unwrap();
    }
}

/// Print mode's session setup (fsync every batch, approve-all permissions).
fn session_setup(
    home: std::path::PathBuf,
    cwd: std::path::PathBuf,
    resume: Resume,
    model: ModelChoice,
) -> SessionSetup {
    kimi_cli::run::setup(
        home,
        cwd,
        resume,
        model,
        Vec::new(),
        None,
        &Default::default(),
    )
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn stats(values: &[f64]) -> String {
    if values.is_empty() {
        return "n/a".to_owned();
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mean = sorted.iter().sum::<f64>() / sorted.len() as f64;
    format!(
        "mean {mean:.2} ms, median {:.2} ms, min {:.2} ms, max {:.2} ms",
        sorted[sorted.len() / 2],
        sorted[0],
        sorted[sorted.len() - 1]
    )
}

fn vm_hwm_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

async fn in_process(rt_note: &str, task: Task) {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let cwd = std::fs::canonicalize(work.path()).unwrap();
    write_project(&cwd, task);
    let server = ScriptServer::start(script(task)).await.unwrap();
    if task.steps != STEPS {
        // 1,000 recorded bodies of up to 400 KB, parsed, would be the bench's own 1.7 GB.
        server.keep_bodies_of_last(2);
    }
    let model = server.model(ProviderType::OpenAi, "scripted-model");
    let marks = Arc::new(Mutex::new(Marks::default()));
    let provider: Arc<dyn Provider> = Arc::new(TimedProvider {
        inner: kimi_llm::build_provider(&model).unwrap(),
        marks: Arc::clone(&marks),
    });
    let choice = ModelChoice {
        alias: model.alias.clone(),
        provider,
        params: ModelParams::default(),
        max_context_tokens: model.max_context_size,
    };

    let started = Instant::now();
    let mut opened = open_session(session_setup(
        home.path().to_owned(),
        cwd.clone(),
        Resume::New,
        choice,
    ))
    .unwrap();
    let opened_at = Instant::now();
    opened.agent.handle.send(Op::Submit {
        input: vec![ContentPart::text(
            "Read every file under src/, one per step.",
        )],
        origin: None,
        prompt_id: None,
    });
    let mut steps = 0;
    loop {
        let event = tokio::time::timeout(Duration::from_secs(600), opened.agent.events.recv())
            .await
            .expect("the turn stalled")
            .expect("the agent stopped");
        match event {
            Event::StepStarted { step, .. } => steps = step,
            Event::TurnEnded { reason, error, .. } => {
                assert_eq!(reason, TurnEndReason::Completed, "{error:?}");
                break;
            }
            _ => {}
        }
    }
    let wall = started.elapsed();
    opened.agent.handle.send(Op::Shutdown);
    let _ = opened.agent.join.await;
    let hwm = vm_hwm_kb();

    let marks = marks.lock().unwrap();
    let first_request = marks.starts[0] - started;
    // gap i = request i+1 leaves the engine − response i ended (i = 1..=40)
    let gaps: Vec<f64> = marks
        .ends
        .iter()
        .zip(marks.starts.iter().skip(1))
        .map(|(end, next)| ms(*next - *end))
        .collect();
    let requests = server.requests();
    let last_body = requests.last().map_or(0, |r| r.raw_body.len());
    if task.steps != STEPS {
        long_report(task, &gaps, wall, requests.len(), last_body, hwm);
        return;
    }
    println!(
        "== in-process: {STEPS}-step scripted task, ~4 KB Read output per step, OpenAI wire format over loopback HTTP ({rt_note})"
    );
    println!(
        "  steps run                          {steps} ({} requests)",
        requests.len()
    );
    println!("  wall time (open_session → turn end) {:.1} ms", ms(wall));
    println!(
        "  open_session                        {:.2} ms",
        ms(opened_at - started)
    );
    println!(
        "  first model request after start     {:.2} ms",
        ms(first_request)
    );
    println!("  per-step harness overhead, all      {}", stats(&gaps));
    println!(
        "  per-step overhead, steps 1-10       {}",
        stats(&gaps[..10])
    );
    println!(
        "  per-step overhead, steps 31-40      {}",
        stats(&gaps[30..40])
    );
    println!("  overhead after step 40              {:.2} ms", gaps[39]);
    println!(
        "  last request body                   {:.1} KB",
        last_body as f64 / 1024.0
    );
    match hwm {
        Some(kb) => println!(
            "  peak RSS (VmHWM, bench process incl. the in-process server) {:.1} MB",
            kb as f64 / 1024.0
        ),
        None => println!("  peak RSS                            n/a (no /proc/self/status)"),
    }
}

/// The long run's figures: per-step overhead by hundreds of steps, to show whether it stays
/// flat as the history grows.
fn long_report(
    task: Task,
    gaps: &[f64],
    wall: Duration,
    requests: usize,
    last_body: usize,
    hwm: Option<u64>,
) {
    println!(
        "== in-process: {}-step scripted task, ~{} B Read output per step (per-step cost as the history grows)",
        task.steps,
        task.lines * 60
    );
    println!(
        "  wall time                           {:.1} s ({requests} requests)",
        wall.as_secs_f64()
    );
    for (i, chunk) in gaps.chunks(100).enumerate() {
        println!(
            "  per-step overhead, steps {:>4}-{:<4}  {}",
            i * 100 + 1,
            i * 100 + chunk.len(),
            stats(chunk)
        );
    }
    println!(
        "  last request body                   {:.1} KB",
        last_body as f64 / 1024.0
    );
    if let Some(kb) = hwm {
        println!(
            "  peak RSS (VmHWM, bench process incl. the in-process server) {:.1} MB",
            kb as f64 / 1024.0
        );
    }
}

/// The same task through the real binary; wall time and (via /usr/bin/time) its peak RSS.
async fn binary_run() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let cwd = std::fs::canonicalize(work.path()).unwrap();
    write_project(&cwd, TASK);
    let server = ScriptServer::start(script(TASK)).await.unwrap();
    let model = server.model(ProviderType::OpenAi, "scripted-model");
    let gnu_time = Path::new("/usr/bin/time").exists();
    let mut cmd = if gnu_time {
        let mut c = Command::new("/usr/bin/time");
        c.args(["-f", "MAXRSS_KB=%M", BIN]);
        c
    } else {
        Command::new(BIN)
    };
    cmd.args(["-p", "Read every file under src/, one per step."])
        .current_dir(&cwd)
        .env("KIMI_RS_HOME", home.path())
        .env("HOME", home.path())
        .env("KIMI_MODEL_NAME", "scripted-model")
        .env("KIMI_MODEL_API_KEY", "sk-bench")
        .env("KIMI_MODEL_PROVIDER_TYPE", "openai")
        .env("KIMI_MODEL_BASE_URL", &model.base_url)
        .env("NO_PROXY", "127.0.0.1,localhost")
        .stdin(Stdio::null());
    let started = Instant::now();
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    let wall = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "kimi-rs -p failed: {stderr}");
    println!("== real binary: `kimi-rs -p` on the same {STEPS}-step script");
    println!(
        "  wall time (spawn → exit)            {:.1} ms ({} requests)",
        ms(wall),
        server.requests().len()
    );
    match stderr
        .lines()
        .find_map(|l| l.strip_prefix("MAXRSS_KB="))
        .and_then(|v| v.trim().parse::<u64>().ok())
    {
        Some(kb) => println!(
            "  peak RSS of kimi-rs (/usr/bin/time) {:.1} MB",
            kb as f64 / 1024.0
        ),
        None => println!("  peak RSS of kimi-rs                 n/a (/usr/bin/time missing)"),
    }
}

/// A session whose journal holds ~10,000 records: created through `open_session`, filled with
/// realistic turns (a prompt, ten Read steps of ~1 KB, an answer), then resumed.
async fn resume_bench() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let cwd = std::fs::canonicalize(work.path()).unwrap();
    let server = ScriptServer::start(Vec::new()).await.unwrap();
    let model = server.model(ProviderType::OpenAi, "scripted-model");
    let choice = || ModelChoice {
        alias: model.alias.clone(),
        provider: kimi_llm::build_provider(&model).unwrap(),
        params: ModelParams::default(),
        max_context_tokens: model.max_context_size,
    };
    let opened = open_session(session_setup(
        home.path().to_owned(),
        cwd.clone(),
        Resume::New,
        choice(),
    ))
    .unwrap();
    let session_id = opened.session.state.id.clone();
    let journal = opened
        .agent
        .handle
        .runtime()
        .log()
        .journal_path()
        .to_owned();
    opened.agent.handle.send(Op::Shutdown);
    let join = opened.agent.join;
    let _ = join.await;
    drop(opened.agent.handle);
    drop(opened.agent.events);

    let output: String = (0..16)
        .map(|l| format!("{l:04}\tsome file contents that a Read returned, about sixty bytes\n"))
        .collect();
    {
        let options = JournalOptions {
            fsync: FsyncPolicy::Never,
        };
        let (mut log, _) = AgentLog::open(&journal, MAIN_AGENT, options).unwrap();
        let mut written = 0usize;
        let mut turn: u64 = 0;
        while written < RECORDS {
            let prompt_id = format!("msg_{turn}");
            let input = vec![ContentPart::text(format!("prompt number {turn}"))];
            let mut user = Message::new(Role::User, input.clone());
            user.origin = Some(Origin::user());
            user.id = Some(prompt_id.clone());
            let mut batch = vec![
                rec::turn_prompt(&input, &Origin::user(), &prompt_id, turn),
                rec::message(user),
            ];
            for step in 1..=10u32 {
                let uuid = format!("step_{turn}_{step}");
                let id = format!("call_{turn}_{step}");
                let call = ToolCall::new(&id, "Read", Some(r#"{"path":"a.txt"}"#.to_owned()));
                let args = serde_json::json!({"path": "a.txt"});
                batch.push(rec::step_begin(&uuid, turn, step));
                batch.push(rec::tool_call(&uuid, turn, step, &call, &args));
                batch.push(rec::tool_result(
                    &id,
                    ToolOutput::Text(output.clone()),
                    false,
                    None,
                ));
                batch.push(rec::step_end(&uuid, "tool_use", None));
            }
            let uuid = format!("step_{turn}_final");
            batch.push(rec::step_begin(&uuid, turn, 11));
            batch.push(rec::content_part(
                &uuid,
                turn,
                11,
                ContentPart::text(format!("answer {turn}")),
            ));
            batch.push(rec::step_end(&uuid, "end_turn", None));
            batch.push(rec::turn_ended(turn, TurnEndReason::Completed, None, 10));
            batch.push(rec::prompt(
                PromptKind::Completed,
                &prompt_id,
                Some(TurnEndReason::Completed),
            ));
            written += batch.len();
            log.commit(batch).unwrap();
            turn += 1;
        }
    }
    let lines = std::fs::read_to_string(&journal).unwrap().lines().count();
    let bytes = std::fs::metadata(&journal).unwrap().len();

    let mut open_times = Vec::new();
    let mut messages = 0;
    for _ in 0..5 {
        let t = Instant::now();
        let (log, _) = AgentLog::open(&journal, MAIN_AGENT, JournalOptions::default()).unwrap();
        open_times.push(ms(t.elapsed()));
        messages = log.history().len();
    }
    // Where the replay time goes: reading and decoding the file vs. folding it into history,
    // and what the general path (JSON tree first, then typed records) would take.
    let mut read_times = Vec::new();
    let mut fold_times = Vec::new();
    let mut general_times = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let (journal_file, read) =
            kimi_store::Journal::open_replay(&journal, JournalOptions::default(), MAIN_AGENT)
                .unwrap();
        read_times.push(ms(t.elapsed()));
        let t = Instant::now();
        let mut history =
            kimi_context::history::History::new(kimi_context::history::HistoryConfig::default());
        history.replay(read.input.into_undoable(), MAIN_AGENT);
        fold_times.push(ms(t.elapsed()));
        drop(journal_file);
        let t = Instant::now();
        let (journal_file, read) =
            kimi_store::Journal::open(&journal, JournalOptions::default()).unwrap();
        let input = kimi_store::replay_input_owned(read.entries, MAIN_AGENT).unwrap();
        general_times.push(ms(t.elapsed()));
        drop((journal_file, input));
    }
    let mut session_times = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let opened = open_session(session_setup(
            home.path().to_owned(),
            cwd.clone(),
            Resume::Id(session_id.clone()),
            choice(),
        ))
        .unwrap();
        session_times.push(ms(t.elapsed()));
        opened.agent.handle.send(Op::Shutdown);
        let _ = opened.agent.join.await;
    }
    println!(
        "== resume: journal of {lines} lines ({:.1} MB), history of {messages} messages",
        bytes as f64 / 1_048_576.0
    );
    println!(
        "  AgentLog::open (replay)             {}",
        stats(&open_times)
    );
    println!(
        "  of which Journal::open_replay       {}",
        stats(&read_times)
    );
    println!(
        "  of which History fold               {}",
        stats(&fold_times)
    );
    println!(
        "  general path open+replay_input      {} (JSON tree first; for comparison)",
        stats(&general_times)
    );
    println!(
        "  open_session(Resume::Id) total      {}",
        stats(&session_times)
    );
}

fn version_bench() {
    let mut times = Vec::new();
    for _ in 0..20 {
        let t = Instant::now();
        let out = Command::new(BIN)
            .arg("--version")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        times.push(ms(t.elapsed()));
        assert!(out.status.success());
    }
    println!("== `kimi-rs --version`, 20 spawns");
    println!("  {}", stats(&times));
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs the target too: keep that quick.
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    println!(
        "kimi-rs engine benchmark ({} cores visible)",
        std::thread::available_parallelism().map_or(0, usize::from)
    );
    // `cargo bench -p kimi-cli --bench engine -- resume` runs only the sections named.
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let wanted = |name: &str| only.is_empty() || only.iter().any(|o| o == name);
    if wanted("steps") {
        rt.block_on(in_process(
            "engine, server and bench share one 2-thread tokio runtime",
            TASK,
        ));
    }
    // Not part of the default run (it takes minutes): `-- steps1000`.
    if only.iter().any(|o| o == "steps1000") {
        rt.block_on(in_process("", LONG_TASK));
    }
    if wanted("binary") {
        rt.block_on(binary_run());
    }
    if wanted("resume") {
        rt.block_on(resume_bench());
    }
    if wanted("version") {
        version_bench();
    }
}
