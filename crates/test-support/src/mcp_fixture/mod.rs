//! The MCP fixture server used by kimi-mcp's and kimi-cli's tests: its hand-written protocol
//! ([`proto`], also served in-process over streamable HTTP by the tests) and the path of its
//! stdio binary, `kimi-mcp-fixture`, which lives in this crate so it never ships with kimi-mcp.

pub mod oauth;
pub mod proto;

use std::path::PathBuf;
use std::sync::OnceLock;

/// The `kimi-mcp-fixture` binary next to the running test's profile directory, built with the
/// same cargo, target directory and profile when it is missing or older than its sources (a
/// test of another package cannot name this crate's binary through `CARGO_BIN_EXE_*`, and
/// `cargo test -p kimi-mcp` does not build it).
pub fn binary() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(build).clone()
}

/// The newest modification time of the fixture's sources.
fn sources_modified() -> Option<std::time::SystemTime> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    [
        "mcp_fixture/mod.rs",
        "mcp_fixture/proto.rs",
        "bin/kimi-mcp-fixture.rs",
    ]
    .iter()
    .filter_map(|f| {
        std::fs::metadata(root.join(f))
            .and_then(|m| m.modified())
            .ok()
    })
    .max()
}

fn build() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("no test executable path: {e}"));
    // `<target>/<profile>/deps/<test>`: the fixture goes to `<target>/<profile>/`.
    let profile_dir = exe
        .parent()
        .and_then(std::path::Path::parent)
        .unwrap_or_else(|| panic!("unexpected test binary location {}", exe.display()))
        .to_path_buf();
    let target_dir = profile_dir
        .parent()
        .unwrap_or_else(|| panic!("unexpected test binary location {}", exe.display()));
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => "dev".to_owned(),
        Some(other) => other.to_owned(),
        None => panic!("unexpected profile directory {}", profile_dir.display()),
    };
    let path = profile_dir.join(format!("kimi-mcp-fixture{}", std::env::consts::EXE_SUFFIX));
    let built = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
    if built.is_some_and(|b| sources_modified().is_some_and(|s| s <= b)) {
        return path;
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = std::process::Command::new(cargo)
        .args([
            "build",
            "-q",
            "-p",
            "kimi-test-support",
            "--bin",
            "kimi-mcp-fixture",
        ])
        .arg("--profile")
        .arg(&profile)
        .arg("--target-dir")
        .arg(target_dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .unwrap_or_else(|e| panic!("cannot run cargo to build kimi-mcp-fixture: {e}"));
    assert!(status.success(), "building kimi-mcp-fixture failed");
    assert!(path.exists(), "{} was not built", path.display());
    path
}
