//! Which keys are known where, for did-you-mean: the field names serde derives for each
//! section struct (read through a probe deserializer, so they never drift from the structs),
//! and the paths kimi-rs knows but does not act on.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Visitor};

use crate::providers::{ModelEntry, ModelOverrides, ProviderEntry};
use crate::sections::*;

/// Top-level keys: Kimi Code's (surface.md §4.2) plus kimi-rs's `[sandbox]`.
pub const ROOT_KEYS: &[&str] = &[
    "default_model",
    "default_permission_mode",
    "default_plan_mode",
    "merge_all_available_skills",
    "extra_skill_dirs",
    "extra_agent_dirs",
    "builtin_product_skills",
    "telemetry",
    "providers",
    "models",
    "secondary_model",
    "thinking",
    "loop_control",
    "token_counting",
    "background",
    "task",
    "subagent",
    "mcp",
    "identity",
    "tools",
    "image",
    "services",
    "permission",
    "hooks",
    "cron",
    "experimental",
    "model_catalog",
    "sandbox",
    "checkpoint",
    "feedback",
    "environments",
    "default_thinking",
];

/// The flag ids `[experimental]` accepts.
pub(crate) const EXPERIMENTAL_IDS: &[&str] = &[
    "tool-select",
    "wait_for",
    "tower",
    "auto_session_title",
    "secondary-model",
    "subagent_fork",
    "persistence_minidb_readmodel",
];

/// Keys that are valid Kimi Code settings but have no effect in kimi-rs, with why. A `*`
/// segment matches any name. Reported (as warnings) only when the user sets them.
pub const UNSUPPORTED: &[(&str, &str)] = &[
    ("telemetry", "kimi-rs sends no telemetry"),
    (
        "merge_all_available_skills",
        "kimi-rs always merges every skill directory",
    ),
    ("secondary_model", "there is no secondary model"),
    ("thinking.keep", "thinking blocks are always kept"),
    (
        "loop_control.max_ralph_iterations",
        "there is no Ralph loop",
    ),
    (
        "token_counting",
        "tokens are always counted as measured plus estimated",
    ),
    (
        "background.max_running_tasks",
        "background tasks are not capped",
    ),
    (
        "background.keep_alive_on_exit",
        "background tasks stop when kimi-rs exits",
    ),
    (
        "background.print_background_mode",
        "print mode always waits for background tasks (steer)",
    ),
    (
        "background.print_wait_ceiling_s",
        "print mode waits for background tasks without a ceiling",
    ),
    ("background.print_max_turns", "print mode has no turn cap"),
    ("subagent.timeout_ms", "subagents have no timeout"),
    ("identity", "the product name and User-Agent are fixed"),
    ("cron.debug", "there is no cron debug output"),
    ("cron.manual_tick", "the cron clock always ticks"),
    ("cron.clock", "cron uses the system clock"),
    ("cron.poll_interval_ms", "cron polls every second"),
    ("model_catalog", "there is no model catalog"),
    (
        "providers.*.default_model",
        "the model comes from default_model, -m or KIMI_MODEL_NAME",
    ),
    (
        "image",
        "images are downscaled to 2000 px per edge and a 256 KiB budget",
    ),
    ("providers.*.model_source", "models come only from [models]"),
    (
        "models.*.max_input_size",
        "the input is not capped separately",
    ),
    (
        "models.*.off_effort",
        "off is sent as the provider's own off",
    ),
    ("models.*.beta_api", "no beta APIs are used"),
    (
        "models.*.oauth",
        "a model uses its provider's login; set oauth on the provider",
    ),
    ("models.*.name", "the alias is the name"),
    ("models.*.aliases", "each alias is its own [models] entry"),
    ("models.*.provider_id", "`provider` names the provider"),
    (
        "models.*.overrides.max_input_size",
        "the input is not capped separately",
    ),
    (
        "models.*.overrides.off_effort",
        "off is sent as the provider's own off",
    ),
];

/// Old keys Kimi Code ignores with a warning.
pub const DEPRECATED: &[&str] = &[
    "default_thinking",
    "thinking.mode",
    "loop_control.max_retries_per_step",
    "loop_control.max_steps_per_run",
];

/// Whether `path` matches `pattern` (`*` segments match any one segment).
pub fn matches(pattern: &str, path: &[String]) -> bool {
    let parts: Vec<&str> = pattern.split('.').collect();
    parts.len() == path.len()
        && parts
            .iter()
            .zip(path)
            .all(|(p, s)| *p == "*" || *p == s.as_str())
}

/// The keys allowed in the table at `path` (empty when any key is allowed or it is unknown).
pub fn known_keys(path: &[String]) -> &'static [&'static str] {
    let segs: Vec<&str> = path.iter().map(String::as_str).collect();
    match segs.as_slice() {
        [] => ROOT_KEYS,
        ["providers", _] => fields_of::<ProviderEntry>(),
        ["models", _] => fields_of::<ModelEntry>(),
        ["models", _, "overrides"] => fields_of::<ModelOverrides>(),
        ["services"] => fields_of::<Services>(),
        ["services", _] => fields_of::<ServiceEntry>(),
        ["providers" | "services", _, "oauth"] => fields_of::<crate::OAuthRef>(),
        ["secondary_model"] => fields_of::<SecondaryModel>(),
        ["thinking"] => fields_of::<ThinkingSection>(),
        ["loop_control"] => fields_of::<LoopControl>(),
        ["token_counting"] => fields_of::<TokenCounting>(),
        ["background" | "task"] => fields_of::<Background>(),
        ["subagent"] => fields_of::<Subagent>(),
        ["mcp"] => fields_of::<Mcp>(),
        ["identity"] => fields_of::<Identity>(),
        ["tools"] => fields_of::<Tools>(),
        ["image"] => fields_of::<Image>(),
        ["cron"] => fields_of::<Cron>(),
        ["model_catalog"] => fields_of::<ModelCatalog>(),
        ["sandbox"] => fields_of::<Sandbox>(),
        ["checkpoint"] => fields_of::<crate::checkpoint::Checkpoint>(),
        ["permission"] => fields_of::<PermissionSpans>(),
        ["experimental"] => EXPERIMENTAL_IDS,
        ["feedback"] => fields_of::<Feedback>(),
        _ => &[],
    }
}

/// The field names `T`'s derived `Deserialize` asks for.
pub(crate) fn fields_of<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    match T::deserialize(Probe) {
        Err(Found(fields)) => fields,
        Ok(_) => &[],
    }
}

struct Probe;

#[derive(Debug)]
struct Found(&'static [&'static str]);

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("probe")
    }
}

impl std::error::Error for Found {}

impl de::Error for Found {
    fn custom<T: fmt::Display>(_: T) -> Self {
        Found(&[])
    }
}

impl<'de> de::Deserializer<'de> for Probe {
    type Error = Found;

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Found> {
        Err(Found(&[]))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Found> {
        Err(Found(fields))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_names_come_from_the_structs() {
        assert!(known_keys(&["loop_control".into()]).contains(&"max_steps_per_turn"));
        assert!(known_keys(&["providers".into(), "x".into()]).contains(&"type"));
        assert!(
            known_keys(&["models".into(), "m".into(), "overrides".into()])
                .contains(&"display_name")
        );
        assert!(matches(
            "models.*.oauth",
            &["models".into(), "k2".into(), "oauth".into()]
        ));
    }
}
