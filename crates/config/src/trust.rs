//! Workspace trust: which folders may run their own project-level commands (project MCP
//! servers from `.mcp.json` / `.kimi-code/mcp.json`, project environments, project plugins).
//! User-level configuration never depends on it.
//!
//! Decisions are kept in `$KIMI_RS_HOME/workspace-trust.json`, one per canonical folder path.
//! A folder's standing is the decision recorded for the nearest of itself and its ancestors,
//! so trusting a repository covers its subfolders and a "don't trust" answer recorded for a
//! subfolder wins inside it. No record at all means untrusted, and the interactive front end
//! asks.
//!
//! Loaders of project items call [`is_trusted`] (or take the launch's answer as a
//! `trusted: bool`); `kimi-rs trust [DIR]` calls [`set`].

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// The file under `$KIMI_RS_HOME` holding the decisions.
pub const TRUST_FILE: &str = "workspace-trust.json";

/// What is recorded for a folder (or inherited from an ancestor).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Trusted,
    /// Explicitly not trusted (a "don't trust" answer or `kimi-rs trust --untrust`): nothing
    /// asks again, project items stay off.
    Untrusted,
    /// Never decided: untrusted, and the interactive front end asks.
    Unknown,
}

/// One recorded decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub folder: PathBuf,
    pub trusted: bool,
    /// When it was decided, in milliseconds since the Unix epoch.
    pub decided_at_ms: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("cannot resolve folder {}: {source}. Check that it exists.", path.display())]
    Folder {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read the workspace trust file {}: {source}. Check its permissions.", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "the workspace trust file {} is not valid ({message}); fix it or delete it (every folder is then untrusted until trusted again)",
        path.display()
    )]
    Invalid { path: PathBuf, message: String },
    #[error("cannot write the workspace trust file {}: {source}. Check that the kimi-rs home is writable.", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

fn trust_file(home: &Path) -> PathBuf {
    home.join(TRUST_FILE)
}

fn canonical(dir: &Path) -> Result<PathBuf, TrustError> {
    std::fs::canonicalize(dir).map_err(|source| TrustError::Folder {
        path: dir.to_path_buf(),
        source,
    })
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Every recorded decision, by folder.
fn read_all(home: &Path) -> Result<BTreeMap<PathBuf, Record>, TrustError> {
    let path = trust_file(home);
    let text = match crate::read_regular_file(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(source) => return Err(TrustError::Read { path, source }),
    };
    let invalid = |message: String| TrustError::Invalid {
        path: path.clone(),
        message,
    };
    let data: Value = serde_json::from_str(&text).map_err(|e| invalid(e.to_string()))?;
    let folders = match data.get("folders") {
        None | Some(Value::Null) => return Ok(BTreeMap::new()),
        Some(Value::Object(folders)) => folders,
        Some(_) => return Err(invalid("\"folders\" must be an object".to_owned())),
    };
    let mut out = BTreeMap::new();
    for (folder, entry) in folders {
        let trusted = entry
            .get("trusted")
            .and_then(Value::as_bool)
            .ok_or_else(|| {
                invalid(format!(
                    "folder {folder}: \"trusted\" must be true or false"
                ))
            })?;
        let decided_at_ms = entry.get("decidedAt").and_then(Value::as_u64).unwrap_or(0);
        let folder = PathBuf::from(folder);
        out.insert(
            folder.clone(),
            Record {
                folder,
                trusted,
                decided_at_ms,
            },
        );
    }
    Ok(out)
}

fn write_all(home: &Path, records: &BTreeMap<PathBuf, Record>) -> Result<(), TrustError> {
    let path = trust_file(home);
    let folders: serde_json::Map<String, Value> = records
        .values()
        .map(|r| {
            (
                r.folder.display().to_string(),
                json!({"trusted": r.trusted, "decidedAt": r.decided_at_ms}),
            )
        })
        .collect();
    let mut bytes =
        serde_json::to_vec_pretty(&json!({"version": 1, "folders": folders})).map_err(|e| {
            TrustError::Write {
                path: path.clone(),
                source: std::io::Error::other(e),
            }
        })?;
    bytes.push(b'\n');
    let write = || -> std::io::Result<()> {
        std::fs::create_dir_all(home)?;
        // Written aside and renamed, so a crash never leaves half a file (which would
        // untrust every folder).
        let tmp = home.join(format!(".{TRUST_FILE}.tmp-{}", std::process::id()));
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(&bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, &path)
    };
    write().map_err(|source| TrustError::Write {
        path: path.clone(),
        source,
    })
}

/// The decision that applies to `dir`: the nearest recorded one among `dir` and its
/// ancestors.
pub fn decision(home: &Path, dir: &Path) -> Result<Decision, TrustError> {
    let dir = canonical(dir)?;
    let records = read_all(home)?;
    Ok(dir
        .ancestors()
        .find_map(|folder| records.get(folder))
        .map_or(Decision::Unknown, |r| {
            if r.trusted {
                Decision::Trusted
            } else {
                Decision::Untrusted
            }
        }))
}

/// Whether project-level commands of `dir` may run. An unreadable trust file means "no" (the
/// error says why, for the caller to show).
pub fn is_trusted(home: &Path, dir: &Path) -> Result<bool, TrustError> {
    Ok(decision(home, dir)? == Decision::Trusted)
}

/// Record `trusted` for `dir` (canonicalized, which is returned).
pub fn set(home: &Path, dir: &Path, trusted: bool) -> Result<PathBuf, TrustError> {
    let folder = canonical(dir)?;
    let mut records = read_all(home)?;
    records.insert(
        folder.clone(),
        Record {
            folder: folder.clone(),
            trusted,
            decided_at_ms: now_ms(),
        },
    );
    write_all(home, &records)?;
    Ok(folder)
}

/// Every recorded decision, sorted by folder.
pub fn list(home: &Path) -> Result<Vec<Record>, TrustError> {
    Ok(read_all(home)?.into_values().collect())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn decisions_are_remembered_per_folder_and_inherited_by_subfolders() {
        let home = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let repo = work.path().join("repo");
        let sub = repo.join("sub");
        std::fs::create_dir_all(&sub).unwrap();

        assert_eq!(decision(home.path(), &repo).unwrap(), Decision::Unknown);
        assert!(!is_trusted(home.path(), &sub).unwrap());

        let stored = set(home.path(), &repo, true).unwrap();
        assert_eq!(stored, std::fs::canonicalize(&repo).unwrap());
        assert!(is_trusted(home.path(), &repo).unwrap());
        assert!(
            is_trusted(home.path(), &sub).unwrap(),
            "a subfolder inherits"
        );
        // A path spelt through `..` is the same folder.
        assert!(is_trusted(home.path(), &sub.join("..")).unwrap());
        assert_eq!(
            decision(home.path(), work.path()).unwrap(),
            Decision::Unknown
        );

        // The nearest decision wins.
        set(home.path(), &sub, false).unwrap();
        assert_eq!(decision(home.path(), &sub).unwrap(), Decision::Untrusted);
        assert!(is_trusted(home.path(), &repo).unwrap());

        let listed: Vec<(PathBuf, bool)> = list(home.path())
            .unwrap()
            .into_iter()
            .map(|r| (r.folder, r.trusted))
            .collect();
        assert_eq!(
            listed,
            vec![
                (std::fs::canonicalize(&repo).unwrap(), true),
                (std::fs::canonicalize(&sub).unwrap(), false)
            ]
        );
    }

    #[test]
    fn a_broken_trust_file_is_an_error_naming_it_and_a_missing_folder_too() {
        let home = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join(TRUST_FILE), "{not json").unwrap();
        let err = is_trusted(home.path(), work.path()).unwrap_err();
        assert!(err.to_string().contains(TRUST_FILE), "{err}");
        assert!(err.to_string().contains("delete it"), "{err}");
        let err = decision(home.path(), &work.path().join("nope")).unwrap_err();
        assert!(matches!(err, TrustError::Folder { .. }), "{err}");
    }
}
