//! Skills, MCP servers and subagents in the UI: skill rows in the `/` menu and skill commands
//! while busy, the `/mcp` panel, startup warnings, subagent cards and agent tasks in `/tasks`.

use crossterm::event::KeyCode;
use insta::assert_snapshot;
use kimi_protocol::message::ToolCall;
use kimi_protocol::ops::{Event, Op};
use kimi_tui::{
    HostUpdate, McpServerEntry, McpServerState, McpStatus, SkillEntry, TaskEntry, UiAction,
};

use super::support::{Harness, text};

fn skills() -> Vec<SkillEntry> {
    vec![
        SkillEntry {
            command: "skill:commit".into(),
            description: "write a commit message for the staged change".into(),
        },
        SkillEntry {
            command: "skill:review".into(),
            description: "review the current diff".into(),
        },
        SkillEntry {
            command: "review.security".into(),
            description: "security pass of a review".into(),
        },
    ]
}

fn agent_call(id: &str, args: &str) -> Event {
    Event::ToolStarted {
        call: ToolCall::new(id, "Agent", Some(args.to_owned())),
    }
}

fn result(id: &str, output: &str, is_error: bool) -> Event {
    Event::ToolResult {
        tool_call_id: id.into(),
        output: text(output),
        is_error,
    }
}

#[test]
fn skills_follow_the_builtin_commands_in_the_slash_menu() {
    let mut h = Harness::new();
    h.app.handle_host(HostUpdate::Skills(skills()));
    h.type_str("/co");
    assert_snapshot!("skill_completion", h.screen(70, 8));
    // The bare name (the `/<name>` shorthand) finds the skill and its sub-skill.
    h.key(KeyCode::Esc);
    h.app.set_input("");
    h.type_str("/rev");
    let screen = h.screen(70, 8);
    assert!(screen.contains("/skill:review"), "{screen}");
    assert!(screen.contains("/review.security"), "{screen}");
    // Tab fills in the command; Enter sends it to the host like any prompt.
    h.key(KeyCode::Tab);
    assert_eq!(h.app.input_text(), "/skill:review ");
    h.type_str("src/");
    h.key(KeyCode::Enter);
    assert_eq!(
        h.actions(),
        vec![UiAction::Op(Op::Submit {
            input: text("/skill:review src/"),
            origin: None,
            prompt_id: None,
        })]
    );
}

#[test]
fn a_skill_command_typed_while_busy_is_queued() {
    let mut h = Harness::new();
    h.app.handle_host(HostUpdate::Skills(skills()));
    h.type_str("fix the bug");
    h.key(KeyCode::Enter);
    h.event(Event::TurnStarted { turn_id: 1 });
    h.actions();
    h.type_str("/skill:commit");
    h.key(KeyCode::Esc); // close the menu
    h.key(KeyCode::Enter);
    assert_eq!(
        h.actions(),
        vec![UiAction::Op(Op::Submit {
            input: text("/skill:commit"),
            origin: None,
            prompt_id: None,
        })]
    );
    assert!(h.screen(60, 10).contains("/skill:commit"));
}

fn servers() -> McpStatus {
    McpStatus {
        servers: vec![
            McpServerEntry {
                name: "github".into(),
                transport: "http".into(),
                state: McpServerState::Connected,
                tool_count: 12,
                source: None,
            },
            McpServerEntry {
                name: "fs".into(),
                transport: "stdio".into(),
                state: McpServerState::Failed(
                    "cannot start `mcp-fs`: No such file or directory; check `command` in mcp.json"
                        .into(),
                ),
                tool_count: 0,
                source: None,
            },
            McpServerEntry {
                name: "slow".into(),
                transport: "stdio".into(),
                state: McpServerState::Connecting,
                tool_count: 0,
                source: None,
            },
            McpServerEntry {
                name: "old".into(),
                transport: "sse".into(),
                state: McpServerState::Disabled,
                tool_count: 0,
                source: None,
            },
        ],
        problem: None,
        config_files: vec!["~/.kimi-rs/mcp.json".into()],
    }
}

#[test]
fn mcp_panel_lists_servers_with_state_and_tools() {
    let mut h = Harness::new();
    h.type_str("/mcp");
    h.key(KeyCode::Esc);
    h.key(KeyCode::Enter);
    assert_eq!(h.actions(), vec![UiAction::Op(Op::McpStatus)]);
    h.event(Event::McpStatus { status: servers() });
    assert_snapshot!("mcp_panel", h.screen(70, 16));
    assert!(
        h.app
            .transcript_markdown()
            .contains("github  connected   http")
    );
}

#[test]
fn mcp_panel_shows_a_server_that_needs_login_and_how_to_sign_in() {
    let mut h = Harness::new();
    let mut status = servers();
    status.servers.push(McpServerEntry {
        name: "linear".into(),
        transport: "http".into(),
        state: McpServerState::NeedsLogin(
            "it asks for an OAuth sign-in (HTTP 401). Sign in with `kimi-rs mcp login linear`"
                .into(),
        ),
        tool_count: 0,
        source: None,
    });
    h.event(Event::McpStatus { status });
    let text = h.app.transcript_markdown();
    assert!(text.contains("linear  needs login  http"), "{text}");
    assert!(
        text.contains("login: it asks for an OAuth sign-in (HTTP 401). Sign in with `kimi-rs mcp login linear`"),
        "{text}"
    );
    assert!(text.contains("1 need login"), "{text}");
}

#[test]
fn mcp_panel_lists_what_did_not_load_under_the_servers() {
    let mut h = Harness::new();
    let mut status = servers();
    status.problem = Some(
        "Invalid MCP server `typo` in mcp.json: unknown key `comand` (did you mean `command`?).\nthis folder is not trusted, so its project commands were not run:\n  - MCP server `repo` (stdio: sh -c x) from /r/.mcp.json".to_owned(),
    );
    h.event(Event::McpStatus { status });
    let text = h.app.transcript_markdown();
    assert!(
        text.contains("Not loaded:")
            && text.contains("unknown key `comand` (did you mean `command`?)")
            && text.contains("- MCP server `repo` (stdio: sh -c x) from /r/.mcp.json"),
        "{text}"
    );
    assert!(text.contains("github  connected   http"), "{text}");
}

#[test]
fn mcp_panel_without_servers_says_where_to_add_them() {
    let mut h = Harness::new();
    h.event(Event::McpStatus {
        status: McpStatus {
            servers: Vec::new(),
            problem: None,
            config_files: vec![
                "~/.kimi-rs/mcp.json".into(),
                ".kimi-code/mcp.json".into(),
                ".mcp.json".into(),
            ],
        },
    });
    assert_snapshot!("mcp_panel_empty", h.screen(70, 10));
}

#[test]
fn the_footer_says_while_mcp_servers_connect() {
    let mut h = Harness::new();
    h.app.handle_host(HostUpdate::McpConnecting(2));
    assert_snapshot!("mcp_connecting_footer", h.screen(70, 4));
    h.app.handle_host(HostUpdate::McpConnecting(0));
    assert!(!h.screen(70, 4).contains("connecting"));
}

#[test]
fn startup_warnings_are_notices_in_the_transcript() {
    let mut h = Harness::new();
    h.app.handle_host(HostUpdate::Warning(
        "skills/broken/SKILL.md: missing `description` in the frontmatter; the skill was skipped"
            .into(),
    ));
    h.app.handle_host(HostUpdate::Warning(
        "MCP server `fs` did not start: cannot start `mcp-fs`: No such file or directory".into(),
    ));
    assert_snapshot!("startup_warnings", h.screen(70, 10));
}

const REPORT: &str = "agent_id: agent-0\nactual_subagent_type: explore\nstatus: completed\nusage: input 1200, output 300\n\n[summary]\nThe parser lives in crates/core/src/parse.rs.\nIt has no tests for empty input.\nTwo callers: run.rs and acp.rs.\nNothing else touches it.\nLine five is hidden.";

#[test]
fn subagent_cards_show_type_description_and_summary() {
    let mut h = Harness::new();
    h.type_str("look around");
    h.key(KeyCode::Enter);
    h.event(Event::TurnStarted { turn_id: 1 });
    h.events([
        agent_call(
            "a1",
            r#"{"description":"find the parser","prompt":"…","subagent_type":"explore"}"#,
        ),
        agent_call("a2", r#"{"description":"fix the tests","prompt":"…"}"#),
        agent_call(
            "a3",
            r#"{"description":"watch CI","prompt":"…","run_in_background":true}"#,
        ),
    ]);
    h.advance(2_000);
    assert_snapshot!("subagents_running", h.screen(70, 14));
    h.advance(1_000);
    h.events([
        result(
            "a3",
            "Started the subagent in the background as task agent-1a2b3c4d. Its report arrives in this conversation when it finishes.",
            false,
        ),
        result("a1", REPORT, false),
        result(
            "a2",
            "agent_id: agent-1\nactual_subagent_type: coder\nstatus: failed\nusage: input 10, output 0\n\nsubagent error: the provider refused the request (429)\nresume_hint: continue this subagent",
            true,
        ),
    ]);
    assert_snapshot!("subagents_done", h.screen(70, 22));
}

#[test]
fn task_browser_lists_agent_tasks_with_their_kind() {
    let mut h = Harness::new();
    h.type_str("/tasks");
    h.key(KeyCode::Esc);
    h.key(KeyCode::Enter);
    assert_eq!(h.actions(), vec![UiAction::Op(Op::ListTasks)]);
    h.event(Event::TaskList {
        tasks: vec![
            TaskEntry {
                id: "bash-1".into(),
                kind: "bash".into(),
                description: "npm run dev".into(),
                status: "running".into(),
                output_tail: String::new(),
            },
            TaskEntry {
                id: "agent-1a2b3c4d".into(),
                kind: "agent".into(),
                description: "watch CI".into(),
                status: "running".into(),
                output_tail: String::new(),
            },
        ],
    });
    assert_snapshot!("tasks_with_agent", h.screen(70, 10));
}
