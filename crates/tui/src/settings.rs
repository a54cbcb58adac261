//! Writes the choices made in the UI (`/theme`, `/editor`) back to `tui.toml`, keeping the
//! rest of the file as the user wrote it (comments, order), through a temporary file renamed
//! into place so a crash never leaves half a file.

use std::path::{Path, PathBuf};

use toml_edit::{DocumentMut, Item, Table, value};

/// Where the UI's own files live: `tui.toml` and the custom themes folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UiFiles {
    pub tui_toml: PathBuf,
    pub themes_dir: PathBuf,
}

impl UiFiles {
    /// The files of a kimi-rs home.
    pub fn in_home(home: &Path) -> UiFiles {
        UiFiles {
            tui_toml: home.join("tui.toml"),
            themes_dir: home.join("themes"),
        }
    }
}

/// Sets `key` (in `[table]` when given) to the string `text`.
pub fn save_string(path: &Path, table: Option<&str>, key: &str, text: &str) -> Result<(), String> {
    let shown = path.display();
    let old = match std::fs::read_to_string(path) {
        Ok(old) => old,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(err) => return Err(format!("cannot read {shown}: {err}")),
    };
    let mut doc: DocumentMut = old.parse().map_err(|err| {
        format!("cannot update {shown}: it is not valid TOML ({err}); fix it first")
    })?;
    let target = match table {
        None => doc.as_table_mut(),
        Some(name) => {
            let item = doc.entry(name).or_insert(Item::Table(Table::new()));
            item.as_table_mut()
                .ok_or_else(|| format!("cannot update {shown}: `{name}` is not a table"))?
        }
    };
    target[key] = value(text);
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)
        .map_err(|err| format!("cannot create {}: {err}", dir.display()))?;
    let tmp = dir.join(format!(".tui.toml.{}.tmp", std::process::id()));
    std::fs::write(&tmp, doc.to_string())
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|err| {
            let _ = std::fs::remove_file(&tmp);
            format!("cannot write {shown}: {err}")
        })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn keeps_comments_and_other_keys() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tui.toml");
        std::fs::write(
            &path,
            "# mine\ntheme = \"dark\"\n[status_line]\nitems = [\"model\"]\n",
        )
        .unwrap();
        save_string(&path, None, "theme", "ocean").unwrap();
        save_string(&path, Some("editor"), "command", "nvim").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            "# mine\ntheme = \"ocean\"\n[status_line]\nitems = [\"model\"]\n\n[editor]\ncommand = \"nvim\"\n"
        );
        let fresh = dir.path().join("new/tui.toml");
        save_string(&fresh, None, "theme", "light").unwrap();
        assert_eq!(
            std::fs::read_to_string(&fresh).unwrap(),
            "theme = \"light\"\n"
        );
    }
}
