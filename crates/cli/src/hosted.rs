//! Sessions opened on behalf of a server front end (`kimi-rs acp`, `kimi-rs web`): the user's
//! model, configuration, permission rules and agent choice, and per session the skills and MCP
//! servers of its working directory (plus any the client passes), kept until shutdown.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use kimi_core::permission::PermissionState;
use kimi_core::session::{OpenedSession, Resume, SessionSetup, open_session};
use kimi_protocol::ops::Op;

use crate::cli::RunArgs;
use crate::extensions::{Extensions, expand_skill_command};
use crate::run::{agent_choice, resolve_model, setup};

pub struct HostedSessions {
    home: PathBuf,
    args: RunArgs,
    permissions: PermissionState,
    /// Prefix of the warnings printed on stderr (`kimi-rs acp`).
    label: &'static str,
    /// Each session's skills and MCP servers (they depend on its working directory).
    extensions: Mutex<HashMap<String, Extensions>>,
}

impl HostedSessions {
    pub fn new(args: &RunArgs, label: &'static str) -> anyhow::Result<HostedSessions> {
        let home = kimi_store::home_from_env()?;
        let permissions = crate::interactive::permission_state(&home, args)?;
        Ok(HostedSessions {
            home,
            args: args.clone(),
            permissions,
            label,
            extensions: Mutex::new(HashMap::new()),
        })
    }

    pub fn home(&self) -> &Path {
        &self.home
    }

    fn extensions(&self) -> std::sync::MutexGuard<'_, HashMap<String, Extensions>> {
        self.extensions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Open a new session in `cwd` or resume one. `servers` are MCP servers given for this
    /// session only, in `mcp.json` shape. Must run on a multi-threaded runtime (it may block
    /// while the MCP servers connect).
    pub fn open(
        &self,
        cwd: &Path,
        resume: Resume,
        servers: Option<&serde_json::Value>,
    ) -> Result<OpenedSession, String> {
        if !cwd.is_absolute() || !cwd.is_dir() {
            return Err(format!(
                "the session directory {} is not an existing absolute path",
                cwd.display()
            ));
        }
        let model =
            resolve_model(&self.home, self.args.model.as_deref()).map_err(|e| format!("{e:#}"))?;
        let extensions = tokio::task::block_in_place(|| {
            tokio::runtime::Handle::current().block_on(Extensions::load_with(
                &self.home,
                cwd,
                &self.args.skills_dir,
                servers,
            ))
        });
        for warning in &extensions.warnings {
            eprintln!("{}: {warning}", self.label);
        }
        // A resumed session keeps the agent it was started with.
        let agent = match resume {
            Resume::New => agent_choice(&self.args),
            Resume::Id(_) | Resume::Latest => Default::default(),
        };
        let opened = open_session(SessionSetup {
            agent,
            extensions: extensions.session(),
            ..setup(
                self.home.clone(),
                cwd.to_owned(),
                resume,
                model,
                self.args.add_dir.clone(),
                Some(self.permissions.clone()),
            )
        })
        .map_err(|e| e.to_string())?;
        for warning in &opened.warnings {
            eprintln!("{}: {warning}", self.label);
        }
        self.extensions()
            .insert(opened.session.state.id.clone(), extensions);
        Ok(opened)
    }

    /// Expand a skill command in a prompt of `session_id`.
    pub fn prepare(&self, session_id: &str, op: Op) -> Result<Op, String> {
        match self.extensions().get(session_id) {
            Some(extensions) => expand_skill_command(op, &extensions.skills, session_id),
            None => Ok(op),
        }
    }

    /// The skills `session_id` can run as slash commands: `skill:<name>` and description.
    pub fn commands(&self, session_id: &str) -> Vec<(String, String)> {
        self.extensions()
            .get(session_id)
            .map(|e| {
                e.skills
                    .list()
                    .iter()
                    .filter(|s| s.kind().is_user_activatable())
                    .map(|s| (format!("skill:{}", s.name), s.description.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Stop every session's MCP servers.
    pub async fn shutdown(&self) {
        let all: Vec<Extensions> = self.extensions().drain().map(|(_, e)| e).collect();
        for extensions in all {
            extensions.shutdown().await;
        }
    }
}

impl kimi_acp::SessionHost for HostedSessions {
    fn open(
        &self,
        cwd: &Path,
        resume: Resume,
        mcp_servers: serde_json::Value,
    ) -> Result<OpenedSession, String> {
        HostedSessions::open(self, cwd, resume, Some(&mcp_servers))
    }

    fn commands(&self, session_id: &str) -> Vec<(String, String)> {
        HostedSessions::commands(self, session_id)
    }

    fn prepare(&self, session_id: &str, op: Op) -> Result<Op, String> {
        HostedSessions::prepare(self, session_id, op)
    }
}

impl kimi_web::SessionHost for HostedSessions {
    fn open(&self, cwd: &Path, resume: Resume) -> Result<OpenedSession, String> {
        HostedSessions::open(self, cwd, resume, None)
    }

    fn prepare(&self, session_id: &str, op: Op) -> Result<Op, String> {
        HostedSessions::prepare(self, session_id, op)
    }
}
