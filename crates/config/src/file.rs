//! Reading a configuration file without ever blocking: a FIFO at `config.toml` (or `tui.toml`,
//! `mcp.json`) would block `open` until a writer appears — start-up would hang before the user
//! sees anything — and a device could stream forever. Only regular files are read.

use std::fs::{Metadata, OpenOptions};
use std::io::{Error, ErrorKind, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// What a non-regular file is, in words (`None` for a regular file).
fn special(meta: &Metadata) -> Option<&'static str> {
    let kind = meta.file_type();
    if kind.is_file() {
        None
    } else if kind.is_dir() {
        Some("a directory")
    } else if kind.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if kind.is_socket() {
        Some("a socket")
    } else if kind.is_char_device() || kind.is_block_device() {
        Some("a device")
    } else {
        Some("not a regular file")
    }
}

fn refuse(what: &str) -> Error {
    Error::new(
        ErrorKind::InvalidInput,
        format!("it is {what}, not a regular file; replace it with a regular file or remove it"),
    )
}

/// The text of the regular file at `path`. `NotFound` passes through (a missing file is the
/// caller's default); a FIFO, socket, device or directory is an `InvalidInput` error saying
/// what it is. Opened with `O_NONBLOCK` and checked again on the descriptor, so a FIFO swapped
/// in after the first check cannot block either.
pub fn read_regular_file(path: &Path) -> std::io::Result<String> {
    if let Some(what) = special(&std::fs::metadata(path)?) {
        return Err(refuse(what));
    }
    let mut file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    if let Some(what) = special(&file.metadata()?) {
        return Err(refuse(what));
    }
    let mut text = String::new();
    file.read_to_string(&mut text)?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_is_refused_without_blocking_and_regular_files_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("config.toml");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let err = read_regular_file(&fifo).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        assert!(err.to_string().contains("a FIFO (named pipe)"), "{err}");

        let plain = dir.path().join("plain.toml");
        std::fs::write(&plain, "a = 1\n").unwrap();
        assert_eq!(read_regular_file(&plain).unwrap(), "a = 1\n");
        let missing = read_regular_file(&dir.path().join("none")).unwrap_err();
        assert_eq!(missing.kind(), ErrorKind::NotFound);
        let dir_err = read_regular_file(dir.path()).unwrap_err();
        assert!(dir_err.to_string().contains("a directory"), "{dir_err}");
    }
}
