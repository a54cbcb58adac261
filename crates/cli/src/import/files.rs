//! Importing the files of a Kimi Code home that kimi-rs reads as they are: `mcp.json` (servers
//! merged by name), skill and agent folders, `AGENTS.md`, `SYSTEM.md`, `tui.toml`, the plugin
//! records, and (only when asked) the stored credentials. Nothing kimi-rs already has is
//! overwritten.

use std::path::Path;

use anyhow::Context;
use serde_json::Value;

use super::Report;
use super::config_merge::secret_name;

/// Copy a file or directory tree. Symlinks are copied as the files they point to, so the
/// import does not depend on the Kimi Code home staying where it is.
pub fn copy_tree(from: &Path, to: &Path) -> anyhow::Result<u64> {
    let meta = std::fs::metadata(from).with_context(|| format!("reading {}", from.display()))?;
    if meta.is_dir() {
        std::fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
        let mut files = 0;
        for entry in
            std::fs::read_dir(from).with_context(|| format!("listing {}", from.display()))?
        {
            let entry = entry.with_context(|| format!("listing {}", from.display()))?;
            files += copy_tree(&entry.path(), &to.join(entry.file_name()))?;
        }
        Ok(files)
    } else {
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::copy(from, to)
            .with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
        Ok(1)
    }
}

/// Each entry of `<from>/<dir>` (a skill folder, an agent file) copied to `<to>/<dir>` unless
/// an entry of that name is already there.
pub fn import_entries(from: &Path, to: &Path, dir: &str, report: &mut Report) {
    let source = from.join(dir);
    let Ok(entries) = std::fs::read_dir(&source) else {
        return;
    };
    let mut names: Vec<_> = entries.flatten().map(|e| e.file_name()).collect();
    names.sort();
    for name in names {
        let label = format!("{dir}/{}", name.to_string_lossy());
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        let target = to.join(dir).join(&name);
        if target.exists() {
            report.skipped(&label, "already there");
            continue;
        }
        match copy_tree(&source.join(&name), &target) {
            Ok(_) => report.imported(&label, ""),
            Err(err) => report.failed(&label, &format!("{err:#}")),
        }
    }
}

/// A single file copied unless kimi-rs has its own (then: the same, or kept).
pub fn import_file(from: &Path, to: &Path, name: &str, report: &mut Report) {
    let source = from.join(name);
    let Ok(bytes) = std::fs::read(&source) else {
        return;
    };
    let target = to.join(name);
    match std::fs::read(&target) {
        Ok(existing) if existing == bytes => report.skipped(name, "already there"),
        Ok(_) => report.skipped(name, "kimi-rs has its own; kept it"),
        Err(_) => match target
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .map_err(|err| err.to_string())
            .and_then(|()| {
                kimi_store::fsutil::atomic_write(&target, &bytes).map_err(|err| err.to_string())
            }) {
            Ok(()) => report.imported(name, ""),
            Err(err) => report.failed(name, &err),
        },
    }
}

/// Remove secret-looking `env` and `headers` entries of every server, returning their paths.
fn strip_mcp_secrets(servers: &mut serde_json::Map<String, Value>) -> Vec<String> {
    let mut removed = Vec::new();
    for (name, server) in servers.iter_mut() {
        for field in ["env", "headers"] {
            let Some(map) = server.get_mut(field).and_then(Value::as_object_mut) else {
                continue;
            };
            let secrets: Vec<String> = map.keys().filter(|k| secret_name(k)).cloned().collect();
            for key in secrets {
                map.remove(&key);
                removed.push(format!("{name}.{field}.{key}"));
            }
        }
    }
    removed
}

/// `mcp.json`: servers kimi-rs's file lacks are added by name; the rest of its file is kept.
pub fn import_mcp(from: &Path, to: &Path, with_credentials: bool, report: &mut Report) {
    let source = from.join("mcp.json");
    let Ok(text) = std::fs::read_to_string(&source) else {
        return;
    };
    let mut src: Value = match serde_json::from_str(&text) {
        Ok(value) => value,
        Err(err) => {
            report.failed(
                "mcp.json",
                &format!("{} is not JSON: {err}", source.display()),
            );
            return;
        }
    };
    let Some(src_servers) = src.get_mut("mcpServers").and_then(Value::as_object_mut) else {
        report.skipped("mcp.json", "it lists no mcpServers");
        return;
    };
    if !with_credentials {
        for path in strip_mcp_secrets(src_servers) {
            report.credential_left_out(&format!("mcp.json {path}"));
        }
    }
    let target = to.join("mcp.json");
    let mut dest: Value = match std::fs::read_to_string(&target) {
        Ok(text) => match serde_json::from_str(&text) {
            Ok(value) => value,
            Err(err) => {
                report.failed(
                    "mcp.json",
                    &format!(
                        "{} is not JSON ({err}); fix it and import again",
                        target.display()
                    ),
                );
                return;
            }
        },
        Err(_) => serde_json::json!({ "mcpServers": {} }),
    };
    let Some(dest_obj) = dest.as_object_mut() else {
        report.failed(
            "mcp.json",
            &format!("{} is not a JSON object", target.display()),
        );
        return;
    };
    let dest_servers = dest_obj
        .entry("mcpServers")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    let Some(dest_servers) = dest_servers.as_object_mut() else {
        report.failed(
            "mcp.json",
            &format!("mcpServers in {} is not an object", target.display()),
        );
        return;
    };
    let mut added = 0;
    for (name, server) in src_servers.iter() {
        let label = format!("mcp.json server {name}");
        match dest_servers.get(name) {
            Some(existing) if existing == server => report.skipped(&label, "already there"),
            Some(_) => report.skipped(&label, "kimi-rs has a server of that name; kept it"),
            None => {
                dest_servers.insert(name.clone(), server.clone());
                report.imported(&label, "");
                added += 1;
            }
        }
    }
    if added > 0 {
        let mut bytes = serde_json::to_vec_pretty(&dest).unwrap_or_default();
        bytes.push(b'\n');
        if let Err(err) = kimi_store::fsutil::atomic_write(&target, &bytes) {
            report.failed("mcp.json", &err.to_string());
        }
    }
}

/// `plugins/installed.json` and `plugins/managed/<id>/`: kept under `$KIMI_RS_HOME/plugins/`.
/// kimi-rs loads them from there in new sessions, and the report says so.
pub fn import_plugins(from: &Path, to: &Path, report: &mut Report) {
    let records = from.join("plugins").join("installed.json");
    if !records.is_file() {
        return;
    }
    import_file(from, to, "plugins/installed.json", report);
    import_entries(
        &from.join("plugins"),
        &to.join("plugins"),
        "managed",
        report,
    );
    report.note(
        "Kimi Code plugins were copied to plugins/ under the kimi-rs home and load in new \
         sessions; `kimi-rs plugin list` shows them and `kimi-rs doctor` names any that cannot \
         be loaded",
    );
}

/// `credentials/` (OAuth tokens, MCP tokens), only with `--with-credentials`: files copied
/// with mode 0600 into a 0700 directory.
pub fn import_credentials(from: &Path, to: &Path, with_credentials: bool, report: &mut Report) {
    let source = from.join("credentials");
    if !source.is_dir() {
        return;
    }
    if !with_credentials {
        report.credential_left_out("credentials/ (stored logins)");
        return;
    }
    let target = to.join("credentials");
    if let Err(err) = std::fs::create_dir_all(&target) {
        report.failed(
            "credentials/",
            &format!("creating {}: {err}", target.display()),
        );
        return;
    }
    restrict(&target, 0o700);
    import_entries(from, to, "credentials", report);
    restrict_tree(&target);
}

#[cfg(unix)]
fn restrict(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    if let Err(err) = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)) {
        tracing::warn!("cannot restrict {}: {err}", path.display());
    }
}

#[cfg(not(unix))]
fn restrict(_path: &Path, _mode: u32) {}

fn restrict_tree(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            restrict(&path, 0o700);
            restrict_tree(&path);
        } else {
            restrict(&path, 0o600);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcp_servers_merge_by_name_without_their_secrets() {
        let from = tempfile::tempdir().unwrap();
        let to = tempfile::tempdir().unwrap();
        std::fs::write(
            from.path().join("mcp.json"),
            r#"{"mcpServers": {
                "github": {"command": "gh-mcp", "env": {"GITHUB_TOKEN": "ghp_x", "LOG": "1"}},
                "mine": {"url": "http://new"}
            }}"#,
        )
        .unwrap();
        std::fs::write(
            to.path().join("mcp.json"),
            r#"{"mcpServers": {"mine": {"url": "http://kept"}}, "other": true}"#,
        )
        .unwrap();
        let mut report = Report::default();
        import_mcp(from.path(), to.path(), false, &mut report);
        let merged: Value =
            serde_json::from_slice(&std::fs::read(to.path().join("mcp.json")).unwrap()).unwrap();
        assert_eq!(merged["mcpServers"]["mine"]["url"], "http://kept");
        assert_eq!(merged["mcpServers"]["github"]["env"]["LOG"], "1");
        assert!(
            merged["mcpServers"]["github"]["env"]
                .get("GITHUB_TOKEN")
                .is_none()
        );
        assert_eq!(merged["other"], true);
        let text = report.render();
        assert!(text.contains("imported mcp.json server github"), "{text}");
        assert!(text.contains("skipped  mcp.json server mine"), "{text}");
        assert!(text.contains("mcp.json github.env.GITHUB_TOKEN"), "{text}");

        // Again: nothing new.
        let mut again = Report::default();
        import_mcp(from.path(), to.path(), false, &mut again);
        assert_eq!(again.imported_count(), 0, "{}", again.render());
    }

    #[test]
    fn entries_already_there_are_not_overwritten() {
        let from = tempfile::tempdir().unwrap();
        let to = tempfile::tempdir().unwrap();
        for (dir, body) in [(from.path(), "theirs"), (to.path(), "mine")] {
            std::fs::create_dir_all(dir.join("agents")).unwrap();
            std::fs::write(dir.join("agents/reviewer.md"), body).unwrap();
        }
        std::fs::write(from.path().join("agents/writer.md"), "new").unwrap();
        let mut report = Report::default();
        import_entries(from.path(), to.path(), "agents", &mut report);
        assert_eq!(
            std::fs::read_to_string(to.path().join("agents/reviewer.md")).unwrap(),
            "mine"
        );
        assert_eq!(
            std::fs::read_to_string(to.path().join("agents/writer.md")).unwrap(),
            "new"
        );
        assert_eq!((report.imported_count(), report.skipped_count()), (1, 1));
    }
}
