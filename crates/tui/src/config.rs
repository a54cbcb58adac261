//! The `tui.toml` keys this UI reads (surface.md §4.3), from the one parse of the file in
//! kimi-config (which reports unknown keys and settings this UI does not have).

use kimi_config::tui::TuiKeys;

use crate::theme::ThemeChoice;

/// The UI's settings. The default is what an empty file means (also used when there is none,
/// or when the file has errors).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TuiConfig {
    pub theme: ThemeChoice,
    /// `[editor] command`: the Ctrl-G editor; empty means `$VISUAL` then `$EDITOR`.
    pub editor_command: Option<String>,
    /// When true, a large paste is inserted verbatim instead of collapsing to a placeholder.
    pub disable_paste_burst: bool,
    /// `[status_line] items`, in order.
    pub status_items: Vec<String>,
    /// `[status_line] command`: its first output line replaces the footer's items.
    pub status_command: Option<String>,
    /// `[notifications]`.
    pub notifications: crate::notify::NotifySettings,
}

impl Default for TuiConfig {
    fn default() -> Self {
        Self::from_keys(&TuiKeys::default())
    }
}

impl TuiConfig {
    /// The settings of a parsed `tui.toml`.
    pub fn from_keys(keys: &TuiKeys) -> Self {
        // A custom name is looked up in `themes/` when the UI starts (`theme_file::resolve`).
        let theme = ThemeChoice::parse(keys.theme.as_deref().unwrap_or("auto").trim());
        let command = keys
            .editor
            .as_ref()
            .and_then(|e| e.command.as_deref())
            .unwrap_or_default()
            .trim()
            .to_owned();
        let notifications = keys.notifications.clone().unwrap_or_default();
        let notifications = crate::notify::NotifySettings {
            enabled: notifications.enabled.unwrap_or(true),
            always: notifications.notification_condition.as_deref() == Some("always"),
            command: notifications
                .command
                .as_deref()
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(str::to_owned),
        };
        TuiConfig {
            theme,
            notifications,
            editor_command: (!command.is_empty()).then_some(command),
            disable_paste_burst: keys.disable_paste_burst.unwrap_or(false),
            status_items: keys
                .status_line
                .as_ref()
                .and_then(|s| s.items.clone())
                .unwrap_or_else(|| vec!["mode".into(), "model".into(), "cwd".into()]),
            status_command: keys
                .status_line
                .as_ref()
                .and_then(|s| s.command.as_deref())
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(str::to_owned),
        }
    }

    /// Parses `text` (tests; the binary parses the file through kimi-config).
    pub fn parse(text: &str) -> Self {
        let file = kimi_config::tui::TuiFile::parse(text, std::path::Path::new("tui.toml"));
        Self::from_keys(&file.keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_theme_editor_and_status_items() {
        let cfg = TuiConfig::parse(
            "theme = \"light\"\nrender_latex = false\n[editor]\ncommand = \"vim\"\n[status_line]\nitems = [\"model\"]\ncommand = \" ~/bin/status \"\n",
        );
        assert_eq!(cfg.status_command.as_deref(), Some("~/bin/status"));
        assert_eq!(cfg.theme, ThemeChoice::Light);
        assert_eq!(cfg.editor_command.as_deref(), Some("vim"));
        assert_eq!(cfg.status_items, vec!["model".to_owned()]);
        let cfg = TuiConfig::parse(
            "theme = \"ocean\"\n[notifications]\nnotification_condition = \"always\"\ncommand = \"notify-send x\"\n",
        );
        assert_eq!(cfg.theme, ThemeChoice::Custom("ocean".to_owned()));
        assert_eq!(
            cfg.notifications,
            crate::notify::NotifySettings {
                enabled: true,
                always: true,
                command: Some("notify-send x".to_owned()),
            }
        );
    }

    #[test]
    fn no_file_and_a_bad_file_mean_the_defaults() {
        let none = TuiConfig::default();
        assert_eq!(none.theme, ThemeChoice::Auto);
        // No file means the same as an empty one: the footer shows mode, model and cwd.
        assert_eq!(none, TuiConfig::parse(""));
        assert_eq!(none.status_items, ["mode", "model", "cwd"]);
        assert_eq!(TuiConfig::parse("theme = "), none);
    }
}
