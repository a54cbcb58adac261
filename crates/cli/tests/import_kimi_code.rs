//! `kimi-rs import` against a home really written by Kimi Code 2.1.0: the reference runs a
//! prompt with a tool call against the scripted server, kimi-rs imports its home, and
//! `kimi-rs -S <that id> -p …` resumes the session with the old prompt and tool result, the
//! imported skill and the imported provider. `.ci/run` installs Kimi Code and sets
//! `KIMI_CODE_BIN`; without it the test fails unless `KIMI_RS_SKIP_KIMI_CODE_TESTS=1`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // helpers outside #[test] fns count as tests here

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{BIN, Run, wait_child};
use kimi_llm::ProviderType;
use kimi_llm::scripted::ScriptTurn;
use kimi_test_support::ScriptServer;
use serde_json::Value;

/// Where `.ci/run` installs Kimi Code when `KIMI_CODE_BIN` is not set.
fn ci_default() -> Option<PathBuf> {
    let home = std::env::var_os("HOME")?;
    let path = PathBuf::from(home).join(".cache/kimi-rs-ci/kimi-code-2.1.0/kimi-code");
    path.is_file().then_some(path)
}

/// The Kimi Code launcher, or `None` when the test is told to skip.
fn kimi_code_bin() -> Option<PathBuf> {
    if std::env::var("KIMI_RS_SKIP_KIMI_CODE_TESTS").is_ok_and(|v| v == "1") {
        eprintln!("skipped: KIMI_RS_SKIP_KIMI_CODE_TESTS=1 (needs Kimi Code 2.1.0)");
        return None;
    }
    let bin = std::env::var_os("KIMI_CODE_BIN")
        .map(PathBuf::from)
        .or_else(ci_default);
    let Some(bin) = bin.filter(|b| b.is_file()) else {
        panic!(
            "Kimi Code 2.1.0 is needed to write the home this test imports: run `.ci/run` (it \
             installs it from npm into ~/.cache/kimi-rs-ci/kimi-code-2.1.0) or set KIMI_CODE_BIN \
             to a `kimi` 2.1.0 launcher; set KIMI_RS_SKIP_KIMI_CODE_TESTS=1 to skip"
        );
    };
    let version = Command::new(&bin).arg("--version").output();
    let version = version
        .as_ref()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    assert_eq!(
        version.as_deref().ok(),
        Some("2.1.0"),
        "KIMI_CODE_BIN={} does not report version 2.1.0 ({version:?}); reinstall it with .ci/run",
        bin.display()
    );
    Some(bin)
}

struct Homes {
    kimi_code: tempfile::TempDir,
    kimi_rs: tempfile::TempDir,
    user: tempfile::TempDir,
    project: tempfile::TempDir,
}

impl Homes {
    fn new() -> Homes {
        Homes {
            kimi_code: tempfile::tempdir().unwrap(),
            kimi_rs: tempfile::tempdir().unwrap(),
            user: tempfile::tempdir().unwrap(),
            project: tempfile::tempdir().unwrap(),
        }
    }

    fn project(&self) -> PathBuf {
        std::fs::canonicalize(self.project.path()).unwrap()
    }

    /// kimi-rs with these homes and no model variables: the model comes from config.toml.
    fn kimi_rs(&self, rs_home: &Path, args: &[&str]) -> Run {
        let child = Command::new(BIN)
            .args(args)
            .current_dir(self.project())
            .env("KIMI_RS_HOME", rs_home)
            .env("HOME", self.user.path())
            .env_remove("KIMI_CODE_HOME")
            .env_remove("KIMI_MODEL_NAME")
            .env_remove("KIMI_MODEL_API_KEY")
            .env_remove("KIMI_MODEL_BASE_URL")
            .env_remove("KIMI_MODEL_PROVIDER_TYPE")
            .env("NO_PROXY", "127.0.0.1,localhost")
            .env("no_proxy", "127.0.0.1,localhost")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_child(child)
    }
}

/// A Kimi Code home with a provider pointing at `base_url`, a permission rule, a hook and a
/// skill, in which Kimi Code itself then records a session.
fn write_kimi_code_home(home: &Path, base_url: &str) {
    std::fs::write(
        home.join("config.toml"),
        format!(
            r#"default_model = "scripted"

[providers.loop]
type = "openai"
base_url = "{base_url}"
api_key = "sk-kimi-code-key"

[models.scripted]
provider = "loop"
model = "scripted-model"
max_context_size = 100000

[[permission.rules]]
decision = "deny"
pattern = "Bash(rm -rf *)"

[[hooks]]
event = "Stop"
command = "true"
"#
        ),
    )
    .unwrap();
    let skill = home.join("skills/greet");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: greet\ndescription: Greets the user warmly.\n---\nSay hello.\n",
    )
    .unwrap();
    std::fs::create_dir_all(home.join("themes")).unwrap();
    std::fs::write(
        home.join("themes/ocean.json"),
        r##"{"name":"ocean","base":"dark","colors":{"primary":"#1e90ff"}}"##,
    )
    .unwrap();
}

/// Run Kimi Code in print mode; returns the id of the session it recorded.
fn run_kimi_code(bin: &Path, homes: &Homes) -> String {
    let child = Command::new(bin)
        .args(["-p", "run echo please"])
        .current_dir(homes.project())
        .env("KIMI_CODE_HOME", homes.kimi_code.path())
        .env("HOME", homes.user.path())
        .env("KIMI_DISABLE_TELEMETRY", "1")
        .env("KIMI_CODE_NO_AUTO_UPDATE", "1")
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env("no_proxy", "127.0.0.1,localhost")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Node starts slowly on a loaded machine: a longer bound than kimi-rs's runs get.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let run = Run::from(
        rx.recv_timeout(std::time::Duration::from_secs(180))
            .expect("Kimi Code did not exit within 180 s")
            .unwrap(),
    );
    assert_eq!(run.code, Some(0), "Kimi Code failed: {run:?}");
    assert!(run.stdout.contains("tool-output-42"), "{run:?}");
    let index =
        std::fs::read_to_string(homes.kimi_code.path().join("session_index.jsonl")).unwrap();
    let entry: Value = serde_json::from_str(index.lines().next().unwrap()).unwrap();
    let id = entry["sessionId"].as_str().unwrap().to_owned();
    assert!(id.starts_with("session_"), "{id}");
    id
}

fn texts(message: &Value) -> String {
    match &message["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

#[test]
fn a_kimi_code_home_imports_once_and_its_session_resumes() {
    let Some(bin) = kimi_code_bin() else { return };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = rt
        .block_on(ScriptServer::start(vec![
            ScriptTurn::tool_calls(&[("call_1", "Bash", r#"{"command":"echo tool-output-42"}"#)]),
            ScriptTurn::text("The command printed tool-output-42."),
        ]))
        .unwrap();
    let base_url = server
        .model(ProviderType::OpenAi, "scripted-model")
        .base_url;
    let homes = Homes::new();
    write_kimi_code_home(homes.kimi_code.path(), &base_url);
    let id = run_kimi_code(&bin, &homes);
    let kimi_code_requests = server.requests().len();
    assert_eq!(kimi_code_requests, 2, "Kimi Code's tool call and answer");

    let from = homes.kimi_code.path().to_str().unwrap().to_owned();
    let rs_home = homes.kimi_rs.path();
    let first = homes.kimi_rs(rs_home, &["import", "--from", &from, "--with-credentials"]);
    assert_eq!(first.code, Some(0), "{first:?}");
    assert!(
        first.stdout.contains(&format!("imported session {id}")),
        "{first:?}"
    );
    assert!(first.stdout.contains("imported skills/greet"), "{first:?}");
    assert!(first.stdout.contains("imported config.toml"), "{first:?}");
    let config = std::fs::read_to_string(rs_home.join("config.toml")).unwrap();
    assert!(config.contains("sk-kimi-code-key"), "asked for: {config}");
    assert!(
        config.contains("Bash(rm -rf *)") && config.contains("[[hooks]]"),
        "{config}"
    );
    let index = std::fs::read_to_string(rs_home.join("session_index.jsonl")).unwrap();

    // A second import duplicates nothing and says so.
    let second = homes.kimi_rs(rs_home, &["import", "--from", &from, "--with-credentials"]);
    assert_eq!(second.code, Some(0), "{second:?}");
    assert!(!second.stdout.contains("imported "), "{second:?}");
    assert!(
        second
            .stdout
            .contains(&format!("skipped  session {id}: already in kimi-rs")),
        "{second:?}"
    );
    assert!(
        second
            .stdout
            .contains("skipped  skills/greet: already there"),
        "{second:?}"
    );
    assert_eq!(
        std::fs::read_to_string(rs_home.join("config.toml")).unwrap(),
        config
    );
    assert_eq!(
        std::fs::read_to_string(rs_home.join("session_index.jsonl")).unwrap(),
        index
    );

    // Resumed by kimi-rs in the same directory, with the imported provider and skill.
    server.push(ScriptTurn::text("It printed tool-output-42."));
    let resumed = homes.kimi_rs(rs_home, &["-S", &id, "-p", "what did it print?"]);
    assert_eq!(resumed.code, Some(0), "{resumed:?}");
    assert!(
        resumed.stdout.contains("It printed tool-output-42."),
        "{resumed:?}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), kimi_code_requests + 1);
    let request = requests.last().unwrap();
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(
        request.header("authorization"),
        Some("Bearer sk-kimi-code-key"),
        "the imported provider's key"
    );
    assert_eq!(request.body["model"], "scripted-model");
    let messages = request.body["messages"].as_array().unwrap();
    let system = texts(&messages[0]);
    let skill_path = rs_home.join("skills/greet/SKILL.md");
    assert!(
        rs_home.join("themes/ocean.json").is_file(),
        "custom themes come along"
    );
    assert!(
        system.contains("greet: Greets the user warmly.")
            && system.contains(&skill_path.display().to_string()),
        "kimi-rs's own prompt lists the imported skill: {system}"
    );
    assert!(!system.contains("Kimi Code CLI"), "not Kimi Code's prompt");
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    let user_texts: Vec<String> = messages
        .iter()
        .filter(|m| m["role"] == "user")
        .map(texts)
        .collect();
    assert_eq!(
        user_texts.first().map(String::as_str),
        Some("run echo please")
    );
    assert_eq!(
        user_texts.last().map(String::as_str),
        Some("what did it print?")
    );
    let call = messages
        .iter()
        .find(|m| m["role"] == "assistant" && m["tool_calls"].is_array())
        .unwrap_or_else(|| panic!("the old tool call: {roles:?}"));
    assert_eq!(call["tool_calls"][0]["id"], "call_1");
    assert_eq!(call["tool_calls"][0]["function"]["name"], "Bash");
    let result = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap_or_else(|| panic!("the old tool result: {roles:?}"));
    assert_eq!(result["tool_call_id"], "call_1");
    assert!(texts(result).contains("tool-output-42"), "{result}");
    assert!(
        messages
            .iter()
            .any(|m| m["role"] == "assistant" && texts(m) == "The command printed tool-output-42."),
        "the old answer: {roles:?}"
    );

    // Without --with-credentials the key stays behind and the report says so.
    let bare = tempfile::tempdir().unwrap();
    let plain = homes.kimi_rs(bare.path(), &["import", "--from", &from]);
    assert_eq!(plain.code, Some(0), "{plain:?}");
    assert!(
        plain.stdout.contains("credentials left out")
            && plain.stdout.contains("providers.loop.api_key"),
        "{plain:?}"
    );
    let config = std::fs::read_to_string(bare.path().join("config.toml")).unwrap();
    assert!(!config.contains("sk-kimi-code-key"), "{config}");
    drop(server);
}
