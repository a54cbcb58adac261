//! AGENTS.md kept current while a session runs (surface.md §9.5): an edited file rebuilds the
//! system prompt at the next turn and the model is told which file changed; a tool call that
//! touches a directory with an AGENTS.md the prompt lacks gets the model a reminder to read it.

use kimi_llm::ProviderType;
use kimi_llm::scripted::ScriptTurn;
use kimi_protocol::ops::TurnEndReason;
use serde_json::Value;

use crate::harness::{Dirs, Session, record_kind, user_texts};

fn system(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "system"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_agents_md_rebuilds_the_prompt_and_a_touched_one_is_suggested() {
    let dirs = Dirs::new();
    std::fs::write(dirs.file("AGENTS.md"), "Indent with tabs.").unwrap();
    std::fs::create_dir_all(dirs.file("sub")).unwrap();
    std::fs::write(dirs.file("sub/AGENTS.md"), "No unsafe code here.").unwrap();
    std::fs::write(dirs.file("sub/lib.rs"), "fn main() {}\n").unwrap();
    let read = format!(r#"{{"path":"{}"}}"#, dirs.file("sub/lib.rs").display());
    let mut s = Session::start(
        &dirs,
        ProviderType::Kimi,
        vec![
            ScriptTurn::text("ok"),
            ScriptTurn::text("ok, spaces"),
            ScriptTurn::tool_calls(&[("call_read", "Read", &read)]),
            ScriptTurn::text("read it"),
            ScriptTurn::tool_calls(&[("call_read2", "Read", &read)]),
            ScriptTurn::text("read it again"),
        ],
    )
    .await;
    assert_eq!(s.run("first").await.0, TurnEndReason::Completed);
    std::fs::write(dirs.file("AGENTS.md"), "Indent with four spaces.").unwrap();
    assert_eq!(s.run("second").await.0, TurnEndReason::Completed);
    assert_eq!(s.run("read sub/lib.rs").await.0, TurnEndReason::Completed);
    assert_eq!(s.run("and again").await.0, TurnEndReason::Completed);

    let requests = s.requests();
    assert!(system(&requests[0].body).contains("Indent with tabs."));
    // The edit: a new prompt, and the model is told after the prompt that started the turn.
    let second = &requests[1].body;
    assert!(
        system(second).contains("Indent with four spaces."),
        "{}",
        system(second)
    );
    assert!(!system(second).contains("Indent with tabs."));
    let texts = user_texts(second);
    let changed = texts.last().unwrap();
    assert!(
        changed.contains("changed on disk")
            && changed.contains(&dirs.file("AGENTS.md").display().to_string()),
        "{texts:?}"
    );
    assert_eq!(texts[texts.len() - 2], "second");
    // Unchanged files announce nothing.
    assert!(
        !user_texts(&requests[2].body)
            .iter()
            .any(|t| t.contains("changed on disk") && t.contains("third")),
    );
    // The Read touched sub/: its AGENTS.md is suggested at the next step, once.
    let after_read = user_texts(&requests[3].body);
    let suggested = after_read
        .iter()
        .filter(|t| t.contains("Read them before you change anything"))
        .collect::<Vec<_>>();
    assert_eq!(suggested.len(), 1, "{after_read:?}");
    assert!(suggested[0].contains(&dirs.file("sub/AGENTS.md").display().to_string()));
    let last = user_texts(&requests[5].body);
    assert_eq!(
        last.iter()
            .filter(|t| t.contains("Read them before you change anything"))
            .count(),
        1,
        "{last:?}"
    );

    // The rebuilt prompt is journaled: a resume sends it.
    let binds = s
        .journal()
        .iter()
        .filter(|r| record_kind(r) == "profile.bind")
        .count();
    assert_eq!(binds, 2);
    s.close().await;
}

/// `.kimi-code/local.toml` (what `/add-dir` remembers) adds workspace directories to the
/// session, beside `--add-dir`; an entry that cannot be used is a warning, not fatal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_toml_directories_join_the_workspace_and_bad_entries_are_warned() {
    let dirs = Dirs::new();
    let shared = tempfile::tempdir().unwrap();
    let shared_dir = std::fs::canonicalize(shared.path()).unwrap();
    let file = kimi_core::local_config::remember_dir(&dirs.cwd(), &shared_dir).unwrap();
    assert_eq!(file, dirs.file(".kimi-code/local.toml"));
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace("\"]", "\", \"no-such-dir\"]")).unwrap();
    let mut s = Session::start(&dirs, ProviderType::Kimi, vec![ScriptTurn::text("ok")]).await;
    let added = s
        .opened
        .agent
        .handle
        .runtime()
        .config
        .tool_ctx
        .additional_dirs
        .clone();
    assert_eq!(added, vec![shared_dir.clone()]);
    assert!(
        s.opened
            .warnings
            .iter()
            .any(|w| w.contains("no-such-dir") && w.contains("local.toml")),
        "{:?}",
        s.opened.warnings
    );
    // The model is told about the directory like about `--add-dir`'s.
    assert_eq!(s.run("hi").await.0, TurnEndReason::Completed);
    let prompt = system(&s.requests()[0].body);
    assert!(
        prompt.contains(&shared_dir.display().to_string()),
        "{prompt}"
    );
    s.close().await;
}

/// A session reopened after its workspace directories changed (`/add-dir`, `local.toml`)
/// renders its system prompt again so the model is told them; reopened unchanged, it keeps
/// the journaled prompt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reopened_session_lists_directories_added_since_in_its_prompt() {
    use crate::harness::Options;
    use kimi_core::session::Resume;

    let dirs = Dirs::new();
    let mut s = Session::start(&dirs, ProviderType::Kimi, vec![ScriptTurn::text("ok")]).await;
    assert_eq!(s.run("hi").await.0, TurnEndReason::Completed);
    let id = s.session_id();
    let first = system(&s.requests()[0].body);
    s.close().await;
    // Dropped: the journal's lock goes with the session.
    drop(s);

    let shared = tempfile::tempdir().unwrap();
    let shared_dir = std::fs::canonicalize(shared.path()).unwrap();
    kimi_core::local_config::remember_dir(&dirs.cwd(), &shared_dir).unwrap();
    assert!(!first.contains(&shared_dir.display().to_string()));

    let reopen = |turn: &'static str| {
        let mut options = Options::new(ProviderType::Kimi);
        options.resume = Resume::Id(id.clone());
        Session::start_with(&dirs, options, vec![ScriptTurn::text(turn)])
    };
    let mut s = reopen("again").await;
    assert_eq!(s.run("again").await.0, TurnEndReason::Completed);
    let prompt = system(&s.requests()[0].body);
    assert!(
        prompt.contains(&format!("- {}", shared_dir.display())),
        "{prompt}"
    );
    s.close().await;
    drop(s);

    // Nothing changed since: the journaled prompt is used as it is (no new profile.bind).
    let mut s = reopen("third").await;
    assert_eq!(s.run("third").await.0, TurnEndReason::Completed);
    assert_eq!(system(&s.requests()[0].body), prompt);
    let binds = s
        .journal()
        .iter()
        .filter(|r| record_kind(r) == "profile.bind")
        .count();
    assert_eq!(binds, 2, "the first render and the one after /add-dir");
    s.close().await;
}
