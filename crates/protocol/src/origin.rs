//! Why a (mostly user-role) message exists: the 12 prompt origins of core.md §a.3.
//!
//! Origins decide undo anchors, what compaction keeps and what the projector merges, so they are
//! typed. An origin this version does not know (or cannot read) is kept verbatim as `Other` so
//! that it round-trips through the journal instead of being dropped.

use serde::de::Deserializer;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Who started a skill or plugin command.
pub const TRIGGER_USER_SLASH: &str = "user-slash";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum KnownOrigin {
    User {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        skill_activations: Option<Vec<Value>>,
        /// Set on a steer that joined a running turn (2.1): such a message is not an undo anchor.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        in_turn: Option<bool>,
    },
    SkillActivation {
        activation_id: String,
        skill_name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        skill_args: Option<String>,
        trigger: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        skill_type: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        skill_path: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        skill_source: Option<String>,
    },
    PluginCommand {
        activation_id: String,
        plugin_id: String,
        command_name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        command_args: Option<String>,
        trigger: String,
    },
    Injection {
        variant: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        owner_prompt_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        disclosure: Option<Value>,
    },
    ShellCommand {
        phase: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        is_error: Option<bool>,
    },
    CompactionSummary,
    SystemTrigger {
        name: String,
    },
    Task {
        task_id: String,
        status: String,
        notification_id: String,
    },
    CronJob {
        job_id: String,
        cron: String,
        recurring: bool,
        coalesced_count: u64,
        stale: bool,
    },
    CronMissed {
        count: u64,
    },
    HookResult {
        event: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        blocked: Option<bool>,
    },
    Retry {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        trigger: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Origin {
    Known(KnownOrigin),
    /// An origin this version cannot type; kept as written.
    Other(Map<String, Value>),
}

impl<'de> Deserialize<'de> for Origin {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        let value = match value {
            // `"user"` is shorthand for `{"kind":"user"}`.
            Value::String(kind) => {
                let mut map = Map::new();
                map.insert("kind".to_owned(), Value::String(kind));
                Value::Object(map)
            }
            other => other,
        };
        match KnownOrigin::deserialize(&value) {
            Ok(known) => Ok(Origin::Known(known)),
            Err(_) => match value {
                Value::Object(map) => Ok(Origin::Other(map)),
                other => Err(serde::de::Error::custom(format!(
                    "origin must be an object or a kind string, got {other}"
                ))),
            },
        }
    }
}

impl Origin {
    pub fn user() -> Self {
        Origin::Known(KnownOrigin::User {
            skill_activations: None,
            in_turn: None,
        })
    }

    pub fn injection(variant: impl Into<String>) -> Self {
        Origin::Known(KnownOrigin::Injection {
            variant: variant.into(),
            owner_prompt_id: None,
            disclosure: None,
        })
    }

    pub fn known(&self) -> Option<&KnownOrigin> {
        match self {
            Origin::Known(k) => Some(k),
            Origin::Other(_) => None,
        }
    }

    /// The `kind` string (for unknown origins, whatever the record said, or "").
    pub fn kind(&self) -> &str {
        match self {
            Origin::Known(k) => match k {
                KnownOrigin::User { .. } => "user",
                KnownOrigin::SkillActivation { .. } => "skill_activation",
                KnownOrigin::PluginCommand { .. } => "plugin_command",
                KnownOrigin::Injection { .. } => "injection",
                KnownOrigin::ShellCommand { .. } => "shell_command",
                KnownOrigin::CompactionSummary => "compaction_summary",
                KnownOrigin::SystemTrigger { .. } => "system_trigger",
                KnownOrigin::Task { .. } => "task",
                KnownOrigin::CronJob { .. } => "cron_job",
                KnownOrigin::CronMissed { .. } => "cron_missed",
                KnownOrigin::HookResult { .. } => "hook_result",
                KnownOrigin::Retry { .. } => "retry",
            },
            Origin::Other(map) => map.get("kind").and_then(Value::as_str).unwrap_or(""),
        }
    }

    pub fn is_user(&self) -> bool {
        matches!(self, Origin::Known(KnownOrigin::User { .. }))
    }

    pub fn is_injection(&self) -> bool {
        self.kind() == "injection"
    }

    pub fn is_compaction_summary(&self) -> bool {
        self.kind() == "compaction_summary"
    }

    /// A skill or plugin command the user typed as `/name`.
    pub fn is_user_slash(&self) -> bool {
        match self {
            Origin::Known(
                KnownOrigin::SkillActivation { trigger, .. }
                | KnownOrigin::PluginCommand { trigger, .. },
            ) => trigger == TRIGGER_USER_SLASH,
            Origin::Known(_) | Origin::Other(_) => false,
        }
    }

    /// `ownerPromptId` of an injection, if any.
    pub fn owner_prompt_id(&self) -> Option<&str> {
        match self {
            Origin::Known(KnownOrigin::Injection {
                owner_prompt_id, ..
            }) => owner_prompt_id.as_deref(),
            Origin::Known(_) => None,
            Origin::Other(map) => map.get("ownerPromptId").and_then(Value::as_str),
        }
    }

    /// `inTurn: true` marks a steer that joined a running turn.
    pub fn in_turn(&self) -> bool {
        match self {
            Origin::Known(KnownOrigin::User { in_turn, .. }) => in_turn.unwrap_or(false),
            Origin::Known(_) => false,
            Origin::Other(map) => map.get("inTurn").and_then(Value::as_bool).unwrap_or(false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn shorthand_and_objects_parse_and_round_trip() {
        let o: Origin = serde_json::from_value(json!("user")).unwrap();
        assert!(o.is_user());
        assert_eq!(serde_json::to_value(&o).unwrap(), json!({"kind": "user"}));

        let v = json!({"kind": "injection", "variant": "image_compression", "ownerPromptId": "p2"});
        let o: Origin = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(o.owner_prompt_id(), Some("p2"));
        assert_eq!(serde_json::to_value(&o).unwrap(), v);
    }

    #[test]
    fn unknown_or_incomplete_origins_are_kept_verbatim() {
        for v in [
            json!({"kind": "telepathy", "x": 1}),
            json!({"kind": "task", "taskId": "t"}),
        ] {
            let o: Origin = serde_json::from_value(v.clone()).unwrap();
            assert!(matches!(o, Origin::Other(_)));
            assert_eq!(serde_json::to_value(&o).unwrap(), v);
        }
    }

    #[test]
    fn user_slash_skill_is_recognised() {
        let o: Origin = serde_json::from_value(json!({
            "kind": "skill_activation", "activationId": "a", "skillName": "s", "trigger": "user-slash"
        }))
        .unwrap();
        assert!(o.is_user_slash());
        assert_eq!(o.kind(), "skill_activation");
    }
}
