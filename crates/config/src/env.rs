//! Environment variables that override single keys (surface.md §4.2, "Env override" column).
//! A value that does not parse is an error naming the variable, like a bad key in the file.

use std::str::FromStr;

use crate::{Config, Diagnostic, Severity};

pub(crate) fn truthy(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" | "" => Some(false),
        _ => None,
    }
}

impl Config {
    fn env_error(&mut self, var: &str, message: String) {
        self.diagnostics.push(Diagnostic {
            severity: Severity::Error,
            file: "environment".into(),
            line: None,
            key: var.to_owned(),
            message,
            suggestion: None,
        });
    }

    fn env_number<T: FromStr>(
        &mut self,
        env: &dyn Fn(&str) -> Option<String>,
        var: &str,
    ) -> Option<T> {
        let text = env(var).filter(|v| !v.trim().is_empty())?;
        match text.trim().parse::<T>() {
            Ok(n) => Some(n),
            Err(_) => {
                self.env_error(
                    var,
                    format!("is `{text}`, not a non-negative whole number; fix or unset it"),
                );
                None
            }
        }
    }

    fn env_flag(&mut self, env: &dyn Fn(&str) -> Option<String>, var: &str) -> Option<bool> {
        let text = env(var)?;
        match truthy(&text) {
            Some(on) => Some(on),
            None => {
                self.env_error(
                    var,
                    format!("is `{text}`; use 1/true/yes/on or 0/false/no/off"),
                );
                None
            }
        }
    }

    /// Applies the overrides kimi-rs acts on; the variable wins over the file.
    pub fn apply_env(&mut self, env: &dyn Fn(&str) -> Option<String>) {
        if let Some(n) = self.env_number(env, "KIMI_LOOP_MAX_STEPS_PER_TURN") {
            self.loop_control.max_steps_per_turn = Some(n);
        }
        let attempts = match self.env_number(env, "KIMI_LOOP_MAX_ATTEMPTS_PER_STEP") {
            Some(n) => Some(n),
            None => self.env_number(env, "KIMI_LOOP_MAX_RETRIES_PER_STEP"),
        };
        if let Some(n) = attempts {
            self.loop_control.max_attempts_per_step = Some(n);
        }
        if let Some(n) = self.env_number(env, "KIMI_LOOP_MAX_RETRY_AFTER_S") {
            self.loop_control.max_retry_after_s = Some(n);
        }
        if let Some(n) = self.env_number(env, "KIMI_MCP_STARTUP_TIMEOUT_MS") {
            self.mcp.startup_timeout_ms = Some(n);
        }
        if let Some(n) = self.env_number(env, "KIMI_MCP_TOOL_TIMEOUT_MS") {
            self.mcp.tool_timeout_ms = Some(n);
        }
        if let Some(n) = self.env_number(env, "KIMI_CODE_MODEL_CATALOG_REFRESH_INTERVAL_MS") {
            self.model_catalog.refresh_interval_ms = Some(n);
        }
        // Experimental flags: the master switch over the per-flag variable over
        // `[experimental]` (resolved in `Config::flags`).
        let (overrides, bad) = crate::experimental::env_overrides(env);
        for (var, text) in bad {
            self.env_error(
                &var,
                format!("is `{text}`; use 1/true/yes/on or 0/false/no/off"),
            );
        }
        self.experimental_env = overrides;
        if let Some(on) = self.env_flag(env, "KIMI_CODE_MODEL_CATALOG_REFRESH_ON_START") {
            self.model_catalog.refresh_on_start = Some(on);
        }
        for (var, slot) in [
            ("KIMI_DISABLE_CRON", 0),
            ("KIMI_CRON_NO_JITTER", 1),
            ("KIMI_CRON_NO_STALE", 2),
        ] {
            if let Some(on) = self.env_flag(env, var) {
                let cron = &mut self.cron;
                let field = match slot {
                    0 => &mut cron.disabled,
                    1 => &mut cron.no_jitter,
                    _ => &mut cron.no_stale,
                };
                *field = Some(on);
            }
        }
    }
}
