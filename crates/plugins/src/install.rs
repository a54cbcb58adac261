//! Installing a plugin: from a local folder, a zip file or zip URL, a GitHub URL, or a
//! marketplace entry (`{version: "2", plugins: [{id, displayName?, source}]}` at
//! `KIMI_CODE_PLUGIN_MARKETPLACE_URL`, an http(s) URL, a `file://` URL or a path). The plugin
//! is checked before anything is copied — a manifest whose paths lead out of the plugin is
//! refused and nothing is installed — then copied to `plugins/managed/<id>/` (replacing an
//! older copy only once the new one is complete) and recorded in `plugins/installed.json`.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::PluginError;
use crate::fetch::{self, MAX_DOWNLOAD_BYTES, parse_github};
use crate::load::{LoadedPlugin, load_plugin};
use crate::manifest::{manifest_path, valid_id};
use crate::state::{InstalledPlugin, PluginState};

/// How deep a copy follows folders (and symlinks inside the plugin).
const MAX_COPY_DEPTH: usize = 32;

/// Installs into one kimi-rs home.
#[derive(Debug, Clone)]
pub struct Installer {
    pub home: PathBuf,
    /// Where marketplace ids are looked up (`KIMI_CODE_PLUGIN_MARKETPLACE_URL` or a flag).
    pub marketplace: Option<String>,
}

/// What an install did.
#[derive(Debug, Clone)]
pub struct InstallReport {
    pub plugin: LoadedPlugin,
    /// An older copy of the same id was replaced.
    pub replaced: bool,
    /// Files left out of the copy (symlinks leading out of the plugin, unsafe zip entries).
    pub skipped: Vec<String>,
}

/// One marketplace entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarketEntry {
    pub id: String,
    pub display_name: Option<String>,
    /// Resolved: relative paths are taken from the marketplace file's folder.
    pub source: String,
}

/// Where a source string points.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Source {
    Dir(PathBuf),
    ZipFile(PathBuf),
    Url(String),
    Marketplace(String),
}

fn classify(source: &str) -> Result<Source, PluginError> {
    if let Some(id) = source.strip_prefix("marketplace:") {
        return Ok(Source::Marketplace(id.to_owned()));
    }
    if source.starts_with("https://") || source.starts_with("http://") {
        return Ok(Source::Url(source.to_owned()));
    }
    let path = PathBuf::from(source.strip_prefix("file://").unwrap_or(source));
    if path.is_dir() {
        return Ok(Source::Dir(path));
    }
    if path.is_file() {
        return Ok(Source::ZipFile(path));
    }
    if valid_id(source) {
        return Ok(Source::Marketplace(source.to_owned()));
    }
    Err(PluginError::Source(format!(
        "`{source}` is not a plugin folder, a zip file, an http(s) URL or a marketplace id; check the path"
    )))
}

/// Unpack `bytes` into `dest`; returns entries left out.
fn unzip(bytes: &[u8], dest: &Path, what: &str) -> Result<Vec<String>, PluginError> {
    let fail = |detail: String| PluginError::Zip {
        what: what.to_owned(),
        detail,
    };
    let mut archive =
        zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(|e| fail(e.to_string()))?;
    let mut skipped = Vec::new();
    let mut total: usize = 0;
    for index in 0..archive.len() {
        let mut entry = archive.by_index(index).map_err(|e| fail(e.to_string()))?;
        let Some(name) = entry.enclosed_name() else {
            let shown = entry.name().map_or_else(
                |_| "<unreadable name>".to_owned(),
                std::borrow::Cow::into_owned,
            );
            skipped.push(format!("{shown} (a path leading out of the archive)"));
            continue;
        };
        if entry.is_symlink() {
            skipped.push(format!("{} (a symlink)", name.display()));
            continue;
        }
        let target = dest.join(&name);
        if entry.is_dir() {
            std::fs::create_dir_all(&target).map_err(PluginError::io(&target))?;
            continue;
        }
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(PluginError::io(parent))?;
        }
        let mut data = Vec::new();
        let limit = (MAX_DOWNLOAD_BYTES - total) as u64 + 1;
        (&mut entry)
            .take(limit)
            .read_to_end(&mut data)
            .map_err(|e| fail(format!("{}: {e}", name.display())))?;
        total += data.len();
        if total > MAX_DOWNLOAD_BYTES {
            return Err(fail(format!(
                "it unpacks to more than {} MiB",
                MAX_DOWNLOAD_BYTES / (1024 * 1024)
            )));
        }
        std::fs::write(&target, &data).map_err(PluginError::io(&target))?;
        #[cfg(unix)]
        if let Some(mode) = entry.unix_mode() {
            use std::os::unix::fs::PermissionsExt;
            // Keep the executable bits (hook scripts, MCP servers); never set-id bits.
            let perms = std::fs::Permissions::from_mode(mode & 0o777);
            std::fs::set_permissions(&target, perms).map_err(PluginError::io(&target))?;
        }
    }
    Ok(skipped)
}

/// The plugin root inside an unpacked archive: its top, or its single top-level folder
/// (GitHub archives wrap everything in `<repo>-<ref>/`).
fn find_root(dir: &Path) -> Result<PathBuf, PluginError> {
    if manifest_path(dir).is_some() {
        return Ok(dir.to_path_buf());
    }
    let entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(PluginError::io(dir))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    if let [only] = entries.as_slice()
        && only.is_dir()
        && manifest_path(only).is_some()
    {
        return Ok(only.clone());
    }
    Err(PluginError::NoManifest(dir.to_path_buf()))
}

/// Copy the plugin at `root` (canonical) to `dest`. Symlinks are copied as what they point
/// to when that is inside the plugin, and left out (listed in `skipped`) otherwise.
fn copy_tree(
    root: &Path,
    from: &Path,
    dest: &Path,
    depth: usize,
    skipped: &mut Vec<String>,
) -> Result<(), PluginError> {
    if depth > MAX_COPY_DEPTH {
        skipped.push(format!("{} (nested too deep)", from.display()));
        return Ok(());
    }
    std::fs::create_dir_all(dest).map_err(PluginError::io(dest))?;
    for entry in std::fs::read_dir(from).map_err(PluginError::io(from))? {
        let entry = entry.map_err(PluginError::io(from))?;
        let path = entry.path();
        let name = entry.file_name();
        if name == ".git" {
            continue;
        }
        let target = dest.join(&name);
        let Ok(real) = std::fs::canonicalize(&path) else {
            skipped.push(format!("{} (a broken symlink)", path.display()));
            continue;
        };
        if !real.starts_with(root) {
            skipped.push(format!(
                "{} (a symlink leading out of the plugin)",
                path.display()
            ));
            continue;
        }
        if real.is_dir() {
            copy_tree(root, &real, &target, depth + 1, skipped)?;
        } else {
            std::fs::copy(&real, &target).map_err(PluginError::io(&real))?;
        }
    }
    Ok(())
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

impl Installer {
    pub fn new(home: &Path, marketplace: Option<String>) -> Installer {
        Installer {
            home: home.to_path_buf(),
            marketplace,
        }
    }

    fn staging(&self) -> Result<tempfile::TempDir, PluginError> {
        let dir = PluginState::dir(&self.home).join(".staging");
        std::fs::create_dir_all(&dir).map_err(PluginError::io(&dir))?;
        tempfile::Builder::new()
            .prefix("install-")
            .tempdir_in(&dir)
            .map_err(PluginError::io(&dir))
    }

    /// Install (or reinstall) the plugin `source` names; see the module docs for the forms.
    pub async fn install(&self, source: &str) -> Result<InstallReport, PluginError> {
        let mut hops = 0;
        let mut current = source.to_owned();
        loop {
            hops += 1;
            if hops > 4 {
                return Err(PluginError::Source(format!(
                    "`{source}` leads through too many marketplace entries"
                )));
            }
            match classify(&current)? {
                Source::Marketplace(id) => current = self.marketplace_source(&id).await?,
                Source::Dir(dir) => return self.install_dir(&dir, source, Vec::new()),
                Source::ZipFile(path) => {
                    let bytes = std::fs::read(&path).map_err(PluginError::io(&path))?;
                    return self.install_zip(&bytes, &path.display().to_string(), source);
                }
                Source::Url(url) => {
                    let archive = match parse_github(&url) {
                        Some(github) => match github.archive_url() {
                            Some(archive) => archive,
                            None => github.resolve_latest().await,
                        },
                        None => url.clone(),
                    };
                    let (_, bytes) = fetch::get(&archive).await?;
                    return self.install_zip(&bytes, &archive, source);
                }
            }
        }
    }

    fn install_zip(
        &self,
        bytes: &[u8],
        what: &str,
        source: &str,
    ) -> Result<InstallReport, PluginError> {
        let staging = self.staging()?;
        let skipped = unzip(bytes, staging.path(), what)?;
        let root = find_root(staging.path())?;
        self.install_dir(&root, source, skipped)
    }

    fn install_dir(
        &self,
        dir: &Path,
        source: &str,
        mut skipped: Vec<String>,
    ) -> Result<InstallReport, PluginError> {
        // Checked where it is first: a bad plugin leaves no trace.
        let checked = load_plugin(dir)?;
        let id = checked.id().to_owned();
        let managed = PluginState::managed_dir(&self.home, &id);
        let parent = managed
            .parent()
            .map_or_else(|| self.home.clone(), Path::to_path_buf);
        std::fs::create_dir_all(&parent).map_err(PluginError::io(&parent))?;
        let fresh = tempfile::Builder::new()
            .prefix(&format!(".{id}-"))
            .tempdir_in(&parent)
            .map_err(PluginError::io(&parent))?;
        copy_tree(
            &checked.manifest.root,
            &checked.manifest.root,
            fresh.path(),
            0,
            &mut skipped,
        )?;
        // The copy must hold up on its own too (a skipped file may have been needed).
        load_plugin(fresh.path())?;
        let replaced = managed.exists();
        if replaced {
            std::fs::remove_dir_all(&managed).map_err(PluginError::io(&managed))?;
        }
        let fresh = fresh.keep();
        std::fs::rename(&fresh, &managed).map_err(PluginError::io(&managed))?;
        let plugin = load_plugin(&managed)?;
        let mut state = PluginState::read(&self.home)?;
        let mcp = state
            .plugins
            .get(&id)
            .map(|p| p.mcp.clone())
            .unwrap_or_default();
        state.plugins.insert(
            id,
            InstalledPlugin {
                source: source.to_owned(),
                enabled: true,
                version: plugin.manifest.version.clone(),
                installed_at: now(),
                mcp,
            },
        );
        state.write(&self.home)?;
        Ok(InstallReport {
            plugin,
            replaced,
            skipped,
        })
    }

    /// The marketplace's entries (`--marketplace` / `KIMI_CODE_PLUGIN_MARKETPLACE_URL`).
    pub async fn marketplace_entries(&self) -> Result<Vec<MarketEntry>, PluginError> {
        let Some(location) = &self.marketplace else {
            return Err(PluginError::Source(
                "no plugin marketplace is configured: set KIMI_CODE_PLUGIN_MARKETPLACE_URL (an http(s) URL, a file:// URL or a path to its JSON) or pass --marketplace".to_owned(),
            ));
        };
        let (text, base) = if location.starts_with("https://") || location.starts_with("http://") {
            let (_, bytes) = fetch::get(location).await?;
            (String::from_utf8_lossy(&bytes).into_owned(), None)
        } else {
            let path = PathBuf::from(location.strip_prefix("file://").unwrap_or(location));
            let text = std::fs::read_to_string(&path).map_err(PluginError::io(&path))?;
            (text, path.parent().map(Path::to_path_buf))
        };
        parse_marketplace(&text, location, base.as_deref())
    }

    async fn marketplace_source(&self, id: &str) -> Result<String, PluginError> {
        let entries = self.marketplace_entries().await?;
        entries
            .into_iter()
            .find(|e| e.id == id)
            .map(|e| e.source)
            .ok_or_else(|| {
                PluginError::Source(format!(
                    "the marketplace {} has no plugin `{id}`; `kimi-rs plugin marketplace` lists it",
                    self.marketplace.as_deref().unwrap_or_default()
                ))
            })
    }
}

/// Parse marketplace JSON; relative sources are resolved against `base` (a local file's folder).
pub fn parse_marketplace(
    text: &str,
    location: &str,
    base: Option<&Path>,
) -> Result<Vec<MarketEntry>, PluginError> {
    let bad = |message: String| {
        PluginError::Source(format!("invalid plugin marketplace {location}: {message}"))
    };
    let value: Value =
        serde_json::from_str(text).map_err(|e| bad(format!("not valid JSON ({e})")))?;
    match value.get("version") {
        Some(Value::String(v)) if v == "2" => {}
        Some(Value::Number(n)) if n.as_u64() == Some(2) => {}
        other => {
            return Err(bad(format!(
                "`version` must be \"2\", found {}",
                other.map_or_else(|| "nothing".to_owned(), Value::to_string)
            )));
        }
    }
    let plugins = value
        .get("plugins")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("`plugins` must be a list".to_owned()))?;
    let mut entries = Vec::new();
    for (index, plugin) in plugins.iter().enumerate() {
        let id = plugin
            .get("id")
            .and_then(Value::as_str)
            .ok_or_else(|| bad(format!("plugins[{index}] has no `id`")))?;
        let source = match plugin.get("source") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Object(o)) => o
                .get("url")
                .or_else(|| o.get("path"))
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| bad(format!("plugins[{index}].source needs `url` or `path`")))?,
            _ => return Err(bad(format!("plugins[{index}] has no `source`"))),
        };
        let remote = source.starts_with("https://")
            || source.starts_with("http://")
            || source.starts_with("file://");
        let source = match base {
            Some(base) if !remote && Path::new(&source).is_relative() => {
                base.join(&source).display().to_string()
            }
            _ => source,
        };
        entries.push(MarketEntry {
            id: id.to_owned(),
            display_name: plugin
                .get("displayName")
                .and_then(Value::as_str)
                .map(str::to_owned),
            source,
        });
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marketplace_entries_resolve_relative_sources() {
        let text = r#"{"version":"2","plugins":[{"id":"a","displayName":"A","source":"./a"},{"id":"b","source":{"url":"https://x/b.zip"}}]}"#;
        let entries = parse_marketplace(text, "m.json", Some(Path::new("/m"))).unwrap();
        assert_eq!(
            entries,
            vec![
                MarketEntry {
                    id: "a".into(),
                    display_name: Some("A".into()),
                    source: "/m/./a".into()
                },
                MarketEntry {
                    id: "b".into(),
                    display_name: None,
                    source: "https://x/b.zip".into()
                },
            ]
        );
        assert!(parse_marketplace(r#"{"version":"1","plugins":[]}"#, "m", None).is_err());
    }

    #[test]
    fn sources_are_classified() {
        assert_eq!(
            classify("https://github.com/o/r").unwrap(),
            Source::Url("https://github.com/o/r".into())
        );
        assert_eq!(
            classify("marketplace:x").unwrap(),
            Source::Marketplace("x".into())
        );
        assert_eq!(
            classify("some-id").unwrap(),
            Source::Marketplace("some-id".into())
        );
        assert!(classify("./no/such dir").is_err());
    }
}
