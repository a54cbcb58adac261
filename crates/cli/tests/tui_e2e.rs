//! The interactive UI end to end: the real `kimi-rs` binary on a pseudo-terminal, typed at like
//! a user and read back through a vt100 emulator, talking to the loopback scripted model. One
//! session streams an answer, asks to write a file (manual mode shows the approval panel), writes
//! it once approved and exits on Ctrl-D with the terminal restored; `kimi-rs -S <id>` then shows
//! that conversation again (and exits on a double Ctrl-C), and `kimi-rs -S` picks it from the
//! session picker. Another launch shows skills in the `/` menu, an MCP server that failed to
//! start as a warning, and the `/mcp` panel. A steer typed with Ctrl-S while a tool runs
//! survives a kill -9 and reaches the model once the session is resumed.
#![allow(clippy::unwrap_used, clippy::expect_used)] // helpers outside #[test] fns count as tests here

mod common;
mod pty;

use std::path::Path;

use kimi_llm::FinishReason;
use kimi_llm::scripted::{ScriptEvent, ScriptTurn};
use kimi_test_support::ScriptServer;
use pty::{COLS, ROWS, Session};

const PROMPT: &str = "please write the notes file";
const STREAM_FIRST: &str = "Sure, writing notes.txt";
const STREAM_SECOND: &str = "with one greeting line.";
// Chinese and emoji: two columns each, drawn without gaps in the viewport and in scrollback.
const FINAL_ANSWER: &str = "Done: notes.txt now greets you. 完成 ✅";
const CONTENT: &str = "hello from the e2e test\n";

/// The trampoline: with [`EXEC_ENV`] set (by [`Session::spawn`]), starts a new session so
/// the pseudo-terminal on stdin/stdout is the only terminal the UI can find (crossterm asks
/// `/dev/tty` for the size), then replaces itself with `kimi-rs` and the JSON-listed
/// arguments. In a normal test run it does nothing.
#[test]
fn exec_in_new_session() {
    pty::trampoline(env!("CARGO_BIN_EXE_kimi-rs"));
}

/// The model's side of the conversation: a streamed answer with a pause in the middle, then a
/// Write call; after the tool result, a short final answer.
fn script(target: &str) -> Vec<ScriptTurn> {
    let args = serde_json::json!({ "path": target, "content": CONTENT }).to_string();
    let mut first = vec![
        ScriptEvent::text(format!("{STREAM_FIRST} ")),
        // Long enough to see the first half on screen before the second arrives.
        ScriptEvent::Delay { ms: 2500 },
        ScriptEvent::text(STREAM_SECOND),
    ];
    first.extend(ScriptEvent::tool_call(0, "call_1", "Write", &args, 3));
    first.push(ScriptEvent::usage(10, 5));
    first.push(ScriptEvent::finish(FinishReason::ToolCalls));
    vec![ScriptTurn::reply(first), ScriptTurn::text(FINAL_ANSWER)]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_streams_asks_writes_exits_and_resumes_in_a_real_terminal() {
    let work = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let target = work.path().join("notes.txt");
    let server = ScriptServer::start(script("notes.txt")).await.unwrap();
    let base_url = server.base_url();
    let (work_path, home_path) = (work.path().to_owned(), home.path().to_owned());
    // The terminal is driven with blocking reads; the scripted server keeps running on the
    // runtime's workers meanwhile.
    let first = tokio::task::spawn_blocking(move || {
        let mut s = Session::spawn(&work_path, &home_path, &base_url, &[]);
        // Without a tui.toml the footer shows the permission mode and the model.
        s.wait_for("the prompt and footer", |t| {
            t.contains("ask anything") && t.contains("manual · m · ")
        });
        s.send(format!("{PROMPT}\r").as_bytes());

        // The answer streams: its first half shows while the second is still on its way.
        s.wait_for("the first half of the streamed answer", |t| {
            t.contains(STREAM_FIRST) && !t.contains(STREAM_SECOND)
        });
        let panel = s.wait_for("the approval panel", |t| {
            t.contains("Allow Write") && t.contains("1. Approve once")
        });
        assert!(panel.contains(&format!("› {PROMPT}")), "{panel}");
        assert!(panel.contains("Waiting for your approval ("), "{panel}");
        assert!(
            panel.contains(&format!("{STREAM_FIRST} {STREAM_SECOND}")),
            "{panel}"
        );
        assert!(panel.contains("/notes.txt"), "{panel}");
        assert!(panel.contains("+hello from the e2e test"), "diff: {panel}");
        assert!(!target.exists(), "written before approval");

        s.send(b"1");
        // The engine starts the tool once approved: its card finishes, then the answer ends.
        let done = s.wait_for("the tool card and the final answer", |t| {
            t.contains("✓ Write notes.txt")
                && t.contains(FINAL_ANSWER)
                && t.contains("ask anything")
        });
        assert!(!done.contains("Allow Write"), "the panel closed: {done}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), CONTENT);

        // Ctrl-D on an empty prompt exits.
        s.send(b"\x04");
        let (status, text) = s.wait_exit("Ctrl-D");
        assert!(status.success(), "kimi-rs failed: {status}\n{text}");
        s.assert_restored(&text);
        // The conversation stays in the terminal, in order.
        let prompt = text.find(&format!("› {PROMPT}")).expect(&text);
        let answer = text.find(STREAM_SECOND).expect(&text);
        let card = text.find("✓ Write notes.txt").expect(&text);
        let last = text.find(FINAL_ANSWER).expect(&text);
        assert!(prompt < answer && answer < card && card < last, "{text}");
        text
    })
    .await
    .unwrap();

    // The session is in the index, and the exit hint names it.
    let store = kimi_store::SessionStore::new(kimi_store::Home::new(home.path()));
    let sessions = store.index().list().unwrap();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let id = sessions[0].id.clone();
    let flat: String = first.split_whitespace().collect();
    assert!(
        flat.contains("Toresumethissession:") && flat.contains(&format!("kimi-rs-r{id}")),
        "no resume hint for {id}:\n{first}"
    );
    assert_eq!(server.remaining_turns(), 0);
    assert!(server.pairing_violations().is_empty());

    let base_url = server.base_url();
    let (work_path, home_path) = (work.path().to_owned(), home.path().to_owned());
    let resumed = id.clone();
    tokio::task::spawn_blocking(move || {
        let mut s = Session::spawn(&work_path, &home_path, &base_url, &["-S", &resumed]);
        let text = s.wait_for("the resumed transcript", |t| {
            t.contains(PROMPT) && t.contains(FINAL_ANSWER) && t.contains("ask anything")
        });
        assert!(text.contains(STREAM_FIRST), "{text}");
        assert!(text.contains("Write"), "{text}");
        // Double Ctrl-C exits too.
        s.send(b"\x03");
        s.wait_for("the exit hint", |t| t.contains("Ctrl-C again"));
        s.send(b"\x03");
        let (status, text) = s.wait_exit("double Ctrl-C");
        assert!(status.success(), "kimi-rs -S failed: {status}\n{text}");
        s.assert_restored(&text);
        let flat: String = text.split_whitespace().collect();
        assert!(flat.contains(&format!("kimi-rs-r{resumed}")), "{text}");
    })
    .await
    .unwrap();

    // `-S` without an id opens the picker on a fresh session; only the earlier one is listed.
    let base_url = server.base_url();
    let (work_path, home_path) = (work.path().to_owned(), home.path().to_owned());
    let resumed = id.clone();
    tokio::task::spawn_blocking(move || {
        let mut s = Session::spawn(&work_path, &home_path, &base_url, &["-S"]);
        // The session is named after its first prompt; the empty session `-S` just opened
        // is not offered.
        let picker = s.wait_for("the session picker", |t| {
            t.contains("Resume a session") && t.contains(&format!("› {PROMPT}"))
        });
        assert_eq!(picker.matches(PROMPT).count(), 1, "{picker}");
        assert!(!picker.contains("(untitled)"), "{picker}");
        s.send(b"\r");
        let text = s.wait_for("the picked session's transcript", |t| {
            t.contains(PROMPT) && t.contains(FINAL_ANSWER) && t.contains("ask anything")
        });
        assert!(text.contains(STREAM_FIRST), "{text}");
        s.send(b"\x04");
        let (status, text) = s.wait_exit("Ctrl-D");
        assert!(status.success(), "kimi-rs -S failed: {status}\n{text}");
        s.assert_restored(&text);
        let flat: String = text.split_whitespace().collect();
        assert!(flat.contains(&format!("kimi-rs-r{resumed}")), "{text}");
    })
    .await
    .unwrap();
    // Resuming asked the model nothing.
    assert_eq!(server.requests().len(), 2);
}

/// Skills and MCP servers in the interactive UI: a skill and two MCP servers in `$KIMI_RS_HOME`
/// (the fixture server and one that cannot start). The failed server's warning shows in the
/// transcript, `/` completion offers the skill, `/mcp` lists both servers, and a `!` command
/// runs.
#[test]
fn mcp_panel_skill_completion_and_startup_warnings_in_a_real_terminal() {
    let work = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let config = serde_json::json!({"mcpServers": {
        "fixture": {"command": common::mcp_fixture()},
        "gone": {"command": "/nonexistent/mcp-server"},
    }});
    std::fs::write(home.path().join("mcp.json"), config.to_string()).unwrap();
    let skill = home.path().join("skills/review");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: review\ndescription: review the staged change\n---\nReview the change.\n",
    )
    .unwrap();

    let mut s = Session::spawn_sized(work.path(), home.path(), "http://127.0.0.1:9", &[], 40, 110);
    // The server that cannot start is reported in the transcript; the fixture connects in
    // the background (the footer counts it until then).
    let start = s.wait_for("the prompt, the MCP warning, no server connecting", |t| {
        t.contains("ask anything")
            && t.contains("⚠")
            && t.contains("gone")
            && !t.contains("connecting 1 MCP server")
    });
    assert!(!start.contains("MCP servers"), "{start}");

    s.send(b"/rev");
    s.wait_for("the skill in the completion menu", |t| {
        t.contains("/skill:review") && t.contains("review the staged change")
    });
    s.send(b"\x15\x1b"); // Ctrl-U empties the prompt; Esc closes the menu

    s.send(b"/mcp\r");
    let panel = s.wait_for("the /mcp panel", |t| {
        t.contains("MCP servers") && t.contains("tools available")
    });
    let row = |name: &str| {
        panel
            .lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no row for {name}:\n{panel}"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let fixture = row("fixture");
    assert!(fixture.starts_with("fixture connected stdio "), "{panel}");
    assert!(
        fixture.ends_with(" tools") || fixture.ends_with(" tool"),
        "{panel}"
    );
    assert!(row("gone").starts_with("gone failed stdio"), "{panel}");
    assert!(panel.contains("error:"), "{panel}");

    // A `!` command runs through the session host (`Op::Shell`) and its output comes back
    // as an event: the arithmetic is only in the output, never in what was typed.
    s.send(b"!echo shell-via-host-$((6*7))\r");
    s.wait_for("the shell command's output", |t| {
        t.contains("shell-via-host-42")
    });

    s.send(b"\x04");
    let (status, text) = s.wait_exit("Ctrl-D");
    assert!(status.success(), "kimi-rs failed: {status}\n{text}");
}

/// The todo panel and shell mode in a real terminal: the model's `TodoList` shows above the
/// prompt; a `!` command's output reaches the model with the next prompt, and Ctrl-B moves a
/// running one to the background, where `/tasks` lists it and the model is told about it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn todo_panel_shell_output_and_ctrl_b_in_a_real_terminal() {
    let work = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let server = ScriptServer::start(vec![
        ScriptTurn::tool_calls(&[(
            "call_todo",
            "TodoList",
            r#"{"todos":[{"title":"read the parser","status":"done"},{"title":"fix the off-by-one","status":"in_progress"},{"title":"add a regression test","status":"pending"}]}"#,
        )]),
        ScriptTurn::text("Planned."),
        ScriptTurn::text("It printed forty-two."),
        ScriptTurn::text("Noted: sleep runs in the background."),
    ])
    .await
    .unwrap();
    let base_url = server.base_url();
    let (work_path, home_path) = (work.path().to_owned(), home.path().to_owned());
    tokio::task::spawn_blocking(move || {
        let mut s = Session::spawn(&work_path, &home_path, &base_url, &["--yolo"]);
        s.wait_for("the prompt", |t| t.contains("ask anything"));
        s.send(b"plan the fix\r");
        let panel = s.wait_for("the todo panel", |t| {
            t.contains("Planned.") && t.contains("Todo · 1/3 done")
        });
        assert!(panel.contains("◐ fix the off-by-one"), "{panel}");
        assert!(panel.contains("○ add a regression test"), "{panel}");
        s.send(b"!echo answer-$((6*7))\r");
        s.wait_for("the command's output", |t| t.contains("answer-42"));
        s.send(b"\x7f"); // Backspace on empty input leaves shell mode
        s.send(b"what did it print?\r");
        s.wait_for("the answer", |t| t.contains("It printed forty-two."));
        s.send(b"!sleep 30\r");
        s.wait_for("the running command in the footer", |t| {
            t.contains("running `sleep 30`")
        });
        s.send(b"\x02"); // Ctrl-B
        s.wait_for("the background notice", |t| {
            t.contains("runs in the background as task")
        });
        s.wait_for("the model told of it", |t| {
            t.contains("Noted: sleep runs in the background.")
        });
        s.send(b"\x7f");
        s.send(b"/tasks\r");
        s.wait_for("the task browser", |t| {
            t.contains("! sleep 30") && t.contains("running")
        });
        s.send(b"\x1b");
        s.wait_for("the task browser closed", |t| !t.contains("! sleep 30"));
        s.send(b"\x04");
        let (status, text) = s.wait_exit("Ctrl-D");
        assert!(status.success(), "kimi-rs failed: {status}\n{text}");
    })
    .await
    .unwrap();
    let requests = server.requests();
    assert!(
        requests[2].raw_body.contains("<bash-stdout>answer-42"),
        "{}",
        requests[2].raw_body
    );
    assert!(
        requests[3].raw_body.contains("detached_by_user: true"),
        "{}",
        requests[3].raw_body
    );
}

/// The Reliability acceptance: a steer typed with Ctrl-S while a tool runs, then kill -9 — the
/// steer reaches the model after `kimi-rs -S <id>`, exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steer_typed_while_a_tool_runs_survives_kill_9_and_reaches_the_model_on_resume() {
    const STEER: &str = "use the blue palette instead";
    let work = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let fifo = work.path().join("gate.fifo");
    common::mkfifo(&fifo);
    let server = ScriptServer::start(vec![
        ScriptTurn::tool_calls(&[("call_gate", "Bash", r#"{"command":"cat gate.fifo"}"#)]),
        ScriptTurn::text("Switching to blue."),
    ])
    .await
    .unwrap();
    let base_url = server.base_url();
    let (work_path, home_path) = (work.path().to_owned(), home.path().to_owned());
    let writer = tokio::task::spawn_blocking(move || {
        let mut s = Session::spawn(&work_path, &home_path, &base_url, &["--yolo"]);
        s.wait_for("the prompt", |t| t.contains("ask anything"));
        s.send(b"paint the page\r");
        // The tool is running once `cat` has the pipe open.
        let writer = common::open_fifo_writer(&work_path.join("gate.fifo"));
        s.send(STEER.as_bytes());
        s.send(b"\x13"); // Ctrl-S
        // The screen says "steering…" until the engine has journaled the steer.
        s.wait_for("the steer acknowledgement", |t| {
            t.contains("steered into the running turn")
        });
        // Acknowledged means durable: the journal has it the moment the screen says so.
        let journal = find_journal(&home_path.join("sessions"))
            .and_then(|p| std::fs::read_to_string(p).ok())
            .unwrap_or_default();
        assert!(journal.contains(STEER), "acknowledged but not journaled");
        // About a second later, as a user would; no step gate has run in between (the tool
        // still waits on the pipe), so only the journal can bring the steer back.
        std::thread::sleep(std::time::Duration::from_secs(1));
        s.child.kill().unwrap(); // SIGKILL
        let _ = s.child.wait();
        writer
    })
    .await
    .unwrap();
    drop(writer); // the orphaned `cat` sees end of file and exits
    assert_eq!(server.requests().len(), 1);

    let store = kimi_store::SessionStore::new(kimi_store::Home::new(home.path()));
    let sessions = store.index().list().unwrap();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let id = sessions[0].id.clone();
    let base_url = server.base_url();
    let (work_path, home_path) = (work.path().to_owned(), home.path().to_owned());
    tokio::task::spawn_blocking(move || {
        let mut s = Session::spawn(&work_path, &home_path, &base_url, &["--yolo", "-S", &id]);
        s.wait_for("the resumed answer", |t| t.contains("Switching to blue."));
    })
    .await
    .unwrap();
    let requests = server.requests();
    assert_eq!(
        requests.len(),
        2,
        "the resumed session asked the model once"
    );
    assert_eq!(
        requests[1].raw_body.matches(STEER).count(),
        1,
        "the steer reaches the model exactly once: {}",
        requests[1].raw_body
    );
    assert!(server.pairing_violations().is_empty());
}

/// The first interactive start with a Kimi Code home (`~/.kimi-code`) and nothing imported asks,
/// before the UI starts, whether to import it; the answer is remembered and not asked again.
#[test]
fn first_start_offers_the_kimi_code_import_once() {
    let work = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    // The harness sets HOME to the kimi-rs home, so Kimi Code's default home is inside it.
    let kimi_code = home.path().join(".kimi-code");
    let skill = kimi_code.join("skills/greet");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: greet\ndescription: Greets the user warmly.\n---\nSay hello.\n",
    )
    .unwrap();
    std::fs::write(
        kimi_code.join("config.toml"),
        "[providers.p]\ntype = \"openai\"\napi_key = \"sk-secret\"\n",
    )
    .unwrap();

    let mut s = Session::spawn(work.path(), home.path(), "http://127.0.0.1:9", &[]);
    s.wait_for("the import offer", |t| {
        t.contains("Found a Kimi Code home") && t.contains("[y/N]")
    });
    s.send(b"y\r");
    s.wait_for("the credentials question", |t| {
        t.contains("Also copy API keys")
    });
    s.send(b"\r");
    s.wait_for("the prompt after the import", |t| {
        t.contains("ask anything")
    });
    s.send(b"\x04");
    let (status, _) = s.wait_exit("Ctrl-D");
    assert!(status.success(), "{status}");
    assert!(home.path().join("skills/greet/SKILL.md").is_file());
    let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    assert!(
        config.contains("[providers.p]") && !config.contains("sk-secret"),
        "{config}"
    );
    let marker: serde_json::Value =
        serde_json::from_slice(&std::fs::read(home.path().join("kimi-code-import.json")).unwrap())
            .unwrap();
    assert_eq!(marker["offer"]["answer"], "yes", "{marker}");
    assert_eq!(marker["lastImport"]["failed"], 0, "{marker}");

    // Asked once: the next start goes straight to the prompt.
    let mut s = Session::spawn(work.path(), home.path(), "http://127.0.0.1:9", &[]);
    let screen = s.wait_for("the prompt", |t| t.contains("ask anything"));
    assert!(!screen.contains("Found a Kimi Code home"), "{screen}");
    s.send(b"\x04");
    let (status, _) = s.wait_exit("Ctrl-D");
    assert!(status.success(), "{status}");
}

/// Declining the import offer is remembered: nothing is imported and the next start does not
/// ask again. The Kimi Code home is found through `KIMI_CODE_HOME` here.
#[test]
fn a_declined_kimi_code_import_is_never_offered_again() {
    let work = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let kimi_code = elsewhere.path().join("kimi-code-home");
    let env = [("KIMI_CODE_HOME", kimi_code.to_str().unwrap())];
    std::fs::create_dir_all(kimi_code.join("skills/greet")).unwrap();
    std::fs::write(
        kimi_code.join("skills/greet/SKILL.md"),
        "---\nname: greet\ndescription: Greets.\n---\nSay hello.\n",
    )
    .unwrap();
    std::fs::write(kimi_code.join("config.toml"), "default_model = \"x\"\n").unwrap();

    let mut s = Session::spawn_env(
        work.path(),
        home.path(),
        "http://127.0.0.1:9",
        &[],
        ROWS,
        COLS,
        &env,
    );
    let at = format!("Found a Kimi Code home at {}", kimi_code.display());
    s.wait_for("the import offer", |t| {
        t.contains(&at) && t.contains("[y/N]")
    });
    s.send(b"n\r");
    s.wait_for("the prompt after declining", |t| t.contains("ask anything"));
    s.send(b"\x04");
    let (status, text) = s.wait_exit("Ctrl-D");
    assert!(status.success(), "{status}");
    assert!(
        text.contains("Run `kimi-rs import` whenever you want"),
        "{text}"
    );
    assert!(!home.path().join("skills/greet").exists());
    let marker: serde_json::Value =
        serde_json::from_slice(&std::fs::read(home.path().join("kimi-code-import.json")).unwrap())
            .unwrap();
    assert_eq!(marker["offer"]["answer"], "no", "{marker}");
    assert!(marker.get("lastImport").is_none(), "{marker}");

    let mut s = Session::spawn_env(
        work.path(),
        home.path(),
        "http://127.0.0.1:9",
        &[],
        ROWS,
        COLS,
        &env,
    );
    let screen = s.wait_for("the prompt", |t| t.contains("ask anything"));
    assert!(!screen.contains("Found a Kimi Code home"), "{screen}");
    s.send(b"\x04");
    let (status, _) = s.wait_exit("Ctrl-D");
    assert!(status.success(), "{status}");
}

/// `/provider` in a real terminal: browse the bundled models.dev catalog, add a vendor with a
/// key and a chosen model (written like `kimi-rs provider catalog add`), see it listed,
/// remove it. The key never reaches the saved prompt history.
#[test]
fn provider_manager_adds_from_the_catalog_lists_and_removes() {
    const KEY: &str = "sk-tui-provider-secret";
    let work = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let mut s = Session::spawn(work.path(), home.path(), "http://127.0.0.1:9", &[]);
    s.wait_for("the prompt", |t| t.contains("ask anything"));

    s.send(b"/provider catalog moon\r");
    s.wait_for("the catalog's vendors", |t| {
        t.contains("moonshotai  Moonshot AI")
    });
    s.send(b"/provider catalog moonshotai\r");
    s.wait_for("the vendor's models", |t| {
        t.contains("kimi-k2-thinking  Kimi K2 Thinking") && t.contains("$MOONSHOT_API_KEY")
    });
    // `/provider add` alone: pick the vendor, and the prompt is left to complete with the key
    // (replacing the vendor's usual variable) and the chosen model.
    s.send(b"/provider add\r");
    s.wait_for("the vendor picker", |t| {
        t.contains("Add a provider from the models.dev catalog") && t.contains("anthropic")
    });
    s.send(b"moonshot");
    s.wait_for("the filtered picker", |t| !t.contains("anthropic"));
    s.send(b"\r");
    s.wait_for("the prefilled prompt", |t| {
        t.contains("/provider add moonshotai $MOONSHOT_API_KEY")
    });
    s.send(&[0x7f; "$MOONSHOT_API_KEY ".len()]);
    s.send(format!("{KEY} kimi-k2-thinking\r").as_bytes());
    let screen = s.wait_for("the provider added", |t| {
        t.contains("Added provider `moonshotai`") && t.contains("moonshotai/kimi-k2-thinking")
    });
    assert!(!screen.contains(KEY), "{screen}");
    let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    let parsed: toml::Value = toml::from_str(&config).unwrap();
    assert_eq!(
        parsed["providers"]["moonshotai"]["api_key"].as_str(),
        Some(KEY)
    );
    assert_eq!(
        parsed["providers"]["moonshotai"]["base_url"].as_str(),
        Some("https://api.moonshot.ai/v1")
    );
    let models: Vec<&String> = parsed["models"].as_table().unwrap().keys().collect();
    assert_eq!(models, ["moonshotai/kimi-k2-thinking"], "{config}");

    s.send(b"/provider\r");
    s.wait_for("the list", |t| t.contains("moonshotai  openai  1 model(s)"));
    s.send(b"/provider remove moonshotai\r");
    s.wait_for("the removal", |t| {
        t.contains("Removed provider `moonshotai` and 1 model(s)")
    });
    s.send(b"\x04");
    let (status, _) = s.wait_exit("Ctrl-D");
    assert!(status.success(), "{status}");
    let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    assert!(!config.contains("moonshotai"), "{config}");
    let history = home.path().join("tui/history");
    let saved: String = std::fs::read_dir(&history)
        .map(|dir| {
            dir.filter_map(Result::ok)
                .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
                .collect()
        })
        .unwrap_or_default();
    assert!(saved.contains("/provider catalog moonshotai"), "{saved}");
    assert!(!saved.contains(KEY), "{saved}");
}

/// `/plugins` in a real terminal: the Marketplace tab (a local marketplace file) installs a
/// plugin, the per-server MCP toggle and the Installed tab's info work, `/plugins reload`
/// brings its skill into this session, disable and remove change the plugin state.
#[test]
fn plugins_panel_installs_from_the_marketplace_toggles_reloads_and_removes() {
    let work = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let source = tempfile::tempdir().unwrap();
    let root = source.path().join("demo-plugin");
    std::fs::create_dir_all(root.join("skills/wave")).unwrap();
    std::fs::write(
        root.join("kimi.plugin.json"),
        serde_json::json!({
            "name": "demo", "version": "1.2.0", "skills": "./skills",
            "mcpServers": {"demo-echo": {"command": "./bin/none"}}
        })
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        root.join("skills/wave/SKILL.md"),
        "---\nname: wave\ndescription: Waves at people from the demo plugin\n---\nWave.\n",
    )
    .unwrap();
    // The server's command must exist in the plugin; it never starts (switched off below).
    std::fs::create_dir_all(root.join("bin")).unwrap();
    std::fs::write(root.join("bin/none"), "#!/bin/sh\nexit 1\n").unwrap();
    let market = source.path().join("market.json");
    std::fs::write(
        &market,
        serde_json::json!({"version": "2", "plugins": [
            {"id": "demo", "displayName": "Demo", "source": "./demo-plugin"}]})
        .to_string(),
    )
    .unwrap();

    let mut s = Session::spawn(work.path(), home.path(), "http://127.0.0.1:9", &[]);
    s.wait_for("the prompt", |t| t.contains("ask anything"));
    s.send(b"/plugins\r");
    s.wait_for("the empty installed tab", |t| {
        t.contains("No plugins installed")
    });

    s.send(format!("/plugins marketplace file://{}\r", market.display()).as_bytes());
    s.wait_for("the marketplace tab", |t| {
        t.contains("Plugins — Marketplace") && t.contains("demo  Demo")
    });
    s.send(b"\r");
    s.wait_for("the prefilled install", |t| t.contains("/plugins install "));
    s.send(b"\r");
    s.wait_for("the install", |t| {
        t.contains("Installed plugin `demo` 1.2.0") && t.contains("1 skill(s)")
    });
    assert!(
        home.path()
            .join("plugins/managed/demo/skills/wave/SKILL.md")
            .is_file()
    );

    s.send(b"/plugins mcp disable demo demo-echo\r");
    s.wait_for("the MCP toggle", |t| {
        t.contains("MCP server `demo-echo` of plugin `demo` disabled.")
    });
    s.send(b"/plugins\r");
    s.wait_for("the installed tab", |t| {
        t.contains("Plugins — Installed") && t.contains("demo  enabled")
    });
    s.send(b"\r");
    s.wait_for("the prefilled info", |t| t.contains("/plugins info demo"));
    s.send(b"\r");
    s.wait_for("the info", |t| {
        t.contains("skill /wave") && t.contains("MCP server demo-echo (stdio) — disabled")
    });

    s.send(b"/plugins reload\r");
    s.wait_for("the reload", |t| t.contains("this session now uses them"));
    s.send(b"/wav");
    s.wait_for("the plugin's skill in the completion menu", |t| {
        t.contains("Waves at people from the demo plugin")
    });
    s.send(b"\x15\x1b");

    s.send(b"/plugins disable demo\r");
    s.wait_for("the disable", |t| t.contains("Disabled plugin `demo`."));
    let state: serde_json::Value =
        serde_json::from_slice(&std::fs::read(home.path().join("plugins/installed.json")).unwrap())
            .unwrap();
    assert_eq!(state["plugins"]["demo"]["enabled"], false, "{state}");
    assert_eq!(
        state["plugins"]["demo"]["mcp"]["demo-echo"], false,
        "{state}"
    );
    s.send(b"/plugins remove demo\r");
    s.wait_for("the removal", |t| {
        t.contains("Removed plugin `demo` and its copy.")
    });
    s.send(b"\x04");
    let (status, _) = s.wait_exit("Ctrl-D");
    assert!(status.success(), "{status}");
    assert!(!home.path().join("plugins/managed/demo").exists());
}

/// `[models]` aliases on the scripted server, beside the environment's model `m`.
fn two_models_config(base_url: &str) -> String {
    format!(
        "[providers.script]\ntype = \"openai\"\napi_key = \"k\"\nbase_url = \"{base_url}/v1\"\n\n\
         [models.alpha]\nprovider = \"script\"\nmodel = \"model-a\"\nmax_context_size = 100000\n\n\
         [models.beta]\nprovider = \"script\"\nmodel = \"model-b\"\nmax_context_size = 100000\n"
    )
}

/// `/btw` asks on the side: a tool-less request carrying the conversation so far, its answer
/// in its own pane, and nothing of it in the next main request. `/model`, typing `beta`,
/// Enter sends the next request to the model aliased `beta`; after `-S <id>` it still does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn btw_answers_on_the_side_and_model_switches_survive_resume() {
    const CODEWORD: &str = "remember the codeword TANGERINE";
    const SIDE: &str = "what is 2+2";
    const SIDE_ANSWER: &str = "It is 4, by the way.";
    let work = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let server = ScriptServer::start(vec![
        ScriptTurn::text("Noted: 完成 🎉"),
        ScriptTurn::text(SIDE_ANSWER),
        ScriptTurn::text("Beta here."),
        ScriptTurn::text("Still beta."),
    ])
    .await
    .unwrap();
    let base_url = server.base_url();
    std::fs::write(
        home.path().join("config.toml"),
        two_models_config(&base_url),
    )
    .unwrap();
    let (work_path, home_path) = (work.path().to_owned(), home.path().to_owned());
    let url = base_url.clone();
    tokio::task::spawn_blocking(move || {
        let mut s = Session::spawn(&work_path, &home_path, &url, &[]);
        s.wait_for("the prompt", |t| {
            t.contains("ask anything") && t.contains("manual · m · ")
        });
        s.send(format!("{CODEWORD}\r").as_bytes());
        s.wait_for("the unspaced answer", |t| t.contains("Noted: 完成 🎉"));
        s.wait_for("the idle prompt", |t| t.contains("ask anything"));

        s.send(format!("/btw {SIDE}\r").as_bytes());
        let pane = s.wait_for("the side answer in its pane", |t| t.contains(SIDE_ANSWER));
        assert!(pane.contains(&format!("╭ btw {SIDE}")), "{pane}");
        assert!(pane.contains("esc closes"), "{pane}");
        s.send(b"\x1b");
        s.wait_for("the pane closed", |t| !t.contains(SIDE_ANSWER));

        s.send(b"/model\r");
        let picker = s.wait_for("the model picker", |t| {
            t.contains("Switch model") && t.contains("alpha") && t.contains("beta")
        });
        assert!(picker.contains("model-a"), "{picker}");
        s.send(b"beta");
        s.wait_for("the filtered picker", |t| !t.contains("model-a"));
        s.send(b"\r");
        s.wait_for("the switch confirmed in the footer", |t| {
            t.contains("Model: beta (model-b)") && t.contains("manual · beta · ")
        });
        s.send(b"who are you\r");
        s.wait_for("the answer from beta", |t| t.contains("Beta here."));
        s.wait_for("the idle prompt", |t| t.contains("ask anything"));
        s.send(b"\x04");
        let (status, text) = s.wait_exit("Ctrl-D");
        assert!(status.success(), "kimi-rs failed: {status}\n{text}");
        // The side question never reached the transcript.
        assert!(!text.contains(SIDE_ANSWER), "{text}");
    })
    .await
    .unwrap();

    let requests = server.requests();
    assert_eq!(requests.len(), 3, "main, side, main");
    let side = &requests[1].body;
    assert!(
        side.get("tools")
            .is_none_or(|t| t.as_array().is_some_and(Vec::is_empty)),
        "the side request offers no tools: {side}"
    );
    assert!(
        requests[1].raw_body.contains("TANGERINE"),
        "{}",
        requests[1].raw_body
    );
    assert!(
        requests[1].raw_body.contains(SIDE),
        "{}",
        requests[1].raw_body
    );
    assert!(
        requests[0].body.get("tools").is_some(),
        "{}",
        requests[0].raw_body
    );
    assert_eq!(requests[0].body["model"], "m");
    let next = &requests[2];
    assert_eq!(next.body["model"], "model-b", "{}", next.raw_body);
    assert!(next.raw_body.contains("TANGERINE"), "{}", next.raw_body);
    assert!(!next.raw_body.contains(SIDE), "{}", next.raw_body);
    assert!(!next.raw_body.contains(SIDE_ANSWER), "{}", next.raw_body);

    let store = kimi_store::SessionStore::new(kimi_store::Home::new(home.path()));
    let id = store.index().list().unwrap()[0].id.clone();
    let (work_path, home_path) = (work.path().to_owned(), home.path().to_owned());
    tokio::task::spawn_blocking(move || {
        let mut s = Session::spawn(&work_path, &home_path, &base_url, &["-S", &id]);
        s.wait_for("the resumed session on beta", |t| {
            t.contains("Beta here.") && t.contains("manual · beta · ")
        });
        s.send(b"and now?\r");
        s.wait_for("the answer", |t| t.contains("Still beta."));
        s.send(b"\x04");
        let (status, text) = s.wait_exit("Ctrl-D");
        assert!(status.success(), "kimi-rs failed: {status}\n{text}");
    })
    .await
    .unwrap();
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(
        requests[3].body["model"], "model-b",
        "{}",
        requests[3].raw_body
    );
}

/// The main agent's journal under `sessions/`.
fn find_journal(dir: &Path) -> Option<std::path::PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if let Some(found) = find_journal(&path) {
                return Some(found);
            }
        } else if path.ends_with("agents/main/wire.jsonl") {
            return Some(path);
        }
    }
    None
}

/// Workspace trust in the interactive UI: the first launch in a folder whose `.mcp.json` would
/// run a command asks before the UI starts, listing the command line; "no" starts nothing and
/// is remembered (the next launch does not ask), "yes" in another folder starts its server.
#[test]
fn the_first_launch_in_a_folder_with_project_servers_asks_whether_to_trust_it() {
    let home = tempfile::tempdir().unwrap();
    let project = |dir: &Path| {
        let command = format!("touch pwned && exec '{}'", common::mcp_fixture().display());
        let config =
            serde_json::json!({"mcpServers": {"repo": {"command": "sh", "args": ["-c", command]}}});
        std::fs::write(dir.join(".mcp.json"), config.to_string()).unwrap();
    };
    let no = tempfile::tempdir().unwrap();
    project(no.path());
    let mut s = Session::spawn(no.path(), home.path(), "http://127.0.0.1:9", &[]);
    let question = s.wait_for("the trust question", |t| {
        t.contains("Trust this folder and run them? [y/N]")
    });
    assert!(
        question.contains("MCP server `repo`: stdio: sh -c") && question.contains("touch pwned"),
        "{question}"
    );
    s.send(b"n\r");
    let start = s.wait_for("the prompt and the skipped server", |t| {
        t.contains("ask anything") && t.contains("not trusted")
    });
    assert!(start.contains("kimi-rs trust"), "{start}");
    s.send(b"\x04");
    let (status, _) = s.wait_exit("Ctrl-D");
    assert!(status.success());
    assert!(
        !no.path().join("pwned").exists(),
        "an untrusted command ran"
    );

    // Remembered: no question, still nothing runs.
    let mut s = Session::spawn(no.path(), home.path(), "http://127.0.0.1:9", &[]);
    let start = s.wait_for("the prompt", |t| t.contains("ask anything"));
    assert!(!start.contains("Trust this folder"), "{start}");
    s.send(b"\x04");
    let (status, _) = s.wait_exit("Ctrl-D");
    assert!(status.success());
    assert!(
        !no.path().join("pwned").exists(),
        "an untrusted command ran"
    );

    let yes = tempfile::tempdir().unwrap();
    project(yes.path());
    let mut s = Session::spawn(yes.path(), home.path(), "http://127.0.0.1:9", &[]);
    s.wait_for("the trust question", |t| t.contains("Trust this folder"));
    s.send(b"y\r");
    s.wait_for("the prompt", |t| t.contains("ask anything"));
    common::wait_until("the trusted server to start", || {
        yes.path().join("pwned").exists()
    });
    s.send(b"\x04");
    let (status, _) = s.wait_exit("Ctrl-D");
    assert!(status.success());
}

/// `/add-dir` and `/experiments` in a real terminal: "Yes, for this session" adds the
/// directory without writing `local.toml` and the reopened session's prompt lists it;
/// `/experiments wait_for off` writes config.toml and the reopened session no longer offers
/// WaitFor.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_dir_for_this_session_and_an_experiment_switch_in_a_real_terminal() {
    let work = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let shared = tempfile::tempdir().unwrap();
    let shared_path = std::fs::canonicalize(shared.path()).unwrap();
    let server = ScriptServer::start(vec![ScriptTurn::text("One."), ScriptTurn::text("Two.")])
        .await
        .unwrap();
    let base_url = server.base_url();
    let (work_path, home_path, dir) = (
        work.path().to_owned(),
        home.path().to_owned(),
        shared_path.display().to_string(),
    );
    tokio::task::spawn_blocking(move || {
        let mut s = Session::spawn(&work_path, &home_path, &base_url, &[]);
        s.wait_for("the prompt", |t| t.contains("ask anything"));
        s.send(format!("/add-dir {dir}\r").as_bytes());
        s.wait_for("the add-dir choice", |t| {
            t.contains("Add directory to workspace") && t.contains("Yes, for this session")
        });
        s.send(b"\r");
        s.wait_for("the session-only notice", |t| {
            t.contains("For this session only")
        });
        s.send(b"hello\r");
        // `/experiments` waits for an idle session: the turn has ended when the prompt's
        // hint is back.
        s.wait_for("the first answer, idle", |t| {
            t.contains("One.") && t.contains("ask anything") && !t.contains("esc to interrupt")
        });
        s.send(b"/experiments wait_for off\r");
        s.wait_for("the switch notice", |t| t.contains("is now off"));
        s.send(b"again\r");
        s.wait_for("the second answer", |t| t.contains("Two."));
        s.send(b"\x04");
        let (status, text) = s.wait_exit("Ctrl-D");
        assert!(status.success(), "kimi-rs failed: {status}\n{text}");
    })
    .await
    .unwrap();
    let requests = server.requests();
    let dir_line = format!("- {}", shared_path.display());
    assert!(
        requests[0].raw_body.contains(&dir_line),
        "{}",
        requests[0].raw_body
    );
    assert!(
        !work.path().join(".kimi-code/local.toml").exists(),
        "a session-only directory is not remembered"
    );
    let tools = |i: usize| -> Vec<String> {
        requests[i].body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
            .collect()
    };
    assert!(tools(0).contains(&"WaitFor".to_owned()), "{:?}", tools(0));
    assert!(!tools(1).contains(&"WaitFor".to_owned()), "{:?}", tools(1));
    // The directory stays for this session after the experiment's reopen.
    assert!(requests[1].raw_body.contains(&dir_line));
    assert_eq!(
        std::fs::read_to_string(home.path().join("config.toml")).unwrap(),
        "[experimental]\nwait_for = false\n"
    );
}

/// A fake PNG (only its signature matters to the paste: the bytes travel as they are).
fn fake_png(len: usize) -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
    bytes.resize(len, 7);
    bytes
}

/// Ctrl-V with the clipboard served from a file (`KIMI_RS_TEST_CLIPBOARD_FILE`, test support):
/// text pastes as text, an image becomes `[image #1 png 35 KB]` and goes to the model as an
/// image part between the typed words, and an unreadable clipboard is a notice. A model
/// without `image_in` refuses the prompt with a notice, nothing reaches the model, and the
/// prompt (attachment included) is put back in the editor.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_v_attaches_a_clipboard_image_and_the_model_receives_it() {
    use base64::Engine as _;
    let work = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let board = work.path().join("clipboard.bin");
    let png = fake_png(34 * 1024 + 10);
    let server = ScriptServer::start(vec![ScriptTurn::text("A very fine picture.")])
        .await
        .unwrap();
    let base_url = server.base_url();
    let (work_path, home_path) = (work.path().to_owned(), home.path().to_owned());
    let (url, board_path, image) = (base_url.clone(), board.clone(), png.clone());
    tokio::task::spawn_blocking(move || {
        let board_env = board_path.to_str().unwrap().to_owned();
        let env = [("KIMI_RS_TEST_CLIPBOARD_FILE", board_env.as_str())];
        let mut s = Session::spawn_env(&work_path, &home_path, &url, &[], ROWS, COLS, &env);
        s.wait_for("the prompt", |t| t.contains("ask anything"));
        std::fs::write(&board_path, "pasted words").unwrap();
        s.send(b"\x16");
        s.wait_for("the clipboard text in the prompt", |t| {
            t.contains("pasted words")
        });
        s.send(b"\x15"); // Ctrl-U: empty the prompt again
        s.wait_for("an empty prompt", |t| !t.contains("pasted words"));

        std::fs::write(&board_path, &image).unwrap();
        s.send(b"what is in ");
        s.send(b"\x16");
        s.wait_for("the attachment token", |t| {
            t.contains("what is in [image #1 png 35 KB]")
        });
        std::fs::remove_file(&board_path).unwrap();
        s.send(b"\x1bv"); // Alt-V reads the clipboard too
        s.wait_for("the unavailable clipboard notice", |t| {
            t.contains("clipboard unavailable: cannot read")
        });
        s.send(b" please\r");
        s.wait_for("the answer", |t| t.contains("A very fine picture."));
        s.send(b"\x04");
        let (status, text) = s.wait_exit("Ctrl-D");
        assert!(status.success(), "kimi-rs failed: {status}\n{text}");
    })
    .await
    .unwrap();

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let messages = requests[0].body["messages"].as_array().unwrap();
    let user = messages.iter().rev().find(|m| m["role"] == "user").unwrap();
    let data_url = format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(&png)
    );
    assert_eq!(
        user["content"],
        serde_json::json!([
            {"type": "text", "text": "what is in "},
            {"type": "image_url", "image_url": {"url": data_url}},
            {"type": "text", "text": " please"},
        ]),
        "{}",
        requests[0].raw_body
    );

    // The same paste for a model whose capabilities lack `image_in`: refused, nothing sent.
    std::fs::write(&board, &png).unwrap();
    let (work_path, home_path) = (work.path().to_owned(), home.path().to_owned());
    tokio::task::spawn_blocking(move || {
        let board_env = board.to_str().unwrap().to_owned();
        let env = [
            ("KIMI_RS_TEST_CLIPBOARD_FILE", board_env.as_str()),
            ("KIMI_MODEL_CAPABILITIES", "thinking"),
        ];
        let mut s = Session::spawn_env(&work_path, &home_path, &base_url, &[], ROWS, COLS, &env);
        s.wait_for("the prompt", |t| t.contains("ask anything"));
        s.send(b"describe ");
        s.send(b"\x16");
        s.wait_for("the attachment token", |t| {
            t.contains("[image #1 png 35 KB]")
        });
        s.send(b"\r");
        // Nothing typed or pasted is lost: the prompt, attachment included, is back in the
        // editor (the token shows in the transcript's copy and in the editor).
        s.wait_for("the refusal, the prompt back in the editor", |t| {
            t.contains("does not take images")
                && t.contains("image_in")
                && t.contains("your prompt is back in the editor")
                && t.matches("[image #1 png 35 KB]").count() >= 2
        });
        s.send(b"\x15");
        s.send(b"\x04");
        let (status, text) = s.wait_exit("Ctrl-D");
        assert!(status.success(), "kimi-rs failed: {status}\n{text}");
    })
    .await
    .unwrap();
    assert_eq!(
        server.requests().len(),
        1,
        "the refused prompt reached the model"
    );
}
