//! The incremental projection ([`ProjectionCache`]) against the full one: equal for random
//! histories however they grow, are cut back, or are edited.

use kimi_protocol::{ContentPart, Message, Origin, Role, ToolCall};
use proptest::prelude::*;

use super::*;

/// One random message. Ids come from a small pool so calls repeat, results go astray and
/// exchanges overlap; prompts are mergeable or not, text may be blank, and a message may be
/// partial (skipped) or declare tools.
fn message() -> impl Strategy<Value = Message> {
    let id = prop::sample::select(vec!["a", "b", "c", "d"]);
    let text = prop::sample::select(vec!["x", "", "  ", "hello"]);
    let user = (text.clone(), any::<bool>()).prop_map(|(text, typed)| {
        let mut m = Message::user_text(text);
        if typed {
            m.origin = Some(Origin::user());
        }
        m
    });
    let calls = (text.clone(), prop::collection::vec(id.clone(), 0..3)).prop_map(|(text, ids)| {
        let content = if text.is_empty() {
            Vec::new()
        } else {
            vec![ContentPart::text(text)]
        };
        let calls = ids
            .into_iter()
            .map(|id| ToolCall::new(id, "Read", Some("{}".into())))
            .collect();
        Message::assistant(content, calls)
    });
    let result = (id, text, any::<bool>()).prop_map(|(id, text, error)| {
        Message::tool_result(id, vec![ContentPart::text(text)], error.then_some(true))
    });
    let message = prop_oneof![3 => user, 4 => calls, 4 => result];
    (message, 0u8..20).prop_map(|(mut m, odd)| {
        match odd {
            0 => m.partial = true,
            1 => m.tools = Some(Vec::new()),
            _ => {}
        }
        m
    })
}

fn history(max: usize) -> impl Strategy<Value = Vec<Message>> {
    prop::collection::vec(message(), 0..max)
}

fn assert_equal(cache: &ProjectionCache, history: &[Message]) -> Result<(), TestCaseError> {
    let full = project(history);
    let shared = cache.project_with(history, &ProjectionPolicy::default());
    prop_assert_eq!(shared.to_messages(), full.messages);
    prop_assert_eq!(shared.anomalies, full.anomalies);
    prop_assert_eq!(shared.media_replaced, 0);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// A history that only grows: every request, at whatever length, equals the full
    /// projection.
    #[test]
    fn growing_history_projects_as_a_whole(
        messages in history(40),
        cuts in prop::collection::vec(0usize..40, 1..8),
    ) {
        let cache = ProjectionCache::default();
        let mut lengths: Vec<usize> = cuts.into_iter().map(|c| c.min(messages.len())).collect();
        lengths.sort_unstable();
        lengths.push(messages.len());
        for length in lengths {
            assert_equal(&cache, &messages[..length])?;
        }
    }

    /// Edits: the history is cut back to `keep` and continued differently (an undo, a
    /// compaction, a settled step); after `invalidate(keep)` the projection is still right.
    #[test]
    fn edited_history_projects_as_a_whole(
        first in history(30),
        edits in prop::collection::vec((0usize..30, history(12)), 1..6),
    ) {
        let mut cache = ProjectionCache::default();
        let mut current = first;
        assert_equal(&cache, &current)?;
        for (keep, tail) in edits {
            let keep = keep.min(current.len());
            current.truncate(keep);
            current.extend(tail);
            cache.invalidate(keep);
            assert_equal(&cache, &current)?;
        }
    }

    /// An edit of one message in place (a partial assistant sealed, content streamed into it)
    /// reported at its index.
    #[test]
    fn a_message_changed_in_place_is_reprojected(
        mut messages in history(30),
        at in 0usize..30,
        replacement in message(),
    ) {
        let mut cache = ProjectionCache::default();
        assert_equal(&cache, &messages)?;
        if let Some(slot) = messages.get_mut(at) {
            *slot = replacement;
            cache.invalidate(at);
        }
        assert_equal(&cache, &messages)?;
    }
}

#[test]
fn other_policies_project_the_whole_history() {
    let messages = vec![
        Message::user_text("go"),
        Message::assistant(
            vec![],
            vec![
                ToolCall::new("a", "Read", Some("{}".into())),
                ToolCall::new("a", "Read", Some("{}".into())),
            ],
        ),
        Message::tool_result("a", vec![ContentPart::text("one")], None),
    ];
    let cache = ProjectionCache::default();
    let strict = ProjectionPolicy::strict();
    let shared = cache.project_with(&messages, &strict);
    let full = project_with(&messages, &strict);
    assert_eq!(shared.to_messages(), full.messages);
    assert_eq!(shared.anomalies, full.anomalies);
}

#[test]
fn a_long_run_of_steps_reuses_the_head() {
    // The engine's shape: each request sees the last exchange answered and a fresh partial
    // assistant; only that tail is projected again.
    let mut cache = ProjectionCache::default();
    let mut messages = vec![Message::user_text("go")];
    for step in 0..50 {
        let id = format!("call_{step}");
        messages.push(Message::assistant(
            vec![],
            vec![ToolCall::new(&id, "Read", Some("{}".into()))],
        ));
        messages.push(Message::tool_result(
            &id,
            vec![ContentPart::text("ok")],
            None,
        ));
        let mut open = Message::assistant(vec![], vec![]);
        open.partial = true;
        messages.push(open);
        let shared = cache.project_with(&messages, &ProjectionPolicy::default());
        assert_eq!(shared.to_messages(), project(&messages).messages);
        let head = cache.0.lock().map(|h| h.history).unwrap_or(0);
        assert_eq!(
            head,
            messages.len() - 1,
            "the head reaches the open assistant"
        );
        // The step settles: the partial assistant is dropped (it carried nothing).
        messages.pop();
        cache.invalidate(messages.len());
    }
    assert_eq!(Role::User, project(&messages).messages[0].role);
}
