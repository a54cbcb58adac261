//! The tool-call scheduler as a pure state machine: no tasks are run here, the caller starts
//! whatever `add`/`finish` report as started.
//!
//! A task starts at once unless it conflicts with a running task or with a task still waiting
//! ahead of it, so a later call can never overtake an earlier one it conflicts with.

use crate::access::{Access, conflict};

/// A task's identity as the caller sees it (for example the tool-call index).
pub type TaskKey = usize;

#[derive(Debug)]
struct Entry {
    key: TaskKey,
    accesses: Vec<Access>,
}

/// Running and waiting tasks with their accesses.
#[derive(Debug, Default)]
pub struct Scheduler {
    running: Vec<Entry>,
    waiting: Vec<Entry>,
}

impl Scheduler {
    pub fn new() -> Self {
        Self::default()
    }

    /// Queue a task; returns the keys that started because of it (the task itself, or none).
    /// `None` accesses means the tool declared nothing and is treated as `[all]`.
    pub fn add(&mut self, key: TaskKey, accesses: Option<Vec<Access>>) -> Vec<TaskKey> {
        let accesses = accesses.unwrap_or_else(|| vec![Access::All]);
        let blocked = self
            .running
            .iter()
            .chain(self.waiting.iter())
            .any(|other| conflict(&accesses, &other.accesses));
        let entry = Entry { key, accesses };
        if blocked {
            self.waiting.push(entry);
            Vec::new()
        } else {
            self.running.push(entry);
            vec![key]
        }
    }

    /// A running task resolved or failed: release its accesses and return the waiting tasks that
    /// start now, in queue order. Unknown keys change nothing.
    pub fn finish(&mut self, key: TaskKey) -> Vec<TaskKey> {
        let Some(pos) = self.running.iter().position(|e| e.key == key) else {
            return Vec::new();
        };
        self.running.remove(pos);
        let mut started = Vec::new();
        let mut still_waiting: Vec<Entry> = Vec::new();
        for entry in std::mem::take(&mut self.waiting) {
            let blocked = self
                .running
                .iter()
                .chain(still_waiting.iter())
                .any(|other| conflict(&entry.accesses, &other.accesses));
            if blocked {
                still_waiting.push(entry);
            } else {
                started.push(entry.key);
                self.running.push(entry);
            }
        }
        self.waiting = still_waiting;
        started
    }

    pub fn running(&self) -> impl Iterator<Item = TaskKey> + '_ {
        self.running.iter().map(|e| e.key)
    }

    pub fn waiting(&self) -> impl Iterator<Item = TaskKey> + '_ {
        self.waiting.iter().map(|e| e.key)
    }

    pub fn is_idle(&self) -> bool {
        self.running.is_empty() && self.waiting.is_empty()
    }
}
