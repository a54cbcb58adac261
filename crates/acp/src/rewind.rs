//! `/rewind [N] [files|conversation] [force]` typed in the editor: the engine's `Op::Rewind`
//! (ACP has no rewind request of its own). The report comes back as the agent's message.

use kimi_protocol::checkpoint::{RewindReport, RewindScope};

/// The slash command as advertised to the editor.
pub const COMMAND: (&str, &str) = (
    "rewind",
    "Undo the last turns: the files the agent changed and the conversation (/rewind [N] [files|conversation] [force])",
);

/// The rewind a prompt asks for, `None` when it is not `/rewind`; `Err` names a bad argument.
pub fn parse(text: &str) -> Option<Result<(u32, RewindScope, bool), String>> {
    let rest = text.trim().strip_prefix("/rewind")?;
    if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let (mut turns, mut scope, mut force) = (1u32, RewindScope::Both, false);
    for word in rest.split_whitespace() {
        match word {
            "files" => scope = RewindScope::Files,
            "conversation" => scope = RewindScope::Conversation,
            "force" => force = true,
            n => match n.parse::<u32>() {
                Ok(n) if n > 0 => turns = n,
                _ => {
                    return Some(Err(format!(
                        "/rewind takes a number of turns, `files` or `conversation`, and `force`; not `{n}`"
                    )));
                }
            },
        }
    }
    Some(Ok((turns, scope, force)))
}

/// The report in words, for the agent's message.
pub fn summary(report: &RewindReport) -> String {
    let mut out = String::new();
    if !report.applied {
        out.push_str(
            "Nothing was rewound: these files changed outside the agent since its checkpoint:\n",
        );
        for c in &report.conflicts {
            out.push_str(&format!("- {} ({})\n", c.path, c.reason));
        }
        out.push_str("Send `/rewind ");
        out.push_str(&format!("{} force` to overwrite them.", report.turns));
        return out;
    }
    out.push_str(&format!("Rewound {} turn(s).", report.turns));
    if report.scope.files() {
        out.push_str(&format!(" Restored {} file(s):\n", report.restored.len()));
        for p in &report.restored {
            out.push_str(&format!("- {p}\n"));
        }
    }
    for u in &report.unrestorable {
        out.push_str(&format!("Not restored: {} ({})\n", u.path, u.reason));
    }
    if report.conversation_undone {
        out.push_str("The model no longer sees those turns.");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_arguments() {
        assert_eq!(parse("hello"), None);
        assert_eq!(parse("/rewinder"), None);
        assert_eq!(parse("/rewind"), Some(Ok((1, RewindScope::Both, false))));
        assert_eq!(
            parse("/rewind 2 files force"),
            Some(Ok((2, RewindScope::Files, true)))
        );
        assert!(matches!(parse("/rewind zero"), Some(Err(_))));
    }
}
