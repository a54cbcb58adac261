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
    #[serde(default)]
    pub source: String,
    #[serde(default = "enabled_by_default")]
    pub enabled: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// RFC 3339.
    #[serde(default)]
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

fn enabled_by_default() -> bool {
    true
}

/// A record as another writer (Kimi Code) may have shaped it: what can be read of it, enabled
/// unless it says otherwise.
fn lenient_record(value: &serde_json::Value) -> InstalledPlugin {
    serde_json::from_value(value.clone()).unwrap_or_else(|_| InstalledPlugin {
        source: value
            .get("source")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        enabled: value
            .get("enabled")
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(true),
        version: value
            .get("version")
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned),
        installed_at: String::new(),
        mcp: BTreeMap::new(),
    })
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
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| PluginError::State {
                path: path.clone(),
                message: format!("not valid JSON ({e})"),
            })?;
        // Ours is `{"plugins": {id: record}}`; a list of records with `id` (an imported Kimi
        // Code home) is read too.
        let plugins = match value.get("plugins") {
            None | Some(serde_json::Value::Null) => BTreeMap::new(),
            Some(serde_json::Value::Object(map)) => map
                .iter()
                .map(|(id, record)| (id.clone(), lenient_record(record)))
                .collect(),
            Some(serde_json::Value::Array(items)) => items
                .iter()
                .filter_map(|record| {
                    let id = record.get("id")?.as_str()?.to_owned();
                    Some((id, lenient_record(record)))
                })
                .collect(),
            Some(_) => {
                return Err(PluginError::State {
                    path,
                    message: "`plugins` must be an object of plugin records".to_owned(),
                });
            }
        };
        Ok(PluginState {
            version: 1,
            plugins,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_other_shapes_are_read_leniently() {
        let home = tempfile::tempdir().unwrap();
        assert_eq!(
            PluginState::read(home.path()).unwrap(),
            PluginState::default()
        );
        let mut state = PluginState::default();
        state.plugins.insert(
            "a".into(),
            InstalledPlugin {
                source: "/src/a".into(),
                enabled: false,
                version: Some("1.0".into()),
                installed_at: "2026-01-01T00:00:00Z".into(),
                mcp: BTreeMap::from([("s".to_owned(), false)]),
            },
        );
        state.write(home.path()).unwrap();
        assert_eq!(PluginState::read(home.path()).unwrap(), state);

        std::fs::write(
            PluginState::path(home.path()),
            r#"{"plugins": [{"id": "b", "enabled": false, "mcp": {"s": {"enabled": true}}}, {"id": "c"}]}"#,
        )
        .unwrap();
        let read = PluginState::read(home.path()).unwrap();
        assert!(!read.plugins["b"].enabled);
        assert!(read.plugins["c"].enabled);
        std::fs::write(PluginState::path(home.path()), "{nope").unwrap();
        let err = PluginState::read(home.path()).unwrap_err().to_string();
        assert!(
            err.contains("installed.json") && err.contains("Fix or delete"),
            "{err}"
        );
    }
}
