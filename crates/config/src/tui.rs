//! `tui.toml` (surface.md §4.3): the terminal UI's preferences. A file that does not parse, or
//! a key of the wrong type, is an error diagnostic and the UI uses its defaults; unknown keys
//! and settings kimi-rs's UI does not have are warnings.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::de::{DeTable, ValueDeserializer};

use crate::diag::{Diagnostic, Severity, Sink, did_you_mean};
use crate::schema::fields_of;

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Editor {
    pub command: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Notifications {
    pub enabled: Option<bool>,
    pub notification_condition: Option<String>,
    /// kimi-rs's own: a program run for each notification (title and body as arguments and
    /// in `KIMI_NOTIFICATION_TITLE` / `KIMI_NOTIFICATION_BODY`).
    pub command: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Upgrade {
    pub auto_install: Option<bool>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct StatusLine {
    pub items: Option<Vec<String>>,
    pub command: Option<String>,
}

/// The keys of `tui.toml`, as written.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct TuiKeys {
    pub theme: Option<String>,
    pub render_latex: Option<bool>,
    pub disable_paste_burst: Option<bool>,
    pub cache_expiry_hint: Option<bool>,
    pub editor: Option<Editor>,
    pub notifications: Option<Notifications>,
    pub upgrade: Option<Upgrade>,
    pub status_line: Option<StatusLine>,
}

/// The parsed `tui.toml` with its problems. `Default` is "no file".
#[derive(Debug, Clone, Default)]
pub struct TuiFile {
    pub path: PathBuf,
    pub present: bool,
    pub keys: TuiKeys,
    pub diagnostics: Vec<Diagnostic>,
}

/// Settings of Kimi Code's UI that kimi-rs's does not have.
const UNSUPPORTED: &[(&[&str], &str)] = &[
    (&["render_latex"], "LaTeX is shown as written"),
    (&["cache_expiry_hint"], "there is no cache-expiry hint"),
    (&["upgrade"], "kimi-rs does not update itself"),
];

fn known(path: &[String]) -> &'static [&'static str] {
    match path
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        [] => fields_of::<TuiKeys>(),
        ["editor"] => fields_of::<Editor>(),
        ["notifications"] => fields_of::<Notifications>(),
        ["upgrade"] => fields_of::<Upgrade>(),
        ["status_line"] => fields_of::<StatusLine>(),
        _ => &[],
    }
}

impl TuiFile {
    pub fn parse(text: &str, path: &Path) -> TuiFile {
        let mut diagnostics = Vec::new();
        let keys = parse_keys(text, path, &mut diagnostics);
        TuiFile {
            path: path.to_owned(),
            present: true,
            keys,
            diagnostics,
        }
    }

    /// Reads `path`; a missing file is the default.
    pub fn read(path: &Path) -> TuiFile {
        match crate::file::read_regular_file(path) {
            Ok(text) => TuiFile::parse(&text, path),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => TuiFile {
                path: path.to_owned(),
                ..TuiFile::default()
            },
            Err(err) => TuiFile {
                path: path.to_owned(),
                present: true,
                keys: TuiKeys::default(),
                diagnostics: vec![Diagnostic {
                    severity: Severity::Error,
                    file: path.to_owned(),
                    line: None,
                    key: String::new(),
                    message: format!("cannot read the file: {err}"),
                    suggestion: None,
                }],
            },
        }
    }
}

fn parse_keys(text: &str, path: &Path, out: &mut Vec<Diagnostic>) -> TuiKeys {
    let mut sink = Sink {
        file: path,
        lines: crate::diag::LineIndex::new(text),
        out,
    };
    let root = match DeTable::parse(text) {
        Ok(root) => root,
        Err(err) => {
            sink.push(
                Severity::Error,
                err.span().map(|s| s.start),
                "",
                format!(
                    "not valid TOML: {}; the terminal UI uses its defaults until it is fixed",
                    err.message().trim_end()
                ),
                None,
            );
            return TuiKeys::default();
        }
    };
    let table = root.get_ref();
    let mut ignored = Vec::new();
    let value = toml::Spanned::new(root.span(), toml::de::DeValue::Table(table.clone()));
    let result: Result<TuiKeys, _> =
        serde_ignored::deserialize(ValueDeserializer::from(value), |p| {
            let mut segs = Vec::new();
            crate::parse::segments(&p, &mut segs);
            ignored.push(segs);
        });
    for path in ignored {
        let Some((last, parent)) = path.split_last() else {
            continue;
        };
        let at = crate::parse::span_of(table, &path).map(|s| s.start);
        sink.push(
            Severity::Warning,
            at,
            &path.join("."),
            "unknown key: not a tui.toml setting; it is ignored (check its spelling or remove it)"
                .to_owned(),
            did_you_mean(last, known(parent).iter().copied()),
        );
    }
    let keys_out = match result {
        Ok(keys) => keys,
        Err(err) => {
            let key = err
                .span()
                .and_then(|s| crate::parse::key_at(table, s.start))
                .map(|p| p.join("."))
                .unwrap_or_default();
            sink.push(
                Severity::Error,
                err.span().map(|s| s.start),
                &key,
                format!(
                    "{}; the terminal UI uses its defaults until it is fixed",
                    err.message().trim_end()
                ),
                None,
            );
            return TuiKeys::default();
        }
    };
    for (path, why) in UNSUPPORTED {
        let path: Vec<String> = path.iter().map(|s| (*s).to_owned()).collect();
        if let Some(span) = crate::parse::span_of(table, &path) {
            sink.push(
                Severity::Warning,
                Some(span.start),
                &path.join("."),
                format!("not supported by kimi-rs; ignored ({why})"),
                None,
            );
        }
    }
    if let Some(theme) = &keys_out.theme
        && !matches!(theme.as_str(), "auto" | "dark" | "light")
    {
        // A custom theme is `themes/<name>.json` next to this file.
        let file = path
            .parent()
            .unwrap_or(Path::new("."))
            .join("themes")
            .join(format!("{theme}.json"));
        let at = crate::parse::span_of(table, &["theme".to_owned()]).map(|s| s.start);
        if theme.contains(['/', '\\']) || theme.starts_with('.') {
            sink.push(
                Severity::Warning,
                at,
                "theme",
                format!("`{theme}` is not a theme name (a custom theme is named after its file in themes/, without .json); the automatic theme is used"),
                None,
            );
        } else if !file.is_file() {
            sink.push(
                Severity::Warning,
                at,
                "theme",
                format!("`{theme}`: there is no custom theme file {}; the automatic theme is used (use auto, dark, light or add that file)", file.display()),
                None,
            );
        }
    }
    if let Some(condition) = keys_out
        .notifications
        .as_ref()
        .and_then(|n| n.notification_condition.as_deref())
        && !matches!(condition, "unfocused" | "always")
    {
        let key = [
            "notifications".to_owned(),
            "notification_condition".to_owned(),
        ];
        let at = crate::parse::span_of(table, &key).map(|s| s.start);
        sink.push(
            Severity::Warning,
            at,
            "notifications.notification_condition",
            format!(
                "`{condition}` is not a condition (use unfocused or always); unfocused is used"
            ),
            None,
        );
    }
    keys_out
}
