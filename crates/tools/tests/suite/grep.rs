//! Grep on real trees: every output mode, context, paging, filters, ignore files, timeout.

use std::time::{Duration, SystemTime};

use kimi_tools::builtin::GrepTool;
use kimi_tools::builtin::grep::grep_with_budget;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::common::{Workspace, shown, text};

fn age(path: &std::path::Path, secs_ago: u64) {
    let t = SystemTime::now() - Duration::from_secs(secs_ago);
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

fn tree() -> (Workspace, std::path::PathBuf, std::path::PathBuf) {
    let ws = Workspace::new();
    let a = ws.write(
        "src/a.rs",
        "fn main() {\n    let needle = 1;\n}\n// Needle again\n",
    );
    let b = ws.write(
        "src/b.py",
        "x = 1\nneedle = 2\ny = 3\nz = 4\nneedle_two = 5\n",
    );
    ws.write("target/gen.rs", "needle\n");
    ws.write(".gitignore", "target/\n");
    ws.write(".git/config", "needle\n");
    ws.write(".env", "needle=secret\n");
    ws.write("bin.dat", b"needle\0\x01\x02");
    age(&a, 100);
    age(&b, 50);
    (ws, a, b)
}

#[tokio::test]
async fn files_with_matches_newest_first_with_filters() {
    let (ws, a, b) = tree();
    let r = text(&ws.run(&GrepTool, json!({"pattern": "needle"})).await);
    assert_eq!(
        r,
        format!(
            "{}\n{}\n1 sensitive file(s) were filtered from the results.",
            shown(&b),
            shown(&a)
        )
    );
    let r = text(
        &ws.run(
            &GrepTool,
            json!({"pattern": "needle", "include_ignored": true}),
        )
        .await,
    );
    assert!(
        r.contains("target/gen.rs") && !r.contains(".git/config"),
        "{r}"
    );
    let r = text(
        &ws.run(&GrepTool, json!({"pattern": "needle", "type": "rust"}))
            .await,
    );
    assert_eq!(r, shown(&a));
    let r = text(
        &ws.run(&GrepTool, json!({"pattern": "needle", "glob": "*.py"}))
            .await,
    );
    assert_eq!(r, shown(&b));
    let r = text(&ws.run(&GrepTool, json!({"pattern": "nothing-here"})).await);
    assert_eq!(r, "No matches found.");
}

#[tokio::test]
async fn content_mode_with_context_and_case() {
    let (ws, a, b) = tree();
    let r = text(
        &ws.run(
            &GrepTool,
            json!({"pattern": "needle", "output_mode": "content", "path": "src/a.rs", "-i": true}),
        )
        .await,
    );
    let a = shown(&a);
    assert_eq!(
        r,
        format!("{a}:2:    let needle = 1;\n{a}:4:// Needle again")
    );
    let r = text(&ws.run(&GrepTool, json!({"pattern": "^needle", "output_mode": "content", "path": "src/b.py", "-A": 1, "-n": false})).await);
    let b = shown(&b);
    assert_eq!(
        r,
        format!("{b}:needle = 2\n{b}-y = 3\n--\n{b}:needle_two = 5")
    );
    let r = text(&ws.run(&GrepTool, json!({"pattern": "needle = 2", "output_mode": "content", "path": "src/b.py", "-C": 1, "-A": 5})).await);
    assert_eq!(r, format!("{b}-1-x = 1\n{b}:2:needle = 2\n{b}-3-y = 3"));
}

#[tokio::test]
async fn count_mode_paging_and_multiline() {
    let (ws, a, b) = tree();
    let r = text(
        &ws.run(
            &GrepTool,
            json!({"pattern": "needle", "output_mode": "count_matches", "-i": true}),
        )
        .await,
    );
    assert!(
        r.starts_with(&format!(
            "Found 4 matches in 2 files.\n{}:2\n{}:2",
            shown(&b),
            shown(&a)
        )),
        "{r}"
    );
    let r = text(
        &ws.run(&GrepTool, json!({"pattern": "needle", "head_limit": 1}))
            .await,
    );
    assert!(
        r.starts_with(&format!(
            "{}\nResults truncated: showing entries 1-1 of 2. Use offset=1 to see more.",
            shown(&b)
        )),
        "{r}"
    );
    let r = text(
        &ws.run(
            &GrepTool,
            json!({"pattern": "needle", "head_limit": 1, "offset": 1}),
        )
        .await,
    );
    assert!(r.starts_with(&shown(&a)), "{r}");
    let r = text(
        &ws.run(
            &GrepTool,
            json!({"pattern": "main.*\\n.*needle", "multiline": true, "output_mode": "content"}),
        )
        .await,
    );
    assert!(
        r.contains(":1:fn main() {") && r.contains(":2:    let needle = 1;"),
        "{r}"
    );
}

#[tokio::test]
async fn long_lines_and_timeout() {
    let ws = Workspace::new();
    ws.write("long.txt", format!("{}needle\n", "x".repeat(600)));
    let r = text(
        &ws.run(
            &GrepTool,
            json!({"pattern": "needle", "output_mode": "content"}),
        )
        .await,
    );
    assert!(
        r.ends_with("long.txt:1:[Omitted long line with 1 matches]"),
        "{r}"
    );
    let r = text(&grep_with_budget(json!({"pattern": "needle"}), &ws.ctx, Duration::ZERO).await);
    assert!(
        r.contains("Search timed out after 0 s; the results are partial."),
        "{r}"
    );
    let r = ws.run(&GrepTool, json!({"pattern": "("})).await;
    assert!(r.is_error && text(&r).contains("invalid regex"));
}
