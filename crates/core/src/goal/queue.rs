//! The queue of upcoming goals (`/goal next`, `/goal next manage`), stored per workspace in
//! `$KIMI_CODE_HOME/sessions/<workdirKey>/upcoming-goals.json`, so every session of the
//! directory shares it. The next goal starts only after the current one completes.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use kimi_protocol::host::QueuedGoal;

#[derive(Debug, Default, Serialize, Deserialize)]
struct QueueFile {
    #[serde(default)]
    goals: Vec<QueuedGoal>,
}

/// Why the queue could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    #[error("cannot read the goal queue {path}: {source}; fix or delete the file")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the goal queue {path} is not valid JSON ({source}); fix or delete the file")]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("cannot write the goal queue {path}: {source}; check the directory's permissions")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no queued goal {0}; it was removed meanwhile")]
    Missing(String),
}

/// The goal queue of one workspace.
#[derive(Debug, Clone)]
pub struct GoalQueue {
    path: PathBuf,
}

impl GoalQueue {
    /// The queue of the working directory `cwd` under kimi-rs's home `home`.
    pub fn for_workspace(home: &Path, cwd: &Path) -> Self {
        let key = kimi_store::workdir_key(cwd);
        GoalQueue {
            path: kimi_store::Home::new(home)
                .sessions_dir()
                .join(key)
                .join("upcoming-goals.json"),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The queued goals, first to start first.
    pub fn list(&self) -> Result<Vec<QueuedGoal>, QueueError> {
        let bytes = match std::fs::read(&self.path) {
            Ok(bytes) => bytes,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(QueueError::Read {
                    path: self.path.clone(),
                    source,
                });
            }
        };
        let file: QueueFile =
            serde_json::from_slice(&bytes).map_err(|source| QueueError::Parse {
                path: self.path.clone(),
                source,
            })?;
        Ok(file.goals)
    }

    fn save(&self, goals: Vec<QueuedGoal>) -> Result<(), QueueError> {
        let write = |source| QueueError::Write {
            path: self.path.clone(),
            source,
        };
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(write)?;
        }
        let body = serde_json::to_vec_pretty(&QueueFile { goals })
            .map_err(|e| write(std::io::Error::other(e)))?;
        // Write aside and rename, so a crash never leaves half a queue.
        let tmp = self.path.with_extension("json.tmp");
        std::fs::write(&tmp, body).map_err(write)?;
        std::fs::rename(&tmp, &self.path).map_err(write)
    }

    /// Queue `objective` last; returns the new entry.
    pub fn push(&self, objective: &str) -> Result<QueuedGoal, QueueError> {
        let mut goals = self.list()?;
        let entry = QueuedGoal {
            id: uuid::Uuid::new_v4().to_string(),
            objective: objective.trim().to_owned(),
            created_at: crate::engine::log::now_ms(),
        };
        goals.push(entry.clone());
        self.save(goals)?;
        Ok(entry)
    }

    /// Take the first queued goal off the queue.
    pub fn pop(&self) -> Result<Option<QueuedGoal>, QueueError> {
        let mut goals = self.list()?;
        if goals.is_empty() {
            return Ok(None);
        }
        let first = goals.remove(0);
        self.save(goals)?;
        Ok(Some(first))
    }

    pub fn remove(&self, id: &str) -> Result<(), QueueError> {
        let mut goals = self.list()?;
        let before = goals.len();
        goals.retain(|g| g.id != id);
        if goals.len() == before {
            return Err(QueueError::Missing(id.to_owned()));
        }
        self.save(goals)
    }

    pub fn edit(&self, id: &str, objective: &str) -> Result<(), QueueError> {
        let mut goals = self.list()?;
        let goal = goals
            .iter_mut()
            .find(|g| g.id == id)
            .ok_or_else(|| QueueError::Missing(id.to_owned()))?;
        objective.trim().clone_into(&mut goal.objective);
        self.save(goals)
    }

    /// Move a goal one place earlier (`up`) or later.
    pub fn shift(&self, id: &str, up: bool) -> Result<(), QueueError> {
        let mut goals = self.list()?;
        let at = goals
            .iter()
            .position(|g| g.id == id)
            .ok_or_else(|| QueueError::Missing(id.to_owned()))?;
        let to = if up {
            at.checked_sub(1)
        } else {
            Some(at + 1).filter(|t| *t < goals.len())
        };
        if let Some(to) = to {
            goals.swap(at, to);
            self.save(goals)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_queue_is_shared_by_the_workspace_and_keeps_its_order() {
        let home = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let queue = GoalQueue::for_workspace(home.path(), cwd.path());
        assert!(queue.list().unwrap().is_empty());
        let a = queue.push("first").unwrap();
        let b = queue.push("second").unwrap();
        queue.shift(&b.id, true).unwrap();
        let again = GoalQueue::for_workspace(home.path(), cwd.path());
        let order: Vec<String> = again
            .list()
            .unwrap()
            .into_iter()
            .map(|g| g.objective)
            .collect();
        assert_eq!(order, ["second", "first"]);
        again.edit(&a.id, "first, edited").unwrap();
        assert_eq!(again.pop().unwrap().unwrap().objective, "second");
        again.remove(&a.id).unwrap();
        assert!(again.list().unwrap().is_empty());
        assert!(matches!(again.remove("x"), Err(QueueError::Missing(_))));
    }
}
