//! Execution environments at the front ends: the declared environments (`config.toml` plus the
//! project's `.kimi-code/environments.toml`), binding a new session (`--environment`, or
//! `[environments] default`), reconnecting a resumed one, and `kimi-rs exec-server`.

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
fn bind_declared(envs: &Environments, id: &str) -> anyhow::Result<EnvironmentBinding> {
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
pub fn resolver(envs: Environments) -> EnvironmentResolver {
    Arc::new(move |record| {
        connect(&envs, &record.id).map_err(|e| {
            format!(
                "session is bound to environment `{}` and cannot resume without it: {e}",
                record.id
            )
        })
    })
}

/// The declared environments as the catalog subagents are placed from (`Agent`'s
/// `environment`, `AgentSwarm`'s `environments`).
struct Declared(Environments);

impl EnvironmentCatalog for Declared {
    fn ids(&self) -> Vec<String> {
        // `entries` is ordered by id.
        self.0.entries.keys().cloned().collect()
    }

    fn bind(&self, id: &str) -> Result<EnvironmentBinding, String> {
        bind_declared(&self.0, id).map_err(|e| format!("{e:#}"))
    }
}

/// `extensions` with the environment of a session: `binding` for a new one, the resolver for
/// a resumed one, and the declared environments subagents may be placed on.
pub fn with_environment(
    mut extensions: SessionExtensions,
    envs: &Environments,
    binding: Option<EnvironmentBinding>,
) -> SessionExtensions {
    extensions.environment = binding;
    extensions.environment_resolver = Some(resolver(envs.clone()));
    extensions.environments = Some(Arc::new(Declared(envs.clone())));
    extensions
}
