//! Why a plugin could not be read, installed or changed; each message says what to do.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    #[error(
        "no plugin manifest in {}: a plugin folder needs kimi.plugin.json (or .kimi-plugin/plugin.json) at its top",
        .0.display()
    )]
    NoManifest(PathBuf),
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid plugin manifest {}: {message}", path.display())]
    Manifest { path: PathBuf, message: String },
    #[error(
        "plugin manifest {}: `{field}` path \"{value}\" leads outside the plugin folder; every path must stay inside it (symlinks included). The plugin was not installed",
        path.display()
    )]
    PathEscapes {
        path: PathBuf,
        field: String,
        value: String,
    },
    #[error("cannot download {url}: {detail}")]
    Download { url: String, detail: String },
    #[error("cannot unpack the zip {what}: {detail}")]
    Zip { what: String, detail: String },
    #[error("{0}")]
    Source(String),
    #[error("no installed plugin `{0}`; `kimi-rs plugin list` shows the installed ones")]
    NotInstalled(String),
    #[error("cannot read {}: {message}. Fix or delete the file", path.display())]
    State { path: PathBuf, message: String },
}

impl PluginError {
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> PluginError {
        let path = path.into();
        move |source| PluginError::Io { path, source }
    }
}
