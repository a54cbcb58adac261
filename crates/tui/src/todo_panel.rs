//! The todo panel above the prompt (surface.md §9.4): the model's current `TodoList`, from the
//! engine's `todo.updated` events (the journaled list, so undo and resume show the right one).
//! Collapsed it shows the unfinished items first, up to [`COLLAPSED_ROWS`]; Ctrl-T expands it.
//! A list whose items are all done, or an empty one, is not shown.

use kimi_protocol::record::{TodoItem, TodoStatus};
use ratatui::text::{Line, Span};

use crate::app::App;
use crate::wrap::truncate;

/// Items shown while the panel is collapsed.
pub const COLLAPSED_ROWS: usize = 5;

impl App {
    /// The engine's list changed.
    pub(crate) fn todos_updated(&mut self, todos: Vec<TodoItem>) {
        self.todos = todos;
    }

    /// Ctrl-T: show every item, or go back to the short view.
    pub(crate) fn toggle_todos(&mut self) {
        self.todos_expanded = !self.todos_expanded;
    }

    /// Whether the panel is drawn.
    pub(crate) fn todos_visible(&self) -> bool {
        self.todos.iter().any(|t| t.status != TodoStatus::Done)
    }

    pub(crate) fn todo_lines(&self, width: usize) -> Vec<Line<'static>> {
        if !self.todos_visible() {
            return Vec::new();
        }
        let t = &self.theme;
        let done = self
            .todos
            .iter()
            .filter(|i| i.status == TodoStatus::Done)
            .count();
        let mut out = vec![Line::styled(
            truncate(&format!("Todo · {done}/{} done", self.todos.len()), width),
            t.text_dim,
        )];
        // Collapsed: the work still ahead comes first (in progress, then pending), in list order.
        let mut shown: Vec<&TodoItem> = self.todos.iter().collect();
        if !self.todos_expanded {
            shown.sort_by_key(|i| match i.status {
                TodoStatus::InProgress => 0,
                TodoStatus::Pending => 1,
                TodoStatus::Done => 2,
            });
            shown.truncate(COLLAPSED_ROWS);
            // Then back into the model's order, so the panel reads like its list.
            shown.sort_by_key(|s| {
                self.todos
                    .iter()
                    .position(|i| std::ptr::eq(i, *s))
                    .unwrap_or(usize::MAX)
            });
        }
        for item in &shown {
            let (mark, style) = match item.status {
                TodoStatus::Done => ("✓ ", t.text_dim),
                TodoStatus::InProgress => ("◐ ", t.accent),
                TodoStatus::Pending => ("○ ", t.text),
            };
            out.push(Line::from(vec![
                Span::styled(format!("  {mark}"), style),
                Span::styled(truncate(&item.title, width.saturating_sub(4)), style),
            ]));
        }
        let hidden = self.todos.len() - shown.len();
        if hidden > 0 {
            out.push(Line::styled(
                format!("  … {hidden} more (ctrl-t shows all)"),
                t.text_dim,
            ));
        }
        out
    }
}
