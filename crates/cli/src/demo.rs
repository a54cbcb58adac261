//! `kimi-rs demo`: an offline session on the bundled scripted provider. A small project with
//! a failing test is written to a fresh directory; the scripted model runs the test, reads the
//! code, fixes it with Edit and runs the test again — through the real engine, journal and
//! tools, so what you see is what a session with a real model does.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use kimi_core::session::{Resume, open_session};
use kimi_llm::scripted::{ScriptTurn, ScriptedProvider};
use kimi_llm::{ModelParams, Provider};
use kimi_protocol::ContentPart;
use kimi_protocol::ops::{Event, Op};

use crate::run::{ModelChoice, setup};

const ADD_SH: &str = "#!/bin/sh\n# add.sh A B: print A + B\necho $(($1 - $2))\n";
const TEST_SH: &str = "#!/bin/sh\nout=$(sh add.sh 2 3)\nif [ \"$out\" = 5 ]; then echo \"ok: 2 + 3 = $out\"; else echo \"FAIL: expected 5, got $out\"; exit 1; fi\n";

fn script() -> Vec<ScriptTurn> {
    vec![
        ScriptTurn::tool_calls(&[("call_1", "Bash", r#"{"command":"sh test.sh"}"#)]),
        ScriptTurn::tool_calls(&[("call_2", "Read", r#"{"path":"add.sh"}"#)]),
        ScriptTurn::tool_calls(&[(
            "call_3",
            "Edit",
            r#"{"path":"add.sh","old_string":"$(($1 - $2))","new_string":"$(($1 + $2))"}"#,
        )]),
        ScriptTurn::tool_calls(&[("call_4", "Bash", r#"{"command":"sh test.sh"}"#)]),
        ScriptTurn::text(
            "Fixed it: `add.sh` subtracted its arguments instead of adding them. I changed `-` to `+` and `sh test.sh` passes now.",
        ),
    ]
}

fn write_project(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    std::fs::write(dir.join("add.sh"), ADD_SH)?;
    std::fs::write(dir.join("test.sh"), TEST_SH)?;
    Ok(())
}

fn preview(parts: &[ContentPart]) -> String {
    let text: String = parts.iter().filter_map(ContentPart::as_text).collect();
    let mut lines: Vec<&str> = text.lines().take(6).collect();
    if text.lines().count() > 6 {
        lines.push("…");
    }
    lines.join("\n    ")
}

pub fn run(dir: Option<PathBuf>) -> anyhow::Result<u8> {
    let dir = match dir {
        Some(dir) => dir,
        None => std::env::temp_dir().join(format!("kimi-rs-demo-{}", std::process::id())),
    };
    write_project(&dir)?;
    let dir = std::fs::canonicalize(&dir)?;
    let home = dir.join(".kimi-rs-home");
    let provider: Arc<dyn Provider> = Arc::new(ScriptedProvider::new(script()));
    let model = ModelChoice {
        alias: "demo".to_owned(),
        provider,
        params: ModelParams::default(),
        max_context_tokens: 128_000,
    };
    println!(
        "kimi-rs demo: a scripted model fixes a failing test in {}\n",
        dir.display()
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let mut opened = open_session(setup(
            home.clone(),
            dir.clone(),
            Resume::New,
            model,
            Vec::new(),
            None,
            &Default::default(),
        ))?;
        let prompt = "The test in test.sh fails. Find the bug and fix it.";
        println!("> {prompt}\n");
        opened.agent.handle.send(Op::Submit {
            input: vec![ContentPart::text(prompt)],
            origin: None,
            prompt_id: None,
        });
        let mut code = 1;
        while let Some(event) = opened.agent.events.recv().await {
            match event {
                Event::AssistantMessage { message } => {
                    let text = message.text();
                    if !text.trim().is_empty() {
                        println!("• {text}\n");
                    }
                }
                Event::ToolStarted { call } => {
                    println!("⏺ {}({})", call.name, call.arguments.unwrap_or_default());
                }
                Event::ToolResult { output, is_error, .. } => {
                    let mark = if is_error { "✗" } else { "⎿" };
                    println!("  {mark} {}\n", preview(&output));
                }
                Event::TurnEnded { reason, error, .. } => {
                    if let Some(error) = error {
                        println!("turn failed: {error}");
                    }
                    code = u8::from(reason != kimi_protocol::ops::TurnEndReason::Completed);
                    break;
                }
                _ => {}
            }
        }
        opened.agent.handle.send(Op::Shutdown);
        let _ = opened.agent.join.await;
        println!(
            "The session was journaled to {}\nResume it with: KIMI_RS_HOME={} kimi-rs -c -p \"...\" (needs a model; see README)",
            opened.session.dir.display(),
            home.display()
        );
        Ok(code)
    })
}
