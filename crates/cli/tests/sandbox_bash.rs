//! `[sandbox] mode = "workspace-write"` end to end: the real binary in print mode, a scripted
//! model on loopback asking Bash to write inside and outside the workspace. Where the kernel has
//! no Landlock the test fails, unless `KIMI_RS_SKIP_SANDBOX_TESTS=1` says to skip.
#![allow(clippy::unwrap_used, clippy::expect_used)] // helpers outside #[test] fns count as tests here

use assert_cmd::Command;
use kimi_llm::scripted::ScriptTurn;
use kimi_test_support::ScriptServer;

#[tokio::test]
async fn bash_under_the_sandbox_writes_inside_the_workspace_only() {
    let probe = Command::cargo_bin("kimi-rs")
        .unwrap()
        .args(["sandbox", "--", "true"])
        .env("KIMI_RS_HOME", tempfile::tempdir().unwrap().path())
        .output()
        .unwrap();
    if !probe.status.success() {
        let why = String::from_utf8_lossy(&probe.stderr);
        assert!(why.contains("not available"), "{why}");
        if kimi_test_support::sandbox::skip_unless_supported(Some(&why)) {
            return;
        }
    }
    let work = tempfile::tempdir().unwrap();
    std::fs::create_dir(work.path().join("sub")).unwrap();
    std::fs::create_dir(work.path().join(".git")).unwrap();
    std::fs::write(work.path().join(".git/config"), "[core]\n").unwrap();
    let home = tempfile::tempdir().unwrap();
    // Outside the workspace, the temp dirs and the checkout, wherever the checkout lives.
    let outside = kimi_test_support::sandbox::outside_dir();
    let target = outside.path().join("escaped.txt");
    std::fs::write(
        home.path().join("config.toml"),
        // The allow rule names these `echo` commands, so the protected floor lets them through
        // and the kernel's sandbox is what stops the writes.
        "[sandbox]\nmode = \"workspace-write\"\n\n[[permission.rules]]\ndecision = \"allow\"\n\
         pattern = \"Bash(echo *)\"\n",
    )
    .unwrap();
    let outside_cmd =
        serde_json::json!({"command": format!("echo no > {}", target.display())}).to_string();
    let server = ScriptServer::start(vec![
        ScriptTurn::tool_calls(&[
            (
                "c1",
                "Bash",
                r#"{"command":"echo yes > sub/inside.txt && echo top > top.txt"}"#,
            ),
            ("c2", "Bash", &outside_cmd),
            ("c3", "Bash", r#"{"command":"echo hacked > .git/config"}"#),
        ]),
        ScriptTurn::text("done"),
    ])
    .await
    .unwrap();
    let base_url = server.base_url();
    let work_path = work.path().to_owned();
    let home_path = home.path().to_owned();
    let output = tokio::task::spawn_blocking(move || {
        Command::cargo_bin("kimi-rs")
            .unwrap()
            .current_dir(&work_path)
            .env("KIMI_RS_HOME", &home_path)
            .env("KIMI_MODEL_NAME", "m")
            .env("KIMI_MODEL_API_KEY", "k")
            .env("KIMI_MODEL_PROVIDER_TYPE", "openai")
            .env("KIMI_MODEL_BASE_URL", format!("{base_url}/v1"))
            .args(["-p", "write two files", "--output-format", "stream-json"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(work.path().join("sub/inside.txt").exists(), "{stdout}");
    assert!(
        work.path().join("top.txt").exists(),
        "new files at the workspace root are allowed: {stdout}"
    );
    assert_eq!(
        std::fs::read_to_string(work.path().join(".git/config")).unwrap(),
        "[core]\n",
        "`.git` stays read-only: {stdout}"
    );
    assert!(
        !target.exists(),
        "a write outside the workspace must fail: {stdout}"
    );
    assert!(stdout.contains("Permission denied"), "{stdout}");
}
