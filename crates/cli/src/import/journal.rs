//! Translating one Kimi Code `wire.jsonl` into a kimi-rs journal: the records kimi-rs folds
//! (prompts, messages, tool calls and results, turn ends, compactions, undo, approvals, usage)
//! are re-encoded through kimi-protocol's types; the reference's own bookkeeping (request
//! traces, tool snapshots, UI event mirrors) is dropped and counted. Kimi Code's `profile.bind`
//! keeps its profile name but not its rendered system prompt, so the resumed session renders
//! kimi-rs's own prompt (its tools, its skills) instead of replaying Kimi Code's.

use std::collections::BTreeMap;

use kimi_protocol::record::{Metadata, ProfileBind, Record, RecordError, RecordPayload};
use serde_json::Value;

/// What the translation kept and left out.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Translated {
    /// The translated journal, metadata line first, one JSON object per line.
    pub bytes: Vec<u8>,
    /// Records written after the metadata line.
    pub kept: usize,
    /// Reference-only records left out, by type.
    pub dropped: BTreeMap<String, usize>,
    /// Lines that could not be read (line number and why); left out.
    pub unreadable: Vec<String>,
    /// The text of each `turn.prompt` (first text part), in order.
    pub prompts: Vec<String>,
}

/// Translate the bytes of a Kimi Code journal. Never fails: what cannot be read is reported.
pub fn translate(bytes: &[u8]) -> Translated {
    let mut out = Translated::default();
    let mut records: Vec<Value> = Vec::new();
    let mut created_at = None;
    for line in kimi_store::lines::scan(bytes).lines {
        let value = match line.parsed {
            Ok(value) => value,
            Err(reason) => {
                out.unreadable
                    .push(format!("line {}: {reason}", line.number));
                continue;
            }
        };
        // `profile.bind` names its profile `profileName` in Kimi Code, `profile` in kimi-rs.
        let profile_name = value
            .get("profileName")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let record = match Record::from_value(value) {
            Ok(record) => record,
            Err(RecordError::NotARecord) => {
                out.unreadable
                    .push(format!("line {}: not a journal record", line.number));
                continue;
            }
            Err(err) => {
                out.unreadable.push(format!("line {}: {err}", line.number));
                continue;
            }
        };
        let time = record.time;
        let payload = match record.payload {
            RecordPayload::Metadata(meta) => {
                created_at.get_or_insert(meta.created_at);
                continue;
            }
            RecordPayload::Other(map) => {
                let kind = map
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
                    .to_owned();
                *out.dropped.entry(kind).or_default() += 1;
                continue;
            }
            RecordPayload::ProfileBind(bind) => {
                let profile = bind.profile.or(profile_name);
                if profile.is_none() && bind.profile_file.is_none() {
                    *out.dropped.entry("profile.bind".to_owned()).or_default() += 1;
                    continue;
                }
                RecordPayload::ProfileBind(ProfileBind {
                    profile,
                    profile_file: bind.profile_file,
                    system_prompt: None,
                })
            }
            RecordPayload::TurnPrompt(prompt) => {
                let text = prompt
                    .input
                    .iter()
                    .find_map(|part| match part {
                        kimi_protocol::ContentPart::Text { text } => Some(text.clone()),
                        _ => None,
                    })
                    .unwrap_or_default();
                out.prompts.push(text);
                RecordPayload::TurnPrompt(prompt)
            }
            other => other,
        };
        records.push(
            Record {
                payload,
                time: time.or(created_at),
            }
            .to_value(),
        );
    }
    out.kept = records.len();
    let metadata = Record {
        payload: RecordPayload::Metadata(Metadata::current(created_at.unwrap_or_default())),
        time: None,
    };
    for value in std::iter::once(metadata.to_value()).chain(records) {
        // Serialising a `Value` cannot fail.
        out.bytes
            .extend(serde_json::to_vec(&value).unwrap_or_default());
        out.bytes.push(b'\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"{"type":"metadata","protocol_version":"1.5","created_at":1000}
{"type":"runtime.set_binding","workspaceId":"wd_x","runtimeId":"local","agentId":"main","time":1001}
{"type":"profile.bind","agentId":"main","modelAlias":"m","profileName":"agent","thinkingEffort":"off","systemPrompt":"You are Kimi Code CLI","time":1002}
{"type":"turn.prompt","agentId":"main","input":[{"type":"text","text":"run echo please"}],"origin":{"kind":"user"},"promptId":"p1","turnId":0,"time":1003}
{"type":"context.append_message","agentId":"main","message":{"role":"user","content":[{"type":"text","text":"run echo please"}],"id":"p1","toolCalls":[],"origin":{"kind":"user"}},"time":1004}
{"message":{"message":{"role":"user","content":[]}},"type":"agent.message.appended","time":1005,"kind":"event"}
{"type":"context.append_loop_event","agentId":"main","event":{"type":"tool.call","uuid":"u1","turnId":"0","step":1,"stepUuid":"s1","toolCallId":"call_1","name":"Bash","args":{"command":"echo hi"}},"time":1006}
not json
{"type":"turn.ended","agentId":"main","turnId":0,"reason":"completed","durationMs":480,"time":1007}
"#;

    #[test]
    fn keeps_the_conversation_and_drops_reference_bookkeeping() {
        let t = translate(SAMPLE.as_bytes());
        let lines: Vec<Value> = String::from_utf8(t.bytes.clone())
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let types: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
        assert_eq!(
            types,
            [
                "metadata",
                "profile.bind",
                "turn.prompt",
                "context.append_message",
                "context.append_loop_event",
                "turn.ended"
            ]
        );
        assert_eq!(lines[0]["created_at"], 1000);
        assert_eq!(lines[1]["profile"], "agent");
        assert!(lines[1].get("systemPrompt").is_none(), "{}", lines[1]);
        assert_eq!(lines[4]["event"]["toolCallId"], "call_1");
        assert_eq!(t.kept, 5);
        assert_eq!(t.dropped["runtime.set_binding"], 1);
        assert_eq!(t.dropped["agent.message.appended"], 1);
        assert_eq!(t.unreadable.len(), 1, "{:?}", t.unreadable);
        assert!(t.unreadable[0].starts_with("line 8:"), "{:?}", t.unreadable);
        assert_eq!(t.prompts, ["run echo please"]);
    }
}
