//! Custom JSON themes (surface.md §4.1, §4.3): `$KIMI_RS_HOME/themes/<name>.json` holding
//! `name`, `displayName?`, `base` (`dark` | `light`) and `colors` (`{token: "#rrggbb"}`) over
//! the built-in tokens. A bad file never stops the UI: it becomes warnings naming the file and
//! key, and the theme falls back to its base (or to dark). Without truecolor (`COLORTERM` not
//! `truecolor`/`24bit`) hex colours are drawn as the nearest of the 256 xterm colours.

use std::path::{Path, PathBuf};

use ratatui::style::{Color, Style};

use crate::theme::{Theme, ThemeChoice};

/// What the terminal can show, read by the host (`NO_COLOR`, `COLORTERM`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ColourSupport {
    pub no_color: bool,
    pub truecolor: bool,
}

/// Tokens of the reference that kimi-rs does not draw with: accepted, reported as unused.
const UNUSED_TOKENS: &[&str] = &[
    "textMuted",
    "diffAddedStrong",
    "diffRemovedStrong",
    "diffGutter",
];

/// The style slot of a token (kimi-rs adds `selected`, the picker's highlighted row).
fn slot<'a>(theme: &'a mut Theme, token: &str) -> Option<&'a mut Style> {
    Some(match token {
        "primary" => &mut theme.primary,
        "accent" => &mut theme.accent,
        "text" => &mut theme.text,
        "textStrong" => &mut theme.text_strong,
        "textDim" => &mut theme.text_dim,
        "border" => &mut theme.border,
        "borderFocus" => &mut theme.border_focus,
        "success" => &mut theme.success,
        "warning" => &mut theme.warning,
        "error" => &mut theme.error,
        "diffAdded" => &mut theme.diff_added,
        "diffRemoved" => &mut theme.diff_removed,
        "diffMeta" => &mut theme.diff_meta,
        "roleUser" => &mut theme.role_user,
        "shellMode" => &mut theme.shell_mode,
        "selected" => &mut theme.selected,
        _ => return None,
    })
}

/// `#rrggbb` (six hex digits, as the reference requires).
pub fn parse_hex(value: &str) -> Option<(u8, u8, u8)> {
    let hex = value.strip_prefix('#')?;
    if hex.len() != 6 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let byte = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).ok();
    Some((byte(0)?, byte(2)?, byte(4)?))
}

/// The xterm-256 colour closest to `rgb`: the 6×6×6 cube or the grey ramp, whichever is
/// nearer (squared RGB distance).
pub fn nearest_256((r, g, b): (u8, u8, u8)) -> u8 {
    const LEVELS: [u8; 6] = [0, 95, 135, 175, 215, 255];
    let level = |v: u8| {
        (0..6)
            .min_by_key(|&i| (i32::from(LEVELS[i]) - i32::from(v)).abs())
            .unwrap_or(0)
    };
    let dist = |(x, y, z): (u8, u8, u8)| {
        let d = |p: u8, q: u8| (i32::from(p) - i32::from(q)).pow(2);
        d(x, r) + d(y, g) + d(z, b)
    };
    let (ri, gi, bi) = (level(r), level(g), level(b));
    let cube = (LEVELS[ri], LEVELS[gi], LEVELS[bi]);
    let avg = (u16::from(r) + u16::from(g) + u16::from(b)) / 3;
    // Grey ramp 232..=255 is 8, 18, …, 238.
    let step = u8::try_from((avg.saturating_sub(3) / 10).min(23)).unwrap_or(23);
    let grey_level = 8 + step * 10;
    let grey = (grey_level, grey_level, grey_level);
    let cube_index = u8::try_from(16 + 36 * ri + 6 * gi + bi).unwrap_or(16);
    if dist(grey) < dist(cube) {
        232 + step
    } else {
        cube_index
    }
}

fn colour(rgb: (u8, u8, u8), truecolor: bool) -> Color {
    if truecolor {
        Color::Rgb(rgb.0, rgb.1, rgb.2)
    } else {
        Color::Indexed(nearest_256(rgb))
    }
}

/// One custom theme file, read and checked.
#[derive(Debug, Clone, PartialEq)]
pub struct CustomTheme {
    /// The file's stem: what `tui.toml` names.
    pub name: String,
    pub display_name: String,
    pub base: ThemeChoice,
    /// `(token, colour)` in file order, only the valid ones.
    pub colors: Vec<(String, (u8, u8, u8))>,
    /// What was wrong, each naming the file and key; the theme still applies.
    pub warnings: Vec<String>,
}

/// Why a theme file cannot be used at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ThemeFileError {
    #[error("cannot read the theme file {path}: {detail}")]
    Read { path: String, detail: String },
    #[error("the theme file {path} is not valid JSON ({detail}); fix it or pick another theme")]
    Json { path: String, detail: String },
}

pub fn theme_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.json"))
}

/// Reads and checks `dir/<name>.json`.
pub fn load(dir: &Path, name: &str) -> Result<CustomTheme, ThemeFileError> {
    let path = theme_path(dir, name);
    let shown = path.display().to_string();
    if name.is_empty() || name.contains(['/', '\\']) || name.starts_with('.') {
        return Err(ThemeFileError::Read {
            path: shown,
            detail: format!("`{name}` is not a theme name (a file name in themes/ without .json)"),
        });
    }
    let text = std::fs::read_to_string(&path).map_err(|err| ThemeFileError::Read {
        path: shown.clone(),
        detail: err.to_string(),
    })?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|err| ThemeFileError::Json {
            path: shown.clone(),
            detail: err.to_string(),
        })?;
    Ok(check(name, &shown, &value))
}

/// The checks of [`load`] on parsed JSON (`shown` names the file in warnings).
pub fn check(name: &str, shown: &str, value: &serde_json::Value) -> CustomTheme {
    let mut warnings = Vec::new();
    let mut warn = |key: &str, what: String| {
        warnings.push(format!("theme file {shown}: `{key}`: {what}"));
    };
    let Some(object) = value.as_object() else {
        warn(
            "",
            "the file must hold a JSON object; the dark theme is used".to_owned(),
        );
        return CustomTheme {
            name: name.to_owned(),
            display_name: name.to_owned(),
            base: ThemeChoice::Dark,
            colors: Vec::new(),
            warnings,
        };
    };
    match object.get("name").map(serde_json::Value::as_str) {
        Some(Some(n)) if n == name => {}
        Some(Some(n)) => warn(
            "name",
            format!("`{n}` differs from the file name; the theme is called `{name}`"),
        ),
        Some(None) => warn("name", "must be a string".to_owned()),
        None => warn("name", "missing (it should be the file name)".to_owned()),
    }
    let display_name = match object.get("displayName") {
        None => name.to_owned(),
        Some(v) => v.as_str().map_or_else(
            || {
                warn("displayName", "must be a string; ignored".to_owned());
                name.to_owned()
            },
            str::to_owned,
        ),
    };
    let base = match object.get("base").and_then(serde_json::Value::as_str) {
        Some("dark") => ThemeChoice::Dark,
        Some("light") => ThemeChoice::Light,
        other => {
            let what = other.map_or_else(
                || "missing or not a string".to_owned(),
                |b| format!("`{b}`"),
            );
            warn(
                "base",
                format!("{what}: must be \"dark\" or \"light\"; dark is used"),
            );
            ThemeChoice::Dark
        }
    };
    let mut colors = Vec::new();
    match object.get("colors") {
        None => warn(
            "colors",
            "missing: the base theme is used as it is".to_owned(),
        ),
        Some(serde_json::Value::Object(map)) => {
            let mut probe = Theme::new(ThemeChoice::Dark, false);
            for (token, v) in map {
                let key = format!("colors.{token}");
                if UNUSED_TOKENS.contains(&token.as_str()) {
                    warn(
                        &key,
                        "kimi-rs does not draw with this token; ignored".to_owned(),
                    );
                    continue;
                }
                if slot(&mut probe, token).is_none() {
                    warn(
                        &key,
                        "unknown token; ignored (see the README for the token names)".to_owned(),
                    );
                    continue;
                }
                match v.as_str().and_then(parse_hex) {
                    Some(rgb) => colors.push((token.clone(), rgb)),
                    None => warn(
                        &key,
                        format!("{v} is not a colour like \"#1e90ff\"; the base colour is used"),
                    ),
                }
            }
        }
        Some(_) => warn(
            "colors",
            "must be an object of token: \"#rrggbb\"; the base theme is used".to_owned(),
        ),
    }
    CustomTheme {
        name: name.to_owned(),
        display_name,
        base,
        colors,
        warnings,
    }
}

impl CustomTheme {
    /// The base palette with this file's colours (foregrounds; bold and the like stay).
    pub fn theme(&self, colours: ColourSupport) -> Theme {
        let mut theme = Theme::new(self.base.clone(), colours.no_color);
        if colours.no_color {
            return theme;
        }
        for (token, rgb) in &self.colors {
            if let Some(style) = slot(&mut theme, token) {
                *style = style.fg(colour(*rgb, colours.truecolor));
            }
        }
        theme
    }
}

/// The theme `choice` means, with the warnings to show (a custom file's problems, or why it
/// could not be used and what is used instead).
pub fn resolve(choice: &ThemeChoice, dir: &Path, colours: ColourSupport) -> (Theme, Vec<String>) {
    let ThemeChoice::Custom(name) = choice else {
        return (Theme::new(choice.clone(), colours.no_color), Vec::new());
    };
    match load(dir, name) {
        Ok(custom) => (custom.theme(colours), custom.warnings),
        Err(err) => (
            Theme::new(ThemeChoice::Auto, colours.no_color),
            vec![format!("{err}; the automatic theme is used")],
        ),
    }
}

/// The custom themes in `dir` (`*.json`), sorted by name, each read and checked.
pub fn list(dir: &Path) -> Vec<(String, Result<CustomTheme, ThemeFileError>)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let path = e.path();
            (path.extension()? == "json")
                .then(|| path.file_stem()?.to_str().map(str::to_owned))
                .flatten()
        })
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let loaded = load(dir, &name);
            (name, loaded)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const TRUE: ColourSupport = ColourSupport {
        no_color: false,
        truecolor: true,
    };

    #[test]
    fn a_good_file_recolours_its_tokens_over_its_base() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("ocean.json"),
            r##"{"name":"ocean","displayName":"Ocean","base":"light","colors":{"primary":"#1e90ff","roleUser":"#00ff00"}}"##,
        )
        .unwrap();
        let custom = load(dir.path(), "ocean").unwrap();
        assert_eq!(custom.warnings, Vec::<String>::new());
        assert_eq!(custom.display_name, "Ocean");
        let theme = custom.theme(TRUE);
        let light = Theme::new(ThemeChoice::Light, false);
        assert_eq!(theme.primary, Style::new().fg(Color::Rgb(0x1e, 0x90, 0xff)));
        // Bold stays; the base's other tokens are the light ones.
        assert_eq!(theme.role_user, light.role_user.fg(Color::Rgb(0, 255, 0)));
        assert_eq!(theme.text_strong, light.text_strong);
        // Without truecolor: the nearest xterm colour (dodger blue is 33).
        let indexed = custom.theme(ColourSupport::default());
        assert_eq!(indexed.primary, Style::new().fg(Color::Indexed(33)));
    }

    #[test]
    fn bad_keys_are_named_and_skipped_and_bad_json_falls_back() {
        let value = serde_json::json!({
            "name": "x", "base": "sepia",
            "colors": {"primary": "blue", "sparkle": "#ffffff", "diffGutter": "#000000", "error": "#ff0000"}
        });
        let custom = check("x", "themes/x.json", &value);
        assert_eq!(custom.base, ThemeChoice::Dark);
        assert_eq!(custom.colors, vec![("error".to_owned(), (255, 0, 0))]);
        let joined = custom.warnings.join("\n");
        for needle in [
            "themes/x.json: `base`: `sepia`",
            "`colors.primary`: \"blue\" is not a colour",
            "`colors.sparkle`: unknown token",
            "`colors.diffGutter`: kimi-rs does not draw",
        ] {
            assert!(joined.contains(needle), "{needle} in {joined}");
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("broken.json"), "{ nope").unwrap();
        let (theme, warnings) = resolve(&ThemeChoice::Custom("broken".into()), dir.path(), TRUE);
        assert_eq!(theme, Theme::new(ThemeChoice::Auto, false));
        assert!(
            warnings[0].contains("broken.json is not valid JSON"),
            "{warnings:?}"
        );
        let (_, warnings) = resolve(&ThemeChoice::Custom("gone".into()), dir.path(), TRUE);
        assert!(
            warnings[0].contains("cannot read the theme file"),
            "{warnings:?}"
        );
        assert_eq!(list(dir.path()).len(), 1);
    }

    #[test]
    fn nearest_256_picks_cube_and_grey() {
        assert_eq!(nearest_256((255, 0, 0)), 196);
        assert_eq!(nearest_256((0, 0, 0)), 16);
        assert_eq!(nearest_256((128, 128, 128)), 244);
        assert_eq!(nearest_256((255, 255, 255)), 231);
    }
}
