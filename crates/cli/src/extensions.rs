//! What a launch adds to its sessions beyond the built-in tools: the skill catalog (its
//! listing in the system prompt, the `Skill` tool, `/skill:name` commands), the enabled
//! plugins (their skills, `/<plugin>:<command>` commands, hooks, MCP servers, agents and prompt
//! text) and the MCP servers of `mcp.json` (their tools). Loaded once per front end; problems are warnings, never fatal.
//! MCP servers connect in the background: loading never waits for them, their tools join the
//! sessions when ready, and [`Extensions::report_mcp`] / [`Extensions::mcp_progress`] tell the
//! front end what failed.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use kimi_config::Config;
use kimi_core::host::{McpLoginStarted, SessionExtras};
use kimi_core::session::SessionExtensions;
use kimi_mcp::{McpManager, McpProgress};
use kimi_plugins::{PluginCommand, PluginSet};
use kimi_protocol::ContentPart;
use kimi_protocol::host::{McpServerEntry, McpServerState, McpStatus};
use kimi_protocol::ops::Op;
use kimi_protocol::origin::{KnownOrigin, Origin};
use kimi_skills::{BuiltinSkills, DiscoverOptions, SkillCatalog, SkillTool};

/// Skills, plugins and MCP servers of one launch.
pub struct Extensions {
    pub skills: Arc<SkillCatalog>,
    /// The enabled plugins' `/<plugin>:<command>` commands.
    pub plugin_commands: Vec<PluginCommand>,
    /// The enabled plugins' hooks, bound to their roots.
    plugin_hooks: Vec<kimi_core::hooks::HookDef>,
    /// The enabled plugins' prompt text (the system prompt's `plugin_sections`).
    plugin_sections: String,
    /// Agent folders the enabled plugins add.
    plugin_agent_dirs: Vec<PathBuf>,
    pub mcp: Option<McpManager>,
    /// Where the MCP servers' tools arrive as each one connects (shared by every session).
    late_tools: kimi_tools::LateTools,
    /// Skill files and MCP servers that could not be loaded, for the front end to show.
    pub warnings: Vec<String>,
    /// MCP config files and entries that could not be loaded (each disabled only itself).
    pub mcp_problem: Option<String>,
    /// Where MCP servers are configured (surface.md §10), shown by `/mcp` when there are none.
    pub mcp_config_files: Vec<String>,
    /// WebSearch (only when a search service exists) and FetchURL through a fetch service
    /// (`[services]`, `KIMI_WEB_*`, the Kimi login), replacing the local-only FetchURL.
    service_tools: Vec<Arc<dyn kimi_tools::Tool>>,
}

fn service_tools(home: &Path, config: &Config) -> Vec<Arc<dyn kimi_tools::Tool>> {
    kimi_auth::services::tools(home, config, &|name| std::env::var(name).ok())
}

/// Where MCP servers are configured (surface.md §10): the user file, then the project's.
fn mcp_config_files(home: &Path) -> Vec<String> {
    vec![
        home.join("mcp.json").display().to_string(),
        ".kimi-code/mcp.json".to_owned(),
        ".mcp.json (at the git root)".to_owned(),
    ]
}

/// `extra_skill_dirs` of the parsed config.
fn extra_skill_dirs(config: &Config) -> Vec<PathBuf> {
    config.extra_skill_dirs.iter().map(PathBuf::from).collect()
}

/// Where a launch looks for skills: the standard roots, `--skills-dir`, `extra_skill_dirs`,
/// the enabled plugins' skills and the built-ins (`builtin_product_skills`).
pub fn skill_options(
    home: &Path,
    cwd: &Path,
    skills_dirs: &[PathBuf],
    config: &Config,
    plugins: &PluginSet,
) -> DiscoverOptions {
    DiscoverOptions {
        skills_dirs: skills_dirs.to_vec(),
        extra_dirs: extra_skill_dirs(config),
        plugin_skills: plugins.skills(),
        builtins: if config.builtin_product_skills == Some(false) {
            BuiltinSkills::NoProduct
        } else {
            BuiltinSkills::All
        },
        ..DiscoverOptions::new(home, std::env::home_dir(), cwd)
    }
}

/// The enabled plugins of a launch in `cwd`. Project plugins load only for a trusted folder
/// (`crate::trust`); otherwise the set's warnings name what was skipped.
pub fn load_plugins(home: &Path, cwd: &Path, trusted: bool) -> PluginSet {
    PluginSet::load(home, cwd, trusted)
}

/// What the enabled plugins add besides skills and MCP servers.
struct PluginParts {
    commands: Vec<PluginCommand>,
    hooks: Vec<kimi_core::hooks::HookDef>,
    sections: String,
    agent_dirs: Vec<PathBuf>,
}

fn plugin_parts(plugins: &PluginSet, home: &Path, warnings: &mut Vec<String>) -> PluginParts {
    let (hooks, hook_warnings) = crate::plugins::plugin_hooks(plugins, home);
    warnings.extend(hook_warnings);
    let (sections, prompt_warnings) = plugins.prompt_sections();
    warnings.extend(prompt_warnings);
    PluginParts {
        commands: plugins.commands(),
        hooks,
        sections,
        agent_dirs: plugins.agent_dirs(),
    }
}

impl Extensions {
    /// Discover skills and connect the MCP servers for sessions in `cwd`. `trusted` says
    /// whether the folder's project servers may start (see `crate::trust`); when not, they
    /// are named in `warnings` with how to trust the folder.
    pub async fn load(
        home: &Path,
        cwd: &Path,
        skills_dirs: &[PathBuf],
        config: &Config,
        trusted: bool,
    ) -> Extensions {
        Self::load_with(home, cwd, skills_dirs, config, None, trusted).await
    }

    /// [`Extensions::load`] plus servers given for this session only (an editor's, in
    /// `mcp.json` shape), which win over same-named configured ones.
    pub async fn load_with(
        home: &Path,
        cwd: &Path,
        skills_dirs: &[PathBuf],
        settings: &Config,
        session_servers: Option<&serde_json::Value>,
        trusted: bool,
    ) -> Extensions {
        let plugins = load_plugins(home, cwd, trusted);
        let mut warnings = plugins.warnings.clone();
        let (skills, skill_warnings) =
            kimi_skills::discover(&skill_options(home, cwd, skills_dirs, settings, &plugins));
        warnings.extend(skill_warnings);
        warnings.extend(flow_warnings(&skills));
        let parts = plugin_parts(&plugins, home, &mut warnings);
        let mut config = kimi_mcp::load_config(home, cwd, trusted);
        if let Some(servers) = session_servers {
            let source = Path::new("<servers given by the editor>");
            match kimi_mcp::config::parse_file(&servers.to_string(), source, Some(cwd)) {
                Ok(given) => {
                    config.servers.extend(given.servers);
                    config.problems.extend(given.problems);
                    config.warnings.extend(given.warnings);
                }
                Err(err) => config.problems.push(err),
            }
        }
        // Plugins' servers join under their own names; a configured server of the same
        // name wins.
        let taken = config.servers.keys().cloned().collect();
        let (plugin_servers, clashes) = plugins.mcp_servers(&taken);
        warnings.extend(clashes);
        config.servers.extend(plugin_servers);
        // `[mcp] startup_timeout_ms` / `tool_timeout_ms`: for servers without their own.
        for server in config.servers.values_mut() {
            server.startup_timeout = server.startup_timeout.or(settings.mcp_startup_timeout());
            server.tool_timeout = server.tool_timeout.or(settings.mcp_tool_timeout());
        }
        if !config.untrusted.is_empty() {
            let items: Vec<crate::trust::ProjectItem> = config
                .untrusted
                .iter()
                .map(|(name, server)| crate::trust::ProjectItem {
                    what: format!("MCP server `{name}`"),
                    runs: server.describe(),
                    source: server.source.clone(),
                })
                .collect();
            let notice = crate::trust::untrusted_notice(&crate::trust::folder_for(cwd), &items);
            tracing::warn!("{notice}");
            warnings.push(notice);
        }
        warnings.extend(config.warnings.iter().cloned());
        let problems: Vec<String> = config.problems.iter().map(ToString::to_string).collect();
        for problem in &problems {
            tracing::warn!("{problem}");
        }
        warnings.extend(problems.iter().cloned());
        // The `/mcp` panel lists the same: what did not load, then what trust skipped.
        let not_loaded: Vec<&str> = problems
            .iter()
            .chain(
                warnings
                    .iter()
                    .filter(|w| w.starts_with("this folder is not trusted")),
            )
            .map(String::as_str)
            .collect();
        let mcp_problem = (!not_loaded.is_empty()).then(|| not_loaded.join("\n"));
        let late_tools = kimi_tools::LateTools::new();
        let mcp = if config.servers.is_empty() {
            None
        } else {
            // Returns at once: only failures known without waiting are in these warnings.
            let (manager, mcp_warnings) = McpManager::start(&config, cwd, &late_tools);
            warnings.extend(mcp_warnings);
            Some(manager)
        };
        Extensions {
            skills: Arc::new(skills),
            plugin_commands: parts.commands,
            plugin_hooks: parts.hooks,
            plugin_sections: parts.sections,
            plugin_agent_dirs: parts.agent_dirs,
            mcp,
            late_tools,
            warnings,
            mcp_problem,
            mcp_config_files: mcp_config_files(home),
            service_tools: service_tools(home, settings),
        }
    }

    /// Skills only (no MCP): for launches that must not start servers.
    pub fn without_mcp(
        home: &Path,
        cwd: &Path,
        skills_dirs: &[PathBuf],
        config: &Config,
    ) -> Extensions {
        // No question can be asked here: only a recorded decision lets project plugins load.
        let trusted = kimi_config::trust::is_trusted(home, cwd).unwrap_or(false);
        let plugins = load_plugins(home, cwd, trusted);
        let mut warnings = plugins.warnings.clone();
        let (skills, skill_warnings) =
            kimi_skills::discover(&skill_options(home, cwd, skills_dirs, config, &plugins));
        warnings.extend(skill_warnings);
        warnings.extend(flow_warnings(&skills));
        let parts = plugin_parts(&plugins, home, &mut warnings);
        Extensions {
            skills: Arc::new(skills),
            plugin_commands: parts.commands,
            plugin_hooks: parts.hooks,
            plugin_sections: parts.sections,
            plugin_agent_dirs: parts.agent_dirs,
            mcp: None,
            late_tools: kimi_tools::LateTools::new(),
            warnings,
            mcp_problem: None,
            mcp_config_files: mcp_config_files(home),
            service_tools: service_tools(home, config),
        }
    }

    /// What a session opened with these extensions gets.
    pub fn session(&self) -> SessionExtensions {
        let skills = self.skills.clone();
        let skill_tool: kimi_core::session::SessionToolFactory = if skills.is_empty() {
            Arc::new(|_: &str| Vec::new())
        } else {
            Arc::new(move |session_id: &str| {
                vec![
                    Arc::new(SkillTool::new(skills.clone(), session_id.to_owned()))
                        as Arc<dyn kimi_tools::Tool>,
                ]
            })
        };
        SessionExtensions {
            tools: self.service_tools.clone(),
            session_tools: vec![skill_tool],
            skills_prompt: self.skills.prompt_listing(),
            skill_roots: self.skills.roots(),
            // MCP tools, connected already or still on their way.
            late_tools: self.mcp.is_some().then(|| self.late_tools.clone()),
            // Bound per session by the front end (`crate::environments`).
            environment: None,
            environment_resolver: None,
            environments: None,
            environment_switch: None,
            hooks: self.plugin_hooks.clone(),
            plugin_sections: self.plugin_sections.clone(),
            agent_dirs: self.plugin_agent_dirs.clone(),
            // Set per session by the ACP server when the editor offers its files.
            wrap_environment: None,
        }
    }

    /// The skills a user can start with a slash command, for the TUI's completion menu:
    /// `skill:<name>`, or the bare name for built-in skills and sub-skills (`parent.child`).
    pub fn skill_commands(&self) -> Vec<kimi_tui::SkillEntry> {
        self.skills
            .list()
            .into_iter()
            .filter(|s| s.kind().is_user_activatable())
            .map(|s| kimi_tui::SkillEntry {
                command: if s.is_sub_skill || s.source == kimi_skills::SkillSource::Builtin {
                    s.name.clone()
                } else {
                    format!("skill:{}", s.name)
                },
                description: s.description.clone(),
            })
            .chain(self.flow_skills().map(|s| kimi_tui::SkillEntry {
                command: format!("flow:{}", s.name),
                description: s.description.clone(),
            }))
            .chain(self.plugin_commands.iter().map(|c| kimi_tui::SkillEntry {
                command: c.slash_name(),
                description: c.description.clone(),
            }))
            .collect()
    }

    /// The `type: flow` skills, which `/flow:<name>` walks.
    fn flow_skills(&self) -> impl Iterator<Item = &kimi_skills::Skill> {
        self.skills
            .list()
            .into_iter()
            .filter(|s| s.kind() == kimi_skills::SkillType::Flow)
    }

    /// The MCP servers' status (`Op::McpStatus`).
    pub fn mcp_status(&self) -> McpStatus {
        use kimi_mcp::manager::ServerState;
        let servers = self
            .mcp
            .as_ref()
            .map(McpManager::status)
            .unwrap_or_default()
            .into_iter()
            .map(|s| McpServerEntry {
                name: s.name,
                transport: s.transport.to_owned(),
                state: match s.state {
                    ServerState::Connecting => McpServerState::Connecting,
                    ServerState::Connected => McpServerState::Connected,
                    ServerState::Failed(reason) => McpServerState::Failed(reason),
                    ServerState::NeedsLogin(how) => McpServerState::NeedsLogin(how),
                    ServerState::Disabled => McpServerState::Disabled,
                },
                tool_count: s.tool_count,
                source: Some(s.source),
            })
            .collect();
        McpStatus {
            servers,
            problem: self.mcp_problem.clone(),
            config_files: self.mcp_config_files.clone(),
        }
    }

    /// The skills a client can run as slash commands: `skill:<name>` and description.
    pub fn commands(&self) -> Vec<(String, String)> {
        self.skills
            .list()
            .iter()
            .filter(|s| s.kind().is_user_activatable())
            .map(|s| (format!("skill:{}", s.name), s.description.clone()))
            .chain(
                self.flow_skills()
                    .map(|s| (format!("flow:{}", s.name), s.description.clone())),
            )
            .chain(
                self.plugin_commands
                    .iter()
                    .map(|c| (c.slash_name(), c.description.clone())),
            )
            .collect()
    }

    /// A prompt that is a plugin command (`/<plugin>:<command> args`) or a skill command
    /// becomes the text it stands for; anything else is returned unchanged.
    pub fn expand_command(&self, op: Op, session_id: &str) -> Result<Op, String> {
        if let Op::Submit {
            input,
            origin: None,
            prompt_id,
        } = &op
            && let [ContentPart::Text { text }] = input.as_slice()
            && let Some(call) =
                kimi_plugins::commands::parse_invocation(text, &self.plugin_commands)
        {
            return Ok(Op::Submit {
                input: vec![ContentPart::text(call.command.expand(&call.args))],
                origin: None,
                prompt_id: prompt_id.clone(),
            });
        }
        expand_skill_command(op, &self.skills, session_id)
    }

    /// Changes of the MCP servers' status after loading (what is still connecting, failures
    /// not in `warnings`); `None` without servers.
    pub fn mcp_progress(&self) -> Option<McpProgress> {
        self.mcp.as_ref().map(McpManager::progress)
    }

    /// Hand every MCP failure that happens after loading to `report`, once, as it happens
    /// (print mode and the editor hosts write them to stderr). `None` without servers.
    pub fn report_mcp(&self, report: impl Fn(String) + Send + 'static) -> Option<McpReporter> {
        let mut progress = self.mcp_progress()?;
        let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            // A dropped reporter (no `finish`) keeps the task going until everything settled.
            let mut can_stop = true;
            loop {
                tokio::select! {
                    update = progress.next() => match update {
                        Some(update) => update.warnings.into_iter().for_each(&report),
                        None => break,
                    },
                    signal = &mut stopped, if can_stop => match signal {
                        Ok(()) => {
                            progress.unreported().into_iter().for_each(&report);
                            break;
                        }
                        Err(_) => can_stop = false,
                    },
                }
            }
        });
        Some(McpReporter { stop, task })
    }

    pub async fn shutdown(self) {
        if let Some(mcp) = self.mcp {
            mcp.shutdown().await;
        }
    }
}

/// What the session host asks of a session's extensions: skill commands expanded, skills
/// advertised, MCP status, sign-ins and reconnects.
#[async_trait::async_trait]
impl SessionExtras for Extensions {
    fn prepare(&self, session_id: &str, op: Op) -> Result<Op, String> {
        self.expand_command(op, session_id)
    }

    fn commands(&self) -> Vec<(String, String)> {
        Extensions::commands(self)
    }

    fn mcp_status(&self) -> McpStatus {
        Extensions::mcp_status(self)
    }

    async fn mcp_login(&self, server: &str) -> Result<McpLoginStarted, String> {
        let started = self.manager()?.begin_login(server).await?;
        Ok(McpLoginStarted {
            url: started.url,
            done: started.done,
        })
    }

    async fn mcp_logout(&self, server: &str) -> Result<String, String> {
        self.manager()?.logout(server).await
    }

    async fn mcp_reconnect(&self, server: &str) -> Result<String, String> {
        self.manager()?.restart(server).await
    }
}

impl Extensions {
    /// The MCP servers, or why there are none to act on.
    fn manager(&self) -> Result<&McpManager, String> {
        self.mcp.as_ref().ok_or_else(|| {
            let files = self.mcp_config_files.join(" or ");
            format!("this session has no MCP servers; add them to {files} and start a new session")
        })
    }
}

/// The task behind [`Extensions::report_mcp`]; dropping it leaves the task running until the
/// servers have settled.
pub struct McpReporter {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl McpReporter {
    /// Report what has happened so far and stop (servers still connecting are not waited for).
    pub async fn finish(self) {
        // A send error means the task already ended (everything settled and was reported).
        let _ = self.stop.send(());
        let _ = self.task.await;
    }
}

/// Flow skills whose chart `/flow:<name>` could not walk: said at start-up, not at first use.
fn flow_warnings(skills: &SkillCatalog) -> Vec<String> {
    skills
        .list()
        .into_iter()
        .filter(|s| s.kind() == kimi_skills::SkillType::Flow)
        .filter_map(|s| {
            s.flow().err().map(|err| {
                format!(
                    "flow skill {} ({}): /flow:{} cannot run: {err}; /skill:{} still sends it as one prompt",
                    s.name,
                    s.path.display(),
                    s.name,
                    s.name
                )
            })
        })
        .collect()
}

/// A prompt that is a skill command (`/skill:name args`, `/name args`) becomes the skill's
/// expanded text with a `skill_activation` origin; a prompt mentioning skills inline (several
/// at once, see [`kimi_skills::parse_inline`]) gets their loaded blocks as its first parts,
/// with a `user` origin listing the activations. Attachments after the text stay.
/// `/flow:<name>` becomes `Op::Flow` with the skill's chart (or the error saying why it cannot
/// run). Anything else is returned unchanged.
pub fn expand_skill_command(op: Op, skills: &SkillCatalog, session_id: &str) -> Result<Op, String> {
    let Op::Submit {
        input,
        origin: None,
        prompt_id,
    } = &op
    else {
        return Ok(op);
    };
    let Some((ContentPart::Text { text }, attachments)) = input.split_first() else {
        return Ok(op);
    };
    let with_attachments = |text: String| {
        let mut input = vec![ContentPart::text(text)];
        input.extend(attachments.iter().cloned());
        input
    };
    // Skill mentions are looked for in all the text the user typed (attachments split it).
    let typed: String = input.iter().filter_map(ContentPart::as_text).collect();
    if let Some(inline) = kimi_skills::parse_inline(&typed, skills, session_id) {
        let origin = Origin::Known(KnownOrigin::User {
            skill_activations: Some(inline.origin_activations()),
            in_turn: None,
        });
        let mut parts: Vec<ContentPart> = inline.blocks.iter().map(ContentPart::text).collect();
        parts.extend(input.iter().cloned());
        return Ok(Op::Submit {
            input: parts,
            origin: Some(origin),
            prompt_id: prompt_id.clone(),
        });
    }
    if let Some(flow) = kimi_skills::parse_flow_command(text, skills) {
        if !attachments.is_empty() {
            return Err(
                "/flow:<name> takes no attachments; send them in a prompt of their own".to_owned(),
            );
        }
        let flow = flow?;
        return Ok(Op::Flow {
            name: flow.skill_name,
            graph: flow.graph,
            prompt_id: prompt_id.clone(),
        });
    }
    // A flow skill started with `/skill:<name>` (or `/<name>`) is one prompt, its chart
    // included, as in the reference; `/flow:<name>` walks the chart node by node.
    let Some(slash) = kimi_skills::parse_slash(text, skills, session_id) else {
        return Ok(op);
    };
    Ok(Op::Submit {
        input: with_attachments(slash.text),
        origin: Some(slash.activation.to_origin()),
        prompt_id: prompt_id.clone(),
    })
}
