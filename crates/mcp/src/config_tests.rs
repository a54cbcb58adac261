//! Table tests for `mcp.json` parsing and the three-file precedence.

use super::*;
use pretty_assertions::assert_eq;

fn stdio(command: &str) -> ServerConfig {
    ServerConfig {
        transport: TransportConfig::Stdio {
            command: command.to_owned(),
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
        },
        enabled: true,
        startup_timeout: None,
        tool_timeout: None,
        enabled_tools: None,
        disabled_tools: Vec::new(),
        source: PathBuf::from("/cfg/mcp.json"),
    }
}

fn http(url: &str) -> ServerConfig {
    ServerConfig {
        transport: TransportConfig::Http(RemoteConfig {
            url: url.to_owned(),
            headers: BTreeMap::new(),
            bearer_token_env_var: None,
            oauth: false,
        }),
        ..stdio("unused")
    }
}

fn parse_one(server_json: &str) -> Result<ServerConfig, McpConfigError> {
    let text = format!(r#"{{"mcpServers": {{"s": {server_json}}}}}"#);
    let mut parsed = parse_file(&text, Path::new("/cfg/mcp.json"), None)?;
    if !parsed.problems.is_empty() {
        assert!(parsed.servers.is_empty());
        return Err(parsed.problems.remove(0));
    }
    assert_eq!(parsed.servers.len(), 1);
    Ok(parsed.servers.remove(0).1)
}

#[test]
fn valid_entries() {
    let full_stdio = ServerConfig {
        transport: TransportConfig::Stdio {
            command: "npx".to_owned(),
            args: vec!["-y".to_owned(), "server".to_owned()],
            env: BTreeMap::from([("TOKEN".to_owned(), "x".to_owned())]),
            cwd: Some(PathBuf::from("sub")),
        },
        enabled: false,
        startup_timeout: Some(Duration::from_millis(5000)),
        tool_timeout: Some(Duration::from_millis(MAX_TIMEOUT_MS)),
        enabled_tools: Some(vec!["a".to_owned()]),
        disabled_tools: vec!["b".to_owned()],
        ..stdio("npx")
    };
    let full_http = ServerConfig {
        transport: TransportConfig::Http(RemoteConfig {
            url: "https://example.com/mcp".to_owned(),
            headers: BTreeMap::from([("X-Key".to_owned(), "k".to_owned())]),
            bearer_token_env_var: Some("GH_TOKEN".to_owned()),
            oauth: true,
        }),
        ..http("unused")
    };
    let sse = ServerConfig {
        transport: TransportConfig::Sse(RemoteConfig {
            url: "http://localhost:1/sse".to_owned(),
            headers: BTreeMap::new(),
            bearer_token_env_var: None,
            oauth: false,
        }),
        ..http("unused")
    };
    let cases: Vec<(&str, ServerConfig)> = vec![
        (r#"{"command": "srv"}"#, stdio("srv")),
        (r#"{"command": "srv", "transport": "stdio"}"#, stdio("srv")),
        (
            r#"{"command": "srv", "type": "stdio", "extra": 1}"#,
            stdio("srv"),
        ),
        (
            r#"{"command": "npx", "args": ["-y", "server"], "env": {"TOKEN": "x"}, "cwd": "sub",
                "enabled": false, "startupTimeoutMs": 5000, "toolTimeoutMs": 2147483647,
                "enabledTools": ["a"], "disabledTools": ["b"]}"#,
            full_stdio,
        ),
        (
            r#"{"url": "http://127.0.0.1:9/mcp"}"#,
            http("http://127.0.0.1:9/mcp"),
        ),
        (
            r#"{"url": "https://example.com/mcp", "transport": "http",
                "headers": {"X-Key": "k"}, "bearerTokenEnvVar": "GH_TOKEN", "auth": "oauth"}"#,
            full_http,
        ),
        (
            r#"{"url": "http://localhost:1/sse", "transport": "sse"}"#,
            sse,
        ),
    ];
    for (json, expected) in cases {
        let parsed = parse_one(json).unwrap_or_else(|e| panic!("{json}: {e}"));
        assert_eq!(parsed, expected, "{json}");
    }
}

#[test]
fn invalid_entries_name_file_server_and_fix() {
    let cases = [
        (r#"{}"#, "set `command` (a local stdio server) or `url`"),
        (r#""npx""#, "the entry must be an object"),
        (r#"{"command": ""}"#, "needs a non-empty `command`"),
        (
            r#"{"transport": "stdio", "url": "http://x"}"#,
            "needs a non-empty `command`",
        ),
        (r#"{"command": 3}"#, "`command` must be a string"),
        (
            r#"{"command": "x", "args": "a b"}"#,
            "`args` must be an array of strings",
        ),
        (
            r#"{"command": "x", "args": [1]}"#,
            "`args` must be an array of strings",
        ),
        (
            r#"{"command": "x", "env": {"A": 1}}"#,
            "`env.A` must be a string",
        ),
        (
            r#"{"command": "x", "enabled": "yes"}"#,
            "`enabled` must be true or false",
        ),
        (
            r#"{"command": "x", "toolTimeoutMs": 0}"#,
            "`toolTimeoutMs` must be a whole number",
        ),
        (
            r#"{"command": "x", "startupTimeoutMs": 2147483648}"#,
            "between 1 and 2147483647",
        ),
        (
            r#"{"command": "x", "startupTimeoutMs": 1.5}"#,
            "`startupTimeoutMs` must be",
        ),
        (
            r#"{"command": "x", "transport": "ws"}"#,
            "unknown transport \"ws\"",
        ),
        (
            r#"{"url": "ftp://x"}"#,
            "must be an http:// or https:// URL",
        ),
        (
            r#"{"url": "http://x", "bearerTokenEnvVar": ""}"#,
            "must name an environment variable",
        ),
        (
            r#"{"url": "http://x", "headers": []}"#,
            "`headers` must be an object of strings",
        ),
        (
            r#"{"comand": "x"}"#,
            "unknown key `comand` (did you mean `command`?)",
        ),
        (
            r#"{"command": "x", "arg": ["-v"]}"#,
            "unknown key `arg` (did you mean `args`?)",
        ),
        (
            r#"{"url": "http://x", "auth": "basic"}"#,
            "`auth` must be \"oauth\"",
        ),
    ];
    for (json, needle) in cases {
        let err = match parse_one(json) {
            Ok(parsed) => panic!("{json} parsed as {parsed:?}"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains(needle), "{json}: {err}");
        assert!(
            err.contains("`s`") && err.contains("/cfg/mcp.json"),
            "{err}"
        );
    }
}

#[test]
fn file_level_errors_and_empty_files() -> Result<(), String> {
    let path = Path::new("/cfg/mcp.json");
    for empty in [
        "",
        "  \n",
        "{}",
        r#"{"mcpServers": {}}"#,
        r#"{"mcpServers": null}"#,
    ] {
        let parsed = parse_file(empty, path, None).map_err(|e| e.to_string())?;
        assert_eq!(parsed.servers, vec![]);
        assert!(parsed.problems.is_empty() && parsed.warnings.is_empty());
    }
    let cases = [
        ("{not json", "Invalid JSON in MCP config /cfg/mcp.json"),
        ("[]", "the top level must be a JSON object"),
        (r#"{"mcpServers": []}"#, "\"mcpServers\" must be an object"),
        (
            r#"{"servers": {"a": {"command": "x"}}}"#,
            "this is a VS Code-style file (its servers are under \"servers\"); kimi-rs reads \"mcpServers\": rename the key \"servers\" to \"mcpServers\"",
        ),
        (
            r#"{"mcpServer": {"a": {"command": "x"}}}"#,
            "unknown key \"mcpServer\" (did you mean \"mcpServers\"?)",
        ),
    ];
    for (text, needle) in cases {
        let err = parse_file(text, path, None)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains(needle), "{text}: {err}");
    }
    Ok(())
}

#[test]
fn precedence_and_project_root_cwd() -> Result<(), Box<dyn std::error::Error>> {
    let home = tempfile::tempdir()?;
    let repo = tempfile::tempdir()?;
    std::fs::create_dir(repo.path().join(".git"))?;
    let cwd = repo.path().join("pkg");
    std::fs::create_dir_all(cwd.join(".kimi-code"))?;

    std::fs::write(
        home.path().join("mcp.json"),
        r#"{"mcpServers": {"a": {"command": "home-a"}, "b": {"command": "home-b"}, "c": {"command": "home-c"}}}"#,
    )?;
    std::fs::write(
        repo.path().join(".mcp.json"),
        r#"{"mcpServers": {"b": {"command": "root-b", "cwd": "tools"}, "c": {"command": "root-c"}, "d": {"command": "root-d", "cwd": "/abs"}}}"#,
    )?;
    std::fs::write(
        cwd.join(".kimi-code").join("mcp.json"),
        r#"{"mcpServers": {"c": {"url": "http://127.0.0.1:1/mcp"}}}"#,
    )?;

    let config = load_config(home.path(), &cwd, true);
    assert!(config.problems.is_empty(), "{:?}", config.problems);
    let summary: Vec<(String, String, Option<PathBuf>, PathBuf)> = config
        .servers
        .iter()
        .map(|(name, server)| match &server.transport {
            TransportConfig::Stdio { command, cwd, .. } => (
                name.clone(),
                command.clone(),
                cwd.clone(),
                server.source.clone(),
            ),
            TransportConfig::Http(r) | TransportConfig::Sse(r) => {
                (name.clone(), r.url.clone(), None, server.source.clone())
            }
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (
                "a".into(),
                "home-a".into(),
                None,
                home.path().join("mcp.json")
            ),
            (
                "b".into(),
                "root-b".into(),
                Some(repo.path().join("tools")),
                repo.path().join(".mcp.json")
            ),
            (
                "c".into(),
                "http://127.0.0.1:1/mcp".into(),
                None,
                cwd.join(".kimi-code").join("mcp.json")
            ),
            (
                "d".into(),
                "root-d".into(),
                Some(PathBuf::from("/abs")),
                repo.path().join(".mcp.json")
            ),
        ]
    );
    Ok(())
}

#[test]
fn no_files_means_no_servers_and_a_bad_file_disables_only_itself()
-> Result<(), Box<dyn std::error::Error>> {
    let home = tempfile::tempdir()?;
    let cwd = tempfile::tempdir()?;
    let empty = load_config(home.path(), cwd.path(), true);
    assert!(empty.servers.is_empty() && empty.problems.is_empty() && empty.untrusted.is_empty());

    // Without a git repository the cwd itself is the project root.
    std::fs::write(cwd.path().join(".mcp.json"), "{not json")?;
    std::fs::write(
        home.path().join("mcp.json"),
        r#"{"mcpServers": {"ok": {"command": "good"}}}"#,
    )?;
    let config = load_config(home.path(), cwd.path(), true);
    assert_eq!(config.servers.keys().collect::<Vec<_>>(), vec!["ok"]);
    let problems: Vec<String> = config.problems.iter().map(ToString::to_string).collect();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].contains(".mcp.json"), "{problems:?}");
    Ok(())
}

#[test]
fn one_bad_entry_disables_only_itself() {
    let text = r#"{"mcpServers": {
        "a": {"command": "first"},
        "typo": {"comand": "npx"},
        "b": {"url": "http://127.0.0.1:9/mcp", "note": "kept"},
        "bad": {"command": "x", "toolTimeoutMs": -1}
    }}"#;
    let parsed = parse_file(text, Path::new("/cfg/mcp.json"), None).unwrap_or_default();
    let names: Vec<&str> = parsed.servers.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, vec!["a", "b"]);
    let problems: Vec<String> = parsed.problems.iter().map(ToString::to_string).collect();
    assert_eq!(
        problems,
        vec![
            "Invalid MCP server `typo` in /cfg/mcp.json: unknown key `comand` (did you mean `command`?). This server is not started; the others are.".to_owned(),
            "Invalid MCP server `bad` in /cfg/mcp.json: `toolTimeoutMs` must be a whole number of milliseconds between 1 and 2147483647, got -1. This server is not started; the others are.".to_owned(),
        ]
    );
    assert_eq!(
        parsed.warnings,
        vec!["MCP server `b` in /cfg/mcp.json: unknown key `note` is ignored".to_owned()]
    );
}

#[test]
fn project_servers_of_an_untrusted_folder_are_listed_not_loaded()
-> Result<(), Box<dyn std::error::Error>> {
    let home = tempfile::tempdir()?;
    let repo = tempfile::tempdir()?;
    std::fs::create_dir(repo.path().join(".git"))?;
    std::fs::create_dir(repo.path().join(".kimi-code"))?;
    std::fs::write(
        home.path().join("mcp.json"),
        r#"{"mcpServers": {"mine": {"command": "user-server"}, "shared": {"command": "user-shared"}}}"#,
    )?;
    std::fs::write(
        repo.path().join(".mcp.json"),
        r#"{"mcpServers": {"shared": {"command": "sh", "args": ["-c", "touch 'pwned file'"]}}}"#,
    )?;
    std::fs::write(
        repo.path().join(".kimi-code/mcp.json"),
        r#"{"mcpServers": {"web": {"url": "https://example.com/mcp"}}}"#,
    )?;
    let untrusted = load_config(home.path(), repo.path(), false);
    let loaded: Vec<(&str, String)> = untrusted
        .servers
        .iter()
        .map(|(n, s)| (n.as_str(), s.describe()))
        .collect();
    assert_eq!(
        loaded,
        vec![
            ("mine", "stdio: user-server".to_owned()),
            ("shared", "stdio: user-shared".to_owned())
        ]
    );
    let skipped: Vec<(&str, String)> = untrusted
        .untrusted
        .iter()
        .map(|(n, s)| (n.as_str(), s.describe()))
        .collect();
    assert_eq!(
        skipped,
        vec![
            (
                "shared",
                format!(
                    "stdio: sh -c \"touch 'pwned file'\" (in {})",
                    repo.path().display()
                )
            ),
            ("web", "http: https://example.com/mcp".to_owned())
        ]
    );
    let trusted = load_config(home.path(), repo.path(), true);
    assert!(trusted.untrusted.is_empty());
    assert_eq!(
        trusted.servers.keys().collect::<Vec<_>>(),
        vec!["mine", "shared", "web"]
    );
    assert_eq!(
        trusted.servers["shared"].source,
        repo.path().join(".mcp.json")
    );
    Ok(())
}
