//! Shared rules for tests of the OS sandbox: when a test may skip, and where an "outside"
//! directory lives so that it is outside every root the sandbox makes writable, wherever the
//! checkout is (CI may clone under /tmp, which the sandbox leaves writable).

use std::path::{Path, PathBuf};

/// The variable that allows sandbox tests to skip on a machine without sandbox support.
pub const SKIP_ENV: &str = "KIMI_RS_SKIP_SANDBOX_TESTS";

/// Decides whether a sandbox test runs: `Ok(())` when the sandbox is available; when it is not
/// (`unavailable` holds the reason), the test is skipped with a printed `skipped: …` line if
/// `KIMI_RS_SKIP_SANDBOX_TESTS=1`, and fails otherwise, so a missing sandbox is never a pass
/// by accident. Returns `true` when the caller should return early (skipped).
pub fn skip_unless_supported(unavailable: Option<&str>) -> bool {
    match decide(unavailable, std::env::var(SKIP_ENV).ok().as_deref()) {
        Decision::Run => false,
        Decision::Skip(line) => {
            eprintln!("{line}");
            true
        }
        Decision::Fail(message) => panic!("{message}"),
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Decision {
    Run,
    /// The `skipped: …` line to print.
    Skip(String),
    Fail(String),
}

fn decide(unavailable: Option<&str>, skip_env: Option<&str>) -> Decision {
    let Some(reason) = unavailable else {
        return Decision::Run;
    };
    let reason = reason.trim();
    if skip_env == Some("1") {
        return Decision::Skip(format!(
            "skipped: the OS sandbox is not available here ({reason}); {SKIP_ENV}=1"
        ));
    }
    Decision::Fail(format!(
        "the OS sandbox is not available here: {reason}\n\
         set {SKIP_ENV}=1 to skip the sandbox tests on a machine that cannot run them"
    ))
}

/// A fresh directory outside the temp dir, the current directory and the checkout: the
/// sandbox's writable roots are the workspace and the temp dir, so a write here must fail. It
/// lives under `$XDG_CACHE_HOME` or `$HOME/.cache` and is removed on drop.
pub fn outside_dir() -> tempfile::TempDir {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| panic!("neither XDG_CACHE_HOME nor HOME is set; sandbox tests need a directory outside the temp dir"));
    let base = base.join("kimi-rs-tests");
    std::fs::create_dir_all(&base)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", base.display()));
    let base = canonical(&base);
    for root in writable_by_default() {
        assert!(
            !base.starts_with(&root),
            "{} is inside {}, which the sandbox makes writable; point HOME or XDG_CACHE_HOME \
             elsewhere to run the sandbox tests",
            base.display(),
            root.display()
        );
    }
    tempfile::Builder::new()
        .prefix("outside-")
        .tempdir_in(&base)
        .unwrap_or_else(|e| panic!("cannot create a directory in {}: {e}", base.display()))
}

/// Roots a sandboxed test command may write: the temp dir, the current directory and the
/// checkout (the tests' workspaces are temp dirs, but the checkout is where `cargo test` runs).
fn writable_by_default() -> Vec<PathBuf> {
    let mut roots = vec![canonical(&std::env::temp_dir())];
    if let Ok(cwd) = std::env::current_dir() {
        roots.push(canonical(&cwd));
    }
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    roots.push(canonical(&checkout));
    roots
}

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_sandbox_fails_unless_skipping_is_asked_for() {
        assert!(!skip_unless_supported(None));
        assert_eq!(decide(None, Some("1")), Decision::Run);
        assert_eq!(
            decide(Some("no Landlock\n"), Some("1")),
            Decision::Skip(
                "skipped: the OS sandbox is not available here (no Landlock); \
                 KIMI_RS_SKIP_SANDBOX_TESTS=1"
                    .to_owned()
            )
        );
        for env in [None, Some("0"), Some("yes")] {
            let Decision::Fail(message) = decide(Some("no Landlock"), env) else {
                panic!("{env:?} must not skip");
            };
            assert!(message.contains("no Landlock"), "{message}");
            assert!(
                message.contains("KIMI_RS_SKIP_SANDBOX_TESTS=1"),
                "{message}"
            );
        }
    }

    #[test]
    fn the_outside_dir_is_outside_the_temp_dir_and_the_checkout() {
        let dir = outside_dir();
        let path = canonical(dir.path());
        for root in writable_by_default() {
            assert!(!path.starts_with(&root), "{path:?} under {root:?}");
        }
        drop(dir);
        assert!(!path.exists(), "removed on drop");
    }
}
