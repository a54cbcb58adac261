//! Session titles the model writes (surface.md §12, the experimental `auto_session_title`
//! flag): after the first completed user turn of a session still titled by its first prompt
//! line, one short tool-less request asks the session's model for a title. Until it answers
//! (and when it fails) the first line stays; a failure is logged and said as a warning. The
//! title is stored in `state.json` as `generated` and announced with `Event::SessionTitle`.

use std::sync::Arc;
use std::time::Duration;

use kimi_llm::{ChatRequest, ModelParams};
use kimi_protocol::message::{ContentPart, Message, Role};
use kimi_protocol::ops::Event;

use super::runtime::Runtime;

/// Longest title kept (characters).
pub const MAX_CHARS: usize = 60;
/// How long the title request may take.
pub const TIMEOUT: Duration = Duration::from_secs(30);

const SYSTEM: &str = "You name conversations. Reply with a title of at most six words for the \
conversation below: plain text on one line, no quotes, no trailing punctuation.";

fn text_of(message: &Message) -> String {
    message
        .content
        .iter()
        .filter_map(ContentPart::as_text)
        .collect::<Vec<_>>()
        .join("")
}

fn clip(text: &str, chars: usize) -> String {
    text.chars().take(chars).collect()
}

/// The model's answer as a title: its first non-empty line, quotes and trailing dots gone.
pub fn clean(answer: &str) -> Option<String> {
    let line = answer.lines().map(str::trim).find(|l| !l.is_empty())?;
    let line = line
        .trim_start_matches(['"', '\'', '`', '#', '*'])
        .trim_end_matches(['"', '\'', '`', '.', '*'])
        .trim();
    let line = line.strip_prefix("Title:").map_or(line, str::trim);
    (!line.is_empty()).then(|| clip(line, MAX_CHARS))
}

/// Start the title request when the session wants one (called after a completed user turn).
pub fn after_turn(rt: &Arc<Runtime>) {
    let Some(meta) = rt.config.session_meta.clone() else {
        return;
    };
    if !meta.wants_generated_title() {
        return;
    }
    let (prompt, answer) = {
        let log = rt.log();
        let messages = log.history().messages();
        let prompt = messages
            .iter()
            .find(|m| m.role == Role::User)
            .map(text_of)
            .unwrap_or_default();
        let answer = messages
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant && !text_of(m).trim().is_empty())
            .map(text_of)
            .unwrap_or_default();
        (prompt, answer)
    };
    if prompt.trim().is_empty() {
        return;
    }
    let conversation = format!(
        "User: {}\n\nAssistant: {}",
        clip(&prompt, 2000),
        clip(&answer, 2000)
    );
    let request = ChatRequest {
        params: ModelParams {
            max_tokens: Some(64),
            ..ModelParams::default()
        },
        cache_key: Some(rt.config.session_id.clone()),
        ..ChatRequest::new(SYSTEM, vec![Message::user_text(conversation)])
    };
    let provider = rt.config.model.get().provider.clone();
    let events = rt.link().clone();
    let task = tokio::spawn(async move {
        let outcome =
            tokio::time::timeout(TIMEOUT, kimi_llm::complete(provider.as_ref(), request)).await;
        let failure = match outcome {
            Ok(Ok(done)) => match clean(&text_of(&done.message)) {
                Some(title) => match meta.set_generated_title(&title) {
                    Ok(true) => {
                        tracing::info!(title, "session title generated");
                        events.emit(Event::SessionTitle {
                            title: Some(title),
                            changed: true,
                        });
                        return;
                    }
                    // The user named the session meanwhile: their title stays.
                    Ok(false) => return,
                    Err(err) => err,
                },
                None => "the model answered without a title".to_owned(),
            },
            Ok(Err(err)) => err.to_string(),
            Err(_) => format!("no answer within {} s", TIMEOUT.as_secs()),
        };
        tracing::warn!("could not generate the session title: {failure}");
        events.emit(Event::Warning {
            message: format!(
                "could not generate a title for this session ({failure}); it keeps its first prompt line"
            ),
        });
    });
    rt.shared().title_task = Some(task);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_become_clean_titles() {
        assert_eq!(
            clean("\"Fix the login bug.\"\n").as_deref(),
            Some("Fix the login bug")
        );
        assert_eq!(
            clean("\n  Title: Rust parser  \n more").as_deref(),
            Some("Rust parser")
        );
        assert_eq!(clean("  \n"), None);
        assert_eq!(
            clean(&"x".repeat(100)).map(|t| t.chars().count()),
            Some(MAX_CHARS)
        );
    }
}
