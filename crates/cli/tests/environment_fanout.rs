//! Fan-out beyond one machine, end to end on the real binary in print mode: three declared
//! `command` environments, each launching a real `kimi-rs exec-server` with its own marker in
//! the executor's environment and its own `defaultCwd`. `Agent` with `environment` runs its
//! subagent on that target; `AgentSwarm` with `environments = "pod-*"` spreads its items over
//! the three, one each, and assembles the reports locally. A Bash call reads the marker of its
//! parent process (the executor that spawned it), so each result proves which target ran it.
//! A placed subagent resumed later reconnects to its target.
//! Only the model is scripted.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};

use common::{BIN, FORMATS, Fixture, tool_results};
use kimi_llm::scripted::ScriptTurn;
use serde_json::{Value, json};

/// A report long enough (over 200 characters) that the summary policy asks for nothing more.
fn long_report(head: &str) -> String {
    format!(
        "{head} The work is finished and nothing else is pending. I checked the result once more, left the rest of the machine alone, and there are no open questions for the caller to answer. Nothing needs a follow-up from the caller."
    )
}

/// Prints `KIMI_TARGET=<id> in <cwd>`: the marker of the process that spawned the shell.
const WHERE: &str = r#"printf '%s in %s\n' "$(tr '\0' '\n' < /proc/$PPID/environ | grep '^KIMI_TARGET=')" "$(pwd)""#;

fn environment_entry(id: &str, cwd: &Path) -> String {
    format!(
        "[environments.{id}]\ncommand = \"{BIN}\"\nargs = [\"exec-server\"]\nenv = {{ KIMI_TARGET = \"{id}\" }}\ndefaultCwd = \"{}\"\n",
        cwd.display()
    )
}

/// One subagent's script (reserved by `marker`): where am I, write a file, report.
fn push_worker(fx: &Fixture, marker: &str, name: &str) {
    let write = json!({"path": format!("made-{name}.txt"), "content": format!("{name}\n")});
    fx.server.push_for(
        marker,
        ScriptTurn::tool_calls(&[
            (
                &format!("c_where_{name}"),
                "Bash",
                &json!({ "command": WHERE }).to_string(),
            ),
            (&format!("c_write_{name}"), "Write", &write.to_string()),
        ]),
    );
    fx.server.push_for(
        marker,
        ScriptTurn::text(long_report(&format!("{name} done."))),
    );
}

fn result(requests: &[kimi_test_support::RecordedRequest], id: &str) -> String {
    requests
        .iter()
        .find_map(|r| tool_results(&r.body).into_iter().find(|(i, _)| i == id))
        .map(|(_, text)| text)
        .unwrap_or_else(|| panic!("no result for {id}"))
}

#[test]
fn agent_and_swarm_place_subagents_on_declared_environments() {
    let fx = Fixture::new(
        FORMATS[0],
        vec![
            ScriptTurn::tool_calls(&[
                (
                    "c_solo",
                    "Agent",
                    r#"{"prompt":"Report where you run. AGENT-SOLO","description":"where","environment":"pod-2"}"#,
                ),
                (
                    "c_unknown",
                    "Agent",
                    r#"{"prompt":"Never runs.","description":"nowhere","environment":"pod-9"}"#,
                ),
            ]),
            ScriptTurn::tool_calls(&[(
                "c_swarm",
                "AgentSwarm",
                r#"{"description":"spread","prompt_template":"Work on {{item}} where you run.","items":["ITEM-ALPHA","ITEM-BETA","ITEM-GAMMA"],"environments":"pod-*"}"#,
            )]),
            // A placed subagent resumed later runs where it ran before.
            ScriptTurn::tool_calls(&[(
                "c_resume",
                "Agent",
                r#"{"resume":"agent-2","prompt":"RESUME-BETA: where are you now?","description":"again"}"#,
            )]),
            ScriptTurn::text("All targets reported."),
        ],
    );
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let cwds: Vec<PathBuf> = dirs
        .iter()
        .map(|d| std::fs::canonicalize(d.path()).unwrap())
        .collect();
    let config: String = cwds
        .iter()
        .enumerate()
        .map(|(i, cwd)| environment_entry(&format!("pod-{i}"), cwd))
        .collect();
    std::fs::write(fx.home.path().join("config.toml"), config).unwrap();
    push_worker(&fx, "AGENT-SOLO", "solo");
    for (marker, name) in [
        ("ITEM-ALPHA", "alpha"),
        ("ITEM-BETA", "beta"),
        ("ITEM-GAMMA", "gamma"),
    ] {
        push_worker(&fx, marker, name);
    }
    push_worker(&fx, "RESUME-BETA", "resumed");

    let run = fx.run(&["-p", "Spread the work."]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stdout.contains("All targets reported."), "{run:?}");
    let requests = fx.requests();

    // Each subagent's shell was spawned by its own target's executor, in that target's cwd.
    for (name, target) in [
        ("solo", 2),
        ("alpha", 0),
        ("beta", 1),
        ("gamma", 2),
        ("resumed", 1),
    ] {
        assert_eq!(
            result(&requests, &format!("c_where_{name}")).trim_end(),
            format!("KIMI_TARGET=pod-{target} in {}", cwds[target].display()),
            "{name} ran on pod-{target}"
        );
        assert_eq!(
            std::fs::read_to_string(cwds[target].join(format!("made-{name}.txt"))).unwrap(),
            format!("{name}\n")
        );
    }
    // Nothing was written on this machine's working directory.
    let local: Vec<_> = std::fs::read_dir(fx.cwd()).unwrap().flatten().collect();
    assert!(local.is_empty(), "{local:?}");

    // Each subagent was told where its tools run (journaled reminder in its first request).
    let first_of = |marker: &str| -> Value {
        requests
            .iter()
            .find(|r| r.body.to_string().contains(marker))
            .unwrap_or_else(|| panic!("no request for {marker}"))
            .body
            .clone()
    };
    for (marker, target) in [("AGENT-SOLO", 2), ("ITEM-BETA", 1)] {
        let body = first_of(marker).to_string();
        assert!(
            body.contains(&format!("remote environment `pod-{target}` (command)")),
            "{body}"
        );
    }

    // The reports came back to the caller, each naming its target.
    let solo = result(&requests, "c_solo");
    assert!(
        solo.contains("environment: pod-2") && solo.contains("solo done."),
        "{solo}"
    );
    let unknown = result(&requests, "c_unknown");
    assert!(
        unknown.contains("environment `pod-9` is not declared; declared: pod-0, pod-1, pod-2"),
        "{unknown}"
    );
    let swarm = result(&requests, "c_swarm");
    assert!(
        swarm.contains(r#"agent_id="agent-2" item="ITEM-BETA""#),
        "the resume below continues the ITEM-BETA agent: {swarm}"
    );
    for (item, target, name) in [
        ("ITEM-ALPHA", 0, "alpha"),
        ("ITEM-BETA", 1, "beta"),
        ("ITEM-GAMMA", 2, "gamma"),
    ] {
        let block = swarm
            .split("<agent ")
            .find(|b| b.contains(&format!("item=\"{item}\"")))
            .unwrap_or_else(|| panic!("no block for {item}: {swarm}"));
        assert!(
            block.contains(&format!("environment=\"pod-{target}\""))
                && block.contains("status=\"completed\"")
                && block.contains(&format!("{name} done.")),
            "{block}"
        );
    }
}

#[test]
fn local_places_subagents_on_this_machine_while_the_session_runs_remotely() {
    let fx = Fixture::new(
        FORMATS[0],
        vec![
            ScriptTurn::tool_calls(&[
                (
                    "c_main_where",
                    "Bash",
                    &json!({ "command": WHERE }).to_string(),
                ),
                (
                    "c_solo",
                    "Agent",
                    r#"{"prompt":"Report where you run. AGENT-HERE","description":"here","environment":"local"}"#,
                ),
            ]),
            ScriptTurn::tool_calls(&[(
                "c_swarm",
                "AgentSwarm",
                r#"{"description":"spread","prompt_template":"Work on {{item}} where you run.","items":["ITEM-LOCAL","ITEM-POD"],"environments":["local","pod-1"]}"#,
            )]),
            ScriptTurn::text("Both places reported."),
        ],
    );
    let dirs: Vec<tempfile::TempDir> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let cwds: Vec<PathBuf> = dirs
        .iter()
        .map(|d| std::fs::canonicalize(d.path()).unwrap())
        .collect();
    let config: String = cwds
        .iter()
        .enumerate()
        .map(|(i, cwd)| environment_entry(&format!("pod-{i}"), cwd))
        .collect();
    std::fs::write(fx.home.path().join("config.toml"), config).unwrap();
    push_worker(&fx, "AGENT-HERE", "here");
    push_worker(&fx, "ITEM-LOCAL", "item-local");
    push_worker(&fx, "ITEM-POD", "item-pod");

    let run = fx.run(&["-p", "Split the work.", "--environment", "pod-0"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let requests = fx.requests();
    // The session itself runs on pod-0 …
    assert_eq!(
        result(&requests, "c_main_where").trim_end(),
        format!("KIMI_TARGET=pod-0 in {}", cwds[0].display())
    );
    // … while `local` runs here, in the directory the session started in (the shell's parent
    // is kimi-rs itself, with no target marker), and `pod-1` there.
    let here = fx.cwd();
    for (name, expected, dir) in [
        ("here", format!(" in {}", here.display()), &here),
        ("item-local", format!(" in {}", here.display()), &here),
        (
            "item-pod",
            format!("KIMI_TARGET=pod-1 in {}", cwds[1].display()),
            &cwds[1],
        ),
    ] {
        assert_eq!(
            result(&requests, &format!("c_where_{name}")).trim_end(),
            expected,
            "{name}"
        );
        assert_eq!(
            std::fs::read_to_string(dir.join(format!("made-{name}.txt"))).unwrap(),
            format!("{name}\n")
        );
    }
    let swarm = result(&requests, "c_swarm");
    for (item, place) in [("ITEM-LOCAL", "local"), ("ITEM-POD", "pod-1")] {
        let block = swarm
            .split("<agent ")
            .find(|b| b.contains(&format!("item=\"{item}\"")))
            .unwrap_or_else(|| panic!("no block for {item}: {swarm}"));
        assert!(
            block.contains(&format!("environment=\"{place}\""))
                && block.contains("status=\"completed\""),
            "{block}"
        );
    }
}
