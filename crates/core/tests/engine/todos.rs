//! The todo list end to end: `TodoList` writes are journaled (`todo.set`), a resumed session
//! reads back what the last session wrote, undo takes the list back to the one of the turn it
//! returns to (also across a later resume), and a compaction carries the open items into its
//! Context Recovery footer and so into the next request.

use kimi_core::session::Resume;
use kimi_llm::ProviderType;
use kimi_llm::scripted::ScriptTurn;
use kimi_protocol::ops::{Event, Op, TurnEndReason};
use kimi_protocol::record::{TodoItem, TodoStatus};
use pretty_assertions::assert_eq;
use serde_json::Value;

use crate::harness::{Dirs, Options, Session, record_kind, tool_results};

fn todo_call(id: &str, todos: &str) -> ScriptTurn {
    ScriptTurn::tool_calls(&[(id, "TodoList", &format!(r#"{{"todos":{todos}}}"#))])
}

fn read_call(id: &str) -> ScriptTurn {
    ScriptTurn::tool_calls(&[(id, "TodoList", "{}")])
}

fn item(title: &str, status: TodoStatus) -> TodoItem {
    TodoItem {
        title: title.to_owned(),
        status,
    }
}

/// What the engine holds: the journaled list and the one the tool reads.
fn todos(s: &Session) -> (Vec<TodoItem>, Vec<TodoItem>) {
    let rt = s.opened.agent.handle.runtime();
    let journaled = rt.log().todos().to_vec();
    (journaled, rt.config.tool_ctx.todos.get())
}

/// The text of the last tool result the model was sent.
fn last_result(s: &Session) -> String {
    let requests = s.requests();
    tool_results(&requests.last().expect("a request").body)
        .last()
        .expect("a tool result")
        .text
        .clone()
}

async fn resume(dirs: &Dirs, id: &str, turns: Vec<ScriptTurn>) -> Session {
    let mut options = Options::new(ProviderType::OpenAi);
    options.resume = Resume::Id(id.to_owned());
    Session::start_with(dirs, options, turns).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn todos_survive_resume_reach_the_compaction_footer_and_are_rolled_back_by_undo() {
    let dirs = Dirs::new();
    let first = [
        item("read the parser", TodoStatus::InProgress),
        item("fix the off-by-one", TodoStatus::Pending),
    ];
    let second = [
        item("read the parser", TodoStatus::Done),
        item("fix the off-by-one", TodoStatus::InProgress),
        item("add a regression test", TodoStatus::Pending),
    ];
    let mut s = Session::start(
        &dirs,
        ProviderType::OpenAi,
        vec![
            todo_call(
                "call_t1",
                r#"[{"title":"read the parser","status":"in_progress"},{"title":"fix the off-by-one","status":"pending"}]"#,
            ),
            ScriptTurn::text("Planned."),
            todo_call(
                "call_t2",
                r#"[{"title":"read the parser","status":"done"},{"title":"fix the off-by-one","status":"in_progress"},{"title":"add a regression test","status":"pending"}]"#,
            ),
            ScriptTurn::text("Progress."),
        ],
    )
    .await;
    let (reason, error) = s.run("Plan the fix.").await;
    assert_eq!(reason, TurnEndReason::Completed, "{error:?}");
    assert_eq!(todos(&s), (first.to_vec(), first.to_vec()));
    // Front ends (the todo panel) are told each list as it is journaled.
    let told = |s: &Session| -> Vec<Vec<TodoItem>> {
        s.events
            .iter()
            .filter_map(|e| match e {
                Event::TodosUpdated { todos } => Some(todos.clone()),
                _ => None,
            })
            .collect()
    };
    assert_eq!(told(&s), vec![first.to_vec()]);
    let (reason, error) = s.run("Go on.").await;
    assert_eq!(reason, TurnEndReason::Completed, "{error:?}");
    assert_eq!(todos(&s).0, second.to_vec());
    let id = s.session_id();
    s.close().await;
    // One `todo.set` per write, each just before its call's result.
    let journal = s.journal();
    let kinds: Vec<String> = journal.iter().map(record_kind).collect();
    let sets: Vec<&Value> = journal.iter().filter(|r| r["type"] == "todo.set").collect();
    assert_eq!(sets.len(), 2, "{kinds:?}");
    assert_eq!(
        sets[0]["todos"],
        serde_json::json!([{"title": "read the parser", "status": "in_progress"}, {"title": "fix the off-by-one", "status": "pending"}])
    );
    let set_at = kinds.iter().position(|k| k == "todo.set").unwrap();
    assert_eq!(kinds[set_at + 1], "loop:tool.result");
    drop(s);

    // Resumed: the tool reads what the last session wrote.
    let mut s = resume(
        &dirs,
        &id,
        vec![read_call("call_read"), ScriptTurn::text("Still on it.")],
    )
    .await;
    assert_eq!(s.opened.restored.todos, second.to_vec());
    assert_eq!(todos(&s), (second.to_vec(), second.to_vec()));
    let resumed = s
        .wait_for(|e| matches!(e, Event::TodosUpdated { .. }))
        .await;
    assert_eq!(
        resumed,
        Event::TodosUpdated {
            todos: second.to_vec()
        }
    );
    let (reason, error) = s.run("Where are we?").await;
    assert_eq!(reason, TurnEndReason::Completed, "{error:?}");
    let read = last_result(&s);
    assert!(
        read.contains("[~] fix the off-by-one") && read.contains("[ ] add a regression test"),
        "{read}"
    );

    // Undo the read and the second write: the list is the first write's again.
    s.send(Op::Undo { count: 2 });
    s.wait_for(|e| matches!(e, Event::ContextUndone { .. }))
        .await;
    assert_eq!(todos(&s), (first.to_vec(), first.to_vec()));
    assert_eq!(told(&s).last(), Some(&first.to_vec()));

    // A compaction now carries the open items of that list, verbatim, into the footer.
    s.server.push(ScriptTurn::text(
        "SUMMARY: the user asked to plan a parser fix.",
    ));
    s.send(Op::Compact { instruction: None });
    s.wait_for(|e| matches!(e, Event::CompactionCompleted { .. }))
        .await;
    s.server.push(ScriptTurn::text("Continuing."));
    let (reason, error) = s.run("Continue.").await;
    assert_eq!(reason, TurnEndReason::Completed, "{error:?}");
    let requests = s.requests();
    let body = &requests.last().unwrap().raw_body;
    assert!(body.contains("SUMMARY: the user asked"), "{body}");
    assert!(body.contains("Open todo items (verbatim)"), "{body}");
    assert!(body.contains("[in_progress] read the parser"), "{body}");
    assert!(body.contains("[pending] fix the off-by-one"), "{body}");
    assert!(!body.contains("add a regression test"), "{body}");
    s.close().await;
    drop(s);

    // The rollback is durable: the next resume starts from the first write's list too.
    let s = resume(&dirs, &id, vec![]).await;
    assert_eq!(s.opened.restored.todos, first.to_vec());
    assert_eq!(todos(&s).1, first.to_vec());
}
