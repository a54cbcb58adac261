//! Unit tests of the projector beyond the conformance cases.

use kimi_protocol::{ContentPart, MediaUrl, Message, Role, ToolCall};
use pretty_assertions::assert_eq;

use super::*;

fn user(text: &str) -> Message {
    Message::user_text(text)
}

fn assistant_calls(ids: &[&str]) -> Message {
    Message::assistant(
        vec![],
        ids.iter()
            .map(|id| ToolCall::new(*id, "Read", Some("{}".into())))
            .collect(),
    )
}

fn result(id: &str, text: &str) -> Message {
    Message::tool_result(id, vec![ContentPart::text(text)], None)
}

fn image(url: &str) -> ContentPart {
    ContentPart::Image(MediaUrl {
        url: url.into(),
        id: None,
    })
}

#[test]
fn wire_messages_carry_no_internal_fields() {
    let mut failed = result("c", "boom");
    failed.is_error = Some(true);
    failed.note = Some("N".into());
    failed.id = Some("m1".into());
    let out = project(&[user("go"), assistant_calls(&["c"]), failed]);
    let mut want = Message::new(
        Role::Tool,
        vec![ContentPart::text(format!(
            "{}\nboom\nN",
            crate::render::TOOL_ERROR
        ))],
    );
    want.tool_call_id = Some("c".into());
    assert_eq!(out.messages.get(2), Some(&want));
    assert!(out.messages.iter().all(|m| m.origin.is_none()));
}

#[test]
fn whitespace_parts_are_reported_and_removed() {
    let mut msg = Message::assistant(
        vec![
            ContentPart::text("  "),
            ContentPart::text("answer"),
            ContentPart::text(""),
        ],
        vec![],
    );
    msg.name = Some("bot".into());
    let out = project(&[user("q"), msg]);
    assert_eq!(
        out.anomalies,
        vec![Anomaly::WhitespaceTextDropped {
            role: Role::Assistant
        }]
    );
    assert_eq!(
        out.messages.get(1).map(|m| m.content.clone()),
        Some(vec![ContentPart::text("answer")])
    );
}

#[test]
fn repeated_id_within_one_message_is_closed_and_strict_keeps_one() {
    let history = [
        user("go"),
        assistant_calls(&["c", "c"]),
        result("c", "real"),
    ];
    let strict = project_strict(&history);
    assert_eq!(
        strict.messages,
        vec![
            Message::new(Role::User, vec![ContentPart::text("go")]),
            {
                let mut a = assistant_calls(&["c"]);
                a.origin = None;
                a
            },
            result("c", "real"),
        ]
    );
}

#[test]
fn strict_drops_results_that_answer_no_call_in_sizing_mode() {
    let out = project_strict(&[user("go"), result("c1", "x")]);
    assert_eq!(
        out.messages,
        vec![Message::new(Role::User, vec![ContentPart::text("go")])]
    );
    assert_eq!(
        out.anomalies,
        vec![Anomaly::OrphanToolResultDropped {
            tool_call_id: "c1".into()
        }]
    );
}

#[test]
fn degraded_keeps_the_two_newest_media_parts() {
    let mut first = Message::new(Role::User, vec![image("a"), image("b")]);
    first.origin = None;
    let second = Message::new(Role::User, vec![image("c")]);
    let policy = ProjectionPolicy {
        structure: StructurePolicy::Normal,
        media: MediaPolicy::Degraded,
    };
    let out = project_with(&[first, second], &policy);
    assert_eq!(out.media_replaced, 1);
    assert_eq!(
        out.messages
            .iter()
            .flat_map(|m| m.content.clone())
            .collect::<Vec<_>>(),
        vec![ContentPart::text(IMAGE_DEGRADED), image("b"), image("c")]
    );
}

#[test]
fn strip_keeps_media_added_after_the_snapshot_or_with_a_new_id() {
    let old = Message::new(Role::User, vec![image("a")]);
    let snapshot = media_snapshot(std::slice::from_ref(&old));
    let reuploaded = Message::new(
        Role::User,
        vec![ContentPart::Image(MediaUrl {
            url: "a".into(),
            id: Some("new".into()),
        })],
    );
    let fresh = Message::new(Role::User, vec![image("z")]);
    let policy = ProjectionPolicy {
        structure: StructurePolicy::Normal,
        media: MediaPolicy::Strip(snapshot),
    };
    let out = project_with(&[old, reuploaded.clone(), fresh.clone()], &policy);
    assert_eq!(out.media_replaced, 1);
    assert_eq!(
        out.messages,
        vec![
            Message::new(Role::User, vec![ContentPart::text(IMAGE_STRIPPED)]),
            reuploaded,
            fresh
        ]
    );
}

#[test]
fn policy_escalates_step_by_step_then_gives_up() {
    let history = [Message::new(Role::User, vec![image("a")])];
    let none = ProjectionPolicy::default();
    let degraded =
        next_projection_policy_for_error(&none, RequestErrorClass::RequestTooLarge, &history);
    assert_eq!(
        degraded.as_ref().and_then(ProjectionPolicy::name),
        Some("media-degraded")
    );
    let degraded = degraded.unwrap_or_default();
    let stripped =
        next_projection_policy_for_error(&degraded, RequestErrorClass::RequestTooLarge, &history)
            .unwrap_or_default();
    assert_eq!(stripped.name(), Some("media-stripped"));
    assert_eq!(
        next_projection_policy_for_error(&stripped, RequestErrorClass::RequestTooLarge, &history),
        None
    );
    let strict = next_projection_policy_for_error(
        &stripped,
        RequestErrorClass::RecoverableStructure,
        &history,
    )
    .unwrap_or_default();
    assert_eq!(strict.name(), Some("strict-media-stripped"));
    assert_eq!(
        next_projection_policy_for_error(
            &strict,
            RequestErrorClass::RecoverableStructure,
            &history
        ),
        None
    );
    for class in [
        RequestErrorClass::Aborted,
        RequestErrorClass::ContextOverflow,
        RequestErrorClass::Other,
    ] {
        assert_eq!(
            next_projection_policy_for_error(&none, class, &history),
            None
        );
    }
    assert_eq!(
        next_projection_policy_for_error(&none, RequestErrorClass::ImageFormat, &history)
            .as_ref()
            .and_then(ProjectionPolicy::name),
        Some("media-stripped")
    );
}

#[test]
fn turn_memory_restarts_each_turn_and_ignores_older_turns() {
    let mut memory = TurnProjectionMemory::default();
    let degraded = ProjectionPolicy {
        structure: StructurePolicy::Strict,
        media: MediaPolicy::Degraded,
    };
    memory.record(3, &degraded);
    assert_eq!(memory.initial_policy(3).name(), Some("media-degraded"));
    assert_eq!(memory.initial_policy(4).name(), None);
    memory.record(4, &ProjectionPolicy::default());
    memory.record(3, &degraded);
    assert_eq!(memory.initial_policy(4).name(), None);
    assert_eq!(memory.initial_policy(3).name(), None);
}

#[test]
fn reporter_logs_each_distinct_defect_once_until_clean() {
    let mut reporter = RepairReporter::default();
    let orphan = Anomaly::OrphanToolResultDropped {
        tool_call_id: "x".into(),
    };
    let trailing = Anomaly::ToolResultSynthesized {
        tool_call_id: "t".into(),
        trailing: true,
    };
    assert_eq!(reporter.observe(std::slice::from_ref(&trailing)), None);
    let first = reporter.observe(&[orphan.clone(), trailing.clone()]);
    assert_eq!(
        first,
        Some(RepairReport {
            signature: "orphan_tool_result_dropped:x".into(),
            counts: vec![("orphan_tool_result_dropped", 1)],
            tool_call_ids: vec!["x".into()],
        })
    );
    assert_eq!(reporter.observe(std::slice::from_ref(&orphan)), None);
    assert_eq!(reporter.observe(&[]), None);
    assert!(reporter.observe(&[orphan]).is_some());
}
