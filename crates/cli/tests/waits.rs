//! No silent waits: a model that cannot be reached fails fast with its retries on stderr; MCP
//! servers connect in the background, so one that never answers holds nothing up and one that
//! is slow joins the session when it is ready.

mod common;

use common::{CORE_FORMATS, Fixture, wait_child};
use kimi_llm::scripted::ScriptTurn;

#[test]
fn an_unreachable_model_fails_with_its_retries_on_stderr() {
    let fx = Fixture::new(CORE_FORMATS[0], Vec::new());
    // Port 1 on loopback: nothing listens, every connect is refused at once.
    let mut cmd = fx.command(&["-p", "hi"]);
    cmd.env("KIMI_MODEL_BASE_URL", "http://127.0.0.1:1/v1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let run = wait_child(cmd.spawn().unwrap());
    assert_eq!(run.code, Some(1), "{run:?}");
    let retries: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("retrying: "))
        .collect();
    assert_eq!(
        retries.len(),
        3,
        "four attempts, three retries: {}",
        run.stderr
    );
    for (i, line) in retries.iter().enumerate() {
        let n = i + 1;
        assert!(
            line.contains(&format!("attempt {n}/4 failed"))
                && line.contains(&format!("attempt {}/4 in ", n + 1))
                && line.contains("127.0.0.1:1"),
            "{line}"
        );
    }
    assert!(
        run.stderr.contains("the turn failed: could not reach")
            && run.stderr.contains("gave up after 4 attempts"),
        "{}",
        run.stderr
    );
}
