//! Edit on real files: unique match, replace_all, CRLF preservation and error guidance.

use kimi_tools::builtin::{EditTool, ReadTool};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::common::{Workspace, shown, text};

#[tokio::test]
async fn replaces_unique_and_all() {
    let ws = Workspace::new();
    let p = ws.write("e.txt", "foo bar foo\nbaz\n");
    ws.run(&ReadTool, json!({"path": "e.txt"})).await;
    let r = ws
        .run(
            &EditTool,
            json!({"path": "e.txt", "old_string": "foo", "new_string": "qux"}),
        )
        .await;
    assert!(r.is_error);
    assert_eq!(
        text(&r),
        format!(
            "old_string matches 2 places in `{}`. Include more surrounding lines in old_string to make it unique, \
             or set replace_all to true to replace every occurrence.",
            shown(&p)
        )
    );
    let r = ws
        .run(
            &EditTool,
            json!({"path": "e.txt", "old_string": "foo", "new_string": "qux", "replace_all": true}),
        )
        .await;
    assert_eq!(
        text(&r),
        format!("Replaced 2 occurrence(s) in {}", shown(&p))
    );
    let r = ws
        .run(
            &EditTool,
            json!({"path": "e.txt", "old_string": "baz", "new_string": "zap"}),
        )
        .await;
    assert_eq!(
        text(&r),
        format!("Replaced 1 occurrence(s) in {}", shown(&p))
    );
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "qux bar qux\nzap\n");
}

#[tokio::test]
async fn errors_tell_the_model_what_to_do() {
    let ws = Workspace::new();
    ws.write("e.txt", "alpha\n");
    ws.run(&ReadTool, json!({"path": "e.txt"})).await;
    let r = ws
        .run(
            &EditTool,
            json!({"path": "e.txt", "old_string": "beta", "new_string": "x"}),
        )
        .await;
    assert!(
        r.is_error
            && text(&r).contains("was not found")
            && text(&r).contains("Read the file again")
    );
    let r = ws
        .run(
            &EditTool,
            json!({"path": "e.txt", "old_string": "alpha", "new_string": "alpha"}),
        )
        .await;
    assert!(r.is_error && text(&r).contains("identical"));
    let r = ws
        .run(
            &EditTool,
            json!({"path": "nope.txt", "old_string": "a", "new_string": "b"}),
        )
        .await;
    assert!(
        r.is_error && text(&r).contains("Use Write to create"),
        "{}",
        text(&r)
    );
    ws.write("unread.txt", "a\n");
    let r = ws
        .run(
            &EditTool,
            json!({"path": "unread.txt", "old_string": "a", "new_string": "b"}),
        )
        .await;
    assert!(r.is_error && text(&r).contains("has not been read"));
}

#[tokio::test]
async fn crlf_is_preserved() {
    let ws = Workspace::new();
    let p = ws.write("w.txt", "line one\r\nline two\r\n");
    ws.run(&ReadTool, json!({"path": "w.txt"})).await;
    let r = ws
        .run(
            &EditTool,
            json!({"path": "w.txt", "old_string": "one\nline", "new_string": "1\nnew line"}),
        )
        .await;
    assert!(!r.is_error, "{}", text(&r));
    assert_eq!(
        std::fs::read_to_string(&p).unwrap(),
        "line 1\r\nnew line two\r\n"
    );
}
