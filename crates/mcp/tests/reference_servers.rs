//! kimi-mcp against the MCP project's own reference servers from npm, over all three
//! transports: `@modelcontextprotocol/server-everything` speaks stdio, SSE and streamable HTTP
//! itself; `@modelcontextprotocol/server-filesystem` speaks stdio, and `supergateway` puts it
//! behind SSE and streamable HTTP. `.ci/run` installs the pinned versions into
//! `~/.cache/kimi-rs-ci/mcp-servers` (or `$KIMI_RS_MCP_SERVERS_DIR`). Without them these tests
//! fail saying so; `KIMI_RS_SKIP_NPM_MCP=1` skips them.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kimi_mcp::{McpConfig, McpManager, RemoteConfig, ServerConfig, ServerState, TransportConfig};
use kimi_tools::tool::run_tool;
use kimi_tools::{ToolContext, ToolResult};
use serde_json::{Value, json};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// How long a server may take to start listening (node start-up on a loaded machine).
const LISTEN_WAIT: Duration = Duration::from_secs(60);

struct Npm {
    node_modules: PathBuf,
}

impl Npm {
    /// The installed servers, `None` when skipped; panics with what to run when missing.
    fn find() -> Option<Npm> {
        if std::env::var("KIMI_RS_SKIP_NPM_MCP").is_ok_and(|v| v == "1") {
            eprintln!("skipped: KIMI_RS_SKIP_NPM_MCP=1 (the npm MCP reference servers)");
            return None;
        }
        let dir = std::env::var_os("KIMI_RS_MCP_SERVERS_DIR")
            .map(PathBuf::from)
            .or_else(|| std::env::home_dir().map(|h| h.join(".cache/kimi-rs-ci/mcp-servers")))
            .unwrap_or_default();
        let npm = Npm {
            node_modules: dir.join("node_modules"),
        };
        for script in [npm.everything(), npm.filesystem(), npm.gateway()] {
            assert!(
                script.is_file(),
                "{} is missing: install the MCP reference servers with `bash .ci/run` (or `npm install --prefix {} @modelcontextprotocol/server-everything@2026.8.31 @modelcontextprotocol/server-filesystem@2026.8.31 supergateway@4.0.0`), or set KIMI_RS_SKIP_NPM_MCP=1 to skip these tests",
                script.display(),
                dir.display()
            );
        }
        let node = Command::new("node").arg("--version").output();
        assert!(
            node.is_ok_and(|o| o.status.success()),
            "`node` is not on PATH: install Node.js (the reference servers run on it), or set KIMI_RS_SKIP_NPM_MCP=1"
        );
        Some(npm)
    }

    fn everything(&self) -> PathBuf {
        self.node_modules
            .join("@modelcontextprotocol/server-everything/dist/index.js")
    }

    fn filesystem(&self) -> PathBuf {
        self.node_modules
            .join("@modelcontextprotocol/server-filesystem/dist/index.js")
    }

    fn gateway(&self) -> PathBuf {
        self.node_modules.join("supergateway/dist/index.js")
    }
}

/// A server process listening on a loopback port, killed (with its children) on drop.
struct Listening {
    child: Child,
    port: u16,
}

impl Drop for Listening {
    fn drop(&mut self) {
        // Its own process group: supergateway's stdio child goes too.
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> Result<u16, std::io::Error> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// Start `node args…` with `PORT` set and wait (bounded) until the port accepts connections.
fn listen(args: &[&str]) -> Result<Listening, Box<dyn std::error::Error>> {
    use std::os::unix::process::CommandExt;
    let port = free_port()?;
    let child = Command::new("node")
        .args(args.iter().map(|a| a.replace("{port}", &port.to_string())))
        .env("PORT", port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()?;
    let mut server = Listening { child, port };
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Some(status) = server.child.try_wait()? {
            return Err(format!("node {args:?} exited with {status} before listening").into());
        }
        if started.elapsed() > LISTEN_WAIT {
            return Err(
                format!("node {args:?} did not listen on {port} within {LISTEN_WAIT:?}").into(),
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(server)
}

fn base(transport: TransportConfig) -> ServerConfig {
    ServerConfig {
        transport,
        enabled: true,
        startup_timeout: Some(Duration::from_secs(60)),
        tool_timeout: None,
        enabled_tools: None,
        disabled_tools: Vec::new(),
        source: PathBuf::from("/test/mcp.json"),
    }
}

fn stdio(script: &Path, args: &[&str]) -> ServerConfig {
    base(TransportConfig::Stdio {
        command: "node".to_owned(),
        args: std::iter::once(script.display().to_string())
            .chain(args.iter().map(|a| (*a).to_owned()))
            .collect(),
        env: BTreeMap::new(),
        cwd: None,
    })
}

fn remote(url: String) -> RemoteConfig {
    RemoteConfig {
        url,
        headers: BTreeMap::new(),
        bearer_token_env_var: None,
        oauth: false,
    }
}

/// Connect to one server named `name` and check it is connected.
async fn connect(
    name: &str,
    server: ServerConfig,
    cwd: &Path,
) -> Result<McpManager, Box<dyn std::error::Error>> {
    let config = McpConfig {
        servers: BTreeMap::from([(name.to_owned(), server)]),
        ..McpConfig::default()
    };
    let (manager, warnings) = McpManager::connect_with_env(&config, cwd, &HashMap::new()).await;
    if !warnings.is_empty() {
        return Err(format!("{warnings:?}").into());
    }
    assert_eq!(manager.status()[0].state, ServerState::Connected);
    Ok(manager)
}

async fn call(manager: &McpManager, ctx: &ToolContext, name: &str, args: Value) -> ToolResult {
    let tool = manager
        .tools()
        .into_iter()
        .find(|t| t.name() == name)
        .unwrap_or_else(|| panic!("no tool {name}"));
    run_tool(tool.as_ref(), args, ctx).await
}

/// What every transport of server-everything must do: list its tools and answer calls.
async fn check_everything(server: ServerConfig) -> TestResult {
    let dir = tempfile::tempdir()?;
    let ctx = ToolContext::new(dir.path(), &dir.path().join("agent"));
    let manager = connect("everything", server, dir.path()).await?;
    let names: Vec<String> = manager
        .tools()
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    for expected in ["mcp__everything__echo", "mcp__everything__get-sum"] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} in {names:?}"
        );
    }
    let echo = call(
        &manager,
        &ctx,
        "mcp__everything__echo",
        json!({"message": "hi from kimi-rs"}),
    )
    .await;
    assert_eq!(echo, ToolResult::ok("Echo: hi from kimi-rs"));
    let sum = call(
        &manager,
        &ctx,
        "mcp__everything__get-sum",
        json!({"a": 2, "b": 40}),
    )
    .await;
    assert!(
        !sum.is_error && sum.text().unwrap_or_default().contains("42"),
        "{sum:?}"
    );
    manager.shutdown().await;
    Ok(())
}

/// What every transport of server-filesystem must do: read, list and write inside its root.
async fn check_filesystem(server: impl FnOnce(&Path) -> ServerConfig) -> TestResult {
    let dir = tempfile::tempdir()?;
    let root = std::fs::canonicalize(dir.path())?;
    std::fs::write(root.join("notes.txt"), "first line\nsecond line\n")?;
    let ctx = ToolContext::new(&root, &root.join("agent"));
    let manager = connect("fs", server(&root), &root).await?;
    let path = |name: &str| root.join(name).display().to_string();
    let read = call(
        &manager,
        &ctx,
        "mcp__fs__read_text_file",
        json!({"path": path("notes.txt")}),
    )
    .await;
    // The server also sends the text as structured content, which is kept (JSON-escaped) after
    // it; the file's text comes first, as it is.
    assert!(
        !read.is_error
            && read
                .text()
                .unwrap_or_default()
                .starts_with("first line\nsecond line\n"),
        "{read:?}"
    );
    let listed = call(
        &manager,
        &ctx,
        "mcp__fs__list_directory",
        json!({"path": path("")}),
    )
    .await;
    assert!(
        listed
            .text()
            .unwrap_or_default()
            .contains("[FILE] notes.txt"),
        "{listed:?}"
    );
    let wrote = call(
        &manager,
        &ctx,
        "mcp__fs__write_file",
        json!({"path": path("new.txt"), "content": "written over MCP"}),
    )
    .await;
    assert!(!wrote.is_error, "{wrote:?}");
    assert_eq!(
        std::fs::read_to_string(root.join("new.txt"))?,
        "written over MCP"
    );
    let outside = call(
        &manager,
        &ctx,
        "mcp__fs__read_text_file",
        json!({"path": "/etc/hostname"}),
    )
    .await;
    assert!(outside.is_error, "outside its root: {outside:?}");
    manager.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_over_stdio() -> TestResult {
    let Some(npm) = Npm::find() else {
        return Ok(());
    };
    check_everything(stdio(&npm.everything(), &["stdio"])).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_over_sse() -> TestResult {
    let Some(npm) = Npm::find() else {
        return Ok(());
    };
    let script = npm.everything().display().to_string();
    let server = listen(&[&script, "sse"])?;
    let url = format!("http://127.0.0.1:{}/sse", server.port);
    check_everything(base(TransportConfig::Sse(remote(url)))).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_over_streamable_http() -> TestResult {
    let Some(npm) = Npm::find() else {
        return Ok(());
    };
    let script = npm.everything().display().to_string();
    let server = listen(&[&script, "streamableHttp"])?;
    let url = format!("http://127.0.0.1:{}/mcp", server.port);
    check_everything(base(TransportConfig::Http(remote(url)))).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_filesystem_over_stdio() -> TestResult {
    let Some(npm) = Npm::find() else {
        return Ok(());
    };
    let script = npm.filesystem();
    check_filesystem(|root| stdio(&script, &[&root.display().to_string()])).await
}

/// `supergateway --stdio "node server-filesystem ROOT" --outputTransport <kind>`.
fn gateway(npm: &Npm, root: &Path, kind: &str) -> Result<Listening, Box<dyn std::error::Error>> {
    let stdio = format!("node '{}' '{}'", npm.filesystem().display(), root.display());
    let gateway = npm.gateway().display().to_string();
    let mut args = vec![
        gateway.as_str(),
        "--stdio",
        stdio.as_str(),
        "--outputTransport",
        kind,
        "--port",
        "{port}",
        "--logLevel",
        "none",
    ];
    if kind == "streamableHttp" {
        args.push("--stateful");
    }
    listen(&args)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_filesystem_over_sse() -> TestResult {
    let Some(npm) = Npm::find() else {
        return Ok(());
    };
    let mut running = None;
    let result = check_filesystem(|root| {
        let server = gateway(&npm, root, "sse").unwrap_or_else(|e| panic!("{e}"));
        let url = format!("http://127.0.0.1:{}/sse", server.port);
        running = Some(server);
        base(TransportConfig::Sse(remote(url)))
    })
    .await;
    drop(running);
    result
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_filesystem_over_streamable_http() -> TestResult {
    let Some(npm) = Npm::find() else {
        return Ok(());
    };
    let mut running = None;
    let result = check_filesystem(|root| {
        let server = gateway(&npm, root, "streamableHttp").unwrap_or_else(|e| panic!("{e}"));
        let url = format!("http://127.0.0.1:{}/mcp", server.port);
        running = Some(server);
        base(TransportConfig::Http(remote(url)))
    })
    .await;
    drop(running);
    result
}
