//! MCP OAuth end to end, all on loopback: one axum app plays the authorization server
//! (protected resource metadata, authorization server metadata, dynamic client registration,
//! an `/authorize` that approves at once by redirecting, a `/token` that checks PKCE and
//! refreshes) and the MCP server (streamable HTTP or legacy SSE, answering 401 without a
//! valid bearer token). The test plays the browser: it opens the URL the authenticate tool
//! reports and follows the redirect to kimi-rs's loopback callback.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use kimi_mcp::oauth::TokenDir;
use kimi_mcp::{McpConfig, McpManager, RemoteConfig, ServerConfig, ServerState, TransportConfig};
use kimi_test_support::mcp_fixture::oauth::{play_browser, start};
use kimi_tools::tool::run_tool;
use kimi_tools::{
    LateTools, ProgressSink, Resolution, Tool, ToolContext, ToolProgress, ToolResult,
};
use pretty_assertions::assert_eq;
use serde_json::json;
use tokio_util::sync::CancellationToken;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Upper bound of every wait in these tests.
const LIMIT: Duration = Duration::from_secs(20);

fn server(url: String, sse: bool, oauth: bool) -> ServerConfig {
    let remote = RemoteConfig {
        url,
        headers: BTreeMap::new(),
        bearer_token_env_var: None,
        oauth,
    };
    ServerConfig {
        transport: if sse {
            TransportConfig::Sse(remote)
        } else {
            TransportConfig::Http(remote)
        },
        enabled: true,
        startup_timeout: Some(LIMIT),
        tool_timeout: None,
        enabled_tools: None,
        disabled_tools: Vec::new(),
        source: PathBuf::from("/test/mcp.json"),
    }
}

fn config(server: ServerConfig, home: &std::path::Path) -> McpConfig {
    McpConfig {
        servers: BTreeMap::from([("web".to_owned(), server)]),
        token_dir: Some(TokenDir::in_home(home)),
        ..McpConfig::default()
    }
}

fn names(late: &LateTools) -> Vec<String> {
    late.tools().iter().map(|t| t.name().to_owned()).collect()
}

/// Run the authenticate tool, playing the browser when it reports the URL.
async fn authenticate(
    tool: Arc<dyn Tool>,
    ctx: &ToolContext,
) -> Result<ToolResult, Box<dyn std::error::Error>> {
    let Resolution::Run(exec) = tool.resolve(json!({}), ctx)? else {
        return Err("the authenticate tool did not plan a run".into());
    };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let run = exec.execute(ctx, CancellationToken::new(), ProgressSink::new(tx));
    tokio::pin!(run);
    let url = tokio::select! {
        update = rx.recv() => match update {
            Some(ToolProgress::Status(text)) => text
                .split_whitespace()
                .find(|w| w.starts_with("http://"))
                .ok_or_else(|| format!("no URL in {text}"))?
                .to_owned(),
            other => return Err(format!("unexpected progress {other:?}").into()),
        },
        result = &mut run => return Err(format!("ended before showing a URL: {result:?}").into()),
    };
    let (browser, result) = tokio::join!(play_browser(&url), tokio::time::timeout(LIMIT, run));
    browser?;
    Ok(result?)
}

async fn settled(manager: &McpManager) -> Result<(), Box<dyn std::error::Error>> {
    tokio::time::timeout(LIMIT, manager.wait_settled()).await?;
    Ok(())
}

async fn sign_in_then_use(sse: bool) -> TestResult {
    let (url, state) = start(sse).await?;
    let home = tempfile::tempdir()?;
    let cfg = config(server(url.clone(), sse, false), home.path());
    let late = LateTools::new();
    let (manager, initial) = McpManager::start_with_env(&cfg, home.path(), &HashMap::new(), &late);
    assert_eq!(initial, Vec::<String>::new());
    settled(&manager).await?;

    // A 401 makes the server "needs login", with only the sign-in tool offered.
    let status = manager.status();
    let ServerState::NeedsLogin(how) = &status[0].state else {
        return Err(format!("expected needs login, got {status:?}").into());
    };
    assert!(how.contains("kimi-rs mcp login web"), "{how}");
    assert!(how.contains("mcp__web__authenticate"), "{how}");
    let mut progress = manager.progress();
    let warnings = progress.unreported();
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("MCP server `web` needs login")),
        "{warnings:?}"
    );
    assert_eq!(names(&late), vec!["mcp__web__authenticate".to_owned()]);

    let ctx = ToolContext::new(home.path(), &home.path().join("agent"));
    let tool = late.tools().remove(0);
    let result = authenticate(tool, &ctx).await?;
    assert!(!result.is_error, "{result:?}");
    let text = result.text().unwrap_or_default();
    assert!(text.contains("Signed in to MCP server `web`"), "{text}");
    assert!(text.contains("mcp__web__add"), "{text}");

    // Registered with the loopback callback; code exchanged with PKCE; the code's token
    // expired at once, so it was refreshed before use.
    {
        let log = state.log();
        assert_eq!(log.registered.len(), 1);
        assert!(
            log.registered[0].starts_with("http://127.0.0.1:")
                && log.registered[0].ends_with("/callback"),
            "{:?}",
            log.registered
        );
        assert_eq!(log.grants, vec!["authorization_code", "refresh_token"]);
        assert!(log.accepted.iter().all(|t| t == "tok-2") && !log.accepted.is_empty());
    }
    assert_eq!(manager.status()[0].state, ServerState::Connected);
    let now = names(&late);
    assert!(
        !now.contains(&"mcp__web__authenticate".to_owned()),
        "{now:?}"
    );
    let add = late
        .tools()
        .into_iter()
        .find(|t| t.name() == "mcp__web__add")
        .ok_or("no add tool")?;
    assert_eq!(
        run_tool(add.as_ref(), json!({"a": 2, "b": 3}), &ctx).await,
        ToolResult::ok("5")
    );

    // The token file is the user's alone.
    let dir = TokenDir::in_home(home.path());
    let file = dir.file("web", &url);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&file)?.permissions().mode() & 0o777,
            0o600
        );
    }
    assert!(std::fs::read_to_string(&file)?.contains("ref-2"));
    manager.shutdown().await;

    // A new session uses the stored sign-in without asking again.
    let late = LateTools::new();
    let (manager, _) = McpManager::start_with_env(&cfg, home.path(), &HashMap::new(), &late);
    settled(&manager).await?;
    assert_eq!(manager.status()[0].state, ServerState::Connected);
    assert!(names(&late).contains(&"mcp__web__add".to_owned()));
    assert_eq!(state.log().registered.len(), 1, "no second registration");
    if sse {
        // The stream outlives the token: the server refuses it on a message, kimi-rs
        // refreshes it and sends the message once more.
        let add = late
            .tools()
            .into_iter()
            .find(|t| t.name() == "mcp__web__add")
            .ok_or("no add tool")?;
        state.expire_token();
        assert_eq!(
            run_tool(add.as_ref(), json!({"a": 4, "b": 5}), &ctx).await,
            ToolResult::ok("9")
        );
        let log = state.log();
        assert_eq!(
            log.grants,
            vec!["authorization_code", "refresh_token", "refresh_token"]
        );
        assert_eq!(log.accepted.last().map(String::as_str), Some("tok-3"));
    }
    manager.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn streamable_http_server_signs_in_with_oauth_and_pkce() -> TestResult {
    sign_in_then_use(false).await
}

#[tokio::test]
async fn sse_server_signs_in_with_oauth_and_pkce() -> TestResult {
    sign_in_then_use(true).await
}

#[tokio::test]
async fn auth_oauth_without_a_stored_token_needs_login_before_connecting() -> TestResult {
    let (url, state) = start(false).await?;
    let home = tempfile::tempdir()?;
    let cfg = config(server(url, false, true), home.path());
    let late = LateTools::new();
    let (manager, _) = McpManager::start_with_env(&cfg, home.path(), &HashMap::new(), &late);
    settled(&manager).await?;
    assert!(matches!(
        manager.status()[0].state,
        ServerState::NeedsLogin(_)
    ));
    assert_eq!(state.log().refused, 0, "it did not try to connect");
    assert_eq!(names(&late), vec!["mcp__web__authenticate".to_owned()]);
    manager.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_server_with_static_headers_that_answers_401_fails_instead_of_signing_in() -> TestResult {
    let (url, _state) = start(false).await?;
    let home = tempfile::tempdir()?;
    let mut server = server(url, false, false);
    if let TransportConfig::Http(remote) = &mut server.transport {
        remote
            .headers
            .insert("X-Api-Key".to_owned(), "k".to_owned());
    }
    let cfg = config(server, home.path());
    let late = LateTools::new();
    let (manager, _) = McpManager::start_with_env(&cfg, home.path(), &HashMap::new(), &late);
    settled(&manager).await?;
    assert!(matches!(manager.status()[0].state, ServerState::Failed(_)));
    assert_eq!(names(&late), Vec::<String>::new());
    Ok(())
}

/// What `kimi-rs mcp login` does: no 401 challenge to start from, so discovery probes the
/// server's well-known protected resource metadata.
#[tokio::test]
async fn login_without_a_challenge_discovers_from_the_server_url() -> TestResult {
    let (url, state) = start(false).await?;
    let home = tempfile::tempdir()?;
    let dir = TokenDir::in_home(home.path());
    let flow = kimi_mcp::oauth::begin_login(&dir, "web", &url, "kimi-rs", None).await?;
    let authorization = flow.authorization_url().to_owned();
    assert!(
        authorization.contains("code_challenge_method=S256"),
        "{authorization}"
    );
    let never = CancellationToken::new();
    let finish = flow.finish(LIMIT, &never);
    let (browser, finished) = tokio::join!(play_browser(&authorization), finish);
    browser?;
    finished?;
    assert!(dir.has_tokens("web", &url));
    assert_eq!(state.log().grants, vec!["authorization_code"]);
    Ok(())
}

/// A denied sign-in ends the wait at once with the server's reason; a cancelled one too.
#[tokio::test]
async fn a_denied_or_cancelled_sign_in_ends_the_wait() -> TestResult {
    let (url, _state) = start(false).await?;
    let home = tempfile::tempdir()?;
    let dir = TokenDir::in_home(home.path());
    let flow = kimi_mcp::oauth::begin_login(&dir, "web", &url, "kimi-rs", None).await?;
    let authorization = url::Url::parse(flow.authorization_url())?;
    let redirect = authorization
        .query_pairs()
        .find(|(k, _)| k == "redirect_uri")
        .map(|(_, v)| v.into_owned())
        .ok_or("no redirect_uri")?;
    let denied = format!("{redirect}?error=access_denied&error_description=user%20said%20no");
    let never = CancellationToken::new();
    let finish = flow.finish(LIMIT, &never);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (answer, finished) = tokio::join!(reqwest::get(&denied), finish);
    assert_eq!(answer?.status(), reqwest::StatusCode::OK);
    let error = finished
        .err()
        .ok_or("a denied sign-in succeeded")?
        .to_string();
    assert!(
        error.contains("access_denied") && error.contains("user said no"),
        "{error}"
    );
    assert!(!dir.has_tokens("web", &url));

    let flow = kimi_mcp::oauth::begin_login(&dir, "web", &url, "kimi-rs", None).await?;
    let cancel = CancellationToken::new();
    cancel.cancel();
    let error = flow
        .finish(LIMIT, &cancel)
        .await
        .err()
        .ok_or("not cancelled")?;
    assert!(error.to_string().contains("cancelled"), "{error}");
    Ok(())
}
