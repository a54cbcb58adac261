//! `kimi-rs plugin …` (install, list, info, enable, disable, remove, marketplace, mcp) and
//! what a launch takes from the enabled plugins that the engine parses itself: their hooks,
//! bound to the plugin root.

use std::path::Path;

use anyhow::Context;
use kimi_core::hooks::HookDef;
use kimi_plugins::install::MarketEntry;
use kimi_plugins::{Installer, LoadedPlugin, PluginSet, PluginState};

use crate::cli::PluginCommand;

/// The marketplace a command uses: the flag, else `KIMI_CODE_PLUGIN_MARKETPLACE_URL`.
pub(crate) fn marketplace(flag: Option<String>) -> Option<String> {
    flag.or_else(|| {
        std::env::var("KIMI_CODE_PLUGIN_MARKETPLACE_URL")
            .ok()
            .filter(|v| !v.trim().is_empty())
    })
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

pub fn run(command: PluginCommand) -> anyhow::Result<u8> {
    let home = kimi_store::home_from_env()?;
    match command {
        PluginCommand::Install {
            source,
            marketplace: flag,
        } => install(&home, &source, marketplace(flag)),
        PluginCommand::List { json } => list(&home, json),
        PluginCommand::Info { id } => info(&home, &id),
        PluginCommand::Enable { id } => {
            PluginState::set_enabled(&home, &id, true)?;
            println!("Enabled plugin `{id}`; it applies to new sessions.");
            Ok(0)
        }
        PluginCommand::Disable { id } => {
            PluginState::set_enabled(&home, &id, false)?;
            println!("Disabled plugin `{id}`; new sessions start without it.");
            Ok(0)
        }
        PluginCommand::Remove { id } => {
            PluginState::remove(&home, &id)?;
            println!("Removed plugin `{id}` and its copy.");
            Ok(0)
        }
        PluginCommand::Marketplace { source } => {
            let installer = Installer::new(&home, marketplace(source));
            let entries = runtime()?.block_on(installer.marketplace_entries())?;
            print_market(&entries);
            Ok(0)
        }
        PluginCommand::Mcp { action, id, server } => {
            let enabled = action == "enable";
            let plugin = kimi_plugins::load_plugin(&PluginState::managed_dir(&home, &id))
                .map_err(|_| kimi_plugins::PluginError::NotInstalled(id.clone()))?;
            if !plugin.mcp_servers.iter().any(|(name, _)| name == &server) {
                anyhow::bail!(
                    "plugin `{id}` has no MCP server `{server}`; `kimi-rs plugin info {id}` lists them"
                );
            }
            PluginState::set_mcp_enabled(&home, &id, &server, enabled)?;
            println!(
                "MCP server `{server}` of plugin `{id}` {} for new sessions.",
                if enabled { "enabled" } else { "disabled" }
            );
            Ok(0)
        }
    }
}

fn print_market(entries: &[MarketEntry]) {
    if entries.is_empty() {
        println!("The marketplace lists no plugins.");
    }
    for entry in entries {
        let name = entry.display_name.as_deref().unwrap_or(&entry.id);
        println!("{}  {name}  {}", entry.id, entry.source);
    }
}

fn install(home: &Path, source: &str, marketplace: Option<String>) -> anyhow::Result<u8> {
    let installer = Installer::new(home, marketplace);
    let report = runtime()?.block_on(installer.install(source))?;
    for line in install_lines(&report) {
        println!("{line}");
    }
    println!("It applies to new sessions.");
    Ok(0)
}

/// What an install did, one line each (the CLI prints them, `/plugins install` shows them).
pub fn install_lines(report: &kimi_plugins::install::InstallReport) -> Vec<String> {
    let plugin = &report.plugin;
    let mut lines = vec![
        format!(
            "{} plugin `{}`{} into {}",
            if report.replaced {
                "Reinstalled"
            } else {
                "Installed"
            },
            plugin.id(),
            plugin
                .manifest
                .version
                .as_deref()
                .map(|v| format!(" {v}"))
                .unwrap_or_default(),
            plugin.root().display()
        ),
        format!("  {}", summary(plugin)),
    ];
    for skipped in &report.skipped {
        lines.push(format!("  not copied: {skipped}"));
    }
    for diagnostic in &plugin.diagnostics {
        lines.push(format!("  warning: {diagnostic}"));
    }
    lines
}

/// "2 skill(s), 1 command(s), …".
fn summary(plugin: &LoadedPlugin) -> String {
    format!(
        "{} skill(s), {} command(s), {} hook(s), {} MCP server(s), {} agent folder(s), {}",
        plugin.skills.len(),
        plugin.commands.len(),
        plugin.hooks().len(),
        plugin.mcp_servers.len(),
        plugin.manifest.agents.len(),
        if plugin.prompt.is_empty() {
            "no prompt text"
        } else {
            "prompt text"
        }
    )
}

fn list(home: &Path, json: bool) -> anyhow::Result<u8> {
    let state = PluginState::read(home)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&state.plugins)?);
        return Ok(0);
    }
    if state.plugins.is_empty() {
        println!(
            "No plugins installed. Install one with `kimi-rs plugin install <folder|zip|url>`."
        );
    }
    for (id, record) in &state.plugins {
        println!(
            "{id}  {}  {}  {}",
            if record.enabled {
                "enabled"
            } else {
                "disabled"
            },
            record.version.as_deref().unwrap_or("-"),
            record.source
        );
    }
    Ok(0)
}

fn info(home: &Path, id: &str) -> anyhow::Result<u8> {
    for line in info_lines(home, id)? {
        println!("{line}");
    }
    Ok(0)
}

/// What a plugin adds, one line each: `plugin info` and `/plugins info`.
pub fn info_lines(home: &Path, id: &str) -> anyhow::Result<Vec<String>> {
    let mut lines = Vec::new();
    let state = PluginState::read(home)?;
    let record = state
        .plugins
        .get(id)
        .ok_or_else(|| kimi_plugins::PluginError::NotInstalled(id.to_owned()))?;
    let plugin = kimi_plugins::load_plugin(&PluginState::managed_dir(home, id))?;
    let manifest = &plugin.manifest;
    lines.push(format!("{} ({id})", manifest.display_name));
    if let Some(description) = &manifest.description {
        lines.push(format!("  {description}"));
    }
    lines.push(format!(
        "  {}, version {}, from {}",
        if record.enabled {
            "enabled"
        } else {
            "disabled"
        },
        record.version.as_deref().unwrap_or("-"),
        record.source
    ));
    lines.push(format!("  folder: {}", manifest.root.display()));
    for skill in &plugin.skills {
        lines.push(format!("  skill /{}: {}", skill.name, skill.description));
    }
    for command in &plugin.commands {
        lines.push(format!(
            "  command /{}: {}",
            command.slash_name(),
            command.description
        ));
    }
    for hook in plugin.hooks() {
        lines.push(format!("  hook: {hook}"));
    }
    for (name, server) in &plugin.mcp_servers {
        let off = record.mcp.get(name) == Some(&false) || !server.enabled;
        lines.push(format!(
            "  MCP server {name} ({}){}",
            server.transport.kind(),
            if off { " — disabled" } else { "" }
        ));
    }
    for dir in &manifest.agents {
        lines.push(format!("  agents: {}", dir.display()));
    }
    if !plugin.prompt.is_empty() {
        lines.push(format!("  prompt text: {} bytes", plugin.prompt.len()));
    }
    for diagnostic in &plugin.diagnostics {
        lines.push(format!("  warning: {diagnostic}"));
    }
    Ok(lines)
}

/// The enabled plugins' hooks, parsed like `[[hooks]]` and bound to their plugin root (cwd
/// there, `KIMI_PLUGIN_ROOT` and the home in their environment). Invalid entries are warnings
/// naming the plugin.
pub fn plugin_hooks(plugins: &PluginSet, home: &Path) -> (Vec<HookDef>, Vec<String>) {
    let mut hooks = Vec::new();
    let mut warnings = Vec::new();
    for plugin in &plugins.plugins {
        if plugin.hooks().is_empty() {
            continue;
        }
        let list = serde_json::Value::Array(plugin.hooks().to_vec());
        let value = match toml::Value::try_from(serde_json::json!({ "hooks": list })) {
            Ok(value) => value,
            Err(e) => {
                warnings.push(format!(
                    "plugin `{}`: its hooks were not loaded: {e}",
                    plugin.id()
                ));
                continue;
            }
        };
        let loaded = kimi_core::hooks::load_hooks_from_value(&value);
        for error in &loaded.errors {
            warnings.push(format!("plugin `{}`: {error}", plugin.id()));
        }
        hooks.extend(
            loaded
                .hooks
                .hooks()
                .iter()
                .cloned()
                .map(|hook| hook.for_plugin(plugin.root(), home)),
        );
    }
    (hooks, warnings)
}
