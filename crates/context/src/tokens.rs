//! Token estimator (core.md §d.2): a cheap, provider-independent guess used for compaction
//! triggers and budgets wherever the provider has not measured the real count.

use kimi_protocol::{ContentPart, Message, ToolSchema};

/// What one image, audio or video part is assumed to cost.
pub const MEDIA_TOKEN_ESTIMATE: u64 = 2000;

/// `ceil(ascii / 4) + non_ascii`, counted in code points (so an emoji is one token).
pub fn estimate_text(text: &str) -> u64 {
    let mut ascii: u64 = 0;
    let mut non_ascii: u64 = 0;
    for &b in text.as_bytes() {
        if b < 0x80 {
            ascii += 1;
        } else if b & 0xC0 != 0x80 {
            // A UTF-8 leading byte starts one non-ASCII code point.
            non_ascii += 1;
        }
    }
    ascii.div_ceil(4) + non_ascii
}

pub fn estimate_part(part: &ContentPart) -> u64 {
    match part {
        ContentPart::Text { text } => estimate_text(text),
        ContentPart::Think { think, .. } => estimate_text(think),
        ContentPart::Image(_) | ContentPart::Audio(_) | ContentPart::Video(_) => {
            MEDIA_TOKEN_ESTIMATE
        }
    }
}

/// Role name + parts + for each call its name and the JSON string encoding of its raw
/// arguments (`"null"` when absent); every term rounded up on its own.
pub fn estimate_message(message: &Message) -> u64 {
    let mut total = estimate_text(message.role.as_str());
    total += message.content.iter().map(estimate_part).sum::<u64>();
    for call in &message.tool_calls {
        total += estimate_text(&call.name);
        total += match &call.arguments {
            Some(args) => estimate_text(&serde_json::Value::String(args.clone()).to_string()),
            None => estimate_text("null"),
        };
    }
    total
}

pub fn estimate_messages<'a>(messages: impl IntoIterator<Item = &'a Message>) -> u64 {
    messages.into_iter().map(estimate_message).sum()
}

/// Per-message estimates of a history's leading messages, kept between steps so the
/// per-step compaction check costs what changed rather than the whole history (a 1,000-step
/// turn would otherwise re-read every earlier message on every step).
///
/// The owner truncates it from the first changed index on every mutation; the estimates are
/// filled in lazily when asked for. It is a cache, not state: clones may start empty and two
/// caches always compare equal.
#[derive(Default)]
pub struct EstimateCache(std::sync::Mutex<Vec<u64>>);

impl EstimateCache {
    /// Forget the estimates of `messages[from..]`.
    pub fn invalidate(&mut self, from: usize) {
        let estimates = self
            .0
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        estimates.truncate(from);
    }

    /// The estimate of all of `messages`, computing only those not yet cached.
    pub fn total(&self, messages: &[Message]) -> u64 {
        // A poisoned lock only means another thread panicked mid-fill; the vector is still a
        // valid prefix of estimates.
        let mut estimates = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        estimates.truncate(messages.len());
        let known = estimates.len();
        estimates.extend(messages[known..].iter().map(estimate_message));
        estimates.iter().sum()
    }
}

impl Clone for EstimateCache {
    fn clone(&self) -> Self {
        let estimates = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        EstimateCache(std::sync::Mutex::new(estimates.clone()))
    }
}

impl PartialEq for EstimateCache {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for EstimateCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EstimateCache")
    }
}

/// Name + description + JSON of the parameter schema, per tool.
pub fn estimate_tools(tools: &[ToolSchema]) -> u64 {
    tools
        .iter()
        .map(|t| {
            estimate_text(&t.name)
                + estimate_text(&t.description)
                + estimate_text(&crate::fold::js_stringify(&t.parameters))
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kimi_protocol::{Role, ToolCall};
    use proptest::prelude::*;

    #[test]
    fn weights_match_the_reference() {
        for (text, want) in [
            ("", 0),
            ("abcd", 1),
            ("中文", 2),
            ("ab中", 2),
            ("aaaa中中中", 4),
            ("😀", 1),
        ] {
            assert_eq!(estimate_text(text), want, "{text:?}");
        }
        let mut msg = Message::new(Role::Assistant, vec![ContentPart::text("hi")]);
        msg.tool_calls = vec![ToolCall::new(
            "c",
            "Bash",
            Some(r#"{"command":"ls"}"#.into()),
        )];
        assert_eq!(estimate_message(&msg), 11);
    }

    proptest! {
        #[test]
        fn matches_a_char_by_char_count(s in ".*") {
            let ascii = s.chars().filter(char::is_ascii).count() as u64;
            let other = s.chars().count() as u64 - ascii;
            prop_assert_eq!(estimate_text(&s), ascii.div_ceil(4) + other);
        }
    }
}
