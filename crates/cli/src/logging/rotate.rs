//! A log file rotated by size: when the next line would push `kimi-rs.log` past its limit it
//! becomes `kimi-rs.log.1` (the older ones shift to `.2`, `.3`, …) and a fresh file starts;
//! `files` counts every file kept, the live one included, so the oldest beyond that is removed.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

pub struct RotatingFile {
    path: PathBuf,
    max_bytes: u64,
    files: usize,
    file: BufWriter<File>,
    size: u64,
}

impl RotatingFile {
    /// Opens (appends to) `path`, creating its directory.
    pub fn open(path: &Path, max_bytes: u64, files: usize) -> io::Result<RotatingFile> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = open_append(path)?;
        let size = file.metadata()?.len();
        Ok(RotatingFile {
            path: path.to_path_buf(),
            max_bytes: max_bytes.max(1),
            files: files.max(1),
            file: BufWriter::new(file),
            size,
        })
    }

    /// Writes one line (with its newline). A line longer than the limit still gets a file of
    /// its own rather than being lost.
    pub fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        let len = line.len() as u64;
        if self.size > 0 && self.size.saturating_add(len) > self.max_bytes {
            self.rotate()?;
        }
        self.file.write_all(line)?;
        self.size = self.size.saturating_add(len);
        Ok(())
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }

    fn rotated(&self, n: usize) -> PathBuf {
        let mut name = self.path.as_os_str().to_owned();
        name.push(format!(".{n}"));
        PathBuf::from(name)
    }

    fn rotate(&mut self) -> io::Result<()> {
        self.file.flush()?;
        if self.files > 1 {
            remove_if_present(&self.rotated(self.files - 1))?;
            for n in (1..self.files - 1).rev() {
                let from = self.rotated(n);
                if from.exists() {
                    std::fs::rename(&from, self.rotated(n + 1))?;
                }
            }
            std::fs::rename(&self.path, self.rotated(1))?;
        } else {
            remove_if_present(&self.path)?;
        }
        self.file = BufWriter::new(open_append(&self.path)?);
        self.size = 0;
        Ok(())
    }
}

fn open_append(path: &Path) -> io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

fn remove_if_present(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Err(err) if err.kind() != io::ErrorKind::NotFound => Err(err),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn rotates_at_the_limit_and_keeps_only_n_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("logs/kimi-rs.log");
        // 9-byte lines, 25-byte limit: two lines per file.
        let mut log = RotatingFile::open(&path, 25, 3).unwrap();
        for i in 0..9 {
            log.write_line(format!("line {i:03}\n").as_bytes()).unwrap();
        }
        log.flush().unwrap();
        let logs = dir.path().join("logs");
        assert_eq!(
            names(&logs),
            ["kimi-rs.log", "kimi-rs.log.1", "kimi-rs.log.2"]
        );
        let read = |name: &str| std::fs::read_to_string(logs.join(name)).unwrap();
        assert_eq!(read("kimi-rs.log"), "line 008\n");
        assert_eq!(read("kimi-rs.log.1"), "line 006\nline 007\n");
        assert_eq!(read("kimi-rs.log.2"), "line 004\nline 005\n");
        for name in names(&logs) {
            assert!(std::fs::metadata(logs.join(name)).unwrap().len() <= 25);
        }
    }

    #[test]
    fn reopening_appends_and_counts_the_existing_size() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kimi-rs.log");
        let mut log = RotatingFile::open(&path, 25, 2).unwrap();
        log.write_line(b"first 001\n").unwrap();
        log.flush().unwrap();
        drop(log);
        let mut log = RotatingFile::open(&path, 25, 2).unwrap();
        log.write_line(b"second 02\n").unwrap();
        log.write_line(b"third 003\n").unwrap();
        log.flush().unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "third 003\n",
            "the third line would have passed 25 bytes"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("kimi-rs.log.1")).unwrap(),
            "first 001\nsecond 02\n"
        );
    }

    #[test]
    fn one_file_kept_means_truncate_and_an_oversized_line_is_still_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kimi-rs.log");
        let mut log = RotatingFile::open(&path, 8, 1).unwrap();
        log.write_line(b"0123456789abc\n").unwrap();
        log.write_line(b"short\n").unwrap();
        log.flush().unwrap();
        assert_eq!(names(dir.path()), ["kimi-rs.log"]);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "short\n");
    }
}
