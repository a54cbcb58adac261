//! The multi-line prompt editor: a text buffer with a byte cursor, large pastes and pasted
//! media collapsed into placeholders, and layout (hard-wrapped by display width) that also
//! yields the cursor cell.

use kimi_protocol::ContentPart;
use ratatui::text::{Line, Span};

use crate::clipboard::Media;
use crate::wrap::char_width;

/// A paste longer than this many chars or lines becomes a placeholder.
const PASTE_CHARS: usize = 1000;
const PASTE_LINES: usize = 10;

#[derive(Debug, Clone, Default)]
pub struct Editor {
    text: String,
    cursor: usize,
    pastes: Vec<(String, String)>,
    /// Pasted images and videos, each shown as its placeholder (`[image #1 png 34 KB]`).
    media: Vec<(String, Media)>,
    /// The number of the next media placeholder; never reused within one prompt.
    media_seq: usize,
    pub collapse_pastes: bool,
}

impl Editor {
    pub fn new(collapse_pastes: bool) -> Self {
        Editor {
            collapse_pastes,
            ..Editor::default()
        }
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    pub fn cursor(&self) -> usize {
        self.cursor
    }

    pub fn set_text(&mut self, text: &str) {
        self.text = text.to_owned();
        self.cursor = self.text.len();
    }

    pub fn clear(&mut self) {
        self.text.clear();
        self.cursor = 0;
        self.pastes.clear();
        self.media.clear();
        self.media_seq = 0;
    }

    /// Inserts `media` at the cursor as a placeholder; returns the placeholder.
    pub fn attach(&mut self, media: Media) -> String {
        self.media_seq += 1;
        let ph = format!(
            "[{} #{} {} {}]",
            media.kind.as_str(),
            self.media_seq,
            media.format,
            media.size_label()
        );
        self.insert_str(&ph);
        self.media.push((ph.clone(), media));
        ph
    }

    /// Whether a media placeholder is still in the text.
    pub fn has_media(&self) -> bool {
        self.media
            .iter()
            .any(|(ph, _)| self.text.contains(ph.as_str()))
    }

    /// The attachments still in the text, in the order they appear.
    pub fn attachments(&self) -> Vec<&Media> {
        let mut found: Vec<(usize, &Media)> = self
            .media
            .iter()
            .filter_map(|(ph, m)| self.text.find(ph.as_str()).map(|at| (at, m)))
            .collect();
        found.sort_by_key(|(at, _)| *at);
        found.into_iter().map(|(_, m)| m).collect()
    }

    /// What is sent to the model: the expanded text split at media placeholders into text,
    /// image and video parts (blank text between two attachments is dropped).
    pub fn parts(&self) -> Vec<ContentPart> {
        let text = self.expanded_text();
        let mut parts = Vec::new();
        let mut rest = text.as_str();
        loop {
            let next = self
                .media
                .iter()
                .filter_map(|(ph, m)| rest.find(ph.as_str()).map(|at| (at, ph, m)))
                .min_by_key(|(at, _, _)| *at);
            let Some((at, ph, media)) = next else { break };
            if !rest[..at].trim().is_empty() {
                parts.push(ContentPart::text(&rest[..at]));
            }
            parts.push(media.to_part());
            rest = &rest[at + ph.len()..];
        }
        if !rest.trim().is_empty() || parts.is_empty() {
            parts.push(ContentPart::text(rest));
        }
        parts
    }

    /// The text with paste placeholders expanded; what is sent to the model.
    pub fn expanded_text(&self) -> String {
        let mut out = self.text.clone();
        for (ph, content) in &self.pastes {
            out = out.replacen(ph.as_str(), content, 1);
        }
        out
    }

    pub fn insert_char(&mut self, c: char) {
        self.text.insert(self.cursor, c);
        self.cursor += c.len_utf8();
    }

    pub fn insert_str(&mut self, s: &str) {
        self.text.insert_str(self.cursor, s);
        self.cursor += s.len();
    }

    /// Pastes `s`, collapsing large text to `[Pasted text #n +L lines]`.
    pub fn paste(&mut self, s: &str) {
        let s = s.replace("\r\n", "\n").replace('\r', "\n");
        let lines = s.lines().count();
        if self.collapse_pastes && (s.chars().count() > PASTE_CHARS || lines > PASTE_LINES) {
            let ph = format!("[Pasted text #{} +{lines} lines]", self.pastes.len() + 1);
            self.insert_str(&ph);
            self.pastes.push((ph, s));
        } else {
            self.insert_str(&s);
        }
    }

    fn prev_boundary(&self) -> Option<usize> {
        self.text[..self.cursor]
            .char_indices()
            .next_back()
            .map(|(i, _)| i)
    }

    fn next_boundary(&self) -> Option<usize> {
        self.text[self.cursor..]
            .chars()
            .next()
            .map(|c| self.cursor + c.len_utf8())
    }

    pub fn backspace(&mut self) {
        // A placeholder is deleted whole, together with its stored paste or media.
        let before = &self.text[..self.cursor];
        let placeholder = if let Some(i) = self
            .pastes
            .iter()
            .position(|(ph, _)| before.ends_with(ph.as_str()))
        {
            Some(self.pastes.remove(i).0)
        } else if let Some(i) = self
            .media
            .iter()
            .position(|(ph, _)| before.ends_with(ph.as_str()))
        {
            Some(self.media.remove(i).0)
        } else {
            None
        };
        if let Some(ph) = placeholder {
            let start = self.cursor - ph.len();
            self.text.replace_range(start..self.cursor, "");
            self.cursor = start;
            return;
        }
        if let Some(p) = self.prev_boundary() {
            self.text.replace_range(p..self.cursor, "");
            self.cursor = p;
        }
    }

    pub fn delete(&mut self) {
        if let Some(n) = self.next_boundary() {
            self.text.replace_range(self.cursor..n, "");
        }
    }

    pub fn left(&mut self) {
        if let Some(p) = self.prev_boundary() {
            self.cursor = p;
        }
    }

    pub fn right(&mut self) {
        if let Some(n) = self.next_boundary() {
            self.cursor = n;
        }
    }

    fn line_start(&self) -> usize {
        self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1)
    }

    fn line_end(&self) -> usize {
        self.text[self.cursor..]
            .find('\n')
            .map_or(self.text.len(), |i| self.cursor + i)
    }

    pub fn home(&mut self) {
        self.cursor = self.line_start();
    }

    pub fn end(&mut self) {
        self.cursor = self.line_end();
    }

    pub fn on_first_line(&self) -> bool {
        !self.text[..self.cursor].contains('\n')
    }

    pub fn on_last_line(&self) -> bool {
        !self.text[self.cursor..].contains('\n')
    }

    /// Moves to the previous logical line, keeping the column (in chars) where possible.
    pub fn up(&mut self) {
        let start = self.line_start();
        if start == 0 {
            return;
        }
        let col = self.text[start..self.cursor].chars().count();
        let prev_start = self.text[..start - 1].rfind('\n').map_or(0, |i| i + 1);
        self.cursor = advance(&self.text, prev_start, start - 1, col);
    }

    pub fn down(&mut self) {
        let end = self.line_end();
        if end == self.text.len() {
            return;
        }
        let col = self.text[self.line_start()..self.cursor].chars().count();
        let next_start = end + 1;
        let next_end = self.text[next_start..]
            .find('\n')
            .map_or(self.text.len(), |i| next_start + i);
        self.cursor = advance(&self.text, next_start, next_end, col);
    }

    /// Ctrl-U: delete to the start of the line.
    pub fn kill_line_start(&mut self) {
        let s = self.line_start();
        self.text.replace_range(s..self.cursor, "");
        self.cursor = s;
    }

    /// Ctrl-K: delete to the end of the line.
    pub fn kill_line_end(&mut self) {
        let e = self.line_end();
        self.text.replace_range(self.cursor..e, "");
    }

    /// Ctrl-W: delete the word before the cursor.
    pub fn delete_word(&mut self) {
        let before = &self.text[..self.cursor];
        let trimmed = before.trim_end_matches(' ');
        let start = trimmed.rfind([' ', '\n']).map_or(0, |i| i + 1);
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    /// The token under the cursor (from the last whitespace), with its byte start.
    pub fn current_token(&self) -> (usize, &str) {
        let before = &self.text[..self.cursor];
        let start = before.rfind([' ', '\n', '\t']).map_or(0, |i| i + 1);
        (start, &self.text[start..self.cursor])
    }

    /// Replaces the token under the cursor with `with`.
    pub fn replace_token(&mut self, with: &str) {
        let (start, _) = self.current_token();
        self.text.replace_range(start..self.cursor, with);
        self.cursor = start + with.len();
    }

    /// Lays the text out in `width` columns after a `prompt`; returns the lines and the
    /// cursor's (column, row).
    pub fn layout(
        &self,
        width: usize,
        prompt: Span<'static>,
        style: ratatui::style::Style,
    ) -> (Vec<Line<'static>>, (u16, u16)) {
        let width = width.max(4);
        let pw = prompt.content.chars().map(char_width).sum::<usize>();
        let mut lines = Vec::new();
        let mut cur = String::new();
        let mut col = pw;
        let mut row = 0usize;
        let mut cursor_pos = (pw, 0);
        let push = |lines: &mut Vec<Line<'static>>, cur: &mut String, first: bool| {
            let lead = if first {
                prompt.clone()
            } else {
                Span::raw(" ".repeat(pw))
            };
            lines.push(Line::from(vec![
                lead,
                Span::styled(std::mem::take(cur), style),
            ]));
        };
        for (i, c) in self.text.char_indices() {
            if i == self.cursor {
                cursor_pos = (col, row);
            }
            if c == '\n' {
                push(&mut lines, &mut cur, row == 0);
                row += 1;
                col = pw;
                continue;
            }
            let w = char_width(c);
            if col + w > width {
                push(&mut lines, &mut cur, row == 0);
                row += 1;
                col = pw;
            }
            cur.push(c);
            col += w;
        }
        if self.cursor >= self.text.len() {
            if col >= width {
                push(&mut lines, &mut cur, row == 0);
                row += 1;
                col = pw;
            }
            cursor_pos = (col, row);
        }
        push(&mut lines, &mut cur, row == 0);
        let to16 = |v: usize| u16::try_from(v).unwrap_or(u16::MAX);
        (lines, (to16(cursor_pos.0), to16(cursor_pos.1)))
    }
}

/// Byte index `col` chars after `from`, but not past `limit`.
fn advance(text: &str, from: usize, limit: usize, col: usize) -> usize {
    text[from..limit]
        .char_indices()
        .nth(col)
        .map_or(limit, |(i, _)| from + i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::style::Style;

    #[test]
    fn edits_and_moves_by_chars_and_lines() {
        let mut e = Editor::new(true);
        e.insert_str("héllo\nwörld");
        e.up();
        assert!(e.on_first_line());
        e.home();
        e.right();
        e.backspace();
        assert_eq!(e.text(), "éllo\nwörld");
        e.down();
        e.end();
        e.insert_char('!');
        assert_eq!(e.text(), "éllo\nwörld!");
        e.delete_word();
        assert_eq!(e.text(), "éllo\n");
    }

    #[test]
    fn big_paste_is_a_placeholder_that_expands_and_deletes_whole() {
        let mut e = Editor::new(true);
        let big = "line\n".repeat(20);
        e.insert_str("see ");
        e.paste(&big);
        assert_eq!(e.text(), "see [Pasted text #1 +20 lines]");
        assert_eq!(e.expanded_text(), format!("see {big}"));
        e.backspace();
        assert_eq!(e.text(), "see ");
    }

    #[test]
    fn media_placeholders_become_parts_in_order_and_delete_whole() {
        let png =
            || Media::sniff([b"\x89PNG\r\n\x1a\n".as_slice(), &[7; 2000]].concat()).expect("a png");
        let mut e = Editor::new(true);
        e.insert_str("look at ");
        assert_eq!(e.attach(png()), "[image #1 png 2 KB]");
        e.insert_str(" and ");
        e.attach(png());
        assert_eq!(
            e.text(),
            "look at [image #1 png 2 KB] and [image #2 png 2 KB]"
        );
        let parts = e.parts();
        let kinds: Vec<&str> = parts.iter().map(ContentPart::type_name).collect();
        assert_eq!(kinds, ["text", "image_url", "text", "image_url"]);
        assert_eq!(parts[0], ContentPart::text("look at "));
        e.backspace();
        assert_eq!(e.text(), "look at [image #1 png 2 KB] and ");
        assert_eq!(e.attachments().len(), 1);
        e.clear();
        assert!(!e.has_media());
        assert_eq!(e.parts(), vec![ContentPart::text("")]);
    }

    #[test]
    fn layout_wraps_cjk_and_places_cursor() {
        let mut e = Editor::new(true);
        e.insert_str("你好世界");
        let (lines, cur) = e.layout(6, Span::raw("> "), Style::new());
        // The cursor after a full row moves to the next one instead of leaving the screen.
        assert_eq!(lines.len(), 3);
        assert_eq!(cur, (2, 2));
    }
}
