//! Logs of a real `kimi-rs -p` run against the loopback scripted server: the global log
//! (`$KIMI_RS_HOME/logs/kimi-rs.log`) and the session's (`<session-dir>/logs/kimi-rs.log`)
//! exist at the level `KIMI_LOG_LEVEL` / `--log-level` asks for, name the session and its
//! model requests, tool calls, permission decisions and hooks, and never contain the API key the server was sent. An
//! unwritable log directory is reported once on stderr and the run goes on.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;

use common::{CORE_FORMATS, Fixture, Run, find_file, wait_child};
use kimi_llm::scripted::ScriptTurn;

const SECRET: &str = "sk-kimi-LOGTEST-0123456789abcdefSECRET";

/// Runs `kimi-rs <args>` with the secret key and `vars`.
fn run(fx: &Fixture, args: &[&str], vars: &[(&str, &str)]) -> Run {
    let mut cmd = fx.command(args);
    cmd.env("KIMI_MODEL_API_KEY", SECRET)
        .env_remove("KIMI_LOG_LEVEL")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (name, value) in vars {
        cmd.env(name, value);
    }
    wait_child(cmd.spawn().unwrap())
}

fn global_log(fx: &Fixture) -> PathBuf {
    fx.home.path().join("logs").join("kimi-rs.log")
}

/// The only session's id and its log's path.
fn session_log(fx: &Fixture) -> (String, PathBuf) {
    let ids = fx.session_ids();
    assert_eq!(ids.len(), 1, "{ids:?}");
    let journal = find_file(&fx.home.path().join("sessions"), &ids[0], "wire.jsonl").unwrap();
    // <session-dir>/agents/main/wire.jsonl
    let dir = journal.ancestors().nth(3).unwrap();
    assert!(dir.ends_with(&ids[0]), "{}", dir.display());
    (ids[0].clone(), dir.join("logs").join("kimi-rs.log"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn levels(log: &str) -> Vec<&str> {
    log.lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .collect()
}

#[test]
fn a_print_run_at_debug_logs_the_session_its_requests_and_tools_without_the_key() {
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![
            ScriptTurn::tool_calls(&[("call_read", "Read", r#"{"path":"notes.txt"}"#)]),
            ScriptTurn::text("The notes say hello."),
        ],
    );
    std::fs::write(fx.cwd().join("notes.txt"), "hello\n").unwrap();
    // A hook whose command carries a token: logged, with the token masked.
    let hooks = format!(
        "[[hooks]]\nevent = \"UserPromptSubmit\"\ncommand = \"exit 0 # x-api-key={SECRET}\"\n"
    );
    std::fs::write(fx.home.path().join("config.toml"), hooks).unwrap();
    let out = run(
        &fx,
        &["-p", "Read notes.txt"],
        &[("KIMI_LOG_LEVEL", "debug")],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        !out.stderr.contains("log"),
        "nothing about logs on stderr: {out:?}"
    );
    // The key really was in play: the server got it.
    let requests = fx.requests();
    assert_eq!(requests.len(), 2);
    let auth = requests[0].header("authorization").unwrap_or_default();
    assert!(auth.contains(SECRET), "{auth}");
    let endpoint = requests[0].path.split('?').next().unwrap().to_owned();

    let (id, session_path) = session_log(&fx);
    let global = read(&global_log(&fx));
    let session = read(&session_path);
    for (name, log) in [("global", &global), ("session", &session)] {
        assert!(!log.contains(SECRET), "{name} log leaks the key:\n{log}");
        assert!(
            !log.contains("LOGTEST"),
            "{name} log leaks part of the key:\n{log}"
        );
        assert!(log.contains(&format!("session_id={id}")), "{name}:\n{log}");
        assert!(log.contains("session opened"), "{name}:\n{log}");
        assert!(log.contains("model=scripted-model"), "{name}:\n{log}");
        let sent = log
            .lines()
            .filter(|l| l.contains("model request sent"))
            .count();
        let finished: Vec<&str> = log
            .lines()
            .filter(|l| l.contains("model response finished"))
            .collect();
        assert_eq!((sent, finished.len()), (2, 2), "{name}:\n{log}");
        for line in &finished {
            for field in [
                &format!("endpoint={endpoint}"),
                "status=200",
                "bytes=",
                "first_chunk_ms=",
                "first_token_ms=",
                "duration_ms=",
            ] {
                assert!(line.contains(field), "{name}: {field} missing in {line}");
            }
        }
        assert!(
            log.lines()
                .any(|l| l.contains("tool call finished") && l.contains("tool=Read")),
            "{name}:\n{log}"
        );
        assert!(levels(log).contains(&"DEBUG"), "{name}:\n{log}");
        assert!(
            log.lines().any(|l| l.contains("hook ran")
                && l.contains("event=UserPromptSubmit")
                && l.contains("status=Exited(0)")
                && l.contains("x-api-key=[redacted]")),
            "{name}:\n{log}"
        );
        assert!(
            log.lines().any(|l| l.contains("permission decision")
                && l.contains("tool=Read")
                && l.contains("policy=")),
            "{name}:\n{log}"
        );
    }
    // Process-wide lines stay in the global log only.
    assert!(global.contains("kimi-rs started") && global.contains("mode=print"));
    assert!(!session.contains("kimi-rs started"), "{session}");
}

#[test]
fn at_warn_only_warnings_are_logged_and_the_flag_wins_over_the_variable() {
    let turns = || {
        vec![
            ScriptTurn::Error {
                status: 429,
                body: r#"{"error":{"message":"slow down","type":"rate_limit_error"}}"#.to_owned(),
                headers: vec![("retry-after-ms".to_owned(), "10".to_owned())],
            },
            ScriptTurn::text("Hello after the retry."),
        ]
    };
    let check = |fx: &Fixture| {
        let (id, session_path) = session_log(fx);
        let global = read(&global_log(fx));
        let session = read(&session_path);
        for (name, log) in [("global", &global), ("session", &session)] {
            assert!(!log.contains(SECRET), "{name}:\n{log}");
            let levels = levels(log);
            assert!(!levels.is_empty(), "{name}: the retry is a warning:\n{log}");
            assert!(levels.iter().all(|l| *l == "WARN"), "{name}:\n{log}");
            assert!(
                log.contains("retrying") && log.contains("attempt=1"),
                "{name}:\n{log}"
            );
            assert!(log.contains("status=429"), "{name}:\n{log}");
            assert!(log.contains(&format!("session_id={id}")), "{name}:\n{log}");
        }
    };

    let fx = Fixture::new(CORE_FORMATS[0], turns());
    let out = run(&fx, &["-p", "hi"], &[("KIMI_LOG_LEVEL", "warn")]);
    assert_eq!(out.code, Some(0), "{out:?}");
    check(&fx);

    let fx = Fixture::new(CORE_FORMATS[0], turns());
    let out = run(
        &fx,
        &["--log-level", "warn", "-p", "hi"],
        &[("KIMI_LOG_LEVEL", "trace")],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    check(&fx);
}

#[test]
fn level_off_writes_no_log_files() {
    let fx = Fixture::new(CORE_FORMATS[0], vec![ScriptTurn::text("Hi.")]);
    let out = run(&fx, &["-p", "hi", "--log-level", "off"], &[]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(!fx.home.path().join("logs").exists());
    let (_, session_path) = session_log(&fx);
    assert!(!session_path.exists());
}

#[test]
fn an_unwritable_log_directory_is_reported_once_and_the_run_goes_on() {
    let fx = Fixture::new(CORE_FORMATS[0], vec![ScriptTurn::text("Still here.")]);
    // `logs` is a file: neither the directory nor the log in it can be created.
    std::fs::write(fx.home.path().join("logs"), "not a directory").unwrap();
    let out = run(&fx, &["-p", "hi"], &[]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(out.stdout.contains("Still here."), "{out:?}");
    let notices = out.stderr.matches("cannot write the log file").count();
    assert_eq!(notices, 1, "{out:?}");
    // The session's own log does not depend on the global one.
    let (id, session_path) = session_log(&fx);
    assert!(read(&session_path).contains(&format!("session_id={id}")));
}

#[test]
fn acp_keeps_stdio_for_the_editor_and_logs_its_session() {
    use std::io::{BufRead, BufReader, Write};
    let fx = Fixture::new(CORE_FORMATS[0], vec![ScriptTurn::text("Hi.")]);
    // Unwritable global log: in ACP mode not even the notice may reach stdio.
    std::fs::write(fx.home.path().join("logs"), "not a directory").unwrap();
    let mut child = fx
        .command(&["acp"])
        .env("KIMI_MODEL_API_KEY", SECRET)
        .env("KIMI_LOG_LEVEL", "debug")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // Each request waits for its answer: ACP needs `initialize` done before `session/new`.
    let mut call = |id: u64, method: &str, params: serde_json::Value| -> serde_json::Value {
        let request =
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin, "{request}").unwrap();
        stdin.flush().unwrap();
        loop {
            let line = lines.next().expect("an answer").unwrap();
            let value: serde_json::Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout carries only JSON-RPC, got {line:?}: {e}"));
            if value["id"] == id {
                return value;
            }
        }
    };
    call(
        1,
        "initialize",
        serde_json::json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    let created = call(
        2,
        "session/new",
        serde_json::json!({"cwd": fx.cwd(), "mcpServers": []}),
    );
    let session_id = created["result"]["sessionId"].as_str().map(str::to_owned);
    drop(stdin);
    let out = wait_child(child);
    assert!(out.stderr.is_empty(), "{out:?}");
    let id = session_id.unwrap_or_else(|| panic!("{created}"));
    let (logged_id, session_path) = session_log(&fx);
    assert_eq!(logged_id, id);
    let log = read(&session_path);
    assert!(
        log.contains(&format!("session_id={id}")) && log.contains("session opened"),
        "{log}"
    );
    assert!(!log.contains(SECRET), "{log}");
}
