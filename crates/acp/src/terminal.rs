//! Shell commands in the editor's terminals (ACP `terminal/*`): when the client advertises
//! `terminal`, a command Bash starts runs through `terminal/create`; its output is read with
//! `terminal/output` while it runs, `terminal/wait_for_exit` tells when it ends,
//! `terminal/kill` stops it and `terminal/release` frees it afterwards. The Bash tool call's
//! content embeds the terminal, so the editor shows the live output where the call is.
//!
//! The tool only hands the environment a command, so the pump records each running Bash call
//! with its command ([`Terminals::expect`]) and the spawn claims the first call with the same
//! command: identical commands running at once are interchangeable.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CreateTerminalRequest, EnvVariable, KillTerminalRequest, ReleaseTerminalRequest,
    SessionNotification, SessionUpdate, Terminal, TerminalExitStatus, TerminalOutputRequest,
    ToolCallContent, ToolCallUpdate, ToolCallUpdateFields, WaitForTerminalExitRequest,
};
use kimi_tools::environment::{
    ProcessControl, ProcessEnd, ProcessOutput, ShellSpec, SpawnedProcess,
};
use tokio::sync::{mpsc, watch};

/// How often a running command's output is fetched.
const POLL: Duration = Duration::from_millis(100);
/// What the editor keeps of a command's output (the Bash tool keeps less anyway).
const OUTPUT_LIMIT: u64 = 4 * 1024 * 1024;

#[derive(Debug)]
struct Claim {
    call_id: String,
    command: String,
    terminal: Option<String>,
}

/// The Bash calls of one session that are running, and the terminal each got.
#[derive(Debug, Default)]
pub struct Terminals {
    claims: Mutex<Vec<Claim>>,
}

impl Terminals {
    fn claims(&self) -> std::sync::MutexGuard<'_, Vec<Claim>> {
        self.claims.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A Bash call running `command` was announced.
    pub fn expect(&self, call_id: &str, command: &str) {
        self.claims().push(Claim {
            call_id: call_id.to_owned(),
            command: command.to_owned(),
            terminal: None,
        });
    }

    /// Give `terminal` to the first call running `command` that has none; its call id.
    fn claim(&self, command: &str, terminal: &str) -> Option<String> {
        let mut claims = self.claims();
        let claim = claims
            .iter_mut()
            .find(|c| c.command == command && c.terminal.is_none())?;
        claim.terminal = Some(terminal.to_owned());
        Some(claim.call_id.clone())
    }

    /// The call ended: forget it; the terminal it ran in, if any.
    pub fn finish(&self, call_id: &str) -> Option<String> {
        let mut claims = self.claims();
        let at = claims.iter().position(|c| c.call_id == call_id)?;
        claims.remove(at).terminal
    }
}

/// The editor's terminal as a tool call's content.
pub fn content(terminal_id: &str) -> ToolCallContent {
    ToolCallContent::Terminal(Terminal::new(terminal_id.to_owned()))
}

/// What a started command needs to talk to the editor.
pub(crate) struct Link {
    pub cx: ConnectionTo<Client>,
    pub runtime: tokio::runtime::Handle,
    pub session: String,
    pub terminals: Arc<Terminals>,
}

/// Start `spec` in a new editor terminal. `create` is the blocking `terminal/create` round
/// trip (the environment is called synchronously); the rest runs on the connection's runtime.
pub(crate) fn spawn(
    link: Link,
    spec: &ShellSpec,
    create: impl FnOnce(CreateTerminalRequest) -> Result<String, String>,
) -> Result<SpawnedProcess, String> {
    let shell = kimi_tools::environment::shell();
    // The sandbox launcher, when there is one, wraps the shell as it does locally.
    let (command, mut args) = match spec.launcher.split_first() {
        Some((program, rest)) => {
            let mut args = rest.to_vec();
            args.push(shell.to_owned());
            (program.clone(), args)
        }
        None => (shell.to_owned(), Vec::new()),
    };
    args.extend(["-c".to_owned(), spec.command.clone()]);
    // The editor starts commands in its own environment: send what the tool set on top.
    let env: Vec<EnvVariable> = spec
        .env
        .iter()
        .filter(|(name, value)| std::env::var(name).ok().as_ref() != Some(value))
        .map(|(name, value)| EnvVariable::new(name.clone(), value.clone()))
        .collect();
    let request = CreateTerminalRequest::new(link.session.clone(), command)
        .args(args)
        .env(env)
        .cwd(PathBuf::from(&spec.cwd))
        .output_byte_limit(OUTPUT_LIMIT);
    let terminal = create(request)?;
    if let Some(call_id) = link.terminals.claim(&spec.command, &terminal) {
        let update = ToolCallUpdate::new(
            call_id,
            ToolCallUpdateFields::new().content(vec![content(&terminal)]),
        );
        if let Err(err) = link.cx.send_notification(SessionNotification::new(
            link.session.clone(),
            SessionUpdate::ToolCallUpdate(update),
        )) {
            tracing::warn!("cannot show the terminal in its tool call: {err}");
        }
    }
    let (chunks, output) = mpsc::unbounded_channel();
    let (ended_tx, ended) = watch::channel(None::<ProcessEnd>);
    let (kill_tx, kill) = mpsc::unbounded_channel::<()>();
    link.runtime.spawn(follow(
        link.cx.clone(),
        link.session.clone(),
        terminal,
        chunks,
        ended_tx,
        kill,
    ));
    Ok(SpawnedProcess {
        pid: None,
        output: ProcessOutput::Unbounded(output),
        control: Box::new(EditorProcess {
            ended,
            kill: kill_tx,
        }),
    })
}

/// Reads the terminal's output until the command exits, then releases the terminal.
async fn follow(
    cx: ConnectionTo<Client>,
    session: String,
    terminal: String,
    chunks: mpsc::UnboundedSender<(bool, Vec<u8>)>,
    ended: watch::Sender<Option<ProcessEnd>>,
    mut kill: mpsc::UnboundedReceiver<()>,
) {
    let waiter = {
        let (cx, session, terminal) = (cx.clone(), session.clone(), terminal.clone());
        tokio::spawn(async move {
            cx.send_request(WaitForTerminalExitRequest::new(session, terminal))
                .block_task()
                .await
        })
    };
    tokio::pin!(waiter);
    let mut seen = String::new();
    let mut tick = tokio::time::interval(POLL);
    let mut killing = false;
    let end = loop {
        tokio::select! {
            exit = &mut waiter => {
                break match exit {
                    Ok(Ok(response)) => exit_of(&response.exit_status),
                    Ok(Err(err)) => ProcessEnd::Lost(format!("the editor's terminal failed: {err}")),
                    Err(err) => ProcessEnd::Lost(format!("waiting for the editor's terminal failed: {err}")),
                };
            }
            _ = tick.tick() => {
                if !read_output(&cx, &session, &terminal, &mut seen, &chunks).await {
                    break ProcessEnd::Lost("the editor's terminal stopped answering".to_owned());
                }
            }
            stop = kill.recv(), if !killing => {
                killing = true;
                if stop.is_some()
                    && let Err(err) = cx
                        .send_request(KillTerminalRequest::new(session.clone(), terminal.clone()))
                        .block_task()
                        .await
                {
                    tracing::warn!("the editor could not kill terminal {terminal}: {err}");
                }
            }
        }
    };
    // What arrived between the last read and the exit.
    read_output(&cx, &session, &terminal, &mut seen, &chunks).await;
    drop(chunks);
    let _ = ended.send(Some(end));
    if let Err(err) = cx
        .send_request(ReleaseTerminalRequest::new(session, terminal.clone()))
        .block_task()
        .await
    {
        tracing::warn!("the editor could not release terminal {terminal}: {err}");
    }
}

fn exit_of(status: &TerminalExitStatus) -> ProcessEnd {
    ProcessEnd::Exited(status.exit_code.and_then(|code| i32::try_from(code).ok()))
}

/// Sends the output that is new since `seen`; false when the editor did not answer.
async fn read_output(
    cx: &ConnectionTo<Client>,
    session: &str,
    terminal: &str,
    seen: &mut String,
    chunks: &mpsc::UnboundedSender<(bool, Vec<u8>)>,
) -> bool {
    let Ok(response) = cx
        .send_request(TerminalOutputRequest::new(
            session.to_owned(),
            terminal.to_owned(),
        ))
        .block_task()
        .await
    else {
        return false;
    };
    let output = response.output;
    let new = match output.strip_prefix(seen.as_str()) {
        Some(rest) => rest,
        None => {
            // The editor dropped the start (its byte limit): what follows the end of what
            // was seen, or all of it when that cannot be found.
            let tail = seen
                .get(seen.len().saturating_sub(64)..)
                .unwrap_or_default();
            match (!tail.is_empty()).then(|| output.rfind(tail)).flatten() {
                Some(at) => &output[at + tail.len()..],
                None => output.as_str(),
            }
        }
    };
    if !new.is_empty() {
        let _ = chunks.send((false, new.as_bytes().to_vec()));
    }
    *seen = output;
    true
}

/// The Bash side of an editor terminal.
struct EditorProcess {
    ended: watch::Receiver<Option<ProcessEnd>>,
    kill: mpsc::UnboundedSender<()>,
}

impl EditorProcess {
    async fn ended(&mut self) -> ProcessEnd {
        match self.ended.wait_for(Option::is_some).await {
            Ok(end) => end
                .clone()
                .unwrap_or_else(|| ProcessEnd::Lost("no exit status".to_owned())),
            Err(_) => ProcessEnd::Lost("the connection to the editor closed".to_owned()),
        }
    }
}

#[async_trait::async_trait]
impl ProcessControl for EditorProcess {
    async fn wait(&mut self) -> ProcessEnd {
        self.ended().await
    }

    async fn kill_group(&mut self, _grace: Duration) -> ProcessEnd {
        // The editor decides how to stop its terminal's process.
        let _ = self.kill.send(());
        self.ended().await
    }
}
