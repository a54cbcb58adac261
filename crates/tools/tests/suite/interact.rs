//! TodoList, AskUserQuestion, and cancellation/progress of long-running tools.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use kimi_protocol::RecordPayload;
use kimi_protocol::record::TodoSet;
use kimi_tools::builtin::ask::{Answer, Question, QuestionHost, QuestionOutcome};
use kimi_tools::builtin::{AskUserQuestionTool, BashTool, TodoListTool, WaitForTool};
use kimi_tools::tool::Resolution;
use kimi_tools::{ProgressSink, RuleSubject, Tool, ToolProgress};
use pretty_assertions::assert_eq;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::common::{Workspace, text};

#[tokio::test]
async fn todo_list_read_update_clear() {
    let ws = Workspace::new();
    let read = ws.run(&TodoListTool, json!({})).await;
    assert_eq!(text(&read), "The todo list is empty.");
    assert!(read.records.is_empty(), "a read journals nothing");
    let r = ws
        .run(&TodoListTool, json!({"todos": [{"title": "a", "status": "done"}, {"title": "b", "status": "in_progress"}, {"title": "c", "status": "pending"}]}))
        .await;
    assert_eq!(text(&r), "Todo list updated:\n- [x] a\n- [~] b\n- [ ] c");
    assert_eq!(ws.ctx.todos.get().len(), 3);
    // A write hands the engine the whole list to journal.
    assert_eq!(
        r.records,
        vec![RecordPayload::TodoSet(TodoSet {
            todos: ws.ctx.todos.get()
        })]
    );
    assert_eq!(
        text(&ws.run(&TodoListTool, json!({})).await),
        "- [x] a\n- [~] b\n- [ ] c"
    );
    let cleared = ws.run(&TodoListTool, json!({"todos": []})).await;
    assert_eq!(text(&cleared), "Todo list cleared.");
    assert_eq!(
        cleared.records,
        vec![RecordPayload::TodoSet(TodoSet::default())]
    );
    let r = ws
        .run(
            &TodoListTool,
            json!({"todos": [{"title": " ", "status": "done"}]}),
        )
        .await;
    assert!(r.is_error);
}

struct Scripted(QuestionOutcome);

#[async_trait]
impl QuestionHost for Scripted {
    async fn ask(&self, _questions: Vec<Question>, _cancel: CancellationToken) -> QuestionOutcome {
        self.0.clone()
    }
}

fn question(q: &str, labels: &[&str]) -> serde_json::Value {
    json!({"question": q, "options": labels.iter().map(|l| json!({"label": l})).collect::<Vec<_>>()})
}

#[tokio::test]
async fn ask_user_question_validation_and_outcomes() {
    let mut ws = Workspace::new();
    let ok_args = json!({"questions": [question("Which DB?", &["Postgres", "SQLite"])]});
    let r = ws.run(&AskUserQuestionTool, ok_args.clone()).await;
    assert!(r.is_error && text(&r).starts_with("This client cannot ask the user questions."));
    for (args, needle) in [
        (json!({"questions": []}), "1 to 4 questions"),
        (
            json!({"questions": [question("A?", &["x", "y"]), question("A?", &["x", "y"])]}),
            "question texts must be unique",
        ),
        (
            json!({"questions": [question("A?", &["x"])]}),
            "2 to 4 options",
        ),
        (
            json!({"questions": [question("A?", &["x", "x"])]}),
            "option labels must be unique",
        ),
        (
            json!({"questions": [question("A?", &["one two three four five six", "y"])]}),
            "1 to 5 words",
        ),
        (
            json!({"questions": [{"question": "A?", "header": "thirteen char", "options": [{"label": "x"}, {"label": "y"}]}]}),
            "at most 12",
        ),
    ] {
        let r = ws.run(&AskUserQuestionTool, args.clone()).await;
        assert!(
            r.is_error && text(&r).contains(needle),
            "{args}: {}",
            text(&r)
        );
    }
    ws.ctx.questions = Some(Arc::new(Scripted(QuestionOutcome::Answered(vec![
        Answer {
            question: "Which DB?".into(),
            selected: vec!["SQLite".into()],
            other: Some("with WAL".into()),
        },
    ]))));
    let r = ws.run(&AskUserQuestionTool, ok_args.clone()).await;
    assert_eq!(
        text(&r),
        "The user answered:\nQ: Which DB?\nA: SQLite; Other: with WAL"
    );
    ws.ctx.questions = Some(Arc::new(Scripted(QuestionOutcome::Dismissed)));
    assert!(text(&ws.run(&AskUserQuestionTool, ok_args).await).starts_with("The user dismissed"));
}

#[tokio::test]
async fn bash_streams_progress_and_stops_on_cancel() {
    let ws = Workspace::new();
    let Resolution::Run(exec) = BashTool
        .resolve(json!({"command": "echo first; sleep 30"}), &ws.ctx)
        .unwrap()
    else {
        panic!("runnable expected")
    };
    assert_eq!(exec.plan().accesses, None);
    assert_eq!(
        exec.plan().subject,
        RuleSubject::Text("echo first; sleep 30".to_owned())
    );
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let ctx = ws.ctx.clone();
    let c2 = cancel.clone();
    let run = tokio::spawn(async move { exec.execute(&ctx, c2, ProgressSink::new(tx)).await });
    // The first output arrives as progress while the command still runs; then the user cancels.
    let first = tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first, ToolProgress::Stdout("first\n".to_owned()));
    cancel.cancel();
    let r = tokio::time::timeout(Duration::from_secs(15), run)
        .await
        .unwrap()
        .unwrap();
    assert!(r.is_error);
    assert_eq!(text(&r), "first\nCommand was interrupted by the user.");
}

#[tokio::test]
async fn wait_for_is_interruptible() {
    let ws = Workspace::new();
    let r = ws
        .run(
            &BashTool,
            json!({"command": "sleep 30", "run_in_background": true, "description": "slow"}),
        )
        .await;
    assert!(!r.is_error);
    let Resolution::Run(exec) = WaitForTool
        .resolve(json!({"timeout": 600}), &ws.ctx)
        .unwrap()
    else {
        panic!("runnable expected")
    };
    let cancel = CancellationToken::new();
    cancel.cancel();
    let r = exec.execute(&ws.ctx, cancel, ProgressSink::none()).await;
    assert_eq!(
        text(&r),
        "WaitFor was interrupted by a new message; the tasks are still running."
    );
    for t in ws.ctx.tasks.list() {
        ws.ctx.tasks.stop(&t.id, "test over").await.unwrap();
    }
}

struct FakeSearch(
    Result<
        Vec<kimi_tools::builtin::web_search::SearchHit>,
        kimi_tools::builtin::web_search::SearchError,
    >,
);

#[async_trait]
impl kimi_tools::builtin::web_search::SearchBackend for FakeSearch {
    async fn search(
        &self,
        _query: &str,
        _cancel: CancellationToken,
    ) -> Result<
        Vec<kimi_tools::builtin::web_search::SearchHit>,
        kimi_tools::builtin::web_search::SearchError,
    > {
        self.0.clone()
    }
}

#[tokio::test]
async fn web_search_renders_hits_and_classifies_errors() {
    use kimi_tools::builtin::WebSearchTool;
    use kimi_tools::builtin::web_search::{SearchError, SearchHit};
    let ws = Workspace::new();
    let hit = SearchHit {
        title: "Rust".into(),
        site: "rust-lang.org".into(),
        date: Some("2026-01-01".into()),
        url: "https://rust-lang.org".into(),
        snippet: "A language".into(),
    };
    let tool = WebSearchTool::new(Arc::new(FakeSearch(Ok(vec![
        hit.clone(),
        SearchHit { date: None, ..hit },
    ]))));
    let r = ws.run(&tool, json!({"query": "rust"})).await;
    assert_eq!(
        text(&r),
        "Title: Rust\nSite: rust-lang.org\nDate: 2026-01-01\nURL: https://rust-lang.org\nSnippet: A language\n---\n\
         Title: Rust\nSite: rust-lang.org\nURL: https://rust-lang.org\nSnippet: A language\n---\n\
         When you use these results, cite them as Markdown links [title](URL)."
    );
    let tool = WebSearchTool::new(Arc::new(FakeSearch(Err(SearchError::Authentication(
        "401".into(),
    )))));
    let r = ws.run(&tool, json!({"query": "rust"})).await;
    assert!(r.is_error && text(&r).contains("rejected the credentials (401)"));
}
