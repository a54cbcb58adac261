//! The web page in a real browser: headless Chromium driven by Playwright
//! (`tests/browser/web_page.js`) against `kimi-rs web` and the scripted model. The script
//! types a prompt, approves a Write call from its diff card and checks the rendered answer
//! (Markdown as elements, injected HTML as text). Needs Node, Chromium and playwright-core
//! (`.ci/run` installs them); fails saying what to install when one is missing, unless
//! `KIMI_RS_SKIP_BROWSER_TESTS=1`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::Command;

use common::{CORE_FORMATS, Fixture, WAIT};
use kimi_llm::scripted::ScriptTurn;

const ANSWER: &str = r#"## Summary

All done: **bold** and *italic*, the file is `notes.md`.

- first item
- second item

```rust
fn main() {
    println!("<b>hi</b>");
}
```

Injected: <img src=x onerror="window.__pwned=1"> and <script>window.__pwned=2</script>

See [the docs](https://example.com/docs) but not [this](javascript:window.__pwned=3)."#;

/// Where playwright-core is installed (`.ci/run` puts it in ~/.cache/kimi-rs-ci/playwright).
fn playwright_modules() -> PathBuf {
    match std::env::var_os("KIMI_RS_PLAYWRIGHT_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => std::env::home_dir()
            .unwrap_or_default()
            .join(".cache/kimi-rs-ci/playwright"),
    }
    .join("node_modules")
}

fn chromium() -> PathBuf {
    std::env::var_os("KIMI_RS_CHROMIUM")
        .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from)
}

/// `None` when everything is installed, else what to install.
fn missing() -> Option<String> {
    let node = Command::new("node").arg("--version").output();
    if !node.is_ok_and(|o| o.status.success()) {
        return Some("node is not on PATH: apt-get install -y nodejs npm".to_owned());
    }
    if !chromium().is_file() {
        return Some(format!(
            "Chromium is not at {}: apt-get install -y chromium (or set KIMI_RS_CHROMIUM)",
            chromium().display()
        ));
    }
    let modules = playwright_modules();
    if !modules.join("playwright-core/package.json").is_file() {
        return Some(format!(
            "playwright-core is not in {}: npm install --prefix {} playwright-core (or run .ci/run, or set KIMI_RS_PLAYWRIGHT_DIR)",
            modules.display(),
            modules.parent().unwrap().display()
        ));
    }
    None
}

#[test]
fn the_page_renders_a_conversation_and_answers_an_approval_in_chromium() {
    if std::env::var("KIMI_RS_SKIP_BROWSER_TESTS").as_deref() == Ok("1") {
        println!("skipped: KIMI_RS_SKIP_BROWSER_TESTS=1");
        return;
    }
    if let Some(what) = missing() {
        panic!("the browser test needs {what}; or set KIMI_RS_SKIP_BROWSER_TESTS=1 to skip it");
    }
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![
            ScriptTurn::tool_calls(&[
                (
                    "call_todo",
                    "TodoList",
                    r#"{"todos":[{"title":"write the notes","status":"done"},{"title":"report back","status":"in_progress"}]}"#,
                ),
                (
                    "call_write",
                    "Write",
                    r##"{"path":"notes.md","content":"# Notes\nhello from kimi\n"}"##,
                ),
            ]),
            ScriptTurn::text(ANSWER),
        ],
    );
    let mut server = fx.spawn(&["web", "--port", "0", "--no-open"]);
    let stderr = server.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if let Some(url) = line.strip_prefix("kimi-rs web: serving on ") {
                let _ = tx.send(url.to_owned());
            }
        }
    });
    let url = rx.recv_timeout(WAIT).expect("the server printed its URL");

    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/browser/web_page.js");
    let output = Command::new("node")
        .arg(&script)
        .arg(&url)
        .arg(fx.cwd())
        .env("NODE_PATH", playwright_modules())
        .env("KIMI_RS_CHROMIUM", chromium())
        .env("NO_PROXY", "127.0.0.1,localhost")
        .output()
        .unwrap();
    let _ = server.kill();
    let _ = server.wait();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the browser script failed\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
    );
    assert!(
        stdout.contains("ok: no injected element exists or ran"),
        "{stdout}"
    );
    assert!(stdout.contains("ok: no page errors"), "{stdout}");
    assert_eq!(
        std::fs::read_to_string(fx.cwd().join("notes.md")).unwrap(),
        "# Notes\nhello from kimi\n",
        "the approved Write ran"
    );
}
