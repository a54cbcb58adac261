//! `/add-dir <path>`: before the directory joins the workspace, ask how long for — this
//! session only, or remembered in the project's `.kimi-code/local.toml` — or not at all (the
//! reference's three choices, in its order).

use crate::dialogs::{Picker, PickerItem, PickerKind};

fn item(label: &str, detail: &str, value: String) -> PickerItem {
    PickerItem {
        label: label.to_owned(),
        detail: detail.to_owned(),
        value,
        this_dir: true,
    }
}

/// The choice for `path`; a picked value is `session\n<path>`, `remember\n<path>` or `no\n<path>`.
pub fn scope_picker(path: &str) -> Picker {
    Picker::new(
        PickerKind::AddDirScope,
        &format!("Add directory to workspace: {path}"),
        vec![
            item(
                "Yes, for this session",
                "until this session is closed",
                format!("session\n{path}"),
            ),
            item(
                "Yes, and remember this directory",
                "saved in .kimi-code/local.toml for every session of this project",
                format!("remember\n{path}"),
            ),
            item("No", "", format!("no\n{path}")),
        ],
    )
}

/// A picked value as (path, remember); `None` for "No".
pub fn parse_choice(value: &str) -> Option<(String, bool)> {
    let (choice, path) = value.split_once('\n')?;
    match choice {
        "session" => Some((path.to_owned(), false)),
        "remember" => Some((path.to_owned(), true)),
        _ => None,
    }
}
