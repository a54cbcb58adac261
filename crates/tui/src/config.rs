//! The `tui.toml` keys this UI reads (surface.md §4.3). Unknown keys are ignored so a file
//! written for a newer version still loads.

use std::path::Path;

use serde::Deserialize;

use crate::error::TuiError;
use crate::theme::ThemeChoice;

/// Parsed `tui.toml`. The default is what an empty file means (also used when there is none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TuiConfig {
    pub theme: ThemeChoice,
    /// `[editor] command`: the Ctrl-G editor; empty means `$VISUAL` then `$EDITOR`.
    pub editor_command: Option<String>,
    /// When true, a large paste is inserted verbatim instead of collapsing to a placeholder.
    pub disable_paste_burst: bool,
    /// `[status_line] items`, in order.
    pub status_items: Vec<String>,
}

#[derive(Deserialize, Default)]
struct RawConfig {
    #[serde(default)]
    theme: Option<String>,
    #[serde(default)]
    disable_paste_burst: bool,
    #[serde(default)]
    editor: RawEditor,
    #[serde(default)]
    status_line: RawStatusLine,
}

#[derive(Deserialize, Default)]
struct RawEditor {
    #[serde(default)]
    command: String,
}

#[derive(Deserialize, Default)]
struct RawStatusLine {
    #[serde(default)]
    items: Option<Vec<String>>,
}

impl Default for TuiConfig {
    fn default() -> Self {
        Self::from_raw(RawConfig::default())
    }
}

impl TuiConfig {
    /// Reads `path`; a missing file is the default configuration.
    pub fn load(path: &Path) -> Result<Self, TuiError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Self::parse(&text).map_err(|source| TuiError::Config {
                path: path.display().to_string(),
                source,
            }),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(source) => Err(TuiError::Io {
                what: format!("read {}", path.display()),
                source,
            }),
        }
    }

    pub fn parse(text: &str) -> Result<Self, toml::de::Error> {
        let raw: RawConfig = toml::from_str(text)?;
        Ok(Self::from_raw(raw))
    }

    fn from_raw(raw: RawConfig) -> Self {
        // A custom theme name falls back to auto: custom JSON themes are not supported yet.
        let theme = match raw.theme.as_deref() {
            Some("dark") => ThemeChoice::Dark,
            Some("light") => ThemeChoice::Light,
            _ => ThemeChoice::Auto,
        };
        let command = raw.editor.command.trim().to_owned();
        TuiConfig {
            theme,
            editor_command: (!command.is_empty()).then_some(command),
            disable_paste_burst: raw.disable_paste_burst,
            status_items: raw
                .status_line
                .items
                .unwrap_or_else(|| vec!["mode".into(), "model".into(), "cwd".into()]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_theme_editor_and_status_items() {
        let cfg = TuiConfig::parse(
            "theme = \"light\"\nrender_latex = false\n[editor]\ncommand = \"vim\"\n[status_line]\nitems = [\"model\"]\n",
        )
        .unwrap();
        assert_eq!(cfg.theme, ThemeChoice::Light);
        assert_eq!(cfg.editor_command.as_deref(), Some("vim"));
        assert_eq!(cfg.status_items, vec!["model".to_owned()]);
    }

    #[test]
    fn missing_file_is_default_and_bad_toml_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let missing = TuiConfig::load(&dir.path().join("tui.toml")).unwrap();
        assert_eq!(missing.theme, ThemeChoice::Auto);
        // No file means the same as an empty one: the footer shows mode, model and cwd.
        assert_eq!(missing, TuiConfig::parse("").unwrap());
        assert_eq!(missing.status_items, ["mode", "model", "cwd"]);
        let path = dir.path().join("bad.toml");
        std::fs::write(&path, "theme = ").unwrap();
        let err = TuiConfig::load(&path).unwrap_err().to_string();
        assert!(err.contains("bad.toml"), "{err}");
    }
}
