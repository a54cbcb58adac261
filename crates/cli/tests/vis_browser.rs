//! The `kimi-rs vis` page in a real browser: headless Chromium driven by Playwright
//! (`tests/browser/vis_page.js`) against the visualizer of a session the scripted model ran
//! (a quick Write, a Bash call that takes a measurable time). The script checks the figures,
//! the timeline's bars and the charts. Needs Node, Chromium and playwright-core (`.ci/run`
//! installs them); fails saying what to install when one is missing, unless
//! `KIMI_RS_SKIP_BROWSER_TESTS=1`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::Command;

use common::{CORE_FORMATS, Fixture, WAIT};
use kimi_llm::scripted::ScriptTurn;

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
            "playwright-core is not in {}: run .ci/run, or npm install --prefix {} playwright-core (or set KIMI_RS_PLAYWRIGHT_DIR)",
            modules.display(),
            modules.parent().unwrap().display()
        ));
    }
    None
}

#[test]
fn the_vis_page_draws_the_timeline_and_charts_in_chromium() {
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
            ScriptTurn::tool_calls(&[(
                "c_write",
                "Write",
                r#"{"path":"notes.txt","content":"hello\n"}"#,
            )]),
            ScriptTurn::tool_calls(&[("c_bash", "Bash", r#"{"command":"sleep 0.5"}"#)]),
            ScriptTurn::text("done"),
            ScriptTurn::text("second"),
        ],
    );
    let run = fx.run(&["-p", "first"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let id = fx.session_ids().pop().unwrap();
    let run = fx.run(&["-S", &id, "-p", "second"]);
    assert_eq!(run.code, Some(0), "{run:?}");

    let mut vis = fx.spawn(&["vis", &id, "--no-open", "--port", "0"]);
    let stdout = vis.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some((_, url)) = line.split_once(" at ") {
                let _ = tx.send(url.to_owned());
            }
        }
    });
    let url = rx.recv_timeout(WAIT).expect("kimi-rs vis printed its URL");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/browser/vis_page.js");
    let output = Command::new("node")
        .arg(&script)
        .args([url.as_str(), "2", "2", "Bash"])
        .env("NODE_PATH", playwright_modules())
        .env("KIMI_RS_CHROMIUM", chromium())
        .env("NO_PROXY", "127.0.0.1,localhost")
        .output()
        .unwrap();
    let _ = vis.kill();
    let _ = vis.wait();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the browser script failed\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
    );
    for line in [
        "ok: one timeline bar per tool call",
        "ok: the slowest call is the widest bar",
        "ok: the context chart has a point per step",
        "ok: no page errors",
    ] {
        assert!(stdout.contains(line), "{line}\n{stdout}");
    }
}
