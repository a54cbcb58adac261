//! How `kimi-rs acp` and `kimi-rs web` open sessions: the launch's side of the core session
//! host ([`kimi_core::host::SessionHost`]). Each session gets the user's model, configuration,
//! permission rules and agent choice, and the skills and MCP servers of its working directory
//! (plus any the client passes), kept until shutdown.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use kimi_config::Config;
use kimi_core::host::{SessionExtras, SessionFactory, SessionHost};
use kimi_core::permission::PermissionState;
use kimi_core::session::{Resume, SessionSetup};

use crate::cli::RunArgs;
use crate::extensions::Extensions;
use crate::run::{agent_choice, resolve_model, setup};

/// The session factory of a server front end.
pub struct ServerSessions {
    home: PathBuf,
    args: RunArgs,
    permissions: PermissionState,
    /// config.toml, read once at start-up.
    config: Arc<Config>,
    /// Prefix of the warnings printed on stderr (`kimi-rs acp`).
    label: &'static str,
    /// Every session's skills and MCP servers (they depend on its working directory), stopped
    /// at shutdown.
    extensions: Mutex<Vec<Arc<Extensions>>>,
}

/// The session host of `kimi-rs acp` / `kimi-rs web`.
pub fn server_host(args: &RunArgs, label: &'static str) -> anyhow::Result<SessionHost> {
    let home = kimi_store::home_from_env()?;
    let config = crate::config::load(&home)?;
    let (permissions, rule_warnings) = crate::interactive::permission_state(&config, args)?;
    for warning in crate::config::warnings(&config)
        .iter()
        .chain(&rule_warnings)
    {
        eprintln!("{label}: {warning}");
    }
    let factory = ServerSessions {
        home: home.clone(),
        args: args.clone(),
        permissions,
        config,
        label,
        extensions: Mutex::new(Vec::new()),
    };
    Ok(SessionHost::new(home, Arc::new(factory)))
}

#[async_trait::async_trait]
impl SessionFactory for ServerSessions {
    /// Must run on a multi-threaded runtime (loading runs on it); MCP servers connect in the
    /// background and never hold the session up.
    fn setup(
        &self,
        cwd: &Path,
        resume: &Resume,
        mcp_servers: Option<&serde_json::Value>,
    ) -> Result<(SessionSetup, Arc<dyn SessionExtras>), String> {
        self.setup_on(cwd, resume, mcp_servers, None)
    }

    fn setup_on(
        &self,
        cwd: &Path,
        resume: &Resume,
        mcp_servers: Option<&serde_json::Value>,
        environment: Option<&str>,
    ) -> Result<(SessionSetup, Arc<dyn SessionExtras>), String> {
        let model = resolve_model(&self.config, self.args.model.as_deref())
            .map_err(|e| format!("{e:#}"))?;
        // Editors and the browser cannot answer a trust question: only a recorded trust (or
        // --trust-workspace) runs the folder's project commands.
        let (trusted, trust_warning) =
            crate::trust::trusted_without_asking(&self.home, cwd, self.args.trust_workspace);
        if let Some(warning) = trust_warning {
            eprintln!("{}: {warning}", self.label);
        }
        let extensions = tokio::task::block_in_place(|| {
            tokio::runtime::Handle::current().block_on(Extensions::load_with(
                &self.home,
                cwd,
                &self.args.skills_dir,
                &self.config,
                mcp_servers,
                trusted,
            ))
        });
        for warning in &extensions.warnings {
            eprintln!("{}: {warning}", self.label);
        }
        // Servers connect in the background; later failures go to stderr as they happen.
        let label = self.label;
        drop(extensions.report_mcp(move |warning| eprintln!("{label}: {warning}")));
        // A resumed session keeps the agent it was started with.
        let agent = match resume {
            Resume::New => agent_choice(&self.args),
            Resume::Id(_) | Resume::Latest => Default::default(),
        };
        // New sessions bind the requested environment (or `[environments] default`); resumed
        // ones reconnect where they ran.
        // Re-read for every new session, so edits to the declarations apply without a restart.
        let (environments, environment_warnings) =
            match crate::environments::reload(&self.home, cwd, trusted) {
                Ok(read) => read,
                Err(e) => {
                    let (envs, mut warnings) =
                        crate::environments::declared(&self.config, cwd, trusted);
                    warnings.push(format!(
                    "environments were not re-read ({e}); the declarations read at start-up apply"
                ));
                    (envs, warnings)
                }
            };
        for warning in &environment_warnings {
            eprintln!("{}: {warning}", self.label);
        }
        let binding = match resume {
            Resume::New => crate::environments::bind_new(&environments, environment)
                .map_err(|e| format!("{e:#}"))?,
            Resume::Id(_) | Resume::Latest => None,
        };
        let setup = SessionSetup {
            agent,
            extensions: crate::environments::with_environment(
                extensions.session(),
                cwd,
                &environments,
                binding,
            ),
            ..setup(
                self.home.clone(),
                cwd.to_owned(),
                resume.clone(),
                model,
                self.args.add_dir.clone(),
                Some(self.permissions.clone()),
                &self.config,
            )
        };
        let extensions = Arc::new(extensions);
        self.extensions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(extensions.clone());
        Ok((setup, extensions))
    }

    fn warnings(&self, _session_id: &str, warnings: &[String]) {
        for warning in warnings {
            eprintln!("{}: {warning}", self.label);
        }
    }

    /// Stop every session's MCP servers.
    async fn shutdown(&self) {
        let all: Vec<Arc<Extensions>> = self
            .extensions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain(..)
            .collect();
        for extensions in all {
            shutdown_extensions(extensions, self.label).await;
        }
    }
}

/// Stop the MCP servers of `extensions` once nothing else holds them.
pub async fn shutdown_extensions(extensions: Arc<Extensions>, label: &str) {
    match Arc::try_unwrap(extensions) {
        Ok(extensions) => extensions.shutdown().await,
        // Still held by a session that was not shut down: its servers stop when it is dropped.
        Err(_) => eprintln!("{label}: a session still holds its MCP servers at shutdown"),
    }
}
