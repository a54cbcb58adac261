//! config.toml on the real binary in print mode, against the loopback scripted model: the
//! `[loop_control]` limits take effect, a key of the wrong type refuses the start naming the
//! file, the line and the key, and unknown keys are warned about with their line.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{FORMATS, Fixture};
use kimi_llm::scripted::ScriptTurn;

fn read_call(id: &str) -> ScriptTurn {
    ScriptTurn::tool_calls(&[(id, "Read", r#"{"path":"notes.txt"}"#)])
}

/// A model that reads `notes.txt` `reads` times and then says "done", with `config` as the
/// home's config.toml.
fn reading_fixture(reads: usize, config: &str) -> Fixture {
    let mut script: Vec<ScriptTurn> = (1..=reads)
        .map(|n| read_call(&format!("call_{n}")))
        .collect();
    script.push(ScriptTurn::text("done"));
    let fx = Fixture::new(FORMATS[0], script);
    std::fs::write(fx.cwd().join("notes.txt"), "hello\n").unwrap();
    std::fs::write(fx.home.path().join("config.toml"), config).unwrap();
    fx
}

#[test]
fn max_steps_per_turn_stops_a_turn_after_that_many_steps() {
    let fx = reading_fixture(3, "[loop_control]\nmax_steps_per_turn = 2\n");
    let run = fx.run(&["-p", "read the notes until told to stop"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert_eq!(
        fx.requests().len(),
        2,
        "two steps, two model requests: {run:?}"
    );
    assert!(run.stderr.contains("Turn exceeded maxSteps=2"), "{run:?}");

    // The environment variable wins over the file.
    let fx = reading_fixture(2, "[loop_control]\nmax_steps_per_turn = 2\n");
    let run: common::Run = fx
        .command(&["-p", "read"])
        .env("KIMI_LOOP_MAX_STEPS_PER_TURN", "0")
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, Some(0), "0 = unlimited: {run:?}");
    assert_eq!(fx.requests().len(), 3, "{run:?}");
}

#[test]
fn max_attempts_per_step_bounds_the_retries_of_a_step() {
    let fx = Fixture::new(
        FORMATS[0],
        vec![
            ScriptTurn::Error {
                status: 503,
                body: r#"{"error":{"message":"overloaded","type":"server_error"}}"#.to_owned(),
                headers: vec![("retry-after".to_owned(), "0".to_owned())],
            },
            ScriptTurn::text("never reached"),
        ],
    );
    std::fs::write(
        fx.home.path().join("config.toml"),
        "[loop_control]\nmax_attempts_per_step = 1\n",
    )
    .unwrap();
    let run = fx.run(&["-p", "hi"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert_eq!(fx.requests().len(), 1, "one attempt, no retry: {run:?}");
}

#[test]
fn a_key_of_the_wrong_type_refuses_to_start_naming_file_line_and_key() {
    let fx = Fixture::new(FORMATS[0], vec![ScriptTurn::text("never reached")]);
    let path = fx.home.path().join("config.toml");
    std::fs::write(
        &path,
        "# limits\n[loop_control]\nmax_steps_per_turn = \"ten\"\n",
    )
    .unwrap();
    let run = fx.run(&["-p", "hi"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    let expected = format!(
        "{}:3: `loop_control.max_steps_per_turn`: invalid type: string \"ten\", expected a non-negative integer",
        path.display()
    );
    assert!(run.stderr.contains(&expected), "{expected}\n{run:?}");
    assert!(fx.requests().is_empty(), "nothing was sent: {run:?}");
}

#[test]
fn unknown_keys_are_warned_about_with_line_and_suggestion_and_the_run_goes_on() {
    let fx = Fixture::new(FORMATS[0], vec![ScriptTurn::text("hello")]);
    let path = fx.home.path().join("config.toml");
    std::fs::write(&path, "[loop_control]\nmax_stepz_per_turn = 1\n").unwrap();
    let run = fx.run(&["-p", "hi"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let expected = format!(
        "kimi-rs: {}:2: `loop_control.max_stepz_per_turn`: unknown key",
        path.display()
    );
    assert!(
        run.stderr.contains(&expected)
            && run.stderr.contains("(did you mean `max_steps_per_turn`?)"),
        "{run:?}"
    );
}

/// Tool names the model was offered (OpenAI chat shape).
fn offered_tools(body: &serde_json::Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn tools_disabled_in_config_are_not_offered_to_the_model() {
    let fx = Fixture::new(FORMATS[0], vec![ScriptTurn::text("hello")]);
    let run = fx.run(&["-p", "hi"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let before = offered_tools(&fx.requests()[0].body);
    assert!(before.iter().any(|t| t == "Bash") && before.iter().any(|t| t == "Write"));

    let fx = Fixture::new(FORMATS[0], vec![ScriptTurn::text("hello")]);
    std::fs::write(
        fx.home.path().join("config.toml"),
        "[tools]\ndisabled = [\"Bash\", \"Write\"]\n",
    )
    .unwrap();
    let run = fx.run(&["-p", "hi"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let after = offered_tools(&fx.requests()[0].body);
    assert!(
        !after.iter().any(|t| t == "Bash" || t == "Write"),
        "{after:?}"
    );
    assert_eq!(after.len(), before.len() - 2, "{after:?}");
}

#[test]
fn settings_kimi_rs_does_not_have_are_reported_at_start_up() {
    let fx = Fixture::new(FORMATS[0], vec![ScriptTurn::text("hello")]);
    let path = fx.home.path().join("config.toml");
    std::fs::write(&path, "telemetry = false\n[experimental]\ntower = true\n").unwrap();
    let run = fx.run(&["-p", "hi"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    for (line, key) in [(1, "telemetry"), (3, "experimental.tower")] {
        let expected = format!(
            "kimi-rs: {}:{line}: `{key}`: not supported by kimi-rs; ignored",
            path.display()
        );
        assert!(run.stderr.contains(&expected), "{expected}\n{run:?}");
    }
}

/// One ACP exchange: initialize, a new session in `cwd`, one prompt; returns the prompt's
/// response. Read needs no approval, so no permission request comes.
fn acp_prompt(fx: &Fixture, text: &str) -> serde_json::Value {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;

    use serde_json::json;
    let mut child = fx
        .command(&["acp"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut call = |id: u64, method: &str, params: serde_json::Value| -> serde_json::Value {
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
        loop {
            let line = lines.next().expect("the agent answered").unwrap();
            let value: serde_json::Value = serde_json::from_str(&line).unwrap();
            if value.get("id") == Some(&json!(id)) && value.get("method").is_none() {
                return value;
            }
        }
    };
    call(
        1,
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    let session = call(2, "session/new", json!({"cwd": fx.cwd(), "mcpServers": []}));
    let id = session["result"]["sessionId"].as_str().unwrap().to_owned();
    let response = call(
        3,
        "session/prompt",
        json!({"sessionId": id, "prompt": [{"type": "text", "text": text}]}),
    );
    drop(stdin);
    child.wait().unwrap();
    response
}

#[test]
fn max_steps_per_turn_is_enforced_for_editor_sessions_too() {
    let fx = reading_fixture(2, "[loop_control]\nmax_steps_per_turn = 1\n");
    let response = acp_prompt(&fx, "read the notes");
    assert_eq!(fx.requests().len(), 1, "one step, one request: {response}");
}
