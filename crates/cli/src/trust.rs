//! Workspace trust at launch and `kimi-rs trust`: whether this folder's own project items
//! (project MCP servers today; project environments and plugins join [`project_items`]) may
//! run. The decisions live in `kimi_config::trust`.
//!
//! - The interactive launch asks once per folder, on the terminal before the TUI takes the
//!   screen, listing each command line that would run; the answer (yes or no) is remembered.
//! - Print mode, ACP and web never ask and never run untrusted project commands: the skipped
//!   items are named where their warnings go, with how to trust (`kimi-rs trust DIR`, or
//!   `--trust-workspace` for one run).

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use kimi_config::trust::{self, Decision};

/// One project item a trusted folder would run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectItem {
    /// What it is, e.g. `MCP server \`github\``.
    pub what: String,
    /// What would run or be contacted: a command line or a URL.
    pub runs: String,
    /// The file it comes from.
    pub source: PathBuf,
}

/// The folder trust is recorded for when this launch's cwd is `cwd`: its git root, else itself.
pub fn folder_for(cwd: &Path) -> PathBuf {
    kimi_skills::project_root(cwd)
}

/// Every project item that loads only in a trusted folder, for a session in `cwd`.
pub fn project_items(home: &Path, cwd: &Path) -> Vec<ProjectItem> {
    let config = kimi_mcp::load_config(home, cwd, false);
    let mut items: Vec<ProjectItem> = config
        .untrusted
        .iter()
        .map(|(name, server)| ProjectItem {
            what: format!("MCP server `{name}`"),
            runs: server.describe(),
            source: server.source.clone(),
        })
        .collect();
    // Project plugins bring hooks and servers of their own: each folder is named so the
    // question covers them too.
    let dir = folder_for(cwd).join(kimi_plugins::load::PROJECT_PLUGIN_DIR);
    if let Ok(read) = std::fs::read_dir(&dir) {
        let mut roots: Vec<PathBuf> = read
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        roots.sort();
        items.extend(roots.into_iter().map(|root| ProjectItem {
            what: "project plugin".to_owned(),
            runs: "its hooks, MCP servers and commands".to_owned(),
            source: root,
        }));
    }
    items
}

/// The lines naming skipped items and how to trust the folder.
pub fn untrusted_notice(folder: &Path, items: &[ProjectItem]) -> String {
    let mut text = format!(
        "this folder is not trusted, so its project commands were not run:{}",
        items
            .iter()
            .map(|item| format!(
                "\n  - {} ({}) from {}",
                item.what,
                item.runs,
                item.source.display()
            ))
            .collect::<String>()
    );
    text.push_str(&format!(
        "\nTo run them, trust the folder with `kimi-rs trust {}` (or pass --trust-workspace for one run).",
        folder.display()
    ));
    text
}

/// Whether a launch that cannot ask (print mode, ACP, web) may run `cwd`'s project items:
/// `--trust-workspace`, or a recorded "trusted". An unreadable trust file is a warning and
/// means no.
pub fn trusted_without_asking(home: &Path, cwd: &Path, flag: bool) -> (bool, Option<String>) {
    if flag {
        return (true, None);
    }
    match trust::is_trusted(home, cwd) {
        Ok(trusted) => (trusted, None),
        Err(err) => (false, Some(err.to_string())),
    }
}

/// The interactive launch's answer: a recorded decision, `--trust-workspace`, or (when the
/// folder was never decided and has project items) the user's answer on the terminal, which
/// is recorded. Returns whether it is trusted and any warning to show.
pub fn ask_on_terminal(home: &Path, cwd: &Path, flag: bool) -> (bool, Option<String>) {
    if flag {
        return (true, None);
    }
    let decision = match trust::decision(home, cwd) {
        Ok(decision) => decision,
        Err(err) => return (false, Some(err.to_string())),
    };
    match decision {
        Decision::Trusted => return (true, None),
        Decision::Untrusted => return (false, None),
        Decision::Unknown => {}
    }
    let items = project_items(home, cwd);
    if items.is_empty() || !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return (false, None);
    }
    let folder = folder_for(cwd);
    let mut err = std::io::stderr().lock();
    let _ = writeln!(
        err,
        "{} has project settings that run commands on your machine:",
        folder.display()
    );
    for item in &items {
        let _ = writeln!(
            err,
            "  - {}: {}\n    from {}",
            item.what,
            item.runs,
            item.source.display()
        );
    }
    let _ = write!(
        err,
        "Only trust folders whose contents you trust. Trust this folder and run them? [y/N] "
    );
    let _ = err.flush();
    drop(err);
    let mut answer = String::new();
    if let Err(e) = std::io::stdin().lock().read_line(&mut answer) {
        return (false, Some(format!("cannot read the trust answer: {e}")));
    }
    let yes = matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes");
    match trust::set(home, &folder, yes) {
        Ok(_) if yes => (true, None),
        Ok(_) => (
            false,
            Some(format!(
                "not trusted: the project commands of {} stay off (asked once; `kimi-rs trust {}` changes it).",
                folder.display(),
                folder.display()
            )),
        ),
        Err(e) => (yes, Some(e.to_string())),
    }
}

/// `kimi-rs trust [DIR] [--untrust] [--list]`.
pub fn run(dir: Option<PathBuf>, untrust: bool, list: bool) -> anyhow::Result<u8> {
    let home = kimi_store::home_from_env()?;
    if list {
        let records = trust::list(&home)?;
        if records.is_empty() {
            println!("No folder is trusted or untrusted yet. Trust one with `kimi-rs trust DIR`.");
        }
        for record in records {
            let word = if record.trusted {
                "trusted  "
            } else {
                "untrusted"
            };
            println!("{word} {}", record.folder.display());
        }
        return Ok(0);
    }
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let folder = match dir {
        Some(dir) => cwd.join(dir),
        None => folder_for(&cwd),
    };
    let stored = trust::set(&home, &folder, !untrust)?;
    let items = project_items(&home, &stored);
    if untrust {
        println!(
            "Not trusted: {}. Its project commands will not run.",
            stored.display()
        );
    } else {
        println!(
            "Trusted: {}. New sessions there run its project commands.",
            stored.display()
        );
    }
    for item in items {
        println!(
            "  - {} ({}) from {}",
            item.what,
            item.runs,
            item.source.display()
        );
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_notice_lists_each_item_and_the_command_to_trust() {
        let items = vec![ProjectItem {
            what: "MCP server `x`".to_owned(),
            runs: "stdio: sh -c 'touch f'".to_owned(),
            source: PathBuf::from("/repo/.mcp.json"),
        }];
        assert_eq!(
            untrusted_notice(Path::new("/repo"), &items),
            "this folder is not trusted, so its project commands were not run:\n  - MCP server `x` (stdio: sh -c 'touch f') from /repo/.mcp.json\nTo run them, trust the folder with `kimi-rs trust /repo` (or pass --trust-workspace for one run)."
        );
    }
}
