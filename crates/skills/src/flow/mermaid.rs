//! The mermaid flowchart subset: a `flowchart`/`graph` header (direction ignored), `%%`
//! comments, nodes `A`, `A[text]`, `A(text)`, `A{text}`, `A([text])`, `A[[text]]`,
//! `A((text))`, `A{{text}}`, `A>text]`, `A[/text/]` and `A["quoted \" text"]`, edges of any
//! arrow style (`-->`, `---`, `-.->`, `==>`, `<-->` reads as written left to right) with a label
//! as `-->|label|` or `-- label -->`, and chains `A --> B --> C`. Styling and layout lines
//! (`classDef`, `class`, `style`, `linkStyle`, `click`, `subgraph`, `end`, `direction`) and
//! `:::class` suffixes are ignored.

use super::{FlowError, GraphBuilder, parse_error};
use kimi_protocol::flow::FlowGraph;

/// Parse a mermaid flowchart (the inside of a ```` ```mermaid ```` block).
pub fn parse_mermaid(text: &str) -> Result<FlowGraph, FlowError> {
    let mut graph = GraphBuilder::default();
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let code = strip_comment(raw).trim();
        if code.is_empty() || is_ignored(code) {
            continue;
        }
        // `A --> B; B --> C` is two statements.
        for statement in split_statements(code) {
            statement_into(&mut graph, statement.trim(), line)?;
        }
    }
    graph.finish()
}

fn strip_comment(line: &str) -> &str {
    match line.find("%%") {
        Some(at) => &line[..at],
        None => line,
    }
}

fn is_ignored(code: &str) -> bool {
    let lower = code.to_ascii_lowercase();
    let word = lower.split_whitespace().next().unwrap_or("");
    matches!(
        word,
        "flowchart"
            | "graph"
            | "classdef"
            | "class"
            | "style"
            | "linkstyle"
            | "click"
            | "subgraph"
            | "end"
            | "direction"
    ) && !lower.contains("-->")
        || lower == "end"
}

/// Split on `;` outside quotes and brackets.
fn split_statements(code: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut quoted, mut start) = (0i32, false, 0);
    for (at, ch) in code.char_indices() {
        match ch {
            '"' => quoted = !quoted,
            '[' | '(' | '{' if !quoted => depth += 1,
            ']' | ')' | '}' if !quoted => depth -= 1,
            ';' if !quoted && depth <= 0 => {
                out.push(&code[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    out.push(&code[start..]);
    out.into_iter().filter(|s| !s.trim().is_empty()).collect()
}

fn statement_into(graph: &mut GraphBuilder, code: &str, line: usize) -> Result<(), FlowError> {
    let mut cursor = Cursor { code, at: 0, line };
    let mut from = cursor.node()?;
    graph.node(&from.0, from.1.as_deref(), line)?;
    loop {
        cursor.skip_ws();
        if cursor.done() {
            return Ok(());
        }
        if cursor.peek() == Some('&') {
            return Err(parse_error(
                line,
                "`&` (several nodes at once) is not supported in flow charts; write one edge per line",
            ));
        }
        let label = cursor.link()?;
        cursor.skip_ws();
        let to = cursor.node()?;
        graph.node(&to.0, to.1.as_deref(), line)?;
        graph.edge(&from.0, &to.0, label.as_deref());
        from = to;
    }
}

struct Cursor<'a> {
    code: &'a str,
    at: usize,
    line: usize,
}

impl Cursor<'_> {
    fn rest(&self) -> &str {
        &self.code[self.at..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn done(&self) -> bool {
        self.at >= self.code.len()
    }

    fn skip_ws(&mut self) {
        let rest = self.rest();
        self.at += rest.len() - rest.trim_start().len();
    }

    fn error(&self, message: impl Into<String>) -> FlowError {
        parse_error(self.line, message)
    }

    /// `id`, then an optional shape holding the label; `:::class` after it is dropped.
    fn node(&mut self) -> Result<(String, Option<String>), FlowError> {
        let rest = self.rest();
        let len = rest
            .char_indices()
            .find(|&(_, c)| !(c.is_alphanumeric() || c == '_' || c == '-'))
            .map_or(rest.len(), |(i, _)| i);
        // `A-->B`: the id stops before an arrow.
        let len = rest[..len]
            .find("--")
            .map_or(len, |arrow| arrow.min(len))
            .min(len);
        let len = if rest[..len].ends_with('-') && rest[len..].starts_with(['>', '.', '-']) {
            len - 1
        } else {
            len
        };
        if len == 0 {
            let found: String = rest.chars().take(12).collect();
            return Err(self.error(format!("expected a node id, found \"{found}\"")));
        }
        let id = rest[..len].to_owned();
        self.at += len;
        let label = self.shape()?;
        if let Some(after) = self.rest().strip_prefix(":::") {
            let class = after
                .char_indices()
                .find(|&(_, c)| !(c.is_alphanumeric() || c == '_' || c == '-'))
                .map_or(after.len(), |(i, _)| i);
            self.at += 3 + class;
        }
        Ok((id, label))
    }

    /// The label inside a node shape, if one opens here.
    fn shape(&mut self) -> Result<Option<String>, FlowError> {
        let rest = self.rest();
        let open: String = rest.chars().take_while(|c| "[({".contains(*c)).collect();
        let (open, close) = if open.is_empty() {
            if rest.starts_with('>') {
                (">".to_owned(), "]".to_owned())
            } else {
                return Ok(None);
            }
        } else {
            let mut open = open;
            let mut close: String = open
                .chars()
                .rev()
                .map(|c| match c {
                    '[' => ']',
                    '(' => ')',
                    _ => '}',
                })
                .collect();
            // Parallelograms and trapezoids: `[/text/]`, `[\text\]`, `[/text\]`.
            if let Some(slant) = rest[open.len()..]
                .chars()
                .next()
                .filter(|c| *c == '/' || *c == '\\')
                && open == "["
            {
                open.push(slant);
                close = "]".to_owned();
            }
            (open, close)
        };
        self.at += open.len();
        let body = self.rest();
        let (label, used) = if body.trim_start().starts_with('"') {
            let lead = body.len() - body.trim_start().len();
            let (text, used) = quoted(&body[lead..])
                .ok_or_else(|| self.error("a quoted node label is not closed; end it with \""))?;
            let after = &body[lead + used..];
            let pad = after.len() - after.trim_start().len();
            if !after[pad..].starts_with(close.as_str()) {
                return Err(self.error(format!("node label not closed with `{close}`")));
            }
            (text, lead + used + pad + close.len())
        } else {
            let Some(end) = body.find(close.as_str()) else {
                return Err(self.error(format!(
                    "node label not closed with `{close}`; quote labels that contain brackets"
                )));
            };
            let mut text = body[..end].trim();
            if open.ends_with(['/', '\\']) {
                text = text.trim_end_matches(['/', '\\']).trim();
            }
            (text.to_owned(), end + close.len())
        };
        self.at += used;
        Ok(Some(label))
    }

    /// A link: its arrow and the label written on it, if any.
    fn link(&mut self) -> Result<Option<String>, FlowError> {
        let arrow = arrow_len(self.rest());
        if arrow == 0 {
            let found: String = self.rest().chars().take(12).collect();
            return Err(self.error(format!("expected an arrow such as -->, found \"{found}\"")));
        }
        let head = self.rest()[..arrow].to_owned();
        self.at += arrow;
        let mut label = None;
        // `-- text -->`: an arrow without a head, text, then the rest of the arrow.
        if !head.ends_with('>') && !head.contains("---") && !head.contains("===") {
            let rest = self.rest();
            let Some((text, used)) = text_then_arrow(rest) else {
                return Err(self.error(format!(
                    "`{head}` starts a labelled link but no arrow follows; write `A -- text --> B`"
                )));
            };
            label = Some(text);
            self.at += used;
        }
        self.skip_ws();
        if let Some(body) = self.rest().strip_prefix('|') {
            let Some(end) = body.find('|') else {
                return Err(self.error("a link label opened with | is not closed with |"));
            };
            label = Some(unquote(body[..end].trim()));
            self.at += end + 2;
        }
        Ok(label)
    }
}

/// Length of the arrow at the start of `text`: `<`? then `-`, `=`, `.` (at least two of them
/// or one plus a head), then `>` or `o`/`x` heads.
fn arrow_len(text: &str) -> usize {
    let bytes = text.as_bytes();
    let mut i = usize::from(bytes.first() == Some(&b'<'));
    let body_start = i;
    while i < bytes.len() && matches!(bytes[i], b'-' | b'=' | b'.') {
        i += 1;
    }
    let body = i - body_start;
    if i < bytes.len() && bytes[i] == b'>' {
        return if body >= 1 { i + 1 } else { 0 };
    }
    if body >= 2 {
        return i;
    }
    0
}

/// `text -->` after an opening `--`: the text and how much was used, arrow included.
fn text_then_arrow(rest: &str) -> Option<(String, usize)> {
    for (at, _) in rest.char_indices() {
        let arrow = arrow_len(&rest[at..]);
        if arrow > 0 && at > 0 && rest[..at].ends_with(' ') {
            let text = rest[..at].trim();
            if !text.is_empty() {
                return Some((unquote(text), at + arrow));
            }
        }
    }
    None
}

/// A `"…"` string at the start of `text` (backslash escapes the next character): its text and
/// length with both quotes.
fn quoted(text: &str) -> Option<(String, usize)> {
    let mut out = String::new();
    let mut chars = text.char_indices().skip(1);
    while let Some((at, ch)) = chars.next() {
        match ch {
            '"' => return Some((out, at + 1)),
            '\\' => {
                let (_, next) = chars.next()?;
                out.push(next);
            }
            _ => out.push(ch),
        }
    }
    None
}

fn unquote(text: &str) -> String {
    match quoted(text) {
        Some((inner, used)) if used == text.len() => inner,
        _ => text.to_owned(),
    }
}
