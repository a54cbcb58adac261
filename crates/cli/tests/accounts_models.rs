//! Kimi Platform API-key login and the start-up refresh of the Kimi login's model list, with
//! the real binary and the scripted server as the platform / managed API: `kimi-rs login
//! --api-key` checks the key against `<base>/models`, writes the `kimi-k*` models and the key,
//! and print mode then signs with it; a refused key exits 1. At start the managed provider's
//! list is refreshed from the server (the user's default kept), a failure is shown once, and
//! `[model_catalog] refresh_on_start = false` turns it off.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Command;

use common::{Fixture, Run, wait_child};
use kimi_llm::ProviderType;
use kimi_llm::scripted::ScriptTurn;
use serde_json::json;

fn bare(fixture: &Fixture, args: &[&str]) -> Command {
    let mut cmd = fixture.command(args);
    for var in [
        "KIMI_MODEL_NAME",
        "KIMI_MODEL_API_KEY",
        "KIMI_MODEL_PROVIDER_TYPE",
        "KIMI_MODEL_BASE_URL",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

fn run(mut cmd: Command) -> Run {
    wait_child(
        cmd.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    )
}

fn platform_models() -> serde_json::Value {
    json!({"data": [
        {"id": "moonshot-v1-8k", "context_length": 8192},
        {"id": "kimi-k2-0905-preview", "context_length": 262144, "supports_image_in": false},
        {"id": "kimi-k2-turbo-preview", "context_length": 262144}
    ]})
}

#[test]
fn an_api_key_login_writes_the_platform_provider_and_print_mode_uses_it() {
    let fixture = Fixture::new(
        (ProviderType::Kimi, "kimi"),
        vec![ScriptTurn::text("hello from the platform")],
    );
    fixture.server.route("/v1/models", 200, &platform_models());
    let base = format!("{}/v1", fixture.server.base_url());
    let login = run(bare(
        &fixture,
        &["login", "--api-key", "sk-platform-1", "--base-url", &base],
    ));
    assert_eq!(login.code, Some(0), "{login:?}");
    assert!(
        login.stderr.contains("kimi-platform/kimi-k2-0905-preview"),
        "{login:?}"
    );
    let models = fixture
        .requests()
        .into_iter()
        .find(|r| r.path == "/v1/models")
        .unwrap();
    assert_eq!(models.header("authorization"), Some("Bearer sk-platform-1"));
    let config = std::fs::read_to_string(fixture.home.path().join("config.toml")).unwrap();
    assert!(config.contains("[providers.kimi-platform]"), "{config}");
    assert!(config.contains("api_key = \"sk-platform-1\""), "{config}");
    assert!(
        config.contains("kimi-platform/kimi-k2-turbo-preview"),
        "{config}"
    );
    assert!(
        !config.contains("moonshot-v1-8k"),
        "only kimi-k models: {config}"
    );

    let answer = run(bare(&fixture, &["-p", "hi"]));
    assert_eq!(answer.code, Some(0), "{answer:?}");
    assert!(
        answer.stdout.contains("hello from the platform"),
        "{answer:?}"
    );
    let chat = fixture
        .requests()
        .into_iter()
        .find(|r| r.path.ends_with("/chat/completions"))
        .unwrap();
    assert_eq!(chat.path, "/v1/chat/completions");
    assert_eq!(chat.header("authorization"), Some("Bearer sk-platform-1"));
    assert_eq!(chat.body["model"], "kimi-k2-0905-preview");
}

#[test]
fn a_refused_api_key_exits_1_and_writes_nothing() {
    let fixture = Fixture::new((ProviderType::Kimi, "kimi"), Vec::new());
    fixture.server.route(
        "/v1/models",
        401,
        &json!({"error": {"message": "Invalid Authentication"}}),
    );
    let base = format!("{}/v1", fixture.server.base_url());
    let mut cmd = bare(&fixture, &["login", "--api-key", "-", "--base-url", &base]);
    cmd.stdin(std::process::Stdio::piped());
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"sk-wrong\n").unwrap();
    }
    let login = wait_child(child);
    assert_eq!(login.code, Some(1), "{login:?}");
    assert!(
        login.stderr.contains("refused the API key") && login.stderr.contains("401"),
        "{login:?}"
    );
    let sent = fixture.requests();
    assert_eq!(sent[0].header("authorization"), Some("Bearer sk-wrong"));
    assert!(!fixture.home.path().join("config.toml").exists());
}

const MODEL_ID: &str = "kimi-for-coding";

/// A stored login (valid for an hour) and the managed provider with one model, plus `extra`
/// config lines.
fn logged_in(fixture: &Fixture, extra: &str) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let dir = fixture.home.path().join("credentials");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("kimi-code-test.json"),
        json!({"access_token": "at-live", "refresh_token": "rt", "expires_at": now + 3600,
               "expires_in": 3600, "scope": "", "token_type": "Bearer"})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        fixture.home.path().join("config.toml"),
        format!(
            "default_model = \"kimi-code/{MODEL_ID}\"\n{extra}\n[providers.\"managed:kimi-code\"]\ntype = \"kimi\"\nbase_url = \"{}/coding/v1\"\noauth = {{ storage = \"file\", key = \"oauth/kimi-code-test\", oauth_host = \"http://127.0.0.1:9\" }}\n\n[models.\"kimi-code/{MODEL_ID}\"]\nprovider = \"managed:kimi-code\"\nmodel = \"{MODEL_ID}\"\nmax_context_size = 262144\n",
            fixture.server.base_url(),
        ),
    )
    .unwrap();
}

fn managed_command(fixture: &Fixture, args: &[&str]) -> Command {
    let mut cmd = bare(fixture, args);
    cmd.env(
        "KIMI_CODE_BASE_URL",
        format!("{}/coding/v1", fixture.server.base_url()),
    );
    cmd
}

#[test]
fn the_login_model_list_is_refreshed_at_start_keeping_the_default() {
    let fixture = Fixture::new(
        (ProviderType::Kimi, "kimi"),
        vec![ScriptTurn::text("one"), ScriptTurn::text("two")],
    );
    fixture.server.route(
        "/coding/v1/models",
        200,
        &json!({"data": [
            {"id": "kimi-new-model", "context_length": 131072},
            {"id": MODEL_ID, "context_length": 262144}
        ]}),
    );
    logged_in(&fixture, "");
    let answer = run(managed_command(&fixture, &["-p", "hi"]));
    assert_eq!(answer.code, Some(0), "{answer:?}");
    assert!(answer.stdout.contains("one"), "{answer:?}");
    let list = fixture
        .requests()
        .into_iter()
        .find(|r| r.path == "/coding/v1/models")
        .expect("the model list was asked for");
    assert_eq!(list.header("authorization"), Some("Bearer at-live"));
    let config = std::fs::read_to_string(fixture.home.path().join("config.toml")).unwrap();
    assert!(
        config.contains("[models.\"kimi-code/kimi-new-model\"]"),
        "{config}"
    );
    assert!(
        config.contains(&format!("default_model = \"kimi-code/{MODEL_ID}\"")),
        "the user's default stays: {config}"
    );

    // Turned off: no list request.
    logged_in(&fixture, "[model_catalog]\nrefresh_on_start = false\n");
    let before = fixture.requests().len();
    let answer = run(managed_command(&fixture, &["-p", "hi"]));
    assert_eq!(answer.code, Some(0), "{answer:?}");
    let asked = fixture.requests()[before..]
        .iter()
        .filter(|r| r.path == "/coding/v1/models")
        .count();
    assert_eq!(asked, 0);
}

#[test]
fn a_failed_refresh_is_logged_shown_once_and_does_not_stop_the_prompt() {
    let fixture = Fixture::new(
        (ProviderType::Kimi, "kimi"),
        vec![ScriptTurn::text("first"), ScriptTurn::text("second")],
    );
    fixture
        .server
        .route("/coding/v1/models", 503, &json!({"error": "maintenance"}));
    logged_in(&fixture, "");
    let first = run(managed_command(&fixture, &["-p", "hi"]));
    assert_eq!(first.code, Some(0), "{first:?}");
    assert!(first.stdout.contains("first"), "{first:?}");
    assert!(
        first
            .stderr
            .contains("could not refresh the Kimi login's model list")
            && first.stderr.contains("503"),
        "{first:?}"
    );
    let second = run(managed_command(&fixture, &["-p", "hi"]));
    assert_eq!(second.code, Some(0), "{second:?}");
    assert!(
        !second.stderr.contains("could not refresh"),
        "shown once: {second:?}"
    );
    let asked = fixture
        .requests()
        .iter()
        .filter(|r| r.path == "/coding/v1/models")
        .count();
    assert_eq!(asked, 2, "tried at each start");
    let log = std::fs::read_dir(fixture.home.path().join("logs"))
        .unwrap()
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .collect::<String>();
    assert_eq!(
        log.matches("could not refresh the Kimi login's model list")
            .count(),
        2,
        "logged every time: {log}"
    );
}
