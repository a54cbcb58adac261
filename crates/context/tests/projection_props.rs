//! Property tests of the projector over thousands of random histories: interleaved calls,
//! results (real, late, orphaned, duplicated, failed, noted), partial drafts, steers and
//! reminders, blank parts and media.

use std::collections::{HashMap, HashSet};

use kimi_context::projector::{
    Anomaly, MediaPolicy, ProjectionPolicy, StructurePolicy, TOOL_RESULT_UNAVAILABLE, project,
    project_strict, project_with,
};
use kimi_protocol::{ContentPart, MediaUrl, Message, Origin, Role, ToolCall};
use proptest::prelude::*;

const IDS: [&str; 6] = ["a", "b", "c", "d", "e", "f"];

fn text_part() -> impl Strategy<Value = ContentPart> {
    prop_oneof![
        4 => "[a-z ]{1,12}".prop_map(ContentPart::text),
        1 => Just(ContentPart::text("")),
        1 => Just(ContentPart::text("  \n")),
        1 => "[a-z]{0,4}".prop_map(|t| ContentPart::Think { think: t, encrypted: None }),
        1 => (0u8..4).prop_map(|n| ContentPart::Image(MediaUrl { url: format!("data:img{n}"), id: None })),
    ]
}

fn origin() -> impl Strategy<Value = Option<Origin>> {
    prop_oneof![
        3 => Just(Some(Origin::user())),
        1 => Just(None),
        1 => Just(Some(Origin::injection("reminder"))),
    ]
}

fn user_message() -> impl Strategy<Value = Message> {
    (prop::collection::vec(text_part(), 0..3), origin()).prop_map(|(content, origin)| {
        let mut m = Message::new(Role::User, content);
        m.origin = origin;
        m
    })
}

fn assistant_message() -> impl Strategy<Value = Message> {
    (
        prop::collection::vec(text_part(), 0..3),
        prop::collection::vec(prop::sample::select(IDS.to_vec()), 0..3),
        prop::bool::weighted(0.1),
    )
        .prop_map(|(content, ids, partial)| {
            let calls = ids
                .into_iter()
                .map(|id| ToolCall::new(id, "Read", Some("{}".into())))
                .collect();
            let mut m = Message::assistant(content, calls);
            m.partial = partial;
            m
        })
}

fn tool_message() -> impl Strategy<Value = Message> {
    (
        prop::option::weighted(0.95, prop::sample::select(IDS.to_vec())),
        prop::collection::vec(text_part(), 0..3),
        prop::option::of(any::<bool>()),
        prop::option::weighted(0.2, "[a-z]{0,5}"),
    )
        .prop_map(|(id, content, is_error, note)| {
            let mut m = Message::new(Role::Tool, content);
            m.tool_call_id = id.map(str::to_owned);
            m.is_error = is_error;
            m.note = note;
            m
        })
}

fn system_message() -> impl Strategy<Value = Message> {
    "[a-z]{0,6}".prop_map(|t| Message::new(Role::System, vec![ContentPart::text(t)]))
}

fn history() -> impl Strategy<Value = Vec<Message>> {
    prop::collection::vec(
        prop_oneof![
            3 => user_message(),
            3 => assistant_message(),
            4 => tool_message(),
            1 => system_message(),
        ],
        0..40,
    )
}

/// The rules a provider enforces on a request.
fn check_wire_rules(messages: &[Message]) -> Result<(), String> {
    if let Some(first) = messages.first()
        && first.role != Role::User
    {
        return Err(format!("first message is {:?}", first.role));
    }
    let mut seen_calls = HashSet::new();
    let mut expected: Vec<String> = Vec::new();
    let mut previous: Option<Role> = None;
    for (i, m) in messages.iter().enumerate() {
        if m.partial || m.origin.is_some() || m.is_error.is_some() || m.note.is_some() {
            return Err(format!("message {i} carries internal fields"));
        }
        if m.content.is_empty() && m.tool_calls.is_empty() && m.tools.is_none() {
            return Err(format!("message {i} is empty"));
        }
        if m.role == Role::Tool {
            let id = m
                .tool_call_id
                .clone()
                .ok_or(format!("result {i} has no id"))?;
            let pos = expected
                .iter()
                .position(|e| *e == id)
                .ok_or(format!("result {i} ({id}) answers no pending call"))?;
            expected.remove(pos);
        } else {
            if !expected.is_empty() {
                return Err(format!("calls {expected:?} unanswered before message {i}"));
            }
            if m.role == Role::Assistant && previous == Some(Role::Assistant) {
                return Err(format!("assistants {} and {i} are adjacent", i - 1));
            }
            for call in &m.tool_calls {
                if !seen_calls.insert(call.id.clone()) {
                    return Err(format!("call id {} used twice", call.id));
                }
            }
            expected = m.tool_calls.iter().map(|c| c.id.clone()).collect();
        }
        previous = Some(m.role);
    }
    if !expected.is_empty() {
        return Err(format!("calls {expected:?} unanswered at the end"));
    }
    Ok(())
}

fn has_assistant(history: &[Message]) -> bool {
    history
        .iter()
        .any(|m| m.role == Role::Assistant && !m.partial)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn strict_projection_is_always_wire_valid(history in history()) {
        let out = project_strict(&history);
        if let Err(problem) = check_wire_rules(&out.messages) {
            return Err(TestCaseError::fail(format!("{problem}\nhistory: {history:#?}\nout: {:#?}", out.messages)));
        }
        // Media policies only swap parts, so they keep the structure valid too.
        let degraded = project_with(&history, &ProjectionPolicy {
            structure: StructurePolicy::Strict,
            media: MediaPolicy::Degraded,
        });
        prop_assert!(check_wire_rules(&degraded.messages).is_ok());
        let media = degraded.messages.iter().flat_map(|m| &m.content).filter(|p| p.is_media()).count();
        prop_assert!(media <= 2);
    }

    #[test]
    fn projection_never_invents_success(history in history()) {
        let out = project(&history);
        let real: HashSet<&str> = history
            .iter()
            .filter(|m| m.role == Role::Tool && !m.partial)
            .filter_map(|m| m.tool_call_id.as_deref())
            .collect();
        let unavailable = vec![ContentPart::text(TOOL_RESULT_UNAVAILABLE)];
        let mut placeholders = 0usize;
        for m in out.messages.iter().filter(|m| m.role == Role::Tool) {
            let id = m.tool_call_id.as_deref().unwrap_or("");
            if m.content == unavailable {
                placeholders += 1;
            } else if has_assistant(&history) {
                prop_assert!(real.contains(id), "result for {id} is not from history");
            }
        }
        let synthesized = out
            .anomalies
            .iter()
            .filter(|a| matches!(a, Anomaly::ToolResultSynthesized { .. }))
            .count();
        prop_assert_eq!(placeholders, synthesized, "every placeholder is reported");
        // With an assistant present, the normal projection already pairs every call.
        if has_assistant(&history) {
            let mut pending: HashMap<String, usize> = HashMap::new();
            for m in &out.messages {
                if m.role == Role::Tool {
                    let id = m.tool_call_id.clone().unwrap_or_default();
                    let left = pending.get_mut(&id);
                    prop_assert!(left.as_ref().is_some_and(|n| **n > 0), "result {} without a call", id);
                    if let Some(n) = left { *n -= 1; }
                } else {
                    prop_assert!(pending.values().all(|n| *n == 0), "unanswered call");
                    pending.clear();
                    for c in &m.tool_calls { *pending.entry(c.id.clone()).or_default() += 1; }
                }
            }
        }
    }

    #[test]
    fn projection_is_deterministic_and_leaves_history_alone(history in history()) {
        let before = history.clone();
        let first = project(&history);
        let second = project(&history);
        prop_assert_eq!(&first, &second);
        prop_assert_eq!(before, history);
    }
}
