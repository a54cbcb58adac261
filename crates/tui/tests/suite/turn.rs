//! A running turn: streaming Markdown, thinking, tool cards, status line, queue, steer,
//! interrupt, compaction, and layout at 40 / 120 columns and with CJK text.

use crossterm::event::{KeyCode, KeyModifiers};
use insta::assert_snapshot;
use kimi_protocol::message::{Message, ToolCall};
use kimi_protocol::ops::{AgentStatus, Event, Op, TurnEndReason, Usage};
use kimi_tui::{HostRequest, UiAction};

use super::support::{Harness, text};

const ANSWER: &str = "## Plan\n\nI will:\n\n1. read `main.rs`\n2. fix the **bug**\n\n```rust\nfn main() {\n    println!(\"hi\");\n}\n```\n\n| file | lines |\n|---|---|\n| main.rs | 42 |\n";

fn start_turn(h: &mut Harness, prompt: &str) {
    h.type_str(prompt);
    h.key(KeyCode::Enter);
    h.event(Event::TurnStarted { turn_id: 1 });
    h.event(Event::StepStarted {
        turn_id: 1,
        step: 1,
    });
}

fn tool_call(id: &str, name: &str, args: &str) -> ToolCall {
    ToolCall::new(id, name, Some(args.to_owned()))
}

#[test]
fn streaming_answer_renders_markdown_as_it_arrives() {
    let mut h = Harness::new();
    start_turn(&mut h, "fix the bug");
    assert_eq!(
        h.actions(),
        vec![UiAction::Op(Op::Submit {
            input: text("fix the bug"),
            origin: None,
            prompt_id: None
        })]
    );
    h.event(Event::ThinkingDelta {
        text: "The user wants a fix.\nLook at main first.".into(),
    });
    // Deliver the answer in small chunks, as a provider would; stop mid code block.
    let cut = ANSWER.find("}\n```").unwrap();
    for chunk in ANSWER.as_bytes()[..cut].chunks(7) {
        h.event(Event::AssistantDelta {
            text: String::from_utf8(chunk.to_vec()).unwrap(),
        });
    }
    h.advance(2300);
    assert_snapshot!("streaming_mid_code_block", h.screen(60, 26));
    h.event(Event::AssistantDelta {
        text: ANSWER[cut..].into(),
    });
    h.event(Event::AssistantMessage {
        message: Message::assistant(text(ANSWER), vec![]),
    });
    h.event(Event::TurnEnded {
        turn_id: 1,
        reason: TurnEndReason::Completed,
        error: None,
    });
    assert!(!h.app.is_busy());
    assert_snapshot!("streaming_finished", h.screen(60, 30));
}

#[test]
fn tool_cards_running_done_and_failed() {
    let mut h = Harness::new();
    start_turn(&mut h, "look around");
    h.events([
        Event::ToolStarted {
            call: tool_call("c1", "Bash", r#"{"command":"cargo test --workspace"}"#),
        },
        Event::ToolStarted {
            call: tool_call(
                "c2",
                "Edit",
                r#"{"file_path":"src/lib.rs","old_string":"let x = 1;","new_string":"let x = 2;\nlet y = 3;"}"#,
            ),
        },
        Event::ToolStarted {
            call: tool_call("c3", "Read", r#"{"file_path":"missing.txt"}"#),
        },
        Event::ToolProgress {
            tool_call_id: "c1".into(),
            text: "Compiling kimi-tui\nRunning tests\n".into(),
        },
    ]);
    h.advance(450);
    h.event(Event::ToolResult {
        tool_call_id: "c2".into(),
        output: text("ok"),
        is_error: false,
    });
    h.advance(800);
    h.event(Event::ToolResult {
        tool_call_id: "c3".into(),
        output: text("File not found: missing.txt. Check the path."),
        is_error: true,
    });
    h.advance(1000);
    h.event(Event::Status {
        status: AgentStatus::RunningTools {
            step: 1,
            pending: vec!["c1".into()],
        },
    });
    assert_snapshot!("tool_cards", h.screen(70, 20));
    h.event(Event::ToolResult {
        tool_call_id: "c1".into(),
        output: text(
            &(1..=9)
                .map(|i| format!("test {i} ... ok\n"))
                .collect::<String>(),
        ),
        is_error: false,
    });
    assert_snapshot!("tool_card_output_collapsed", h.screen(70, 20));
    h.ctrl('o');
    assert_snapshot!("tool_card_output_expanded", h.screen(70, 30));
}

#[test]
fn status_line_shows_elapsed_step_tokens_and_context() {
    let mut h = Harness::new();
    start_turn(&mut h, "go");
    h.events([
        Event::StepStarted {
            turn_id: 1,
            step: 3,
        },
        Event::Usage {
            usage: Usage {
                input_other: 1200,
                output: 340,
                input_cache_read: 50_000,
                input_cache_creation: 0,
            },
            context_tokens: 68_000,
        },
        Event::Status {
            status: AgentStatus::Streaming { step: 3 },
        },
    ]);
    h.advance(12_345);
    assert_snapshot!("status_line", h.screen(80, 8));
}

#[test]
fn a_stale_gating_status_is_refined_by_what_the_ui_shows() {
    // The engine publishes `Gating` when a turn starts and may say nothing more until it ends.
    let mut h = Harness::new();
    start_turn(&mut h, "go");
    h.event(Event::Status {
        status: AgentStatus::Gating,
    });
    h.event(Event::AssistantDelta {
        text: "Writing it.".into(),
    });
    assert!(
        h.screen(80, 10).contains("Working ("),
        "{}",
        h.screen(80, 10)
    );
    h.event(Event::ApprovalRequested(
        kimi_protocol::ops::ApprovalRequest {
            request_id: "r1".into(),
            tool_call_id: "c1".into(),
            tool_name: "Write".into(),
            action: "write file".into(),
            summary: "a.txt".into(),
            detail: None,
            diff: None,
            danger: None,
            policy: "fallback-ask".into(),
            options: Vec::new(),
        },
    ));
    let screen = h.screen(80, 16);
    assert!(screen.contains("Waiting for your approval ("), "{screen}");
    h.key(KeyCode::Char('1'));
    h.event(Event::ToolStarted {
        call: tool_call("c1", "Write", r#"{"path":"a.txt","content":"x"}"#),
    });
    let screen = h.screen(80, 12);
    assert!(screen.contains("Running a tool ("), "{screen}");
}

#[test]
fn prompts_typed_during_a_turn_are_queued_and_shown() {
    let mut h = Harness::new();
    start_turn(&mut h, "first");
    h.actions();
    h.type_str("second");
    h.key(KeyCode::Enter);
    h.type_str("third");
    h.key(KeyCode::Enter);
    let sent = h.actions();
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert!(matches!(&sent[0], UiAction::Op(Op::Submit { input, .. }) if input == &text("second")));
    assert_snapshot!("queued_prompts", h.screen(60, 12));
    h.event(Event::TurnEnded {
        turn_id: 1,
        reason: TurnEndReason::Completed,
        error: None,
    });
    h.event(Event::TurnStarted { turn_id: 2 });
    let screen = h.screen(60, 12);
    assert!(screen.contains("› second"), "{screen}");
    assert!(screen.contains("Queued (1)"), "{screen}");
}

#[test]
fn ctrl_s_steers_the_running_turn() {
    let mut h = Harness::new();
    start_turn(&mut h, "refactor");
    h.actions();
    h.type_str("use the new API");
    h.ctrl('s');
    assert_eq!(
        h.actions(),
        vec![UiAction::Op(Op::Steer {
            input: text("use the new API")
        })]
    );
    // Shown as taken only once the engine says it is journaled.
    let screen = h.screen(60, 10);
    assert!(screen.contains("(steering…)"), "{screen}");
    assert!(!screen.contains("steered into"), "{screen}");
    h.event(Event::SteerAccepted {
        prompt_id: "msg_1".to_owned(),
        joined: true,
    });
    assert_snapshot!("steer", h.screen(60, 10));
}

#[test]
fn esc_and_ctrl_c_interrupt_and_cancel_is_explained() {
    let mut h = Harness::new();
    start_turn(&mut h, "long job");
    h.actions();
    h.key(KeyCode::Esc);
    assert_eq!(
        h.actions(),
        vec![UiAction::Op(Op::Cancel { queued: false })]
    );
    h.ctrl('c');
    assert_eq!(
        h.actions(),
        vec![UiAction::Op(Op::Cancel { queued: false })]
    );
    h.event(Event::ToolStarted {
        call: tool_call("c1", "Bash", r#"{"command":"sleep 100"}"#),
    });
    h.advance(3000);
    h.event(Event::TurnEnded {
        turn_id: 1,
        reason: TurnEndReason::Cancelled,
        error: None,
    });
    assert_snapshot!("interrupted", h.screen(60, 10));
}

#[test]
fn double_ctrl_c_or_ctrl_d_on_empty_input_exits() {
    let mut h = Harness::new();
    h.type_str("draft");
    h.ctrl('c');
    assert_eq!(h.app.input_text(), "", "first Ctrl-C clears the input");
    h.ctrl('c');
    assert!(!h.app.should_exit());
    assert!(h.screen(40, 4).contains("Press Ctrl-C again"));
    h.ctrl('c');
    assert!(h.app.should_exit());
    let mut h = Harness::new();
    h.ctrl('d');
    assert_eq!(h.actions(), vec![UiAction::Exit]);
}

#[test]
fn compaction_notice_while_running_and_after() {
    let mut h = Harness::new();
    h.event(Event::CompactionStarted { manual: true });
    assert_snapshot!("compaction_running", h.screen(50, 6));
    h.event(Event::CompactionCompleted {
        tokens_before: 182_000,
        tokens_after: 24_500,
    });
    assert_snapshot!("compaction_done", h.screen(50, 6));
}

#[test]
fn retries_and_failures_are_plain_words() {
    let mut h = Harness::new();
    start_turn(&mut h, "hi");
    h.event(Event::StepRetrying {
        turn_id: 1,
        failed_attempt: 1,
        next_attempt: 2,
        max_attempts: 5,
        delay_ms: 1500,
        error_name: "RateLimited".into(),
        error_message: "rate limited by the provider".into(),
        status_code: Some(429),
    });
    assert_snapshot!("retry_status_line", h.screen(80, 6));
    // The next retry replaces the line instead of adding a notice.
    h.advance(1_500);
    h.event(Event::StepRetrying {
        turn_id: 1,
        failed_attempt: 2,
        next_attempt: 3,
        max_attempts: 5,
        delay_ms: 3000,
        error_name: "connection_error".into(),
        error_message:
            "could not reach kimi at http://127.0.0.1:1/v1: connection refused. Check the network"
                .into(),
        status_code: None,
    });
    h.advance(1_200);
    assert_snapshot!("retry_status_line_updated", h.screen(80, 6));
    h.event(Event::TurnEnded {
        turn_id: 1,
        reason: TurnEndReason::Failed,
        error: Some("the API key was rejected; run `kimi-rs login`".into()),
    });
    assert_snapshot!("retry_and_failure", h.screen(60, 10));
}

fn busy_scene(h: &mut Harness) {
    start_turn(
        h,
        "summarise the repository layout and fix the failing test in crates/tui",
    );
    h.event(Event::AssistantDelta {
        text: "The workspace has **eight** crates. The failing test is in `render.rs`, where a wide character is measured as one column.".into(),
    });
    h.event(Event::ToolStarted {
        call: tool_call(
            "c1",
            "Bash",
            r#"{"command":"cargo test -p kimi-tui -- --nocapture render::wide_chars"}"#,
        ),
    });
    h.advance(1200);
}

#[test]
fn narrow_terminal_of_40_columns() {
    let mut h = Harness::new();
    busy_scene(&mut h);
    assert_snapshot!("narrow_40", h.screen(40, 20));
}

#[test]
fn wide_terminal_of_120_columns() {
    let mut h = Harness::new();
    busy_scene(&mut h);
    assert_snapshot!("wide_120", h.screen(120, 12));
}

#[test]
fn cjk_and_emoji_wrap_by_display_width() {
    let mut h = Harness::new();
    start_turn(&mut h, "请解释这个函数的作用 🙂");
    h.event(Event::AssistantDelta {
        text: "这个函数读取配置文件，然后返回一个结构体。如果文件不存在，就使用默认值 ✅。".into(),
    });
    assert_snapshot!("cjk_40", h.screen(40, 12));
}

#[test]
fn resumed_transcript_is_rendered_on_start() {
    let mut assistant = Message::assistant(
        text("I listed the files."),
        vec![ToolCall::new(
            "c1",
            "Glob",
            Some(r#"{"pattern":"**/*.rs"}"#.into()),
        )],
    );
    assistant.content.insert(
        0,
        kimi_protocol::message::ContentPart::Think {
            think: "list first".into(),
            encrypted: None,
        },
    );
    let transcript = vec![
        Message::user_text("what files are there?"),
        assistant,
        Message::tool_result("c1", text("src/main.rs\nsrc/lib.rs"), None),
    ];
    let h = Harness::with_transcript(&transcript);
    assert_snapshot!("resumed", h.screen(60, 14));
}

#[test]
fn slash_completion_and_unknown_commands_go_to_the_model() {
    let mut h = Harness::new();
    h.type_str("/co");
    assert_snapshot!("slash_completion", h.screen(60, 8));
    h.key(KeyCode::Tab);
    assert_eq!(h.app.input_text(), "/compact ");
    h.type_str("keep the API notes");
    h.key(KeyCode::Enter);
    assert_eq!(
        h.actions(),
        vec![UiAction::Op(Op::Compact {
            instruction: Some("keep the API notes".into())
        })]
    );
    h.type_str("/frobnicate the widget");
    h.key(KeyCode::Esc);
    h.key(KeyCode::Enter);
    assert_eq!(
        h.actions(),
        vec![UiAction::Op(Op::Submit {
            input: text("/frobnicate the widget"),
            origin: None,
            prompt_id: None
        })]
    );
}

#[test]
fn add_dir_asks_for_this_session_or_remembered_and_no_adds_nothing() {
    let mut h = Harness::new();
    let pick = |h: &mut Harness, downs: usize| {
        h.type_str("/add-dir ../shared");
        h.key(KeyCode::Esc);
        h.key(KeyCode::Enter);
        assert!(
            h.screen(100, 30)
                .contains("Add directory to workspace: ../shared"),
            "{}",
            h.screen(100, 30)
        );
        for _ in 0..downs {
            h.key(KeyCode::Down);
        }
        h.key(KeyCode::Enter);
        h.actions()
    };
    assert_eq!(
        pick(&mut h, 0),
        vec![UiAction::Host(HostRequest::AddDir {
            path: "../shared".into(),
            remember: false
        })]
    );
    assert_eq!(
        pick(&mut h, 1),
        vec![UiAction::Host(HostRequest::AddDir {
            path: "../shared".into(),
            remember: true
        })]
    );
    assert_eq!(pick(&mut h, 2), vec![]);
    assert!(
        h.screen(100, 30)
            .contains("Did not add ../shared as a working directory."),
        "{}",
        h.screen(100, 30)
    );
}

#[test]
fn slash_commands_map_to_ops_and_host_requests() {
    let mut h = Harness::new();
    for cmd in [
        "/yolo",
        "/plan on",
        "/new",
        "/init",
        "/title Refactor",
        "/export-md out.md",
    ] {
        h.type_str(cmd);
        h.key(KeyCode::Esc);
        h.key(KeyCode::Enter);
    }
    let acts = h.actions();
    assert_eq!(
        acts[0],
        UiAction::Op(Op::SetPermissionMode {
            mode: kimi_protocol::ops::PermissionMode::Yolo
        })
    );
    assert_eq!(acts[1], UiAction::Op(Op::SetPlanMode { enabled: true }));
    assert_eq!(acts[2], UiAction::Host(HostRequest::NewSession));
    assert_eq!(
        acts[3],
        UiAction::Op(Op::Submit {
            input: text(kimi_tui::input::INIT_PROMPT),
            origin: None,
            prompt_id: None
        })
    );
    assert_eq!(
        acts[4],
        UiAction::Op(Op::SetTitle {
            title: Some("Refactor".into())
        })
    );
    assert!(
        matches!(&acts[5], UiAction::Host(HostRequest::ExportMarkdown { path: Some(p), .. }) if p == "out.md")
    );
    // Idle-only commands are refused while busy, with a way out.
    start_turn(&mut h, "x");
    h.actions();
    h.type_str("/new");
    h.key(KeyCode::Esc);
    h.key(KeyCode::Enter);
    assert!(h.actions().is_empty());
    assert!(
        h.screen(80, 10)
            .contains("/new is not available while the agent works")
    );
}

#[test]
fn undo_with_a_count_asks_what_to_put_back_and_add_dir_lists_the_directories() {
    let mut h = Harness::new();
    h.type_str("/undo 2");
    h.key(KeyCode::Esc);
    h.key(KeyCode::Enter);
    assert!(h.actions().is_empty());
    assert!(
        h.screen(80, 10).contains("Undo 2 prompts: put back"),
        "{}",
        h.screen(80, 10)
    );
    h.key(KeyCode::Enter);
    assert_eq!(
        h.actions(),
        vec![UiAction::Op(Op::Rewind {
            turns: 2,
            scope: kimi_protocol::checkpoint::RewindScope::Both,
            force: false
        })]
    );
    h.type_str("/add-dir");
    h.key(KeyCode::Esc);
    h.key(KeyCode::Enter);
    assert!(
        h.screen(80, 10)
            .contains("No additional directories configured.")
    );
    h.app
        .handle_host(kimi_tui::HostUpdate::Info(kimi_tui::SessionInfo {
            additional_dirs: vec!["/work/shared".into()],
            ..super::support::info()
        }));
    h.type_str("/add-dir list");
    h.key(KeyCode::Esc);
    h.key(KeyCode::Enter);
    assert!(h.actions().is_empty());
    assert!(
        h.screen(80, 10).contains("/work/shared"),
        "{}",
        h.screen(80, 10)
    );
}

#[test]
fn shift_enter_and_ctrl_j_insert_newlines_and_history_recalls() {
    let mut h = Harness::new();
    h.type_str("line one");
    h.key_mod(KeyCode::Enter, KeyModifiers::SHIFT);
    h.type_str("line two");
    h.ctrl('j');
    h.type_str("three");
    assert_eq!(h.app.input_text(), "line one\nline two\nthree");
    h.key(KeyCode::Enter);
    h.event(Event::TurnStarted { turn_id: 1 });
    h.event(Event::TurnEnded {
        turn_id: 1,
        reason: TurnEndReason::Completed,
        error: None,
    });
    h.key(KeyCode::Up);
    assert_eq!(h.app.input_text(), "line one\nline two\nthree");
}

#[test]
fn shell_mode_sends_a_shell_op() {
    let mut h = Harness::new();
    h.type_str("!git status");
    assert_snapshot!("shell_mode", h.screen(50, 4));
    h.key(KeyCode::Enter);
    assert_eq!(
        h.actions(),
        vec![UiAction::Op(Op::Shell {
            command: "git status".into(),
            background: false
        })]
    );
}

#[test]
fn ctrl_b_moves_the_running_shell_command_to_the_background() {
    let mut h = Harness::new();
    h.type_str("!sleep 100");
    h.key(KeyCode::Enter);
    h.actions();
    h.event(Event::ShellStarted {
        command: "sleep 100".into(),
        task_id: "bash-1".into(),
    });
    assert_snapshot!("shell_running", h.screen(60, 4));
    h.ctrl('b');
    assert_eq!(h.actions(), vec![UiAction::Op(Op::ShellToBackground)]);
    h.event(Event::ShellBackgrounded {
        command: "sleep 100".into(),
        task_id: "bash-1".into(),
    });
    assert!(
        h.screen(80, 8)
            .contains("runs in the background as task bash-1"),
        "{}",
        h.screen(80, 8)
    );
    // Nothing runs any more and shell mode ended with its command: `!` again, then Ctrl-B
    // with a typed command starts it in the background.
    h.type_str("!make");
    h.ctrl('b');
    assert_eq!(
        h.actions(),
        vec![UiAction::Op(Op::Shell {
            command: "make".into(),
            background: true
        })]
    );
}

#[test]
fn the_todo_panel_shows_the_list_above_the_prompt_and_ctrl_t_expands_it() {
    use kimi_protocol::record::{TodoItem, TodoStatus};
    let item = |title: &str, status| TodoItem {
        title: title.into(),
        status,
    };
    let mut h = Harness::new();
    h.event(Event::TodosUpdated {
        todos: vec![
            item("read the failing test", TodoStatus::Done),
            item("fix the parser", TodoStatus::InProgress),
            item("add a regression test", TodoStatus::Pending),
            item("update the changelog", TodoStatus::Pending),
            item("run clippy", TodoStatus::Pending),
            item("run the whole suite", TodoStatus::Pending),
            item("write the summary", TodoStatus::Pending),
        ],
    });
    // Collapsed: the five unfinished items first, the rest counted.
    assert_snapshot!("todo_collapsed", h.screen(50, 10));
    h.ctrl('t');
    assert_snapshot!("todo_expanded", h.screen(50, 12));
    // Updated live; a finished list leaves the screen.
    h.event(Event::TodosUpdated {
        todos: vec![item("fix the parser", TodoStatus::Done)],
    });
    assert!(!h.screen(50, 10).contains("Todo"), "{}", h.screen(50, 10));
}

#[test]
fn no_color_theme_uses_no_colours() {
    use kimi_tui::{App, AppOptions, Theme, ThemeChoice};
    let opts = AppOptions {
        info: super::support::info(),
        theme: Theme::new(ThemeChoice::Dark, true),
        ..AppOptions::default()
    };
    let t0 = std::time::Instant::now();
    let mut app = App::new(opts, &[], t0);
    app.handle_event(Event::TurnStarted { turn_id: 1 }, t0);
    app.handle_event(
        Event::AssistantDelta {
            text: "# Title\n\n```rust\nfn main() {}\n```\n".into(),
        },
        t0,
    );
    let area = ratatui::layout::Rect::new(0, 0, 40, 10);
    let mut buf = ratatui::buffer::Buffer::empty(area);
    app.render(area, &mut buf);
    let coloured = buf
        .content()
        .iter()
        .filter(|c| c.fg != ratatui::style::Color::Reset || c.bg != ratatui::style::Color::Reset)
        .count();
    assert_eq!(coloured, 0);
}

#[test]
fn page_up_scrolls_back_through_the_transcript() {
    let mut h = Harness::new();
    for i in 0..30 {
        h.type_str(&format!("prompt {i}"));
        h.key(KeyCode::Enter);
    }
    assert!(!h.screen(40, 10).contains("prompt 20"));
    h.key(KeyCode::PageUp);
    let screen = h.screen(40, 10);
    assert!(screen.contains("prompt 24"), "{screen}");
    assert!(!screen.contains("prompt 29"), "{screen}");
    h.key(KeyCode::PageDown);
    assert!(h.screen(40, 10).contains("prompt 29"));
}

#[test]
fn esc_cancels_a_compaction_that_runs_outside_a_turn() {
    let mut h = Harness::new();
    h.type_str("/compact");
    h.key(KeyCode::Esc);
    h.key(KeyCode::Enter);
    assert_eq!(
        h.actions(),
        vec![UiAction::Op(Op::Compact { instruction: None })]
    );
    h.event(Event::CompactionStarted { manual: true });
    h.advance(1500);
    assert!(h.screen(60, 6).contains("Compacting context (1.5s)"));
    h.key(KeyCode::Esc);
    assert_eq!(
        h.actions(),
        vec![UiAction::Op(Op::Cancel { queued: false })]
    );
    h.event(Event::CompactionCancelled {
        reason: "cancelled by the user".into(),
    });
    assert!(!h.app.is_busy());
}

#[test]
fn usage_and_status_ask_the_host_for_the_plan_quotas() {
    let mut h = Harness::new();
    for cmd in ["/usage", "/status"] {
        h.type_str(cmd);
        h.key(KeyCode::Esc);
        h.key(KeyCode::Enter);
        assert_eq!(
            h.actions(),
            vec![UiAction::Host(HostRequest::PlanUsage)],
            "{cmd}"
        );
    }
    assert!(h.screen(80, 20).contains("Tokens this session"));
}

#[test]
fn login_shows_the_code_waits_visibly_and_esc_gives_it_up() {
    let mut h = Harness::new();
    h.type_str("/login global");
    h.key(KeyCode::Esc);
    h.key(KeyCode::Enter);
    assert_eq!(
        h.actions(),
        vec![UiAction::Host(HostRequest::Login {
            region: Some("global".into())
        })]
    );
    h.app.handle_host(kimi_tui::HostUpdate::LoginWaiting {
        url: "https://auth.example/device?user_code=AB-12".into(),
        code: "AB-12".into(),
    });
    let screen = h.screen(100, 20);
    assert!(
        screen.contains("https://auth.example/device?user_code=AB-12") && screen.contains("AB-12"),
        "{screen}"
    );
    assert!(
        screen.contains("waiting for the Kimi login… (Esc cancels)"),
        "{screen}"
    );
    // A second /login while one waits is refused; Esc gives the waiting one up.
    h.type_str("/login");
    h.key(KeyCode::Esc);
    h.key(KeyCode::Enter);
    assert!(h.actions().is_empty());
    assert!(h.screen(100, 20).contains("A login is already waiting"));
    h.key(KeyCode::Esc);
    assert_eq!(h.actions(), vec![UiAction::Host(HostRequest::CancelLogin)]);
    h.app.handle_host(kimi_tui::HostUpdate::LoginEnded {
        ok: false,
        message: "Login cancelled.".into(),
    });
    let screen = h.screen(100, 20);
    assert!(screen.contains("Login cancelled."), "{screen}");
    assert!(!screen.contains("waiting for the Kimi login"), "{screen}");
    h.key(KeyCode::Esc);
    assert!(h.actions().is_empty(), "Esc is Esc again");
}

#[test]
fn provider_asks_the_host_with_its_arguments() {
    let mut h = Harness::new();
    h.type_str("/providers remove moonshot");
    h.key(KeyCode::Esc);
    h.key(KeyCode::Enter);
    assert_eq!(
        h.actions(),
        vec![UiAction::Host(HostRequest::Providers {
            args: "remove moonshot".into()
        })]
    );
}
