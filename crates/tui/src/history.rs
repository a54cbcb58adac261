//! Per-directory prompt history (Up/Down), one JSON string per line in a file named by a hash
//! of the working directory, so two projects never mix their prompts.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

/// At most this many entries are kept in memory.
const MAX_ENTRIES: usize = 1000;

#[derive(Debug, Default)]
pub struct History {
    path: Option<PathBuf>,
    entries: Vec<String>,
    /// Position while browsing; `None` = editing a fresh draft.
    index: Option<usize>,
    draft: String,
}

/// FNV-1a: stable across Rust versions, unlike `DefaultHasher`.
fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

impl History {
    /// Loads the history of `cwd` from `data_dir/history/`; unreadable lines are skipped.
    pub fn load(data_dir: &Path, cwd: &Path) -> Self {
        let path = data_dir
            .join("history")
            .join(format!("{:016x}.jsonl", fnv(&cwd.display().to_string())));
        let entries: Vec<String> = std::fs::read_to_string(&path)
            .map(|text| {
                text.lines()
                    .filter_map(|l| serde_json::from_str::<String>(l).ok())
                    .collect()
            })
            .unwrap_or_default();
        let skip = entries.len().saturating_sub(MAX_ENTRIES);
        History {
            path: Some(path),
            entries: entries.into_iter().skip(skip).collect(),
            index: None,
            draft: String::new(),
        }
    }

    /// History that is not persisted (tests, or no data dir).
    pub fn in_memory() -> Self {
        History::default()
    }

    /// Records a submitted entry. A failed write only loses history, so it is not fatal.
    pub fn push(&mut self, entry: &str) {
        self.index = None;
        if entry.trim().is_empty() || self.entries.last().is_some_and(|l| l == entry) {
            return;
        }
        self.entries.push(entry.to_owned());
        if let Some(path) = &self.path {
            let _ = append(path, entry);
        }
    }

    /// Up: the previous entry, remembering `current` as the draft on first use.
    pub fn back(&mut self, current: &str) -> Option<&str> {
        let next = match self.index {
            None => {
                self.draft = current.to_owned();
                self.entries.len().checked_sub(1)?
            }
            Some(i) => i.checked_sub(1)?,
        };
        self.index = Some(next);
        self.entries.get(next).map(String::as_str)
    }

    /// Down: the next entry, or the draft after the newest one.
    pub fn forward(&mut self) -> Option<&str> {
        let i = self.index?;
        if i + 1 >= self.entries.len() {
            self.index = None;
            return Some(&self.draft);
        }
        self.index = Some(i + 1);
        self.entries.get(i + 1).map(String::as_str)
    }
}

fn append(path: &Path, entry: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = OpenOptions::new().create(true).append(true).open(path)?;
    let line = serde_json::to_string(entry).map_err(std::io::Error::other)?;
    writeln!(f, "{line}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn browses_back_and_forth_and_persists_per_directory() {
        let dir = tempfile::tempdir().unwrap();
        let mut h = History::load(dir.path(), Path::new("/proj/a"));
        h.push("first");
        h.push("second\nline");
        assert_eq!(h.back("draft"), Some("second\nline"));
        assert_eq!(h.back(""), Some("first"));
        assert_eq!(h.back(""), None);
        assert_eq!(h.forward(), Some("second\nline"));
        assert_eq!(h.forward(), Some("draft"));
        let mut again = History::load(dir.path(), Path::new("/proj/a"));
        assert_eq!(again.back(""), Some("second\nline"));
        let mut other = History::load(dir.path(), Path::new("/proj/b"));
        assert_eq!(other.back(""), None);
    }
}
