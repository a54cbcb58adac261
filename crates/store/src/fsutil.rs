//! Durable file primitives: atomic replace (temp + fsync + rename + directory fsync) and
//! directory fsync. Every document the store rewrites goes through `atomic_write`.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Result, StoreError};

/// Milliseconds since the Unix epoch (0 if the clock is before 1970).
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Fsync a directory so that a rename or a newly created file in it survives a crash.
pub fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(StoreError::io("fsync directory", dir))
}

fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Replace `path` with `bytes` so that a crash leaves either the old or the new content.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = parent_of(path);
    fs::create_dir_all(&dir).map_err(StoreError::io("create directory", &dir))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Unique per process and call so concurrent writers never share a temp file.
    let tmp = dir.join(format!(
        ".{name}.tmp-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    let write = || -> std::io::Result<()> {
        let mut file = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()
    };
    if let Err(source) = write() {
        let _ = fs::remove_file(&tmp);
        return Err(StoreError::Io {
            action: "write temporary file",
            path: tmp,
            source,
        });
    }
    if let Err(source) = fs::rename(&tmp, path) {
        let _ = fs::remove_file(&tmp);
        return Err(StoreError::Io {
            action: "rename into place",
            path: path.to_path_buf(),
            source,
        });
    }
    sync_dir(&dir)
}

/// Write a side file (torn bytes, backups) that must not replace anything: a new name is picked
/// if `path` exists. Returns the path written.
pub fn write_side_file(path: &Path, bytes: &[u8]) -> Result<PathBuf> {
    let mut candidate = path.to_path_buf();
    let mut n = 1;
    while candidate.exists() {
        candidate = PathBuf::from(format!("{}.{n}", path.display()));
        n += 1;
    }
    atomic_write(&candidate, bytes)?;
    Ok(candidate)
}
