//! The depth-limited directory listing that gives the model a first look at the project:
//! up to 30 entries at the root and 10 inside each child directory; hidden and VCS
//! directories are shown but not opened.

use std::path::Path;

const ROOT_ENTRIES: usize = 30;
const CHILD_ENTRIES: usize = 10;

fn sorted_entries(dir: &Path) -> Vec<(String, bool)> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut entries: Vec<(String, bool)> = read
        .filter_map(Result::ok)
        .map(|e| {
            let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
            (e.file_name().to_string_lossy().into_owned(), is_dir)
        })
        .collect();
    // Directories first, then files, each alphabetically: the shape of a project reads best so.
    entries.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    entries
}

fn push_limited(out: &mut Vec<String>, entries: &[(String, bool)], limit: usize, indent: &str) {
    for (name, is_dir) in entries.iter().take(limit) {
        out.push(format!("{indent}{name}{}", if *is_dir { "/" } else { "" }));
    }
    if entries.len() > limit {
        out.push(format!("{indent}… {} more", entries.len() - limit));
    }
}

pub fn cwd_listing(cwd: &Path) -> String {
    let mut out = Vec::new();
    let root = sorted_entries(cwd);
    for (name, is_dir) in root.iter().take(ROOT_ENTRIES) {
        if !*is_dir {
            out.push(name.clone());
            continue;
        }
        out.push(format!("{name}/"));
        if name.starts_with('.') || name == "node_modules" || name == "target" {
            continue;
        }
        push_limited(
            &mut out,
            &sorted_entries(&cwd.join(name)),
            CHILD_ENTRIES,
            "  ",
        );
    }
    if root.len() > ROOT_ENTRIES {
        out.push(format!("… {} more", root.len() - ROOT_ENTRIES));
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_and_collapsed_hidden_dirs() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::create_dir_all(root.join(".git/objects")).unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        for i in 0..12 {
            std::fs::write(root.join(format!("src/f{i:02}.rs")), "").unwrap();
        }
        std::fs::write(root.join("README.md"), "").unwrap();
        let text = cwd_listing(root);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], ".git/");
        assert_eq!(lines[1], "src/");
        assert_eq!(lines[2], "  f00.rs");
        assert!(lines.contains(&"  … 2 more"));
        assert_eq!(lines.last(), Some(&"README.md"));
        assert!(!text.contains("objects"));
    }
}
