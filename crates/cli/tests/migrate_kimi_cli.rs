//! `kimi-rs migrate`: a legacy kimi-cli home (`~/.kimi/` with `config.toml`, `kimi.json`,
//! `mcp.json`, `credentials/` and a session's `context.jsonl`, written here in kimi-cli's
//! format) migrates once; a second run changes nothing; the migrated provider answers and
//! `kimi-rs -S <uuid> -p …` resumes the session with its old prompt, tool call and result.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::Command;

use common::{BIN, Fixture, Run, tool_results, user_texts, wait_child};
use kimi_llm::ProviderType;
use kimi_llm::scripted::ScriptTurn;
use md5::{Digest, Md5};

const SESSION: &str = "0d6a8f0e-1b2c-4d5e-8f90-123456789abc";

fn write_legacy_home(kimi: &Path, cwd: &Path, base_url: &str) {
    let bucket: String = Md5::digest(cwd.to_str().unwrap().as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let session = kimi.join("sessions").join(bucket).join(SESSION);
    std::fs::create_dir_all(&session).unwrap();
    std::fs::create_dir_all(kimi.join("credentials")).unwrap();
    std::fs::write(
        kimi.join("credentials/kimi-code.json"),
        r#"{"access_token":"legacy-token"}"#,
    )
    .unwrap();
    std::fs::write(
        kimi.join("config.toml"),
        format!(
            r#"default_model = "legacy"
default_thinking = false
default_yolo = true
theme = "light"

[providers.legacy-openai]
type = "openai_legacy"
base_url = "{base_url}"
api_key = "sk-legacy-key"

[models.legacy]
provider = "legacy-openai"
model = "scripted-model"
max_context_size = 131072

[loop_control]
max_steps_per_run = 40
max_retries_per_step = 3
"#
        ),
    )
    .unwrap();
    std::fs::write(
        kimi.join("kimi.json"),
        serde_json::json!({"work_dirs": [{"path": cwd, "kaos": "local", "last_session_id": SESSION}]})
            .to_string(),
    )
    .unwrap();
    std::fs::write(
        kimi.join("mcp.json"),
        r#"{"mcpServers":{"notes":{"command":"notes-server","args":["--stdio"]}}}"#,
    )
    .unwrap();
    let context = [
        r#"{"role":"_system_prompt","content":"You are Kimi CLI."}"#,
        r#"{"role":"_checkpoint","id":0}"#,
        r#"{"role":"user","content":[{"type":"text","text":"what is in notes.txt?"}]}"#,
        r#"{"role":"assistant","content":[{"type":"text","text":"Let me look."}],"tool_calls":[{"type":"function","id":"call_legacy_1","function":{"name":"ReadFile","arguments":"{\"path\":\"notes.txt\"}"}}]}"#,
        r#"{"role":"tool","content":[{"type":"text","text":"legacy-note-77"}],"tool_call_id":"call_legacy_1"}"#,
        r#"{"role":"_usage","token_count":321}"#,
        r#"{"role":"assistant","content":"It says legacy-note-77."}"#,
    ]
    .join("\n");
    std::fs::write(session.join("context.jsonl"), context + "\n").unwrap();
    std::fs::write(
        session.join("state.json"),
        r#"{"custom_title":"Reading notes","wire_mtime":1700000000.5}"#,
    )
    .unwrap();
}

/// The binary with only the temp homes: no model from the environment.
fn kimi_rs(fixture: &Fixture, args: &[&str]) -> Run {
    let child = Command::new(BIN)
        .args(args)
        .current_dir(fixture.cwd())
        .env("KIMI_RS_HOME", fixture.home.path().join("rs"))
        .env("HOME", fixture.home.path())
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env("no_proxy", "127.0.0.1,localhost")
        .env_remove("KIMI_MODEL_NAME")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_child(child)
}

#[test]
fn a_kimi_cli_home_migrates_once_and_its_session_resumes() {
    let fixture = Fixture::new(
        (ProviderType::OpenAi, "openai"),
        vec![ScriptTurn::text("It still says legacy-note-77.")],
    );
    let base_url = fixture
        .server
        .model(ProviderType::OpenAi, "scripted-model")
        .base_url;
    let kimi = fixture.home.path().join(".kimi");
    write_legacy_home(&kimi, &fixture.cwd(), &base_url);
    let rs_home = fixture.home.path().join("rs");

    // Without --with-credentials the key stays behind and the report says how to copy it.
    let first = kimi_rs(&fixture, &["migrate"]);
    assert_eq!(first.code, Some(0), "{first:?}");
    for expected in [
        &format!("imported session {SESSION}"),
        "imported config.toml",
        "imported mcp.json server notes",
        "imported tui.toml (theme)",
        "skipped  config.toml loop_control.max_retries_per_step",
        "skipped  config.toml default_thinking",
        "kimi-rs migrate --with-credentials",
        "run `kimi-rs login`",
    ] {
        assert!(first.stdout.contains(expected), "{expected:?} in {first:?}");
    }
    let config = std::fs::read_to_string(rs_home.join("config.toml")).unwrap();
    assert!(!config.contains("sk-legacy-key"), "{config}");
    assert!(
        config.contains("type = \"openai\"")
            && config.contains("default_permission_mode = \"yolo\"")
            && config.contains("max_steps_per_turn = 40"),
        "{config}"
    );
    assert!(!rs_home.join("credentials").exists(), "logins stay behind");

    // With it, the key comes along; sessions and mcp.json are not duplicated.
    let index = std::fs::read_to_string(rs_home.join("session_index.jsonl")).unwrap();
    let second = kimi_rs(&fixture, &["migrate", "--with-credentials"]);
    assert_eq!(second.code, Some(0), "{second:?}");
    assert!(
        second
            .stdout
            .contains(&format!("skipped  session {SESSION}: already in kimi-rs")),
        "{second:?}"
    );
    assert!(
        second
            .stdout
            .contains("skipped  mcp.json server notes: already there"),
        "{second:?}"
    );
    assert_eq!(
        std::fs::read_to_string(rs_home.join("session_index.jsonl")).unwrap(),
        index
    );
    let config = std::fs::read_to_string(rs_home.join("config.toml")).unwrap();
    assert!(config.contains("sk-legacy-key"), "{config}");
    let third = kimi_rs(&fixture, &["migrate", "--with-credentials"]);
    assert_eq!(third.code, Some(0), "{third:?}");
    assert!(!third.stdout.contains("imported "), "{third:?}");
    assert_eq!(
        std::fs::read_to_string(rs_home.join("config.toml")).unwrap(),
        config
    );

    let listed = kimi_rs(&fixture, &["sessions"]);
    assert!(
        listed.stdout.contains("[imported] Reading notes"),
        "{listed:?}"
    );

    let resumed = kimi_rs(&fixture, &["-S", SESSION, "-p", "and now?"]);
    assert_eq!(resumed.code, Some(0), "{resumed:?}");
    assert!(
        resumed.stdout.contains("It still says legacy-note-77."),
        "{resumed:?}"
    );
    let requests = fixture.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(
        request.header("authorization"),
        Some("Bearer sk-legacy-key"),
        "the migrated provider's key"
    );
    assert_eq!(
        user_texts(&request.body),
        ["what is in notes.txt?", "and now?"]
    );
    let results = tool_results(&request.body);
    assert_eq!(
        results,
        [("call_legacy_1".to_owned(), "legacy-note-77".to_owned())]
    );
    let messages = request.body["messages"].as_array().unwrap();
    let system = common::text_of(&messages[0]["content"]);
    assert!(
        !system.contains("Kimi CLI"),
        "kimi-rs's own prompt: {system}"
    );
}

#[test]
fn a_missing_home_is_an_error_that_says_what_to_pass() {
    let fixture = Fixture::new((ProviderType::OpenAi, "openai"), vec![]);
    let run = kimi_rs(&fixture, &["migrate", "--from", "/nonexistent/.kimi"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(
        run.stderr.contains("is not a kimi-cli home") && run.stderr.contains("--from"),
        "{run:?}"
    );
}
