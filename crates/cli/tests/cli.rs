//! The real `kimi-rs` binary: version, help, and the conformance command's output contract.
#![allow(clippy::unwrap_used, clippy::expect_used)] // helpers outside #[test] fns count as tests here

use assert_cmd::Command;
use predicates::prelude::*;

fn kimi() -> Command {
    Command::cargo_bin("kimi-rs").expect("binary built")
}

#[test]
fn version_and_help() {
    kimi()
        .arg("--version")
        .assert()
        .success()
        .stdout(predicate::str::starts_with("kimi-rs "));
    kimi().arg("--help").assert().success().stdout(
        predicate::str::contains("--prompt")
            .and(predicate::str::contains("--output-format"))
            .and(predicate::str::contains("--session"))
            .and(predicate::str::contains("--continue"))
            .and(predicate::str::contains("--yolo"))
            .and(predicate::str::contains("--add-dir"))
            .and(predicate::str::contains("--skills-dir")),
    );
}

#[test]
fn conformance_counts_unknown_areas_as_failed_and_ends_with_the_totals_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("x.json"),
        r#"{"area": "no_such_area", "cases": [{"name": "c", "input": {}, "expected": {}}]}"#,
    )
    .unwrap();
    // A case that cannot execute here is counted as skipped, with its reason, never passed.
    std::fs::write(
        dir.path().join("y.json"),
        r#"{"area": "accumulator", "cases": [{"name": "rule", "input": {"fn": "note"}, "expected": {"rule": "r"}}]}"#,
    )
    .unwrap();
    std::fs::write(dir.path().join("README.json.txt"), "not a case file").unwrap();
    let out = kimi()
        .args(["debug", "conformance"])
        .arg(dir.path())
        .assert()
        .failure()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("FAIL no_such_area :: c"), "{text}");
    assert!(
        text.contains("SKIP accumulator :: rule: a stated ordering rule"),
        "{text}"
    );
    assert_eq!(
        text.lines().last(),
        Some("0 passed, 1 failed, 1 skipped"),
        "{text}"
    );
}

#[test]
fn conformance_on_a_missing_directory_says_what_to_do() {
    kimi()
        .args(["debug", "conformance", "/definitely/not/here"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("pass a directory of case files"));
}

#[test]
fn conformance_rejects_a_case_file_that_is_not_json() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("broken.json"), "{ nope").unwrap();
    kimi()
        .args(["debug", "conformance"])
        .arg(dir.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("broken.json"));
}

#[test]
fn invalid_flag_combinations_exit_1_with_a_reason() {
    for (args, reason) in [
        (vec!["-p", ""], "empty"),
        (vec!["-p", "hi", "--yolo"], "auto permission mode"),
        (vec!["--output-format", "text"], "only applies with -p"),
        (vec!["--yolo", "--auto"], "either --yolo or --auto"),
        (vec!["-c", "-S", "abc"], "either -c/--continue"),
        (vec!["-p", "hi", "-S"], "needs a session id"),
        (
            vec!["--agent", "a", "--agent-file", "f.md"],
            "either --agent",
        ),
    ] {
        kimi()
            .args(&args)
            .assert()
            .code(1)
            .stderr(predicate::str::contains(reason));
    }
}

#[test]
fn hidden_aliases_are_accepted() {
    // `-r` resumes like `-S`, `-y` is yolo; the combination `-r X -C` is rejected as -S with -c.
    kimi()
        .args(["-r", "abc", "-C"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("either -c/--continue"));
    kimi()
        .args(["-y", "--auto"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("either --yolo or --auto"));
}

#[test]
fn sandbox_command_allows_the_workspace_and_refuses_outside_writes() {
    let work = tempfile::tempdir().unwrap();
    std::fs::create_dir(work.path().join("sub")).unwrap();
    let outside = kimi_test_support::sandbox::outside_dir();
    let home = tempfile::tempdir().unwrap();
    let probe = kimi()
        .current_dir(work.path())
        .env("KIMI_RS_HOME", home.path())
        .args(["sandbox", "--", "true"])
        .output()
        .unwrap();
    if !probe.status.success() {
        let why = String::from_utf8_lossy(&probe.stderr);
        assert!(why.contains("not available"), "{why}");
        if kimi_test_support::sandbox::skip_unless_supported(Some(&why)) {
            return;
        }
    }
    kimi()
        .current_dir(work.path())
        .env("KIMI_RS_HOME", home.path())
        .args(["sandbox", "--", "sh", "-c", "echo ok > sub/inside.txt"])
        .assert()
        .success();
    assert!(work.path().join("sub/inside.txt").exists());
    let target = outside.path().join("outside.txt");
    kimi()
        .current_dir(work.path())
        .env("KIMI_RS_HOME", home.path())
        .args(["sandbox", "--", "sh", "-c"])
        .arg(format!("echo no > {}", target.display()))
        .assert()
        .failure();
    assert!(!target.exists());
}
