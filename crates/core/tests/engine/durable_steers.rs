//! A steer is durable from the moment the engine accepts it: the process dying before the
//! running turn's next step gate (a crash, `kill -9`) does not lose it — the resumed session
//! delivers it to the model, exactly once.

use kimi_core::session::Resume;
use kimi_llm::ProviderType;
use kimi_llm::scripted::ScriptTurn;
use kimi_protocol::ContentPart;
use kimi_protocol::ops::{Event, Op, TurnEndReason};
use pretty_assertions::assert_eq;

use crate::harness::{Dirs, Options, Session, WAIT, copy_tree, mkfifo, release_fifo, user_texts};

const STEER: &str = "STEER: also check the README";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steer_accepted_while_a_tool_runs_survives_a_crash_and_reaches_the_model_once() {
    let dirs = Dirs::new();
    let fifo = dirs.file("gate.fifo");
    mkfifo(&fifo);
    let script = vec![ScriptTurn::tool_calls(&[(
        "call_wait",
        "Bash",
        r#"{"command":"cat gate.fifo"}"#,
    )])];
    let mut s = Session::start(&dirs, ProviderType::OpenAi, script).await;
    s.submit("Wait for the gate.");
    s.wait_for(|e| matches!(e, Event::ToolStarted { .. })).await;
    // The same op the TUI sends on Ctrl-S.
    s.send(Op::Steer {
        input: vec![ContentPart::text(STEER)],
    });
    s.barrier().await;
    // The crash: what is on disk now is all a restarted process finds (the running process
    // never reaches its next gate, never shuts down). A copy of the home is that disk.
    let crashed = Dirs::new();
    copy_tree(dirs.home.path(), crashed.home.path());
    let id = s.session_id();
    release_fifo(fifo, "gate-open\n").await;
    drop(s);

    // The resumed process runs in the same working directory as the crashed one.
    let resumed_dirs = Dirs {
        home: crashed.home,
        work: dirs.work,
    };
    let mut options = Options::new(ProviderType::OpenAi);
    options.resume = Resume::Id(id);
    let mut r = Session::start_with(
        &resumed_dirs,
        options,
        vec![ScriptTurn::text("Checked the README too.")],
    )
    .await;
    let (reason, error) = tokio::time::timeout(WAIT, r.turn_end())
        .await
        .expect("the resumed session delivers the steer without a new prompt");
    assert_eq!(reason, TurnEndReason::Completed, "{error:?}");
    let requests = r.requests();
    assert_eq!(requests.len(), 1);
    let users = user_texts(&requests[0].body);
    assert_eq!(
        users.iter().filter(|u| u.contains(STEER)).count(),
        1,
        "the steer reached the model exactly once: {users:#?}"
    );
    assert_eq!(users.last().map(String::as_str), Some(STEER));

    // Delivered once means once: the next prompt's request carries it once, still.
    r.server.push(ScriptTurn::text("Fine."));
    let (reason, _) = r.run("Anything else?").await;
    assert_eq!(reason, TurnEndReason::Completed);
    let last = r.requests().pop().unwrap();
    assert_eq!(last.raw_body.matches(STEER).count(), 1, "{}", last.raw_body);
    r.close().await;

    // And a third process finds nothing left to deliver.
    let id = r.session_id();
    drop(r);
    let mut options = Options::new(ProviderType::OpenAi);
    options.resume = Resume::Id(id);
    let again = Session::start_with(&resumed_dirs, options, vec![]).await;
    assert!(
        again.opened.restored.queued_prompts.is_empty(),
        "{:?}",
        again.opened.restored.queued_prompts
    );
}
