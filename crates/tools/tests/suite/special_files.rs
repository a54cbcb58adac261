//! FIFOs (and other non-regular files) in the workspace: every file tool refuses them with a
//! clear error instead of blocking in `open` forever.

use std::path::Path;
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

use kimi_tools::builtin::{EditTool, GrepTool, ReadMediaFileTool, ReadTool, WriteTool};
use kimi_tools::{Tool, ToolResult};
use serde_json::{Value, json};

use super::common::{Workspace, text};

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success(), "mkfifo failed");
}

/// Runs `tool`, failing the test if it is still blocked after a generous bound. A thread stuck
/// in `open` on a FIFO cannot be cancelled (and a tool may block the runtime's own thread), so
/// a watchdog thread ends the whole test binary with a failure status instead of hanging.
async fn run_bounded(ws: &Workspace, tool: &dyn Tool, args: Value) -> ToolResult {
    let (done, watched) = std::sync::mpsc::channel::<()>();
    let what = format!("{} with {args}", tool.name());
    std::thread::spawn(move || {
        if let Err(RecvTimeoutError::Timeout) = watched.recv_timeout(Duration::from_secs(20)) {
            // Not `eprintln!`: the test harness would capture it, and exit drops captures.
            let _ = std::io::Write::write_all(
                &mut std::io::stderr(),
                format!("FAILED: {what} blocked on a FIFO\n").as_bytes(),
            );
            std::process::exit(101);
        }
    });
    let result = ws.run(tool, args).await;
    let _ = done.send(());
    result
}

#[tokio::test]
async fn read_media_edit_and_write_refuse_a_fifo() {
    let ws = Workspace::new();
    let fifo = ws.path("pipe");
    mkfifo(&fifo);
    mkfifo(&ws.path("pipe.png"));
    // As if read earlier, so Write gets past its "read it first" check to the file itself.
    ws.ctx.stale.record(&fifo);
    let cases: [(&dyn Tool, Value); 4] = [
        (&ReadTool, json!({"path": "pipe"})),
        (&ReadMediaFileTool, json!({"path": "pipe.png"})),
        (
            &EditTool,
            json!({"path": "pipe", "old_string": "a", "new_string": "b"}),
        ),
        (&WriteTool, json!({"path": "pipe", "content": "x"})),
    ];
    for (tool, args) in cases {
        let r = run_bounded(&ws, tool, args).await;
        assert!(r.is_error, "{}: {r:?}", tool.name());
        let t = text(&r);
        assert!(
            t.contains("is a FIFO (named pipe), not a regular file"),
            "{}: {t}",
            tool.name()
        );
    }
}

#[tokio::test]
async fn grep_skips_a_fifo_and_still_searches_the_rest() {
    let ws = Workspace::new();
    ws.write("a.txt", "needle\n");
    let fifo = ws.path("pipe");
    mkfifo(&fifo);
    let r = run_bounded(&ws, &GrepTool, json!({"pattern": "needle"})).await;
    assert!(!r.is_error, "{r:?}");
    assert!(text(&r).contains("a.txt"), "{}", text(&r));
    // Named directly, the FIFO is not searched either.
    let r = run_bounded(&ws, &GrepTool, json!({"pattern": "needle", "path": "pipe"})).await;
    assert!(!text(&r).contains("needle\n"), "{}", text(&r));
}
