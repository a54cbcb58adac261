//! The compaction handoff (core.md §d.5–§d.6, core-2.1.md §3): what history looks like after a
//! full compaction — `[kept user messages (head, elision note, tail)] + [summary message]` — and
//! the exact model-facing texts around it.
//!
//! Beyond the reference, [`KeptUserPolicy::KeepLatestVerbatim`] (the default) never truncates
//! the latest real user instruction, and the summary can carry a recovery footer that points
//! back at the journal lines the compaction replaced.

use kimi_protocol::origin::KnownOrigin;
use kimi_protocol::{ContentPart, Message, Origin, Role};

use crate::tokens;

/// Budget for the user messages kept verbatim across a compaction.
pub const COMPACT_USER_MESSAGE_MAX_TOKENS: u64 = 20_000;
/// Part of that budget reserved for the oldest user input (the original task statement).
pub const COMPACT_USER_MESSAGE_HEAD_TOKENS: u64 = 2_000;
/// Injection variant of the note that marks elided user messages.
pub const COMPACTION_ELISION_VARIANT: &str = "compaction_elision";
/// Injection variant of the 2.1 "continue the work" reminder after the summary.
pub const COMPACTION_CONTINUATION_VARIANT: &str = "compaction_continuation";

/// Model-facing preamble of every compaction summary.
pub const COMPACTION_SUMMARY_PREFIX: &str = "The conversation so far has been compacted to free up context. What follows is your own working summary of this task \u{2014} use it to continue your train of thought rather than starting over. Treat it as notes, not proof: where it says a step was done, tests passed, or a fix worked, verify that yourself before relying on it. Any user messages earlier in this context are preserved verbatim from the compacted conversation; where a system-reminder note among them marks an omitted middle section, the user messages it replaced are covered by this summary.";

/// What an empty summary is replaced with.
pub const EMPTY_SUMMARY_TEXT: &str = "(no summary available)";

/// `<system-reminder>` wrapper used for engine notes (inner text trimmed).
pub fn wrap_system_reminder(text: &str) -> String {
    format!("<system-reminder>\n{}\n</system-reminder>", text.trim())
}

/// How compaction weighs messages. Budgets are in these units; the default is the heuristic
/// estimator of [`crate::tokens`], tests and planners may substitute their own weights.
pub trait TokenEstimate {
    fn text(&self, text: &str) -> u64;
    fn message(&self, message: &Message) -> u64;
    fn messages(&self, messages: &[Message]) -> u64 {
        messages.iter().map(|m| self.message(m)).sum()
    }
}

/// The reference's heuristic estimator (core.md §d.2).
#[derive(Debug, Clone, Copy, Default)]
pub struct HeuristicEstimate;

impl TokenEstimate for HeuristicEstimate {
    fn text(&self, text: &str) -> u64 {
        tokens::estimate_text(text)
    }

    fn message(&self, message: &Message) -> u64 {
        tokens::estimate_message(message)
    }
}

/// Does a user message survive compaction?
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    Keep,
    Drop,
}

/// Real user input survives (absent origin = legacy prompt, `user`, a `/skill` or `/plugin`
/// the user typed); everything the engine generated is covered by the summary instead.
pub fn user_message_disposition(origin: Option<&Origin>) -> Disposition {
    let Some(origin) = origin else {
        return Disposition::Keep;
    };
    let keep = match origin {
        Origin::Known(known) => match known {
            KnownOrigin::User { .. } => true,
            KnownOrigin::SkillActivation { .. } | KnownOrigin::PluginCommand { .. } => {
                origin.is_user_slash()
            }
            KnownOrigin::Injection { .. }
            | KnownOrigin::ShellCommand { .. }
            | KnownOrigin::CompactionSummary
            | KnownOrigin::SystemTrigger { .. }
            | KnownOrigin::Task { .. }
            | KnownOrigin::CronJob { .. }
            | KnownOrigin::CronMissed { .. }
            | KnownOrigin::HookResult { .. }
            | KnownOrigin::Retry { .. } => false,
        },
        // An origin kept verbatim because a field did not parse: judge it by its kind.
        Origin::Other(_) => match origin.kind() {
            "user" => true,
            "skill_activation" | "plugin_command" => crate::undo::is_user_slash(origin),
            _ => false,
        },
    };
    if keep {
        Disposition::Keep
    } else {
        Disposition::Drop
    }
}

pub fn is_real_user_input(message: &Message) -> bool {
    message.role == Role::User
        && user_message_disposition(message.origin.as_ref()) == Disposition::Keep
}

fn is_compaction_summary(message: &Message) -> bool {
    message
        .origin
        .as_ref()
        .is_some_and(Origin::is_compaction_summary)
}

/// The user messages compaction may keep, oldest first. Older summaries never survive: the new
/// summary supersedes them.
pub fn compactable_user_messages(history: &[Message]) -> Vec<&Message> {
    history
        .iter()
        .filter(|m| is_real_user_input(m) && !is_compaction_summary(m))
        .collect()
}

/// What to do with the latest user instruction when the kept-user budget overflows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KeptUserPolicy {
    /// Keep it whole, whatever it costs: the current task must survive compaction word for
    /// word. Older messages share what is left of the budget.
    #[default]
    KeepLatestVerbatim,
    /// Kimi Code's behaviour: the latest message is cut to its last characters like any other.
    Reference,
}

/// Which user messages survive, split around the elision point.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct UserSelection {
    pub head: Vec<Message>,
    pub tail: Vec<Message>,
    pub elided: bool,
    pub omitted_tokens: u64,
}

/// Keep everything if it fits `max_tokens`; otherwise keep the newest messages within
/// `max_tokens - head_tokens` (cutting the boundary message to its end) and the oldest within
/// `head_tokens` (cutting the boundary message to its start), and report what was dropped.
pub fn select_user_messages(
    candidates: &[&Message],
    max_tokens: u64,
    head_tokens: u64,
    estimate: &dyn TokenEstimate,
    policy: KeptUserPolicy,
) -> UserSelection {
    let weights: Vec<u64> = candidates.iter().map(|m| estimate.message(m)).collect();
    let total: u64 = weights.iter().sum();
    if total <= max_tokens {
        return UserSelection {
            tail: candidates.iter().map(|m| (*m).clone()).collect(),
            ..UserSelection::default()
        };
    }
    let head_budget = head_tokens.min(max_tokens);
    let mut tail_remaining = max_tokens - head_budget;
    let mut tail: Vec<Message> = Vec::new();
    let mut head_end = candidates.len();
    let mut boundary_prefix: Option<Message> = None;

    let mut newest_first = candidates.iter().zip(&weights).enumerate().rev().peekable();
    if policy == KeptUserPolicy::KeepLatestVerbatim
        && let Some((i, (message, weight))) = newest_first.next()
    {
        tail.push((*message).clone());
        tail_remaining = tail_remaining.saturating_sub(*weight);
        head_end = i;
    }
    for (i, (message, weight)) in newest_first {
        if tail_remaining == 0 {
            break;
        }
        head_end = i;
        if *weight <= tail_remaining {
            tail.push((*message).clone());
            tail_remaining -= weight;
            continue;
        }
        let full = text_of(message);
        let kept = suffix_within_tokens(&full, tail_remaining);
        let dropped = &full[..full.len() - kept.len()];
        if !dropped.is_empty() {
            boundary_prefix = Some(with_text(message, dropped.to_owned()));
        }
        tail.push(with_text(message, kept.to_owned()));
        break;
    }
    tail.reverse();

    let mut head: Vec<Message> = Vec::new();
    let mut head_remaining = head_budget;
    let head_candidates = candidates[..head_end]
        .iter()
        .map(|m| (*m).clone())
        .chain(boundary_prefix);
    for message in head_candidates {
        if head_remaining == 0 {
            break;
        }
        let weight = estimate.message(&message);
        if weight <= head_remaining {
            head_remaining -= weight;
            head.push(message);
            continue;
        }
        let full = text_of(&message);
        let kept = prefix_within_tokens(&full, head_remaining).to_owned();
        head.push(with_text(&message, kept));
        break;
    }

    // Keeping the latest message whole can leave everything kept after all (a small first
    // prompt and one huge instruction): then there is nothing to mark as omitted.
    let nothing_cut = head.len() + tail.len() == candidates.len()
        && head
            .iter()
            .chain(&tail)
            .zip(candidates)
            .all(|(kept, original)| kept == *original);
    if policy == KeptUserPolicy::KeepLatestVerbatim && nothing_cut {
        head.extend(tail);
        return UserSelection {
            tail: head,
            ..UserSelection::default()
        };
    }
    let kept = estimate.messages(&head) + estimate.messages(&tail);
    UserSelection {
        head,
        tail,
        elided: true,
        omitted_tokens: total.saturating_sub(kept),
    }
}

/// Concatenated text parts (media and thinking are not carried into a truncated copy).
fn text_of(message: &Message) -> String {
    message
        .content
        .iter()
        .filter_map(ContentPart::as_text)
        .collect()
}

/// A copy of `message` with one text part and no tool calls; other fields stay.
fn with_text(message: &Message, text: String) -> Message {
    let mut copy = message.clone();
    copy.content = vec![ContentPart::Text { text }];
    copy.tool_calls = Vec::new();
    copy
}

/// Running heuristic estimate (ceil(ascii/4) + non-ascii) over characters.
#[derive(Default)]
struct Counter {
    ascii: u64,
    other: u64,
}

impl Counter {
    fn add(&mut self, c: char) -> u64 {
        if c.is_ascii() {
            self.ascii += 1;
        } else {
            self.other += 1;
        }
        self.ascii.div_ceil(4) + self.other
    }
}

/// The longest prefix whose text estimate fits `max_tokens`.
fn prefix_within_tokens(text: &str, max_tokens: u64) -> &str {
    let mut counter = Counter::default();
    for (i, c) in text.char_indices() {
        if counter.add(c) > max_tokens {
            return &text[..i];
        }
    }
    text
}

/// The longest suffix whose text estimate fits `max_tokens`.
fn suffix_within_tokens(text: &str, max_tokens: u64) -> &str {
    let mut counter = Counter::default();
    let mut start = text.len();
    for (i, c) in text.char_indices().rev() {
        if counter.add(c) > max_tokens {
            break;
        }
        start = i;
    }
    &text[start..]
}

/// Text of the note that stands in for elided user messages.
pub fn elision_text(omitted_tokens: u64) -> String {
    wrap_system_reminder(&format!(
        "Some of this conversation's user messages were omitted here during compaction: the messages above this note are the oldest user input, the messages below are the most recent, and roughly {omitted_tokens} tokens in between were dropped. The omitted content is covered by the compaction summary at the end of the conversation."
    ))
}

fn injection_message(variant: &str, text: String) -> Message {
    let mut message = Message::new(Role::User, vec![ContentPart::text(text)]);
    message.origin = Some(Origin::injection(variant));
    message
}

pub fn elision_message(omitted_tokens: u64) -> Message {
    injection_message(COMPACTION_ELISION_VARIANT, elision_text(omitted_tokens))
}

/// The 2.1 reminder that follows the summary so the model resumes instead of waiting.
pub fn continuation_message() -> Message {
    injection_message(
        COMPACTION_CONTINUATION_VARIANT,
        wrap_system_reminder(
            "Context compaction is complete \u{2014} continue the work that was in progress when it began.",
        ),
    )
}

/// The user-role message that carries the summary.
pub fn summary_message(context_summary: &str) -> Message {
    let mut message = Message::new(Role::User, vec![ContentPart::text(context_summary)]);
    message.origin = Some(Origin::Known(KnownOrigin::CompactionSummary));
    message
}

/// `prefix + "\n" + trimmed summary`, then, when given, a blank line and the recovery footer.
pub fn build_compaction_summary_text(summary: &str, recovery_footer: Option<&str>) -> String {
    let body = summary.trim();
    let body = if body.is_empty() {
        EMPTY_SUMMARY_TEXT
    } else {
        body
    };
    match recovery_footer.map(str::trim_end).filter(|f| !f.is_empty()) {
        Some(footer) => format!("{COMPACTION_SUMMARY_PREFIX}\n{body}\n\n{footer}"),
        None => format!("{COMPACTION_SUMMARY_PREFIX}\n{body}"),
    }
}

/// What a compaction result (live) or a `context.apply_compaction` record (replay) says.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ShapeInput {
    /// The model's summary as written (without prefix).
    pub summary: String,
    /// The legacy record shape stored the whole summary message; it is reused verbatim.
    pub legacy_summary_message: Option<Message>,
    /// The model-facing summary text; `summary` when absent.
    pub context_summary: Option<String>,
    pub compacted_count: usize,
    pub tokens_before: u64,
    pub tokens_after: Option<u64>,
    pub summary_output_tokens: Option<u64>,
    pub request_overhead_tokens: Option<u64>,
    pub kept_user_message_count: Option<usize>,
    pub kept_head_user_message_count: Option<usize>,
    pub dropped_count: Option<u64>,
    /// Append the 2.1 continuation reminder after the summary.
    pub has_continuation: bool,
    /// Old layout: `[summary, …history[compacted_count..]]`.
    pub legacy_tail: bool,
    /// Appended to the summary message after a blank line (live compaction only: a recorded
    /// `context_summary` already contains it, so replay leaves this empty).
    pub recovery_footer: Option<String>,
}

/// History after a compaction, and the numbers recorded with it.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionShape {
    pub summary: String,
    pub context_summary: String,
    pub compacted_count: usize,
    pub tokens_before: u64,
    pub tokens_after: u64,
    pub kept_user_message_count: usize,
    pub kept_head_user_message_count: Option<usize>,
    pub dropped_count: Option<u64>,
    pub has_continuation: bool,
    pub messages: Vec<Message>,
}

/// Rebuild history after a compaction of `history`.
pub fn build_compaction_shape(
    history: &[Message],
    input: &ShapeInput,
    estimate: &dyn TokenEstimate,
    policy: KeptUserPolicy,
) -> CompactionShape {
    let mut context_summary = input
        .context_summary
        .clone()
        .unwrap_or_else(|| input.summary.clone());
    if let Some(footer) = input.recovery_footer.as_deref().map(str::trim_end)
        && !footer.is_empty()
    {
        context_summary = format!("{context_summary}\n\n{footer}");
    }

    if input.legacy_tail {
        let mut messages =
            Vec::with_capacity(1 + history.len().saturating_sub(input.compacted_count));
        messages.push(
            input
                .legacy_summary_message
                .clone()
                .unwrap_or_else(|| summary_message(&context_summary)),
        );
        messages.extend(history.iter().skip(input.compacted_count).cloned());
        return CompactionShape {
            summary: input.summary.clone(),
            context_summary,
            compacted_count: input.compacted_count,
            tokens_before: input.tokens_before,
            tokens_after: input
                .tokens_after
                .unwrap_or_else(|| estimate.messages(&messages)),
            kept_user_message_count: 0,
            kept_head_user_message_count: None,
            dropped_count: input.dropped_count,
            has_continuation: false,
            messages,
        };
    }

    let candidates = compactable_user_messages(history);
    let selection = select_user_messages(
        &candidates,
        COMPACT_USER_MESSAGE_MAX_TOKENS,
        COMPACT_USER_MESSAGE_HEAD_TOKENS,
        estimate,
        policy,
    );
    let head_count = selection.head.len();
    let kept_count = head_count + selection.tail.len();
    let mut messages = selection.head;
    if selection.elided {
        messages.push(elision_message(selection.omitted_tokens));
    }
    messages.extend(selection.tail);
    let continuation = input.has_continuation.then(continuation_message);
    let tokens_after = input.tokens_after.unwrap_or_else(|| {
        input.request_overhead_tokens.unwrap_or(0)
            + input
                .summary_output_tokens
                .unwrap_or_else(|| estimate.text(&context_summary))
            + estimate.messages(&messages)
            + continuation.as_ref().map_or(0, |m| estimate.message(m))
    });
    messages.push(summary_message(&context_summary));
    messages.extend(continuation);
    CompactionShape {
        summary: input.summary.clone(),
        context_summary,
        compacted_count: input.compacted_count,
        tokens_before: input.tokens_before,
        tokens_after,
        kept_user_message_count: input.kept_user_message_count.unwrap_or(kept_count),
        kept_head_user_message_count: input
            .kept_head_user_message_count
            .or(selection.elided.then_some(head_count)),
        dropped_count: input.dropped_count,
        has_continuation: input.has_continuation,
        messages,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn user(text: &str) -> Message {
        Message::user_text(text)
    }

    #[test]
    fn the_latest_instruction_survives_verbatim_even_when_it_overflows_the_budget() {
        let big = "x".repeat(100_000); // 25,001 tokens on its own
        let history = vec![user("first task"), user(&"y".repeat(80_000)), user(&big)];
        let input = ShapeInput {
            summary: "S".into(),
            compacted_count: 3,
            ..ShapeInput::default()
        };
        let ours = build_compaction_shape(
            &history,
            &input,
            &HeuristicEstimate,
            KeptUserPolicy::default(),
        );
        let texts: Vec<String> = ours.messages.iter().map(Message::text).collect();
        assert_eq!(texts.len(), 5, "head (2), elision, latest, summary");
        assert_eq!(texts[0], "first task");
        assert_eq!(
            texts[1].len(),
            4 * 1996,
            "the head budget left after the first message"
        );
        assert!(texts[2].contains("tokens in between were dropped"));
        assert_eq!(texts[3], big);
        assert_eq!(ours.kept_head_user_message_count, Some(2));

        let reference = build_compaction_shape(
            &history,
            &input,
            &HeuristicEstimate,
            KeptUserPolicy::Reference,
        );
        let cut = reference
            .messages
            .iter()
            .rev()
            .nth(1)
            .map(Message::text)
            .unwrap_or_default();
        assert_eq!(
            cut.len(),
            72_000,
            "reference keeps only the last 18,000 tokens"
        );
    }

    #[test]
    fn no_elision_note_when_keeping_the_latest_whole_drops_nothing() {
        let big = "x".repeat(100_000);
        let history = vec![user("first task"), user(&big)];
        let candidates: Vec<&Message> = history.iter().collect();
        let sel = select_user_messages(
            &candidates,
            20_000,
            2_000,
            &HeuristicEstimate,
            KeptUserPolicy::default(),
        );
        assert_eq!(
            sel,
            UserSelection {
                tail: history.clone(),
                ..UserSelection::default()
            }
        );
    }

    #[test]
    fn the_recovery_footer_follows_the_summary_after_a_blank_line() {
        let text = build_compaction_summary_text(
            " did things \n",
            Some("## Context Recovery\n  /x/wire.jsonl\n"),
        );
        assert!(text.starts_with(COMPACTION_SUMMARY_PREFIX));
        assert!(text.ends_with("\ndid things\n\n## Context Recovery\n  /x/wire.jsonl"));
        assert_eq!(
            build_compaction_summary_text("  ", None),
            format!("{COMPACTION_SUMMARY_PREFIX}\n{EMPTY_SUMMARY_TEXT}")
        );
        let shape = build_compaction_shape(
            &[user("u")],
            &ShapeInput {
                summary: "S".into(),
                recovery_footer: Some("F".into()),
                has_continuation: true,
                ..ShapeInput::default()
            },
            &HeuristicEstimate,
            KeptUserPolicy::default(),
        );
        let texts: Vec<String> = shape.messages.iter().map(Message::text).collect();
        assert_eq!(texts[..2], ["u".to_owned(), "S\n\nF".to_owned()]);
        assert!(texts[2].contains("Context compaction is complete"));
    }

    #[test]
    fn engine_messages_and_old_summaries_are_dropped() {
        let mut reminder = user("r");
        reminder.origin = Some(Origin::injection("x"));
        let old_summary = summary_message("old");
        let legacy = Message::new(Role::User, vec![ContentPart::text("legacy")]);
        let history = [reminder, old_summary, legacy.clone(), user("now")];
        let kept: Vec<&Message> = compactable_user_messages(&history);
        assert_eq!(kept, vec![&legacy, &history[3]]);
    }

    fn kept_text_tokens(messages: &[Message]) -> u64 {
        messages
            .iter()
            .map(|m| tokens::estimate_text(&m.text()))
            .sum()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

        #[test]
        fn selection_respects_budgets_order_and_the_latest_instruction(
            sizes in proptest::collection::vec(0usize..100_000, 1..12),
            wide in proptest::prelude::any::<bool>(),
        ) {
            let history: Vec<Message> = sizes
                .iter()
                .enumerate()
                .map(|(i, n)| user(&format!("{i}:{}", if wide { "中".repeat(n / 4) } else { "x".repeat(*n) })))
                .collect();
            let candidates: Vec<&Message> = history.iter().collect();
            for policy in [KeptUserPolicy::Reference, KeptUserPolicy::KeepLatestVerbatim] {
                let sel = select_user_messages(&candidates, 20_000, 2_000, &HeuristicEstimate, policy);
                let total: u64 = candidates.iter().map(|m| tokens::estimate_message(m)).sum();
                if !sel.elided {
                    // Everything kept whole: because it fits, or (our policy) because only the
                    // latest instruction overflowed and nothing else had to go.
                    proptest::prop_assert!(total <= 20_000 || policy == KeptUserPolicy::KeepLatestVerbatim);
                    proptest::prop_assert_eq!(&sel.tail, &history);
                    continue;
                }
                proptest::prop_assert!(kept_text_tokens(&sel.head) <= 2_000);
                let latest = history.last().map(Message::text).unwrap_or_default();
                let kept_latest = sel.tail.last().map(Message::text).unwrap_or_default();
                match policy {
                    KeptUserPolicy::Reference => {
                        proptest::prop_assert!(kept_text_tokens(&sel.tail) <= 18_000);
                        proptest::prop_assert!(latest.ends_with(&kept_latest));
                    }
                    KeptUserPolicy::KeepLatestVerbatim => proptest::prop_assert_eq!(&kept_latest, &latest),
                }
                // Kept pieces stay oldest first; only the message split between the tail and
                // the head appears twice (its start in the head, its end in the tail).
                let index_of = |m: &Message| m.text().split(':').next().and_then(|i| i.parse::<usize>().ok());
                let order: Vec<usize> = sel.head.iter().chain(&sel.tail).filter_map(index_of).collect();
                proptest::prop_assert!(order.windows(2).all(|w| w[0] <= w[1]), "{:?}", order);
                let kept = tokens::estimate_messages(sel.head.iter().chain(&sel.tail));
                proptest::prop_assert_eq!(sel.omitted_tokens, total.saturating_sub(kept));
            }
        }
    }

    #[test]
    fn truncation_keeps_whole_characters() {
        assert_eq!(prefix_within_tokens("abcd中文", 2), "abcd中");
        assert_eq!(suffix_within_tokens("中文abcd", 2), "文abcd");
        assert_eq!(suffix_within_tokens("😀😀", 1), "😀");
        assert_eq!(prefix_within_tokens("", 3), "");
    }
}
