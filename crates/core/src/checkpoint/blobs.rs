//! The content-addressed store of file pre-images: `<session>/checkpoints/blobs/<ab>/<sha256>`.
//! A file's content is stored once however many checkpoints name it; writes go through a
//! temporary file and a rename, so a crash never leaves a blob whose content does not match its
//! name.

use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Where a session's checkpoint content lives.
#[derive(Debug, Clone)]
pub struct BlobStore {
    dir: PathBuf,
}

/// The sha256 of `bytes`, as lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

impl BlobStore {
    /// The store of the session in `session_dir` (created on first write).
    pub fn for_session(session_dir: &Path) -> Self {
        Self {
            dir: session_dir.join("checkpoints").join("blobs"),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path_of(&self, sha256: &str) -> Option<PathBuf> {
        // A name from a journal is checked before it becomes a path: hex only.
        if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        Some(self.dir.join(&sha256[..2]).join(sha256))
    }

    pub fn contains(&self, sha256: &str) -> bool {
        self.path_of(sha256).is_some_and(|p| p.is_file())
    }

    /// Store `bytes`; returns their sha256 and how many bytes were newly written (0 when the
    /// store already had them).
    pub fn put(&self, bytes: &[u8]) -> std::io::Result<(String, u64)> {
        let sha = sha256_hex(bytes);
        let Some(path) = self.path_of(&sha) else {
            return Err(std::io::Error::other("sha256 hex has an unexpected form"));
        };
        if path.is_file() {
            return Ok((sha, 0));
        }
        let parent = path
            .parent()
            .ok_or_else(|| std::io::Error::other("blob path has no parent"))?;
        std::fs::create_dir_all(parent)?;
        let mut tmp = tempfile::NamedTempFile::new_in(parent)?;
        tmp.write_all(bytes)?;
        tmp.persist(&path).map_err(|e| e.error)?;
        Ok((sha, bytes.len() as u64))
    }

    /// The content stored under `sha256`; `None` when it is not there (pruned or never kept).
    pub fn get(&self, sha256: &str) -> std::io::Result<Option<Vec<u8>>> {
        let Some(path) = self.path_of(sha256) else {
            return Ok(None);
        };
        match std::fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Every stored hash with its file's size and modification time (for pruning).
    pub fn list(&self) -> Vec<(String, PathBuf)> {
        let mut out = Vec::new();
        let Ok(shards) = std::fs::read_dir(&self.dir) else {
            return out;
        };
        for shard in shards.flatten() {
            let Ok(files) = std::fs::read_dir(shard.path()) else {
                continue;
            };
            for file in files.flatten() {
                if let Some(name) = file.file_name().to_str()
                    && self.path_of(name).is_some()
                {
                    out.push((name.to_owned(), file.path()));
                }
            }
        }
        out
    }

    /// Bytes the store takes on disk (file sizes).
    pub fn disk_bytes(&self) -> u64 {
        self.list()
            .iter()
            .filter_map(|(_, p)| std::fs::metadata(p).ok())
            .map(|m| m.len())
            .sum()
    }
}
