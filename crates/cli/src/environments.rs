//! Execution environments at the front ends: the declared environments (`config.toml` plus the
//! project's `.kimi-code/environments.toml`), binding a new session (`--environment`, or
//! `[environments] default`), reconnecting a resumed one, and `kimi-rs exec-server`. [`watch`]
//! re-reads the declarations while a long-lived launch (TUI, ACP, web) runs: new sessions and
//! subagents see the edit, and the connection pool drains re-declared or removed environments.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, anyhow};
use kimi_config::Config;
use kimi_config::environments::{Environments, load_project};
use kimi_core::session::{
    EnvironmentBinding, EnvironmentCatalog, EnvironmentResolver, SessionExtensions,
};
use kimi_tools::Environment;

/// `kimi-rs exec-server`: serve the exec protocol on stdin/stdout until stdin ends. It reads no
/// configuration and writes no logs: the target needs nothing but this binary.
pub fn exec_server() -> std::process::ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("kimi-rs exec-server: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(kimi_exec::server::serve(
        tokio::io::stdin(),
        tokio::io::stdout(),
    )) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kimi-rs exec-server: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// The environments a launch in `cwd` can use: the user's, with the project's on top. Problems
/// of the project file come back as warnings (its valid entries still apply).
/// The project's file is read only when the folder is `trusted` (`crate::trust`).
pub fn declared(config: &Config, cwd: &Path, trusted: bool) -> (Environments, Vec<String>) {
    let mut warnings = Vec::new();
    let envs = match load_project(cwd, trusted) {
        Ok(Some((project, problems))) => {
            for p in problems {
                warnings.push(format!(
                    "{}: {}: {}",
                    cwd.join(kimi_config::environments::PROJECT_FILE).display(),
                    p.path.join("."),
                    p.message
                ));
            }
            config.environments.merged_with(&project)
        }
        Ok(None) => config.environments.clone(),
        Err(message) => {
            warnings.push(message);
            config.environments.clone()
        }
    };
    (envs, warnings)
}

fn known(envs: &Environments) -> String {
    if envs.entries.is_empty() {
        "none is declared; add one under [environments] in config.toml or .kimi-code/environments.toml"
            .to_owned()
    } else {
        format!(
            "declared: {}",
            envs.entries.keys().cloned().collect::<Vec<_>>().join(", ")
        )
    }
}

/// Connects `id` (shared with every other session of this process).
fn connect(envs: &Environments, id: &str) -> Result<Arc<dyn Environment>, String> {
    let decl = envs
        .get(id)
        .ok_or_else(|| format!("unknown environment `{id}` ({})", known(envs)))?;
    let exe = kimi_exec::launch::current_exe();
    let env = kimi_exec::shared(decl, exe.as_deref()).map_err(|e| e.to_string())?;
    Ok(env)
}

/// The environment a new session binds to: `requested` (`--environment`), else the declared
/// default; `local` (or nothing) is this machine. Fails when the id is unknown, the target
/// cannot be reached, or its working directory does not exist there.
pub fn bind_new(
    envs: &Environments,
    requested: Option<&str>,
) -> anyhow::Result<Option<EnvironmentBinding>> {
    let Some(id) = requested.or(envs.default.as_deref()) else {
        return Ok(None);
    };
    if id == "local" {
        return Ok(None);
    }
    bind_declared(envs, id).map(Some)
}

/// Connects declared `id` at its `defaultCwd` (or the target's home), which must exist there.
pub fn bind_declared(envs: &Environments, id: &str) -> anyhow::Result<EnvironmentBinding> {
    let environment = connect(envs, id).map_err(|e| anyhow!(e))?;
    let decl = envs
        .get(id)
        .with_context(|| format!("unknown environment `{id}`"))?;
    let cwd = match (&decl.default_cwd, &environment.info().home) {
        (Some(cwd), _) => PathBuf::from(cwd),
        (None, Some(home)) => home.clone(),
        (None, None) => {
            return Err(anyhow!(
                "environment `{id}` sets no defaultCwd and its executor reports no home directory; set defaultCwd in {}",
                decl.source.display()
            ));
        }
    };
    let stat = environment.stat(&cwd).map_err(|e| anyhow!(e.to_string()))?;
    if !stat.is_some_and(|s| s.kind == kimi_tools::environment::FileKind::Dir) {
        return Err(anyhow!(
            "the working directory {} does not exist on environment `{id}` (defaultCwd in {}); create it there or change defaultCwd",
            cwd.display(),
            decl.source.display()
        ));
    }
    Ok(EnvironmentBinding { environment, cwd })
}

/// Reconnects the environment a resumed session's journal names.
fn resolver(envs: Declared) -> EnvironmentResolver {
    Arc::new(move |record| {
        connect(&envs.envs(), &record.id).map_err(|e| {
            format!(
                "session is bound to environment `{}` and cannot resume without it: {e}",
                record.id
            )
        })
    })
}

/// The latest declarations [`watch`] read, by launch directory.
static LIVE: std::sync::RwLock<Option<std::collections::HashMap<PathBuf, Environments>>> =
    std::sync::RwLock::new(None);

/// The declarations for `cwd` as the watcher last read them, else `initial`.
pub fn current(cwd: &Path, initial: &Environments) -> Environments {
    LIVE.read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .as_ref()
        .and_then(|live| live.get(cwd).cloned())
        .unwrap_or_else(|| initial.clone())
}

fn set_current(cwd: &Path, envs: Environments) {
    LIVE.write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get_or_insert_with(Default::default)
        .insert(cwd.to_owned(), envs);
}

/// The mtimes of the files environments are declared in (absent files count as `None`).
fn stamps(home: &Path, cwd: &Path) -> [Option<std::time::SystemTime>; 2] {
    let mtime = |p: PathBuf| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    [
        mtime(home.join("config.toml")),
        mtime(cwd.join(kimi_config::environments::PROJECT_FILE)),
    ]
}

/// Re-reads the declarations of a launch in `cwd` now; `Err` keeps the last good ones.
pub fn reload(
    home: &Path,
    cwd: &Path,
    trusted: bool,
) -> Result<(Environments, Vec<String>), String> {
    let config = crate::config::load(home).map_err(|e| format!("{e:#}"))?;
    let (envs, warnings) = declared(&config, cwd, trusted);
    set_current(cwd, envs.clone());
    Ok((envs, warnings))
}

/// Re-reads `config.toml` and the project's `.kimi-code/environments.toml` of a launch in `cwd`
/// when either changes (checked twice a second, on a thread of its own): later sessions,
/// `/environment` and subagent placement see the new declarations, and the pool drains
/// connections of re-declared or removed environments. `report` gets a line per change.
pub fn watch(
    home: PathBuf,
    cwd: PathBuf,
    trusted: bool,
    initial: Environments,
    report: impl Fn(String) + Send + 'static,
) {
    set_current(&cwd, initial.clone());
    let spawned = std::thread::Builder::new()
        .name("kimi-env-watch".to_owned())
        .spawn(move || {
            let mut seen = stamps(&home, &cwd);
            let mut known = initial;
            loop {
                std::thread::sleep(std::time::Duration::from_millis(500));
                let now = stamps(&home, &cwd);
                if now == seen {
                    continue;
                }
                seen = now;
                let (envs, warnings) = match reload(&home, &cwd, trusted) {
                    Ok(read) => read,
                    Err(e) => {
                        report(format!("environments were not re-read (the last good declarations stay): {e}"));
                        continue;
                    }
                };
                for warning in warnings {
                    report(warning);
                }
                if envs == known {
                    continue;
                }
                let changed = kimi_exec::pool::redeclare(&envs);
                tracing::info!(?changed, "environment declarations re-read");
                let ids = if envs.entries.is_empty() {
                    "none declared".to_owned()
                } else {
                    envs.entries.keys().cloned().collect::<Vec<_>>().join(", ")
                };
                let drained = if changed.is_empty() {
                    String::new()
                } else {
                    format!(
                        " (connections of {} drain: calls in flight finish there, new calls follow the new declaration)",
                        changed.join(", ")
                    )
                };
                report(format!("environments re-read: {ids}{drained}"));
                known = envs;
            }
        });
    if let Err(e) = spawned {
        tracing::warn!("cannot watch the environment declarations: {e}");
    }
}

/// The declared environments as the catalog subagents are placed from (`Agent`'s
/// `environment`, `AgentSwarm`'s `environments`), following [`watch`].
struct Declared {
    cwd: PathBuf,
    initial: Environments,
}

impl Declared {
    fn envs(&self) -> Environments {
        current(&self.cwd, &self.initial)
    }
}

impl EnvironmentCatalog for Declared {
    fn ids(&self) -> Vec<String> {
        // `entries` is ordered by id.
        self.envs().entries.keys().cloned().collect()
    }

    fn bind(&self, id: &str) -> Result<EnvironmentBinding, String> {
        bind_declared(&self.envs(), id).map_err(|e| format!("{e:#}"))
    }
}

/// `extensions` with the environment of a session: `binding` for a new one, the resolver for
/// a resumed one, and the declared environments subagents may be placed on.
pub fn with_environment(
    mut extensions: SessionExtensions,
    cwd: &Path,
    envs: &Environments,
    binding: Option<EnvironmentBinding>,
) -> SessionExtensions {
    let declared = || Declared {
        cwd: cwd.to_owned(),
        initial: envs.clone(),
    };
    extensions.environment = binding;
    extensions.environment_resolver = Some(resolver(declared()));
    extensions.environments = Some(Arc::new(declared()));
    extensions
}
