//! `kimi-rs sessions` lists this directory's sessions (`--all`: every directory's, `--json` for
//! scripts) and `kimi-rs sessions prune` removes old ones, never one a running kimi-rs has open.
#![allow(clippy::unwrap_used, clippy::expect_used)] // helpers outside #[test] fns count as tests here

mod common;

use std::path::Path;

use common::{CORE_FORMATS, Fixture, Run, wait_child, wait_until};
use kimi_llm::scripted::{ScriptEvent, ScriptTurn};
use serde_json::Value;

fn run_in(fx: &Fixture, dir: &Path, args: &[&str]) -> Run {
    let child = fx
        .command(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_child(child)
}

fn listed(fx: &Fixture, dir: &Path, args: &[&str]) -> Vec<Value> {
    let run = run_in(fx, dir, args);
    assert_eq!(run.code, Some(0), "{run:?}");
    serde_json::from_str::<Value>(&run.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn ids(list: &[Value]) -> Vec<&str> {
    list.iter().map(|s| s["id"].as_str().unwrap()).collect()
}

#[test]
fn one_list_across_directories_and_pruning_by_age() {
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![ScriptTurn::text("first"), ScriptTurn::text("second")],
    );
    let other = tempfile::tempdir().unwrap();
    let other_dir = std::fs::canonicalize(other.path()).unwrap();
    assert_eq!(fx.run(&["-p", "hello from here"]).code, Some(0));
    assert_eq!(
        run_in(&fx, &other_dir, &["-p", "hello from there"]).code,
        Some(0)
    );
    let [here, there] = fx.session_ids().try_into().unwrap();

    let mine = listed(&fx, &fx.cwd(), &["sessions", "--json"]);
    assert_eq!(ids(&mine), [here.as_str()]);
    let all = listed(&fx, &fx.cwd(), &["sessions", "--all", "--json"]);
    assert_eq!(ids(&all), [there.as_str(), here.as_str()], "newest first");
    assert_eq!(all[0]["cwd"], other_dir.display().to_string());
    assert_eq!(all[1]["title"], "hello from here");
    assert!(all[1]["sizeBytes"].as_u64().unwrap() > 0);
    let table = run_in(&fx, &fx.cwd(), &["sessions", "--all"]);
    assert!(
        table.stdout.contains(&here) && table.stdout.contains(&other_dir.display().to_string()),
        "{table:?}"
    );

    // The first session was last used 40 days ago.
    let state_path =
        common::find_file(&fx.home.path().join("sessions"), &here, "state.json").unwrap();
    let mut state: Value = serde_json::from_slice(&std::fs::read(&state_path).unwrap()).unwrap();
    let forty_days = 40 * 86_400_000;
    state["updatedAt"] = Value::from(state["updatedAt"].as_u64().unwrap() - forty_days);
    std::fs::write(&state_path, serde_json::to_vec(&state).unwrap()).unwrap();

    let dry = run_in(
        &fx,
        &fx.cwd(),
        &["sessions", "prune", "--older-than", "30d", "--dry-run"],
    );
    assert_eq!(dry.code, Some(0), "{dry:?}");
    assert!(
        dry.stdout.contains(&format!("would remove {here}")),
        "{dry:?}"
    );
    assert!(state_path.exists(), "a dry run removes nothing");

    let pruned = run_in(
        &fx,
        &fx.cwd(),
        &["sessions", "prune", "--older-than", "30d"],
    );
    assert_eq!(pruned.code, Some(0), "{pruned:?}");
    assert!(
        pruned.stdout.contains(&format!("removed {here}")),
        "{pruned:?}"
    );
    assert!(!state_path.parent().unwrap().exists());
    let all = listed(&fx, &fx.cwd(), &["sessions", "--all", "--json"]);
    assert_eq!(ids(&all), [there.as_str()]);

    let bad = run_in(&fx, &fx.cwd(), &["sessions", "prune"]);
    assert_eq!(bad.code, Some(1), "{bad:?}");
    assert!(bad.stderr.contains("--older-than"), "{bad:?}");
}

#[test]
fn prune_keeps_a_session_a_running_kimi_rs_has_open() {
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![ScriptTurn::reply(vec![
            ScriptEvent::text("thinking it over"),
            ScriptEvent::Delay { ms: 60_000 },
            ScriptEvent::text(" — never arrives"),
        ])],
    );
    let mut child = fx.spawn(&["-p", "take your time"]);
    // The running process holds the journal's lock from the moment it opens the session;
    // poll for that state (another process produces it).
    wait_until("the session to be open", || {
        fx.session_ids().first().is_some_and(|id| {
            common::find_file(&fx.home.path().join("sessions"), id, "wire.jsonl")
                .is_some_and(|p| kimi_store::Journal::is_in_use(&p))
        })
    });
    let id = fx.session_ids().remove(0);
    let run = fx.run(&["sessions", "prune", "--max-total-size", "0"]);
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        run.stdout.contains(&format!("kept {id} (in use")),
        "{run:?}"
    );
    assert!(!run.stdout.contains(&format!("removed {id}")), "{run:?}");
    assert!(common::find_file(&fx.home.path().join("sessions"), &id, "state.json").is_some());
}
