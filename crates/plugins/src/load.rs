//! What a plugin contributes, read from its root: skills (source `Plugin`, wrapped with its
//! `skillInstructions`), commands, MCP servers (the `mcp.json` schema, `./` paths inside the
//! root), hooks (raw; the engine validates them), agent folders and prompt text. A
//! [`PluginSet`] is every enabled plugin of one session: the installed ones and, for a trusted
//! folder only, the project's.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use kimi_mcp::config::{ServerConfig, TransportConfig};
use kimi_skills::{PluginSkill, Skill, SkillSource};
use serde_json::Value;

use crate::commands::{PluginCommand, discover_commands};
use crate::error::PluginError;
use crate::manifest::{Manifest, read_manifest, resolve_inside};
use crate::state::PluginState;

/// All plugins' prompt text together stays within this many bytes per session.
pub const MAX_TOTAL_PROMPT_BYTES: usize = 64 * 1024;
/// Where a project keeps its plugins (each a folder with a manifest).
pub const PROJECT_PLUGIN_DIR: &str = ".kimi-code/plugins";

/// One plugin, read and checked.
#[derive(Debug, Clone)]
pub struct LoadedPlugin {
    pub manifest: Manifest,
    pub skills: Vec<Skill>,
    pub commands: Vec<PluginCommand>,
    /// Its MCP servers by name (stdio servers run in the plugin root unless they say otherwise).
    pub mcp_servers: Vec<(String, ServerConfig)>,
    /// The prompt text it adds (its `systemPrompt`, `systemPromptPath` and `sessionStart.skill`).
    pub prompt: String,
    /// What was ignored and why (from the manifest and from loading).
    pub diagnostics: Vec<String>,
    /// Found in the project's `.kimi-code/plugins/`, not installed.
    pub project: bool,
}

impl LoadedPlugin {
    pub fn id(&self) -> &str {
        &self.manifest.name
    }

    pub fn root(&self) -> &Path {
        &self.manifest.root
    }

    /// The hook entries as written, each to be bound to [`LoadedPlugin::root`].
    pub fn hooks(&self) -> &[Value] {
        &self.manifest.hooks
    }
}

/// Resolve a stdio server's `./` command and its `cwd` inside the plugin root.
fn pin_server(
    manifest: &Manifest,
    name: &str,
    server: &mut ServerConfig,
) -> Result<(), PluginError> {
    let TransportConfig::Stdio { command, cwd, .. } = &mut server.transport else {
        return Ok(());
    };
    let root = &manifest.root;
    if command.starts_with("./") || command.starts_with("../") {
        let field = format!("mcpServers.{name}.command");
        match resolve_inside(root, &manifest.path, &field, command)? {
            Some(path) => *command = path.display().to_string(),
            None => {
                return Err(PluginError::Manifest {
                    path: manifest.path.clone(),
                    message: format!("`{field}` \"{command}\" does not exist in the plugin"),
                });
            }
        }
    }
    if let Some(dir) = cwd.as_mut() {
        let field = format!("mcpServers.{name}.cwd");
        let escapes = || PluginError::PathEscapes {
            path: manifest.path.clone(),
            field: field.clone(),
            value: dir_text(dir),
        };
        // The parser joined a relative `cwd` onto the root already.
        let rel = dir.strip_prefix(root).map_err(|_| escapes())?.to_path_buf();
        let rel_text = if rel.as_os_str().is_empty() {
            ".".to_owned()
        } else {
            rel.display().to_string()
        };
        if let Some(real) = resolve_inside(root, &manifest.path, &field, &rel_text)? {
            *dir = real;
        }
    }
    Ok(())
}

fn dir_text(dir: &Path) -> String {
    dir.display().to_string()
}

fn mcp_servers(manifest: &Manifest) -> Result<Vec<(String, ServerConfig)>, PluginError> {
    let Some(servers) = &manifest.mcp_servers else {
        return Ok(Vec::new());
    };
    let text = serde_json::json!({ "mcpServers": servers }).to_string();
    let parsed = kimi_mcp::config::parse_file(&text, &manifest.path, Some(&manifest.root))
        .map_err(|e| PluginError::Manifest {
            path: manifest.path.clone(),
            message: format!("mcpServers: {e}"),
        })?;
    // A plugin is installed whole or not at all: a bad server entry refuses the manifest.
    if !parsed.problems.is_empty() {
        let problems: Vec<String> = parsed.problems.iter().map(ToString::to_string).collect();
        return Err(PluginError::Manifest {
            path: manifest.path.clone(),
            message: format!("mcpServers: {}", problems.join("; ")),
        });
    }
    for warning in &parsed.warnings {
        tracing::warn!(plugin = %manifest.path.display(), "mcpServers: {warning}");
    }
    let mut out = Vec::with_capacity(parsed.servers.len());
    for (name, mut server) in parsed.servers {
        pin_server(manifest, &name, &mut server)?;
        out.push((name, server));
    }
    Ok(out)
}

fn skills(manifest: &Manifest, diagnostics: &mut Vec<String>) -> Vec<Skill> {
    let mut out: Vec<Skill> = Vec::new();
    for path in &manifest.skills {
        let (found, warnings) = kimi_skills::discover_path(path, SkillSource::Plugin);
        diagnostics.extend(
            warnings
                .into_iter()
                .map(|w| format!("{}: {w}", manifest.name)),
        );
        for mut skill in found {
            let inside = std::fs::canonicalize(&skill.path)
                .is_ok_and(|real| real.starts_with(&manifest.root));
            if !inside {
                diagnostics.push(format!(
                    "{}: skill {} leads outside the plugin and was skipped",
                    manifest.name,
                    skill.path.display()
                ));
                continue;
            }
            if out.iter().any(|s| s.name.eq_ignore_ascii_case(&skill.name)) {
                continue;
            }
            skill.plugin = Some(PluginSkill {
                id: manifest.name.clone(),
                instructions: manifest.skill_instructions.clone(),
            });
            out.push(skill);
        }
    }
    out
}

fn prompt(manifest: &Manifest, skills: &[Skill], diagnostics: &mut Vec<String>) -> String {
    let mut parts: Vec<String> = manifest
        .prompt_text
        .iter()
        .map(|t| t.trim().to_owned())
        .collect();
    if let Some(name) = &manifest.session_start_skill {
        match skills.iter().find(|s| s.name.eq_ignore_ascii_case(name)) {
            Some(skill) => parts.push(format!(
                "<plugin-session-start plugin=\"{}\" skill=\"{}\">\n{}\n</plugin-session-start>",
                manifest.name, skill.name, skill.content
            )),
            None => diagnostics.push(format!(
                "{}: `sessionStart.skill` \"{name}\" is not one of the plugin's skills; it was ignored",
                manifest.name
            )),
        }
    }
    if parts.is_empty() {
        return String::new();
    }
    format!(
        "## Plugin: {} ({})\n\n{}",
        manifest.display_name,
        manifest.name,
        parts.join("\n\n")
    )
}

/// Read the plugin at `root`: a missing or invalid manifest and any path leading out of the
/// root are errors; everything else that cannot be used is a diagnostic.
pub fn load_plugin(root: &Path) -> Result<LoadedPlugin, PluginError> {
    let manifest = read_manifest(root)?;
    let mut diagnostics = manifest.diagnostics.clone();
    let mcp_servers = mcp_servers(&manifest)?;
    let skills = skills(&manifest, &mut diagnostics);
    let (commands, warnings) =
        discover_commands(&manifest.name, &manifest.root, &manifest.commands);
    diagnostics.extend(warnings);
    let prompt = prompt(&manifest, &skills, &mut diagnostics);
    Ok(LoadedPlugin {
        manifest,
        skills,
        commands,
        mcp_servers,
        prompt,
        diagnostics,
        project: false,
    })
}

/// The project's plugins (`<project root>/.kimi-code/plugins/<name>/`). They run code (hooks,
/// MCP servers), so they load only when the folder is `trusted`; otherwise the warning says
/// what was skipped.
pub fn load_project_plugins(cwd: &Path, trusted: bool) -> (Vec<LoadedPlugin>, Vec<String>) {
    let dir = kimi_skills::project_root(cwd).join(PROJECT_PLUGIN_DIR);
    let Ok(read) = std::fs::read_dir(&dir) else {
        return (Vec::new(), Vec::new());
    };
    let mut roots: Vec<PathBuf> = read
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    roots.sort();
    if roots.is_empty() {
        return (Vec::new(), Vec::new());
    }
    if !trusted {
        return (
            Vec::new(),
            vec![format!(
                "{} project plugin(s) in {} were not loaded: this folder is not trusted (run `kimi-rs trust` to trust it, or pass --trust-workspace for one run)",
                roots.len(),
                dir.display()
            )],
        );
    }
    let mut plugins = Vec::new();
    let mut warnings = Vec::new();
    for root in roots {
        match load_plugin(&root) {
            Ok(mut plugin) => {
                plugin.project = true;
                plugins.push(plugin);
            }
            Err(e) => warnings.push(format!("project plugin not loaded: {e}")),
        }
    }
    (plugins, warnings)
}

/// The plugins of one session.
#[derive(Debug, Clone, Default)]
pub struct PluginSet {
    pub plugins: Vec<LoadedPlugin>,
    /// Plugins that could not be loaded and what each ignored, for the front end to show.
    pub warnings: Vec<String>,
}

impl PluginSet {
    /// The enabled installed plugins of `home` plus, when `trusted`, the project's.
    pub fn load(home: &Path, cwd: &Path, trusted: bool) -> PluginSet {
        let mut set = PluginSet::default();
        let state = match PluginState::read(home) {
            Ok(state) => state,
            Err(e) => {
                set.warnings.push(format!("no plugins loaded: {e}"));
                return set;
            }
        };
        for (id, record) in &state.plugins {
            if !record.enabled {
                continue;
            }
            let root = PluginState::managed_dir(home, id);
            match load_plugin(&root) {
                Ok(mut plugin) if plugin.id() == id => {
                    for (name, server) in &mut plugin.mcp_servers {
                        if record.mcp.get(name) == Some(&false) {
                            server.enabled = false;
                        }
                    }
                    set.plugins.push(plugin);
                }
                Ok(plugin) => set.warnings.push(format!(
                    "plugin `{id}` not loaded: its copy in {} now names itself `{}`; reinstall it with `kimi-rs plugin install`",
                    root.display(),
                    plugin.id()
                )),
                Err(e) => set.warnings.push(format!(
                    "plugin `{id}` not loaded: {e}; reinstall it with `kimi-rs plugin install`"
                )),
            }
        }
        let (project, warnings) = load_project_plugins(cwd, trusted);
        set.warnings.extend(warnings);
        for plugin in project {
            if set.plugins.iter().any(|p| p.id() == plugin.id()) {
                set.warnings.push(format!(
                    "project plugin `{}` in {} was not loaded: an installed plugin has that id",
                    plugin.id(),
                    plugin.root().display()
                ));
            } else {
                set.plugins.push(plugin);
            }
        }
        for plugin in &set.plugins {
            set.warnings.extend(plugin.diagnostics.iter().cloned());
        }
        set
    }

    pub fn is_empty(&self) -> bool {
        self.plugins.is_empty()
    }

    /// Every plugin skill (for skill discovery's plugin source).
    pub fn skills(&self) -> Vec<Skill> {
        self.plugins
            .iter()
            .flat_map(|p| p.skills.iter().cloned())
            .collect()
    }

    /// Every plugin command.
    pub fn commands(&self) -> Vec<PluginCommand> {
        self.plugins
            .iter()
            .flat_map(|p| p.commands.iter().cloned())
            .collect()
    }

    /// Every plugin's MCP servers; a name used twice keeps the first and warns.
    pub fn mcp_servers(
        &self,
        taken: &BTreeSet<String>,
    ) -> (Vec<(String, ServerConfig)>, Vec<String>) {
        let mut seen = taken.clone();
        let mut out = Vec::new();
        let mut warnings = Vec::new();
        for plugin in &self.plugins {
            for (name, server) in &plugin.mcp_servers {
                if seen.insert(name.clone()) {
                    out.push((name.clone(), server.clone()));
                } else {
                    warnings.push(format!(
                        "plugin `{}`: MCP server `{name}` was not started: a server of that name is already configured",
                        plugin.id()
                    ));
                }
            }
        }
        (out, warnings)
    }

    /// Agent folders the plugins contribute.
    pub fn agent_dirs(&self) -> Vec<PathBuf> {
        self.plugins
            .iter()
            .flat_map(|p| p.manifest.agents.iter().cloned())
            .collect()
    }

    /// The system prompt's `plugin_sections`, within [`MAX_TOTAL_PROMPT_BYTES`]: plugins whose
    /// text would go past it are left out, with a warning.
    pub fn prompt_sections(&self) -> (String, Vec<String>) {
        let mut sections = Vec::new();
        let mut warnings = Vec::new();
        let mut total = 0;
        for plugin in &self.plugins {
            if plugin.prompt.is_empty() {
                continue;
            }
            if total + plugin.prompt.len() > MAX_TOTAL_PROMPT_BYTES {
                warnings.push(format!(
                    "plugin `{}`: its prompt text was left out: all plugins' prompt text together may not pass {MAX_TOTAL_PROMPT_BYTES} bytes",
                    plugin.id()
                ));
                continue;
            }
            total += plugin.prompt.len();
            sections.push(plugin.prompt.clone());
        }
        if sections.is_empty() {
            return (String::new(), warnings);
        }
        (
            format!("\n# Plugins\n\n{}\n", sections.join("\n\n")),
            warnings,
        )
    }
}
