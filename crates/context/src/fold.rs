//! The loop-event fold (core.md §a.5): turns the five journaled loop events and appended
//! messages into history, in place, at a cost proportional to the event rather than the history.
//!
//! The fold state lives beside the messages (see [`crate::history::History`]); [`FoldState`]
//! only remembers where the open step's assistant sits, which calls still wait for a result,
//! and which messages are held back until they do.

use kimi_protocol::loop_event::{
    ContentPartEvent, StepBegin, StepEnd, ToolCallEvent, ToolResultEvent,
};
use kimi_protocol::{ContentPart, INTERRUPTED_TOOL_RESULT, LoopEvent, Message, Role, ToolCall};
use serde_json::Value;

/// The lowest history index an operation touched: everything before it is unchanged, everything
/// from it on (including the length) may differ. Incremental consumers (projection caches, token
/// counting, UI splices) restart from here instead of from zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Change {
    pub from: usize,
}

impl Change {
    fn at(from: usize) -> Option<Change> {
        Some(Change { from })
    }

    /// The earlier of two optional changes.
    pub fn merge(a: Option<Change>, b: Option<Change>) -> Option<Change> {
        match (a, b) {
            (Some(x), Some(y)) => Some(Change {
                from: x.from.min(y.from),
            }),
            (x, None) => x,
            (None, y) => y,
        }
    }
}

/// The step whose assistant message is still `partial`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct OpenStep {
    /// Index of the partial assistant in history.
    index: usize,
    /// `None` = "unbound": recovered from a history this fold did not produce; it binds to the
    /// first step uuid an event names (rule 9).
    uuid: Option<String>,
    has_tool_calls: bool,
    /// True until a non-vacuous part arrives (rule 8).
    vacuous: bool,
}

/// Fold bookkeeping that is not visible in the messages themselves.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FoldState {
    open: Option<OpenStep>,
    /// Unanswered call ids of the open step, in call order (synthesized results follow it).
    /// A step rarely has more than a handful of calls, so a vector beats a hash set here.
    pending: Vec<String>,
    /// Messages appended while results were pending; they join history when the exchange
    /// closes (rule 6). Never persisted: replaying the same records re-defers them.
    deferred: Vec<Message>,
}

impl FoldState {
    /// Rebuild the state from a history this fold did not produce (rule 9): the last partial
    /// message is the open assistant (unbound), its calls without a later tool message are
    /// pending. Deferred messages cannot be recovered.
    pub fn recover(messages: &[Message]) -> FoldState {
        let Some(index) = messages.iter().rposition(|m| m.partial) else {
            return FoldState::default();
        };
        let open_msg = &messages[index];
        let answered: std::collections::HashSet<&str> = messages[index + 1..]
            .iter()
            .filter(|m| m.role == Role::Tool)
            .filter_map(|m| m.tool_call_id.as_deref())
            .collect();
        let mut pending: Vec<String> = Vec::new();
        for call in &open_msg.tool_calls {
            if !answered.contains(call.id.as_str()) && !pending.contains(&call.id) {
                pending.push(call.id.clone());
            }
        }
        FoldState {
            open: Some(OpenStep {
                index,
                uuid: None,
                has_tool_calls: !open_msg.tool_calls.is_empty(),
                vacuous: open_msg.content.iter().all(ContentPart::is_vacuous),
            }),
            pending,
            deferred: Vec::new(),
        }
    }

    /// Ids of calls still waiting for their result, in call order.
    pub fn pending_tool_calls(&self) -> &[String] {
        &self.pending
    }

    /// Messages held back until the pending results arrive.
    pub fn deferred(&self) -> &[Message] {
        &self.deferred
    }

    /// Index of the open (partial) assistant, if a step is open.
    pub fn open_index(&self) -> Option<usize> {
        self.open.as_ref().map(|o| o.index)
    }

    /// The open step's uuid; `None` when no step is open or the open step is still unbound.
    pub fn open_step_uuid(&self) -> Option<&str> {
        self.open.as_ref().and_then(|o| o.uuid.as_deref())
    }

    /// Rule 6: append now, or hold back while tool results are pending.
    pub fn append_message(
        &mut self,
        history: &mut Vec<Message>,
        message: Message,
    ) -> Option<Change> {
        if self.pending.is_empty() {
            history.push(message);
            Change::at(history.len() - 1)
        } else {
            self.deferred.push(message);
            None
        }
    }

    /// Fold one loop event into `history`.
    pub fn apply_event(&mut self, history: &mut Vec<Message>, event: LoopEvent) -> Option<Change> {
        match event {
            LoopEvent::StepBegin(begin) => self.step_begin(history, begin),
            LoopEvent::ContentPart(part) => self.content_part(history, part),
            LoopEvent::ToolCall(call) => self.tool_call(history, call),
            LoopEvent::ToolResult(result) => self.tool_result(history, result),
            LoopEvent::StepEnd(end) => self.step_end(history, end),
        }
    }

    /// Rule 1: settle whatever is open, then open a fresh partial assistant.
    fn step_begin(&mut self, history: &mut Vec<Message>, begin: StepBegin) -> Option<Change> {
        let settled = self.settle(history);
        let mut assistant = Message::assistant(Vec::new(), Vec::new());
        assistant.partial = true;
        history.push(assistant);
        let index = history.len() - 1;
        self.open = Some(OpenStep {
            index,
            uuid: Some(begin.uuid),
            has_tool_calls: false,
            vacuous: true,
        });
        Change::merge(settled, Change::at(index))
    }

    /// The open step if `step_uuid` names it; an unbound open step adopts the uuid.
    fn bind_open(&mut self, step_uuid: String) -> Option<&mut OpenStep> {
        let open = self.open.as_mut()?;
        match &open.uuid {
            Some(uuid) if *uuid == step_uuid => {}
            Some(_) => return None,
            None => open.uuid = Some(step_uuid),
        }
        Some(open)
    }

    /// Rule 2.
    fn content_part(&mut self, history: &mut [Message], event: ContentPartEvent) -> Option<Change> {
        let open = self.bind_open(event.step_uuid)?;
        let message = history.get_mut(open.index)?;
        open.vacuous &= event.part.is_vacuous();
        message.content.push(event.part);
        Change::at(open.index)
    }

    /// Rule 3: history keeps the re-serialised parsed arguments, not the provider's raw text.
    fn tool_call(&mut self, history: &mut [Message], event: ToolCallEvent) -> Option<Change> {
        let open = self.bind_open(event.step_uuid)?;
        let index = open.index;
        let message = history.get_mut(index)?;
        open.has_tool_calls = true;
        let mut call = ToolCall::new(
            event.tool_call_id.clone(),
            event.name,
            event.args.as_ref().map(js_stringify),
        );
        call.extras = event.extras;
        message.tool_calls.push(call);
        if !self.pending.contains(&event.tool_call_id) {
            self.pending.push(event.tool_call_id);
        }
        Change::at(index)
    }

    /// Rule 4: only a pending call's first result counts; held messages flush after the last.
    fn tool_result(
        &mut self,
        history: &mut Vec<Message>,
        event: ToolResultEvent,
    ) -> Option<Change> {
        let position = self
            .pending
            .iter()
            .position(|id| *id == event.tool_call_id)?;
        self.pending.remove(position);
        let result = event.result;
        let mut message = Message::tool_result(
            event.tool_call_id,
            result.output.into_parts(),
            result.is_error,
        );
        message.note = result.note;
        history.push(message);
        let from = history.len() - 1;
        self.flush(history);
        Change::at(from)
    }

    /// Rule 5: an interrupted or failed step stays open until the next `step.begin`.
    fn step_end(&mut self, history: &mut Vec<Message>, end: StepEnd) -> Option<Change> {
        if end.leaves_step_open() {
            return None;
        }
        let settled = self.settle(history);
        let before = history.len();
        self.flush(history);
        Change::merge(
            settled,
            (history.len() > before).then_some(Change { from: before }),
        )
    }

    /// Rule 7: close every pending call with the interrupted result, flush held messages, then
    /// drop the open assistant if it carries nothing, else seal it.
    fn settle(&mut self, history: &mut Vec<Message>) -> Option<Change> {
        let mut change = None;
        if !self.pending.is_empty() {
            change = Change::at(history.len());
            for id in std::mem::take(&mut self.pending) {
                history.push(interrupted_result(id));
            }
            self.flush(history);
        }
        let open = self.open.take()?;
        // A history edited underneath the fold (it should not be) must not make us touch the
        // wrong message: only a message that is still partial is the open assistant.
        if !history.get(open.index).is_some_and(|m| m.partial) {
            return change;
        }
        if !open.has_tool_calls && open.vacuous {
            history.remove(open.index);
        } else {
            history[open.index].partial = false;
        }
        Change::merge(change, Change::at(open.index))
    }

    fn flush(&mut self, history: &mut Vec<Message>) {
        if self.pending.is_empty() && !self.deferred.is_empty() {
            history.append(&mut self.deferred);
        }
    }
}

/// The error tool message that closes a call whose result never arrived.
pub fn interrupted_result(tool_call_id: impl Into<String>) -> Message {
    Message::tool_result(
        tool_call_id,
        vec![ContentPart::text(INTERRUPTED_TOOL_RESULT)],
        Some(true),
    )
}

/// One operation of a fold: an appended message or a loop event.
#[derive(Debug, Clone, PartialEq)]
pub enum FoldOp {
    AppendMessage(Message),
    LoopEvent(LoopEvent),
}

/// Fold `ops` onto `initial` (recovering the fold state from it first): the pure form of
/// [`crate::history::History`], for tests and tools.
pub fn fold(initial: Vec<Message>, ops: impl IntoIterator<Item = FoldOp>) -> Vec<Message> {
    let mut state = FoldState::recover(&initial);
    let mut history = initial;
    for op in ops {
        match op {
            FoldOp::AppendMessage(message) => state.append_message(&mut history, message),
            FoldOp::LoopEvent(event) => state.apply_event(&mut history, event),
        };
    }
    history
}

/// `JSON.stringify` of a parsed value: what the reference stores as a call's arguments.
/// serde_json agrees with it except for numbers, where JavaScript has a single number type:
/// `1.0` prints as `1` and exponents carry a sign (`1e+21`).
pub fn js_stringify(value: &Value) -> String {
    let mut out = String::new();
    write_js(value, &mut out);
    out
}

fn write_js(value: &Value, out: &mut String) {
    match value {
        Value::Null | Value::Bool(_) | Value::String(_) => out.push_str(&value.to_string()),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => out.push_str(&js_number(f)),
            Some(_) | None => out.push_str(&n.to_string()),
        },
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_js(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_js(item, out);
            }
            out.push('}');
        }
    }
}

fn js_number(f: f64) -> String {
    if !f.is_finite() {
        // JSON has no infinities; JSON.stringify writes null.
        return "null".to_owned();
    }
    if f.fract() == 0.0 && f.abs() < 1e21 {
        // Exact: every integral f64 below 1e21 fits an i128. `-0` prints as `0` in JS.
        return format!("{}", f as i128);
    }
    let text = serde_json::Number::from_f64(f).map_or_else(|| "null".to_owned(), |n| n.to_string());
    match text.split_once('e') {
        Some((mantissa, exp)) if !exp.starts_with(['-', '+']) => format!("{mantissa}e+{exp}"),
        Some(_) | None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kimi_protocol::loop_event::{ToolOutput, ToolResultPayload};
    use pretty_assertions::assert_eq;
    use proptest::prelude::*;
    use serde_json::json;

    fn ev(v: Value) -> LoopEvent {
        serde_json::from_value(v).unwrap()
    }

    fn begin(uuid: &str) -> LoopEvent {
        ev(json!({"type": "step.begin", "uuid": uuid}))
    }

    fn end(uuid: &str, reason: Option<&str>) -> LoopEvent {
        match reason {
            Some(r) => ev(json!({"type": "step.end", "uuid": uuid, "finishReason": r})),
            None => ev(json!({"type": "step.end", "uuid": uuid})),
        }
    }

    fn text(step: &str, t: &str) -> LoopEvent {
        ev(json!({"type": "content.part", "stepUuid": step, "part": {"type": "text", "text": t}}))
    }

    fn call(step: &str, id: &str) -> LoopEvent {
        ev(
            json!({"type": "tool.call", "stepUuid": step, "toolCallId": id, "name": "T", "args": {}}),
        )
    }

    fn result(id: &str) -> LoopEvent {
        LoopEvent::ToolResult(ToolResultEvent {
            tool_call_id: id.to_owned(),
            result: ToolResultPayload {
                output: ToolOutput::Text(format!("out {id}")),
                is_error: None,
                note: None,
                duration_ms: None,
            },
            parent_uuid: None,
        })
    }

    #[test]
    fn parts_for_another_step_are_ignored() {
        let out = fold(
            Vec::new(),
            [
                begin("s1"),
                text("s2", "stray"),
                text("s1", "mine"),
                end("s1", None),
            ]
            .map(FoldOp::LoopEvent),
        );
        assert_eq!(
            out,
            vec![Message::assistant(vec![ContentPart::text("mine")], vec![])]
        );
    }

    #[test]
    fn a_user_message_during_a_text_only_step_lands_after_the_open_assistant() {
        // Nothing is pending, so the message is not held: it goes after the partial assistant,
        // which is sealed in place later.
        let mut state = FoldState::default();
        let mut h = Vec::new();
        state.apply_event(&mut h, begin("s1"));
        state.apply_event(&mut h, text("s1", "a"));
        state.append_message(&mut h, Message::user_text("steer"));
        state.apply_event(&mut h, text("s1", "b"));
        state.apply_event(&mut h, end("s1", None));
        assert_eq!(
            h,
            vec![
                Message::assistant(vec![ContentPart::text("a"), ContentPart::text("b")], vec![]),
                Message::user_text("steer"),
            ]
        );
    }

    #[test]
    fn recovery_counts_only_unanswered_calls_as_pending() {
        let mut open = Message::assistant(
            vec![],
            vec![ToolCall::new("a", "T", None), ToolCall::new("b", "T", None)],
        );
        open.partial = true;
        let answered = Message::tool_result("a", vec![ContentPart::text("x")], None);
        let state = FoldState::recover(&[Message::user_text("go"), open, answered]);
        assert_eq!(state.pending_tool_calls(), ["b".to_owned()]);
        assert_eq!(state.open_index(), Some(1));
        assert_eq!(state.open_step_uuid(), None);
    }

    #[test]
    fn a_second_result_for_the_same_call_is_ignored() {
        let out = fold(
            Vec::new(),
            [
                begin("s"),
                call("s", "c"),
                result("c"),
                result("c"),
                end("s", None),
            ]
            .map(FoldOp::LoopEvent),
        );
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn arguments_are_stringified_like_javascript() {
        assert_eq!(
            js_stringify(&json!({"b": 1.0, "a": [1.5, -0.0, "x"]})),
            r#"{"b":1,"a":[1.5,0,"x"]}"#
        );
        assert_eq!(js_stringify(&json!(1e21)), "1e+21");
        assert_eq!(
            js_stringify(&json!({"q": "moon \"x\""})),
            r#"{"q":"moon \"x\""}"#
        );
    }

    #[test]
    fn absent_args_are_stored_as_null_arguments() {
        let out = fold(
            Vec::new(),
            [
                begin("s"),
                ev(json!({"type": "tool.call", "stepUuid": "s", "toolCallId": "c", "name": "T"})),
                result("c"),
                end("s", None),
            ]
            .map(FoldOp::LoopEvent),
        );
        assert_eq!(out[0].tool_calls[0].arguments, None);
        // An explicit null is a value: JSON.stringify(null) is "null".
        let out = fold(
            Vec::new(),
            [
                begin("s"),
                ev(json!({"type": "tool.call", "stepUuid": "s", "toolCallId": "c", "name": "T", "args": null})),
            ]
            .map(FoldOp::LoopEvent),
        );
        assert_eq!(out[0].tool_calls[0].arguments.as_deref(), Some("null"));
    }

    /// A compact alphabet of fold operations for property tests; call ids are minted in order
    /// and results pick one of the ids minted so far.
    #[derive(Debug, Clone)]
    enum Op {
        Begin(u8),
        Text(u8, bool),
        Call(u8),
        Result(usize),
        End(u8, u8),
        Append,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0u8..3).prop_map(Op::Begin),
            ((0u8..3), any::<bool>()).prop_map(|(s, blank)| Op::Text(s, blank)),
            (0u8..3).prop_map(Op::Call),
            (0usize..8).prop_map(Op::Result),
            ((0u8..3), (0u8..4)).prop_map(|(s, r)| Op::End(s, r)),
            Just(Op::Append),
        ]
    }

    fn to_fold_op(op: &Op, minted: &mut Vec<String>) -> FoldOp {
        let step = |s: &u8| format!("s{s}");
        FoldOp::LoopEvent(match op {
            Op::Begin(s) => begin(&step(s)),
            Op::Text(s, blank) => text(&step(s), if *blank { " " } else { "t" }),
            Op::Call(s) => {
                let id = format!("c{}", minted.len());
                minted.push(id.clone());
                call(&step(s), &id)
            }
            Op::Result(k) => match minted.get(k % minted.len().max(1)) {
                Some(id) => result(id),
                None => result("ghost"),
            },
            Op::End(s, r) => end(
                &step(s),
                [None, Some("interrupted"), Some("error"), Some("stop")][*r as usize],
            ),
            Op::Append => return FoldOp::AppendMessage(Message::user_text("u")),
        })
    }

    fn apply(state: &mut FoldState, h: &mut Vec<Message>, op: FoldOp) -> Option<Change> {
        match op {
            FoldOp::AppendMessage(m) => state.append_message(h, m),
            FoldOp::LoopEvent(e) => state.apply_event(h, e),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn fold_invariants_hold(ops in prop::collection::vec(op(), 0..40)) {
            let mut state = FoldState::default();
            let mut h: Vec<Message> = Vec::new();
            let mut minted = Vec::new();
            let mut appended = 0usize;
            for op in &ops {
                if matches!(op, Op::Append) {
                    appended += 1;
                }
                let before = h.clone();
                let change = apply(&mut state, &mut h, to_fold_op(op, &mut minted));
                // The reported change is honest: nothing before it moved.
                match change {
                    None => prop_assert_eq!(&before, &h),
                    Some(c) => prop_assert_eq!(&before[..c.from.min(before.len())], &h[..c.from.min(h.len())]),
                }
                // At most one partial message, and it is the one the state points at.
                let partials: Vec<usize> = h.iter().enumerate().filter(|(_, m)| m.partial).map(|(i, _)| i).collect();
                prop_assert!(partials.len() <= 1);
                prop_assert_eq!(partials.first().copied(), state.open_index());
                // Recovery from the produced history agrees on what is pending.
                let recovered = FoldState::recover(&h);
                prop_assert_eq!(recovered.pending_tool_calls(), state.pending_tool_calls());
            }
            // Settle everything: no call stays unanswered and no held message is lost.
            apply(&mut state, &mut h, FoldOp::LoopEvent(begin("final")));
            apply(&mut state, &mut h, FoldOp::LoopEvent(end("final", None)));
            prop_assert!(state.pending_tool_calls().is_empty());
            prop_assert!(state.deferred().is_empty());
            prop_assert!(h.iter().all(|m| !m.partial));
            prop_assert_eq!(h.iter().filter(|m| m.role == Role::User).count(), appended);
            for (i, m) in h.iter().enumerate() {
                for c in &m.tool_calls {
                    let answers = h[i + 1..].iter().filter(|t| t.tool_call_id.as_deref() == Some(c.id.as_str())).count();
                    prop_assert_eq!(answers, 1, "call {} answered {} times", c.id, answers);
                }
                if m.role == Role::Tool {
                    let id = m.tool_call_id.as_deref();
                    prop_assert!(h[..i].iter().any(|a| a.tool_calls.iter().any(|c| Some(c.id.as_str()) == id)));
                }
            }
        }
    }
}
