//! `kimi-rs export [SESSION_ID] [-o PATH] [-y]`: packs one session directory (state.json,
//! every agent's wire.jsonl, tasks, plans, tool results, logs/, …) into a ZIP for bug reports and
//! archiving (surface.md §1.3 `kimi export`).
//!
//! Only regular files inside the session directory go in: symbolic links are never followed,
//! so nothing outside it can leak into the archive. A small `kimi-export.json` manifest (the
//! session id, its working directory, the kimi-rs version, the file list) is added at the root.

use std::fs::File;
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, anyhow, bail};
use kimi_core::session::latest_session;
use kimi_store::{Home, SessionStore};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

/// Name of the manifest added at the root of the archive.
pub const MANIFEST: &str = "kimi-export.json";

/// An entry made in memory (name in the archive, bytes): what a debug ZIP adds.
pub type Extra = (String, Vec<u8>);

/// What `kimi-rs export` was asked to do.
#[derive(Debug, Clone, Default)]
pub struct ExportRequest {
    pub session_id: Option<String>,
    pub output: Option<PathBuf>,
    pub yes: bool,
    /// Add the home's logs and its settings with secrets redacted (`--debug-zip`).
    pub debug: bool,
}

/// What was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exported {
    pub path: PathBuf,
    pub bytes: u64,
    pub files: usize,
}

/// The command: 0 exported (or cancelled at the prompt), 1 with a message on stderr otherwise.
pub fn run(request: &ExportRequest) -> anyhow::Result<u8> {
    let home = kimi_store::home_from_env()?;
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let store = SessionStore::new(Home::new(&home));
    let requested = request
        .session_id
        .as_deref()
        .map(str::trim)
        .filter(|id| !id.is_empty());
    let (key, id) = match requested {
        Some(id) => find(&store, id)?.ok_or_else(|| {
            anyhow!(
                "no session `{id}` in {}; list the sessions with `kimi-rs --session` (the picker) or see {}, then pass one of those ids",
                home.display(),
                home.join("session_index.jsonl").display()
            )
        })?,
        None => {
            let Some((key, id)) = latest_session(&store, &cwd) else {
                bail!(
                    "no session with a prompt in {}; pass a session id (`kimi-rs export <SESSION_ID>`) or run it from the session's directory",
                    cwd.display()
                );
            };
            if !request.yes && !confirm(&store, &id)? {
                println!("Export cancelled.");
                return Ok(0);
            }
            (key, id)
        }
    };
    let dir = store.home().session_dir(&key, &id);
    let output = output_path(request.output.as_deref(), &cwd, &id);
    let extras = if request.debug {
        crate::export_debug::extras(&home)
    } else {
        Vec::new()
    };
    let exported = export_dir(&dir, &id, &output, &extras)?;
    println!(
        "Exported session {id} to {} ({}, {} files)",
        exported.path.display(),
        human_size(exported.bytes),
        exported.files
    );
    Ok(0)
}

/// (workdir key, id) of the session `id`, looked up in the index (never built from the id, so
/// an id cannot name a path).
fn find(store: &SessionStore, id: &str) -> anyhow::Result<Option<(String, String)>> {
    let entries = store
        .index()
        .list()
        .map_err(|e| anyhow!("cannot list the sessions: {e}"))?;
    Ok(entries
        .into_iter()
        .find(|e| e.id == id)
        .map(|e| (e.workdir_key, e.id)))
}

/// Asks on the terminal before exporting the newest session (default yes).
fn confirm(store: &SessionStore, id: &str) -> anyhow::Result<bool> {
    if !std::io::stdin().is_terminal() {
        bail!(
            "no session id given and stdin is not a terminal, so the newest session ({id}) cannot be confirmed; pass -y to export it, or pass a session id"
        );
    }
    let title = store
        .index()
        .list()
        .ok()
        .and_then(|entries| entries.into_iter().find(|e| e.id == id))
        .and_then(|e| e.title)
        .map_or_else(|| id.to_owned(), |t| format!("\"{t}\" ({id})"));
    let mut stderr = std::io::stderr().lock();
    write!(
        stderr,
        "Export the latest session of this directory, {title}? [Y/n] "
    )
    .and_then(|()| stderr.flush())
    .context("cannot write the confirmation prompt")?;
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .context("cannot read the answer")?;
    let answer = answer.trim().to_lowercase();
    Ok(answer.is_empty() || answer == "y" || answer == "yes")
}

/// `-o` as given (a directory gets the default name inside it), else the default name in `cwd`.
pub fn output_path(output: Option<&Path>, cwd: &Path, id: &str) -> PathBuf {
    let short: String = id
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(8)
        .collect();
    let stamp = chrono::Local::now().format("%Y%m%d-%H%M%S");
    let name = format!("kimi-export-{short}-{stamp}.zip");
    match output {
        Some(path) => {
            let path = cwd.join(path);
            if path.is_dir() { path.join(name) } else { path }
        }
        None => cwd.join(name),
    }
}

/// Every regular file under `dir`, as (path on disk, name in the archive), sorted. Symbolic
/// links are skipped, never followed.
fn collect(dir: &Path) -> anyhow::Result<Vec<(PathBuf, String)>> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(PathBuf, String)>) -> anyhow::Result<()> {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .with_context(|| format!("cannot list {}", dir.display()))?
            .filter_map(Result::ok)
            .collect();
        entries.sort_by_key(std::fs::DirEntry::file_name);
        for entry in entries {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                walk(root, &path, out)?;
            } else if kind.is_file()
                && let Ok(relative) = path.strip_prefix(root)
            {
                let name = relative
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy())
                    .collect::<Vec<_>>()
                    .join("/");
                out.push((path, name));
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out)?;
    Ok(out)
}

/// Writes the ZIP of `dir` to `output` (through a temporary file renamed into place, so a
/// failed export leaves nothing half-written).
pub fn export_dir(
    dir: &Path,
    id: &str,
    output: &Path,
    extras: &[Extra],
) -> anyhow::Result<Exported> {
    let meta = std::fs::symlink_metadata(dir)
        .with_context(|| format!("the session directory {} is missing", dir.display()))?;
    if !meta.is_dir() {
        bail!(
            "{} is not a directory; the session store looks damaged",
            dir.display()
        );
    }
    let canonical_dir =
        std::fs::canonicalize(dir).with_context(|| format!("cannot resolve {}", dir.display()))?;
    if let Some(parent) = output.parent().and_then(|p| std::fs::canonicalize(p).ok())
        && parent.starts_with(&canonical_dir)
    {
        bail!(
            "{} is inside the session directory; choose an output path outside {} with -o",
            output.display(),
            dir.display()
        );
    }
    let files = collect(dir)?;
    let partial = output.with_extension("zip.partial");
    let result = write_zip(&partial, &files, extras, id, dir);
    match result.and_then(|()| {
        std::fs::rename(&partial, output)
            .with_context(|| format!("cannot move the archive to {}", output.display()))
    }) {
        Ok(()) => {}
        Err(err) => {
            let _ = std::fs::remove_file(&partial);
            return Err(err);
        }
    }
    let bytes = std::fs::metadata(output).map(|m| m.len()).unwrap_or(0);
    Ok(Exported {
        path: output.to_path_buf(),
        bytes,
        files: files.len() + extras.len(),
    })
}

fn create_private(path: &Path) -> std::io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // The journal can hold secrets the model saw; the archive is readable by its owner only.
        options.mode(0o600);
    }
    options.open(path)
}

fn write_zip(
    path: &Path,
    files: &[(PathBuf, String)],
    extras: &[Extra],
    id: &str,
    dir: &Path,
) -> anyhow::Result<()> {
    let file = create_private(path).with_context(|| {
        format!(
            "cannot create {}; check that the directory exists and is writable, or pick another with -o",
            path.display()
        )
    })?;
    let mut zip = ZipWriter::new(std::io::BufWriter::new(file));
    let options = SimpleFileOptions::default()
        .compression_method(CompressionMethod::Deflated)
        .unix_permissions(0o600);
    let zip_err = |e: zip::result::ZipError| anyhow!("cannot write {}: {e}", path.display());
    let mut names = Vec::with_capacity(files.len());
    for (source, name) in files {
        // A file removed while the export runs (a finished task's scratch file) is left out.
        let Ok(mut input) = File::open(source) else {
            continue;
        };
        let meta = input.metadata().ok();
        let large = meta
            .as_ref()
            .is_some_and(|m| m.len() >= u64::from(u32::MAX));
        let mut entry = options.large_file(large);
        if let Some(time) = meta.and_then(|m| m.modified().ok()).and_then(zip_time) {
            entry = entry.last_modified_time(time);
        }
        zip.start_file(name.as_str(), entry).map_err(zip_err)?;
        std::io::copy(&mut input, &mut zip)
            .with_context(|| format!("cannot read {}", source.display()))?;
        names.push(name.clone());
    }
    for (name, bytes) in extras {
        zip.start_file(name.as_str(), options).map_err(zip_err)?;
        zip.write_all(bytes)
            .with_context(|| format!("cannot write {}", path.display()))?;
        names.push(name.clone());
    }
    let manifest = serde_json::json!({
        "session_id": id,
        "session_dir": dir.display().to_string(),
        "exported_by": format!("kimi-rs {}", env!("CARGO_PKG_VERSION")),
        "exported_at": chrono::Local::now().to_rfc3339(),
        "files": names,
    });
    zip.start_file(MANIFEST, options).map_err(zip_err)?;
    let text = serde_json::to_vec_pretty(&manifest).context("cannot encode the manifest")?;
    zip.write_all(&text)
        .with_context(|| format!("cannot write {}", path.display()))?;
    let mut inner = zip.finish().map_err(zip_err)?;
    inner
        .flush()
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

fn zip_time(time: std::time::SystemTime) -> Option<zip::DateTime> {
    use chrono::{Datelike, Timelike};
    let local: chrono::DateTime<chrono::Local> = time.into();
    zip::DateTime::from_date_and_time(
        u16::try_from(local.year()).ok()?,
        u8::try_from(local.month()).ok()?,
        u8::try_from(local.day()).ok()?,
        u8::try_from(local.hour()).ok()?,
        u8::try_from(local.minute()).ok()?,
        u8::try_from(local.second()).ok()?,
    )
    .ok()
}

/// `1.2 MiB`-style size.
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_naturally() {
        assert_eq!(human_size(12), "12 bytes");
        assert_eq!(human_size(2048), "2.0 KiB");
        assert_eq!(human_size(3 * 1024 * 1024 + 1), "3.0 MiB");
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_out_of_the_session_are_not_followed() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "secret").unwrap();
        let session = tempfile::tempdir().unwrap();
        std::fs::write(session.path().join("state.json"), "{}").unwrap();
        std::os::unix::fs::symlink(outside.path(), session.path().join("link")).unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("secret.txt"),
            session.path().join("file-link"),
        )
        .unwrap();
        let files = collect(session.path()).unwrap();
        let names: Vec<&str> = files.iter().map(|(_, n)| n.as_str()).collect();
        assert_eq!(names, ["state.json"]);
    }

    #[test]
    fn refuses_an_output_inside_the_session_directory() {
        let session = tempfile::tempdir().unwrap();
        std::fs::write(session.path().join("state.json"), "{}").unwrap();
        let err = export_dir(session.path(), "id", &session.path().join("x.zip"), &[]).unwrap_err();
        assert!(
            err.to_string().contains("inside the session directory"),
            "{err}"
        );
    }
}
