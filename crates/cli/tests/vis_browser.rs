//! The `kimi-rs vis` page in a real browser: headless Chromium driven by Playwright
//! (`tests/browser/vis_page.js`) against the visualizer of a session the scripted model ran
//! (a quick Write, a Bash call that takes a measurable time). The script checks the figures,
//! the timeline's bars and the charts. Needs Node, Chromium and playwright-core (`.ci/run`
//! installs them); fails saying what to install when one is missing, unless
//! `KIMI_RS_SKIP_BROWSER_TESTS=1`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader};

use common::browser::{browser_tests_enabled, run_script};
use common::{CORE_FORMATS, Fixture, WAIT};
use kimi_llm::scripted::ScriptTurn;

#[test]
fn the_vis_page_draws_the_timeline_and_charts_in_chromium() {
    if !browser_tests_enabled() {
        return;
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
    let output = run_script("vis_page.js", &[url.as_str(), "2", "2", "Bash"]);
    let _ = vis.kill();
    let _ = vis.wait();
    let stdout = output.unwrap_or_else(|failure| panic!("{failure}"));
    for line in [
        "ok: one timeline bar per tool call",
        "ok: the slowest call is the widest bar",
        "ok: the context chart has a point per step",
        "ok: no page errors",
    ] {
        assert!(stdout.contains(line), "{line}\n{stdout}");
    }
}
