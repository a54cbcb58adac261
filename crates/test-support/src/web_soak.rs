//! Kill -9 soak of `kimi-rs web`: the real server runs a session whose scripted task makes
//! Bash calls that ask for approval; the driver sends prompts (queued behind the running turn)
//! and approves calls over REST at random moments, then kills the server with SIGKILL at a
//! random moment. Everything the API acknowledged (HTTP 200 with code 0) must be in the
//! session's journal afterwards — a queued prompt's text, an approval's `interaction.resolved`
//! record — and the session must open again in a restarted server. Counted per trial:
//! acknowledged prompts and answers, those lost (goal 0), sessions that would not reopen.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use kimi_llm::ProviderType;
use kimi_llm::scripted::ScriptTurn;
use serde_json::{Value, json};

use crate::ScriptServer;
use crate::crash_harness::Rng;

/// Steps of one trial's task (each a Bash call that asks for approval).
const STEPS: u64 = 6;
/// Bound on the server's start and on one request.
const LIMIT: Duration = Duration::from_secs(60);

/// Totals over the trials run so far.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct WebFigures {
    pub trials: u64,
    pub prompts_acknowledged: u64,
    pub prompts_lost: u64,
    pub answers_acknowledged: u64,
    pub answers_lost: u64,
    pub reopen_failures: u64,
}

impl std::fmt::Display for WebFigures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "trials {}, prompts acknowledged {}, lost {}, approvals acknowledged {}, lost {}, sessions that did not reopen {}",
            self.trials,
            self.prompts_acknowledged,
            self.prompts_lost,
            self.answers_acknowledged,
            self.answers_lost,
            self.reopen_failures
        )
    }
}

struct Server {
    child: Child,
    port: u16,
    token: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(bin: &Path, env: &[(&str, String)], cwd: &Path) -> Result<Server, String> {
    let mut cmd = Command::new(bin);
    cmd.args(["web", "--port", "0", "--no-open"])
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (key, value) in env {
        cmd.env(key, value);
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("spawn {}: {e}", bin.display()))?;
    let stderr = child.stderr.take().ok_or("no stderr")?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(url) = line.strip_prefix("kimi-rs web: serving on http://127.0.0.1:") {
                let _ = tx.send(url.to_owned());
            }
        }
    });
    let Ok(url) = rx.recv_timeout(LIMIT) else {
        let _ = child.kill();
        let _ = child.wait();
        return Err("kimi-rs web printed no URL".to_owned());
    };
    let (port, token) = url.split_once("/#token=").ok_or("no token in the URL")?;
    Ok(Server {
        child,
        port: port.parse().map_err(|e| format!("port {port}: {e}"))?,
        token: token.to_owned(),
    })
}

impl Server {
    /// One request; the envelope (whatever the status).
    fn call(&self, method: &str, path: &str, body: &Value) -> Result<Value, String> {
        let body = if body.is_null() {
            String::new()
        } else {
            body.to_string()
        };
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).map_err(|e| e.to_string())?;
        stream
            .set_read_timeout(Some(LIMIT))
            .map_err(|e| e.to_string())?;
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            self.port,
            self.token,
            body.len()
        );
        stream
            .write_all(head.as_bytes())
            .and_then(|()| stream.write_all(body.as_bytes()))
            .map_err(|e| e.to_string())?;
        let mut response = String::new();
        stream
            .read_to_string(&mut response)
            .map_err(|e| e.to_string())?;
        let (_, body) = response
            .split_once("\r\n\r\n")
            .ok_or_else(|| format!("no body in {response:?}"))?;
        serde_json::from_str(body).map_err(|e| format!("{e}: {body}"))
    }
}

fn script() -> Vec<ScriptTurn> {
    let mut turns = Vec::new();
    for step in 0..STEPS {
        let args = json!({"command": format!("echo step-{step:02} >> steps.log")}).to_string();
        turns.push(ScriptTurn::tool_calls(&[(
            &format!("call_{step:02}"),
            "Bash",
            &args,
        )]));
    }
    // Answers for the task and for every queued prompt.
    for _ in 0..32 {
        turns.push(ScriptTurn::text("Done."));
    }
    turns
}

/// The text of every `wire.jsonl` under `dir`.
fn journals(dir: &Path) -> String {
    let mut all = String::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            all.push_str(&journals(&path));
        } else if path.file_name().is_some_and(|n| n == "wire.jsonl") {
            all.push_str(&std::fs::read_to_string(&path).unwrap_or_default());
        }
    }
    all
}

/// One trial; adds to `figures`, or says what broke the harness itself.
pub fn run_trial(bin: &Path, seed: u64, figures: &mut WebFigures) -> Result<(), String> {
    let mut rng = Rng::new(seed ^ 0x5EB5);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| format!("runtime: {e}"))?;
    let model_server = rt
        .block_on(ScriptServer::start(script()))
        .map_err(|e| format!("server: {e}"))?;
    let home = tempfile::tempdir().map_err(|e| format!("temp: {e}"))?;
    let work = tempfile::tempdir().map_err(|e| format!("temp: {e}"))?;
    let model = model_server.model(ProviderType::OpenAi, "soak-model");
    let env: Vec<(&str, String)> = vec![
        ("KIMI_RS_HOME", home.path().display().to_string()),
        ("HOME", home.path().display().to_string()),
        ("KIMI_MODEL_NAME", "soak-model".to_owned()),
        ("KIMI_MODEL_API_KEY", "sk-soak".to_owned()),
        ("KIMI_MODEL_PROVIDER_TYPE", "openai".to_owned()),
        ("KIMI_MODEL_BASE_URL", model.base_url),
        ("NO_PROXY", "127.0.0.1,localhost".to_owned()),
        ("no_proxy", "127.0.0.1,localhost".to_owned()),
    ];
    let server = start(bin, &env, work.path())?;
    let created = server.call(
        "POST",
        "/api/v1/sessions",
        &json!({"metadata": {"cwd": work.path()}}),
    )?;
    let session = created["data"]["id"]
        .as_str()
        .ok_or_else(|| format!("no session id in {created}"))?
        .to_owned();
    let prompt = |text: &str| -> Result<bool, String> {
        let sent = server.call(
            "POST",
            &format!("/api/v1/sessions/{session}/prompts"),
            &json!({"content": [{"type": "text", "text": text}]}),
        )?;
        Ok(sent["code"] == 0)
    };
    let mut prompts: Vec<String> = Vec::new();
    let mut answers: Vec<String> = Vec::new();
    let first = format!("soak-{seed}: run the steps");
    if prompt(&first)? {
        prompts.push(first);
    }
    let actions = 1 + rng.below(12);
    for action in 0..actions {
        if rng.below(3) == 0 {
            let text = format!("soak-{seed}: queued note {action}");
            if prompt(&text)? {
                prompts.push(text);
            }
        } else {
            let pending = server.call(
                "GET",
                &format!("/api/v1/sessions/{session}/approvals?status=pending"),
                &Value::Null,
            )?;
            let ids: Vec<String> = pending["data"]["items"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|i| i["approval_id"].as_str().map(str::to_owned))
                .collect();
            for id in ids {
                let resolved = server.call(
                    "POST",
                    &format!("/api/v1/sessions/{session}/approvals/{id}"),
                    &json!({"decision": "approved"}),
                )?;
                if resolved["code"] == 0 {
                    answers.push(id);
                }
            }
        }
        // The random pacing and kill moment are the point of the soak, not synchronisation.
        std::thread::sleep(Duration::from_millis(rng.below(30)));
    }
    std::thread::sleep(Duration::from_micros(rng.below(20_000)));
    drop(server); // SIGKILL

    let journal = journals(home.path());
    figures.trials += 1;
    figures.prompts_acknowledged += prompts.len() as u64;
    figures.prompts_lost += prompts.iter().filter(|p| !journal.contains(*p)).count() as u64;
    figures.answers_acknowledged += answers.len() as u64;
    let resolved: Vec<&str> = journal
        .lines()
        .filter(|l| l.contains("\"interaction.resolved\""))
        .collect();
    figures.answers_lost += answers
        .iter()
        .filter(|id| !resolved.iter().any(|l| l.contains(id.as_str())))
        .count() as u64;

    // A restarted server opens the session again.
    let again = start(bin, &env, work.path())?;
    let messages = again.call(
        "GET",
        &format!("/api/v1/sessions/{session}/messages"),
        &Value::Null,
    )?;
    if messages["code"] != 0 {
        figures.reopen_failures += 1;
        eprintln!("session {session} did not reopen: {messages}");
    }
    Ok(())
}
