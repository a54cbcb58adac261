//! FIFOs (and other non-regular files) in the workspace: every file tool refuses them with a
//! clear error instead of blocking in `open` forever.

use std::path::Path;
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

/// Runs `tool`; if it is still blocked after a generous bound, opens the FIFO's write end
/// (which releases a blocked reader) so the test fails instead of hanging.
async fn run_bounded(ws: &Workspace, fifo: &Path, tool: &dyn Tool, args: Value) -> ToolResult {
    match tokio::time::timeout(Duration::from_secs(20), ws.run(tool, args.clone())).await {
        Ok(result) => result,
        Err(_) => {
            use std::os::unix::fs::OpenOptionsExt;
            let _release = std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(fifo);
            panic!("{} blocked on a FIFO with {args}", tool.name());
        }
    }
}

#[tokio::test]
async fn read_media_edit_and_write_refuse_a_fifo() {
    let ws = Workspace::new();
    let fifo = ws.path("pipe");
    mkfifo(&fifo);
    let media = ws.path("pipe.png");
    mkfifo(&media);
    // As if read earlier, so Write gets past its "read it first" check to the file itself.
    ws.ctx.stale.record(&fifo);
    let cases: [(&dyn Tool, Value, &Path); 4] = [
        (&ReadTool, json!({"path": "pipe"}), &fifo),
        (&ReadMediaFileTool, json!({"path": "pipe.png"}), &media),
        (
            &EditTool,
            json!({"path": "pipe", "old_string": "a", "new_string": "b"}),
            &fifo,
        ),
        (&WriteTool, json!({"path": "pipe", "content": "x"}), &fifo),
    ];
    for (tool, args, path) in cases {
        let r = run_bounded(&ws, path, tool, args).await;
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
    let r = run_bounded(&ws, &fifo, &GrepTool, json!({"pattern": "needle"})).await;
    assert!(!r.is_error, "{r:?}");
    assert!(text(&r).contains("a.txt"), "{}", text(&r));
    // Named directly, the FIFO is not searched either.
    let r = run_bounded(
        &ws,
        &fifo,
        &GrepTool,
        json!({"pattern": "needle", "path": "pipe"}),
    )
    .await;
    assert!(!text(&r).contains("needle\n"), "{}", text(&r));
}
