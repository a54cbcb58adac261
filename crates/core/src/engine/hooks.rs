//! User hooks at the engine's points: prompt submission and queueing, turn start, permission
//! requests and answers, before and after each tool, the end of a turn, interrupts, compaction
//! and the session's start and end. Blocking is honoured for UserPromptSubmit, PreToolUse and
//! Stop; every other event only observes. A hook that hangs is killed at its timeout and the
//! turn goes on (the runner fails open). Hooks are re-read (through kimi-config, the one
//! config parser) when config.toml changes.

use std::sync::{Arc, Mutex, MutexGuard};

use tracing::Instrument;

use crate::hooks::{CommonPayload, EventResult, HookEventData, HookRunner, HookSet, load_hooks};

pub struct EngineHooks {
    set: Mutex<HookSet>,
    pub runner: HookRunner,
    pub common: CommonPayload,
    /// The config the hooks came from, watched for changes; `None` = not watched.
    config: Option<Mutex<kimi_config::Config>>,
}

impl EngineHooks {
    pub fn new(
        set: HookSet,
        runner: HookRunner,
        common: CommonPayload,
        config: Option<kimi_config::Config>,
    ) -> Self {
        EngineHooks {
            set: Mutex::new(set),
            runner,
            common,
            config: config.map(Mutex::new),
        }
    }

    fn set(&self) -> MutexGuard<'_, HookSet> {
        self.set
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Re-read the hooks when config.toml changed since the last look; returns load problems
    /// (the previous hooks stay in force when the file has errors).
    pub fn reload_if_changed(&self) -> Vec<String> {
        let Some(config) = &self.config else {
            return Vec::new();
        };
        let fresh = {
            let mut config = config
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            match config.reload_if_changed() {
                Some(fresh) => fresh,
                None => return Vec::new(),
            }
        };
        if fresh.check().is_err() {
            return fresh
                .errors()
                .map(|e| format!("{e}; keeping the previous hooks"))
                .collect();
        }
        let loaded = load_hooks(&fresh.hooks);
        self.set().reload(loaded.hooks);
        loaded
            .errors
            .iter()
            .map(|e| format!("{}: {e}", fresh.path.display()))
            .collect()
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
        // In the caller's span: the hook's log lines belong to its session.
        tokio::spawn(
            async move {
                let result = hooks.fire(data).await;
                for warning in result.warnings {
                    tracing::warn!("{warning}");
                }
            }
            .in_current_span(),
        );
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
