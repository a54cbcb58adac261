//! Kill -9 soak of the whole engine: the real `kimi-rs -p --output-format stream-json` runs a
//! scripted task (answers that stream with pauses, tool calls that take a while) and is killed
//! with SIGKILL at random moments — mid-stream, mid-tool, mid-append — then continued with
//! `kimi-rs -c` until the task finishes. Counted per trial: tool results the user was shown
//! before a kill (acknowledged) that the resumed conversation no longer has (lost: goal 0),
//! requests whose tool calls and results do not pair, and side effects that ran twice.
//!
//! In the compaction variant ([`Variant::Compaction`]) the tool outputs are larger and the
//! model's window small, so automatic compaction runs between steps and kills land mid-
//! compaction too; a result compacted away is then looked for in the journal, which keeps it.
//!
//! Used by `kimi-engine-soak` (`cargo run --release -p kimi-test-support --bin
//! kimi-engine-soak -- <kimi-rs binary> [trials]`), by `kimi-soak` and by a short CI test in
//! kimi-cli.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use kimi_llm::FinishReason;
use kimi_llm::ProviderType;
use kimi_llm::scripted::{ScriptEvent, ScriptTurn};
use serde_json::Value;

use crate::ScriptServer;
use crate::crash_harness::Rng;

/// Steps of one trial's task.
const STEPS: u64 = 12;
/// Kills per trial at most (each followed by `-c`).
const MAX_KILLS: u64 = 3;
/// Bound on one run of the binary.
const RUN_LIMIT: Duration = Duration::from_secs(60);

/// What a trial's task looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// Small outputs in a large window: kills land mid-stream, mid-tool and mid-append.
    Plain,
    /// ~2 KB outputs in a 6,000-token window: compaction runs between steps, and kills land
    /// mid-compaction as well.
    Compaction,
}

/// Marks the summary requests of compaction (its instruction's opening words).
const COMPACTION_MARKER: &str = "is about to be compacted";

/// Totals over the trials run so far.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct EngineFigures {
    pub trials: u64,
    pub kills: u64,
    pub results_acknowledged: u64,
    pub results_lost: u64,
    pub pairing_violations: u64,
    pub duplicated_side_effects: u64,
    pub unfinished: u64,
    /// Compaction (summary) requests made (compaction variant).
    pub compactions: u64,
}

impl std::fmt::Display for EngineFigures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "trials {}, kills {}, tool results acknowledged {}, lost {}, unpaired requests {}, \
             side effects run twice {}, unfinished tasks {}, compactions {}",
            self.trials,
            self.kills,
            self.results_acknowledged,
            self.results_lost,
            self.pairing_violations,
            self.duplicated_side_effects,
            self.unfinished,
            self.compactions
        )
    }
}

fn script(rng: &mut Rng, variant: Variant) -> Vec<ScriptTurn> {
    let mut turns = Vec::new();
    for step in 0..STEPS {
        let slow = if rng.below(3) == 0 {
            "sleep 0.05; "
        } else {
            ""
        };
        // ~2 KB of output per step fills the small window within a few steps.
        let bulk = match variant {
            Variant::Plain => "",
            Variant::Compaction => "seq 100000 100400; ",
        };
        let args = serde_json::json!({
            "command": format!("{slow}{bulk}echo step-{step:02} >> steps.log")
        })
        .to_string();
        let mut events = vec![
            ScriptEvent::Text {
                text: format!("Working on step {step}. "),
            },
            ScriptEvent::Delay { ms: rng.below(40) },
        ];
        events.extend(ScriptEvent::tool_call(
            0,
            &format!("call_{step:02}"),
            "Bash",
            &args,
            3,
        ));
        events.push(ScriptEvent::usage(10, 5));
        events.push(ScriptEvent::finish(FinishReason::ToolCalls));
        turns.push(ScriptTurn::reply(events));
    }
    // A kill may swallow the final answer's request too.
    for _ in 0..=MAX_KILLS {
        turns.push(ScriptTurn::text("TASK DONE"));
    }
    turns
}

/// What one run of the binary printed before it ended or was killed.
struct RunOutput {
    lines: Vec<Value>,
    finished_ok: bool,
}

fn run_once(
    bin: &Path,
    args: &[&str],
    env: &[(&str, String)],
    cwd: &Path,
    kill_after_lines: Option<u64>,
    delay: Duration,
) -> Result<RunOutput, String> {
    let mut cmd = Command::new(bin);
    cmd.args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    for (key, value) in env {
        cmd.env(key, value);
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("spawn {}: {e}", bin.display()))?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let (tx, rx) = mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut raw = Vec::new();
    let mut killed = false;
    loop {
        match rx.recv_timeout(RUN_LIMIT) {
            Ok(line) => {
                raw.push(line);
                if kill_after_lines.is_some_and(|n| raw.len() as u64 >= n) {
                    // The random kill moment: this short pause is the point, not a wait.
                    std::thread::sleep(delay);
                    child.kill().map_err(|e| format!("kill: {e}"))?;
                    killed = true;
                    break;
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                return Err(format!(
                    "kimi-rs {args:?} printed nothing for {RUN_LIMIT:?}"
                ));
            }
        }
    }
    // Lines already printed when the kill landed were acknowledged too.
    raw.extend(rx.iter());
    let status = child.wait().map_err(|e| format!("wait: {e}"))?;
    let _ = reader.join();
    let lines = raw
        .iter()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    Ok(RunOutput {
        lines,
        finished_ok: !killed && status.success(),
    })
}

/// `tool_call_id`s of the tool result lines printed.
fn acknowledged(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l["role"] == "tool")
        .filter_map(|l| l["tool_call_id"].as_str().map(str::to_owned))
        .collect()
}

/// One trial of the plain variant; adds to `figures`, or says what broke the harness itself.
pub fn run_trial(bin: &Path, seed: u64, figures: &mut EngineFigures) -> Result<(), String> {
    run_variant(bin, seed, Variant::Plain, figures)
}

/// `tool.result` ids in the journals under `home`.
fn journaled_results(home: &Path) -> String {
    let mut all = String::new();
    for entry in walk(home) {
        if entry.file_name().is_some_and(|n| n == "wire.jsonl") {
            all.push_str(&std::fs::read_to_string(&entry).unwrap_or_default());
        }
    }
    all
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// One trial of `variant`; adds to `figures`, or says what broke the harness itself.
pub fn run_variant(
    bin: &Path,
    seed: u64,
    variant: Variant,
    figures: &mut EngineFigures,
) -> Result<(), String> {
    let mut rng = Rng::new(seed);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| format!("runtime: {e}"))?;
    let server = rt
        .block_on(ScriptServer::start(script(&mut rng, variant)))
        .map_err(|e| format!("server: {e}"))?;
    if variant == Variant::Compaction {
        // Summaries for every compaction, kills that swallow one included.
        for n in 0..3 * STEPS {
            server.push_for(
                COMPACTION_MARKER,
                ScriptTurn::text(format!(
                    "SUMMARY-{n}: I am running the numbered steps one Bash call at a time; the earlier steps are done."
                )),
            );
        }
    }
    let home = tempfile::tempdir().map_err(|e| format!("temp: {e}"))?;
    let work = tempfile::tempdir().map_err(|e| format!("temp: {e}"))?;
    let model = server.model(ProviderType::OpenAi, "soak-model");
    let mut env: Vec<(&str, String)> = vec![
        ("KIMI_RS_HOME", home.path().display().to_string()),
        ("HOME", home.path().display().to_string()),
        ("KIMI_MODEL_NAME", "soak-model".to_owned()),
        ("KIMI_MODEL_API_KEY", "sk-soak".to_owned()),
        ("KIMI_MODEL_PROVIDER_TYPE", "openai".to_owned()),
        ("KIMI_MODEL_BASE_URL", model.base_url),
        ("NO_PROXY", "127.0.0.1,localhost".to_owned()),
        ("no_proxy", "127.0.0.1,localhost".to_owned()),
    ];
    if variant == Variant::Compaction {
        env.push(("KIMI_MODEL_MAX_CONTEXT_SIZE", "6000".to_owned()));
    }
    let kills = 1 + rng.below(MAX_KILLS);
    let mut acked: Vec<String> = Vec::new();
    let mut finished = false;
    for round in 0..=kills {
        let args: &[&str] = if round == 0 {
            &["-p", "Do the steps", "--output-format", "stream-json"]
        } else {
            &["-c", "-p", "continue", "--output-format", "stream-json"]
        };
        let kill_at = (round < kills).then(|| 1 + rng.below(2 * STEPS));
        let delay = Duration::from_micros(rng.below(20_000));
        let out = run_once(bin, args, &env, work.path(), kill_at, delay)?;
        acked.extend(acknowledged(&out.lines));
        if kill_at.is_some() && !out.finished_ok {
            figures.kills += 1;
        }
        if out.finished_ok {
            finished = out
                .lines
                .iter()
                .any(|l| l["role"] == "assistant" && l["content"] == "TASK DONE");
            break;
        }
    }
    figures.trials += 1;
    if !finished {
        figures.unfinished += 1;
    }
    let requests = server.requests();
    let last = requests
        .last()
        .map(|r| r.raw_body.clone())
        .unwrap_or_default();
    figures.results_acknowledged += acked.len() as u64;
    figures.results_lost += match variant {
        Variant::Plain => acked
            .iter()
            .filter(|id| !last.contains(&format!("\"tool_call_id\":\"{id}\"")))
            .count() as u64,
        // Compaction folds old results into a summary: the journal is where they are kept.
        Variant::Compaction => {
            let journal = journaled_results(home.path());
            let results: Vec<&str> = journal
                .lines()
                .filter(|l| l.contains("\"tool.result\""))
                .collect();
            acked
                .iter()
                .filter(|id| {
                    let key = format!("\"toolCallId\":\"{id}\"");
                    !results.iter().any(|l| l.contains(&key))
                })
                .count() as u64
        }
    };
    figures.compactions += requests
        .iter()
        .filter(|r| r.raw_body.contains(COMPACTION_MARKER))
        .count() as u64;
    figures.pairing_violations += server.pairing_violations().len() as u64;
    let log = std::fs::read_to_string(work.path().join("steps.log")).unwrap_or_default();
    let mut lines: Vec<&str> = log.lines().collect();
    let ran = lines.len();
    lines.sort_unstable();
    lines.dedup();
    figures.duplicated_side_effects += (ran - lines.len()) as u64;
    drop(server);
    Ok(())
}
