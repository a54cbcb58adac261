//! Write on real files: overwrite, append, parents, the stale-write guard.

use kimi_tools::builtin::{ReadTool, WriteTool};
use kimi_tools::tool::Resolution;
use kimi_tools::{Access, FileOperation, RuleSubject, Tool};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::common::{Workspace, shown, text};

#[tokio::test]
async fn creates_parents_and_appends() {
    let ws = Workspace::new();
    let p = ws.path("deep/dir/f.txt");
    let r = ws
        .run(
            &WriteTool,
            json!({"path": "deep/dir/f.txt", "content": "hello"}),
        )
        .await;
    assert_eq!(text(&r), format!("Wrote 5 bytes to {}", shown(&p)));
    let r = ws
        .run(
            &WriteTool,
            json!({"path": "deep/dir/f.txt", "content": " world", "mode": "append"}),
        )
        .await;
    assert_eq!(text(&r), format!("Appended 6 bytes to {}", shown(&p)));
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "hello world");
}

#[tokio::test]
async fn stale_guard_refuses_unread_and_changed_files() {
    let ws = Workspace::new();
    let p = ws.write("x.txt", "old\n");
    let r = ws
        .run(&WriteTool, json!({"path": "x.txt", "content": "new"}))
        .await;
    assert!(
        r.is_error && text(&r).contains("has not been read"),
        "{}",
        text(&r)
    );
    ws.run(&ReadTool, json!({"path": "x.txt"})).await;
    // Someone else changes the file after our read.
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
    std::fs::File::options()
        .write(true)
        .open(&p)
        .unwrap()
        .set_modified(later)
        .unwrap();
    let r = ws
        .run(&WriteTool, json!({"path": "x.txt", "content": "new"}))
        .await;
    assert!(
        r.is_error && text(&r).contains("modified since it was last read"),
        "{}",
        text(&r)
    );
    ws.run(&ReadTool, json!({"path": "x.txt"})).await;
    assert!(
        !ws.run(&WriteTool, json!({"path": "x.txt", "content": "new"}))
            .await
            .is_error
    );
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
}

#[tokio::test]
async fn plan_declares_write_access_and_diff() {
    let ws = Workspace::new();
    ws.write("d.txt", "a\nb\n");
    let Resolution::Run(exec) = WriteTool
        .resolve(json!({"path": "d.txt", "content": "a\nc\n"}), &ws.ctx)
        .unwrap()
    else {
        panic!("expected a runnable plan")
    };
    let plan = exec.plan();
    let p = shown(&ws.path("d.txt"));
    assert_eq!(
        plan.accesses,
        Some(vec![Access::file(FileOperation::Write, p.clone())])
    );
    assert_eq!(plan.approval_rule, format!("Write({p})"));
    assert_eq!(plan.subject, RuleSubject::Path(p));
    let diff = plan.display.diff.clone().unwrap();
    assert!(diff.contains("-b\n+c\n"), "{diff}");
}

#[tokio::test]
async fn refuses_sensitive_targets() {
    let ws = Workspace::new();
    for name in ["id_rsa", ".env.local", ".aws/credentials"] {
        let r = ws
            .run(&WriteTool, json!({"path": name, "content": "x"}))
            .await;
        assert!(
            r.is_error && text(&r).contains("sensitive file"),
            "{name}: {}",
            text(&r)
        );
    }
}
