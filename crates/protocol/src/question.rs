//! AskUserQuestion's vocabulary (surface.md §2.4): the questions an agent asks
//! (`Event::QuestionRequested`) and the answers a front end sends back (`Op::Answer`).
//!
//! Answers are read leniently, in every shape a front end is known to send (the TUI's labels,
//! the web API's `{"kind": ...}` objects, ACP's skips); a shape that fits none is an error that
//! says which question it was for and what to send instead. Matching answers to the questions
//! (labels, `q<index>` keys, `opt_<index>` ids) is the asker's job
//! (`kimi_tools::builtin::ask::parse_answers`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionOption {
    pub label: String,
    #[serde(default)]
    pub description: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Question {
    pub question: String,
    #[serde(default)]
    pub header: String,
    pub options: Vec<QuestionOption>,
    #[serde(default)]
    pub multi_select: bool,
}

/// The questions of one request, as announced: `{"questions": [...]}`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct QuestionSet {
    pub questions: Vec<Question>,
}

/// The `kind` of a detailed answer (the web API's form).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerKind {
    Single,
    Multi,
    Other,
    MultiWithOther,
}

/// One question's answer as a front end sends it.
///
/// JSON: `"label"` | `["label", ...]` | `null` or `{"kind": "skipped"}` | `{"kind": "single",
/// "option_id": L}` | `{"kind": "multi", "option_ids": [L, ...]}` | `{"kind": "other", "text":
/// T}` | `{"kind": "multi_with_other", "option_ids": [...], "other_text": T}` (option ids are
/// labels or `opt_<index>`; each field also takes one string or a list).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Value", into = "Value")]
pub enum QuestionAnswer {
    /// Left unanswered.
    Skipped,
    /// One option's label; text matching no label is a free-form ("Other") answer.
    Label(String),
    /// Several labels (multi-select); entries matching no label become "Other" text.
    Labels(Vec<String>),
    /// Option ids and free text, as the web API sends them.
    Detailed {
        kind: Option<AnswerKind>,
        option_ids: Vec<String>,
        other: Vec<String>,
    },
}

/// An answer payload that fits none of the accepted shapes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnswerShapeError(pub String);

impl std::fmt::Display for AnswerShapeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for AnswerShapeError {}

impl QuestionAnswer {
    /// Read one answer; `key` (the question it answers) only names it in errors.
    pub fn from_json(key: &str, raw: &Value) -> Result<QuestionAnswer, AnswerShapeError> {
        let bad = || {
            AnswerShapeError(format!(
                "cannot read the answer to \"{key}\": {raw}; give a label, a list of labels, or {{\"kind\": ...}}"
            ))
        };
        match raw {
            Value::Null => Ok(QuestionAnswer::Skipped),
            Value::String(s) => Ok(QuestionAnswer::Label(s.clone())),
            Value::Array(items) => items
                .iter()
                .map(|v| v.as_str().map(str::to_owned).ok_or_else(bad))
                .collect::<Result<_, _>>()
                .map(QuestionAnswer::Labels),
            Value::Object(o) => {
                let strs = |field: &str| -> Result<Vec<String>, AnswerShapeError> {
                    match o.get(field) {
                        None => Ok(Vec::new()),
                        Some(Value::Array(items)) => items
                            .iter()
                            .map(|v| v.as_str().map(str::to_owned).ok_or_else(bad))
                            .collect(),
                        Some(Value::String(s)) => Ok(vec![s.clone()]),
                        Some(_) => Err(bad()),
                    }
                };
                let kind = match o.get("kind") {
                    None => None,
                    Some(Value::String(k)) if k == "skipped" => {
                        return Ok(QuestionAnswer::Skipped);
                    }
                    Some(k) => Some(serde_json::from_value::<AnswerKind>(k.clone()).map_err(
                        |_| {
                            AnswerShapeError(format!(
                                "unknown answer kind {k} for \"{key}\": use single, multi, other, multi_with_other or skipped"
                            ))
                        },
                    )?),
                };
                let mut option_ids = strs("option_id")?;
                option_ids.extend(strs("option_ids")?);
                let mut other = strs("text")?;
                other.extend(strs("other_text")?);
                other.extend(strs("other")?);
                Ok(QuestionAnswer::Detailed {
                    kind,
                    option_ids,
                    other,
                })
            }
            Value::Bool(_) | Value::Number(_) => Err(bad()),
        }
    }
}

impl TryFrom<Value> for QuestionAnswer {
    type Error = AnswerShapeError;

    fn try_from(value: Value) -> Result<Self, Self::Error> {
        QuestionAnswer::from_json("?", &value)
    }
}

impl From<QuestionAnswer> for Value {
    fn from(answer: QuestionAnswer) -> Value {
        match answer {
            QuestionAnswer::Skipped => json!({"kind": "skipped"}),
            QuestionAnswer::Label(label) => Value::String(label),
            QuestionAnswer::Labels(labels) => Value::from(labels),
            QuestionAnswer::Detailed {
                kind,
                option_ids,
                other,
            } => {
                let mut map = Map::new();
                if let Some(kind) = kind {
                    map.insert(
                        "kind".to_owned(),
                        serde_json::to_value(kind).unwrap_or(Value::Null),
                    );
                }
                map.insert("option_ids".to_owned(), Value::from(option_ids));
                if !other.is_empty() {
                    map.insert("other".to_owned(), Value::from(other));
                }
                Value::Object(map)
            }
        }
    }
}

/// The user's reply to one question request (`Op::Answer`).
///
/// JSON: `{"answers": {KEY: ANSWER, ...}}` (a bare `{KEY: ANSWER}` map reads the same), where
/// KEY is the question text or `q<index>` and ANSWER a [`QuestionAnswer`]; `{"dismissed":
/// true}` closes the dialog. An empty map is a dismissal too.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Value", into = "Value")]
pub enum Answers {
    Dismissed,
    Given(BTreeMap<String, QuestionAnswer>),
}

impl Answers {
    /// The answers keyed by question, `None` when the dialog was dismissed.
    pub fn given(&self) -> Option<&BTreeMap<String, QuestionAnswer>> {
        match self {
            Answers::Dismissed => None,
            Answers::Given(map) => Some(map),
        }
    }

    /// Read a front end's answer payload (see the type's JSON shapes).
    pub fn from_json(value: &Value) -> Result<Answers, AnswerShapeError> {
        let Some(obj) = value.as_object() else {
            return Err(AnswerShapeError(format!(
                "answers must be a JSON object like {{\"answers\": {{\"<question>\": \"<label>\"}}}}, got {value}"
            )));
        };
        if obj.get("dismissed").and_then(Value::as_bool) == Some(true) {
            return Ok(Answers::Dismissed);
        }
        let map = match obj.get("answers") {
            Some(Value::Object(map)) => map,
            Some(other) => {
                return Err(AnswerShapeError(format!(
                    "\"answers\" must map question texts to answers, got {other}"
                )));
            }
            None => obj,
        };
        map.iter()
            .filter(|(key, _)| obj.contains_key("answers") || key.as_str() != "dismissed")
            .map(|(key, raw)| Ok((key.clone(), QuestionAnswer::from_json(key, raw)?)))
            .collect::<Result<_, _>>()
            .map(Answers::Given)
    }
}

impl TryFrom<Value> for Answers {
    type Error = AnswerShapeError;

    fn try_from(value: Value) -> Result<Self, Self::Error> {
        Answers::from_json(&value)
    }
}

impl From<Answers> for Value {
    fn from(answers: Answers) -> Value {
        match answers {
            Answers::Dismissed => json!({"dismissed": true}),
            Answers::Given(map) => {
                let map: Map<String, Value> =
                    map.into_iter().map(|(k, v)| (k, Value::from(v))).collect();
                json!({ "answers": map })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn every_known_answer_shape_reads_and_round_trips() {
        let payload = json!({"answers": {
            "Which database?": "Postgres",
            "Which extras?": ["Cache", "Search"],
            "q2": {"kind": "multi_with_other", "option_ids": ["opt_0"], "other_text": "MySQL"},
            "q3": {"kind": "skipped"},
            "q4": null,
            "q5": {"option_id": "A"},
        }});
        let answers = Answers::from_json(&payload).unwrap();
        let given = answers.given().unwrap();
        assert_eq!(
            given["Which extras?"],
            QuestionAnswer::Labels(vec!["Cache".into(), "Search".into()])
        );
        assert_eq!(
            given["q2"],
            QuestionAnswer::Detailed {
                kind: Some(AnswerKind::MultiWithOther),
                option_ids: vec!["opt_0".into()],
                other: vec!["MySQL".into()],
            }
        );
        assert_eq!(given["q3"], QuestionAnswer::Skipped);
        assert_eq!(given["q4"], QuestionAnswer::Skipped);
        let back: Answers =
            serde_json::from_value(serde_json::to_value(&answers).unwrap()).unwrap();
        assert_eq!(back, answers);
        // A bare map and a dismissal.
        let bare = Answers::from_json(&json!({"Which database?": "SQLite"})).unwrap();
        assert_eq!(bare.given().unwrap().len(), 1);
        assert_eq!(
            Answers::from_json(&json!({"dismissed": true})).unwrap(),
            Answers::Dismissed
        );
        assert_eq!(
            serde_json::to_value(Answers::Dismissed).unwrap(),
            json!({"dismissed": true})
        );
    }

    #[test]
    fn unreadable_answers_say_what_to_send() {
        for (payload, wanted) in [
            (json!("yes"), "must be a JSON object"),
            (json!({"answers": [1]}), "must map question texts"),
            (
                json!({"answers": {"Why?": 5}}),
                "cannot read the answer to \"Why?\"",
            ),
            (
                json!({"answers": {"Why?": {"kind": "maybe"}}}),
                "unknown answer kind",
            ),
        ] {
            let err = Answers::from_json(&payload).unwrap_err();
            assert!(err.to_string().contains(wanted), "{err}");
        }
    }

    #[test]
    fn question_sets_keep_the_announced_shape() {
        let set: QuestionSet = serde_json::from_value(json!({"questions": [{"question": "Which?", "options": [{"label": "A"}, {"label": "B", "description": "b"}]}]})).unwrap();
        assert_eq!(set.questions[0].options[1].description, "b");
        assert_eq!(
            serde_json::to_value(&set).unwrap(),
            json!({"questions": [{"question": "Which?", "header": "", "options": [{"label": "A", "description": ""}, {"label": "B", "description": "b"}], "multi_select": false}]})
        );
    }
}
