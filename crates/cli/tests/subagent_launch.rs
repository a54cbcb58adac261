//! The `Agent` / `AgentSwarm` launch options end to end, on the real binary in print mode with
//! scripted models: the `[subagent]` model pool (a pooled model's own base URL and model name;
//! an unknown model refused with the pool listed), `fork` (the subagent's first request carries
//! the caller's conversation), and `isolation: "worktree"` in a real git repository (two
//! parallel agents editing one file each see only their own edit; both branches keep their
//! commits; the main checkout is untouched; the worktrees are gone) and its refusal outside one.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::Command;

use common::*;
use kimi_llm::scripted::ScriptTurn;
use kimi_test_support::ScriptServer;
use serde_json::Value;

/// A report long enough (over 200 characters) that the summary policy asks for nothing more.
fn long_report(head: &str) -> String {
    format!(
        "{head} The work is finished and nothing else is pending. I checked the result once more, left the rest of the repository alone, and there are no open questions for the caller to answer. Nothing needs a follow-up from the caller."
    )
}

fn tool_result(body: &Value, id: &str) -> String {
    tool_results(body)
        .into_iter()
        .find(|(call, _)| call == id)
        .map(|(_, text)| text)
        .unwrap_or_else(|| panic!("no result for {id} in {body}"))
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs (install git to run these tests)");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A repository with one commit holding `shared.txt` = "base\n".
fn init_repo(dir: &Path) {
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["config", "user.email", "test@example.com"]);
    git(dir, &["config", "user.name", "Test"]);
    git(dir, &["config", "commit.gpgsign", "false"]);
    std::fs::write(dir.join("shared.txt"), "base\n").unwrap();
    git(dir, &["add", "shared.txt"]);
    git(dir, &["commit", "-q", "-m", "base"]);
}

#[test]
fn a_pooled_model_serves_the_subagent_and_an_unknown_one_is_refused() {
    let fx = Fixture::new(
        FORMATS[0],
        vec![
            ScriptTurn::tool_calls(&[(
                "call_bad",
                "Agent",
                r#"{"prompt":"Find the config loader.","description":"find loader","subagent_type":"explore","model":"nosuch"}"#,
            )]),
            ScriptTurn::tool_calls(&[(
                "call_cheap",
                "Agent",
                r#"{"prompt":"Find the config loader.","description":"find loader","subagent_type":"explore","model":"cheap"}"#,
            )]),
            ScriptTurn::text("The loader is in src/config.rs."),
        ],
    );
    // The pooled model lives behind a server of its own: its requests prove the routing.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let cheap = rt
        .block_on(ScriptServer::start(vec![ScriptTurn::text(long_report(
            "The config loader is src/config.rs (fn load).",
        ))]))
        .unwrap();
    std::fs::write(
        fx.home.path().join("config.toml"),
        format!(
            r#"
[providers.cheap]
type = "openai"
api_key = "sk-cheap"
base_url = "{}/v1"

[models.cheap]
provider = "cheap"
model = "cheap-model"
max_context_size = 100000

[subagent]
models = {{ cheap = "fast and cheap; simple searches" }}
"#,
            cheap.base_url()
        ),
    )
    .unwrap();
    let run = fx.run(&["-p", "Where is the config loader?"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let main = fx.requests();
    assert_eq!(main.len(), 3, "the subagent never asked the main model");
    for request in &main {
        assert_eq!(request.body["model"], "scripted-model");
    }
    let agent_tool = main[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "Agent")
        .unwrap();
    let description = agent_tool["function"]["description"].as_str().unwrap();
    assert!(
        description.contains("- cheap: fast and cheap; simple searches"),
        "{description}"
    );
    let refused = tool_result(&main[1].body, "call_bad");
    assert!(
        refused.contains(
            "model `nosuch` is not in the subagent model pool; use one of: primary, cheap"
        ),
        "{refused}"
    );
    let sub = cheap.requests();
    assert_eq!(sub.len(), 1, "{sub:?}");
    assert_eq!(sub[0].path, "/v1/chat/completions");
    assert_eq!(sub[0].body["model"], "cheap-model");
    assert_eq!(sub[0].header("authorization"), Some("Bearer sk-cheap"));
    let report = tool_result(&main[2].body, "call_cheap");
    assert!(
        report.contains("model: cheap") && report.contains("src/config.rs (fn load)"),
        "{report}"
    );
    drop(cheap);
}

#[test]
fn a_fork_starts_from_the_callers_conversation() {
    let fx = Fixture::new(
        FORMATS[0],
        vec![
            ScriptTurn::tool_calls(&[(
                "call_fork",
                "Agent",
                r#"{"prompt":"Say which codeword the user gave.","description":"report codeword","fork":true}"#,
            )]),
            ScriptTurn::text("The codeword is PELICAN."),
            ScriptTurn::text("The subagent confirmed PELICAN."),
        ],
    );
    let run = fx.run(&["-p", "Remember the codeword PELICAN, then ask a subagent."]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let requests = fx.requests();
    assert_eq!(requests.len(), 3);
    let sub = &requests[1].body;
    let texts = user_texts(sub);
    assert!(
        texts
            .iter()
            .any(|t| t.contains("Remember the codeword PELICAN, then ask a subagent.")),
        "the fork lacks the caller's prompt: {texts:?}"
    );
    assert!(
        texts
            .last()
            .unwrap()
            .contains("Say which codeword the user gave."),
        "{texts:?}"
    );
    // The caller's pending Agent call is closed for the child, honestly.
    let inherited = tool_result(sub, "call_fork");
    assert!(inherited.contains("still executing"), "{inherited}");
    let report = tool_result(&requests[2].body, "call_fork");
    assert!(report.contains("The codeword is PELICAN."), "{report}");
}

#[test]
fn fork_with_a_type_or_isolation_outside_git_is_refused_before_anything_starts() {
    let fx = Fixture::new(
        FORMATS[0],
        vec![
            ScriptTurn::tool_calls(&[
                (
                    "call_fork_type",
                    "Agent",
                    r#"{"prompt":"x","description":"bad fork","fork":true,"subagent_type":"explore"}"#,
                ),
                (
                    "call_tree",
                    "Agent",
                    r#"{"prompt":"Edit a file.","description":"isolated edit","isolation":"worktree"}"#,
                ),
            ]),
            ScriptTurn::text("Both calls were refused."),
        ],
    );
    let run = fx.run(&["-p", "Try both."]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let requests = fx.requests();
    assert_eq!(requests.len(), 2, "a subagent started");
    let fork = tool_result(&requests[1].body, "call_fork_type");
    assert!(
        fork.contains("drop `resume`, `subagent_type` and `model`"),
        "{fork}"
    );
    let tree = tool_result(&requests[1].body, "call_tree");
    assert!(
        tree.contains("isolation \"worktree\" needs a git repository")
            && tree.contains(&fx.cwd().display().to_string()),
        "{tree}"
    );
}

/// One agent's script: append its line, show the file, report.
fn push_editor(fx: &Fixture, marker: &str, line: &str) {
    let append = serde_json::json!({"command": format!("printf '{line}\\n' >> shared.txt")});
    let show = serde_json::json!({"command": "cat shared.txt"});
    fx.server.push_for(
        marker,
        ScriptTurn::tool_calls(&[(&format!("call_append_{line}"), "Bash", &append.to_string())]),
    );
    fx.server.push_for(
        marker,
        ScriptTurn::tool_calls(&[(&format!("call_show_{line}"), "Bash", &show.to_string())]),
    );
    fx.server.push_for(
        marker,
        ScriptTurn::text(long_report(&format!("Appended {line}."))),
    );
}

#[test]
fn worktree_isolated_agents_edit_the_same_file_apart() {
    let fx = Fixture::new(
        FORMATS[0],
        vec![ScriptTurn::tool_calls(&[(
            "call_swarm",
            "AgentSwarm",
            r#"{"description":"append markers","prompt_template":"Append one line to shared.txt for {{item}}.","items":["EDIT-ALPHA","EDIT-BETA"],"isolation":"worktree"}"#,
        )])],
    );
    init_repo(&fx.cwd());
    push_editor(&fx, "EDIT-ALPHA", "alpha");
    push_editor(&fx, "EDIT-BETA", "beta");
    fx.server
        .push(ScriptTurn::text("Both agents appended their line."));
    let run = fx.run(&["-p", "Have two agents append their lines."]);
    assert_eq!(run.code, Some(0), "{run:?}");

    let requests = fx.requests();
    // Each agent's `cat` shows the base and its own line only.
    for (line, other) in [("alpha", "beta"), ("beta", "alpha")] {
        let shown = requests
            .iter()
            .find_map(|r| {
                tool_results(&r.body)
                    .into_iter()
                    .find(|(id, _)| id == &format!("call_show_{line}"))
            })
            .map(|(_, text)| text)
            .unwrap_or_else(|| panic!("no cat result for {line}"));
        assert!(shown.contains(&format!("base\n{line}")), "{shown}");
        assert!(!shown.contains(other), "{line} saw {other}'s edit: {shown}");
    }

    // Both branches hold their agent's commit; the report names them with the diff.
    let cwd = fx.cwd();
    let branches: Vec<String> = git(
        &cwd,
        &["branch", "--list", "kimi-rs/*", "--format=%(refname:short)"],
    )
    .lines()
    .map(str::to_owned)
    .collect();
    assert_eq!(branches.len(), 2, "{branches:?}");
    let mut contents: Vec<String> = branches
        .iter()
        .map(|b| git(&cwd, &["show", &format!("{b}:shared.txt")]))
        .collect();
    contents.sort();
    // On failure, the swarm's report and stderr say what happened to the worktree commits.
    let report = tool_result(&requests.last().unwrap().body, "call_swarm");
    assert_eq!(
        contents,
        ["base\nalpha\n", "base\nbeta\n"],
        "{report}\n{}",
        run.stderr
    );
    for branch in &branches {
        let subject = git(&cwd, &["log", "-1", "--format=%s", branch]);
        assert!(subject.starts_with("agent-"), "{subject}");
        assert_eq!(
            git(&cwd, &["rev-list", "--count", &format!("main..{branch}")]).trim(),
            "1"
        );
    }
    for branch in &branches {
        assert!(
            report.contains(&format!("worktree_branch: {branch}")),
            "{report}"
        );
    }
    assert_eq!(report.matches("shared.txt | 1 +").count(), 2, "{report}");

    // The main checkout is untouched and the worktrees are gone.
    assert_eq!(
        std::fs::read_to_string(cwd.join("shared.txt")).unwrap(),
        "base\n"
    );
    assert_eq!(git(&cwd, &["status", "--porcelain"]), "");
    let worktrees = git(&cwd, &["worktree", "list", "--porcelain"]);
    assert_eq!(worktrees.matches("worktree ").count(), 1, "{worktrees}");
}
