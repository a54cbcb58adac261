//! Opening only regular files. A FIFO blocks `open` until a writer appears (forever, and two
//! Ctrl-Cs do not end a blocking syscall in a worker thread), a device can stream endlessly,
//! and a socket cannot be read at all: the file tools refuse all of them with a clear error.
//! The file is opened with `O_NONBLOCK` (so even a FIFO swapped in after the check cannot
//! block the open) and its type is checked again on the open descriptor, which is race-free.

use std::fs::{File, Metadata, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Why a path could not be opened as a regular file.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NotRegular {
    #[error("`{0}` does not exist.")]
    Missing(String),
    #[error("`{0}` is a directory, not a file.")]
    Directory(String),
    #[error(
        "`{path}` is {kind}, not a regular file; file tools only open regular files (reading it could block forever or never end). Use Bash if you really mean to read it."
    )]
    Special { path: String, kind: &'static str },
    #[error("Cannot read `{path}`: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

/// What kind of non-regular file `meta` describes (`None` for a regular file or directory).
pub(crate) fn special_kind(meta: &Metadata) -> Option<&'static str> {
    let kind = meta.file_type();
    if kind.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if kind.is_socket() {
        Some("a socket")
    } else if kind.is_char_device() {
        Some("a character device")
    } else if kind.is_block_device() {
        Some("a block device")
    } else if kind.is_file() || kind.is_dir() {
        None
    } else {
        Some("not a regular file")
    }
}

fn classify(path: &Path, meta: &Metadata) -> Result<(), NotRegular> {
    let shown = path.display().to_string();
    if meta.is_dir() {
        return Err(NotRegular::Directory(shown));
    }
    match special_kind(meta) {
        Some(kind) => Err(NotRegular::Special { path: shown, kind }),
        None => Ok(()),
    }
}

/// Checks what `path` is (following symlinks) without opening it: `Ok` for a regular file or
/// a path that does not exist yet (a file about to be written).
pub(crate) fn check_writable_target(path: &Path) -> Result<(), NotRegular> {
    match std::fs::metadata(path) {
        Ok(meta) => classify(path, &meta),
        Err(_) => Ok(()),
    }
}

/// Opens `path` for reading, refusing anything but a regular file.
pub(crate) fn open_regular(path: &Path) -> Result<(File, Metadata), NotRegular> {
    let shown = || path.display().to_string();
    let io = |source: std::io::Error| {
        if source.kind() == std::io::ErrorKind::NotFound {
            NotRegular::Missing(shown())
        } else {
            NotRegular::Io {
                path: shown(),
                source,
            }
        }
    };
    // A friendly refusal before touching it (a socket's open fails with a confusing ENXIO).
    classify(path, &std::fs::metadata(path).map_err(io)?)?;
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    classify(path, &meta)?;
    Ok((file, meta))
}

/// The whole content of a regular file.
pub(crate) fn read_regular(path: &Path) -> Result<Vec<u8>, NotRegular> {
    let (mut file, meta) = open_regular(path)?;
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.read_to_end(&mut bytes)
        .map_err(|source| NotRegular::Io {
            path: path.display().to_string(),
            source,
        })?;
    Ok(bytes)
}
