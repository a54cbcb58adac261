//! Syntax highlighting of code blocks with syntect (pure-Rust regex engine), mapped onto ANSI
//! colours so the terminal's palette decides the actual shades.

use std::str::FromStr;
use std::sync::{LazyLock, Once, OnceLock};

use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use syntect::easy::HighlightLines;
use syntect::highlighting::{
    Color as SynColor, ScopeSelectors, StyleModifier, Theme as SynTheme, ThemeItem, ThemeSettings,
};
use syntect::parsing::SyntaxSet;

/// Loading the syntax definitions takes tens of milliseconds, so it happens on a background
/// thread; until it is done code renders plain (and [`ready`] says so, for cache keys).
static SYNTAXES: OnceLock<SyntaxSet> = OnceLock::new();
static LOADING: Once = Once::new();
static ANSI_THEME: LazyLock<SynTheme> = LazyLock::new(ansi_theme);

/// Alpha 0 marks "this is ANSI colour number `r`"; anything else means "default foreground".
fn ansi(index: u8) -> SynColor {
    SynColor {
        r: index,
        g: 0,
        b: 0,
        a: 0,
    }
}

fn ansi_theme() -> SynTheme {
    let rules: [(&str, u8); 9] = [
        ("comment", 8),
        ("string", 2),
        ("constant.numeric, constant.language, constant.character", 3),
        ("keyword, storage", 5),
        (
            "entity.name.function, support.function, meta.function-call",
            4,
        ),
        ("entity.name.type, support.type, entity.name.class", 6),
        ("variable.parameter", 3),
        ("punctuation.definition.string", 2),
        ("invalid", 1),
    ];
    let scopes = rules
        .iter()
        .filter_map(|(sel, idx)| {
            let scope = ScopeSelectors::from_str(sel).ok()?;
            Some(ThemeItem {
                scope,
                style: StyleModifier {
                    foreground: Some(ansi(*idx)),
                    background: None,
                    font_style: None,
                },
            })
        })
        .collect();
    SynTheme {
        name: Some("ansi".into()),
        author: None,
        settings: ThemeSettings {
            foreground: Some(SynColor {
                r: 0,
                g: 0,
                b: 0,
                a: 255,
            }),
            ..ThemeSettings::default()
        },
        scopes,
    }
}

fn to_style(c: SynColor, base: Style) -> Style {
    if c.a != 0 {
        return base;
    }
    let colour = match c.r {
        1 => Color::Red,
        2 => Color::Green,
        3 => Color::Yellow,
        4 => Color::Blue,
        5 => Color::Magenta,
        6 => Color::Cyan,
        8 => Color::DarkGray,
        _ => return base,
    };
    base.fg(colour)
}

/// Loads the syntax definitions now, on this thread (tests, benchmarks).
pub fn warm() {
    SYNTAXES.get_or_init(SyntaxSet::load_defaults_nonewlines);
}

/// Starts loading in the background; cheap to call repeatedly.
pub fn warm_in_background() {
    LOADING.call_once(|| {
        std::thread::spawn(warm);
    });
}

/// Whether highlighting is available yet.
pub fn ready() -> bool {
    SYNTAXES.get().is_some()
}

/// Highlights `code` written in `lang` (a fence tag such as `rust` or `py`). Unknown languages
/// and colourless themes come back as plain lines in `base` style.
pub fn highlight(code: &str, lang: &str, base: Style, colour: bool) -> Vec<Line<'static>> {
    let plain = || {
        code.lines()
            .map(|l| Line::from(Span::styled(l.to_owned(), base)))
            .collect()
    };
    if !colour || lang.is_empty() {
        return plain();
    }
    let Some(syntaxes) = SYNTAXES.get() else {
        warm_in_background();
        return plain();
    };
    let Some(syntax) = syntaxes
        .find_syntax_by_token(lang)
        .or_else(|| syntaxes.find_syntax_by_extension(lang))
    else {
        return plain();
    };
    let mut hl = HighlightLines::new(syntax, &ANSI_THEME);
    let mut out = Vec::new();
    for line in code.lines() {
        match hl.highlight_line(line, syntaxes) {
            Ok(ranges) => out.push(Line::from(
                ranges
                    .into_iter()
                    .map(|(s, t)| Span::styled(t.to_owned(), to_style(s.foreground, base)))
                    .collect::<Vec<_>>(),
            )),
            Err(_) => out.push(Line::from(Span::styled(line.to_owned(), base))),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_keywords_get_a_colour_and_unknown_languages_stay_plain() {
        warm();
        let lines = highlight("fn main() {}", "rust", Style::new(), true);
        assert!(
            lines[0].spans.iter().any(|s| s.style.fg.is_some()),
            "{lines:?}"
        );
        let plain = highlight("fn main() {}", "nosuchlang", Style::new(), true);
        assert!(plain[0].spans.iter().all(|s| s.style.fg.is_none()));
    }
}
