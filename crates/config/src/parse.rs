//! One pass over `config.toml`: the document is parsed once into a spanned tree (syntax errors
//! stop here, with their line), each top-level key is deserialized into its typed section on
//! its own (so one bad section does not hide the problems of the others), and every key serde
//! did not consume is reported with its line and the closest known key.

use std::ops::Range;

use serde::de::DeserializeOwned;
use toml::Spanned;
use toml::de::{DeTable, DeValue, ValueDeserializer};

use crate::Config;
use crate::diag::{Severity, Sink, did_you_mean};
use crate::schema::{DEPRECATED, UNSUPPORTED, known_keys, matches};
use crate::sections::{Background, Permission, PermissionSpans, RawEntry};

pub(crate) fn parse_into(config: &mut Config, text: &str) {
    let path = config.path.clone();
    let mut diagnostics = std::mem::take(&mut config.diagnostics);
    let mut sink = Sink {
        file: &path,
        lines: crate::diag::LineIndex::new(text),
        out: &mut diagnostics,
    };
    match DeTable::parse(text) {
        Ok(root) => {
            let root = root.into_inner();
            let mut ctx = Ctx {
                sink: &mut sink,
                root: &root,
            };
            ctx.sections(config);
            ctx.report_known_but_inert();
        }
        Err(err) => {
            let message = err.message().trim_end().to_owned();
            sink.push(
                Severity::Error,
                err.span().map(|s| s.start),
                "",
                format!("not valid TOML: {message}; fix the syntax (nothing else in the file is read until then)"),
                None,
            );
        }
    }
    config.diagnostics = diagnostics;
}

struct Ctx<'a, 'b, 'i> {
    sink: &'a mut Sink<'b>,
    root: &'a DeTable<'i>,
}

/// A dotted path's segments (array positions as numbers).
fn dotted(path: &[String]) -> String {
    path.join(".")
}

pub(crate) fn segments(path: &serde_ignored::Path<'_>, out: &mut Vec<String>) {
    use serde_ignored::Path;
    match path {
        Path::Root => {}
        Path::Seq { parent, index } => {
            segments(parent, out);
            out.push(index.to_string());
        }
        Path::Map { parent, key } => {
            segments(parent, out);
            out.push(key.clone());
        }
        Path::Some { parent }
        | Path::NewtypeStruct { parent }
        | Path::NewtypeVariant { parent } => segments(parent, out),
    }
}

/// serde's type names in words a user knows.
fn plain_types(message: &str) -> String {
    let mut out = message.to_owned();
    for (from, to) in [
        ("expected u8", "expected a non-negative integer"),
        ("expected u16", "expected a non-negative integer"),
        ("expected u32", "expected a non-negative integer"),
        ("expected u64", "expected a non-negative integer"),
        ("expected i64", "expected an integer"),
        ("expected i32", "expected an integer"),
        ("expected f64", "expected a number"),
        ("expected a sequence", "expected an array"),
        ("expected a map", "expected a table"),
    ] {
        out = out.replace(from, to);
    }
    out
}

impl Ctx<'_, '_, '_> {
    fn sections(&mut self, config: &mut Config) {
        let mut task: Option<Background> = None;
        let mut background: Option<Background> = None;
        let root = self.root;
        for (key, value) in root.iter() {
            let name: &str = key.get_ref();
            match name {
                "default_model" => config.default_model = self.de(name, value).flatten(),
                "default_permission_mode" => {
                    config.default_permission_mode = self.de(name, value).flatten()
                }
                "default_plan_mode" => config.default_plan_mode = self.de(name, value).flatten(),
                "merge_all_available_skills" => {
                    config.merge_all_available_skills = self.de(name, value).flatten()
                }
                "extra_skill_dirs" => {
                    config.extra_skill_dirs = self.de(name, value).unwrap_or_default()
                }
                "extra_agent_dirs" => {
                    config.extra_agent_dirs = self.de(name, value).unwrap_or_default()
                }
                "builtin_product_skills" => {
                    config.builtin_product_skills = self.de(name, value).flatten()
                }
                "telemetry" => config.telemetry = self.de(name, value).flatten(),
                "providers" => config.providers = self.de(name, value).unwrap_or_default(),
                "models" => config.models = self.de(name, value).unwrap_or_default(),
                "secondary_model" => config.secondary_model = self.de(name, value),
                "thinking" => config.thinking = self.de(name, value),
                "loop_control" => config.loop_control = self.de(name, value).unwrap_or_default(),
                "token_counting" => {
                    config.token_counting = self.de(name, value).unwrap_or_default()
                }
                "background" => background = self.de(name, value),
                "task" => task = self.de(name, value),
                "subagent" => config.subagent = self.de(name, value).unwrap_or_default(),
                "mcp" => config.mcp = self.de(name, value).unwrap_or_default(),
                "identity" => config.identity = self.de(name, value).unwrap_or_default(),
                "tools" => config.tools = self.de(name, value).unwrap_or_default(),
                "image" => config.image = self.de(name, value).unwrap_or_default(),
                "services" => config.services = self.de(name, value).unwrap_or_default(),
                "cron" => config.cron = self.de(name, value).unwrap_or_default(),
                "experimental" => config.experimental = self.de(name, value).unwrap_or_default(),
                "model_catalog" => config.model_catalog = self.de(name, value).unwrap_or_default(),
                "sandbox" => config.sandbox = self.de(name, value).unwrap_or_default(),
                "checkpoint" => config.checkpoint = self.de(name, value).unwrap_or_default(),
                "feedback" => config.feedback = self.de(name, value).unwrap_or_default(),
                "environments" => {
                    let table: Option<toml::Table> = self.de(name, value);
                    let (envs, problems) = crate::environments::parse_table(
                        &table.unwrap_or_default(),
                        self.sink.file,
                    );
                    for p in problems {
                        let at = self.span_of(&p.path).map(|s| s.start);
                        self.sink
                            .push(Severity::Error, at, &dotted(&p.path), p.message, None);
                    }
                    config.environments = envs;
                }
                "permission" => {
                    let spans: Option<PermissionSpans> = self.de(name, value);
                    config.permission = self.permission(spans.unwrap_or_default());
                }
                "hooks" => {
                    let spans: Option<Vec<Spanned<toml::Value>>> = self.de(name, value);
                    config.hooks = spans
                        .unwrap_or_default()
                        .into_iter()
                        .map(|s| self.raw(s))
                        .collect();
                }
                // Deprecated; reported with the other deprecated keys.
                "default_thinking" => {}
                _ => self.unknown(&[name.to_owned()]),
            }
        }
        config.background = match (background, task) {
            (Some(background), Some(_)) => {
                let at = self.span_of(&["task".to_owned()]).map(|s| s.start);
                self.sink.push(
                    Severity::Warning,
                    at,
                    "task",
                    "[task] is an alias of [background] and both are set; [task] is ignored"
                        .to_owned(),
                    None,
                );
                background
            }
            (background, task) => background.or(task).unwrap_or_default(),
        };
    }

    fn raw(&self, spanned: Spanned<toml::Value>) -> RawEntry {
        RawEntry {
            line: self.sink.lines.line(spanned.span().start),
            value: spanned.into_inner(),
        }
    }

    fn permission(&self, spans: PermissionSpans) -> Permission {
        let list = |v: Vec<Spanned<toml::Value>>| v.into_iter().map(|s| self.raw(s)).collect();
        Permission {
            rules: list(spans.rules),
            deny: list(spans.deny),
            allow: list(spans.allow),
            ask: list(spans.ask),
        }
    }

    /// Deserializes one top-level value. A key of the wrong type is reported and left out,
    /// and the rest of the section is read again, so every bad key of a section is reported
    /// in one run and the good ones still apply; `None` when nothing usable is left.
    fn de<T: DeserializeOwned>(&mut self, name: &str, value: &Spanned<DeValue<'_>>) -> Option<T> {
        let mut value = value.clone();
        let mut seen: Vec<Vec<String>> = Vec::new();
        let mut removed: Vec<Vec<String>> = Vec::new();
        // Each round removes at least one key, so this ends; the cap is a guard only.
        for _ in 0..256 {
            let mut ignored = Vec::new();
            let result: Result<T, _> =
                serde_ignored::deserialize(ValueDeserializer::from(value.clone()), |path| {
                    let mut segs = vec![name.to_owned()];
                    segments(&path, &mut segs);
                    ignored.push(segs);
                });
            for path in ignored {
                if !seen.contains(&path) {
                    self.unknown(&path);
                    seen.push(path);
                }
            }
            let err = match result {
                Ok(value) => return Some(value),
                Err(err) => err,
            };
            let span = err.span().unwrap_or_else(|| value.span());
            let key = self
                .key_at(span.start)
                .unwrap_or_else(|| vec![name.to_owned()]);
            // A table that now misses a required key we removed was reported already.
            let consequence = err.message().starts_with("missing field")
                && removed.iter().any(|r| r.starts_with(&key));
            if !consequence {
                self.sink.push(
                    Severity::Error,
                    Some(span.start),
                    &dotted(&key),
                    format!(
                        "{}; kimi-rs cannot start until it is fixed",
                        plain_types(err.message().trim_end())
                    ),
                    None,
                );
            }
            removed.push(key.clone());
            let inner = key.get(1..).unwrap_or_default();
            if inner.is_empty() || !remove_key(value.get_mut(), inner) {
                return None;
            }
        }
        None
    }

    fn unknown(&mut self, path: &[String]) {
        // Deprecated keys are read (and ignored) on purpose; they are reported as deprecated.
        if DEPRECATED.iter().any(|d| matches(d, path)) {
            return;
        }
        let Some((last, parent)) = path.split_last() else {
            return;
        };
        let suggestion = did_you_mean(last, known_keys(parent).iter().copied());
        let at = self.span_of(path).map(|s| s.start);
        let place = if parent.is_empty() {
            "is not a config.toml setting".to_owned()
        } else {
            format!("is not a key of [{}]", dotted(parent))
        };
        self.sink.push(
            Severity::Warning,
            at,
            &dotted(path),
            format!("unknown key: {place}; it is ignored (check its spelling or remove it)"),
            suggestion,
        );
    }

    fn span_of(&self, path: &[String]) -> Option<Range<usize>> {
        span_of(self.root, path)
    }

    fn key_at(&self, offset: usize) -> Option<Vec<String>> {
        key_at(self.root, offset)
    }

    /// Deprecated keys, and keys that are settings of Kimi Code that kimi-rs does not act on.
    fn report_known_but_inert(&mut self) {
        let mut all = Vec::new();
        collect_paths(self.root, &mut Vec::new(), &mut all);
        for (path, start) in all {
            let key = dotted(&path);
            if DEPRECATED.iter().any(|d| matches(d, &path)) {
                self.sink.push(
                    Severity::Warning,
                    Some(start),
                    &key,
                    "deprecated and ignored; remove it".to_owned(),
                    None,
                );
            } else if let Some((_, why)) = UNSUPPORTED.iter().find(|(p, _)| matches(p, &path)) {
                self.sink.push(
                    Severity::Warning,
                    Some(start),
                    &key,
                    format!("not supported by kimi-rs; ignored ({why})"),
                    None,
                );
            } else if let [section, id] = path.as_slice()
                && section == "experimental"
                && let Some(why) = crate::experimental::flag(id).and_then(|f| f.unsupported)
            {
                self.sink.push(
                    Severity::Warning,
                    Some(start),
                    &key,
                    format!("not supported by kimi-rs; ignored (experimental flag: {why})"),
                    None,
                );
            }
        }
    }
}

/// Every key path in the document (array elements get their index), with its key's start.
fn collect_paths(
    table: &DeTable<'_>,
    prefix: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, usize)>,
) {
    for (key, value) in table.iter() {
        prefix.push(key.get_ref().to_string());
        out.push((prefix.clone(), key.span().start));
        collect_value(value.get_ref(), prefix, out);
        prefix.pop();
    }
}

fn collect_value(
    value: &DeValue<'_>,
    prefix: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, usize)>,
) {
    match value {
        DeValue::Table(t) => collect_paths(t, prefix, out),
        DeValue::Array(a) => {
            for (i, item) in a.iter().enumerate() {
                prefix.push(i.to_string());
                collect_value(item.get_ref(), prefix, out);
                prefix.pop();
            }
        }
        _ => {}
    }
}

/// The span of the key at `path` (or, for an array position, of the element).
pub(crate) fn span_of(root: &DeTable<'_>, path: &[String]) -> Option<Range<usize>> {
    let mut table = root;
    let mut current: Option<&Spanned<DeValue<'_>>> = None;
    let mut span = None;
    for seg in path {
        if let Some(value) = current
            && let Some(array) = value.get_ref().as_array()
        {
            let item = seg.parse::<usize>().ok().and_then(|i| array.get(i))?;
            span = Some(item.span());
            current = Some(item);
            if let Some(t) = item.get_ref().as_table() {
                table = t;
            }
            continue;
        }
        let (key, value) = table.iter().find(|(k, _)| k.get_ref() == seg)?;
        span = Some(key.span());
        current = Some(value);
        if let Some(t) = value.get_ref().as_table() {
            table = t;
        }
    }
    span
}

/// The path of the innermost key whose value contains byte `offset`. A table opened by
/// a `[header]` spans only its header, so tables are searched whatever their span.
pub(crate) fn key_at(root: &DeTable<'_>, offset: usize) -> Option<Vec<String>> {
    fn search(value: &Spanned<DeValue<'_>>, offset: usize, path: &mut Vec<String>) -> bool {
        let children: Vec<(String, &Spanned<DeValue<'_>>)> = match value.get_ref() {
            DeValue::Table(t) => t
                .iter()
                .map(|(k, v)| (k.get_ref().to_string(), v))
                .collect(),
            DeValue::Array(a) => a
                .iter()
                .enumerate()
                .map(|(i, v)| (i.to_string(), v))
                .collect(),
            _ => return value.span().contains(&offset) || value.span().start == offset,
        };
        for (name, child) in children {
            path.push(name);
            if search(child, offset, path) {
                return true;
            }
            path.pop();
        }
        value.span().contains(&offset) || value.span().start == offset
    }
    for (key, value) in root.iter() {
        let mut path = vec![key.get_ref().to_string()];
        if search(value, offset, &mut path) || key.span().contains(&offset) {
            return Some(path);
        }
    }
    None
}

/// Removes the key at `path` (relative to `value`); a path into an array removes the array.
fn remove_key(value: &mut DeValue<'_>, path: &[String]) -> bool {
    let DeValue::Table(table) = value else {
        return false;
    };
    let Some((first, rest)) = path.split_first() else {
        return false;
    };
    if !rest.is_empty()
        && let Some(child) = table.get_mut(first.as_str())
        && child.get_ref().is_table()
        && remove_key(child.get_mut(), rest)
    {
        return true;
    }
    table.remove(first.as_str()).is_some()
}
