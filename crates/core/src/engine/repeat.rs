//! Same-step dedupe keys and the cross-step repeat guard (core.md §h.2): identical calls in one
//! step run once; a model that keeps issuing the same call across steps gets escalating
//! reminders at 3, 5 and 8 repeats, and the turn is stopped at 12.

use serde_json::Value;

/// Tool name + canonical JSON of the arguments (object keys sorted at every depth).
pub fn call_key(name: &str, args: &Value) -> String {
    fn canonical(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                let mut out = serde_json::Map::new();
                for key in keys {
                    if let Some(v) = map.get(key) {
                        out.insert(key.clone(), canonical(v));
                    }
                }
                Value::Object(out)
            }
            Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
            other => other.clone(),
        }
    }
    format!("{name}\u{0}{}", canonical(args))
}

const REMIND_3: &str = "The same tool call has been repeated several times in a row. Before making your next call, write one sentence stating what new information you expect it to produce. Then act on that sentence: if it names something this result does not already give you, choose the action that best provides it; otherwise, continue with the evidence you already have.";
const REMIND_8: &str = "Write your final response now, without any further tool calls. Cover: the current blocker, each approach you have tried and what it established, and the specific information or decision you need from the user to unblock progress. Text only.";

fn remind_5(count: u32) -> String {
    format!(
        "The same tool call has now been issued {count} times in a row. Choose exactly one of the following and state your choice before acting:\n1. Run a different check that could prove your current assumption wrong.\n2. Ask the user for the input or decision you are missing.\n3. Stop and report what you found, with the uncertainties that remain."
    )
}

/// What the guard says about the original call of a step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepeatVerdict {
    /// A `<system-reminder>` to append to the call's output.
    pub reminder: Option<String>,
    /// Stop the turn after this batch.
    pub stop_turn: bool,
    /// How many times in a row this call has now been made.
    pub streak: u32,
}

/// Counts consecutive identical calls across the steps of one turn.
#[derive(Debug, Default, Clone)]
pub struct RepeatGuard {
    last_key: Option<String>,
    streak: u32,
}

impl RepeatGuard {
    /// Feed the keys of one step's calls in order; returns a verdict per call.
    pub fn observe(&mut self, key: &str) -> RepeatVerdict {
        if self.last_key.as_deref() == Some(key) {
            self.streak += 1;
        } else {
            self.last_key = Some(key.to_owned());
            self.streak = 1;
        }
        let text = match self.streak {
            n if n >= 8 => Some(REMIND_8.to_owned()),
            n if n >= 5 => Some(remind_5(n)),
            n if n >= 3 => Some(REMIND_3.to_owned()),
            _ => None,
        };
        RepeatVerdict {
            reminder: text.map(|t| format!("<system-reminder>\n{t}\n</system-reminder>")),
            stop_turn: self.streak >= 12,
            streak: self.streak,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_ignore_object_key_order() {
        assert_eq!(
            call_key("Read", &json!({"a": 1, "b": {"y": 2, "x": 1}})),
            call_key("Read", &json!({"b": {"x": 1, "y": 2}, "a": 1}))
        );
        assert_ne!(
            call_key("Read", &json!({"a": 1})),
            call_key("Grep", &json!({"a": 1}))
        );
    }

    #[test]
    fn escalates_at_3_5_8_and_stops_at_12() {
        let mut guard = RepeatGuard::default();
        let verdicts: Vec<RepeatVerdict> = (0..12).map(|_| guard.observe("k")).collect();
        assert!(verdicts[1].reminder.is_none());
        assert!(
            verdicts[2]
                .reminder
                .as_deref()
                .is_some_and(|r| r.contains("several times"))
        );
        assert!(
            verdicts[4]
                .reminder
                .as_deref()
                .is_some_and(|r| r.contains("5 times"))
        );
        assert!(
            verdicts[7]
                .reminder
                .as_deref()
                .is_some_and(|r| r.contains("final response"))
        );
        assert!(!verdicts[10].stop_turn);
        assert!(verdicts[11].stop_turn);
        assert!(
            guard.observe("other").reminder.is_none(),
            "a different call resets the streak"
        );
    }
}
