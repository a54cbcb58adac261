//! `kimi-rs export` on the real binary: a session made by a real `-p` run against the scripted
//! server is zipped whole, its log included (read back with the `zip` crate), the newest session is taken with
//! `-y`, refused without it when nothing can confirm, and an unknown id says how to list them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Read;
use std::path::{Path, PathBuf};

use common::{CORE_FORMATS, Fixture, find_file};
use kimi_llm::scripted::ScriptTurn;

fn session_fixture() -> (Fixture, String) {
    let fx = Fixture::new(CORE_FORMATS[0], vec![ScriptTurn::text("Hello there.")]);
    let run = fx.run(&["-p", "Say hello"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let ids = fx.session_ids();
    assert_eq!(ids.len(), 1);
    let id = ids[0].clone();
    (fx, id)
}

fn read_zip(path: &Path) -> Vec<(String, Vec<u8>)> {
    let mut archive = zip::ZipArchive::new(std::fs::File::open(path).unwrap()).unwrap();
    (0..archive.len())
        .map(|i| {
            let mut file = archive.by_index(i).unwrap();
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes).unwrap();
            (file.name().unwrap().into_owned(), bytes)
        })
        .collect()
}

/// The `kimi-export-*.zip` files of `dir`.
fn exports_in(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with("kimi-export-") && name.ends_with(".zip")
        })
        .collect()
}

#[test]
fn exports_the_whole_session_directory_of_a_real_run() {
    let (fx, id) = session_fixture();
    let journal_path = find_file(&fx.home.path().join("sessions"), &id, "wire.jsonl").unwrap();
    let session_dir = journal_path.ancestors().nth(3).unwrap().to_path_buf();
    assert!(session_dir.ends_with(&id), "{}", session_dir.display());
    // A file outside the session directory, reachable through a link inside it, stays out.
    let outside = fx.home.path().join("outside-secret.txt");
    std::fs::write(&outside, "do not export").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(&outside, session_dir.join("link-to-secret")).unwrap();

    let out = fx.cwd().join("out.zip");
    let run = fx.run(&["export", &id, "-o", "out.zip"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        run.stdout
            .contains(&format!("Exported session {id} to {}", out.display())),
        "{run:?}"
    );
    assert!(
        run.stdout.contains(" bytes,") || run.stdout.contains(" KiB,"),
        "the size is printed: {run:?}"
    );

    let entries = read_zip(&out);
    let names: Vec<&str> = entries.iter().map(|(n, _)| n.as_str()).collect();
    assert!(names.contains(&"state.json"), "{names:?}");
    assert!(names.contains(&"kimi-export.json"), "{names:?}");
    assert!(
        !names.iter().any(|n| n.contains("link-to-secret")),
        "{names:?}"
    );
    let journal = entries
        .iter()
        .find(|(n, _)| n == "agents/main/wire.jsonl")
        .unwrap_or_else(|| panic!("no journal in {names:?}"));
    assert_eq!(journal.1, std::fs::read(&journal_path).unwrap());
    let text = String::from_utf8(journal.1.clone()).unwrap();
    assert!(
        text.contains("Say hello") && text.contains("Hello there."),
        "{text}"
    );
    // Every regular file of the session directory is in the archive.
    let mut on_disk = Vec::new();
    collect_files(&session_dir, &session_dir, &mut on_disk);
    for name in &on_disk {
        assert!(
            names.contains(&name.as_str()),
            "{name} missing from {names:?}"
        );
    }
    assert!(!entries.iter().any(|(_, b)| b == b"do not export"));
    // The session's log goes with it, for a bug report.
    let log = entries
        .iter()
        .find(|(n, _)| n == "logs/kimi-rs.log")
        .unwrap_or_else(|| panic!("no session log in {names:?}"));
    let log = String::from_utf8_lossy(&log.1);
    assert!(
        log.contains(&format!("session{{session_id={id}}}")) && log.contains("session opened"),
        "{log}"
    );
    let manifest: serde_json::Value = serde_json::from_slice(
        &entries
            .iter()
            .find(|(n, _)| n == "kimi-export.json")
            .unwrap()
            .1,
    )
    .unwrap();
    assert_eq!(manifest["session_id"], id.as_str());
}

fn collect_files(root: &Path, dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            collect_files(root, &entry.path(), out);
        } else if kind.is_file() {
            let rel = entry.path().strip_prefix(root).unwrap().to_owned();
            out.push(rel.to_string_lossy().replace('\\', "/"));
        }
    }
}

#[test]
fn without_an_id_the_newest_session_needs_yes_when_nothing_can_confirm() {
    let (fx, id) = session_fixture();
    // stdin is not a terminal (the fixture gives /dev/null): refuse and say to pass -y.
    let run = fx.run(&["export"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(run.stderr.contains("pass -y"), "{run:?}");
    assert!(exports_in(&fx.cwd()).is_empty());

    let run = fx.run(&["export", "-y"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let files = exports_in(&fx.cwd());
    assert_eq!(files.len(), 1, "{run:?}");
    let short: String = id
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(8)
        .collect();
    let name = files[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.starts_with(&format!("kimi-export-{short}-")), "{name}");
    assert!(
        run.stdout.contains(&files[0].display().to_string()),
        "{run:?}"
    );
    let names: Vec<String> = read_zip(&files[0]).into_iter().map(|(n, _)| n).collect();
    assert!(
        names.iter().any(|n| n == "agents/main/wire.jsonl"),
        "{names:?}"
    );
}

#[test]
fn an_unknown_id_or_an_empty_directory_fails_with_what_to_do() {
    let fx = Fixture::new(CORE_FORMATS[0], Vec::new());
    let run = fx.run(&["export", "no-such-session"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(
        run.stderr.contains("no session `no-such-session`")
            && run.stderr.contains("kimi-rs --session"),
        "{run:?}"
    );
    let run = fx.run(&["export", "-y"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(run.stderr.contains("pass a session id"), "{run:?}");
    assert!(exports_in(&fx.cwd()).is_empty());
}

#[test]
fn a_debug_zip_adds_the_logs_and_the_settings_with_secrets_redacted() {
    let (fx, id) = session_fixture();
    std::fs::write(
        fx.home.path().join("config.toml"),
        "# mine\n[providers.p]\ntype = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key = \"sk-verysecret123\"\nenv = { REGION = \"eu\", OTHER_TOKEN = \"tok-777\" }\n",
    )
    .unwrap();
    std::fs::write(
        fx.home.path().join("mcp.json"),
        r#"{"mcpServers":{"gh":{"command":"gh-mcp","env":{"GITHUB_TOKEN":"ghp_secret99"}}}}"#,
    )
    .unwrap();
    let out = fx.home.path().join("debug.zip");
    let run = fx.run(&["export", &id, "--debug-zip", "-o", out.to_str().unwrap()]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let entries = read_zip(&out);
    let names: Vec<&str> = entries.iter().map(|(n, _)| n.as_str()).collect();
    assert!(names.iter().any(|n| n.ends_with("wire.jsonl")), "{names:?}");
    assert!(
        names
            .iter()
            .any(|n| n.starts_with("kimi-rs-home/logs/") && n.contains("kimi-rs")),
        "the global log: {names:?}"
    );
    let text = |name: &str| {
        String::from_utf8(
            entries
                .iter()
                .find(|(n, _)| n == name)
                .unwrap_or_else(|| panic!("{name} in {names:?}"))
                .1
                .clone(),
        )
        .unwrap()
    };
    let config = text("kimi-rs-home/config.toml");
    assert!(
        !config.contains("sk-verysecret123") && !config.contains("tok-777"),
        "{config}"
    );
    assert!(
        config.contains("[redacted]") && config.contains("REGION = \"eu\""),
        "{config}"
    );
    let mcp = text("kimi-rs-home/mcp.json");
    assert!(
        !mcp.contains("ghp_secret99") && mcp.contains("gh-mcp"),
        "{mcp}"
    );
    // Without the flag, only the session directory.
    let plain = fx.home.path().join("plain.zip");
    let run = fx.run(&["export", &id, "-o", plain.to_str().unwrap()]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        read_zip(&plain)
            .iter()
            .all(|(n, _)| !n.starts_with("kimi-rs-home/"))
    );
}
