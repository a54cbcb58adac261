//! The d2 subset flow charts use: `# comments`, nodes `id` and `id: label` (quoted labels and
//! `|md … |` blocks included), edges `a -> b`, `a -> b: label`, `b <- a` and chains
//! `a -> b -> c: label` (the label belongs to the last link), `{ … }` property blocks and
//! property paths (`a.shape: diamond`) ignored.

use super::{FlowError, GraphBuilder, parse_error};
use kimi_protocol::flow::FlowGraph;

/// d2 keywords that are properties, never nodes (`a.shape: diamond`, `direction: right`).
const PROPERTIES: &[&str] = &[
    "shape",
    "style",
    "label",
    "link",
    "icon",
    "near",
    "width",
    "height",
    "direction",
    "tooltip",
    "class",
    "classes",
    "vars",
    "grid-rows",
    "grid-columns",
    "grid-gap",
    "constraint",
];

/// Parse a d2 diagram (the inside of a ```` ```d2 ```` block).
pub fn parse_d2(text: &str) -> Result<FlowGraph, FlowError> {
    let mut graph = GraphBuilder::default();
    let lines: Vec<&str> = text.lines().collect();
    let mut index = 0;
    // Depth of `{ … }` blocks: their contents are properties (or nested shapes, not flow).
    let mut depth = 0usize;
    while index < lines.len() {
        let line = index + 1;
        let code = strip_comment(lines[index]).trim().to_owned();
        index += 1;
        if depth > 0 {
            depth = (depth + opens(&code)).saturating_sub(closes(&code));
            continue;
        }
        if code.is_empty() {
            continue;
        }
        let (statement, block) = split_block(&code);
        depth = opens(block).saturating_sub(closes(block));
        let (target, value) = split_value(statement);
        let mut label = value.map(|v| v.trim().to_owned());
        // `x: |md` … `|`: the lines in between are the label.
        if let Some(v) = &label
            && v.starts_with('|')
            && v.trim_start_matches('|').chars().all(char::is_alphanumeric)
        {
            let start = index;
            while index < lines.len() && lines[index].trim() != "|" {
                index += 1;
            }
            if index >= lines.len() {
                return Err(parse_error(
                    line,
                    "a `|md` block is not closed with a `|` line",
                ));
            }
            label = Some(dedent(&lines[start..index]));
            index += 1;
        }
        let label = label.map(|l| unquote(&l)).filter(|l| !l.is_empty());
        if contains_unquoted(target, "->") || contains_unquoted(target, "<-") {
            edges_into(&mut graph, target, label.as_deref(), line)?;
        } else {
            let id = target.trim();
            if id.is_empty() {
                return Err(parse_error(line, "expected a node id before `:`"));
            }
            if is_property(id) {
                continue;
            }
            graph.node(&unquote(id), label.as_deref(), line)?;
        }
    }
    graph.finish()
}

fn strip_comment(line: &str) -> &str {
    let mut quoted = None;
    for (at, ch) in line.char_indices() {
        match (quoted, ch) {
            (None, '"' | '\'') => quoted = Some(ch),
            (Some(q), c) if c == q => quoted = None,
            (None, '#') => return &line[..at],
            _ => {}
        }
    }
    line
}

fn opens(text: &str) -> usize {
    text.matches('{').count()
}

fn closes(text: &str) -> usize {
    text.matches('}').count()
}

/// `a: label { shape: diamond }` → (`a: label`, `{ shape: diamond }`).
fn split_block(code: &str) -> (&str, &str) {
    match find_unquoted(code, "{") {
        Some(at) => (code[..at].trim_end(), &code[at..]),
        None => (code, ""),
    }
}

/// `target: value` at the first `:` outside quotes.
fn split_value(statement: &str) -> (&str, Option<&str>) {
    match find_unquoted(statement, ":") {
        Some(at) => (&statement[..at], Some(&statement[at + 1..])),
        None => (statement, None),
    }
}

fn find_unquoted(text: &str, needle: &str) -> Option<usize> {
    let mut quoted = None;
    for (at, ch) in text.char_indices() {
        match (quoted, ch) {
            (None, '"' | '\'') => quoted = Some(ch),
            (Some(q), c) if c == q => quoted = None,
            (None, _) if text[at..].starts_with(needle) => return Some(at),
            _ => {}
        }
    }
    None
}

fn contains_unquoted(text: &str, needle: &str) -> bool {
    find_unquoted(text, needle).is_some()
}

fn is_property(id: &str) -> bool {
    let last = id.rsplit('.').next().unwrap_or(id).trim();
    PROPERTIES.contains(&last) || (id.contains('.') && last.starts_with("style"))
}

/// `a -> b <- c`: each link in turn; `label` belongs to the last one.
fn edges_into(
    graph: &mut GraphBuilder,
    chain: &str,
    label: Option<&str>,
    line: usize,
) -> Result<(), FlowError> {
    let mut ids = Vec::new();
    let mut arrows = Vec::new();
    let mut rest = chain;
    loop {
        let next = [
            find_unquoted(rest, "<->"),
            find_unquoted(rest, "->"),
            find_unquoted(rest, "<-"),
            find_unquoted(rest, "--"),
        ]
        .into_iter()
        .flatten()
        .min();
        let Some(at) = next else {
            ids.push(rest.trim());
            break;
        };
        ids.push(rest[..at].trim());
        let tail = &rest[at..];
        let (arrow, len) = if tail.starts_with("<->") {
            ("<->", 3)
        } else if tail.starts_with("->") {
            ("->", 2)
        } else if tail.starts_with("<-") {
            ("<-", 2)
        } else {
            ("--", 2)
        };
        if arrow == "<->" || arrow == "--" {
            return Err(parse_error(
                line,
                format!("`{arrow}` has no direction; a flow needs `->` or `<-`"),
            ));
        }
        arrows.push(arrow);
        rest = &tail[len..];
    }
    if ids.iter().any(|id| id.is_empty()) {
        return Err(parse_error(line, "an arrow needs a node on both sides"));
    }
    let ids: Vec<String> = ids.iter().map(|id| unquote(id)).collect();
    for id in &ids {
        graph.node(id, None, line)?;
    }
    for (i, arrow) in arrows.iter().enumerate() {
        let last = i + 1 == arrows.len();
        let (from, to) = if *arrow == "->" {
            (&ids[i], &ids[i + 1])
        } else {
            (&ids[i + 1], &ids[i])
        };
        graph.edge(from, to, if last { label } else { None });
    }
    Ok(())
}

fn unquote(text: &str) -> String {
    let text = text.trim();
    for q in ['"', '\''] {
        if text.len() >= 2 && text.starts_with(q) && text.ends_with(q) {
            return text[1..text.len() - 1].replace("\\\"", "\"");
        }
    }
    text.to_owned()
}

fn dedent(lines: &[&str]) -> String {
    let lead = |l: &str| l.len() - l.trim_start_matches([' ', '\t']).len();
    let indent = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| lead(l))
        .min()
        .unwrap_or(0);
    lines
        .iter()
        .map(|l| l[lead(l).min(indent)..].trim_end())
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_owned()
}
