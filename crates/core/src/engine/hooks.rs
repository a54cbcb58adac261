//! User hooks at the engine's points: prompt submission, before and after each tool, the end
//! of a turn, interrupts, compaction and the session's start and end. Blocking is honoured for
//! UserPromptSubmit, PreToolUse and Stop; every other event only observes. A hook that hangs is
//! killed at its timeout and the turn goes on (the runner fails open).

use std::sync::Arc;

use crate::hooks::{CommonPayload, EventResult, HookEventData, HookRunner, HookSet};

pub struct EngineHooks {
    pub set: HookSet,
    pub runner: HookRunner,
    pub common: CommonPayload,
}

impl EngineHooks {
    /// Run the hooks of `data`'s event (none configured = nothing spawned).
    pub async fn fire(&self, data: HookEventData) -> EventResult {
        if !self.set.has_event(data.event()) {
            return EventResult::default();
        }
        self.runner.run_event(&self.set, &data, &self.common).await
    }

    /// Observe-only events: run in the background so the turn does not wait on them.
    pub fn fire_and_forget(self: &Arc<Self>, data: HookEventData) {
        if !self.set.has_event(data.event()) {
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
    format!("<hook_result hook_event=\"{event}\"{blocked}>\n{}\n</hook_result>", text.trim())
}
