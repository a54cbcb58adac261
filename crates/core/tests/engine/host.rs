//! The session host: sessions opened through `kimi_core::host::SessionHost`, and the host ops
//! (session listing, background tasks, `!` shell commands, MCP status) answered as events on
//! the session's own stream — the same `Op`/`Event` path every front end uses.

use std::path::Path;
use std::sync::Arc;

use kimi_core::engine::runtime::ApproveAll;
use kimi_core::host::{HostError, SessionExtras, SessionFactory, SessionHost};
use kimi_core::session::{OpenedSession, Resume, SessionSetup};
use kimi_llm::scripted::ScriptTurn;
use kimi_llm::{ModelParams, Provider, ProviderType, RetryPolicy};
use kimi_protocol::ContentPart;
use kimi_protocol::host::{McpServerEntry, McpServerState, McpStatus};
use kimi_protocol::ops::{Event, Op, TurnEndReason};
use kimi_store::FsyncPolicy;
use kimi_test_support::ScriptServer;
use pretty_assertions::assert_eq;

use crate::harness::{Dirs, WAIT, provider_for};

struct Factory {
    home: std::path::PathBuf,
    provider: Arc<dyn Provider>,
}

/// Extras with one MCP server that failed to start, as the launch would report it.
struct Extras;

fn mcp_status() -> McpStatus {
    McpStatus {
        servers: vec![McpServerEntry {
            name: "docs".into(),
            transport: "stdio".into(),
            state: McpServerState::Failed("cannot start `docs-server`: not found".into()),
            tool_count: 0,
            source: None,
        }],
        problem: None,
        config_files: vec!["~/.kimi-rs/mcp.json".into()],
    }
}

#[async_trait::async_trait]
impl SessionExtras for Extras {
    fn mcp_status(&self) -> McpStatus {
        mcp_status()
    }
}

impl SessionFactory for Factory {
    fn setup(
        &self,
        cwd: &Path,
        resume: &Resume,
        _mcp_servers: Option<&serde_json::Value>,
    ) -> Result<(SessionSetup, Arc<dyn SessionExtras>), String> {
        let setup = SessionSetup {
            home: self.home.clone(),
            cwd: cwd.to_owned(),
            resume: resume.clone(),
            provider: self.provider.clone(),
            params: ModelParams::default(),
            max_context_tokens: 0,
            max_steps_per_turn: None,
            retry: RetryPolicy::default(),
            permissions: Arc::new(ApproveAll),
            permission_chain: None,
            additional_dirs: Vec::new(),
            tool_env: std::env::vars().collect(),
            fsync: FsyncPolicy::Never,
            extensions: Default::default(),
            agent: Default::default(),
            config: Default::default(),
            model_pool: Default::default(),
            model_alias: None,
            models: None,
        };
        Ok((setup, Arc::new(Extras)))
    }
}

async fn next(opened: &mut OpenedSession, pred: impl Fn(&Event) -> bool) -> Event {
    loop {
        let event = tokio::time::timeout(WAIT, opened.agent.events.recv())
            .await
            .expect("an event in time")
            .expect("the event stream is open");
        if pred(&event) {
            return event;
        }
    }
}

async fn run(host: &SessionHost, opened: &mut OpenedSession, prompt: &str) {
    let id = opened.session.state.id.clone();
    host.send(
        &id,
        Op::Submit {
            input: vec![ContentPart::text(prompt)],
            origin: None,
            prompt_id: None,
        },
    )
    .await
    .unwrap();
    let ended = next(opened, |e| matches!(e, Event::TurnEnded { .. })).await;
    assert!(
        matches!(
            ended,
            Event::TurnEnded {
                reason: TurnEndReason::Completed,
                ..
            }
        ),
        "{ended:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_answers_session_listing_titles_tasks_shell_and_mcp_status_as_events() {
    let dirs = Dirs::new();
    let other = tempfile::tempdir().unwrap();
    let other_cwd = std::fs::canonicalize(other.path()).unwrap();
    let server = ScriptServer::start(vec![
        ScriptTurn::text("hello back"),
        ScriptTurn::text("elsewhere"),
        ScriptTurn::tool_calls(&[(
            "call_bg",
            "Bash",
            r#"{"command":"echo task-started; sleep 60","run_in_background":true,"description":"long job"}"#,
        )]),
        ScriptTurn::text("started it"),
        // The stopped task's completion notice starts a turn of its own.
        ScriptTurn::text("noted: the job was stopped"),
    ])
    .await
    .unwrap();
    let host = SessionHost::new(
        dirs.home.path().to_owned(),
        Arc::new(Factory {
            home: dirs.home.path().to_owned(),
            provider: provider_for(&server, ProviderType::Kimi),
        }),
    );

    // An empty new session is not offered for resuming; once it has a prompt it is.
    let mut a = host.open(&dirs.cwd(), Resume::New, None).unwrap();
    let a_id = a.session.state.id.clone();
    host.send(&a_id, Op::ListSessions { all: true })
        .await
        .unwrap();
    let Event::SessionList { sessions } =
        next(&mut a, |e| matches!(e, Event::SessionList { .. })).await
    else {
        unreachable!()
    };
    assert!(sessions.iter().all(|s| s.id != a_id), "{sessions:?}");
    run(&host, &mut a, "hello").await;

    let mut b = host.open(&other_cwd, Resume::New, None).unwrap();
    let b_id = b.session.state.id.clone();
    run(&host, &mut b, "in another directory").await;

    host.send(&a_id, Op::ListSessions { all: false })
        .await
        .unwrap();
    let Event::SessionList { sessions } =
        next(&mut a, |e| matches!(e, Event::SessionList { .. })).await
    else {
        unreachable!()
    };
    let ids: Vec<_> = sessions.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, vec![a_id.as_str()]);
    assert_eq!(sessions[0].title.as_deref(), Some("hello"));
    assert!(sessions[0].this_dir);
    host.send(&a_id, Op::ListSessions { all: true })
        .await
        .unwrap();
    let Event::SessionList { sessions } =
        next(&mut a, |e| matches!(e, Event::SessionList { .. })).await
    else {
        unreachable!()
    };
    let rows: Vec<_> = sessions
        .iter()
        .map(|s| (s.id.as_str(), s.this_dir))
        .collect();
    assert_eq!(rows, vec![(b_id.as_str(), false), (a_id.as_str(), true)]);
    // The same index, asked directly (the web server's listing).
    let direct = host.list_sessions(Some(&dirs.cwd())).unwrap();
    assert_eq!(direct, sessions);

    // The title: named by the first prompt, renamed by the user, kept over later prompts.
    host.send(&a_id, Op::SetTitle { title: None })
        .await
        .unwrap();
    let title = next(&mut a, |e| matches!(e, Event::SessionTitle { .. })).await;
    assert_eq!(
        title,
        Event::SessionTitle {
            title: Some("hello".into()),
            changed: false
        }
    );
    host.send(
        &a_id,
        Op::SetTitle {
            title: Some("Parser work".into()),
        },
    )
    .await
    .unwrap();
    let title = next(&mut a, |e| matches!(e, Event::SessionTitle { .. })).await;
    assert_eq!(
        title,
        Event::SessionTitle {
            title: Some("Parser work".into()),
            changed: true
        }
    );

    // A fork: a copy under a new id in the same directory, with the conversation so far.
    host.send(&a_id, Op::Fork).await.unwrap();
    let Event::SessionForked {
        session_id: fork_id,
        cwd,
        title,
    } = next(&mut a, |e| matches!(e, Event::SessionForked { .. })).await
    else {
        unreachable!()
    };
    assert_ne!(fork_id, a_id);
    assert_eq!(title.as_deref(), Some("Parser work (fork)"));
    assert_eq!(cwd.as_deref(), Some(dirs.cwd().to_str().unwrap()));
    let forked = host.session(&fork_id).unwrap().unwrap();
    assert_eq!(forked.title.as_deref(), Some("Parser work (fork)"));
    let store = kimi_store::SessionStore::new(kimi_store::Home::new(host.home()));
    let journal = |id: &str| {
        let key = store.locate(id).unwrap();
        std::fs::read_to_string(store.open(&key, id).unwrap().journal_path("main")).unwrap()
    };
    assert!(
        journal(&fork_id).contains("\"hello\""),
        "the fork has the first prompt"
    );

    // Background tasks: listed, their output read, stopped.
    run(&host, &mut a, "start the long job").await;
    let renamed = host.session(&a_id).unwrap().unwrap();
    assert_eq!(renamed.title.as_deref(), Some("Parser work"));
    host.send(&a_id, Op::ListTasks).await.unwrap();
    let Event::TaskList { tasks } = next(&mut a, |e| matches!(e, Event::TaskList { .. })).await
    else {
        unreachable!()
    };
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    assert_eq!(
        (tasks[0].description.as_str(), tasks[0].status.as_str()),
        ("long job", "running")
    );
    let task_id = tasks[0].id.clone();
    // The task's process writes its output at its own pace: ask again until it is there.
    let output = tokio::time::timeout(WAIT, async {
        loop {
            host.send(
                &a_id,
                Op::TaskOutput {
                    task_id: task_id.clone(),
                    max_bytes: None,
                },
            )
            .await
            .unwrap();
            let Event::TaskOutput { output, .. } =
                next(&mut a, |e| matches!(e, Event::TaskOutput { .. })).await
            else {
                unreachable!()
            };
            if !output.is_empty() {
                break output;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the task's output within the wait");
    assert_eq!(output, "task-started\n");
    host.send(
        &a_id,
        Op::StopTask {
            task_id: task_id.clone(),
        },
    )
    .await
    .unwrap();
    let stopped = next(&mut a, |e| matches!(e, Event::TaskStopped { .. })).await;
    assert_eq!(
        stopped,
        Event::TaskStopped {
            task_id: task_id.clone(),
            status: "killed".into()
        }
    );
    // The agent reports the ended task to the model in a turn of its own; wait for it so its
    // events cannot interleave with the answers below.
    let notice = next(&mut a, |e| matches!(e, Event::TurnEnded { .. })).await;
    assert!(
        matches!(
            notice,
            Event::TurnEnded {
                reason: TurnEndReason::Completed,
                ..
            }
        ),
        "{notice:?}"
    );
    host.send(&a_id, Op::ListTasks).await.unwrap();
    let Event::TaskList { tasks } = next(&mut a, |e| matches!(e, Event::TaskList { .. })).await
    else {
        unreachable!()
    };
    assert_eq!(tasks[0].status, "killed");
    host.send(
        &a_id,
        Op::StopTask {
            task_id: "no-such-task".into(),
        },
    )
    .await
    .unwrap();
    let error = next(&mut a, |e| matches!(e, Event::Error { .. })).await;
    assert!(
        matches!(&error, Event::Error { message } if message.contains("no-such-task")),
        "{error:?}"
    );

    // `!command`: run in the session's directory, output and failure reported.
    std::fs::write(dirs.file("marker.txt"), "").unwrap();
    host.send(
        &a_id,
        Op::Shell {
            command: "ls; echo oops >&2; exit 3".into(),
            background: false,
        },
    )
    .await
    .unwrap();
    let shell = next(&mut a, |e| matches!(e, Event::ShellOutput { .. })).await;
    assert_eq!(
        shell,
        Event::ShellOutput {
            command: "ls; echo oops >&2; exit 3".into(),
            output: "marker.txt\noops\n".into(),
            is_error: true,
        }
    );

    host.send(&a_id, Op::McpStatus).await.unwrap();
    let mcp = next(&mut a, |e| matches!(e, Event::McpStatus { .. })).await;
    assert_eq!(
        mcp,
        Event::McpStatus {
            status: mcp_status()
        }
    );

    // A host op sent to the agent directly is refused, not dropped.
    assert!(a.agent.handle.send(Op::ListTasks));
    let refused = next(&mut a, |e| matches!(e, Event::Error { .. })).await;
    assert!(
        matches!(&refused, Event::Error { message } if message.contains("session host")),
        "{refused:?}"
    );
    assert!(matches!(
        host.send("nope", Op::ListTasks).await,
        Err(HostError::NotOpen(_))
    ));

    for opened in [a, b] {
        opened.agent.handle.send(Op::Shutdown);
        tokio::time::timeout(WAIT, opened.agent.join)
            .await
            .unwrap()
            .unwrap();
    }
    host.shutdown().await;
    crate::harness::assert_paired(&server);
}

/// `!command`s reach the model (the reference's `<bash-input>` / `<bash-stdout>` messages, in
/// the journal), and Ctrl-B turns a running one into a background task the model is told
/// about — when it moves and again when it ends — and `/tasks` lists.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_shell_commands_reach_the_model_and_ctrl_b_backgrounds_them() {
    let dirs = Dirs::new();
    let server = ScriptServer::start(vec![
        ScriptTurn::text("it printed hi"),
        ScriptTurn::text("fine, it runs in the background"),
        ScriptTurn::text("noted: the background command finished"),
    ])
    .await
    .unwrap();
    let host = SessionHost::new(
        dirs.home.path().to_owned(),
        Arc::new(Factory {
            home: dirs.home.path().to_owned(),
            provider: provider_for(&server, ProviderType::Kimi),
        }),
    );
    let mut a = host.open(&dirs.cwd(), Resume::New, None).unwrap();
    let id = a.session.state.id.clone();

    let command = "echo hi; echo '<err>' >&2; exit 2";
    host.send(
        &id,
        Op::Shell {
            command: command.into(),
            background: false,
        },
    )
    .await
    .unwrap();
    let started = next(&mut a, |e| matches!(e, Event::ShellStarted { .. })).await;
    assert!(
        matches!(&started, Event::ShellStarted { command: c, .. } if c == command),
        "{started:?}"
    );
    let output = next(&mut a, |e| matches!(e, Event::ShellOutput { .. })).await;
    assert_eq!(
        output,
        Event::ShellOutput {
            command: command.into(),
            output: "hi\n<err>\n".into(),
            is_error: true,
        }
    );
    run(&host, &mut a, "what did it print?").await;
    let requests = server.requests();
    let texts = crate::harness::user_texts(&requests[0].body);
    assert_eq!(
        texts,
        vec![
            "<bash-input>\necho hi; echo '&lt;err&gt;' &gt;&amp;2; exit 2\n</bash-input>"
                .to_owned(),
            "<bash-stdout>hi\n</bash-stdout><bash-stderr>&lt;err&gt;\n</bash-stderr>".to_owned(),
            "what did it print?".to_owned(),
        ]
    );
    let journal = crate::harness::read_journal(&a.session.journal_path("main"));
    let origins: Vec<_> = journal
        .iter()
        .filter(|r| r["type"] == "context.append_message")
        .map(|r| r["message"]["origin"].clone())
        .collect();
    assert_eq!(
        origins[..2],
        [
            serde_json::json!({"kind": "shell_command", "phase": "input"}),
            serde_json::json!({"kind": "shell_command", "phase": "output", "isError": true}),
        ]
    );

    // Ctrl-B on a command that waits for a file.
    let gate = dirs.file("go");
    let long = format!(
        "echo begun; while [ ! -f {} ]; do sleep 0.05; done; echo finished",
        gate.display()
    );
    host.send(
        &id,
        Op::Shell {
            command: long.clone(),
            background: false,
        },
    )
    .await
    .unwrap();
    next(&mut a, |e| matches!(e, Event::ShellStarted { .. })).await;
    // A second foreground command is refused while this one runs.
    host.send(
        &id,
        Op::Shell {
            command: "true".into(),
            background: false,
        },
    )
    .await
    .unwrap();
    let refused = next(&mut a, |e| matches!(e, Event::Error { .. })).await;
    assert!(
        matches!(&refused, Event::Error { message } if message.contains("Ctrl-B")),
        "{refused:?}"
    );
    host.send(&id, Op::ShellToBackground).await.unwrap();
    let Event::ShellBackgrounded { command, task_id } =
        next(&mut a, |e| matches!(e, Event::ShellBackgrounded { .. })).await
    else {
        unreachable!()
    };
    assert_eq!(command, long);
    // The model is told in a turn of its own (the agent was idle).
    next(&mut a, |e| matches!(e, Event::TurnEnded { .. })).await;
    let told = crate::harness::user_texts(&server.requests()[1].body);
    let notice = told.last().unwrap();
    assert!(
        notice.contains(&format!("task_id: {task_id}"))
            && notice.contains("detached_by_user: true"),
        "{notice}"
    );
    host.send(&id, Op::ListTasks).await.unwrap();
    let Event::TaskList { tasks } = next(&mut a, |e| matches!(e, Event::TaskList { .. })).await
    else {
        unreachable!()
    };
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    assert_eq!(
        (tasks[0].id.as_str(), tasks[0].status.as_str()),
        (task_id.as_str(), "running")
    );
    assert_eq!(tasks[0].description, format!("! {long}"));
    // Ctrl-B with nothing running says so.
    host.send(&id, Op::ShellToBackground).await.unwrap();
    let none = next(&mut a, |e| matches!(e, Event::Error { .. })).await;
    assert!(
        matches!(&none, Event::Error { message } if message.contains("no `!` command")),
        "{none:?}"
    );

    // When it ends, the model hears about it like any background task.
    std::fs::write(&gate, "").unwrap();
    next(&mut a, |e| matches!(e, Event::TurnEnded { .. })).await;
    let ended = crate::harness::user_texts(&server.requests()[2].body);
    let last = ended.last().unwrap();
    assert!(
        last.contains(&format!("Background task {task_id}")) && last.contains("completed"),
        "{last}"
    );

    a.agent.handle.send(Op::Shutdown);
    tokio::time::timeout(WAIT, a.agent.join)
        .await
        .unwrap()
        .unwrap();
    host.shutdown().await;
    crate::harness::assert_paired(&server);
}
