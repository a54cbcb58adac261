//! Answers that outlive a crash. The user's answer to an approval or to AskUserQuestion is
//! journaled (`interaction.resolved`) before the waiting call sees it; if the process dies
//! before that call's result is journaled, the reopened agent gives the call the result the
//! answer decided, once, instead of the generic "interrupted" one:
//! - a rejection: the rejection (with the user's feedback), as if the call had returned;
//! - an approval the executor never took (no `permission.record_approval_result` for the call,
//!   which it journals before running it): it says so — the call did not run, so the model may
//!   call it again; a call whose approval was taken keeps the interrupted result — it may have
//!   run, and running it again could repeat a side effect;
//! - an answer to AskUserQuestion: the answer, matched by the questions it answers.

use std::collections::HashSet;

use kimi_protocol::loop_event::ToolOutput;
use kimi_protocol::{Message, RecordPayload, Role};
use serde_json::Value;

use super::records as rec;

/// What a journal says about the calls its last exchange left unanswered.
#[derive(Debug, Default)]
pub struct Answered {
    /// `interaction.resolved` responses, in journal order.
    resolved: Vec<Value>,
    /// Calls whose approval the executor took (`permission.record_approval_result`, journaled
    /// before it runs the call): from there on the call may have run.
    taken: HashSet<String>,
}

impl Answered {
    pub fn collect<'a>(records: impl IntoIterator<Item = &'a RecordPayload>) -> Self {
        let mut answered = Answered::default();
        for payload in records {
            match payload {
                RecordPayload::InteractionResolved(r) => {
                    answered.resolved.push(r.response.clone());
                }
                RecordPayload::ApprovalResult(a) => {
                    answered.taken.insert(a.tool_call_id.clone());
                }
                _ => {}
            }
        }
        answered
    }

    /// Result records for the `pending` calls of `history`'s last exchange that an answer
    /// decided.
    pub fn results(&self, history: &[Message], pending: &[String]) -> Vec<RecordPayload> {
        if pending.is_empty() || self.resolved.is_empty() {
            return Vec::new();
        }
        let Some(owner) = history
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant && !m.tool_calls.is_empty())
        else {
            return Vec::new();
        };
        let mut used = HashSet::new();
        let mut out = Vec::new();
        for call in owner.tool_calls.iter().filter(|c| pending.contains(&c.id)) {
            if let Some((i, response)) = self.approval(&call.id) {
                used.insert(i);
                if let Some((text, is_error)) = self.approval_result(&call.id, &call.name, response)
                {
                    out.push(result(&call.id, text, is_error));
                }
            } else if call.name == "AskUserQuestion"
                && let Some((i, response)) = self.question(call.arguments.as_deref(), &used)
            {
                used.insert(i);
                let text = response["result"].as_str().unwrap_or_default().to_owned();
                out.push(result(&call.id, text, response["isError"] == true));
            }
        }
        out
    }

    fn approval(&self, call_id: &str) -> Option<(usize, &Value)> {
        self.resolved
            .iter()
            .enumerate()
            .rev()
            .find(|(_, r)| r["kind"] == "approval" && r["toolCallId"] == call_id)
    }

    fn approval_result(
        &self,
        call_id: &str,
        name: &str,
        response: &Value,
    ) -> Option<(String, bool)> {
        // Reviews settle differently (plan mode, goals); their calls keep the interrupted result.
        if name == crate::plan::tools::EXIT_PLAN_MODE || name == crate::goal::CREATE_GOAL {
            return None;
        }
        match response["decision"].as_str() {
            Some("rejected") => Some((
                super::executor::rejection_text(name, response["feedback"].as_str()),
                true,
            )),
            Some("approved") if !self.taken.contains(call_id) => Some((
                format!(
                    "The user approved this \"{name}\" call, but kimi-rs stopped before it ran: it did not run. Call it again if it is still needed."
                ),
                true,
            )),
            _ => None,
        }
    }

    /// The first unused question answer whose questions are the call's.
    fn question(&self, arguments: Option<&str>, used: &HashSet<usize>) -> Option<(usize, &Value)> {
        let args: Value = serde_json::from_str(arguments?).ok()?;
        let asked: Vec<&str> = args["questions"]
            .as_array()?
            .iter()
            .filter_map(|q| q["question"].as_str())
            .collect();
        self.resolved.iter().enumerate().find(|(i, r)| {
            !used.contains(i)
                && r["kind"] == "question"
                && r["questions"].as_array().is_some_and(|qs| {
                    qs.iter()
                        .filter_map(Value::as_str)
                        .eq(asked.iter().copied())
                })
        })
    }
}

fn result(call_id: &str, text: String, is_error: bool) -> RecordPayload {
    rec::tool_result(call_id, ToolOutput::Text(text), is_error, None)
}
