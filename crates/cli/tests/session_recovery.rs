//! Attacks on a stored session through the real binary: a corrupt journal line, an emptied or
//! deleted journal, a journal from a newer protocol and a deleted `state.json`. Nothing may be
//! repaired or lost silently, and `kimi-rs sessions recover` brings a session back.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;

use common::{CORE_FORMATS, Fixture, find_file, user_texts};
use kimi_llm::scripted::ScriptTurn;

/// A fixture with one completed session whose first prompt is `FIRST PROMPT`.
fn used_session() -> (Fixture, String, PathBuf) {
    let fx = Fixture::new(CORE_FORMATS[0], vec![ScriptTurn::text("First answer.")]);
    let run = fx.run(&["-p", "FIRST PROMPT: count the files"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let id = fx.session_ids().remove(0);
    let journal = find_file(&fx.home.path().join("sessions"), &id, "wire.jsonl").unwrap();
    (fx, id, journal)
}

#[test]
fn a_corrupt_middle_line_is_skipped_with_a_warning_naming_file_and_line() {
    let (fx, id, journal) = used_session();
    let text = std::fs::read_to_string(&journal).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() > 3);
    lines.insert(2, "{\"type\":\"context.append_message\",GARBAGE");
    std::fs::write(&journal, lines.join("\n") + "\n").unwrap();

    fx.server.push(ScriptTurn::text("Second answer."));
    let run = fx.run(&["-S", &id, "-p", "SECOND PROMPT"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let expected = format!("{}: line 3 was not valid JSON", journal.display());
    assert!(run.stderr.contains(&expected), "{}", run.stderr);
    let log = std::fs::read_to_string(fx.home.path().join("logs/kimi-rs.log")).unwrap();
    assert!(log.contains("line 3 was not valid JSON"), "logged too");
    let users = user_texts(&fx.requests()[1].body);
    assert!(
        users.iter().any(|u| u.contains("FIRST PROMPT")),
        "{users:?}"
    );
}

#[test]
fn an_emptied_or_deleted_journal_is_refused_not_resumed_empty() {
    let (fx, id, journal) = used_session();
    std::fs::write(&journal, b"").unwrap();
    let run = fx.run(&["-S", &id, "-p", "SECOND PROMPT"]);
    assert_ne!(run.code, Some(0), "{run:?}");
    assert!(
        run.stderr
            .contains(&format!("{} is empty", journal.display()))
            && run.stderr.contains("new session"),
        "{}",
        run.stderr
    );
    assert_eq!(std::fs::read(&journal).unwrap(), b"", "left as it was");

    std::fs::remove_file(&journal).unwrap();
    let run = fx.run(&["-S", &id, "-p", "SECOND PROMPT"]);
    assert_ne!(run.code, Some(0), "{run:?}");
    assert!(run.stderr.contains("is missing"), "{}", run.stderr);
    assert!(
        !journal.exists(),
        "no empty journal was created in its place"
    );
    assert_eq!(fx.requests().len(), 1, "the model was not called");
}

#[test]
fn a_journal_of_a_newer_protocol_is_refused_with_upgrade_advice() {
    let (fx, id, journal) = used_session();
    let text = std::fs::read_to_string(&journal).unwrap();
    let newer = text.replacen(
        "\"protocol_version\":\"1.5\"",
        "\"protocol_version\":\"99.0\"",
        1,
    );
    assert_ne!(newer, text);
    std::fs::write(&journal, &newer).unwrap();
    let run = fx.run(&["-S", &id, "-p", "SECOND PROMPT"]);
    assert_ne!(run.code, Some(0), "{run:?}");
    assert!(
        run.stderr
            .contains("written by a newer kimi-rs/Kimi Code (protocol 99.0")
            && run.stderr.contains("upgrade kimi-rs to resume it"),
        "{}",
        run.stderr
    );
    assert_eq!(fx.requests().len(), 1, "the model was not called");
    assert_eq!(std::fs::read_to_string(&journal).unwrap(), newer);
}

#[test]
fn sessions_recover_rebuilds_a_deleted_state_json_and_the_session_resumes_with_its_history() {
    let (fx, id, journal) = used_session();
    let session_dir = journal.ancestors().nth(3).unwrap().to_owned();
    std::fs::remove_file(session_dir.join("state.json")).unwrap();
    std::fs::remove_file(fx.home.path().join("session_index.jsonl")).unwrap();

    let run = fx.run(&["-S", &id, "-p", "SECOND PROMPT"]);
    assert_ne!(run.code, Some(0), "{run:?}");
    assert!(
        run.stderr
            .contains(&format!("kimi-rs sessions recover {id}")),
        "the error names the command: {}",
        run.stderr
    );

    let run = fx.run(&["sessions", "recover", &id]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        run.stdout.contains("Rebuilt") && run.stdout.contains("FIRST PROMPT"),
        "{run:?}"
    );
    assert!(session_dir.join("state.json").is_file());

    fx.server.push(ScriptTurn::text("Resumed fine."));
    let run = fx.run(&["-S", &id, "-p", "SECOND PROMPT"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stdout.contains("Resumed fine."), "{run:?}");
    let requests = fx.requests();
    let users = user_texts(&requests[requests.len() - 1].body);
    assert!(
        users.iter().any(|u| u.contains("FIRST PROMPT"))
            && users.iter().any(|u| u.contains("SECOND PROMPT")),
        "{users:#?}"
    );
}

#[test]
fn sessions_recover_without_a_journal_fails_and_says_why() {
    let (fx, id, journal) = used_session();
    let session_dir = journal.ancestors().nth(3).unwrap().to_owned();
    std::fs::remove_file(session_dir.join("state.json")).unwrap();
    std::fs::remove_file(&journal).unwrap();
    let run = fx.run(&["sessions", "recover", &id]);
    assert_ne!(run.code, Some(0), "{run:?}");
    assert!(
        run.stderr.contains("main journal") && run.stderr.contains("missing"),
        "{}",
        run.stderr
    );
    let run = fx.run(&["sessions", "recover", "no-such-session"]);
    assert_ne!(run.code, Some(0), "{run:?}");
    assert!(
        run.stderr.contains("no directory for session"),
        "{}",
        run.stderr
    );
}
