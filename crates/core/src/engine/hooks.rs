//! User hooks at the engine's points: prompt submission and queueing, turn start, permission
//! requests and answers, before and after each tool, the end of a turn, interrupts, compaction
//! and the session's start and end. Blocking is honoured for UserPromptSubmit, PreToolUse and
//! Stop; every other event only observes. A hook that hangs is killed at its timeout and the
//! turn goes on (the runner fails open). Hooks are re-read when config.toml changes.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use crate::hooks::{
    CommonPayload, EventResult, HookEventData, HookRunner, HookSet, load_hooks_from_str,
};

pub struct EngineHooks {
    set: Mutex<HookSet>,
    pub runner: HookRunner,
    pub common: CommonPayload,
    /// The config file the hooks came from, watched for changes.
    config: Option<PathBuf>,
    stamp: Mutex<Option<SystemTime>>,
}

fn modified(path: &std::path::Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

impl EngineHooks {
    pub fn new(
        set: HookSet,
        runner: HookRunner,
        common: CommonPayload,
        config: Option<PathBuf>,
    ) -> Self {
        let stamp = config.as_deref().and_then(modified);
        EngineHooks {
            set: Mutex::new(set),
            runner,
            common,
            config,
            stamp: Mutex::new(stamp),
        }
    }

    fn set(&self) -> MutexGuard<'_, HookSet> {
        self.set
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Re-read the hooks when config.toml changed since the last look; returns load problems
    /// (the previous hooks stay in force when the file does not parse).
    pub fn reload_if_changed(&self) -> Vec<String> {
        let Some(path) = &self.config else {
            return Vec::new();
        };
        let now = modified(path);
        {
            let mut stamp = self
                .stamp
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if *stamp == now {
                return Vec::new();
            }
            *stamp = now;
        }
        let text = std::fs::read_to_string(path).unwrap_or_default();
        match load_hooks_from_str(&text) {
            Ok(loaded) => {
                self.set().reload(loaded.hooks);
                loaded
                    .errors
                    .iter()
                    .map(|e| format!("{}: {e}", path.display()))
                    .collect()
            }
            Err(err) => vec![format!(
                "{}: {err}; keeping the previous hooks",
                path.display()
            )],
        }
    }

    /// Run the hooks of `data`'s event (none configured = nothing spawned).
    pub async fn fire(&self, data: HookEventData) -> EventResult {
        let set = {
            let set = self.set();
            if !set.has_event(data.event()) {
                return EventResult::default();
            }
            set.clone()
        };
        self.runner.run_event(&set, &data, &self.common).await
    }

    /// Observe-only events: run in the background so the turn does not wait on them.
    pub fn fire_and_forget(self: &Arc<Self>, data: HookEventData) {
        if !self.set().has_event(data.event()) {
            return;
        }
        let hooks = self.clone();
        tokio::spawn(async move {
            let result = hooks.fire(data).await;
            for warning in result.warnings {
                tracing::warn!("{warning}");
            }
        });
    }
}

/// The `<hook_result>` block a hook's text is wrapped in when it enters the conversation.
pub fn hook_result_text(event: &str, text: &str, blocked: bool) -> String {
    let blocked = if blocked { " blocked=\"true\"" } else { "" };
    format!(
        "<hook_result hook_event=\"{event}\"{blocked}>\n{}\n</hook_result>",
        text.trim()
    )
}
