//! `kimi-rs acp`: serve the Agent Client Protocol on stdin/stdout for editors (Zed, JetBrains,
//! …). Sessions are opened with the same model, configuration, permission rules, skills and
//! MCP servers as the terminal UI; approvals are asked through the editor.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use kimi_core::permission::PermissionState;
use kimi_core::session::{OpenedSession, Resume, SessionSetup, open_session};
use kimi_protocol::ops::Op;

use crate::cli::RunArgs;
use crate::extensions::{Extensions, expand_skill_command};
use crate::run::{agent_choice, resolve_model, setup};

struct Host {
    home: PathBuf,
    args: RunArgs,
    permissions: PermissionState,
    /// Each session's skills and MCP servers (they depend on its working directory).
    extensions: Mutex<HashMap<String, Extensions>>,
}

impl Host {
    fn extensions(&self) -> std::sync::MutexGuard<'_, HashMap<String, Extensions>> {
        self.extensions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl kimi_acp::SessionHost for Host {
    fn open(
        &self,
        cwd: &Path,
        resume: Resume,
        mcp_servers: serde_json::Value,
    ) -> Result<OpenedSession, String> {
        if !cwd.is_absolute() || !cwd.is_dir() {
            return Err(format!(
                "the session directory {} is not an existing absolute path",
                cwd.display()
            ));
        }
        let model =
            resolve_model(&self.home, self.args.model.as_deref()).map_err(|e| format!("{e:#}"))?;
        // Called from the connection's handler on the multi-threaded runtime: connecting the
        // MCP servers may block this worker, the others keep serving.
        let extensions = tokio::task::block_in_place(|| {
            tokio::runtime::Handle::current().block_on(Extensions::load_with(
                &self.home,
                cwd,
                &self.args.skills_dir,
                Some(&mcp_servers),
            ))
        });
        for warning in &extensions.warnings {
            eprintln!("kimi-rs acp: {warning}");
        }
        let opened = open_session(SessionSetup {
            agent: agent_choice(&self.args),
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
            eprintln!("kimi-rs acp: {warning}");
        }
        self.extensions()
            .insert(opened.session.state.id.clone(), extensions);
        Ok(opened)
    }

    fn commands(&self, session_id: &str) -> Vec<(String, String)> {
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

    fn prepare(&self, session_id: &str, op: Op) -> Result<Op, String> {
        match self.extensions().get(session_id) {
            Some(extensions) => expand_skill_command(op, &extensions.skills, session_id),
            None => Ok(op),
        }
    }
}

/// Serve until the editor closes stdin. Exit status 0, or 1 when the connection broke.
pub fn run(args: &RunArgs) -> anyhow::Result<u8> {
    let home = kimi_store::home_from_env()?;
    let permissions = crate::interactive::permission_state(&home, args)?;
    let host = Arc::new(Host {
        home,
        args: args.clone(),
        permissions,
        extensions: Mutex::new(HashMap::new()),
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let result = runtime.block_on(async {
        let result = kimi_acp::serve(host.clone(), tokio::io::stdin(), tokio::io::stdout()).await;
        let all: Vec<Extensions> = host.extensions().drain().map(|(_, e)| e).collect();
        for extensions in all {
            extensions.shutdown().await;
        }
        result
    });
    match result {
        Ok(()) => Ok(0),
        Err(err) => {
            eprintln!("kimi-rs acp: {err}");
            Ok(1)
        }
    }
}
