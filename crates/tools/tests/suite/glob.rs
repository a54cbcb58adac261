//! Glob on real trees: braces, mtime order, ignore files, VCS dirs, sensitive files, the cap.

use std::time::{Duration, SystemTime};

use kimi_tools::builtin::GlobTool;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::common::{Workspace, shown, text};

fn touch(path: &std::path::Path, secs_ago: u64) {
    let t = SystemTime::now() - Duration::from_secs(secs_ago);
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

#[tokio::test]
async fn braces_order_and_filters() {
    let ws = Workspace::new();
    let old = ws.write("src/old.rs", "");
    let new = ws.write("src/new.ts", "");
    let mid = ws.write("src/sub/mid.rs", "");
    ws.write("src/skip.md", "");
    ws.write("ignored/x.rs", "");
    ws.write(".gitignore", "ignored/\n");
    ws.write(".git/objects/y.rs", "");
    ws.write("src/.env.rs", "");
    touch(&old, 300);
    touch(&mid, 200);
    touch(&new, 100);
    let r = ws.run(&GlobTool, json!({"pattern": "**/*.{rs,ts}"})).await;
    assert_eq!(
        text(&r),
        [
            shown(&new),
            shown(&mid),
            shown(&old),
            "1 sensitive file(s) were filtered from the results.".to_owned()
        ]
        .join("\n")
    );
    let r = ws
        .run(&GlobTool, json!({"pattern": "*.rs", "path": "src"}))
        .await;
    assert_eq!(
        text(&r),
        format!(
            "{}\n1 sensitive file(s) were filtered from the results.",
            shown(&old)
        )
    );
    let r = ws
        .run(
            &GlobTool,
            json!({"pattern": "ignored/*.rs", "include_ignored": true}),
        )
        .await;
    assert_eq!(text(&r), shown(&ws.path("ignored/x.rs")));
    let r = ws.run(&GlobTool, json!({"pattern": "*.none"})).await;
    assert!(text(&r).starts_with("No files matched"));
}

#[tokio::test]
async fn caps_at_one_hundred() {
    let ws = Workspace::new();
    for i in 0..105 {
        ws.write(&format!("f{i}.txt"), "");
    }
    let r = text(&ws.run(&GlobTool, json!({"pattern": "*.txt"})).await);
    let lines: Vec<&str> = r.lines().collect();
    assert_eq!(lines.len(), 101);
    assert!(
        lines[100].starts_with("Found 105 files; only the 100 most recently modified are shown.")
    );
}

#[tokio::test]
async fn absolute_patterns_and_bad_paths() {
    let ws = Workspace::new();
    let f = ws.write("a/b.rs", "");
    let r = ws
        .run(
            &GlobTool,
            json!({"pattern": format!("{}/**/*.rs", shown(&ws.root()))}),
        )
        .await;
    assert_eq!(text(&r), shown(&f));
    let r = ws
        .run(&GlobTool, json!({"pattern": "/elsewhere/*.rs"}))
        .await;
    assert!(r.is_error && text(&r).contains("put the directory in path"));
    let r = ws
        .run(&GlobTool, json!({"pattern": "*", "path": "a/b.rs"}))
        .await;
    assert!(r.is_error && text(&r).contains("is not a directory"));
}
