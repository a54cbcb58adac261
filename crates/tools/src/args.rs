//! Decoding a tool call's raw arguments and the preflight checks that run before a tool is
//! resolved: the tool exists, is enabled, and its arguments satisfy its JSON schema.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use jsonschema::error::{TypeKind, ValidationErrorKind};
use serde_json::{Map, Value};

/// The outcome of decoding a provider's argument string.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedArgs {
    pub data: Value,
    /// The JSON was malformed; `data` is then `{}`. Only logged: the schema decides.
    pub parse_failed: bool,
    pub error: Option<String>,
}

/// Raw arguments as the provider delivered them.
#[derive(Debug, Clone, Copy)]
pub enum RawArgs<'a> {
    /// Absent or JSON `null` in the provider's message.
    Missing,
    Text(&'a str),
    /// Already decoded (some providers hand over objects).
    Value(&'a Value),
}

/// `null`/absent/`""` decode to `{}`; a string is parsed without any repair (a trailing comma
/// fails); a failure gives `{}` with `parse_failed`.
pub fn parse_tool_call_arguments(raw: RawArgs<'_>) -> ParsedArgs {
    let ok = |data| ParsedArgs {
        data,
        parse_failed: false,
        error: None,
    };
    match raw {
        RawArgs::Missing => ok(Value::Object(Map::new())),
        RawArgs::Value(v) => ok(v.clone()),
        RawArgs::Text("") => ok(Value::Object(Map::new())),
        RawArgs::Text(text) => match serde_json::from_str::<Value>(text) {
            Ok(v) => ok(v),
            Err(err) => ParsedArgs {
                data: Value::Object(Map::new()),
                parse_failed: true,
                error: Some(err.to_string()),
            },
        },
    }
}

/// Why a schema could not be compiled (a bug in the tool's declaration, reported as a result).
#[derive(Debug, thiserror::Error)]
#[error("invalid JSON schema for tool \"{tool}\": {message}")]
pub struct SchemaError {
    pub tool: String,
    pub message: String,
}

/// Validates arguments against tool schemas; compiled validators are cached per tool and
/// recompiled when the schema value changes.
/// A compiled validator and the schema it was compiled from.
type CachedValidator = (Value, Arc<jsonschema::Validator>);

#[derive(Default, Clone)]
pub struct ArgsValidator {
    cache: Arc<Mutex<HashMap<String, CachedValidator>>>,
}

impl std::fmt::Debug for ArgsValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArgsValidator").finish_non_exhaustive()
    }
}

impl ArgsValidator {
    pub fn new() -> Self {
        Self::default()
    }

    fn validator(
        &self,
        tool: &str,
        schema: &Value,
    ) -> Result<Arc<jsonschema::Validator>, SchemaError> {
        let mut cache = self
            .cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((cached_schema, validator)) = cache.get(tool)
            && cached_schema == schema
        {
            return Ok(validator.clone());
        }
        let validator = jsonschema::validator_for(schema).map_err(|err| SchemaError {
            tool: tool.to_owned(),
            message: err.to_string(),
        })?;
        let validator = Arc::new(validator);
        cache.insert(tool.to_owned(), (schema.clone(), validator.clone()));
        Ok(validator)
    }

    /// All schema violations as Ajv-style messages, in Ajv's keyword order
    /// (type, then required, then additional properties, then the rest).
    pub fn validate(
        &self,
        tool: &str,
        schema: &Value,
        args: &Value,
    ) -> Result<Vec<String>, SchemaError> {
        let validator = self.validator(tool, schema)?;
        let mut errors: Vec<(u8, String)> = Vec::new();
        for err in validator.iter_errors(args) {
            let path = err.instance_path().to_string();
            let (rank, message) = describe(err.kind());
            for m in message {
                let text = if path.is_empty() {
                    m
                } else {
                    format!("{path} {m}")
                };
                errors.push((rank, text));
            }
        }
        errors.sort_by_key(|(rank, _)| *rank);
        Ok(errors.into_iter().map(|(_, m)| m).collect())
    }
}

fn type_name(kind: &TypeKind) -> String {
    match kind {
        TypeKind::Single(t) => t.to_string(),
        TypeKind::Multiple(set) => set
            .iter()
            .map(|t| t.to_string())
            .collect::<Vec<_>>()
            .join(","),
    }
}

fn describe(kind: &ValidationErrorKind) -> (u8, Vec<String>) {
    let one = |rank: u8, m: String| (rank, vec![m]);
    match kind {
        ValidationErrorKind::Type { kind } => one(0, format!("must be {}", type_name(kind))),
        ValidationErrorKind::Required { property } => {
            let name = property
                .as_str()
                .map_or_else(|| property.to_string(), str::to_owned);
            one(1, format!("must have required property '{name}'"))
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => (
            2,
            unexpected
                .iter()
                .map(|p| format!("must NOT have additional property '{p}'"))
                .collect(),
        ),
        ValidationErrorKind::UnevaluatedProperties { unexpected } => (
            3,
            unexpected
                .iter()
                .map(|p| format!("must NOT have unevaluated property '{p}'"))
                .collect(),
        ),
        ValidationErrorKind::Enum { .. } => {
            one(3, "must be equal to one of the allowed values".to_owned())
        }
        ValidationErrorKind::Constant { .. } => one(3, "must be equal to constant".to_owned()),
        ValidationErrorKind::Minimum { limit } => one(3, format!("must be >= {limit}")),
        ValidationErrorKind::Maximum { limit } => one(3, format!("must be <= {limit}")),
        ValidationErrorKind::ExclusiveMinimum { limit } => one(3, format!("must be > {limit}")),
        ValidationErrorKind::ExclusiveMaximum { limit } => one(3, format!("must be < {limit}")),
        ValidationErrorKind::MinLength { limit } => {
            one(3, format!("must NOT have fewer than {limit} characters"))
        }
        ValidationErrorKind::MaxLength { limit } => {
            one(3, format!("must NOT have more than {limit} characters"))
        }
        ValidationErrorKind::MinItems { limit } => {
            one(3, format!("must NOT have fewer than {limit} items"))
        }
        ValidationErrorKind::MaxItems { limit } => {
            one(3, format!("must NOT have more than {limit} items"))
        }
        ValidationErrorKind::MinProperties { limit } => {
            one(3, format!("must NOT have fewer than {limit} properties"))
        }
        ValidationErrorKind::MaxProperties { limit } => {
            one(3, format!("must NOT have more than {limit} properties"))
        }
        ValidationErrorKind::Pattern { pattern } => {
            one(3, format!("must match pattern \"{pattern}\""))
        }
        ValidationErrorKind::Format { format } => one(3, format!("must match format \"{format}\"")),
        ValidationErrorKind::MultipleOf { multiple_of } => {
            one(3, format!("must be multiple of {multiple_of}"))
        }
        ValidationErrorKind::AnyOf { .. } => one(3, "must match a schema in anyOf".to_owned()),
        ValidationErrorKind::OneOfNotValid { .. }
        | ValidationErrorKind::OneOfMultipleValid { .. } => {
            one(3, "must match exactly one schema in oneOf".to_owned())
        }
        ValidationErrorKind::Not { .. } => one(3, "must NOT be valid".to_owned()),
        ValidationErrorKind::FalseSchema => one(3, "boolean schema is false".to_owned()),
        ValidationErrorKind::UniqueItems => one(3, "must NOT have duplicate items".to_owned()),
        ValidationErrorKind::AdditionalItems { limit } => {
            one(3, format!("must NOT have more than {limit} items"))
        }
        ValidationErrorKind::UnevaluatedItems { .. } => {
            one(3, "must NOT have unevaluated items".to_owned())
        }
        ValidationErrorKind::Contains => one(3, "must contain at least 1 valid item(s)".to_owned()),
        ValidationErrorKind::PropertyNames { error } => {
            let (_, inner) = describe(error.kind());
            one(
                3,
                format!("property name must be valid: {}", inner.join("; ")),
            )
        }
        ValidationErrorKind::Custom { message, .. } => one(3, message.clone()),
        ValidationErrorKind::ContentEncoding { content_encoding } => {
            one(3, format!("must be encoded as \"{content_encoding}\""))
        }
        ValidationErrorKind::ContentMediaType { content_media_type } => {
            one(3, format!("must be of media type \"{content_media_type}\""))
        }
        ValidationErrorKind::FromUtf8 { error } => one(3, format!("must be valid UTF-8: {error}")),
        ValidationErrorKind::BacktrackLimitExceeded { error } => {
            one(3, format!("pattern could not be evaluated: {error}"))
        }
        ValidationErrorKind::RegexEngineFailure { message } => {
            one(3, format!("pattern could not be evaluated: {message}"))
        }
        ValidationErrorKind::Referencing(err) => one(3, format!("schema reference error: {err}")),
    }
}

/// What preflight decided about one call.
#[derive(Debug, Clone, PartialEq)]
pub enum Preflight {
    /// Run it with these arguments.
    Runnable { args: Value },
    /// Do not run it; `output` is the error result the model sees.
    Rejected { output: String, args: Value },
}

/// What preflight needs to know about the candidate tool.
#[derive(Debug, Clone, Copy)]
pub enum ToolLookup<'a> {
    Missing,
    /// Disabled by policy (guard veto) with the message to return.
    Disabled(&'a str),
    Found {
        parameters: &'a Value,
    },
}

/// Preflight in the reference's order: existence, policy, schema.
pub fn preflight(
    validator: &ArgsValidator,
    name: &str,
    lookup: ToolLookup<'_>,
    raw: RawArgs<'_>,
) -> Preflight {
    let parsed = parse_tool_call_arguments(raw);
    let args = parsed.data;
    match lookup {
        ToolLookup::Missing => Preflight::Rejected {
            output: format!("Tool \"{name}\" not found"),
            args,
        },
        ToolLookup::Disabled(message) => Preflight::Rejected {
            output: message.to_owned(),
            args,
        },
        ToolLookup::Found { parameters } => match validator.validate(name, parameters, &args) {
            Ok(errors) if errors.is_empty() => Preflight::Runnable { args },
            Ok(errors) => Preflight::Rejected {
                output: format!("Invalid args for tool \"{name}\": {}", errors.join("; ")),
                args,
            },
            Err(err) => Preflight::Rejected {
                output: err.to_string(),
                args,
            },
        },
    }
}
