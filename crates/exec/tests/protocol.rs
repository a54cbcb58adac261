//! The exec protocol end to end over real pipes: the executor loop in a thread of its own, the
//! client as sessions use it. Pipelining, out-of-order answers, process groups and malformed
//! frames.
// Fixture helpers are plain fns that clippy does not treat as test code; unwrapping is how a
// test fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use kimi_exec::client::{CallError, Connection};
use kimi_exec::protocol::{Exit, Hello, PROTOCOL_VERSION, Request, Spawned};
use kimi_tools::environment::FileStat;

struct Served {
    conn: Connection,
    server: std::thread::JoinHandle<()>,
}

/// Raw pipe ends to the executor: what the client writes and what the executor answers.
fn serve_pipes() -> (
    std::io::PipeWriter,
    std::io::PipeReader,
    std::thread::JoinHandle<()>,
) {
    let (to_server_r, to_server_w) = std::io::pipe().unwrap();
    let (from_server_r, from_server_w) = std::io::pipe().unwrap();
    let server = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let reader =
                tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(to_server_r))
                    .unwrap();
            let writer =
                tokio::net::unix::pipe::Sender::from_owned_fd(OwnedFd::from(from_server_w))
                    .unwrap();
            kimi_exec::server::serve(reader, writer).await.unwrap();
        });
    });
    (to_server_w, from_server_r, server)
}

fn serve() -> Served {
    let (w, r, server) = serve_pipes();
    let conn = Connection::start(Box::new(r), Box::new(w), Box::new(|| "test".to_owned()));
    Served { conn, server }
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn group_alive(pgid: u32) -> bool {
    // /proc rather than kill(pgid, 0): an orphan reparented to a PID 1 that never reaps stays a
    // zombie of the group, but it is not running.
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        std::fs::read_to_string(e.path().join("stat")).is_ok_and(|stat| {
            // Fields after the command name `(...)`: state ppid pgrp ...
            stat.rsplit_once(')').is_some_and(|(_, rest)| {
                let fields: Vec<&str> = rest.split_whitespace().collect();
                fields.get(2) == Some(&pgid.to_string().as_str()) && fields.first() != Some(&"Z")
            })
        })
    })
}

#[test]
fn handshake_says_where_it_runs() {
    let s = serve();
    let hello: Hello = s
        .conn
        .call(&Request::Hello {
            version: PROTOCOL_VERSION,
        })
        .unwrap();
    assert_eq!(hello.version, PROTOCOL_VERSION);
    assert_eq!(hello.os, std::env::consts::OS);
    assert_eq!(hello.arch, std::env::consts::ARCH);
    assert!(hello.shell.ends_with("sh"), "{hello:?}");
}

#[test]
fn an_incompatible_version_is_refused_with_guidance() {
    let s = serve();
    let err = s
        .conn
        .call::<Hello>(&Request::Hello { version: 99 })
        .unwrap_err();
    match err {
        CallError::Remote { code, message } => {
            assert_eq!(code, "version");
            assert!(
                message.contains("Install the client's kimi-rs"),
                "{message}"
            );
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn answers_come_back_out_of_order_while_a_slow_request_is_in_flight() {
    let s = serve();
    let dir = tempfile::tempdir().unwrap();
    let (process, spawned, mut output) = s
        .conn
        .spawn("sleep 0.4; echo slow", dir.path(), &[], None)
        .unwrap()
        .unwrap();
    assert!(spawned.pid.is_some());
    // The wait is sent first and answered last.
    let mut wait = s.conn.call_async(&Request::Wait { process });
    let sent_before = s.conn.round_trips();
    let stats: Vec<_> = (0..20)
        .map(|_| {
            s.conn.call_async(&Request::Stat {
                path: dir.path().to_path_buf(),
            })
        })
        .collect();
    for rx in stats {
        // Blocks until the answer comes (a dead connection answers every waiter with an error).
        let answer = rx.blocking_recv().unwrap();
        let stat: Option<FileStat> = serde_json::from_value(answer.unwrap()).unwrap();
        assert_eq!(stat.unwrap().kind, kimi_tools::environment::FileKind::Dir);
    }
    assert_eq!(s.conn.round_trips(), sent_before + 20);
    assert!(
        wait.try_recv().is_err(),
        "the slow wait must still be pending after 20 later stats were answered"
    );
    let answer = wait.blocking_recv().unwrap();
    let exit: Exit = serde_json::from_value(answer.unwrap()).unwrap();
    assert_eq!(exit.exit_code, Some(0));
    let mut text = Vec::new();
    while let Ok((stderr, data)) = output.try_recv() {
        assert!(!stderr);
        text.extend(data);
    }
    assert_eq!(String::from_utf8(text).unwrap(), "slow\n");
}

#[test]
fn kill_stops_the_whole_process_group() {
    let s = serve();
    let dir = tempfile::tempdir().unwrap();
    let (process, spawned, _output) = s
        .conn
        .spawn("sleep 30 & sleep 30", dir.path(), &[], None)
        .unwrap()
        .unwrap();
    let pgid = spawned.pid.unwrap();
    wait_until("the group to start", || group_alive(pgid));
    let exit: Exit = s
        .conn
        .call(&Request::Kill {
            process,
            grace_ms: 200,
        })
        .unwrap();
    assert_eq!(exit.exit_code, None, "ended by a signal");
    wait_until("the group to be gone", || !group_alive(pgid));
}

#[test]
fn spawn_applies_cwd_env_and_timeout() {
    let s = serve();
    let dir = tempfile::tempdir().unwrap();
    let (process, _, mut output) = s
        .conn
        .spawn(
            "pwd; echo \"$GREETING\"; sleep 30",
            dir.path(),
            &[("GREETING".to_owned(), "hi there".to_owned())],
            Some(Duration::from_millis(300)),
        )
        .unwrap()
        .unwrap();
    let exit: Exit = s.conn.call(&Request::Wait { process }).unwrap();
    assert_eq!(exit.exit_code, None, "the executor's timeout killed it");
    let mut text = Vec::new();
    while let Ok((_, data)) = output.try_recv() {
        text.extend(data);
    }
    let canon = std::fs::canonicalize(dir.path()).unwrap();
    assert_eq!(
        String::from_utf8(text).unwrap(),
        format!("{}\nhi there\n", canon.display())
    );
}

#[test]
fn a_closed_connection_kills_running_processes() {
    let (mut w, r, server) = serve_pipes();
    let mut reader = BufReader::new(r);
    let dir = tempfile::tempdir().unwrap();
    let spawn =
        serde_json::json!({"id": 1, "op": "spawn", "command": "sleep 30", "cwd": dir.path()});
    writeln!(w, "{spawn}").unwrap();
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let frame: serde_json::Value = serde_json::from_str(&line).unwrap();
    let spawned: Result<Spawned, String> = serde_json::from_value(frame["ok"].clone()).unwrap();
    let pgid = spawned.unwrap().pid.unwrap();
    assert!(group_alive(pgid));
    drop(w);
    server.join().unwrap();
    wait_until("the orphaned group to be killed", || !group_alive(pgid));
}

#[test]
fn bad_frames_get_errors_and_the_executor_carries_on() {
    let (mut w, r, server) = serve_pipes();
    let mut reader = BufReader::new(r);
    let mut answer = |w: &mut std::io::PipeWriter, line: &str| {
        w.write_all(line.as_bytes()).unwrap();
        w.write_all(b"\n").unwrap();
        let mut out = String::new();
        reader.read_line(&mut out).unwrap();
        serde_json::from_str::<serde_json::Value>(&out).unwrap()
    };
    let a = answer(&mut w, "this is not json");
    assert_eq!(a["id"], serde_json::Value::Null);
    assert_eq!(a["error"]["code"], "bad_frame");
    let a = answer(&mut w, r#"{"op":"stat","path":"/"}"#);
    assert_eq!(a["error"]["code"], "bad_frame");
    let a = answer(&mut w, r#"{"id":5,"op":"format_disk"}"#);
    assert_eq!(a["id"], 5);
    assert_eq!(a["error"]["code"], "bad_request");
    let a = answer(&mut w, r#"{"id":6,"op":"stat"}"#);
    assert_eq!(a["id"], 6);
    assert_eq!(a["error"]["code"], "bad_request");
    let a = answer(&mut w, r#"{"id":7,"op":"wait","process":12345}"#);
    assert_eq!(a["error"]["code"], "no_process");
    // Still serving.
    let a = answer(&mut w, r#"{"id":8,"op":"stat","path":"/"}"#);
    assert_eq!(a["id"], 8);
    assert_eq!(a["ok"]["kind"], "dir");
    drop(w);
    server.join().unwrap();
}

#[test]
fn filesystem_operations_round_trip() {
    let s = serve();
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let file = root.join("a/b/f.txt");
    let written: Result<Option<FileStat>, String> = s
        .conn
        .call(&Request::WriteFile {
            path: file.clone(),
            data: b"one\n".to_vec(),
            append: false,
        })
        .unwrap();
    assert_eq!(written.unwrap().unwrap().len, 4);
    let _: Result<Option<FileStat>, String> = s
        .conn
        .call(&Request::WriteFile {
            path: file.clone(),
            data: b"two\n".to_vec(),
            append: true,
        })
        .unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "one\ntwo\n");
    let made: Result<(), String> = s
        .conn
        .call(&Request::Mkdir {
            path: root.join("d/e"),
            parents: true,
        })
        .unwrap();
    made.unwrap();
    let renamed: Result<(), String> = s
        .conn
        .call(&Request::Rename {
            from: file,
            to: root.join("d/g.txt"),
        })
        .unwrap();
    renamed.unwrap();
    let listed: Result<Vec<kimi_exec::protocol::DirEntry>, String> = s
        .conn
        .call(&Request::List {
            path: root.join("d"),
        })
        .unwrap();
    let names: Vec<String> = listed.unwrap().into_iter().map(|e| e.name).collect();
    assert_eq!(names, ["e", "g.txt"]);
    let removed: Result<(), String> = s
        .conn
        .call(&Request::Remove {
            path: root.join("d"),
            recursive: true,
        })
        .unwrap();
    removed.unwrap();
    assert!(!root.join("d").exists());
    let missing: Option<FileStat> = s
        .conn
        .call(&Request::Stat {
            path: root.join("d"),
        })
        .unwrap();
    assert_eq!(missing, None);
    drop(s.conn);
    drop(s.server);
}

/// Output of a process or terminal until `needle` shows (the test fails if it ends first).
fn read_until(output: &mut kimi_exec::client::OutputReceiver, seen: &mut Vec<u8>, needle: &str) {
    while !String::from_utf8_lossy(seen).contains(needle) {
        match output.blocking_recv() {
            Some((_, data)) => seen.extend(data),
            None => panic!(
                "output ended before {needle:?}: {:?}",
                String::from_utf8_lossy(seen)
            ),
        }
    }
}

#[test]
fn a_terminal_takes_pipelined_input_in_order_resizes_and_is_killed_with_its_group() {
    let s = serve();
    let dir = tempfile::tempdir().unwrap();
    let spec = kimi_tools::terminal::TerminalSpec {
        cwd: dir.path().to_owned(),
        env: vec![("GREETING".to_owned(), "hi there".to_owned())],
        size: kimi_tools::terminal::TerminalSize { cols: 80, rows: 24 },
        shell: Some("/bin/sh".to_owned()),
    };
    let (terminal, spawned, mut output) = s.conn.open_terminal(&spec).unwrap().unwrap();
    let pgid = spawned.pid.unwrap();
    // One byte per request, all in flight at once: the executor must keep their order.
    let typed = "echo \"[$GREETING] $(stty size)\"\n";
    let answers: Vec<_> = typed
        .bytes()
        .map(|b| {
            s.conn.call_async(&Request::TerminalInput {
                terminal,
                data: vec![b],
            })
        })
        .collect();
    for rx in answers {
        let done: Result<(), String> =
            serde_json::from_value(rx.blocking_recv().unwrap().unwrap()).unwrap();
        done.unwrap();
    }
    let mut seen = Vec::new();
    read_until(&mut output, &mut seen, "[hi there] 24 80");
    let resized: Result<(), String> = s
        .conn
        .call(&Request::TerminalResize {
            terminal,
            cols: 33,
            rows: 7,
        })
        .unwrap();
    resized.unwrap();
    let input: Result<(), String> = s
        .conn
        .call(&Request::TerminalInput {
            terminal,
            data: b"echo \"<$(stty size)>\"; sleep 300\n".to_vec(),
        })
        .unwrap();
    input.unwrap();
    read_until(&mut output, &mut seen, "<7 33>");
    let exit: Exit = s
        .conn
        .call(&Request::Kill {
            process: terminal,
            grace_ms: 500,
        })
        .unwrap();
    assert_eq!(exit.exit_code, None, "ended by a signal");
    wait_until("the terminal's group to be gone", || !group_alive(pgid));
    let late = s
        .conn
        .call::<Result<(), String>>(&Request::TerminalInput {
            terminal,
            data: b"x".to_vec(),
        })
        .unwrap_err();
    assert!(
        matches!(&late, CallError::Remote { code, .. } if code == "no_process"),
        "{late:?}"
    );
}

#[test]
fn a_terminal_ends_with_its_shell_and_reports_the_exit_code() {
    let s = serve();
    let dir = tempfile::tempdir().unwrap();
    let spec = kimi_tools::terminal::TerminalSpec {
        cwd: dir.path().to_owned(),
        env: Vec::new(),
        size: kimi_tools::terminal::TerminalSize { cols: 80, rows: 24 },
        shell: None,
    };
    let (terminal, _, mut output) = s.conn.open_terminal(&spec).unwrap().unwrap();
    let input: Result<(), String> = s
        .conn
        .call(&Request::TerminalInput {
            terminal,
            data: b"echo \"by\"\"e\"; exit 3\n".to_vec(),
        })
        .unwrap();
    input.unwrap();
    let exit: Exit = s.conn.call(&Request::Wait { process: terminal }).unwrap();
    assert_eq!(exit.exit_code, Some(3));
    let mut seen = Vec::new();
    while let Ok((_, data)) = output.try_recv() {
        seen.extend(data);
    }
    assert!(
        String::from_utf8_lossy(&seen).contains("bye"),
        "all output arrives before the exit: {:?}",
        String::from_utf8_lossy(&seen)
    );
}

#[test]
fn a_bad_terminal_size_is_refused() {
    let s = serve();
    let err = s
        .conn
        .call::<Result<Spawned, String>>(&Request::TerminalOpen {
            cwd: std::env::temp_dir(),
            env: Vec::new(),
            cols: 0,
            rows: 24,
            shell: None,
        })
        .unwrap_err();
    assert_eq!(
        err,
        CallError::Remote {
            code: "bad_request".to_owned(),
            message: "cols must be between 1 and 1000, got 0".to_owned()
        }
    );
}
