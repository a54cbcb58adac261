//! Nothing acknowledged is lost, nothing fails silently: the real `kimi-rs -p` against the
//! loopback scripted server, replaying what a hostile tester did. A journal that cannot be
//! written (a full disk, made real with a small tmpfs in a private mount namespace) stops the
//! turn before the side-effecting call runs again, with exit 1 and what to do; a broken stream's
//! partial answer is neither printed nor journaled; the repeat guard's stop says why and exits 1.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Command;

use common::{BIN, CORE_FORMATS, Fixture, Run, json_lines, wait_child};
use kimi_llm::scripted::{ScriptEvent, ScriptTurn};
use serde_json::{Value, json};

/// Whether this machine can make a private mount namespace as this user (or as root); when it
/// cannot, the test fails unless `KIMI_RS_SKIP_NAMESPACE_TESTS=1` says to skip it.
fn namespace_available() -> bool {
    let ok = Command::new("unshare")
        .args(["--user", "--map-root-user", "--mount", "--", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var("KIMI_RS_SKIP_NAMESPACE_TESTS").as_deref() == Ok("1"),
            "cannot create a private mount namespace (needs user namespaces); set \
             KIMI_RS_SKIP_NAMESPACE_TESTS=1 to skip this test on this machine"
        );
        eprintln!("skipped: no private mount namespace on this machine");
    }
    ok
}

/// `kimi-rs ARGS` with the fixture's environment, its sessions directory on a 1 MiB tmpfs
/// only this process tree sees.
fn run_on_small_disk(fx: &Fixture, args: &[&str]) -> Run {
    let inner = fx.command(args);
    let sessions = fx.home.path().join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let script = format!(
        "mount -t tmpfs -o size=1m tmpfs '{}' && exec \"$0\" \"$@\"",
        sessions.display()
    );
    let mut cmd = Command::new("unshare");
    cmd.args(["--user", "--map-root-user", "--mount", "--", "sh", "-c"])
        .arg(&script)
        .arg(BIN)
        .args(args)
        .current_dir(inner.get_current_dir().unwrap());
    for (key, value) in inner.get_envs() {
        if let Some(value) = value {
            cmd.env(key, value);
        }
    }
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    wait_child(cmd.spawn().unwrap())
}

#[test]
fn a_full_disk_stops_the_turn_before_the_side_effecting_call_runs_again_and_exits_1() {
    if !namespace_available() {
        return;
    }
    let fx = Fixture::new(CORE_FORMATS[0], Vec::new());
    let counter = fx.cwd().join("side-effects.log");
    // The call records that it ran, then fills the disk the journal lives on; the model (as
    // the tester's did) asks for the same call again and again.
    let fill = fx.home.path().join("sessions").join("filler");
    let command = format!(
        "echo ran >> {}; head -c 4000000 /dev/zero > {} 2>/dev/null; true",
        counter.display(),
        fill.display()
    );
    let args = json!({ "command": command }).to_string();
    // Each step also reads a 20 KB file: a result that large cannot slip into the slack of the
    // journal's last page on the full disk (a small one can, depending on all that was
    // journaled before), so the append after the side effect really fails.
    let big = fx.cwd().join("big.txt");
    std::fs::write(&big, format!("{}\n", "y".repeat(99)).repeat(200)).unwrap();
    let read = json!({ "path": big.display().to_string() }).to_string();
    for i in 1..=5 {
        fx.server.push(ScriptTurn::tool_calls(&[
            (&format!("call_{i}"), "Bash", &args),
            (&format!("read_{i}"), "Read", &read),
        ]));
    }
    fx.server.push(ScriptTurn::text("All done."));
    // The protected floor keeps commands away from kimi-rs's home; this rule lets the test's
    // own filler through (and nothing else).
    std::fs::write(
        fx.home.path().join("config.toml"),
        format!(
            "[[permission.rules]]\ndecision = \"allow\"\npattern = {}\n",
            toml_string(&format!("Bash({command})"))
        ),
    )
    .unwrap();
    let run = run_on_small_disk(&fx, &["-p", "Run the step"]);
    let ran = std::fs::read_to_string(&counter).unwrap_or_default();
    assert_eq!(
        ran.lines().count(),
        1,
        "the side-effecting call ran again on unjournaled state: {run:?}"
    );
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(
        run.stderr.contains("could not write the session journal")
            && run.stderr.contains("Free disk space")
            && run.stderr.contains("kimi-rs -S "),
        "the error says what failed and what to do: {run:?}"
    );
    assert!(run.stderr.contains("wire.jsonl"), "names the file: {run:?}");
    assert_eq!(fx.requests().len(), 1, "no request after the failure");
}

fn toml_string(s: &str) -> String {
    Value::String(s.to_owned()).to_string()
}

/// Two attempts break off mid-text, the third answers.
fn broken_then_whole() -> Vec<ScriptTurn> {
    let broken = |n: u32| {
        ScriptTurn::reply(vec![
            ScriptEvent::text(format!("PARTIAL-{n} half an answ")),
            ScriptEvent::Disconnect,
        ])
    };
    vec![broken(1), broken(2), ScriptTurn::text("The whole answer.")]
}

#[test]
fn a_broken_streams_partial_text_is_neither_printed_nor_journaled_nor_resumed() {
    let fx = Fixture::new(CORE_FORMATS[0], broken_then_whole());
    let run = fx.run(&["-p", "Answer me"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(!run.stdout.contains("PARTIAL"), "{run:?}");
    assert_eq!(
        run.stdout.matches("The whole answer.").count(),
        1,
        "{run:?}"
    );
    let id = fx.session_ids().remove(0);
    let journal = fx.journal(&id);
    let text = serde_json::to_string(&journal).unwrap();
    assert!(!text.contains("PARTIAL"), "journaled: {journal:#?}");

    // Resume: the history sent to the model has exactly one assistant answer.
    fx.server.push(ScriptTurn::text("Again."));
    let run = fx.run(&["-S", &id, "-p", "And now?"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let last = fx.requests().pop().unwrap();
    assert!(!last.raw_body.contains("PARTIAL"), "{}", last.raw_body);
    assert_eq!(last.raw_body.matches("The whole answer.").count(), 1);

    let fx = Fixture::new(CORE_FORMATS[1], broken_then_whole());
    let run = fx.run(&["-p", "Answer me", "--output-format", "stream-json"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(!run.stdout.contains("PARTIAL"), "{run:?}");
    let answers: Vec<Value> = json_lines(&run)
        .into_iter()
        .filter(|l| l["role"] == "assistant")
        .collect();
    assert_eq!(answers.len(), 1, "{run:?}");
    assert_eq!(answers[0]["content"], "The whole answer.");
}

#[test]
fn a_stream_that_never_completes_fails_without_printing_its_partial_text() {
    let broken = ScriptTurn::reply(vec![
        ScriptEvent::text("PARTIAL before the break"),
        ScriptEvent::Disconnect,
    ]);
    let fx = Fixture::new(CORE_FORMATS[0], vec![broken.clone(), broken]);
    std::fs::write(
        fx.home.path().join("config.toml"),
        "[loop_control]\nmax_attempts_per_step = 2\n",
    )
    .unwrap();
    let run = fx.run(&["-p", "Answer me"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(!run.stdout.contains("PARTIAL"), "{run:?}");
}

/// Twelve identical calls in a row: the repeat guard stops the turn.
fn looping_model() -> Vec<ScriptTurn> {
    (1..=12)
        .map(|i| {
            ScriptTurn::tool_calls(&[(&format!("call_{i}"), "Read", r#"{"path":"notes.txt"}"#)])
        })
        .collect()
}

#[test]
fn the_repeat_guard_stop_gives_its_reason_and_exits_1_in_both_formats() {
    let fx = Fixture::new(CORE_FORMATS[0], looping_model());
    std::fs::write(fx.cwd().join("notes.txt"), "same\n").unwrap();
    let run = fx.run(&["-p", "Read the notes"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(
        run.stderr.contains("same Read call 12 times in a row"),
        "{run:?}"
    );

    let fx = Fixture::new(CORE_FORMATS[0], looping_model());
    std::fs::write(fx.cwd().join("notes.txt"), "same\n").unwrap();
    let run = fx.run(&["-p", "Read the notes", "--output-format", "stream-json"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    let failed: Vec<Value> = json_lines(&run)
        .into_iter()
        .filter(|l| l["role"] == "meta" && l["type"] == "turn.failed")
        .collect();
    assert_eq!(failed.len(), 1, "{run:?}");
    assert!(
        failed[0]["error"]
            .as_str()
            .unwrap()
            .contains("same Read call 12 times in a row")
    );
}
