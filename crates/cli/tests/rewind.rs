//! File checkpoints and `kimi-rs rewind` on the real binary (issue #17): one scripted turn
//! edits, writes, and runs a Bash command that creates and deletes files; the rewind restores
//! all of it, leaves what the agent never touched (and what the user made afterwards) alone,
//! never touches the git repository, and the resumed session no longer sends the undone turn.
//! Files changed outside the agent stop the rewind unless `--force`; a file over a limit is
//! reported as not restorable.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::Command;

use common::{CORE_FORMATS, Fixture, Run, user_texts};
use kimi_llm::scripted::ScriptTurn;
use pretty_assertions::assert_eq;
use serde_json::Value;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args(["-c", "core.fsmonitor=false", "-c", "commit.gpgsign=false"])
        .args(args)
        .current_dir(dir)
        // Read-only commands must not refresh the index: its bytes are compared.
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .expect("git runs (install git to run this test)");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// Everything of the repository a rewind must leave as it was.
fn repo_state(dir: &Path) -> Vec<String> {
    vec![
        git(dir, &["rev-parse", "HEAD"]),
        git(dir, &["for-each-ref"]),
        git(dir, &["stash", "list"]),
        format!("{:?}", std::fs::read(dir.join(".git/index")).unwrap()),
        git(dir, &["status", "--porcelain", "--untracked-files=all"]),
    ]
}

fn read(path: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

fn rewind(fx: &Fixture, id: &str, extra: &[&str]) -> Run {
    let mut args = vec!["rewind", "--session", id];
    args.extend_from_slice(extra);
    fx.run(&args)
}

/// The one turn of the scenario: Read + Edit a tracked file, Write a new one, and a Bash
/// command that creates a nested file and deletes another.
fn agent_turn() -> Vec<ScriptTurn> {
    vec![
        ScriptTurn::tool_calls(&[("c_read", "Read", r#"{"path":"tracked.txt"}"#)]),
        ScriptTurn::tool_calls(&[(
            "c_edit",
            "Edit",
            r#"{"path":"tracked.txt","old_string":"one","new_string":"two"}"#,
        )]),
        ScriptTurn::tool_calls(&[(
            "c_write",
            "Write",
            r#"{"path":"new.txt","content":"fresh\n"}"#,
        )]),
        ScriptTurn::tool_calls(&[(
            "c_bash",
            "Bash",
            r#"{"command":"mkdir -p nested/deep && echo made > nested/deep/made.txt && rm gone.txt"}"#,
        )]),
        ScriptTurn::text("All done."),
    ]
}

#[test]
fn rewind_restores_edit_write_and_bash_changes_and_leaves_git_and_user_files_alone() {
    for format in CORE_FORMATS {
        let name = format.1;
        let mut script = agent_turn();
        script.push(ScriptTurn::text("Resumed."));
        let fx = Fixture::new(format, script);
        let cwd = fx.cwd();
        std::fs::write(cwd.join("tracked.txt"), "one\n").unwrap();
        std::fs::write(cwd.join("gone.txt"), "bye\n").unwrap();
        std::fs::write(cwd.join("untouched.txt"), "same\n").unwrap();
        git(&cwd, &["init", "-q"]);
        git(&cwd, &["add", "."]);
        git(&cwd, &["commit", "-qm", "start"]);
        // A stash too: the rewind must not touch it.
        std::fs::write(cwd.join("untouched.txt"), "stashed\n").unwrap();
        git(&cwd, &["stash", "-q"]);
        let before = repo_state(&cwd);

        let run = fx.run(&["-p", "FIRST PROMPT: change things"]);
        assert_eq!(run.code, Some(0), "{name}: {run:?}");
        assert_eq!(
            read(cwd.join("tracked.txt")).as_deref(),
            Some("two\n"),
            "{name}"
        );
        assert_eq!(
            read(cwd.join("new.txt")).as_deref(),
            Some("fresh\n"),
            "{name}"
        );
        assert!(cwd.join("nested/deep/made.txt").is_file(), "{name}");
        assert!(!cwd.join("gone.txt").exists(), "{name}");
        let id = fx.session_ids().pop().unwrap();
        let steps: Vec<Value> = fx
            .journal(&id)
            .into_iter()
            .filter(|r| r["type"] == "checkpoint.step")
            .collect();
        assert_eq!(
            steps.len(),
            3,
            "{name}: Edit, Write and Bash checkpoints: {steps:#?}"
        );

        // The process has ended: content only its workspace snapshot held (a file no call
        // changed) is gone, so a closed session keeps no copy of the workspace.
        let untouched = {
            use sha2::Digest;
            let digest = sha2::Sha256::digest(b"same\n");
            digest
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        };
        assert_eq!(
            common::find_file(fx.home.path(), &id, &untouched),
            None,
            "{name}: snapshot-only content released at exit"
        );
        assert!(
            common::find_file(fx.home.path(), &id, "wire.jsonl").is_some(),
            "{name}: the lookup itself works"
        );

        // The user adds a file after the turn: the rewind leaves it.
        std::fs::write(cwd.join("mine.txt"), "user's\n").unwrap();
        let run = rewind(&fx, &id, &["--turns", "1"]);
        assert_eq!(run.code, Some(0), "{name}: {run:?}");
        assert!(run.stdout.contains("Restored 4 file(s)"), "{name}: {run:?}");
        assert_eq!(
            read(cwd.join("tracked.txt")).as_deref(),
            Some("one\n"),
            "{name}"
        );
        assert!(!cwd.join("new.txt").exists(), "{name}");
        assert!(
            !cwd.join("nested").exists(),
            "{name}: created directories go too"
        );
        assert_eq!(
            read(cwd.join("gone.txt")).as_deref(),
            Some("bye\n"),
            "{name}"
        );
        assert_eq!(
            read(cwd.join("untouched.txt")).as_deref(),
            Some("same\n"),
            "{name}"
        );
        assert_eq!(
            read(cwd.join("mine.txt")).as_deref(),
            Some("user's\n"),
            "{name}"
        );
        std::fs::remove_file(cwd.join("mine.txt")).unwrap();
        assert_eq!(
            repo_state(&cwd),
            before,
            "{name}: the git repository is as it was"
        );

        // The resumed session does not send the undone turn to the model.
        let run = fx.run(&["-S", &id, "-p", "SECOND PROMPT"]);
        assert_eq!(run.code, Some(0), "{name}: {run:?}");
        let requests = fx.requests();
        let last = user_texts(&requests.last().unwrap().body).join("\n");
        assert!(last.contains("SECOND PROMPT"), "{name}: {last}");
        assert!(
            !last.contains("FIRST PROMPT"),
            "{name}: the undone turn was sent: {last}"
        );
    }
}

#[test]
fn a_file_changed_outside_the_agent_stops_the_rewind_until_forced() {
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![
            ScriptTurn::tool_calls(&[("c_read", "Read", r#"{"path":"a.txt"}"#)]),
            ScriptTurn::tool_calls(&[(
                "c_edit",
                "Edit",
                r#"{"path":"a.txt","old_string":"alpha","new_string":"ALPHA"}"#,
            )]),
            ScriptTurn::tool_calls(&[("c_bash", "Bash", r#"{"command":"echo agent > b.txt"}"#)]),
            ScriptTurn::text("Done."),
        ],
    );
    let cwd = fx.cwd();
    assert!(
        !cwd.join(".git").exists(),
        "the test folder is not a git repository"
    );
    std::fs::write(cwd.join("a.txt"), "alpha\n").unwrap();
    std::fs::write(cwd.join("b.txt"), "original\n").unwrap();
    let run = fx.run(&["-p", "change a and b"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(read(cwd.join("b.txt")).as_deref(), Some("agent\n"));
    let id = fx.session_ids().pop().unwrap();

    // Someone else changes b.txt after the turn.
    std::fs::write(cwd.join("b.txt"), "user edit\n").unwrap();
    let run = rewind(&fx, &id, &[]);
    assert_eq!(run.code, Some(1), "{run:?}");
    let b = cwd.join("b.txt").display().to_string();
    assert!(run.stderr.contains(&b), "the conflict is named: {run:?}");
    assert!(
        !run.stderr.contains("a.txt"),
        "only b.txt conflicts: {run:?}"
    );
    assert_eq!(read(cwd.join("b.txt")).as_deref(), Some("user edit\n"));
    assert_eq!(
        read(cwd.join("a.txt")).as_deref(),
        Some("ALPHA\n"),
        "nothing restored"
    );

    let run = rewind(&fx, &id, &["--force"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(read(cwd.join("b.txt")).as_deref(), Some("original\n"));
    assert_eq!(read(cwd.join("a.txt")).as_deref(), Some("alpha\n"));
    assert!(run.stdout.contains("overwritten"), "{run:?}");
}

#[test]
fn a_file_over_the_size_limit_is_reported_as_skipped() {
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![
            ScriptTurn::tool_calls(&[(
                "c_bash",
                "Bash",
                r#"{"command":"echo more >> big.txt && echo s > small.txt"}"#,
            )]),
            ScriptTurn::text("Done."),
        ],
    );
    std::fs::write(
        fx.home.path().join("config.toml"),
        "[checkpoint]\nmax_file_bytes = 100\n",
    )
    .unwrap();
    let cwd = fx.cwd();
    std::fs::write(cwd.join("big.txt"), "x".repeat(1000)).unwrap();
    let run = fx.run(&["-p", "grow the big file"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let big = cwd.join("big.txt").display().to_string();
    assert!(
        run.stderr.contains(&big) && run.stderr.contains("checkpoint.max_file_bytes"),
        "the skip is shown: {run:?}"
    );
    let id = fx.session_ids().pop().unwrap();
    let step = fx
        .journal(&id)
        .into_iter()
        .find(|r| r["type"] == "checkpoint.step")
        .unwrap();
    assert_eq!(step["skipped"][0]["path"], big.as_str(), "{step:#}");

    let run = rewind(&fx, &id, &["--files"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        run.stdout.contains(&format!("Not restored: {big}")),
        "the rewind says what it cannot restore: {run:?}"
    );
    assert!(
        !cwd.join("small.txt").exists(),
        "the rest is restored: {run:?}"
    );
    assert_eq!(read(cwd.join("big.txt")).unwrap().len(), 1005);
}
