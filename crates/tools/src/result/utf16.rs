//! Character counts as the reference measures them: UTF-16 code units (JavaScript string
//! length), cutting only at char boundaries.

pub fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

/// The longest prefix of `s` holding at most `units` UTF-16 code units.
pub fn utf16_prefix(s: &str, units: usize) -> &str {
    let mut used = 0;
    for (idx, ch) in s.char_indices() {
        used += ch.len_utf16();
        if used > units {
            return &s[..idx];
        }
    }
    s
}

/// The longest suffix of `s` holding at most `units` UTF-16 code units.
pub fn utf16_suffix(s: &str, units: usize) -> &str {
    let mut used = 0;
    for (idx, ch) in s.char_indices().rev() {
        used += ch.len_utf16();
        if used > units {
            return &s[idx + ch.len_utf8()..];
        }
    }
    s
}
