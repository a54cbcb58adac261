//! User hooks at the engine's points: prompt submission and queueing, turn start, permission
//! requests and answers, before and after each tool, the end of a turn, interrupts, compaction
//! and the session's start and end. Blocking is honoured for UserPromptSubmit, PreToolUse and
//! Stop; every other event only observes. A hook that hangs is killed at its timeout and the
//! turn goes on (the runner fails open). Hooks are re-read (through kimi-config, the one
//! config parser) when config.toml changes; hooks contributed by plugins stay in force across
//! those reloads. SessionHeartbeat runs on a timer armed only when such a hook exists.

use std::sync::{Arc, Mutex, MutexGuard};

use tracing::Instrument;

use crate::hooks::{
    CommonPayload, EventResult, HookDef, HookEvent, HookEventData, HookRunner, HookSet, load_hooks,
};

/// How often SessionHeartbeat fires (the reference's 60 s).
pub const HEARTBEAT_INTERVAL: std::time::Duration = std::time::Duration::from_secs(60);

pub struct EngineHooks {
    set: Mutex<HookSet>,
    /// Hooks that do not come from config.toml (plugins'): kept when the config is re-read.
    extra: Vec<HookDef>,
    /// The running SessionHeartbeat timer, stopped when the session ends.
    heartbeat: Mutex<Option<tokio::task::AbortHandle>>,
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
            extra: Vec::new(),
            heartbeat: Mutex::new(None),
            runner,
            common,
            config: config.map(Mutex::new),
        }
    }

    /// Add hooks from outside config.toml (plugins); they survive config reloads.
    pub fn with_extra(mut self, extra: Vec<HookDef>) -> Self {
        let mut hooks = self.set().hooks().to_vec();
        hooks.extend(extra.iter().cloned());
        self.set = Mutex::new(HookSet::new(hooks));
        self.extra = extra;
        self
    }

    /// Whether any hook of `event` is configured now.
    pub fn has_event(&self, event: HookEvent) -> bool {
        self.set().has_event(event)
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
        let mut hooks = loaded.hooks.hooks().to_vec();
        hooks.extend(self.extra.iter().cloned());
        self.set().reload(HookSet::new(hooks));
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

impl EngineHooks {
    /// Fire SessionHeartbeat every `interval` (with the time since this call) until
    /// [`EngineHooks::stop_heartbeat`]; does nothing when no SessionHeartbeat hook exists.
    pub fn start_heartbeat(self: &Arc<Self>, interval: std::time::Duration) {
        if !self.has_event(HookEvent::SessionHeartbeat) {
            return;
        }
        let hooks = self.clone();
        let started = std::time::Instant::now();
        let task = tokio::spawn(
            async move {
                let mut ticks =
                    tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
                ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    ticks.tick().await;
                    let uptime_ms =
                        u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                    // Awaited, so a slow hook never overlaps the next beat.
                    let result = hooks
                        .fire(HookEventData::SessionHeartbeat { uptime_ms })
                        .await;
                    for warning in result.warnings {
                        tracing::warn!("{warning}");
                    }
                }
            }
            .in_current_span(),
        );
        let previous = self
            .heartbeat
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .replace(task.abort_handle());
        if let Some(previous) = previous {
            previous.abort();
        }
    }

    /// Whether the SessionHeartbeat timer is armed.
    pub fn heartbeat_running(&self) -> bool {
        self.heartbeat
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_ref()
            .is_some_and(|timer| !timer.is_finished())
    }

    /// Fire TaskStarted for every task `tasks` starts in the background.
    pub fn watch_tasks(self: &Arc<Self>, tasks: &kimi_tools::tasks::TaskManager) {
        let hooks = self.clone();
        tasks.set_start_listener(Arc::new(move |info| {
            hooks.fire_and_forget(task_started(info));
        }));
    }

    /// Stop the SessionHeartbeat timer (the session is ending).
    pub fn stop_heartbeat(&self) {
        let timer = self
            .heartbeat
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(timer) = timer {
            timer.abort();
        }
    }
}

/// The TaskStarted occurrence of a task (shell tasks are the reference's `process` kind).
pub fn task_started(info: &kimi_tools::tasks::TaskInfo) -> HookEventData {
    HookEventData::TaskStarted {
        task_id: info.id.clone(),
        kind: match info.kind.as_str() {
            "bash" => "process".to_owned(),
            other => other.to_owned(),
        },
        description: info.description.clone(),
        status: info.status.as_str().to_owned(),
        detached: !info.foreground,
        started_at: serde_json::Value::from(info.started_at_ms),
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
