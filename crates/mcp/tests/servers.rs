//! kimi-mcp against real servers: the `kimi-mcp-fixture` binary over stdio and an in-process
//! streamable-HTTP server on a loopback port, both speaking the hand-written fixture protocol.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use kimi_mcp::{
    McpConfig, McpManager, McpUpdate, RemoteConfig, ServerConfig, ServerState, ServerStatus,
    TransportConfig,
};
use kimi_protocol::{ContentPart, MediaUrl};
use kimi_test_support::mcp_fixture::proto;
use kimi_tools::LateTools;
use kimi_tools::tool::run_tool;
use kimi_tools::{Resolution, Tool, ToolContext, ToolResult};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn fixture() -> String {
    kimi_test_support::mcp_fixture::binary()
        .to_string_lossy()
        .into_owned()
}

fn stdio(args: &[&str]) -> ServerConfig {
    ServerConfig {
        transport: TransportConfig::Stdio {
            command: fixture(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            env: BTreeMap::new(),
            cwd: None,
        },
        enabled: true,
        startup_timeout: Some(Duration::from_secs(20)),
        tool_timeout: None,
        enabled_tools: None,
        disabled_tools: Vec::new(),
        source: PathBuf::from("/test/mcp.json"),
    }
}

fn remote(url: String) -> ServerConfig {
    ServerConfig {
        transport: TransportConfig::Http(RemoteConfig {
            url,
            headers: BTreeMap::new(),
            bearer_token_env_var: None,
            oauth: false,
        }),
        ..stdio(&[])
    }
}

fn config(servers: Vec<(&str, ServerConfig)>) -> McpConfig {
    McpConfig {
        servers: servers
            .into_iter()
            .map(|(name, server)| (name.to_owned(), server))
            .collect(),
        ..McpConfig::default()
    }
}

struct Harness {
    manager: McpManager,
    warnings: Vec<String>,
    ctx: ToolContext,
    _dir: tempfile::TempDir,
}

async fn connect(cfg: &McpConfig) -> Result<Harness, Box<dyn std::error::Error>> {
    connect_env(cfg, &HashMap::new()).await
}

async fn connect_env(
    cfg: &McpConfig,
    env: &HashMap<String, String>,
) -> Result<Harness, Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let (manager, warnings) = McpManager::connect_with_env(cfg, dir.path(), env).await;
    let ctx = ToolContext::new(dir.path(), &dir.path().join("agent"));
    Ok(Harness {
        manager,
        warnings,
        ctx,
        _dir: dir,
    })
}

impl Harness {
    fn tool(&self, name: &str) -> Result<Arc<dyn Tool>, String> {
        self.manager
            .tools()
            .into_iter()
            .find(|t| t.name() == name)
            .ok_or_else(|| format!("no tool {name}"))
    }

    fn names(&self) -> Vec<String> {
        self.manager
            .tools()
            .iter()
            .map(|t| t.name().to_owned())
            .collect()
    }

    async fn call(&self, name: &str, args: Value) -> Result<ToolResult, String> {
        Ok(run_tool(self.tool(name)?.as_ref(), args, &self.ctx).await)
    }
}

fn alive(pid: u32) -> bool {
    // A reaped process has no /proc entry; a zombie still would, so this also proves the wait.
    Path::new(&format!("/proc/{pid}")).exists()
}

#[tokio::test]
async fn stdio_tools_are_listed_with_sanitized_names_and_callable() -> TestResult {
    let h = connect(&config(vec![("fix ture", stdio(&["--stderr-noise"]))])).await?;
    assert_eq!(h.warnings, Vec::<String>::new());
    let expected: Vec<String> = [
        "echo",
        "add",
        "fail",
        "slow",
        "image",
        "whoami",
        "env",
        "cwd",
        "big",
        "crash",
        "dotted_name_v2",
    ]
    .iter()
    .map(|t| format!("mcp__fix_ture__{t}"))
    .collect();
    assert_eq!(h.names(), expected);

    let echo = h.tool("mcp__fix_ture__echo")?;
    assert_eq!(echo.description(), "Echo the text back.");
    assert_eq!(echo.parameters()["required"], json!(["text"]));
    // No description from the server: a generated one.
    assert_eq!(
        h.tool("mcp__fix_ture__dotted_name_v2")?.description(),
        "MCP tool `dotted.name v2` from server `fix ture`."
    );

    let Ok(Resolution::Run(exec)) = echo.resolve(json!({"text": "hi"}), &h.ctx) else {
        return Err("echo did not resolve to an execution".into());
    };
    let plan = exec.plan();
    assert_eq!(plan.accesses, None, "MCP tools run exclusively");
    assert_eq!(plan.approval_rule, "mcp__fix_ture__echo");
    assert_eq!(plan.subject, kimi_tools::RuleSubject::NameOnly);

    assert_eq!(
        h.call("mcp__fix_ture__echo", json!({"text": "hello"}))
            .await?,
        ToolResult::ok("hello")
    );
    assert_eq!(
        h.call("mcp__fix_ture__add", json!({"a": 2, "b": 40}))
            .await?,
        ToolResult::ok("42")
    );
    assert_eq!(
        h.call("mcp__fix_ture__whoami", json!({})).await?,
        ToolResult::ok("kimi-rs")
    );
    assert_eq!(
        h.call("mcp__fix_ture__dotted_name_v2", Value::Null).await?,
        ToolResult::ok("dotted")
    );
    assert!(
        h.tool("mcp__fix_ture__echo")?
            .resolve(json!([1]), &h.ctx)
            .is_err()
    );

    let status = h.manager.status();
    assert_eq!(status.len(), 1);
    assert_eq!(
        status[0],
        ServerStatus {
            name: "fix ture".into(),
            transport: "stdio",
            state: ServerState::Connected,
            tool_count: 11,
            pid: status[0].pid,
            source: status[0].source.clone(),
        }
    );
    assert!(status[0].pid.is_some());
    h.manager.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn is_error_images_and_big_outputs_are_mapped() -> TestResult {
    let h = connect(&config(vec![("f", stdio(&[]))])).await?;
    assert_eq!(
        h.call("mcp__f__fail", json!({})).await?,
        ToolResult::error("failed on purpose")
    );
    assert_eq!(
        h.call("mcp__f__image", json!({})).await?,
        ToolResult::parts(vec![
            ContentPart::text("<mcp_tool_result name=\"mcp__f__image\">"),
            ContentPart::Image(MediaUrl {
                url: format!("data:image/png;base64,{}", proto::TINY_PNG_BASE64),
                id: None
            }),
            ContentPart::text("</mcp_tool_result>"),
        ])
    );
    let big = h.call("mcp__f__big", json!({"chars": 150_000})).await?;
    assert!(big.truncated);
    let text = big.text().unwrap_or_default();
    assert!(text.starts_with(&"x".repeat(100_000)) && text.contains("[Output truncated"));
    h.manager.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn tool_timeout_and_cancel_end_the_call_but_not_the_server() -> TestResult {
    let mut server = stdio(&[]);
    server.tool_timeout = Some(Duration::from_millis(200));
    let h = connect(&config(vec![("f", server)])).await?;
    let slow = h.call("mcp__f__slow", json!({"ms": 60_000})).await?;
    assert_eq!(
        slow,
        ToolResult::error(
            "MCP tool `mcp__f__slow` timed out after 200 ms. Raise `toolTimeoutMs` for server `f` in mcp.json if it needs longer."
        )
    );

    let Ok(Resolution::Run(exec)) = h
        .tool("mcp__f__slow")?
        .resolve(json!({"ms": 60_000}), &h.ctx)
    else {
        return Err("slow did not resolve".into());
    };
    let cancel = CancellationToken::new();
    cancel.cancel();
    let cancelled = exec
        .execute(&h.ctx, cancel, kimi_tools::ProgressSink::none())
        .await;
    assert_eq!(cancelled, ToolResult::error("mcp__f__slow was cancelled."));

    // The server still answers.
    assert_eq!(
        h.call("mcp__f__echo", json!({"text": "still here"}))
            .await?,
        ToolResult::ok("still here")
    );
    h.manager.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn servers_connect_in_the_background_and_their_tools_join_when_ready() -> TestResult {
    let dir = tempfile::tempdir()?;
    let late = LateTools::new();
    let ghost = ServerConfig {
        transport: TransportConfig::Stdio {
            command: "/nonexistent/kimi-mcp-no-such-server".into(),
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
        },
        ..stdio(&[])
    };
    let cfg = config(vec![
        ("ghost", ghost),
        ("hang", stdio(&["--hang"])),
        ("ok", stdio(&[])),
    ]);
    let (manager, warnings) = McpManager::start(&cfg, dir.path(), &late);
    // A command that does not exist is known at once; the others are still on their way.
    assert_eq!(warnings.len(), 1, "{warnings:#?}");
    assert!(warnings[0].starts_with("MCP server `ghost` failed to start"));
    assert_eq!(late.pending(), 2);
    let mut progress = manager.progress();
    assert_eq!(
        progress.next().await,
        Some(McpUpdate {
            connecting: 2,
            warnings: Vec::new()
        })
    );
    late.wait_for("mcp__ok__echo").await;
    assert!(late.tools().iter().any(|t| t.name() == "mcp__ok__echo"));
    assert_eq!(
        progress.next().await,
        Some(McpUpdate {
            connecting: 1,
            warnings: Vec::new()
        })
    );
    let states: Vec<(String, ServerState)> = manager
        .status()
        .into_iter()
        .map(|s| (s.name, s.state))
        .collect();
    assert_eq!(states[1], ("hang".into(), ServerState::Connecting));
    assert_eq!(states[2], ("ok".into(), ServerState::Connected));
    // Shutting down abandons the hanging start; nothing waits for it any more.
    manager.shutdown().await;
    assert_eq!(late.pending(), 0);
    assert_eq!(progress.next().await, None);
    Ok(())
}

#[tokio::test]
async fn failing_servers_are_warnings_and_the_others_still_work() -> TestResult {
    let mut ghost = stdio(&[]);
    ghost.transport = TransportConfig::Stdio {
        command: "/nonexistent/kimi-mcp-no-such-server".into(),
        args: Vec::new(),
        env: BTreeMap::new(),
        cwd: None,
    };
    let mut hang = stdio(&["--hang"]);
    hang.startup_timeout = Some(Duration::from_millis(300));
    let mut off = stdio(&[]);
    off.enabled = false;
    let sse = ServerConfig {
        transport: TransportConfig::Sse(RemoteConfig {
            url: "http://127.0.0.1:9/sse".into(),
            headers: BTreeMap::new(),
            bearer_token_env_var: None,
            oauth: false,
        }),
        ..stdio(&[])
    };
    let h = connect(&config(vec![
        (
            "boom",
            stdio(&["--fail-startup", "boom: FIXTURE_API_KEY is missing"]),
        ),
        ("ghost", ghost),
        ("hang", hang),
        ("ok", stdio(&[])),
        ("off", off),
        ("old", sse),
    ]))
    .await?;

    assert_eq!(h.warnings.len(), 4, "{:#?}", h.warnings);
    let expect = [
        (
            "MCP server `boom` failed to start",
            "last stderr: boom: FIXTURE_API_KEY is missing",
        ),
        (
            "MCP server `ghost` failed to start",
            "command `/nonexistent/kimi-mcp-no-such-server` was not found",
        ),
        (
            "MCP server `hang` failed to start",
            "did not finish starting within 300 ms",
        ),
        (
            "MCP server `old` failed to start",
            "cannot open the event stream at http://127.0.0.1:9/sse",
        ),
    ];
    for (warning, (prefix, needle)) in h.warnings.iter().zip(expect) {
        assert!(
            warning.starts_with(prefix) && warning.contains(needle),
            "{warning}"
        );
    }
    assert_eq!(
        h.call("mcp__ok__echo", json!({"text": "fine"})).await?,
        ToolResult::ok("fine")
    );
    assert!(h.names().iter().all(|n| n.starts_with("mcp__ok__")));

    let states: Vec<(String, &str, bool)> = h
        .manager
        .status()
        .into_iter()
        .map(|s| {
            let kind = match s.state {
                ServerState::Connecting => "connecting",
                ServerState::Connected => "connected",
                ServerState::Failed(_) => "failed",
                ServerState::NeedsLogin(_) => "needs login",
                ServerState::Disabled => "disabled",
            };
            (s.name, kind, s.tool_count > 0)
        })
        .collect();
    assert_eq!(
        states,
        vec![
            ("boom".into(), "failed", false),
            ("ghost".into(), "failed", false),
            ("hang".into(), "failed", false),
            ("off".into(), "disabled", false),
            ("ok".into(), "connected", true),
            ("old".into(), "failed", false),
        ]
    );
    h.manager.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn enabled_and_disabled_tools_filter_the_list() -> TestResult {
    let mut server = stdio(&[]);
    server.enabled_tools = Some(vec!["echo".into(), "mcp__f__add".into(), "fail".into()]);
    server.disabled_tools = vec!["fail".into()];
    let h = connect(&config(vec![("f", server)])).await?;
    assert_eq!(
        h.names(),
        vec!["mcp__f__echo".to_owned(), "mcp__f__add".to_owned()]
    );
    assert_eq!(h.manager.status()[0].tool_count, 2);
    h.manager.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn env_and_cwd_reach_the_server() -> TestResult {
    let dir = tempfile::tempdir()?;
    let mut server = stdio(&[]);
    server.transport = TransportConfig::Stdio {
        command: fixture(),
        args: Vec::new(),
        env: BTreeMap::from([("KIMI_MCP_FIXTURE_VAR".to_owned(), "from-config".to_owned())]),
        cwd: Some(dir.path().to_path_buf()),
    };
    let h = connect(&config(vec![("f", server)])).await?;
    assert_eq!(
        h.call("mcp__f__env", json!({"name": "KIMI_MCP_FIXTURE_VAR"}))
            .await?,
        ToolResult::ok("from-config")
    );
    let cwd = h
        .call("mcp__f__cwd", json!({}))
        .await?
        .text()
        .unwrap_or_default();
    assert_eq!(
        std::fs::canonicalize(cwd)?,
        std::fs::canonicalize(dir.path())?
    );
    h.manager.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_dead_server_gives_error_results_and_shutdown_reaps_children() -> TestResult {
    let h = connect(&config(vec![("a", stdio(&[])), ("b", stdio(&[]))])).await?;
    let pids: Vec<u32> = h.manager.status().iter().filter_map(|s| s.pid).collect();
    assert_eq!(pids.len(), 2);
    assert!(pids.iter().all(|pid| alive(*pid)));

    let crashed = h.call("mcp__a__crash", json!({})).await?;
    assert!(crashed.is_error);
    assert!(
        crashed
            .text()
            .unwrap_or_default()
            .starts_with("MCP server `a` is not connected"),
        "{crashed:?}"
    );
    let after = h.call("mcp__a__echo", json!({"text": "x"})).await?;
    assert!(
        after.is_error
            && after
                .text()
                .unwrap_or_default()
                .contains("is not connected")
    );

    let held = h.tool("mcp__b__echo")?;
    let Harness { manager, ctx, .. } = h;
    manager.shutdown().await;
    for pid in pids {
        assert!(!alive(pid), "server process {pid} survived shutdown");
    }
    let late = run_tool(held.as_ref(), json!({"text": "x"}), &ctx).await;
    assert!(
        late.is_error
            && late
                .text()
                .unwrap_or_default()
                .starts_with("MCP server `b` is not connected")
    );
    Ok(())
}

// --- streamable HTTP -------------------------------------------------------------------------

#[derive(Clone, Default)]
struct HttpState {
    session: Arc<proto::Session>,
    seen: Arc<Mutex<Vec<(String, String)>>>,
}

async fn mcp_post(State(state): State<HttpState>, headers: HeaderMap, body: String) -> Response {
    for name in ["authorization", "x-fixture"] {
        if let Some(value) = headers.get(name).and_then(|v| v.to_str().ok()) {
            let mut seen = state
                .seen
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            seen.push((name.to_owned(), value.to_owned()));
        }
    }
    let Ok(msg) = serde_json::from_str::<Value>(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    match proto::handle(&state.session, &msg) {
        proto::Reply::Message(reply) => (
            [(header::CONTENT_TYPE, "application/json")],
            reply.to_string(),
        )
            .into_response(),
        proto::Reply::None => StatusCode::ACCEPTED.into_response(),
        proto::Reply::Exit(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

async fn http_fixture() -> Result<(String, HttpState), Box<dyn std::error::Error>> {
    let state = HttpState::default();
    let app = axum::Router::new()
        .route(
            "/mcp",
            axum::routing::post(mcp_post)
                .get(|| async { StatusCode::METHOD_NOT_ALLOWED })
                .delete(|| async { StatusCode::OK }),
        )
        .with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok((url, state))
}

#[tokio::test]
async fn streamable_http_with_headers_and_bearer_token() -> TestResult {
    let (url, state) = http_fixture().await?;
    let mut server = remote(url.clone());
    server.transport = TransportConfig::Http(RemoteConfig {
        url,
        headers: BTreeMap::from([("X-Fixture".to_owned(), "yes".to_owned())]),
        bearer_token_env_var: Some("FIXTURE_TOKEN".to_owned()),
        oauth: false,
    });
    let env = HashMap::from([("FIXTURE_TOKEN".to_owned(), "s3cret".to_owned())]);
    let h = connect_env(&config(vec![("web", server)]), &env).await?;
    assert_eq!(h.warnings, Vec::<String>::new());
    assert_eq!(h.manager.status()[0].transport, "http");
    assert_eq!(h.names().len(), 11);
    assert_eq!(
        h.call("mcp__web__add", json!({"a": 1, "b": 2})).await?,
        ToolResult::ok("3")
    );
    assert_eq!(
        h.call("mcp__web__whoami", json!({})).await?,
        ToolResult::ok("kimi-rs")
    );
    {
        let seen = state
            .seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        assert!(
            seen.contains(&("authorization".into(), "Bearer s3cret".into())),
            "{seen:?}"
        );
        assert!(
            seen.contains(&("x-fixture".into(), "yes".into())),
            "{seen:?}"
        );
    }
    h.manager.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn an_oauth_server_without_a_credentials_folder_says_oauth_is_off() -> TestResult {
    let (url, _state) = http_fixture().await?;
    let mut server = remote(url.clone());
    server.transport = TransportConfig::Http(RemoteConfig {
        url,
        headers: BTreeMap::new(),
        bearer_token_env_var: None,
        oauth: true,
    });
    let h = connect_env(&config(vec![("web", server)]), &HashMap::new()).await?;
    assert_eq!(h.warnings.len(), 1);
    assert!(
        h.warnings[0].contains("needs an OAuth sign-in, and OAuth is off"),
        "{:?}",
        h.warnings
    );
    assert!(matches!(
        h.manager.status()[0].state,
        ServerState::Failed(_)
    ));
    Ok(())
}

#[tokio::test]
async fn missing_bearer_variable_is_a_clear_warning() -> TestResult {
    let (url, _state) = http_fixture().await?;
    let mut server = remote(url.clone());
    server.transport = TransportConfig::Http(RemoteConfig {
        url,
        headers: BTreeMap::new(),
        bearer_token_env_var: Some("KIMI_MCP_UNSET_TOKEN".to_owned()),
        oauth: false,
    });
    let h = connect_env(&config(vec![("web", server)]), &HashMap::new()).await?;
    assert_eq!(h.warnings.len(), 1);
    assert!(
        h.warnings[0].contains("environment variable `KIMI_MCP_UNSET_TOKEN`"),
        "{:?}",
        h.warnings
    );
    Ok(())
}

// --- legacy HTTP+SSE -------------------------------------------------------------------------

#[derive(Clone, Default)]
struct SseState {
    session: Arc<proto::Session>,
    /// Where the open event stream's messages go.
    stream: Arc<Mutex<Option<tokio::sync::mpsc::UnboundedSender<String>>>>,
    seen: Arc<Mutex<Vec<(String, String)>>>,
    /// What the `endpoint` event names.
    endpoint: Arc<Mutex<String>>,
}

fn record_headers(seen: &Mutex<Vec<(String, String)>>, path: &str, headers: &HeaderMap) {
    let mut seen = seen
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    for name in ["authorization", "x-fixture"] {
        if let Some(value) = headers.get(name).and_then(|v| v.to_str().ok()) {
            seen.push((format!("{path} {name}"), value.to_owned()));
        }
    }
}

async fn sse_get(State(state): State<SseState>, headers: HeaderMap) -> Response {
    use axum::response::sse::{Event, Sse};
    record_headers(&state.seen, "GET", &headers);
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    *state
        .stream
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(tx);
    let endpoint = state
        .endpoint
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    let first = futures::stream::once(async move {
        Ok::<_, std::convert::Infallible>(Event::default().event("endpoint").data(endpoint))
    });
    let rest = futures::stream::unfold(rx, |mut rx| async move {
        let data = rx.recv().await?;
        Some((
            Ok::<_, std::convert::Infallible>(Event::default().event("message").data(data)),
            rx,
        ))
    });
    Sse::new(futures::StreamExt::chain(first, rest)).into_response()
}

async fn sse_post(State(state): State<SseState>, headers: HeaderMap, body: String) -> Response {
    record_headers(&state.seen, "POST", &headers);
    let Ok(msg) = serde_json::from_str::<Value>(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    if let proto::Reply::Message(reply) = proto::handle(&state.session, &msg) {
        let stream = state
            .stream
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        match stream {
            Some(tx) if tx.send(reply.to_string()).is_ok() => {}
            _ => return StatusCode::GONE.into_response(),
        }
    }
    StatusCode::ACCEPTED.into_response()
}

async fn sse_fixture(endpoint: &str) -> Result<(String, SseState), Box<dyn std::error::Error>> {
    let state = SseState::default();
    *state
        .endpoint
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = endpoint.to_owned();
    let app = axum::Router::new()
        .route("/sse", axum::routing::get(sse_get))
        .route("/messages", axum::routing::post(sse_post))
        .with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/sse", listener.local_addr()?);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok((url, state))
}

fn sse_server(url: String) -> ServerConfig {
    ServerConfig {
        transport: TransportConfig::Sse(RemoteConfig {
            url,
            headers: BTreeMap::from([("X-Fixture".to_owned(), "yes".to_owned())]),
            bearer_token_env_var: Some("FIXTURE_TOKEN".to_owned()),
            oauth: false,
        }),
        ..stdio(&[])
    }
}

#[tokio::test]
async fn legacy_sse_with_headers_and_bearer_token() -> TestResult {
    let (url, state) = sse_fixture("/messages?sessionId=abc").await?;
    let env = HashMap::from([("FIXTURE_TOKEN".to_owned(), "s3cret".to_owned())]);
    let h = connect_env(&config(vec![("old", sse_server(url))]), &env).await?;
    assert_eq!(h.warnings, Vec::<String>::new());
    assert_eq!(h.manager.status()[0].transport, "sse");
    assert_eq!(h.manager.status()[0].state, ServerState::Connected);
    assert_eq!(h.names().len(), 11);
    assert_eq!(
        h.call("mcp__old__add", json!({"a": 2, "b": 5})).await?,
        ToolResult::ok("7")
    );
    assert_eq!(
        h.call("mcp__old__whoami", json!({})).await?,
        ToolResult::ok("kimi-rs")
    );
    {
        let seen = state
            .seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for expected in [
            ("GET authorization", "Bearer s3cret"),
            ("GET x-fixture", "yes"),
            ("POST authorization", "Bearer s3cret"),
            ("POST x-fixture", "yes"),
        ] {
            assert!(
                seen.contains(&(expected.0.to_owned(), expected.1.to_owned())),
                "{expected:?} in {seen:?}"
            );
        }
    }
    h.manager.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn an_sse_endpoint_on_another_origin_is_refused() -> TestResult {
    let (url, state) = sse_fixture("http://127.0.0.2:1/messages").await?;
    let env = HashMap::from([("FIXTURE_TOKEN".to_owned(), "s3cret".to_owned())]);
    let h = connect_env(&config(vec![("old", sse_server(url))]), &env).await?;
    assert_eq!(h.warnings.len(), 1, "{:?}", h.warnings);
    assert!(
        h.warnings[0].contains("another origin (http://127.0.0.2:1/messages)"),
        "{:?}",
        h.warnings
    );
    let posts = state
        .seen
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .filter(|(k, _)| k.starts_with("POST"))
        .count();
    assert_eq!(posts, 0, "nothing was sent");
    Ok(())
}
