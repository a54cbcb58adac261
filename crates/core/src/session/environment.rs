//! Where a session's tools run: the binding of a new session to an execution environment, a
//! switch between environments, and the reminder that tells the model where it is.

use std::path::PathBuf;
use std::sync::Arc;

use super::LOCAL_ENVIRONMENT;

/// A new session's execution environment: the connected target and the working directory on it.
#[derive(Clone)]
pub struct EnvironmentBinding {
    pub environment: Arc<dyn kimi_tools::Environment>,
    pub cwd: PathBuf,
}

impl EnvironmentBinding {
    /// The journal record of this binding (`environment.bind`).
    pub fn record(&self) -> kimi_protocol::record::EnvironmentBind {
        let info = self.environment.info();
        kimi_protocol::record::EnvironmentBind {
            id: info.id.clone(),
            kind: info.kind.clone(),
            cwd: self.cwd.display().to_string(),
            os: info.os.clone(),
            arch: info.arch.clone(),
            shell: info.shell.clone(),
        }
    }
}

/// Where a resumed session's tools move to (TUI `/environment <id>`, at a turn boundary).
#[derive(Clone)]
pub enum EnvironmentSwitch {
    To(EnvironmentBinding),
    /// Back to this machine, in the session's working directory here.
    Local,
}

/// The reminder that tells the model where its tools run (journaled with the binding).
pub fn environment_reminder(
    bind: &kimi_protocol::record::EnvironmentBind,
) -> kimi_protocol::Message {
    let text = if bind.id == LOCAL_ENVIRONMENT {
        format!(
            "<system-reminder>\nThis session's tools now run on the user's machine again ({} {}, shell {}), in {}. \
             Paths of the environment used before mean nothing here.\n</system-reminder>",
            bind.os, bind.arch, bind.shell, bind.cwd
        )
    } else {
        format!(
            "<system-reminder>\nThis session's tools run on the remote environment `{}` ({}), not on the user's machine: \
         {} {}, shell {}, working directory {}. Read, Write, Edit, Grep, Glob and Bash act on files and processes there; \
         paths are that machine's.\n</system-reminder>",
            bind.id, bind.kind, bind.os, bind.arch, bind.shell, bind.cwd
        )
    };
    let mut message = kimi_protocol::Message::new(
        kimi_protocol::Role::User,
        vec![kimi_protocol::ContentPart::text(text)],
    );
    message.origin = Some(kimi_protocol::Origin::injection("environment"));
    message
}
