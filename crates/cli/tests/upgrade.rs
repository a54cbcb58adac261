//! `kimi-rs upgrade` on a copy of the real binary against a loopback release server: a newer
//! version is downloaded, its SHA-256 checked and swapped in (the copy then runs the new
//! program); a wrong checksum replaces nothing; the same version is "up to date".
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{BIN, Fixture, Run};
use kimi_llm::ProviderType;
use serde_json::json;
use sha2::{Digest, Sha256};

const NEW_PROGRAM: &str = "#!/bin/sh\necho kimi-rs 99.0.0 from the release server\n";

fn sha256(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn key() -> String {
    format!("{}-{}", std::env::consts::ARCH, std::env::consts::OS)
}

fn copy_of_binary(dir: &std::path::Path) -> std::path::PathBuf {
    let exe = dir.join("kimi-rs");
    std::fs::copy(BIN, &exe).unwrap();
    exe
}

fn upgrade(exe: &std::path::Path, fixture: &Fixture) -> Run {
    Run::from(
        std::process::Command::new(exe)
            .args(["upgrade", "--manifest-url"])
            .arg(format!("{}/manifest.json", fixture.server.base_url()))
            .env("KIMI_RS_HOME", fixture.home.path())
            .env("NO_PROXY", "127.0.0.1")
            .output()
            .unwrap(),
    )
}

#[test]
fn a_newer_release_is_verified_and_swapped_in() {
    let fixture = Fixture::new((ProviderType::OpenAi, "openai"), Vec::new());
    let base = fixture.server.base_url();
    fixture
        .server
        .route("/kimi-rs-new", 200, &json!(NEW_PROGRAM));
    let exe = copy_of_binary(fixture.work.path());

    // A wrong checksum: refused, nothing replaced.
    fixture.server.route(
        "/manifest.json",
        200,
        &json!({"version": "99.0.0", "targets": {key(): {"url": format!("{base}/kimi-rs-new"), "sha256": "00"}}}),
    );
    let refused = upgrade(&exe, &fixture);
    assert_eq!(refused.code, Some(1), "{refused:?}");
    assert!(
        refused.stderr.contains("nothing was replaced"),
        "{refused:?}"
    );
    assert_eq!(std::fs::read(&exe).unwrap(), std::fs::read(BIN).unwrap());

    fixture.server.route(
        "/manifest.json",
        200,
        &json!({"version": "99.0.0", "targets": {key(): {"url": format!("{base}/kimi-rs-new"), "sha256": sha256(NEW_PROGRAM)}}}),
    );
    let done = upgrade(&exe, &fixture);
    assert_eq!(done.code, Some(0), "{done:?}");
    assert!(done.stdout.contains("→ 99.0.0"), "{done:?}");
    let out = std::process::Command::new(&exe).output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "kimi-rs 99.0.0 from the release server\n"
    );
}

#[test]
fn the_same_version_is_up_to_date() {
    let fixture = Fixture::new((ProviderType::OpenAi, "openai"), Vec::new());
    fixture.server.route(
        "/manifest.json",
        200,
        &json!({"version": env!("CARGO_PKG_VERSION"), "targets": {}}),
    );
    let exe = copy_of_binary(fixture.work.path());
    let run = upgrade(&exe, &fixture);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stdout.contains("is up to date"), "{run:?}");
    assert_eq!(std::fs::read(&exe).unwrap(), std::fs::read(BIN).unwrap());
}
