//! Read on real files: offsets, limits, encodings, refusals.

use kimi_tools::builtin::ReadTool;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::common::{Workspace, shown, text};

#[tokio::test]
async fn reads_numbered_lines_with_status() {
    let ws = Workspace::new();
    ws.write("a.txt", "one\ntwo\nthree\n");
    let r = ws.run(&ReadTool, json!({"path": "a.txt"})).await;
    assert!(!r.is_error);
    assert!(r.spill_exempt);
    assert_eq!(
        text(&r),
        "1\tone\n2\ttwo\n3\tthree\n<system>Read 3 lines (1-3 of 3, 20 bytes). End of file reached.</system>"
    );
}

#[tokio::test]
async fn offsets_and_tail_reads() {
    let ws = Workspace::new();
    let body: String = (1..=50).map(|i| format!("l{i}\n")).collect();
    ws.write("n.txt", body);
    let r = text(
        &ws.run(
            &ReadTool,
            json!({"path": "n.txt", "line_offset": 10, "n_lines": 2}),
        )
        .await,
    );
    assert!(
        r.starts_with("10\tl10\n11\tl11\n<system>Read 2 lines (10-11 of 50"),
        "{r}"
    );
    assert!(r.contains("use line_offset=12 to continue"), "{r}");
    let r = text(
        &ws.run(&ReadTool, json!({"path": "n.txt", "line_offset": -3}))
            .await,
    );
    assert!(r.starts_with("48\tl48\n49\tl49\n50\tl50\n<system>"), "{r}");
    let r = ws
        .run(&ReadTool, json!({"path": "n.txt", "line_offset": -1001}))
        .await;
    assert!(r.is_error);
    let r = text(
        &ws.run(&ReadTool, json!({"path": "n.txt", "line_offset": 99}))
            .await,
    );
    assert_eq!(
        r,
        "<system>line_offset 99 is beyond the end of the file, which has 50 lines.</system>"
    );
}

#[tokio::test]
async fn line_and_byte_limits() {
    let ws = Workspace::new();
    let body: String = (1..=1500).map(|i| format!("{i}\n")).collect();
    ws.write("many.txt", body);
    let r = text(&ws.run(&ReadTool, json!({"path": "many.txt"})).await);
    assert!(
        r.contains("1000\t1000\n<system>Read 1000 lines"),
        "{}",
        &r[r.len() - 300..]
    );
    assert!(r.contains("Stopped at the 1000-line limit"));
    ws.write("long.txt", format!("{}\nshort\n", "x".repeat(2500)));
    let r = text(&ws.run(&ReadTool, json!({"path": "long.txt"})).await);
    assert!(r.starts_with(&format!("1\t{}...\n2\tshort\n", "x".repeat(2000))));
    assert!(r.contains("1 lines longer than 2000 characters were cut"));
    let wide: String = (0..200)
        .map(|_| format!("{}\n", "y".repeat(1000)))
        .collect();
    ws.write("wide.txt", wide);
    let r = text(&ws.run(&ReadTool, json!({"path": "wide.txt"})).await);
    assert!(
        r.contains("Stopped at the 100 KiB output limit"),
        "{}",
        &r[r.len() - 300..]
    );
    assert!(r.len() < 100 * 1024 + 400);
}

#[tokio::test]
async fn encodings_and_line_endings() {
    let ws = Workspace::new();
    ws.write("crlf.txt", "a\r\nb\r\n");
    let r = text(&ws.run(&ReadTool, json!({"path": "crlf.txt"})).await);
    assert!(r.starts_with("1\ta\n2\tb\n<system>"), "{r}");
    assert!(r.contains("CRLF line endings; they are shown as LF"));
    ws.write("mixed.txt", "a\r\nb\nc\rd\n");
    let r = text(&ws.run(&ReadTool, json!({"path": "mixed.txt"})).await);
    assert!(r.starts_with("1\ta\\r\n2\tb\n3\tc\\rd\n"), "{r}");
    let utf16: Vec<u8> = [0xFF, 0xFE]
        .into_iter()
        .chain("h\u{e9}llo\nw\n".encode_utf16().flat_map(u16::to_le_bytes))
        .collect();
    ws.write("u16.txt", utf16);
    let r = text(&ws.run(&ReadTool, json!({"path": "u16.txt"})).await);
    assert!(r.starts_with("1\th\u{e9}llo\n2\tw\n"), "{r}");
    assert!(r.contains("Encoding: UTF-16LE with BOM."));
    let be: Vec<u8> = "plain ascii text\n"
        .encode_utf16()
        .flat_map(u16::to_be_bytes)
        .collect();
    ws.write("be.txt", be);
    let r = text(&ws.run(&ReadTool, json!({"path": "be.txt"})).await);
    assert!(r.starts_with("1\tplain ascii text\n"), "{r}");
    ws.write("bom8.txt", b"\xEF\xBB\xBFhi\n");
    assert!(text(&ws.run(&ReadTool, json!({"path": "bom8.txt"})).await).starts_with("1\thi\n"));
}

#[tokio::test]
async fn refusals() {
    let ws = Workspace::new();
    ws.write("bin.dat", b"abc\0def\x01\x02\x03\xff\xfe\x00\x00\x10");
    let r = ws.run(&ReadTool, json!({"path": "bin.dat"})).await;
    assert!(r.is_error);
    assert!(
        text(&r).contains("appears to be a binary file (it contains NUL bytes)"),
        "{}",
        text(&r)
    );
    ws.write("latin1.txt", b"caf\xe9\n");
    assert!(
        text(&ws.run(&ReadTool, json!({"path": "latin1.txt"})).await)
            .contains("is not UTF-8 or UTF-16 text")
    );
    ws.write("pic.png", b"\x89PNG");
    let r = ws.run(&ReadTool, json!({"path": "pic.png"})).await;
    assert!(r.is_error && text(&r).contains("use ReadMediaFile"));
    let r = ws.run(&ReadTool, json!({"path": "missing.txt"})).await;
    assert_eq!(
        text(&r),
        format!("`{}` does not exist.", shown(&ws.path("missing.txt")))
    );
    std::fs::create_dir(ws.path("sub")).unwrap();
    assert!(text(&ws.run(&ReadTool, json!({"path": "sub"})).await).contains("is a directory"));
    ws.write(".env", "SECRET=1\n");
    let r = ws.run(&ReadTool, json!({"path": ".env"})).await;
    assert!(
        r.is_error && text(&r).contains("sensitive file"),
        "{}",
        text(&r)
    );
    ws.write("empty.txt", "");
    assert_eq!(
        text(&ws.run(&ReadTool, json!({"path": "empty.txt"})).await),
        "<system>The file is empty.</system>"
    );
}

#[tokio::test]
async fn path_rules() {
    let ws = Workspace::new();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "top secret\n").unwrap();
    // Relative paths may not leave the workspace.
    let r = ws.run(&ReadTool, json!({"path": "../x.txt"})).await;
    assert!(
        r.is_error && text(&r).contains("is outside the workspace"),
        "{}",
        text(&r)
    );
    // A symlink inside the workspace pointing outside is caught.
    std::os::unix::fs::symlink(outside.path(), ws.path("link")).unwrap();
    let r = ws.run(&ReadTool, json!({"path": "link/secret.txt"})).await;
    assert!(
        r.is_error && text(&r).contains("symbolic link"),
        "{}",
        text(&r)
    );
    // Absolute paths outside the workspace are allowed (permission decides).
    let r = ws.run(&ReadTool, json!({"path": shown(&secret)})).await;
    assert!(!r.is_error, "{}", text(&r));
    // `~` expands to the home directory.
    let mut ctx = ws.ctx.clone();
    ctx.home = Some(std::fs::canonicalize(outside.path()).unwrap());
    let r = kimi_tools::tool::run_tool(&ReadTool, json!({"path": "~/secret.txt"}), &ctx).await;
    assert!(text(&r).starts_with("1\ttop secret\n"), "{}", text(&r));
}

#[tokio::test]
async fn journal_hint() {
    let ws = Workspace::new();
    ws.write("wire.jsonl", "{\"type\":\"a\"}\n");
    let r = text(&ws.run(&ReadTool, json!({"path": "wire.jsonl"})).await);
    assert!(r.contains("This is a session journal (wire.jsonl)"), "{r}");
}
