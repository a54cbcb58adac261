//! Running a Playwright script (`tests/browser/*.js`) in headless Chromium for the browser
//! suites: where Node, Chromium and playwright-core are looked for, what to install when one
//! is missing, and the run itself.

use std::path::PathBuf;
use std::process::{Command, Output};

/// Where playwright-core is installed (`.ci/run` puts it in ~/.cache/kimi-rs-ci/playwright).
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
        let prefix = modules.parent().map(PathBuf::from).unwrap_or_default();
        return Some(format!(
            "playwright-core is not in {}: npm install --prefix {} playwright-core (or run .ci/run, or set KIMI_RS_PLAYWRIGHT_DIR)",
            modules.display(),
            prefix.display()
        ));
    }
    None
}

/// False when `KIMI_RS_SKIP_BROWSER_TESTS=1` (the test says it skipped); panics naming what
/// to install when the browser stack is missing, so a CI machine without it fails loudly.
pub fn browser_tests_enabled() -> bool {
    if std::env::var("KIMI_RS_SKIP_BROWSER_TESTS").as_deref() == Ok("1") {
        println!("skipped: KIMI_RS_SKIP_BROWSER_TESTS=1");
        return false;
    }
    if let Some(what) = missing() {
        panic!("the browser test needs {what}; or set KIMI_RS_SKIP_BROWSER_TESTS=1 to skip it");
    }
    true
}

/// Run `tests/browser/<script>` with Node and the given arguments: its stdout, or both output
/// streams when it failed (the caller stops its server before asserting).
pub fn run_script(script: &str, args: &[&str]) -> Result<String, String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/browser")
        .join(script);
    let output: Output = Command::new("node")
        .arg(&path)
        .args(args)
        .env("NODE_PATH", playwright_modules())
        .env("KIMI_RS_CHROMIUM", chromium())
        .env("NO_PROXY", "127.0.0.1,localhost")
        .output()
        .unwrap_or_else(|e| panic!("cannot run node {}: {e}", path.display()));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    if output.status.success() {
        Ok(stdout)
    } else {
        Err(format!(
            "the browser script {script} failed\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
        ))
    }
}
