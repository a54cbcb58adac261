//! `kimi-rs web`: the local REST + WebSocket server and browser UI (surface.md §11.1). Sessions
//! are opened with the same model, configuration, permission rules, skills and MCP servers as
//! the terminal UI; approvals are answered from the browser or any API client.

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

impl kimi_web::SessionHost for Host {
    fn open(&self, cwd: &Path, resume: Resume) -> Result<OpenedSession, String> {
        let model =
            resolve_model(&self.home, self.args.model.as_deref()).map_err(|e| format!("{e:#}"))?;
        // Called on a blocking thread of the server's runtime.
        let extensions = tokio::runtime::Handle::current().block_on(Extensions::load(
            &self.home,
            cwd,
            &self.args.skills_dir,
        ));
        for warning in &extensions.warnings {
            eprintln!("kimi-rs web: {warning}");
        }
        let agent = match resume {
            Resume::New => agent_choice(&self.args),
            _ => Default::default(),
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
            eprintln!("kimi-rs web: {warning}");
        }
        self.extensions()
            .insert(opened.session.state.id.clone(), extensions);
        Ok(opened)
    }

    fn prepare(&self, session_id: &str, op: Op) -> Result<Op, String> {
        match self.extensions().get(session_id) {
            Some(extensions) => expand_skill_command(op, &extensions.skills, session_id),
            None => Ok(op),
        }
    }
}

/// Open the URL in the default browser; failing to is not an error (the URL is printed).
fn open_browser(url: &str) {
    let program = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let _ = std::process::Command::new(program)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
}

/// Serve until Ctrl-C. Exit status 0, or 1 when the server could not start or broke.
pub fn run(args: &RunArgs, host: &str, port: Option<u16>, no_open: bool) -> anyhow::Result<u8> {
    let home = kimi_store::home_from_env()?;
    let permissions = crate::interactive::permission_state(&home, args)?;
    let session_host = Arc::new(Host {
        home: home.clone(),
        args: args.clone(),
        permissions,
        extensions: Mutex::new(HashMap::new()),
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let result = runtime.block_on(async {
        let bound = kimi_web::bind(kimi_web::ServerOptions {
            host: host.to_owned(),
            port: port.unwrap_or(kimi_web::DEFAULT_PORT),
            home,
        })
        .await?;
        let url = bound.url();
        eprintln!("kimi-rs web: serving on {url}");
        eprintln!("kimi-rs web: press Ctrl-C to stop");
        if !no_open {
            open_browser(&url);
        }
        let shutdown = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        let result = bound.serve(session_host.clone(), shutdown).await;
        let all: Vec<Extensions> = session_host.extensions().drain().map(|(_, e)| e).collect();
        for extensions in all {
            extensions.shutdown().await;
        }
        result
    });
    match result {
        Ok(()) => Ok(0),
        Err(err) => {
            eprintln!("kimi-rs web: {err}");
            Ok(1)
        }
    }
}
