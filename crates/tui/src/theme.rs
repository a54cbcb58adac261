//! Colour themes built only from the 16 ANSI colours, so every terminal palette works, plus a
//! colourless theme for `NO_COLOR`. Custom JSON themes (`themes/<name>.json`) start from one
//! of these and replace token colours (see [`crate::theme_file`]).

use ratatui::style::{Color, Modifier, Style};

/// Which palette the user asked for in `tui.toml` (`theme = "auto" | "dark" | "light" |
/// "<custom name>"`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ThemeChoice {
    #[default]
    Auto,
    Dark,
    Light,
    /// `themes/<name>.json` in the kimi-rs home.
    Custom(String),
}

impl ThemeChoice {
    /// The `tui.toml` value: `auto`, `dark`, `light` or the custom theme's name.
    pub fn parse(value: &str) -> ThemeChoice {
        match value {
            "auto" | "" => ThemeChoice::Auto,
            "dark" => ThemeChoice::Dark,
            "light" => ThemeChoice::Light,
            name => ThemeChoice::Custom(name.to_owned()),
        }
    }

    /// What `tui.toml` stores for this choice.
    pub fn name(&self) -> &str {
        match self {
            ThemeChoice::Auto => "auto",
            ThemeChoice::Dark => "dark",
            ThemeChoice::Light => "light",
            ThemeChoice::Custom(name) => name,
        }
    }
}

/// The styles every widget draws with; named after the `tui.toml` theme tokens (§4.3).
#[derive(Debug, Clone, PartialEq)]
pub struct Theme {
    pub primary: Style,
    pub accent: Style,
    pub text: Style,
    pub text_strong: Style,
    pub text_dim: Style,
    pub border: Style,
    pub border_focus: Style,
    pub success: Style,
    pub warning: Style,
    pub error: Style,
    pub diff_added: Style,
    pub diff_removed: Style,
    pub diff_meta: Style,
    pub role_user: Style,
    pub shell_mode: Style,
    pub selected: Style,
    /// Whether syntax highlighting may colour code (off under `NO_COLOR`).
    pub colour: bool,
}

impl Theme {
    /// Picks the palette. `Auto` uses the dark palette: ANSI colours are remapped by the
    /// terminal's own theme, so "dark" names (plain `Blue`, `Green`) read well on both. A
    /// custom choice here is its fallback, the dark palette; [`crate::theme_file::resolve`]
    /// loads the file.
    pub fn new(choice: ThemeChoice, no_color: bool) -> Self {
        if no_color {
            return Self::monochrome();
        }
        let (dim, strong) = match choice {
            ThemeChoice::Auto | ThemeChoice::Dark | ThemeChoice::Custom(_) => {
                (Color::DarkGray, Color::White)
            }
            ThemeChoice::Light => (Color::Gray, Color::Black),
        };
        let fg = |c: Color| Style::new().fg(c);
        Theme {
            primary: fg(Color::Cyan),
            accent: fg(Color::Magenta),
            text: Style::new(),
            text_strong: fg(strong).add_modifier(Modifier::BOLD),
            text_dim: fg(dim),
            border: fg(dim),
            border_focus: fg(Color::Cyan),
            success: fg(Color::Green),
            warning: fg(Color::Yellow),
            error: fg(Color::Red),
            diff_added: fg(Color::Green),
            diff_removed: fg(Color::Red),
            diff_meta: fg(Color::Cyan),
            role_user: fg(Color::Blue).add_modifier(Modifier::BOLD),
            shell_mode: fg(Color::Yellow).add_modifier(Modifier::BOLD),
            selected: fg(Color::Cyan).add_modifier(Modifier::BOLD | Modifier::REVERSED),
            colour: true,
        }
    }

    /// `NO_COLOR`: only bold / dim / reverse survive, so structure is still visible.
    pub fn monochrome() -> Self {
        let plain = Style::new();
        let bold = Style::new().add_modifier(Modifier::BOLD);
        let dim = Style::new().add_modifier(Modifier::DIM);
        Theme {
            primary: bold,
            accent: bold,
            text: plain,
            text_strong: bold,
            text_dim: dim,
            border: plain,
            border_focus: bold,
            success: plain,
            warning: bold,
            error: bold,
            diff_added: plain,
            diff_removed: dim,
            diff_meta: bold,
            role_user: bold,
            shell_mode: bold,
            selected: Style::new().add_modifier(Modifier::REVERSED),
            colour: false,
        }
    }
}

impl Default for Theme {
    fn default() -> Self {
        Theme::new(ThemeChoice::Auto, false)
    }
}
