//! `mcp.json` loading (surface.md §10): the three files, their precedence and the validation of
//! every server entry, with errors that name the file, the server and the fix.
//!
//! Files, later wins per server name:
//! 1. `<kimi home>/mcp.json`
//! 2. `<git root>/.mcp.json` (Claude-Code style; a relative stdio `cwd` is resolved against the
//!    root, and a stdio server without `cwd` runs in the root)
//! 3. `<cwd>/.kimi-code/mcp.json`
//!
//! The two project files are loaded only for a trusted folder (`kimi_config::trust`); for any
//! other their servers are listed in [`McpConfig::untrusted`], so the host can say what it
//! skipped. A bad file or entry disables only itself.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

/// Largest accepted `startupTimeoutMs` / `toolTimeoutMs` (the reference's `2^31 - 1`).
pub const MAX_TIMEOUT_MS: u64 = 2_147_483_647;

/// The keys a server entry may have (`type` is Claude Code's name for `transport`).
const SERVER_KEYS: &[&str] = &[
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "bearerTokenEnvVar",
    "auth",
    "transport",
    "type",
    "enabled",
    "startupTimeoutMs",
    "toolTimeoutMs",
    "enabledTools",
    "disabledTools",
];

/// The merged configuration: every server by name (sorted, so start-up order is stable).
#[derive(Debug, Default)]
pub struct McpConfig {
    pub servers: BTreeMap<String, ServerConfig>,
    /// Project-level servers (`.mcp.json`, `.kimi-code/mcp.json`) left out because the folder
    /// is not trusted, in file order: what trusting it would start.
    pub untrusted: Vec<(String, ServerConfig)>,
    /// Files and entries that could not be loaded. A bad file disables only that file and a
    /// bad entry only itself; everything else still loads.
    pub problems: Vec<McpConfigError>,
    /// Accepted with a remark (an unknown key that is ignored).
    pub warnings: Vec<String>,
    /// Where OAuth sign-ins of remote servers are kept (`<kimi home>/credentials/mcp`); `None`
    /// turns OAuth off (a server asking for it then fails with a message).
    pub token_dir: Option<crate::oauth::TokenDir>,
}

/// One file's servers and the entries of it that were refused.
#[derive(Debug, Default)]
pub struct ParsedFile {
    pub servers: Vec<(String, ServerConfig)>,
    pub problems: Vec<McpConfigError>,
    pub warnings: Vec<String>,
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
    /// The legacy HTTP+SSE transport (a GET event stream plus POSTs to the endpoint it names).
    Sse(RemoteConfig),
}

#[derive(Debug, Clone, PartialEq)]
pub struct RemoteConfig {
    pub url: String,
    pub headers: BTreeMap<String, String>,
    /// Name of the environment variable holding a bearer token.
    pub bearer_token_env_var: Option<String>,
    /// `"auth": "oauth"`: the server needs an OAuth login.
    pub oauth: bool,
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

impl ServerConfig {
    /// What starting this server runs or contacts, as a user should see it before trusting
    /// it: `stdio: npx -y pkg (in /repo)` or `http: https://host/mcp`.
    pub fn describe(&self) -> String {
        match &self.transport {
            TransportConfig::Stdio {
                command, args, cwd, ..
            } => {
                let words =
                    std::iter::once(command.as_str()).chain(args.iter().map(String::as_str));
                let line = words
                    .map(|w| {
                        shlex::try_quote(w)
                            .map_or_else(|_| format!("{w:?}"), std::borrow::Cow::into_owned)
                    })
                    .collect::<Vec<_>>()
                    .join(" ");
                match cwd {
                    Some(dir) => format!("stdio: {line} (in {})", dir.display()),
                    None => format!("stdio: {line}"),
                }
            }
            TransportConfig::Http(remote) => format!("http: {}", remote.url),
            TransportConfig::Sse(remote) => format!("sse: {}", remote.url),
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
    #[error("Invalid MCP server `{server}` in {}: {message}. This server is not started; the others are.", path.display())]
    Server {
        path: PathBuf,
        server: String,
        message: String,
    },
}

/// One of the files MCP servers are configured in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigFile {
    pub path: PathBuf,
    /// A project file (loaded only for a trusted folder).
    pub project: bool,
    /// Set for `.mcp.json`, whose stdio servers run in the project root.
    pub stdio_cwd_base: Option<PathBuf>,
}

/// The three files for a session in `cwd`, in precedence order (later wins per name).
pub fn config_files(kimi_home: &Path, cwd: &Path) -> [ConfigFile; 3] {
    let project_root = find_git_root(cwd).unwrap_or_else(|| cwd.to_path_buf());
    [
        ConfigFile {
            path: kimi_home.join("mcp.json"),
            project: false,
            stdio_cwd_base: None,
        },
        ConfigFile {
            path: project_root.join(".mcp.json"),
            project: true,
            stdio_cwd_base: Some(project_root),
        },
        ConfigFile {
            path: cwd.join(".kimi-code").join("mcp.json"),
            project: true,
            stdio_cwd_base: None,
        },
    ]
}

/// Load and merge the three `mcp.json` files for a session in `cwd`. Missing files count as
/// empty. Project files' servers go to [`McpConfig::untrusted`] unless `trusted`. A bad file
/// or entry is a problem that disables only itself.
pub fn load_config(kimi_home: &Path, cwd: &Path, trusted: bool) -> McpConfig {
    let mut config = McpConfig {
        token_dir: Some(crate::oauth::TokenDir::in_home(kimi_home)),
        ..McpConfig::default()
    };
    for file in config_files(kimi_home, cwd) {
        let text = match read_optional(&file.path) {
            Ok(Some(text)) => text,
            Ok(None) => continue,
            Err(err) => {
                config.problems.push(err);
                continue;
            }
        };
        match parse_file(&text, &file.path, file.stdio_cwd_base.as_deref()) {
            Ok(parsed) => {
                if file.project && !trusted {
                    config.untrusted.extend(parsed.servers);
                } else {
                    config.servers.extend(parsed.servers);
                }
                config.problems.extend(parsed.problems);
                config.warnings.extend(parsed.warnings);
            }
            Err(err) => config.problems.push(err),
        }
    }
    config
}

/// Parse one file's text. `stdio_cwd_base` is set for `.mcp.json`, whose stdio servers run in
/// the project root unless their `cwd` says otherwise. `Err` means the whole file is unusable;
/// a bad entry is one of [`ParsedFile::problems`] and the other entries still load.
pub fn parse_file(
    text: &str,
    path: &Path,
    stdio_cwd_base: Option<&Path>,
) -> Result<ParsedFile, McpConfigError> {
    let mut parsed = ParsedFile::default();
    if text.trim().is_empty() {
        return Ok(parsed);
    }
    let data: Value = serde_json::from_str(text).map_err(|source| McpConfigError::Json {
        path: path.to_path_buf(),
        source,
    })?;
    let shape = |message: String| McpConfigError::Shape {
        path: path.to_path_buf(),
        message,
    };
    let Value::Object(root) = data else {
        return Err(shape("the top level must be a JSON object".to_owned()));
    };
    let servers = match root.get("mcpServers") {
        None | Some(Value::Null) => {
            if root.contains_key("servers") {
                // VS Code's `.vscode/mcp.json` shape: the same entries under another key.
                return Err(shape(
                    "this is a VS Code-style file (its servers are under \"servers\"); kimi-rs reads \"mcpServers\": rename the key \"servers\" to \"mcpServers\"".to_owned(),
                ));
            }
            if let Some(near) = root
                .keys()
                .find_map(|k| kimi_config::did_you_mean(k, ["mcpServers"]).map(|_| k))
            {
                return Err(shape(format!(
                    "unknown key \"{near}\" (did you mean \"mcpServers\"?)"
                )));
            }
            return Ok(parsed);
        }
        Some(Value::Object(servers)) => servers,
        Some(_) => return Err(shape("\"mcpServers\" must be an object".to_owned())),
    };
    for (name, value) in servers {
        let mut remarks = Vec::new();
        match parse_server(value, path, stdio_cwd_base, &mut remarks) {
            Ok(server) => {
                parsed.servers.push((name.clone(), server));
                parsed.warnings.extend(
                    remarks.into_iter().map(|remark| {
                        format!("MCP server `{name}` in {}: {remark}", path.display())
                    }),
                );
            }
            Err(message) => parsed.problems.push(McpConfigError::Server {
                path: path.to_path_buf(),
                server: name.clone(),
                message,
            }),
        }
    }
    Ok(parsed)
}

/// Unknown keys of an entry: one that looks like a misspelt known key is an error (the entry
/// would run differently than meant); any other is a remark and ignored.
fn check_keys(obj: &Map<String, Value>, remarks: &mut Vec<String>) -> Result<(), String> {
    for key in obj.keys().filter(|k| !SERVER_KEYS.contains(&k.as_str())) {
        match kimi_config::did_you_mean(key, SERVER_KEYS.iter().copied()) {
            Some(near) => {
                return Err(format!("unknown key `{key}` (did you mean `{near}`?)"));
            }
            None => remarks.push(format!("unknown key `{key}` is ignored")),
        }
    }
    Ok(())
}

fn parse_server(
    value: &Value,
    source: &Path,
    stdio_cwd_base: Option<&Path>,
    remarks: &mut Vec<String>,
) -> Result<ServerConfig, String> {
    let Value::Object(obj) = value else {
        return Err(
            "the entry must be an object with `command` (stdio) or `url` (http)".to_owned(),
        );
    };
    check_keys(obj, remarks)?;
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
    let oauth = match opt_string(obj, "auth")?.as_deref() {
        None => false,
        Some("oauth") => true,
        Some(other) => {
            return Err(format!(
                "`auth` must be \"oauth\" (or left out), got \"{other}\""
            ));
        }
    };
    Ok(RemoteConfig {
        url,
        headers: opt_string_map(obj, "headers")?,
        bearer_token_env_var,
        oauth,
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

/// Where a stdio server's `command` would be found for a session in `session_cwd`: a path
/// with a `/` is taken as it is (relative to the server's working directory), a bare name is
/// looked up in `PATH` (the server's own `env.PATH` when it sets one). `None` when there is no
/// such executable file.
pub fn find_command(server: &ServerConfig, session_cwd: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let TransportConfig::Stdio {
        command, env, cwd, ..
    } = &server.transport
    else {
        return None;
    };
    let executable = |path: &Path| {
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if command.contains('/') {
        let dir = cwd
            .as_ref()
            .map_or_else(|| session_cwd.to_path_buf(), |dir| session_cwd.join(dir));
        let path = dir.join(command);
        return executable(&path).then_some(path);
    }
    let search = env
        .get("PATH")
        .map(std::ffi::OsString::from)
        .or_else(|| std::env::var_os("PATH"))?;
    std::env::split_paths(&search)
        .map(|dir| dir.join(command))
        .find(|path| executable(path))
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
