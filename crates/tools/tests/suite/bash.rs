//! Bash and the task tools on real processes: output, exit codes, timeouts moving to the
//! background, process-tree kills, WaitFor, notifications, restart recovery, the output cap.

use std::path::Path;
use std::time::{Duration, Instant};

use kimi_tools::builtin::{BashTool, TaskListTool, TaskOutputTool, TaskStopTool, WaitForTool};
use kimi_tools::tasks::{TaskInfo, TaskManager, TaskStatus};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::common::{Workspace, text};

fn ws() -> Workspace {
    let mut ws = Workspace::new();
    ws.ctx.settings.kill_grace = Duration::from_millis(500);
    ws.ctx.tasks = TaskManager::open(ws.agent.path().join("tasks"), ws.ctx.settings.kill_grace);
    // An explicit environment: the defaults must be added when the host has none of them.
    ws.ctx.env = vec![("PATH".to_owned(), std::env::var("PATH").unwrap_or_default())];
    ws
}

/// Bounded polling of observable state (a file appearing, a process ending).
async fn until(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A process is gone when /proc has no entry or only a zombie.
fn pid_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

fn task_id(out: &str) -> String {
    let start = out.find("bash-").unwrap();
    out[start..start + 13].to_owned()
}

#[tokio::test]
async fn foreground_output_exit_codes_and_env() {
    let ws = ws();
    let r = ws
        .run(&BashTool, json!({"command": "echo hello; echo oops >&2"}))
        .await;
    assert!(!r.is_error);
    assert_eq!(text(&r), "hello\noops\n");
    let r = ws
        .run(&BashTool, json!({"command": "echo partial; exit 3"}))
        .await;
    assert!(r.is_error);
    assert_eq!(text(&r), "partial\nCommand failed with exit code 3.");
    let r = ws.run(&BashTool, json!({"command": "true"})).await;
    assert_eq!(text(&r), "Command executed successfully.");
    let r = ws
        .run(
            &BashTool,
            json!({"command": "echo $NO_COLOR $TERM $GIT_TERMINAL_PROMPT; cat; pwd"}),
        )
        .await;
    assert_eq!(text(&r), format!("1 dumb 0\n{}\n", ws.root().display()));
    ws.write("sub/x", "");
    let r = ws
        .run(&BashTool, json!({"command": "pwd", "cwd": "sub"}))
        .await;
    assert_eq!(text(&r), format!("{}\n", ws.path("sub").display()));
    // Foreground commands never show up as tasks or notifications.
    assert_eq!(
        text(&ws.run(&TaskListTool, json!({"active_only": false})).await),
        "No tasks."
    );
    assert!(ws.ctx.tasks.drain_notifications().is_empty());
}

#[tokio::test]
async fn argument_errors() {
    let ws = ws();
    for (args, needle) in [
        (json!({"command": "  "}), "command must not be empty"),
        (
            json!({"command": "x", "timeout": 301}),
            "between 1 and 300 seconds",
        ),
        (
            json!({"command": "x", "run_in_background": true}),
            "description is required",
        ),
        (
            json!({"command": "x", "run_in_background": true, "description": "d", "timeout": 86_401}),
            "86400",
        ),
        (
            json!({"command": "x", "disable_timeout": true}),
            "disable_timeout only applies",
        ),
    ] {
        let r = ws.run(&BashTool, args.clone()).await;
        assert!(
            r.is_error && text(&r).contains(needle),
            "{args}: {}",
            text(&r)
        );
    }
}

#[tokio::test]
async fn timeout_moves_to_background_then_output_and_stop() {
    let ws = ws();
    let r = ws
        .run(
            &BashTool,
            json!({"command": "echo started; sleep 30", "timeout": 1}),
        )
        .await;
    assert!(!r.is_error, "{}", text(&r));
    let out = text(&r);
    assert!(out.starts_with("started\nCommand did not finish within 1 s and was moved to the background as task bash-"), "{out}");
    let id = task_id(&out);
    let listed = text(&ws.run(&TaskListTool, json!({})).await);
    assert!(listed.starts_with(&format!("{id}\trunning")), "{listed}");
    let snap = text(&ws.run(&TaskOutputTool, json!({"task_id": id})).await);
    assert!(
        snap.contains("status: running") && snap.ends_with("[output]\nstarted\n"),
        "{snap}"
    );
    assert!(snap.contains(&format!(
        "output_path: {}",
        ws.ctx.tasks.output_path(&id).display()
    )));
    let stop = text(&ws.run(&TaskStopTool, json!({"task_id": id})).await);
    assert_eq!(stop, format!("Task {id} stopped (status killed)."));
    let info = ws.ctx.tasks.get(&id).unwrap();
    assert_eq!(
        (info.status, info.reason.as_deref()),
        (TaskStatus::Killed, Some("Stopped by TaskStop"))
    );
    assert!(!pid_alive(info.pid.unwrap()));
    let again = text(&ws.run(&TaskStopTool, json!({"task_id": id})).await);
    assert!(
        again.contains("had already finished with status killed"),
        "{again}"
    );
    // Persisted record on disk.
    let saved: TaskInfo = serde_json::from_slice(
        &std::fs::read(ws.ctx.tasks.dir().join(format!("{id}.json"))).unwrap(),
    )
    .unwrap();
    assert_eq!(saved.status, TaskStatus::Killed);
}

#[tokio::test]
async fn timeout_kills_when_auto_background_is_off() {
    let mut ws = ws();
    ws.ctx.settings.bash_auto_background_on_timeout = false;
    let r = ws
        .run(
            &BashTool,
            json!({"command": "echo a; sleep 30", "timeout": 1}),
        )
        .await;
    assert!(r.is_error);
    assert_eq!(text(&r), "a\nCommand killed by timeout (1 s)");
}

#[tokio::test]
async fn task_stop_kills_the_whole_tree() {
    let ws = ws();
    let pidfile = ws.path("grandchild.pid");
    // The grandchild ignores SIGTERM, so only the SIGKILL after the grace removes it.
    let cmd = format!(
        "sh -c 'trap \"\" TERM; echo $$ > {p}.tmp; mv {p}.tmp {p}; while true; do sleep 1; done' & wait",
        p = pidfile.display()
    );
    let r = ws
        .run(
            &BashTool,
            json!({"command": cmd, "run_in_background": true, "description": "tree"}),
        )
        .await;
    let id = task_id(&text(&r));
    until("grandchild pid file", || pidfile.exists()).await;
    let grandchild: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(pid_alive(grandchild));
    let stop = text(
        &ws.run(&TaskStopTool, json!({"task_id": id, "reason": "cleanup"}))
            .await,
    );
    assert!(stop.contains("stopped (status killed)"), "{stop}");
    until("grandchild exit", || !pid_alive(grandchild)).await;
    assert_eq!(
        ws.ctx.tasks.get(&id).unwrap().reason.as_deref(),
        Some("cleanup")
    );
}

#[tokio::test]
async fn wait_for_and_notifications() {
    let ws = ws();
    let r = ws
        .run(
            &BashTool,
            json!({"command": "echo done", "run_in_background": true, "description": "quick"}),
        )
        .await;
    let quick = task_id(&text(&r));
    let r = text(
        &ws.run(&WaitForTool, json!({"timeout": 10, "task_id": quick}))
            .await,
    );
    assert!(
        r.contains("status: completed") && r.contains("exit_code: 0") && r.ends_with("done\n"),
        "{r}"
    );
    // Reported by WaitFor: not notified again.
    assert!(ws.ctx.tasks.drain_notifications().is_empty());

    let r = ws
        .run(
            &BashTool,
            json!({"command": "echo bye", "run_in_background": true, "description": "notify"}),
        )
        .await;
    let notified = task_id(&text(&r));
    tokio::time::timeout(Duration::from_secs(10), ws.ctx.tasks.notification_ready())
        .await
        .unwrap();
    let drained = ws.ctx.tasks.drain_notifications();
    let got: Vec<String> = drained.iter().map(|t| t.id.clone()).collect();
    assert_eq!(got, vec![notified.clone()]);
    let note = kimi_tools::builtin::task_tools::task_notification_text(&ws.ctx.tasks, &drained[0]);
    assert!(note.starts_with(&format!("Background task {notified} (notify) finished with status completed.\ntask_id: {notified}")), "{note}");
    assert!(note.ends_with("bye\n"), "{note}");

    let r = ws
        .run(
            &BashTool,
            json!({"command": "sleep 30", "run_in_background": true, "description": "slow"}),
        )
        .await;
    let slow = task_id(&text(&r));
    let r = ws.run(&WaitForTool, json!({"timeout": 1})).await;
    assert!(!r.is_error);
    assert!(
        text(&r).starts_with(&format!("Waited 1 s; still running: {slow}.")),
        "{}",
        text(&r)
    );
    let r = ws.run(&WaitForTool, json!({"timeout": 0})).await;
    assert!(r.is_error);
    ws.ctx.tasks.stop(&slow, "test over").await.unwrap();
}

#[tokio::test]
async fn lost_after_restart_and_output_cap() {
    let ws = ws();
    let dir = ws.agent.path().join("tasks2");
    std::fs::create_dir_all(&dir).unwrap();
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = child.id();
    child.wait().unwrap();
    let info = TaskInfo {
        id: "bash-deadbeef".into(),
        kind: "bash".into(),
        description: "old".into(),
        command: "sleep 1000".into(),
        cwd: ws.root(),
        status: TaskStatus::Running,
        pid: Some(dead_pid),
        exit_code: None,
        started_at_ms: 1,
        ended_at_ms: None,
        timeout_s: None,
        reason: None,
        output_bytes: 0,
        foreground: false,
    };
    std::fs::write(
        dir.join("bash-deadbeef.json"),
        serde_json::to_vec(&info).unwrap(),
    )
    .unwrap();
    let reopened = TaskManager::open(&dir, Duration::from_millis(100));
    assert_eq!(
        reopened.get("bash-deadbeef").unwrap().status,
        TaskStatus::Lost
    );
    let saved: TaskInfo =
        serde_json::from_slice(&std::fs::read(dir.join("bash-deadbeef.json")).unwrap()).unwrap();
    assert_eq!(saved.status, TaskStatus::Lost);

    let r = ws
        .run(
            &BashTool,
            json!({"command": "head -c 20000000 /dev/zero | tr '\\0' a", "timeout": 60}),
        )
        .await;
    assert!(r.is_error);
    assert!(text(&r).ends_with("Command failed: Output exceeded 16 MiB; the task was terminated. Output is truncated to fit in the message."), "{}", &text(&r)[text(&r).len() - 200..]);
    assert!(r.note.as_deref().is_some_and(|n| n.contains("output.log")));
    let note = r.note.as_deref().unwrap();
    let log = Path::new(&note["The full output is in ".len()..note.find(';').unwrap()]);
    assert!(
        log.metadata().unwrap().len() >= 16 * 1024 * 1024,
        "{}",
        log.display()
    );
}

#[tokio::test]
async fn adopted_running_task_can_be_stopped_and_watched() {
    use std::os::unix::process::CommandExt;
    let ws = ws();
    let dir = ws.agent.path().join("tasks3");
    std::fs::create_dir_all(&dir).unwrap();
    let spawn = |secs: &str| {
        let child = std::process::Command::new("sleep")
            .arg(secs)
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = child.id();
        // Reap in the background like an init process would, so the pid disappears on exit.
        std::thread::spawn(move || {
            let mut child = child;
            let _ = child.wait();
        });
        pid
    };
    let record = |id: &str, pid: u32| TaskInfo {
        id: id.into(),
        kind: "bash".into(),
        description: id.into(),
        command: "sleep".into(),
        cwd: ws.root(),
        status: TaskStatus::Running,
        pid: Some(pid),
        exit_code: None,
        started_at_ms: 1,
        ended_at_ms: None,
        timeout_s: None,
        reason: None,
        output_bytes: 0,
        foreground: false,
    };
    let long = spawn("30");
    let short = spawn("0.2");
    for (id, pid) in [("bash-00000001", long), ("bash-00000002", short)] {
        std::fs::write(
            dir.join(format!("{id}.json")),
            serde_json::to_vec(&record(id, pid)).unwrap(),
        )
        .unwrap();
    }
    let tasks = TaskManager::open(&dir, Duration::from_millis(200));
    assert_eq!(
        tasks.get("bash-00000001").unwrap().status,
        TaskStatus::Running
    );
    let ended = tasks
        .wait("bash-00000002", Duration::from_secs(10))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ended.status, TaskStatus::Lost);
    let stopped = tasks.stop("bash-00000001", "cleanup").await.unwrap();
    assert_eq!(stopped.status, TaskStatus::Killed);
    until("adopted process exit", || !pid_alive(long)).await;
}

#[tokio::test]
async fn a_chatty_daemon_does_not_hold_the_foreground_call() {
    let ws = ws();
    let pidfile = ws.path("daemon.pid");
    let cmd = format!(
        "(while true; do echo tick; sleep 0.1; done) & echo $! > {}; echo started",
        pidfile.display()
    );
    let started = Instant::now();
    let r = ws.run(&BashTool, json!({"command": cmd})).await;
    assert!(!r.is_error, "{}", text(&r));
    assert!(text(&r).contains("started"));
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    let daemon: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let _ = std::process::Command::new("kill")
        .arg(daemon.to_string())
        .status();
}
