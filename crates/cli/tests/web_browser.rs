//! The web page in a real browser: headless Chromium driven by Playwright
//! (`tests/browser/web_page.js`) against `kimi-rs web` and the scripted model. The script
//! types a prompt, approves a Write call from its diff card and checks the rendered answer
//! (Markdown as elements, injected HTML as text). Needs Node, Chromium and playwright-core
//! (`.ci/run` installs them); fails saying what to install when one is missing, unless
//! `KIMI_RS_SKIP_BROWSER_TESTS=1`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader};

use common::browser::{browser_tests_enabled, run_script};
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

#[test]
fn the_page_renders_a_conversation_and_answers_an_approval_in_chromium() {
    if !browser_tests_enabled() {
        return;
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

    let output = run_script("web_page.js", &[url.as_str(), fx.cwd().to_str().unwrap()]);
    let _ = server.kill();
    let _ = server.wait();
    let stdout = output.unwrap_or_else(|failure| panic!("{failure}"));
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
