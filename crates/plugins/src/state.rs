//! `$KIMI_RS_HOME/plugins/installed.json`: which plugins are installed, from where, whether each
//! is enabled, and per-server MCP switches. Copies live in `plugins/managed/<id>/`. Written
//! atomically (temporary file, then rename).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::PluginError;

/// One installed plugin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InstalledPlugin {
    /// What it was installed from, as given (a folder, zip, URL or `marketplace:<id>`).
    pub source: String,
    pub enabled: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// RFC 3339.
    pub installed_at: String,
    /// MCP servers switched off (`false`) or on; servers not named are on.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub mcp: BTreeMap<String, bool>,
}

/// The whole file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PluginState {
    pub version: u32,
    #[serde(default)]
    pub plugins: BTreeMap<String, InstalledPlugin>,
}

impl Default for PluginState {
    fn default() -> Self {
        PluginState {
            version: 1,
            plugins: BTreeMap::new(),
        }
    }
}

impl PluginState {
    pub fn dir(home: &Path) -> PathBuf {
        home.join("plugins")
    }

    pub fn path(home: &Path) -> PathBuf {
        Self::dir(home).join("installed.json")
    }

    /// Where the copy of plugin `id` lives.
    pub fn managed_dir(home: &Path, id: &str) -> PathBuf {
        Self::dir(home).join("managed").join(id)
    }

    /// The state; a missing file is an empty state.
    pub fn read(home: &Path) -> Result<PluginState, PluginError> {
        let path = Self::path(home);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(PluginState::default());
            }
            Err(e) => {
                return Err(PluginError::State {
                    path,
                    message: e.to_string(),
                });
            }
        };
        serde_json::from_str(&text).map_err(|e| PluginError::State {
            path,
            message: format!("not valid plugin state JSON ({e})"),
        })
    }

    pub fn write(&self, home: &Path) -> Result<(), PluginError> {
        let path = Self::path(home);
        let dir = Self::dir(home);
        std::fs::create_dir_all(&dir).map_err(PluginError::io(&dir))?;
        let text = serde_json::to_string_pretty(self).map_err(|e| PluginError::State {
            path: path.clone(),
            message: e.to_string(),
        })?;
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, text + "\n").map_err(PluginError::io(&tmp))?;
        std::fs::rename(&tmp, &path).map_err(PluginError::io(&path))
    }

    /// Switch plugin `id` on or off.
    pub fn set_enabled(home: &Path, id: &str, enabled: bool) -> Result<(), PluginError> {
        let mut state = Self::read(home)?;
        let record = state
            .plugins
            .get_mut(id)
            .ok_or_else(|| PluginError::NotInstalled(id.to_owned()))?;
        record.enabled = enabled;
        state.write(home)
    }

    /// Switch one MCP server of plugin `id` on or off.
    pub fn set_mcp_enabled(
        home: &Path,
        id: &str,
        server: &str,
        enabled: bool,
    ) -> Result<(), PluginError> {
        let mut state = Self::read(home)?;
        let record = state
            .plugins
            .get_mut(id)
            .ok_or_else(|| PluginError::NotInstalled(id.to_owned()))?;
        record.mcp.insert(server.to_owned(), enabled);
        state.write(home)
    }

    /// Forget plugin `id` and delete its managed copy.
    pub fn remove(home: &Path, id: &str) -> Result<(), PluginError> {
        let mut state = Self::read(home)?;
        if state.plugins.remove(id).is_none() {
            return Err(PluginError::NotInstalled(id.to_owned()));
        }
        state.write(home)?;
        let dir = Self::managed_dir(home, id);
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(PluginError::Io { path: dir, source }),
        }
    }
}
