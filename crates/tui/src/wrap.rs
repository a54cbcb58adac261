//! Word wrapping of styled lines by display width (CJK and emoji count two columns), so the
//! transcript can be measured and reflowed on resize without asking the terminal.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// Display width of one char; control characters take no room.
pub fn char_width(c: char) -> usize {
    c.width().unwrap_or(0)
}

/// Display width of a string.
pub fn str_width(s: &str) -> usize {
    s.chars().map(char_width).sum()
}

/// Cuts `s` to at most `max` columns, adding `…` when something was dropped.
pub fn truncate(s: &str, max: usize) -> String {
    if str_width(s) <= max {
        return s.to_owned();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = char_width(c);
        if used + w + 1 > max {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    out
}

/// Wraps `line` to `width` columns. Breaks after spaces where possible, otherwise inside a word
/// (CJK text has no spaces). `indent` is prefixed to continuation lines.
pub fn wrap_line(line: &Line<'_>, width: usize, indent: &[Span<'static>]) -> Vec<Line<'static>> {
    let width = width.max(1);
    let indent_w: usize = indent.iter().map(|s| str_width(&s.content)).sum();
    let indent_w = if indent_w >= width { 0 } else { indent_w };
    // Flatten to styled chars: simple, and lines are short.
    let chars: Vec<(char, Style)> = line
        .spans
        .iter()
        .flat_map(|s| {
            let style = line.style.patch(s.style);
            s.content.chars().map(move |c| (c, style))
        })
        .filter(|(c, _)| *c != '\n' && *c != '\r')
        .collect();
    let mut out = Vec::new();
    let mut start = 0;
    let mut first = true;
    while start < chars.len() || first {
        let avail = if first { width } else { width - indent_w };
        let mut used = 0;
        let mut end = start;
        let mut last_space = None;
        while end < chars.len() {
            let w = char_width(chars[end].0);
            if used + w > avail {
                break;
            }
            used += w;
            if chars[end].0 == ' ' {
                last_space = Some(end);
            }
            end += 1;
        }
        let mut next = end;
        if end < chars.len() {
            if chars[end].0 == ' ' {
                next = end + 1;
            } else if let Some(sp) = last_space.filter(|sp| *sp > start) {
                end = sp;
                next = sp + 1;
            } else if end == start {
                // A char wider than the whole line: emit it alone rather than loop forever.
                end = start + 1;
                next = end;
            }
        }
        let mut spans: Vec<Span<'static>> = if first { Vec::new() } else { indent.to_vec() };
        push_styled(&mut spans, &chars[start..end]);
        out.push(Line::from(spans));
        start = next;
        first = false;
    }
    out
}

fn push_styled(spans: &mut Vec<Span<'static>>, chars: &[(char, Style)]) {
    let mut cur = String::new();
    let mut cur_style: Option<Style> = None;
    for (c, style) in chars {
        if cur_style != Some(*style) {
            if let Some(s) = cur_style.take().filter(|_| !cur.is_empty()) {
                spans.push(Span::styled(std::mem::take(&mut cur), s));
            }
            cur.clear();
            cur_style = Some(*style);
        }
        cur.push(*c);
    }
    if let Some(s) = cur_style.filter(|_| !cur.is_empty()) {
        spans.push(Span::styled(cur, s));
    }
}

/// Wraps many lines.
pub fn wrap_lines(lines: &[Line<'_>], width: usize) -> Vec<Line<'static>> {
    lines
        .iter()
        .flat_map(|l| wrap_line(l, width, &[]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(lines: &[Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn breaks_at_spaces_and_inside_long_words() {
        let l = Line::from("hello world abcdefghij");
        assert_eq!(
            text(&wrap_line(&l, 8, &[])),
            vec!["hello", "world", "abcdefgh", "ij"]
        );
    }

    #[test]
    fn cjk_counts_two_columns() {
        let l = Line::from("你好世界你好");
        assert_eq!(text(&wrap_line(&l, 5, &[])), vec!["你好", "世界", "你好"]);
        assert_eq!(str_width("a🙂b"), 4);
        assert_eq!(truncate("你好世界", 5), "你好…");
    }

    #[test]
    fn empty_line_stays_one_line() {
        assert_eq!(wrap_line(&Line::from(""), 10, &[]).len(), 1);
    }
}
