//! `/environment` in the real terminal UI: the `kimi-rs` binary on a pseudo-terminal (read back
//! through a vt100 emulator, as in `tui_e2e.rs`), a declared `command` environment running a
//! real `kimi-rs exec-server` with a marker in its own environment, and the loopback scripted
//! model. `/environment pod-0` moves the session's tools there (footer `pod-0`, the approval
//! names the target, Bash runs in the target's executor and cwd); `/environment local` moves
//! them back; both moves reach the model as journaled reminders; `/environment` lists the
//! declarations with their status.
#![allow(clippy::unwrap_used, clippy::expect_used)] // helpers outside #[test] fns count as tests here

mod common;
mod pty;

use std::io::Write;
use std::path::Path;

use common::{BIN, tool_results};
use kimi_llm::scripted::ScriptTurn;
use kimi_test_support::ScriptServer;
use pty::Session;
use serde_json::json;

const ROWS: u16 = 40;
const COLS: u16 = 120;
/// Prints `KIMI_TARGET=<id> in <cwd>`: the marker of the process that spawned the shell.
const WHERE: &str = r#"printf '%s in %s\n' "$(tr '\0' '\n' < /proc/$PPID/environ | grep '^KIMI_TARGET=')" "$(pwd)""#;

/// The trampoline (see `tui_e2e.rs`): with [`EXEC_ENV`] set, starts a new session and becomes
/// `kimi-rs`. In a normal test run it does nothing.
#[test]
fn exec_in_new_session() {
    pty::trampoline(BIN);
}

fn declaration(marker: &str, cwd: &Path) -> String {
    format!(
        "[environments.pod-0]\ncommand = \"{BIN}\"\nargs = [\"exec-server\"]\nenv = {{ KIMI_TARGET = \"{marker}\" }}\ndefaultCwd = \"{}\"\n",
        cwd.display()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn environment_moves_the_session_to_a_target_and_back_in_a_real_terminal() {
    let work = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let target = tempfile::tempdir().unwrap();
    let target_cwd = std::fs::canonicalize(target.path()).unwrap();
    let work_cwd = std::fs::canonicalize(work.path()).unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[environments.pod-0]\ncommand = \"{BIN}\"\nargs = [\"exec-server\"]\nenv = {{ KIMI_TARGET = \"pod-0\" }}\ndefaultCwd = \"{}\"\n",
            target_cwd.display()
        ),
    )
    .unwrap();
    let bash = json!({ "command": WHERE }).to_string();
    let server = ScriptServer::start(vec![
        ScriptTurn::tool_calls(&[("c_remote", "Bash", &bash)]),
        ScriptTurn::text("REMOTE-DONE"),
        ScriptTurn::tool_calls(&[("c_local", "Bash", &bash)]),
        ScriptTurn::text("LOCAL-DONE"),
    ])
    .await
    .unwrap();
    let base_url = server.base_url();
    let (work_path, home_path) = (work.path().to_owned(), home.path().to_owned());
    tokio::task::spawn_blocking(move || {
        let mut s = Session::spawn_sized(&work_path, &home_path, &base_url, &[], ROWS, COLS);
        s.wait_for("the prompt", |t| t.contains("ask anything"));
        s.send(b"/environment\r");
        s.wait_for("the list", |t| {
            t.contains("* local  this machine")
                && t.contains("  pod-0  ")
                && t.contains("not connected")
        });

        s.send(b"/environment pod-0\r");
        s.wait_for("the move and the footer", |t| {
            t.contains("Moved this session's tools to `pod-0`") && t.contains("pod-0 · manual")
        });
        s.send(b"where are you\r");
        s.wait_for("the approval naming the target", |t| {
            t.contains("run command on command:pod-0?")
        });
        s.send(b"1");
        // The move waits for the turn boundary: the status line is gone when the turn ended.
        s.wait_for("the remote answer and the turn's end", |t| {
            t.contains("REMOTE-DONE") && !t.contains("esc to interrupt")
        });

        s.send(b"/environment local\r");
        s.wait_for("the move back", |t| {
            t.contains("back to this machine") && t.contains("ask anything")
        });
        s.send(b"and now?\r");
        s.wait_for("the local approval", |t| {
            t.contains("Allow Bash to run command?")
        });
        s.send(b"1");
        s.wait_for("the local answer", |t| t.contains("LOCAL-DONE"));
        s.send(b"\x04");
    })
    .await
    .unwrap();

    let requests = server.requests();
    let result = |id: &str| {
        requests
            .iter()
            .find_map(|r| tool_results(&r.body).into_iter().find(|(i, _)| i == id))
            .map(|(_, text)| text)
            .unwrap_or_else(|| panic!("no result for {id}"))
    };
    assert_eq!(
        result("c_remote").trim_end(),
        format!("KIMI_TARGET=pod-0 in {}", target_cwd.display())
    );
    assert_eq!(
        result("c_local").trim_end(),
        format!(" in {}", work_cwd.display()),
        "back on this machine, in the launch directory"
    );
    let last = requests.last().unwrap().body.to_string();
    assert!(
        last.contains("remote environment `pod-0` (command)"),
        "{last}"
    );
    assert!(
        last.contains("now run on the user's machine again"),
        "{last}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edited_declarations_apply_live_and_the_old_connection_drains() {
    let work = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let target = tempfile::tempdir().unwrap();
    let target_cwd = std::fs::canonicalize(target.path()).unwrap();
    let config = home.path().join("config.toml");
    std::fs::write(&config, declaration("first-executor", &target_cwd)).unwrap();
    let fifo = target_cwd.join("gate");
    common::mkfifo(&fifo);
    // The first Bash is in flight (blocked on the fifo) while the declaration changes.
    let gated = json!({ "command": format!("cat {} > /dev/null; {WHERE}", fifo.display()) });
    let bash = json!({ "command": WHERE }).to_string();
    let server = ScriptServer::start(vec![
        ScriptTurn::tool_calls(&[("c_inflight", "Bash", &gated.to_string())]),
        ScriptTurn::tool_calls(&[("c_after", "Bash", &bash)]),
        ScriptTurn::text("FIRST-DONE"),
        ScriptTurn::tool_calls(&[("c_removed", "Bash", &bash)]),
        ScriptTurn::text("SECOND-DONE"),
    ])
    .await
    .unwrap();
    let base_url = server.base_url();
    let (work_path, home_path) = (work.path().to_owned(), home.path().to_owned());
    let cwd = target_cwd.clone();
    tokio::task::spawn_blocking(move || {
        let mut s = Session::spawn_sized(
            &work_path,
            &home_path,
            &base_url,
            &["--yolo", "--environment", "pod-0"],
            ROWS,
            COLS,
        );
        s.wait_for("the prompt on pod-0", |t| {
            t.contains("ask anything") && t.contains("pod-0 · ")
        });
        s.send(b"go\r");
        // The Bash reads the fifo: it runs on the first executor now.
        let mut gate = common::open_fifo_writer(&fifo);
        std::fs::write(&config, declaration("second-executor", &cwd)).unwrap();
        s.wait_for("the re-read", |t| {
            t.contains("environments re-read: pod-0 (connections of pod-0 drain")
        });
        gate.write_all(b"open\n").unwrap();
        drop(gate);
        s.wait_for("the first answer", |t| {
            t.contains("FIRST-DONE") && !t.contains("esc to interrupt")
        });
        std::fs::write(&config, "").unwrap();
        s.wait_for("the removal", |t| {
            t.contains("environments re-read: none declared")
        });
        s.send(b"again\r");
        s.wait_for("the second answer", |t| t.contains("SECOND-DONE"));
        s.send(b"\x04");
    })
    .await
    .unwrap();

    let requests = server.requests();
    let result = |id: &str| {
        requests
            .iter()
            .find_map(|r| tool_results(&r.body).into_iter().find(|(i, _)| i == id))
            .map(|(_, text)| text)
            .unwrap_or_else(|| panic!("no result for {id}"))
    };
    let cwd = target_cwd.display();
    assert_eq!(
        result("c_inflight").trim_end(),
        format!("KIMI_TARGET=first-executor in {cwd}"),
        "the call in flight finished on the old connection"
    );
    assert_eq!(
        result("c_after").trim_end(),
        format!("KIMI_TARGET=second-executor in {cwd}"),
        "the next call used the new declaration"
    );
    let removed = result("c_removed");
    assert!(
        removed.contains("environment.not_found: environment `pod-0` is no longer declared")
            && removed.contains("Nothing was run on this machine"),
        "{removed}"
    );
}
