//! The terminal UI's `/plugins` manager (issue #15, surface.md §1.4): the Installed and
//! Marketplace tabs as pickers (a pick leaves `/plugins info <id>` or `/plugins install <id>`
//! in the prompt), and install, info, enable, disable, remove, the per-server MCP toggle and
//! reload over the same plugin state as `kimi-rs plugin …`. Changes apply to new sessions;
//! `/plugins reload` applies them to this one by reopening it.

use std::path::Path;

use kimi_plugins::{Installer, PluginState};
use kimi_tui::dialogs::PickerItem;

/// What the host does with a `/plugins` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Notice(String),
    Error(String),
    /// A tab: pick a plugin.
    Choose {
        title: String,
        items: Vec<PickerItem>,
    },
    /// Reload the extensions and reopen the session.
    Reload,
}

const USAGE: &str = "use /plugins [list], /plugins marketplace [source], /plugins install \
<folder|zip|url|id>, /plugins info|enable|disable|remove <id>, /plugins mcp enable|disable <id> \
<server> or /plugins reload";

const APPLY: &str = "It applies to new sessions; /plugins reload applies it to this one.";

fn item(label: String, detail: String, value: String) -> PickerItem {
    PickerItem {
        label,
        detail,
        value,
        this_dir: false,
    }
}

/// The Installed tab.
fn installed(home: &Path) -> Answer {
    let state = match PluginState::read(home) {
        Ok(state) => state,
        Err(err) => return Answer::Error(err.to_string()),
    };
    if state.plugins.is_empty() {
        return Answer::Notice(
            "No plugins installed. /plugins marketplace lists what a marketplace offers; \
             /plugins install <folder|zip|url> installs one."
                .to_owned(),
        );
    }
    let items = state
        .plugins
        .iter()
        .map(|(id, record)| {
            item(
                format!(
                    "{id}  {}",
                    if record.enabled {
                        "enabled"
                    } else {
                        "disabled"
                    }
                ),
                format!(
                    "{} · {}",
                    record.version.as_deref().unwrap_or("-"),
                    record.source
                ),
                format!("/plugins info {id}"),
            )
        })
        .collect();
    Answer::Choose {
        title: "Plugins — Installed (/plugins marketplace for the Marketplace tab)".to_owned(),
        items,
    }
}

/// The Marketplace tab.
async fn marketplace(home: &Path, source: Option<String>) -> Answer {
    let Some(source) = crate::plugins::marketplace(source) else {
        return Answer::Error(
            "no marketplace: pass one (/plugins marketplace <url|file>) or set \
             KIMI_CODE_PLUGIN_MARKETPLACE_URL"
                .to_owned(),
        );
    };
    let installer = Installer::new(home, Some(source.clone()));
    let entries = match installer.marketplace_entries().await {
        Ok(entries) => entries,
        Err(err) => return Answer::Error(format!("{err:#}")),
    };
    if entries.is_empty() {
        return Answer::Notice(format!("The marketplace {source} lists no plugins."));
    }
    let installed = PluginState::read(home)
        .map(|s| s.plugins)
        .unwrap_or_default();
    let items = entries
        .into_iter()
        .map(|entry| {
            let mark = if installed.contains_key(&entry.id) {
                "  (installed)"
            } else {
                ""
            };
            item(
                format!(
                    "{}  {}{mark}",
                    entry.id,
                    entry.display_name.as_deref().unwrap_or_default()
                ),
                entry.source.clone(),
                // The entry's own source, so the install needs no marketplace lookup again.
                format!("/plugins install {}", entry.source),
            )
        })
        .collect();
    Answer::Choose {
        title: format!("Plugins — Marketplace {source} (Enter, then Enter again installs)"),
        items,
    }
}

fn toggled(result: Result<(), kimi_plugins::PluginError>, done: String) -> Answer {
    match result {
        Ok(()) => Answer::Notice(format!("{done} {APPLY}")),
        Err(err) => Answer::Error(err.to_string()),
    }
}

fn mcp(home: &Path, action: &str, id: &str, server: &str) -> Answer {
    let enabled = match action {
        "enable" => true,
        "disable" => false,
        _ => return Answer::Error(USAGE.to_owned()),
    };
    let Ok(plugin) = kimi_plugins::load_plugin(&PluginState::managed_dir(home, id)) else {
        return Answer::Error(kimi_plugins::PluginError::NotInstalled(id.to_owned()).to_string());
    };
    if !plugin.mcp_servers.iter().any(|(name, _)| name == server) {
        return Answer::Error(format!(
            "plugin `{id}` has no MCP server `{server}`; /plugins info {id} lists them"
        ));
    }
    toggled(
        PluginState::set_mcp_enabled(home, id, server, enabled),
        format!(
            "MCP server `{server}` of plugin `{id}` {}.",
            if enabled { "enabled" } else { "disabled" }
        ),
    )
}

/// One `/plugins …` line.
pub async fn command(home: &Path, args: &str) -> Answer {
    let words: Vec<&str> = args.split_whitespace().collect();
    match words.as_slice() {
        [] | ["list" | "installed"] => installed(home),
        ["marketplace"] => marketplace(home, None).await,
        ["marketplace", source] => marketplace(home, Some((*source).to_owned())).await,
        ["install", source] => {
            let installer = Installer::new(home, crate::plugins::marketplace(None));
            match installer.install(source).await {
                Ok(report) => {
                    let mut lines = crate::plugins::install_lines(&report);
                    lines.push(APPLY.to_owned());
                    Answer::Notice(lines.join("\n"))
                }
                Err(err) => Answer::Error(format!("{err:#}")),
            }
        }
        ["info", id] => match crate::plugins::info_lines(home, id) {
            Ok(lines) => Answer::Notice(lines.join("\n")),
            Err(err) => Answer::Error(format!("{err:#}")),
        },
        ["enable", id] => toggled(
            PluginState::set_enabled(home, id, true),
            format!("Enabled plugin `{id}`."),
        ),
        ["disable", id] => toggled(
            PluginState::set_enabled(home, id, false),
            format!("Disabled plugin `{id}`."),
        ),
        ["remove", id] => toggled(
            PluginState::remove(home, id),
            format!("Removed plugin `{id}` and its copy."),
        ),
        ["mcp", action, id, server] => mcp(home, action, id, server),
        ["reload"] => Answer::Reload,
        _ => Answer::Error(USAGE.to_owned()),
    }
}
