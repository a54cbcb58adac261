//! `mcp.json` loading (surface.md §10): the three files, their precedence and the validation of
//! every server entry, with errors that name the file, the server and the fix.
//!
//! Files, later wins per server name:
//! 1. `<kimi home>/mcp.json`
//! 2. `<git root>/.mcp.json` (Claude-Code style; a relative stdio `cwd` is resolved against the
//!    root, and a stdio server without `cwd` runs in the root)
//! 3. `<cwd>/.kimi-code/mcp.json`
//!
//! Project files are loaded unconditionally: the workspace-trust prompt of Kimi Code is out of
//! scope here and belongs to the host, which can skip calling [`load_config`] for untrusted
//! workspaces or filter [`McpConfig::servers`] by [`ServerConfig::source`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

/// Largest accepted `startupTimeoutMs` / `toolTimeoutMs` (the reference's `2^31 - 1`).
pub const MAX_TIMEOUT_MS: u64 = 2_147_483_647;

/// The merged configuration: every server by name (sorted, so start-up order is stable).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct McpConfig {
    pub servers: BTreeMap<String, ServerConfig>,
}

/// One server entry after validation.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    pub transport: TransportConfig,
    /// `enabled: false` keeps the server listed (as disabled) without starting it.
    pub enabled: bool,
    /// `startupTimeoutMs`; `None` = the default (30 s).
    pub startup_timeout: Option<Duration>,
    /// `toolTimeoutMs`; `None` = the default (60 s).
    pub tool_timeout: Option<Duration>,
    /// `enabledTools`: when set, only these tools (by the server's own tool name) are exposed.
    pub enabled_tools: Option<Vec<String>>,
    /// `disabledTools`: never exposed, even when listed in `enabled_tools`.
    pub disabled_tools: Vec<String>,
    /// The file this entry came from (for status panels and error messages).
    pub source: PathBuf,
}

#[derive(Debug, Clone, PartialEq)]
pub enum TransportConfig {
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        /// Absolute when it came from `.mcp.json`; otherwise as written (relative paths are
        /// resolved against the session cwd when the server starts).
        cwd: Option<PathBuf>,
    },
    Http(RemoteConfig),
    /// Legacy HTTP+SSE; parsed so the user gets a clear "not supported" status, never started.
    Sse(RemoteConfig),
}

#[derive(Debug, Clone, PartialEq)]
pub struct RemoteConfig {
    pub url: String,
    pub headers: BTreeMap<String, String>,
    /// Name of the environment variable holding a bearer token.
    pub bearer_token_env_var: Option<String>,
}

impl TransportConfig {
    /// `stdio`, `http` or `sse`.
    pub fn kind(&self) -> &'static str {
        match self {
            TransportConfig::Stdio { .. } => "stdio",
            TransportConfig::Http(_) => "http",
            TransportConfig::Sse(_) => "sse",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum McpConfigError {
    #[error("Cannot read MCP config {}: {source}. Check that the file is readable.", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "Invalid JSON in MCP config {}: {source}. Fix the syntax (an empty file means no servers).",
        path.display()
    )]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error(
        "Invalid MCP config {}: {message}. Expected {{\"mcpServers\": {{\"<name>\": {{...}}}}}}.",
        path.display()
    )]
    Shape { path: PathBuf, message: String },
    #[error("Invalid MCP server `{server}` in {}: {message}.", path.display())]
    Server {
        path: PathBuf,
        server: String,
        message: String,
    },
}

/// Load and merge the three `mcp.json` files for a session in `cwd`. Missing files count as
/// empty; the first invalid file stops loading with an error naming it.
pub fn load_config(kimi_home: &Path, cwd: &Path) -> Result<McpConfig, McpConfigError> {
    let project_root = find_git_root(cwd).unwrap_or_else(|| cwd.to_path_buf());
    let layers = [
        (kimi_home.join("mcp.json"), None),
        (project_root.join(".mcp.json"), Some(project_root.as_path())),
        (cwd.join(".kimi-code").join("mcp.json"), None),
    ];
    let mut config = McpConfig::default();
    for (path, stdio_cwd_base) in layers {
        let Some(text) = read_optional(&path)? else {
            continue;
        };
        for (name, server) in parse_file(&text, &path, stdio_cwd_base)? {
            config.servers.insert(name, server);
        }
    }
    Ok(config)
}

/// Parse one file's text. `stdio_cwd_base` is set for `.mcp.json`, whose stdio servers run in
/// the project root unless their `cwd` says otherwise.
pub fn parse_file(
    text: &str,
    path: &Path,
    stdio_cwd_base: Option<&Path>,
) -> Result<Vec<(String, ServerConfig)>, McpConfigError> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let data: Value = serde_json::from_str(text).map_err(|source| McpConfigError::Json {
        path: path.to_path_buf(),
        source,
    })?;
    let shape = |message: &str| McpConfigError::Shape {
        path: path.to_path_buf(),
        message: message.to_owned(),
    };
    let Value::Object(root) = data else {
        return Err(shape("the top level must be a JSON object"));
    };
    let servers = match root.get("mcpServers") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(servers)) => servers,
        Some(_) => return Err(shape("\"mcpServers\" must be an object")),
    };
    let mut out = Vec::with_capacity(servers.len());
    for (name, value) in servers {
        let server = parse_server(value, path, stdio_cwd_base).map_err(|message| {
            McpConfigError::Server {
                path: path.to_path_buf(),
                server: name.clone(),
                message,
            }
        })?;
        out.push((name.clone(), server));
    }
    Ok(out)
}

fn parse_server(
    value: &Value,
    source: &Path,
    stdio_cwd_base: Option<&Path>,
) -> Result<ServerConfig, String> {
    let Value::Object(obj) = value else {
        return Err(
            "the entry must be an object with `command` (stdio) or `url` (http)".to_owned(),
        );
    };
    // `type` is what Claude Code's `.mcp.json` uses; accept it when `transport` is absent.
    let declared = match obj.get("transport").or_else(|| obj.get("type")) {
        None | Some(Value::Null) => None,
        Some(Value::String(kind)) => Some(kind.as_str()),
        Some(_) => return Err("`transport` must be \"stdio\", \"http\" or \"sse\"".to_owned()),
    };
    let kind = match declared {
        Some(kind) => kind,
        None if obj.contains_key("command") => "stdio",
        None if obj.contains_key("url") => "http",
        None => {
            return Err(
                "set `command` (a local stdio server) or `url` (a remote HTTP server)".to_owned(),
            );
        }
    };
    let transport = match kind {
        "stdio" => {
            let command = opt_string(obj, "command")?
                .filter(|c| !c.trim().is_empty())
                .ok_or("a stdio server needs a non-empty `command`")?;
            let cwd = opt_string(obj, "cwd")?.map(PathBuf::from);
            let cwd = match (stdio_cwd_base, cwd) {
                (Some(base), Some(cwd)) => Some(base.join(cwd)),
                (Some(base), None) => Some(base.to_path_buf()),
                (None, cwd) => cwd,
            };
            TransportConfig::Stdio {
                command,
                args: opt_string_list(obj, "args")?.unwrap_or_default(),
                env: opt_string_map(obj, "env")?,
                cwd,
            }
        }
        "http" | "streamable-http" | "streamableHttp" => TransportConfig::Http(parse_remote(obj)?),
        "sse" => TransportConfig::Sse(parse_remote(obj)?),
        other => {
            return Err(format!(
                "unknown transport \"{other}\"; use \"stdio\", \"http\" or \"sse\""
            ));
        }
    };
    let enabled = match obj.get("enabled") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err("`enabled` must be true or false".to_owned()),
    };
    Ok(ServerConfig {
        transport,
        enabled,
        startup_timeout: opt_timeout(obj, "startupTimeoutMs")?,
        tool_timeout: opt_timeout(obj, "toolTimeoutMs")?,
        enabled_tools: opt_string_list(obj, "enabledTools")?,
        disabled_tools: opt_string_list(obj, "disabledTools")?.unwrap_or_default(),
        source: source.to_path_buf(),
    })
}

fn parse_remote(obj: &Map<String, Value>) -> Result<RemoteConfig, String> {
    let url = opt_string(obj, "url")?.ok_or("a remote server needs a `url`")?;
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(format!(
            "`url` must be an http:// or https:// URL, got \"{url}\""
        ));
    }
    let bearer_token_env_var = opt_string(obj, "bearerTokenEnvVar")?;
    if bearer_token_env_var.as_deref() == Some("") {
        return Err("`bearerTokenEnvVar` must name an environment variable".to_owned());
    }
    Ok(RemoteConfig {
        url,
        headers: opt_string_map(obj, "headers")?,
        bearer_token_env_var,
    })
}

fn opt_string(obj: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("`{key}` must be a string")),
    }
}

fn opt_string_list(obj: &Map<String, Value>, key: &str) -> Result<Option<Vec<String>>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::String(s) => Ok(s.clone()),
                _ => Err(format!("`{key}` must be an array of strings")),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(format!("`{key}` must be an array of strings")),
    }
}

fn opt_string_map(obj: &Map<String, Value>, key: &str) -> Result<BTreeMap<String, String>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                _ => Err(format!("`{key}.{k}` must be a string")),
            })
            .collect(),
        Some(_) => Err(format!("`{key}` must be an object of strings")),
    }
}

fn opt_timeout(obj: &Map<String, Value>, key: &str) -> Result<Option<Duration>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_u64() {
            Some(ms) if (1..=MAX_TIMEOUT_MS).contains(&ms) => Ok(Some(Duration::from_millis(ms))),
            _ => Err(format!(
                "`{key}` must be a whole number of milliseconds between 1 and {MAX_TIMEOUT_MS}, got {n}"
            )),
        },
        Some(_) => Err(format!(
            "`{key}` must be a whole number of milliseconds between 1 and {MAX_TIMEOUT_MS}"
        )),
    }
}

fn read_optional(path: &Path) -> Result<Option<String>, McpConfigError> {
    // Never blocks: a FIFO at mcp.json is refused, not opened.
    match kimi_config::read_regular_file(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(McpConfigError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// The nearest ancestor of `start` (itself included) holding `.git` (a directory, or a file for
/// worktrees and submodules).
fn find_git_root(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|dir| dir.join(".git").exists())
        .map(Path::to_path_buf)
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
