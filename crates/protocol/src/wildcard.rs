//! The one hand-written `*` matcher of the workspace: the literal pieces of a pattern must appear
//! in order, each gap between them matching any run of characters (slashes included). Used for
//! agent-profile tool patterns (`mcp__github__*`), `[tools] enabled/disabled` in config.toml and
//! the conformance placeholders (`<UUID>`); it lives here, in the lowest crate, so every crate
//! can share it. Permission rules use real globs (globset) and hook matchers use regexes.

/// Whether `text` matches `pattern`, where `*` matches any run of characters (possibly empty)
/// and everything else matches literally.
pub fn star_match(pattern: &str, text: &str) -> bool {
    let pieces: Vec<&str> = pattern.split('*').collect();
    pieces_match(&pieces, text, 0)
}

/// Whether `text` is `pieces` in order with a gap of at least `min_gap` characters between
/// consecutive pieces (the first piece is a prefix, the last a suffix). One piece means an
/// exact match.
pub fn pieces_match(pieces: &[&str], text: &str, min_gap: usize) -> bool {
    let Some((first, rest)) = pieces.split_first() else {
        return text.is_empty();
    };
    let Some(mut remaining) = text.strip_prefix(first) else {
        return false;
    };
    let Some((last, middle)) = rest.split_last() else {
        return remaining.is_empty();
    };
    for piece in middle {
        let Some(skipped) = skip_chars(remaining, min_gap) else {
            return false;
        };
        let Some(pos) = skipped.find(piece) else {
            return false;
        };
        remaining = &skipped[pos + piece.len()..];
    }
    // The last piece must end the text and start after the gap.
    skip_chars(remaining, min_gap).is_some_and(|tail| tail.ends_with(last))
}

/// `text` without its first `n` characters, or `None` when it is shorter.
fn skip_chars(text: &str, n: usize) -> Option<&str> {
    match n {
        0 => Some(text),
        _ => text
            .char_indices()
            .nth(n - 1)
            .map(|(i, c)| &text[i + c.len_utf8()..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn star_patterns() {
        let cases: &[(&str, &str, bool)] = &[
            ("", "", true),
            ("", "a", false),
            ("abc", "abc", true),
            ("abc", "abcd", false),
            ("*", "", true),
            ("*", "anything/at all", true),
            ("a*", "a", true),
            ("a*", "abc", true),
            ("a*", "ba", false),
            ("*c", "abc", true),
            ("*c", "cb", false),
            ("a*c", "ac", true),
            ("a*c", "a/b/c", true),
            ("a*b*c", "axbyc", true),
            ("a*b*c", "acb", false),
            ("mcp__github__*", "mcp__github__search", true),
            ("mcp__*__search", "mcp__gitlab__search", true),
            ("mcp__*__search", "mcp__gitlab__list", false),
            ("**", "x", true),
            ("é*ü", "éxü", true),
            ("git status*", "git status --short", true),
            ("git *", "rm -rf /", false),
        ];
        for (pattern, text, expected) in cases {
            assert_eq!(
                star_match(pattern, text),
                *expected,
                "{pattern:?} vs {text:?}"
            );
        }
    }

    #[test]
    fn gaps_of_at_least_one_character() {
        let cases: &[(&[&str], &str, bool)] = &[
            (&["a", ""], "a", false),
            (&["a", ""], "ab", true),
            (&["", "/x/", ".txt"], "/root/x/ab-12.txt", true),
            (&["", "/x/", ".txt"], "/root/y/ab-12.txt", false),
            (&["", "/x/", ".txt"], "/x/.txt", false),
            (&["a", "b"], "ab", false),
            (&["a", "b"], "aéb", true),
            (&["x"], "x", true),
        ];
        for (pieces, text, expected) in cases {
            assert_eq!(
                pieces_match(pieces, text, 1),
                *expected,
                "{pieces:?} vs {text:?}"
            );
        }
    }
}
