//! Placeholder expansion of a skill body: `$<name>`, `$ARGUMENTS[n]`, `$n`, `$ARGUMENTS`,
//! `${KIMI_SKILL_DIR}`, `${KIMI_SESSION_ID}`, and the trailing `ARGUMENTS:` line (§7.1).
//!
//! The passes run in the reference's order, each over the previous pass's output, so a body
//! expands exactly as it did there.

use std::path::Path;

/// Split an argument string like a command line: whitespace separates tokens, single or double
/// quotes group (and are removed). There are no backslash escapes and an unclosed quote runs to
/// the end, so this never fails — the model's `args` must always expand to something.
pub fn tokenize_args(raw: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    // A quoted empty string ('') is still a token.
    let mut has_content = false;
    for ch in raw.chars() {
        if let Some(q) = quote {
            if ch == q {
                quote = None;
            } else {
                current.push(ch);
                has_content = true;
            }
            continue;
        }
        if ch == '"' || ch == '\'' {
            quote = Some(ch);
            has_content = true;
            continue;
        }
        if ch.is_whitespace() {
            if has_content {
                out.push(std::mem::take(&mut current));
                has_content = false;
            }
            continue;
        }
        current.push(ch);
        has_content = true;
    }
    if has_content {
        out.push(current);
    }
    out
}

/// Arguments are user/model text placed inside a prompt that wraps the body in XML-like tags;
/// escaping the angle brackets keeps an argument from closing those tags.
pub(crate) fn escape_xml_tags(input: &str) -> String {
    input.replace('<', "&lt;").replace('>', "&gt;")
}

/// JavaScript's `\w`.
fn is_word(ch: char) -> bool {
    ch.is_ascii_alphanumeric() || ch == '_'
}

fn token_at(tokens: &[String], index: &str) -> String {
    index
        .parse::<usize>()
        .ok()
        .and_then(|i| tokens.get(i))
        .map(|t| escape_xml_tags(t))
        .unwrap_or_default()
}

/// Replace `$<name>` not followed by `[` or a word character.
fn replace_declared(content: &str, name: &str, value: &str) -> String {
    let needle = format!("${name}");
    let mut out = String::with_capacity(content.len());
    let mut rest = content;
    while let Some(pos) = rest.find(&needle) {
        let after = &rest[pos + needle.len()..];
        out.push_str(&rest[..pos]);
        if after.starts_with(|c: char| c == '[' || is_word(c)) {
            out.push_str(&needle);
        } else {
            out.push_str(value);
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// Replace `$ARGUMENTS[<digits>]`.
fn replace_indexed(content: &str, tokens: &[String]) -> String {
    const PREFIX: &str = "$ARGUMENTS[";
    let mut out = String::with_capacity(content.len());
    let mut rest = content;
    while let Some(pos) = rest.find(PREFIX) {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + PREFIX.len()..];
        let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits > 0 && after[digits..].starts_with(']') {
            out.push_str(&token_at(tokens, &after[..digits]));
            rest = &after[digits + 1..];
        } else {
            out.push_str(PREFIX);
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// Replace `$<digits>` when the digits are not followed by a word character.
fn replace_positional(content: &str, tokens: &[String]) -> String {
    let mut out = String::with_capacity(content.len());
    let mut rest = content;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits > 0 && !after[digits..].starts_with(is_word) {
            out.push_str(&token_at(tokens, &after[..digits]));
            rest = &after[digits..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// Expand a skill body with the raw argument string.
pub fn expand_body(
    body: &str,
    raw_args: &str,
    argument_names: &[String],
    skill_dir: &Path,
    session_id: &str,
) -> String {
    let tokens = tokenize_args(raw_args);
    let mut content = body.to_owned();
    for (index, name) in argument_names.iter().enumerate() {
        let value = tokens
            .get(index)
            .map(|t| escape_xml_tags(t))
            .unwrap_or_default();
        content = replace_declared(&content, name, &value);
    }
    content = replace_indexed(&content, &tokens);
    content = replace_positional(&content, &tokens);
    content = content.replace("$ARGUMENTS", &escape_xml_tags(raw_args));

    // "Had a placeholder" is judged by whether anything changed, as the reference does.
    let had_placeholder = content != body;
    let content = content
        .replace("${KIMI_SKILL_DIR}", &skill_dir.display().to_string())
        .replace("${KIMI_SESSION_ID}", session_id);
    if !had_placeholder && !raw_args.is_empty() {
        return format!("{content}\n\nARGUMENTS: {}", escape_xml_tags(raw_args));
    }
    content
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn tokenizer_groups_quotes_and_keeps_empty_quoted_tokens() {
        let cases: &[(&str, &[&str])] = &[
            ("", &[]),
            ("  a  b ", &["a", "b"]),
            (r#"-m "fix bug" x"#, &["-m", "fix bug", "x"]),
            ("'it''s' z", &["its", "z"]),
            ("'' b", &["", "b"]),
            (r#"a"b c"d"#, &["ab cd"]),
            ("\"unclosed quote", &["unclosed quote"]),
            (r"back\slash", &[r"back\slash"]),
        ];
        for (input, want) in cases {
            assert_eq!(tokenize_args(input), *want, "input {input:?}");
        }
    }
}
