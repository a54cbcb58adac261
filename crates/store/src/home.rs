//! Where sessions live: `$KIMI_RS_HOME` (default `~/.kimi-rs`), with
//! `sessions/<workdir-key>/<session-id>/{state.json, agents/<agent-id>/wire.jsonl}` and
//! `session_index.jsonl` at the root. Paths are passed in explicitly; only `home_from_env` reads
//! the environment.

use std::path::{Path, PathBuf};

use crate::error::{Result, StoreError};

pub const MAIN_AGENT: &str = "main";

/// The home directory from `$KIMI_RS_HOME`, else `$HOME/.kimi-rs`.
pub fn home_from_env() -> Result<PathBuf> {
    if let Some(home) = std::env::var_os("KIMI_RS_HOME").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(home));
    }
    std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .map(|home| PathBuf::from(home).join(".kimi-rs"))
        .ok_or(StoreError::NoHome)
}

/// FNV-1a, 64 bit: stable across builds and platforms (std's hasher is not).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A stable, filesystem-safe key for a working directory: its readable basename (ASCII
/// alphanumerics, `-`, `_`, `.`, at most 40 chars) plus 16 hex digits of a hash of the canonical
/// path, so equal basenames in different places never collide.
pub fn workdir_key(cwd: &Path) -> String {
    let canonical = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    let base: String = canonical
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    let base = base.trim_start_matches('.');
    let base = if base.is_empty() { "root" } else { base };
    let hash = fnv1a(canonical.as_os_str().as_encoded_bytes());
    format!("{base}-{hash:016x}")
}

/// A session id: a random UUID v4.
pub fn new_session_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// The home directory and the paths under it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Home {
    root: PathBuf,
}

impl Home {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Home { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn sessions_dir(&self) -> PathBuf {
        self.root.join("sessions")
    }

    pub fn index_path(&self) -> PathBuf {
        self.root.join("session_index.jsonl")
    }

    pub fn session_dir(&self, workdir_key: &str, session_id: &str) -> PathBuf {
        self.sessions_dir().join(workdir_key).join(session_id)
    }
}

/// Paths inside one session directory.
pub fn state_path(session_dir: &Path) -> PathBuf {
    session_dir.join("state.json")
}

pub fn agent_dir(session_dir: &Path, agent_id: &str) -> PathBuf {
    session_dir.join("agents").join(agent_id)
}

pub fn journal_path(session_dir: &Path, agent_id: &str) -> PathBuf {
    agent_dir(session_dir, agent_id).join("wire.jsonl")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workdir_key_is_stable_readable_and_distinct() {
        let a = workdir_key(Path::new("/nonexistent/x/my project"));
        assert_eq!(a, workdir_key(Path::new("/nonexistent/x/my project")));
        assert!(a.starts_with("my_project-"), "{a}");
        assert_ne!(a, workdir_key(Path::new("/nonexistent/y/my project")));
        assert!(workdir_key(Path::new("/")).starts_with("root-"));
        assert!(
            a.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        );
    }
}
