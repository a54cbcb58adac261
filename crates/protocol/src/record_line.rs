//! Decoding one journal line straight from its bytes into a typed [`Record`], without building a
//! `serde_json::Value` of the whole line first. This is the resume fast path: a 10,000-line
//! journal spends most of its open time allocating and freeing the intermediate JSON tree.
//!
//! Only lines in the shape this version writes are taken (`{"type":"<name>",…}` with `type` first
//! and a numeric `time`). Anything else — another key order, an escaped type name, a `time` that is
//! not a number, a repeated `type`, a typed record whose fields do not fit — answers `None`, and the
//! caller reads the line through [`Record::from_value`], which decides exactly as before. The two
//! paths therefore never disagree: the fast one either produces what the general one would, or
//! declines.

use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

use crate::record::{Record, RecordPayload, is_typed};

/// The record type named at the start of a line written by this version, if the line has that
/// shape (`{"type":"name"` with no escapes in the name).
fn leading_type(line: &[u8]) -> Option<&str> {
    let rest = line.strip_prefix(b"{\"type\":\"")?;
    let end = rest.iter().position(|&b| b == b'"' || b == b'\\')?;
    if rest[end] != b'"' {
        return None;
    }
    std::str::from_utf8(&rest[..end]).ok()
}

/// Whether decoding can trust the line's skipped values. Fields a payload struct does not
/// know are skipped without validation, while the general path parses them (and rejects the
/// line); so lines with what only a full parse would reject take the general path: invalid
/// UTF-8, surrogate escapes (our writer never escapes non-ASCII), and exponents of three or
/// more digits (possibly out of range).
fn values_all_checked(line: &[u8]) -> bool {
    if std::str::from_utf8(line).is_err() {
        return false;
    }
    // One pass: only `\` and `e`/`E` need a closer look.
    let mut i = 0;
    while i < line.len() {
        match line[i] {
            b'\\' => {
                let escape = &line[i + 1..line.len().min(i + 4)];
                if escape.len() == 3
                    && escape[0] == b'u'
                    && (escape[1] | 0x20) == b'd'
                    && matches!(escape[2] | 0x20, b'8'..=b'9' | b'a'..=b'f')
                {
                    return false;
                }
                // Skip the escaped byte so `\\` is not read as the start of another escape.
                i += 2;
                continue;
            }
            b'e' | b'E' if i > 0 && line[i - 1].is_ascii_digit() => {
                let mut j = i + 1;
                if matches!(line.get(j), Some(b'+' | b'-')) {
                    j += 1;
                }
                let digits = line[j.min(line.len())..]
                    .iter()
                    .take_while(|b| b.is_ascii_digit())
                    .count();
                if digits >= 3 {
                    return false;
                }
            }
            _ => {}
        }
        i += 1;
    }
    true
}

impl Record {
    /// Decode a journal line in this version's shape straight from its bytes; `None` when the
    /// line needs the general path ([`Record::from_value`] on the parsed JSON).
    pub fn from_line(line: &[u8]) -> Option<Record> {
        if !values_all_checked(line) {
            return None;
        }
        let name = leading_type(line)?;
        if !is_typed(name) {
            return serde_json::from_slice::<Value>(line)
                .ok()
                .and_then(|value| Record::from_value(value).ok());
        }
        macro_rules! typed {
            ($($name:literal => $variant:ident,)*) => {
                match name {
                    $($name => decode(line).map(|(p, time)| (RecordPayload::$variant(p), time)),)*
                    _ => None,
                }
            };
        }
        let (payload, time) = typed! {
            "metadata" => Metadata,
            "context.append_message" => AppendMessage,
            "context.append_loop_event" => AppendLoopEvent,
            "context.apply_compaction" => ApplyCompaction,
            "context.clear" => ContextClear,
            "context.undo" => ContextUndo,
            "context.undone" => ContextUndone,
            "agent.switched" => AgentSwitched,
            "turn.prompt" => TurnPrompt,
            "turn.steer" => TurnSteer,
            "turn.cancel" => TurnCancel,
            "turn.ended" => TurnEnded,
            "full_compaction.begin" => FullCompactionBegin,
            "full_compaction.complete" => FullCompactionComplete,
            "full_compaction.cancel" => FullCompactionCancel,
            "prompt.accepted" => PromptAccepted,
            "prompt.completed" => PromptCompleted,
            "prompt.aborted" => PromptAborted,
            "prompt.steered" => PromptSteered,
            "token_counting.measured" => TokenMeasured,
            "token_counting.truncated" => TokenTruncated,
            "token_counting.rebased" => TokenRebased,
            "token_counting.turn_recorded" => TokenTurnRecorded,
            "usage.record" => UsageRecord,
            "permission.set_mode" => PermissionSetMode,
            "permission.record_approval_result" => ApprovalResult,
            "interaction.request" => InteractionRequest,
            "interaction.resolved" => InteractionResolved,
            "task.started" => TaskStarted,
            "task.terminated" => TaskTerminated,
            "forked" => Forked,
            "goal.create" => GoalCreate,
            "goal.update" => GoalUpdate,
            "goal.clear" => GoalClear,
            "plan.mode" => PlanMode,
            "prompt.queued" => PromptQueued,
            "prompt.steer" => PromptSteer,
            "profile.bind" => ProfileBind,
            "environment.bind" => EnvironmentBind,
            "cron.add" => CronAdd,
            "cron.delete" => CronDelete,
            "cron.cursor" => CronCursor,
            "todo.set" => TodoSet,
            "checkpoint.step" => CheckpointStep,
            "checkpoint.rewind" => CheckpointRewind,
            "model.set" => ModelSet,
            "flow.update" => FlowUpdate,
        }?;
        Some(Record { payload, time })
    }
}

/// Decode the payload struct `T` from a whole line, taking `type` and `time` out of the object on
/// the way (what `from_value` does by editing the parsed map).
fn decode<T: for<'de> Deserialize<'de>>(line: &[u8]) -> Option<(T, Option<u64>)> {
    let mut de = serde_json::Deserializer::from_slice(line);
    let decoded = LineSeed::<T>(PhantomData).deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(decoded)
}

struct LineSeed<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> DeserializeSeed<'de> for LineSeed<T> {
    type Value = (T, Option<u64>);

    fn deserialize<D: de::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for LineSeed<T> {
    type Value = (T, Option<u64>);

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a journal record object")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        let mut time = None;
        let mut types = 0;
        let payload = T::deserialize(de::value::MapAccessDeserializer::new(WithoutEnvelope {
            inner: map,
            time: &mut time,
            types: &mut types,
        }))?;
        Ok((payload, time))
    }
}

/// The record object as the payload struct sees it: `type` and `time` removed.
struct WithoutEnvelope<'a, A> {
    inner: A,
    time: &'a mut Option<u64>,
    types: &'a mut u32,
}

/// An object key, borrowed from the line when it has no escapes.
enum Key<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl Key<'_> {
    fn as_str(&self) -> &str {
        match self {
            Key::Borrowed(s) => s,
            Key::Owned(s) => s,
        }
    }
}

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key::Borrowed(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key::Owned(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key::Owned(v))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// `time` as `from_value` accepts it: a non-negative integer, or a finite non-negative float
/// (truncated). Anything else is not this version's shape.
fn time_of(value: &Value) -> Option<u64> {
    let Value::Number(n) = value else {
        return None;
    };
    n.as_u64().or_else(|| {
        n.as_f64()
            .filter(|f| f.is_finite() && *f >= 0.0)
            .map(|f| f as u64)
    })
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for WithoutEnvelope<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        loop {
            let Some(key) = self.inner.next_key::<Key<'de>>()? else {
                return Ok(None);
            };
            match key.as_str() {
                "type" => {
                    *self.types += 1;
                    if *self.types > 1 {
                        return Err(de::Error::custom("repeated `type`"));
                    }
                    self.inner.next_value::<IgnoredAny>()?;
                }
                "time" => {
                    let value = self.inner.next_value::<Value>()?;
                    *self.time = Some(
                        time_of(&value).ok_or_else(|| de::Error::custom("`time` not a number"))?,
                    );
                }
                _ => {
                    return match key {
                        Key::Borrowed(s) => seed
                            .deserialize(de::value::BorrowedStrDeserializer::new(s))
                            .map(Some),
                        Key::Owned(s) => seed
                            .deserialize(de::value::StringDeserializer::new(s))
                            .map(Some),
                    };
                }
            }
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.inner.next_value_seed(seed)
    }
}

#[cfg(test)]
#[path = "record_line_tests.rs"]
mod tests;
