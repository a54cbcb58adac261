//! Markdown to styled, wrapped terminal lines: headings, emphasis, lists, quotes, fenced code
//! with highlighting, and tables. Re-run on every streamed delta, so it must stay linear.

use pulldown_cmark::{CodeBlockKind, Event as MdEvent, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use crate::highlight::highlight;
use crate::theme::Theme;
use crate::wrap::{str_width, wrap_line};

struct Renderer<'t> {
    theme: &'t Theme,
    width: usize,
    out: Vec<Line<'static>>,
    spans: Vec<Span<'static>>,
    styles: Vec<Style>,
    /// One entry per open list: the next number for ordered lists.
    lists: Vec<Option<u64>>,
    quote: usize,
    /// Prefix for the first line of the current list item, consumed when it is emitted.
    item_marker: Option<String>,
    code: Option<(String, String)>,
    table: Option<Table>,
    link: Option<String>,
}

#[derive(Default)]
struct Table {
    rows: Vec<Vec<String>>,
    cell: String,
    head_rows: usize,
}

/// Renders `text` at `width` columns.
pub fn render_markdown(text: &str, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let mut r = Renderer {
        theme,
        width: width.max(8),
        out: Vec::new(),
        spans: Vec::new(),
        styles: vec![theme.text],
        lists: Vec::new(),
        quote: 0,
        item_marker: None,
        code: None,
        table: None,
        link: None,
    };
    let opts = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    for ev in Parser::new_ext(text, opts) {
        r.event(ev);
    }
    // A streaming answer may end inside an unclosed fence: show what has arrived.
    if let Some((lang, code)) = r.code.take() {
        r.emit_code(&lang, &code);
    }
    r.flush();
    while r.out.last().is_some_and(|l| l.width() == 0) {
        r.out.pop();
    }
    r.out
}

impl Renderer<'_> {
    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or_default()
    }

    fn push_style(&mut self, f: impl FnOnce(Style) -> Style) {
        let s = f(self.style());
        self.styles.push(s);
    }

    fn indent(&self) -> String {
        let mut s = "│ ".repeat(self.quote);
        s.push_str(&"   ".repeat(self.lists.len().saturating_sub(1)));
        if !self.lists.is_empty() {
            s.push_str("   ");
        }
        s
    }

    fn blank(&mut self) {
        if self.out.last().is_some_and(|l| l.width() > 0) {
            self.out.push(Line::default());
        }
    }

    /// Emits the pending inline spans as one wrapped paragraph line.
    fn flush(&mut self) {
        if self.spans.is_empty() && self.item_marker.is_none() {
            return;
        }
        let indent = self.indent();
        let dim = self.theme.text_dim;
        let first_prefix = match self.item_marker.take() {
            Some(marker) => {
                // The marker replaces the last indentation level.
                let base: String = indent.chars().take(indent.chars().count() - 3).collect();
                format!("{base}{marker:<3}")
            }
            None => indent.clone(),
        };
        let mut spans = vec![Span::styled(first_prefix, dim)];
        spans.append(&mut self.spans);
        let cont = [Span::styled(indent, dim)];
        self.out
            .extend(wrap_line(&Line::from(spans), self.width, &cont));
    }

    fn emit_code(&mut self, lang: &str, code: &str) {
        let indent = self.indent();
        let lines = highlight(code, lang, self.theme.text, self.theme.colour);
        let gutter = Span::styled(format!("{indent}  "), self.theme.text_dim);
        for line in lines {
            let mut spans = vec![gutter.clone()];
            spans.extend(line.spans);
            self.out.extend(wrap_line(
                &Line::from(spans),
                self.width,
                std::slice::from_ref(&gutter),
            ));
        }
        self.blank();
    }

    fn event(&mut self, ev: MdEvent<'_>) {
        if let Some(table) = self.table.as_mut() {
            match ev {
                MdEvent::Text(t) | MdEvent::Code(t) => {
                    table.cell.push_str(&t);
                    return;
                }
                MdEvent::End(TagEnd::TableCell) => {
                    let cell = std::mem::take(&mut table.cell);
                    if let Some(row) = table.rows.last_mut() {
                        row.push(cell);
                    }
                    return;
                }
                MdEvent::Start(Tag::TableRow | Tag::TableHead) => {
                    table.rows.push(Vec::new());
                    return;
                }
                MdEvent::End(TagEnd::TableHead) => {
                    table.head_rows = table.rows.len();
                    return;
                }
                MdEvent::End(TagEnd::Table) => {
                    if let Some(t) = self.table.take() {
                        self.emit_table(&t);
                    }
                    return;
                }
                _ => return,
            }
        }
        if let Some((_, code)) = self.code.as_mut() {
            match ev {
                MdEvent::Text(t) => code.push_str(&t),
                MdEvent::End(TagEnd::CodeBlock) => {
                    if let Some((lang, code)) = self.code.take() {
                        self.emit_code(&lang, &code);
                    }
                }
                _ => {}
            }
            return;
        }
        match ev {
            MdEvent::Start(tag) => self.start(tag),
            MdEvent::End(tag) => self.end(tag),
            MdEvent::Text(t) => {
                let style = self.style();
                self.spans.push(Span::styled(t.into_string(), style));
            }
            MdEvent::Code(t) => {
                self.spans
                    .push(Span::styled(t.into_string(), self.theme.accent));
            }
            MdEvent::InlineMath(t) | MdEvent::DisplayMath(t) => {
                self.spans
                    .push(Span::styled(t.into_string(), self.theme.accent));
            }
            MdEvent::Html(t) | MdEvent::InlineHtml(t) => {
                let style = self.theme.text_dim;
                self.spans
                    .push(Span::styled(t.trim_end().to_owned(), style));
            }
            MdEvent::SoftBreak => self.spans.push(Span::raw(" ")),
            MdEvent::HardBreak => self.flush(),
            MdEvent::Rule => {
                self.flush();
                let w = self.width.min(40);
                self.out
                    .push(Line::styled("─".repeat(w), self.theme.text_dim));
                self.blank();
            }
            MdEvent::TaskListMarker(done) => {
                let mark = if done { "[x] " } else { "[ ] " };
                self.spans.push(Span::styled(mark, self.theme.text_dim));
            }
            MdEvent::FootnoteReference(t) => self.spans.push(Span::raw(format!("[{t}]"))),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Heading { level, .. } => {
                self.flush();
                let theme = self.theme;
                self.push_style(|_| match level {
                    HeadingLevel::H1 => theme
                        .primary
                        .add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
                    HeadingLevel::H2 => theme.primary.add_modifier(Modifier::BOLD),
                    _ => theme.text_strong,
                });
                if !matches!(level, HeadingLevel::H1 | HeadingLevel::H2) {
                    let hashes = "#".repeat(level as usize);
                    self.spans
                        .push(Span::styled(format!("{hashes} "), self.theme.text_dim));
                }
            }
            Tag::Emphasis => self.push_style(|s| s.add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.push_style(|s| s.add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self.push_style(|s| s.add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { dest_url, .. } => {
                self.link = Some(dest_url.into_string());
                self.push_style(|s| s.add_modifier(Modifier::UNDERLINED));
            }
            Tag::BlockQuote(_) => {
                self.flush();
                self.quote += 1;
                self.push_style(|s| s.add_modifier(Modifier::ITALIC));
            }
            Tag::CodeBlock(kind) => {
                self.flush();
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => {
                        info.split([' ', ',']).next().unwrap_or_default().to_owned()
                    }
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((lang, String::new()));
            }
            Tag::List(start) => {
                self.flush();
                if self.lists.is_empty() {
                    self.blank_if_needed();
                }
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush();
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let m = format!("{n}.");
                        *n += 1;
                        m
                    }
                    Some(None) | None => "•".to_owned(),
                };
                self.item_marker = Some(marker);
            }
            Tag::Table(_) => {
                self.flush();
                self.table = Some(Table::default());
            }
            Tag::Paragraph
            | Tag::HtmlBlock
            | Tag::FootnoteDefinition(_)
            | Tag::TableHead
            | Tag::TableRow
            | Tag::TableCell
            | Tag::Superscript
            | Tag::Subscript
            | Tag::Image { .. }
            | Tag::MetadataBlock(_)
            | Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition => {}
        }
    }

    fn blank_if_needed(&mut self) {
        if !self.out.is_empty() {
            self.blank();
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => {
                self.flush();
                if self.lists.is_empty() {
                    self.blank();
                }
            }
            TagEnd::Heading(_) => {
                self.flush();
                self.styles.pop();
                self.blank();
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::Link => {
                self.styles.pop();
                if let Some(url) = self.link.take() {
                    let shown: String = self.spans.iter().map(|s| s.content.as_ref()).collect();
                    if !shown.ends_with(url.as_str()) {
                        self.spans
                            .push(Span::styled(format!(" ({url})"), self.theme.text_dim));
                    }
                }
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.quote = self.quote.saturating_sub(1);
                self.styles.pop();
                self.blank();
            }
            TagEnd::Item => self.flush(),
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                if self.lists.is_empty() {
                    self.blank();
                }
            }
            _ => {}
        }
    }

    fn emit_table(&mut self, t: &Table) {
        let cols = t.rows.iter().map(Vec::len).max().unwrap_or(0);
        if cols == 0 {
            return;
        }
        let mut widths = vec![0usize; cols];
        for row in &t.rows {
            for (i, c) in row.iter().enumerate() {
                widths[i] = widths[i].max(str_width(c));
            }
        }
        // Shrink the widest columns until the table fits; wrapping handles the rest.
        let budget = self.width.saturating_sub(cols * 3 + 1).max(cols);
        while widths.iter().sum::<usize>() > budget {
            let Some((i, _)) = widths.iter().enumerate().max_by_key(|(_, w)| **w) else {
                break;
            };
            if widths[i] <= 1 {
                break;
            }
            widths[i] -= 1;
        }
        let border = self.theme.border;
        let sep = |l: &str, m: &str, r: &str| {
            let parts: Vec<String> = widths.iter().map(|w| "─".repeat(w + 2)).collect();
            Line::styled(format!("{l}{}{r}", parts.join(m)), border)
        };
        self.out.push(sep("┌", "┬", "┐"));
        for (ri, row) in t.rows.iter().enumerate() {
            let mut spans = vec![Span::styled("│", border)];
            for (i, w) in widths.iter().enumerate() {
                let cell = row.get(i).map(String::as_str).unwrap_or_default();
                let shown = crate::wrap::truncate(cell, *w);
                let pad = w.saturating_sub(str_width(&shown));
                let style = if ri < t.head_rows {
                    self.theme.text_strong
                } else {
                    self.theme.text
                };
                spans.push(Span::styled(format!(" {shown}{} ", " ".repeat(pad)), style));
                spans.push(Span::styled("│", border));
            }
            self.out.push(Line::from(spans));
            if ri + 1 == t.head_rows {
                self.out.push(sep("├", "┼", "┤"));
            }
        }
        self.out.push(sep("└", "┴", "┘"));
        self.blank();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(text: &str, width: usize) -> Vec<String> {
        render_markdown(text, width, &Theme::monochrome())
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn lists_headings_and_code() {
        let got = plain(
            "# Title\n\n- one\n- two\n\n1. a\n2. b\n\n```rust\nfn x() {}\n```\n",
            40,
        );
        assert_eq!(
            got,
            vec![
                "Title",
                "",
                "•  one",
                "•  two",
                "",
                "1. a",
                "2. b",
                "",
                "  fn x() {}"
            ]
        );
    }

    #[test]
    fn table_has_borders_and_fits() {
        let got = plain("| a | bb |\n|---|---|\n| 1 | 2 |\n", 40);
        assert_eq!(
            got,
            vec![
                "┌───┬────┐",
                "│ a │ bb │",
                "├───┼────┤",
                "│ 1 │ 2  │",
                "└───┴────┘"
            ]
        );
    }

    #[test]
    fn unclosed_fence_still_shows_code() {
        let got = plain("text\n\n```py\nprint(1)\n", 40);
        assert_eq!(got, vec!["text", "", "  print(1)"]);
    }
}
