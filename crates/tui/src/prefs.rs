//! `/editor` and `/theme`: the UI preferences chosen in a picker, applied at once and saved to
//! `tui.toml`. The Ctrl-G editor is `[editor] command`, else `$VISUAL`, else `$EDITOR`, else
//! `vi`; the picker offers the well-known editors found on `PATH`.

use std::ffi::OsString;
use std::path::Path;

use crate::app::App;
use crate::cells::NoticeLevel;
use crate::dialogs::{Dialog, Picker, PickerItem, PickerKind};
use crate::notify::NotifySettings;
use crate::settings::UiFiles;
use crate::theme::ThemeChoice;
use crate::theme_file::ColourSupport;

/// Editors the picker offers when their program is on `PATH`: (command, name).
pub const KNOWN_EDITORS: &[(&str, &str)] = &[
    ("code --wait", "Visual Studio Code"),
    ("cursor --wait", "Cursor"),
    ("zed --wait", "Zed"),
    ("subl --wait", "Sublime Text"),
    ("nvim", "Neovim"),
    ("vim", "Vim"),
    ("vi", "vi"),
    ("nano", "GNU nano"),
    ("emacs -nw", "Emacs (in the terminal)"),
    ("hx", "Helix"),
    ("micro", "micro"),
    ("kak", "Kakoune"),
];

/// The picker row that stands for "no `[editor] command`".
const FROM_ENV: &str = "";

/// The UI's preferences and where they are saved.
#[derive(Debug, Clone, Default)]
pub struct Prefs {
    /// `None`: nothing is saved (tests, or no home).
    pub files: Option<UiFiles>,
    pub colours: ColourSupport,
    pub theme: ThemeChoice,
    /// `[editor] command`.
    pub editor_config: Option<String>,
    /// `$VISUAL`, else `$EDITOR`, as the host read them.
    pub editor_env: Option<String>,
    /// `PATH`, as the host read it (where the editor picker looks).
    pub path_env: Option<OsString>,
    pub notifications: NotifySettings,
}

impl Prefs {
    /// The command Ctrl-G runs.
    pub fn editor_command(&self) -> String {
        self.editor_config
            .clone()
            .or_else(|| self.editor_env.clone())
            .unwrap_or_else(|| "vi".to_owned())
    }
}

/// Whether `program` is an executable file in one of the `path` directories.
pub fn on_path(program: &str, path: &OsString) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path).any(|dir| {
        std::fs::metadata(dir.join(program))
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

impl App {
    /// `/editor [command]`: set the command directly, or pick one.
    pub(crate) fn editor_command_line(&mut self, args: &str) {
        if !args.trim().is_empty() {
            self.editor_chosen(args.trim());
            return;
        }
        let current = self.prefs.editor_config.clone();
        let env = match &self.prefs.editor_env {
            Some(cmd) => format!("currently {cmd}"),
            None => "neither is set: vi".to_owned(),
        };
        let mut items = vec![PickerItem {
            label: "Use $VISUAL / $EDITOR".to_owned(),
            detail: env,
            value: FROM_ENV.to_owned(),
            this_dir: true,
        }];
        let path = self.prefs.path_env.clone().unwrap_or_default();
        for (command, name) in KNOWN_EDITORS {
            let program = command.split_whitespace().next().unwrap_or(command);
            if on_path(program, &path) {
                items.push(PickerItem {
                    label: (*command).to_owned(),
                    detail: (*name).to_owned(),
                    value: (*command).to_owned(),
                    this_dir: true,
                });
            }
        }
        if let Some(cmd) = &current
            && !items.iter().any(|i| &i.value == cmd)
        {
            items.push(PickerItem {
                label: cmd.clone(),
                detail: "from tui.toml".to_owned(),
                value: cmd.clone(),
                this_dir: true,
            });
        }
        let selected = items
            .iter()
            .position(|i| Some(&i.value) == current.as_ref())
            .unwrap_or(0);
        for item in &mut items {
            if Some(&item.value) == current.as_ref() || (current.is_none() && item.value.is_empty())
            {
                item.detail.push_str(" (current)");
            }
        }
        let mut picker = Picker::new(
            PickerKind::Editor,
            "External editor for Ctrl-G (or /editor <command>)",
            items,
        );
        picker.selected = selected;
        self.open_picker(picker);
    }

    /// An editor was chosen (`""`: back to `$VISUAL` / `$EDITOR`).
    pub(crate) fn editor_chosen(&mut self, command: &str) {
        self.prefs.editor_config = (!command.is_empty()).then(|| command.to_owned());
        let saved = self.save_pref(Some("editor"), "command", command);
        let now = self.prefs.editor_command();
        self.notice(NoticeLevel::Info, format!("Ctrl-G now opens {now}{saved}"));
    }

    /// `/theme [name]`: apply a theme directly, or pick one.
    pub(crate) fn theme_command(&mut self, args: &str) {
        if !args.trim().is_empty() {
            self.theme_chosen(args.trim());
            return;
        }
        let builtin = [
            ("auto", "follows the terminal's colours"),
            ("dark", "for dark backgrounds"),
            ("light", "for light backgrounds"),
        ];
        let mut items: Vec<PickerItem> = builtin
            .iter()
            .map(|(name, detail)| PickerItem {
                label: (*name).to_owned(),
                detail: (*detail).to_owned(),
                value: (*name).to_owned(),
                this_dir: true,
            })
            .collect();
        let dir = self.prefs.files.as_ref().map(|f| f.themes_dir.clone());
        for (name, loaded) in dir
            .as_deref()
            .map(crate::theme_file::list)
            .unwrap_or_default()
        {
            let detail = match &loaded {
                Ok(t) if t.warnings.is_empty() => format!("custom · {} base", t.base.name()),
                Ok(t) => format!(
                    "custom · {} problem(s), see after choosing",
                    t.warnings.len()
                ),
                Err(_) => "custom · cannot be read".to_owned(),
            };
            let label = loaded.map_or_else(|_| name.clone(), |t| t.display_name);
            items.push(PickerItem {
                label,
                detail,
                value: name,
                this_dir: true,
            });
        }
        let current = self.prefs.theme.name().to_owned();
        for item in &mut items {
            if item.value == current {
                item.detail.push_str(" (current)");
            }
        }
        let mut picker = Picker::new(PickerKind::Theme, "Colour theme", items);
        picker.selected = picker
            .items
            .iter()
            .position(|i| i.value == current)
            .unwrap_or(0);
        self.open_picker(picker);
    }

    /// While the `/theme` picker is open, draw with the highlighted theme (not saved; a
    /// custom theme that cannot be read keeps the current look).
    pub(crate) fn preview_theme(&mut self) {
        let Some(Dialog::Picker(picker)) = &self.dialog else {
            return;
        };
        if picker.kind != PickerKind::Theme {
            return;
        }
        let Some(value) = picker
            .visible()
            .get(picker.selected)
            .map(|item| String::clone(&item.value))
        else {
            return;
        };
        let dir = self.themes_dir();
        let choice = ThemeChoice::parse(&value);
        if let ThemeChoice::Custom(custom) = &choice
            && crate::theme_file::load(&dir, custom).is_err()
        {
            return;
        }
        self.theme = crate::theme_file::resolve(&choice, &dir, self.prefs.colours).0;
    }

    /// The `/theme` picker closed without a choice: back to the saved theme.
    pub(crate) fn end_theme_preview(&mut self) {
        if let Some(Dialog::Picker(picker)) = &self.dialog
            && picker.kind == PickerKind::Theme
        {
            let dir = self.themes_dir();
            self.theme = crate::theme_file::resolve(&self.prefs.theme, &dir, self.prefs.colours).0;
        }
    }

    fn themes_dir(&self) -> std::path::PathBuf {
        self.prefs
            .files
            .as_ref()
            .map_or_else(|| Path::new("themes").to_owned(), |f| f.themes_dir.clone())
    }

    /// A theme was chosen: draw with it from now on and save it.
    pub(crate) fn theme_chosen(&mut self, name: &str) {
        let choice = ThemeChoice::parse(name);
        let dir = self
            .prefs
            .files
            .as_ref()
            .map_or_else(|| Path::new("themes").to_owned(), |f| f.themes_dir.clone());
        // A theme that cannot be read at all is neither applied nor saved.
        if let ThemeChoice::Custom(custom) = &choice
            && let Err(err) = crate::theme_file::load(&dir, custom)
        {
            let current = self.prefs.theme.name().to_owned();
            self.notice(
                NoticeLevel::Error,
                format!("{err}; the theme stays {current}"),
            );
            return;
        }
        let (theme, warnings) = crate::theme_file::resolve(&choice, &dir, self.prefs.colours);
        self.theme = theme;
        for warning in warnings {
            self.notice(NoticeLevel::Warning, warning);
        }
        let saved = self.save_pref(None, "theme", choice.name());
        self.prefs.theme = choice;
        self.notice(NoticeLevel::Info, format!("Theme: {name}{saved}"));
    }

    /// Saves one key to `tui.toml`; the words to append to the confirmation.
    fn save_pref(&mut self, table: Option<&str>, key: &str, text: &str) -> String {
        let Some(files) = &self.prefs.files else {
            return " (for this run; there is no tui.toml to save it in)".to_owned();
        };
        match crate::settings::save_string(&files.tui_toml, table, key, text) {
            Ok(()) => " (saved to tui.toml)".to_owned(),
            Err(err) => {
                tracing::warn!("{err}");
                format!(" (for this run only: {err})")
            }
        }
    }
}
