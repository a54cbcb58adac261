//! TodoList: the agent's plan as a short checklist; omitted `todos` reads it, `[]` clears it.
//! A write returns a `todo.set` record for the engine to journal, so the list survives resume,
//! reaches the compaction footer and goes back with undo.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use kimi_protocol::RecordPayload;
use kimi_protocol::record::TodoSet;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::context::{ProgressSink, ToolContext};
use crate::error::ToolError;
use crate::result::ToolResult;
use crate::tool::{Execution, Resolution, RuleSubject, Tool, ToolDisplay, ToolPlan, parse_args};

pub use kimi_protocol::record::{TodoItem, TodoStatus};

/// The agent's current list (what a read returns); cloning shares it. The engine sets it from
/// the journal on resume and undo.
#[derive(Debug, Clone, Default)]
pub struct TodoStore(Arc<Mutex<Vec<TodoItem>>>);

impl TodoStore {
    pub fn get(&self) -> Vec<TodoItem> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    pub fn set(&self, items: Vec<TodoItem>) {
        *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = items;
    }
}

fn render(items: &[TodoItem]) -> String {
    if items.is_empty() {
        return "The todo list is empty.".to_owned();
    }
    items
        .iter()
        .map(|i| {
            let mark = match i.status {
                TodoStatus::Pending => "[ ]",
                TodoStatus::InProgress => "[~]",
                TodoStatus::Done => "[x]",
            };
            format!("- {mark} {}", i.title)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[derive(Debug, Deserialize)]
struct Params {
    todos: Option<Vec<TodoItem>>,
}

#[derive(Debug, Default)]
pub struct TodoListTool;

#[async_trait]
impl Tool for TodoListTool {
    fn name(&self) -> &str {
        "TodoList"
    }

    fn description(&self) -> String {
        "Track your plan as a todo list. Pass the whole list in `todos` to replace it (statuses pending, in_progress, \
         done); omit `todos` to read the current list; pass [] to clear it."
            .to_owned()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "todos": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "title": {"type": "string", "minLength": 1},
                            "status": {"type": "string", "enum": ["pending", "in_progress", "done"]}
                        },
                        "required": ["title", "status"],
                        "additionalProperties": false
                    }
                }
            },
            "additionalProperties": false
        })
    }

    fn resolve(&self, args: Value, _ctx: &ToolContext) -> Result<Resolution, ToolError> {
        let p: Params = parse_args(args)?;
        if let Some(items) = &p.todos
            && items.iter().any(|i| i.title.trim().is_empty())
        {
            return Err(ToolError::InvalidArgs(
                "every todo needs a non-empty title.".to_owned(),
            ));
        }
        let summary = match &p.todos {
            None => "Read the todo list".to_owned(),
            Some(items) => format!("Update the todo list ({} items)", items.len()),
        };
        Ok(Resolution::Run(Box::new(TodoExecution {
            plan: ToolPlan {
                accesses: None,
                approval_rule: "TodoList".to_owned(),
                subject: RuleSubject::NameOnly,
                display: ToolDisplay {
                    kind: "todo".to_owned(),
                    summary: summary.clone(),
                    detail: None,
                    diff: None,
                },
                description: summary,
                stop_batch_after_this: false,
            },
            todos: p.todos,
        })))
    }
}

struct TodoExecution {
    plan: ToolPlan,
    todos: Option<Vec<TodoItem>>,
}

#[async_trait]
impl Execution for TodoExecution {
    fn plan(&self) -> &ToolPlan {
        &self.plan
    }

    async fn execute(
        self: Box<Self>,
        ctx: &ToolContext,
        _cancel: CancellationToken,
        _progress: ProgressSink,
    ) -> ToolResult {
        match self.todos {
            None => ToolResult::ok(render(&ctx.todos.get())),
            Some(items) => {
                let text = if items.is_empty() {
                    "Todo list cleared.".to_owned()
                } else {
                    format!("Todo list updated:\n{}", render(&items))
                };
                ctx.todos.set(items.clone());
                ToolResult::ok(text)
                    .with_records([RecordPayload::TodoSet(TodoSet { todos: items })])
            }
        }
    }
}
