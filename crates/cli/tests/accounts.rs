//! Kimi account login end to end with the real binary: a loopback OAuth stand-in (device
//! authorization, token polling, refresh) and the scripted server as the managed API (model
//! list, chat). `kimi-rs login` shows the URL and code, polls through `authorization_pending`
//! and `slow_down`, stores the token 0600 and sets up the managed provider, so `kimi-rs -p`
//! with no other key calls `KIMI_CODE_BASE_URL` with the token; logout removes it; denial and
//! expiry exit 1; a refused token is refreshed and the request sent again.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::{HashMap, VecDeque};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Form, State};
use axum::routing::post;
use axum::{Json, Router};
use common::{Fixture, Run, wait_child};
use kimi_llm::ProviderType;
use kimi_llm::scripted::ScriptTurn;
use serde_json::{Value, json};

/// One request the OAuth stand-in received.
#[derive(Debug, Clone)]
struct Hit {
    at: Instant,
    path: String,
    form: HashMap<String, String>,
}

#[derive(Default)]
struct OAuthState {
    /// Answers to device-code polls, in order (the last one repeats).
    polls: VecDeque<(u16, Value)>,
    /// Answers to refresh grants.
    refreshes: VecDeque<(u16, Value)>,
    hits: Vec<Hit>,
    base: String,
}

type Shared = Arc<Mutex<OAuthState>>;

async fn device_authorization(
    State(state): State<Shared>,
    Form(form): Form<HashMap<String, String>>,
) -> (axum::http::StatusCode, Json<Value>) {
    let mut state = state.lock().unwrap();
    state.hits.push(Hit {
        at: Instant::now(),
        path: "device_authorization".into(),
        form,
    });
    let base = state.base.clone();
    (
        axum::http::StatusCode::OK,
        Json(json!({
            "device_code": "dev-code-1",
            "user_code": "WXYZ-1234",
            "verification_uri": format!("{base}/device"),
            "verification_uri_complete": format!("{base}/device?user_code=WXYZ-1234"),
            "expires_in": 600,
            "interval": 1
        })),
    )
}

async fn token(
    State(state): State<Shared>,
    Form(form): Form<HashMap<String, String>>,
) -> (axum::http::StatusCode, Json<Value>) {
    let mut state = state.lock().unwrap();
    let refresh = form.get("grant_type").map(String::as_str) == Some("refresh_token");
    state.hits.push(Hit {
        at: Instant::now(),
        path: "token".into(),
        form,
    });
    let queue = if refresh {
        &mut state.refreshes
    } else {
        &mut state.polls
    };
    let (status, body) = if queue.len() > 1 {
        queue.pop_front().unwrap()
    } else {
        queue
            .front()
            .cloned()
            .unwrap_or((500, json!({"error": "unscripted"})))
    };
    (
        axum::http::StatusCode::from_u16(status).unwrap(),
        Json(body),
    )
}

/// The OAuth host on loopback.
struct OAuthStandIn {
    url: String,
    state: Shared,
    _rt: tokio::runtime::Runtime,
}

impl OAuthStandIn {
    fn start(polls: Vec<(u16, Value)>, refreshes: Vec<(u16, Value)>) -> OAuthStandIn {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state: Shared = Arc::new(Mutex::new(OAuthState {
            polls: polls.into(),
            refreshes: refreshes.into(),
            hits: Vec::new(),
            base: url.clone(),
        }));
        let app = Router::new()
            .route(
                "/api/oauth/device_authorization",
                post(device_authorization),
            )
            .route("/api/oauth/token", post(token))
            .with_state(state.clone());
        rt.spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        OAuthStandIn {
            url,
            state,
            _rt: rt,
        }
    }

    fn hits(&self) -> Vec<Hit> {
        self.state.lock().unwrap().hits.clone()
    }
}

fn pending() -> (u16, Value) {
    (400, json!({"error": "authorization_pending"}))
}

fn granted(access: &str, refresh: &str) -> (u16, Value) {
    (
        200,
        json!({"access_token": access, "refresh_token": refresh, "expires_in": 3600,
               "token_type": "Bearer", "scope": "kimi-code"}),
    )
}

const MODEL_ID: &str = "kimi-for-coding";

/// The scripted server as the managed API: `<base>/models` and `<base>/usages` answered,
/// chat scripted.
fn managed_api(turns: Vec<ScriptTurn>) -> Fixture {
    let fixture = Fixture::new((ProviderType::Kimi, "kimi"), turns);
    fixture.server.route(
        "/coding/v1/models",
        200,
        &json!({"data": [{"id": MODEL_ID, "context_length": 262144, "supports_reasoning": true,
                           "supports_image_in": true, "display_name": "Kimi for Coding"}]}),
    );
    fixture
}

/// The binary with only the account endpoints configured: no KIMI_MODEL_* key.
fn account_command(fixture: &Fixture, oauth: &OAuthStandIn, args: &[&str]) -> Command {
    let mut cmd = fixture.command(args);
    for var in [
        "KIMI_MODEL_NAME",
        "KIMI_MODEL_API_KEY",
        "KIMI_MODEL_PROVIDER_TYPE",
        "KIMI_MODEL_BASE_URL",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("KIMI_CODE_OAUTH_HOST", &oauth.url).env(
        "KIMI_CODE_BASE_URL",
        format!("{}/coding/v1", fixture.server.base_url()),
    );
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

fn credential_files(fixture: &Fixture) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(fixture.home.path().join("credentials"))
        .map(|dir| {
            dir.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "json"))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn login_then_print_mode_uses_the_token_and_logout_asks_to_log_in_again() {
    let fixture = managed_api(vec![ScriptTurn::text("hello from the managed model")]);
    let oauth = OAuthStandIn::start(
        vec![
            pending(),
            (400, json!({"error": "slow_down"})),
            granted("at-1", "rt-1"),
        ],
        Vec::new(),
    );

    let login = run(account_command(&fixture, &oauth, &["login"]));
    assert_eq!(login.code, Some(0), "{login:?}");
    assert!(
        login
            .stderr
            .contains(&format!("{}/device?user_code=WXYZ-1234", oauth.url)),
        "{login:?}"
    );
    assert!(login.stderr.contains("WXYZ-1234"), "{login:?}");
    assert!(
        login.stderr.contains("kimi-code/kimi-for-coding"),
        "{login:?}"
    );

    // The device code was polled through pending and slow_down, at the server's interval
    // (1 s), then five seconds more after slow_down.
    let polls: Vec<Hit> = oauth
        .hits()
        .into_iter()
        .filter(|h| h.path == "token")
        .collect();
    assert_eq!(polls.len(), 3, "{polls:?}");
    assert_eq!(
        polls[0].form["grant_type"],
        "urn:ietf:params:oauth:grant-type:device_code"
    );
    assert_eq!(polls[0].form["device_code"], "dev-code-1");
    assert!(polls[1].at - polls[0].at >= Duration::from_secs(1));
    assert!(polls[2].at - polls[1].at >= Duration::from_secs(6));

    // The token is readable only by the user.
    let files = credential_files(&fixture);
    assert_eq!(files.len(), 1, "{files:?}");
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
    assert_eq!(stored["access_token"], "at-1");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&files[0]).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    let config = std::fs::read_to_string(fixture.home.path().join("config.toml")).unwrap();
    assert!(
        config.contains("[providers.\"managed:kimi-code\"]"),
        "{config}"
    );
    assert!(
        config.contains("default_model = \"kimi-code/kimi-for-coding\""),
        "{config}"
    );

    // Print mode with no other key: the managed API, signed with the token.
    let answer = run(account_command(&fixture, &oauth, &["-p", "hi"]));
    assert_eq!(answer.code, Some(0), "{answer:?}");
    assert!(
        answer.stdout.contains("hello from the managed model"),
        "{answer:?}"
    );
    let chats: Vec<_> = fixture
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .collect();
    assert_eq!(chats.len(), 1);
    assert_eq!(chats[0].path, "/coding/v1/chat/completions");
    assert_eq!(chats[0].header("authorization"), Some("Bearer at-1"));
    assert_eq!(chats[0].body["model"], MODEL_ID);

    let logout = run(account_command(&fixture, &oauth, &["logout"]));
    assert_eq!(logout.code, Some(0), "{logout:?}");
    assert!(credential_files(&fixture).is_empty());
    let after = run(account_command(&fixture, &oauth, &["-p", "hi"]));
    assert_eq!(after.code, Some(1), "{after:?}");
    assert!(after.stderr.contains("kimi-rs login"), "{after:?}");
}

#[test]
fn a_denied_login_exits_1_saying_it_was_denied() {
    let fixture = managed_api(Vec::new());
    let oauth = OAuthStandIn::start(
        vec![(
            400,
            json!({"error": "access_denied", "error_description": "the user said no"}),
        )],
        Vec::new(),
    );
    let login = run(account_command(&fixture, &oauth, &["login"]));
    assert_eq!(login.code, Some(1), "{login:?}");
    assert!(
        login.stderr.contains("denied: the user said no"),
        "{login:?}"
    );
    assert!(credential_files(&fixture).is_empty());
    assert!(!fixture.home.path().join("config.toml").exists());
}

#[test]
fn an_expired_code_exits_1_and_says_to_log_in_again() {
    let fixture = managed_api(Vec::new());
    let oauth = OAuthStandIn::start(vec![(400, json!({"error": "expired_token"}))], Vec::new());
    let login = run(account_command(&fixture, &oauth, &["acp", "--login"]));
    assert_eq!(login.code, Some(1), "{login:?}");
    assert!(login.stderr.contains("expired"), "{login:?}");
    assert!(login.stderr.contains("kimi-rs login"), "{login:?}");
}

/// A login already in place: the credential and the managed provider as login writes them.
fn logged_in(fixture: &Fixture, oauth: &OAuthStandIn, expires_in: i64) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let dir = fixture.home.path().join("credentials");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("kimi-code-test.json"),
        json!({"access_token": "old-token", "refresh_token": "rt-old",
               "expires_at": now + expires_in, "expires_in": 3600,
               "scope": "", "token_type": "Bearer"})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        fixture.home.path().join("config.toml"),
        format!(
            "default_model = \"kimi-code/{MODEL_ID}\"\n\n[providers.\"managed:kimi-code\"]\ntype = \"kimi\"\nbase_url = \"{}/coding/v1\"\noauth = {{ storage = \"file\", key = \"oauth/kimi-code-test\", oauth_host = \"{}\" }}\n\n[models.\"kimi-code/{MODEL_ID}\"]\nprovider = \"managed:kimi-code\"\nmodel = \"{MODEL_ID}\"\nmax_context_size = 262144\n",
            fixture.server.base_url(),
            oauth.url
        ),
    )
    .unwrap();
}

fn stored_access(fixture: &Fixture) -> String {
    let text = std::fs::read_to_string(fixture.home.path().join("credentials/kimi-code-test.json"))
        .unwrap();
    serde_json::from_str::<Value>(&text).unwrap()["access_token"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn a_refused_token_is_refreshed_and_the_request_sent_again() {
    let fixture = managed_api(vec![
        ScriptTurn::error(401, r#"{"error":{"message":"token expired"}}"#),
        ScriptTurn::text("answered after the refresh"),
    ]);
    let oauth = OAuthStandIn::start(Vec::new(), vec![granted("new-token", "rt-new")]);
    logged_in(&fixture, &oauth, 3000);
    let answer = run(account_command(&fixture, &oauth, &["-p", "hi"]));
    assert_eq!(answer.code, Some(0), "{answer:?}");
    assert!(
        answer.stdout.contains("answered after the refresh"),
        "{answer:?}"
    );
    let auth: Vec<String> = fixture
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .map(|r| r.header("authorization").unwrap_or_default().to_owned())
        .collect();
    assert_eq!(auth, ["Bearer old-token", "Bearer new-token"]);
    let refreshes: Vec<Hit> = oauth.hits();
    assert_eq!(refreshes.len(), 1, "{refreshes:?}");
    assert_eq!(refreshes[0].form["grant_type"], "refresh_token");
    assert_eq!(refreshes[0].form["refresh_token"], "rt-old");
    assert_eq!(stored_access(&fixture), "new-token");
}

#[test]
fn a_token_near_expiry_is_refreshed_before_the_request() {
    let fixture = managed_api(vec![ScriptTurn::text("fresh")]);
    let oauth = OAuthStandIn::start(Vec::new(), vec![granted("new-token", "rt-new")]);
    // 60 s left of a one-hour token: past the half-life threshold.
    logged_in(&fixture, &oauth, 60);
    let answer = run(account_command(&fixture, &oauth, &["-p", "hi"]));
    assert_eq!(answer.code, Some(0), "{answer:?}");
    let chat = fixture
        .requests()
        .into_iter()
        .find(|r| r.path.ends_with("/chat/completions"))
        .unwrap();
    assert_eq!(chat.header("authorization"), Some("Bearer new-token"));
    assert_eq!(stored_access(&fixture), "new-token");
}

#[test]
fn a_refresh_the_server_refuses_says_to_log_in_again() {
    let fixture = managed_api(Vec::new());
    let oauth = OAuthStandIn::start(
        Vec::new(),
        vec![(
            401,
            json!({"error": "invalid_grant", "error_description": "revoked"}),
        )],
    );
    logged_in(&fixture, &oauth, 60);
    let answer = run(account_command(&fixture, &oauth, &["-p", "hi"]));
    assert_eq!(answer.code, Some(1), "{answer:?}");
    assert!(answer.stderr.contains("kimi-rs login"), "{answer:?}");
    // Not retried: one refresh, no chat request.
    assert_eq!(oauth.hits().len(), 1);
    assert!(
        fixture
            .requests()
            .iter()
            .all(|r| !r.path.ends_with("/chat/completions"))
    );
}

/// The OS keyring entry of a login, removed when dropped so a failed run leaves nothing behind.
struct KeyringEntry(keyring::Entry);

impl KeyringEntry {
    /// The entry of the managed provider's credential key in `config.toml`.
    fn of(fixture: &Fixture) -> KeyringEntry {
        let text = std::fs::read_to_string(fixture.home.path().join("config.toml")).unwrap();
        let config: toml::Value = toml::from_str(&text).unwrap();
        let oauth = &config["providers"]["managed:kimi-code"]["oauth"];
        assert_eq!(oauth["storage"].as_str(), Some("keyring"), "{text}");
        let key = oauth["key"].as_str().unwrap();
        // Like kimi-rs, make a first entry so `keyring` links the user's persistent keyring
        // into this process's session keyring (this test runs outside a login session);
        // entries made after it see what other processes stored.
        drop(keyring::Entry::new("kimi-rs", key).unwrap());
        KeyringEntry(keyring::Entry::new("kimi-rs", key).unwrap())
    }

    fn access_token(&self) -> Option<String> {
        match self.0.get_password() {
            Ok(text) => Some(
                serde_json::from_str::<Value>(&text).unwrap()["access_token"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            ),
            Err(keyring::Error::NoEntry) => None,
            Err(err) => panic!("the OS keyring cannot be read: {err}"),
        }
    }
}

impl Drop for KeyringEntry {
    fn drop(&mut self) {
        let _ = self.0.delete_credential();
    }
}

/// `login --storage keyring` keeps the token in the real OS keyring (the kernel keyring on
/// Linux), never in credentials/; print mode signs with it, a refresh rewrites it and logout
/// deletes it.
#[test]
fn a_keyring_login_lives_in_the_os_keyring_through_refresh_and_logout() {
    let fixture = managed_api(vec![
        ScriptTurn::text("signed from the keyring"),
        ScriptTurn::error(401, r#"{"error":{"message":"token expired"}}"#),
        ScriptTurn::text("answered after the refresh"),
    ]);
    let oauth = OAuthStandIn::start(
        vec![granted("ring-at-1", "ring-rt-1")],
        vec![granted("ring-at-2", "ring-rt-2")],
    );
    let login = run(account_command(
        &fixture,
        &oauth,
        &["login", "--storage", "keyring"],
    ));
    assert_eq!(login.code, Some(0), "{login:?}");
    assert!(login.stderr.contains("in the OS keyring"), "{login:?}");
    let entry = KeyringEntry::of(&fixture);
    assert_eq!(entry.access_token().as_deref(), Some("ring-at-1"));
    assert!(credential_files(&fixture).is_empty());

    let answer = run(account_command(&fixture, &oauth, &["-p", "hi"]));
    assert_eq!(answer.code, Some(0), "{answer:?}");
    assert!(
        answer.stdout.contains("signed from the keyring"),
        "{answer:?}"
    );

    // The server refuses the token: refreshed with the keyring's refresh token, written back.
    let again = run(account_command(&fixture, &oauth, &["-p", "again"]));
    assert_eq!(again.code, Some(0), "{again:?}");
    assert!(
        again.stdout.contains("answered after the refresh"),
        "{again:?}"
    );
    let auth: Vec<String> = fixture
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .map(|r| r.header("authorization").unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        auth,
        ["Bearer ring-at-1", "Bearer ring-at-1", "Bearer ring-at-2"]
    );
    let refreshes: Vec<Hit> = oauth
        .hits()
        .into_iter()
        .filter(|h| h.form.get("grant_type").map(String::as_str) == Some("refresh_token"))
        .collect();
    assert_eq!(refreshes.len(), 1, "{refreshes:?}");
    assert_eq!(refreshes[0].form["refresh_token"], "ring-rt-1");
    assert_eq!(entry.access_token().as_deref(), Some("ring-at-2"));
    assert!(credential_files(&fixture).is_empty());

    let logout = run(account_command(&fixture, &oauth, &["logout"]));
    assert_eq!(logout.code, Some(0), "{logout:?}");
    assert!(logout.stderr.contains("OS keyring"), "{logout:?}");
    assert_eq!(entry.access_token(), None);
    let after = run(account_command(&fixture, &oauth, &["-p", "hi"]));
    assert_eq!(after.code, Some(1), "{after:?}");
    assert!(after.stderr.contains("kimi-rs login"), "{after:?}");
}

/// An `oauth.storage` kimi-rs does not know stops the run with what to write instead.
#[test]
fn an_unknown_credential_storage_says_what_to_use() {
    let fixture = managed_api(Vec::new());
    let oauth = OAuthStandIn::start(Vec::new(), Vec::new());
    logged_in(&fixture, &oauth, 3000);
    let path = fixture.home.path().join("config.toml");
    let config = std::fs::read_to_string(&path)
        .unwrap()
        .replace("storage = \"file\"", "storage = \"vault\"");
    std::fs::write(&path, config).unwrap();
    let answer = run(account_command(&fixture, &oauth, &["-p", "hi"]));
    assert_eq!(answer.code, Some(1), "{answer:?}");
    assert!(
        answer.stderr.contains("`oauth.storage = \"vault\"`")
            && answer.stderr.contains("\"keyring\""),
        "{answer:?}"
    );
    let login = run(account_command(&fixture, &oauth, &["login"]));
    assert_eq!(login.code, Some(1), "{login:?}");
    assert!(login.stderr.contains("\"vault\""), "{login:?}");
    // Refused before any code was asked for.
    assert!(oauth.hits().is_empty(), "{:?}", oauth.hits());
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn web_search_and_fetch_go_through_the_logins_services() {
    let fixture = managed_api(vec![
        ScriptTurn::tool_calls(&[
            ("call_s", "WebSearch", r#"{"query":"rust language"}"#),
            ("call_f", "FetchURL", r#"{"url":"https://example.com/a"}"#),
        ]),
        ScriptTurn::text("done"),
    ]);
    fixture.server.route(
        "/coding/v1/search",
        200,
        &json!({"search_results": [{"title": "Rust", "site_name": "rust-lang.org",
            "url": "https://www.rust-lang.org/", "snippet": "A language", "date": "2026-01-01"}]}),
    );
    fixture.server.route(
        "/coding/v1/fetch",
        200,
        &json!("# Example\nfetched by the service"),
    );
    let oauth = OAuthStandIn::start(Vec::new(), Vec::new());
    logged_in(&fixture, &oauth, 3000);
    let answer = run(account_command(&fixture, &oauth, &["-p", "look it up"]));
    assert_eq!(answer.code, Some(0), "{answer:?}");
    let requests = fixture.requests();
    let chats: Vec<_> = requests
        .iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .collect();
    let names = tool_names(&chats[0].body);
    assert!(names.iter().any(|n| n == "WebSearch"), "{names:?}");
    let results = common::tool_results(&chats[1].body);
    assert!(
        results[0].1.contains("URL: https://www.rust-lang.org/"),
        "{results:?}"
    );
    assert!(results[0].1.contains("Site: rust-lang.org"), "{results:?}");
    assert!(
        results[1].1.contains("fetched by the service"),
        "{results:?}"
    );
    let search = requests
        .iter()
        .find(|r| r.path == "/coding/v1/search")
        .unwrap();
    assert_eq!(search.header("authorization"), Some("Bearer old-token"));
    assert_eq!(search.body, json!({"text_query": "rust language"}));
    let fetch = requests
        .iter()
        .find(|r| r.path == "/coding/v1/fetch")
        .unwrap();
    assert_eq!(fetch.body, json!({"url": "https://example.com/a"}));
}

#[test]
fn web_search_is_offered_only_when_a_service_is_configured() {
    // No login and no [services]: the env model alone offers no WebSearch.
    let plain = Fixture::new((ProviderType::Kimi, "kimi"), vec![ScriptTurn::text("ok")]);
    let run1 = plain.run(&["-p", "hi"]);
    assert_eq!(run1.code, Some(0), "{run1:?}");
    let names = tool_names(&plain.requests()[0].body);
    assert!(!names.iter().any(|n| n == "WebSearch"), "{names:?}");
    assert!(names.iter().any(|n| n == "FetchURL"), "{names:?}");

    // KIMI_WEB_SEARCH_BASE_URL / _API_KEY configure one.
    let with = Fixture::new(
        (ProviderType::Kimi, "kimi"),
        vec![
            ScriptTurn::tool_calls(&[("call_s", "WebSearch", r#"{"query":"q"}"#)]),
            ScriptTurn::text("ok"),
        ],
    );
    with.server
        .route("/search", 200, &json!({"search_results": []}));
    let mut cmd = with.command(&["-p", "hi"]);
    cmd.env(
        "KIMI_WEB_SEARCH_BASE_URL",
        format!("{}/search", with.server.base_url()),
    )
    .env("KIMI_WEB_SEARCH_API_KEY", "search-key");
    let run2 = run(cmd);
    assert_eq!(run2.code, Some(0), "{run2:?}");
    let requests = with.requests();
    let search = requests.iter().find(|r| r.path == "/search").unwrap();
    assert_eq!(search.header("authorization"), Some("Bearer search-key"));
    let last = requests
        .iter()
        .rfind(|r| r.path.ends_with("/chat/completions"))
        .unwrap();
    let results = common::tool_results(&last.body);
    assert!(results[0].1.contains("No results"), "{results:?}");
}

#[test]
fn usage_shows_the_plans_quotas_from_the_server() {
    let fixture = managed_api(Vec::new());
    fixture.server.route(
        "/coding/v1/usages",
        200,
        &json!({"usage": {"used": "40", "limit": "1000"},
                "limits": [{"window": {"duration": 300, "timeUnit": "TIME_UNIT_MINUTE"},
                            "detail": {"used": "50", "limit": "100"}}]}),
    );
    let oauth = OAuthStandIn::start(Vec::new(), Vec::new());
    logged_in(&fixture, &oauth, 3000);
    let config = kimi_config::Config::load_home(fixture.home.path());
    let rt = tokio::runtime::Runtime::new().unwrap();
    let lines = rt
        .block_on(kimi_cli::accounts::plan_usage(fixture.home.path(), &config))
        .expect("a login is configured")
        .unwrap();
    assert_eq!(
        lines,
        [
            "Plan usage",
            "  Weekly limit  40/1000 used (4%)",
            "  5h limit      50/100 used (50%)",
        ]
    );
    let request = fixture
        .requests()
        .into_iter()
        .find(|r| r.path == "/coding/v1/usages")
        .unwrap();
    assert_eq!(request.header("authorization"), Some("Bearer old-token"));

    // Without a login there are no plan quotas to show.
    let empty = kimi_config::Config::default();
    assert!(
        rt.block_on(kimi_cli::accounts::plan_usage(fixture.home.path(), &empty))
            .is_none()
    );
}

#[test]
fn subagents_get_web_search_and_fetch_through_the_logins_services() {
    let report = "Rust is a systems language. The work is finished and nothing else is pending. I checked the result once more, left the rest of the repository alone, and there are no open questions for the caller to answer.";
    let fixture = managed_api(vec![
        ScriptTurn::tool_calls(&[(
            "call_agent",
            "Agent",
            r#"{"prompt":"Look up Rust.","description":"look up rust","subagent_type":"coder"}"#,
        )]),
        ScriptTurn::tool_calls(&[("call_sub_s", "WebSearch", r#"{"query":"rust"}"#)]),
        ScriptTurn::text(report),
        ScriptTurn::text("done"),
    ]);
    fixture.server.route(
        "/coding/v1/search",
        200,
        &json!({"search_results": [{"title": "Rust", "site_name": "rust-lang.org",
            "url": "https://www.rust-lang.org/", "snippet": "A language", "date": "2026-01-01"}]}),
    );
    let oauth = OAuthStandIn::start(Vec::new(), Vec::new());
    logged_in(&fixture, &oauth, 3000);
    let answer = run(account_command(&fixture, &oauth, &["-p", "ask a helper"]));
    assert_eq!(answer.code, Some(0), "{answer:?}");
    let requests = fixture.requests();
    let chats: Vec<_> = requests
        .iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .collect();
    assert_eq!(chats.len(), 4, "{chats:?}");
    // The subagent's first request: its tools include the service-backed web tools.
    let sub_tools = tool_names(&chats[1].body);
    assert!(
        sub_tools.iter().any(|n| n == "WebSearch") && sub_tools.iter().any(|n| n == "FetchURL"),
        "{sub_tools:?}"
    );
    assert!(!sub_tools.iter().any(|n| n == "Agent"), "{sub_tools:?}");
    let search = requests
        .iter()
        .find(|r| r.path == "/coding/v1/search")
        .expect("the subagent's search reached the login's service");
    assert_eq!(search.header("authorization"), Some("Bearer old-token"));
    let results = common::tool_results(&chats[2].body);
    assert!(
        results[0].1.contains("URL: https://www.rust-lang.org/"),
        "{results:?}"
    );
}
