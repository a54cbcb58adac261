//! Undo branches (core-2.1 §4): the journal is a tree whose edges are `agent.switched` records.
//! Replay follows the active branch; nothing is ever deleted from disk.
//!
//! Lines are physical journal line numbers (metadata = line 1), as written in `base.line` and
//! `legacyUndoLine`.

use std::collections::{BTreeSet, HashSet};

use kimi_protocol::Origin;
use serde_json::{Map, Value};

use crate::envelope::{Entry, Reported, UNKNOWN_RECORD};

pub const MAIN_BRANCH: &str = "main";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    /// Line of the `agent.switched` record.
    pub line: u64,
    pub branch: String,
    pub base_branch: String,
    pub base_line: u64,
    pub legacy_undo_line: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tree {
    /// Valid edges in file order.
    pub edges: Vec<Edge>,
    pub active: String,
    /// Malformed switch records and repeated branch names (ignored).
    pub reported: Vec<Reported>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TreeError {
    #[error("branch {branch} has an unknown base branch {base}")]
    UnknownBase { branch: String, base: String },
    #[error("branch {branch} is part of a base cycle")]
    Cycle { branch: String },
}

fn record_type(value: &Value) -> Option<&str> {
    value.get("type").and_then(Value::as_str)
}

fn parse_edge(entry: &Entry) -> Option<Edge> {
    let v = &entry.value;
    let base = v.get("base")?;
    Some(Edge {
        line: entry.line,
        branch: v.get("branch")?.as_str()?.to_owned(),
        base_branch: base.get("branch")?.as_str()?.to_owned(),
        base_line: base.get("line")?.as_u64()?,
        legacy_undo_line: v.get("legacyUndoLine").and_then(Value::as_u64),
    })
}

/// Read the branch tree. `main` runs from line 1 to the first edge; each edge starts a segment
/// named after its branch; the last edge's branch is active.
pub fn parse_tree(entries: &[Entry]) -> Tree {
    let mut edges: Vec<Edge> = Vec::new();
    let mut reported = Vec::new();
    let mut names: HashSet<String> = HashSet::from([MAIN_BRANCH.to_owned()]);
    let mut index = 0;
    for entry in entries {
        let kind = record_type(&entry.value);
        if kind == Some("metadata") && entry.line == 1 {
            continue;
        }
        if kind == Some("agent.switched") {
            match parse_edge(entry) {
                Some(edge) if names.insert(edge.branch.clone()) => edges.push(edge),
                Some(_) | None => reported.push(Reported {
                    code: UNKNOWN_RECORD,
                    index,
                    line: entry.line,
                }),
            }
        }
        index += 1;
    }
    let active = edges
        .last()
        .map_or_else(|| MAIN_BRANCH.to_owned(), |e| e.branch.clone());
    Tree {
        edges,
        active,
        reported,
    }
}

impl Tree {
    /// The branch whose segment holds `line` (an edge line belongs to the branch it starts).
    pub fn owner_of(&self, line: u64) -> &str {
        self.edges
            .iter()
            .rev()
            .find(|e| e.line <= line)
            .map_or(MAIN_BRANCH, |e| e.branch.as_str())
    }

    /// `(first, last)` lines of a branch's own segment; `last` is `u64::MAX` for the final one.
    fn segment(&self, branch: &str) -> Option<(u64, u64)> {
        if branch == MAIN_BRANCH {
            let end = self.edges.first().map_or(u64::MAX, |e| e.line - 1);
            return Some((1, end));
        }
        let i = self.edges.iter().position(|e| e.branch == branch)?;
        let end = self.edges.get(i + 1).map_or(u64::MAX, |e| e.line - 1);
        Some((self.edges[i].line + 1, end))
    }

    /// Lines on `branch`'s chain: its base's chain up to `base.line`, then its own segment.
    fn chain_lines(&self, branch: &str, depth: usize) -> Result<Vec<(u64, u64)>, TreeError> {
        if depth > self.edges.len() + 1 {
            return Err(TreeError::Cycle {
                branch: branch.to_owned(),
            });
        }
        let own = self.segment(branch).ok_or_else(|| TreeError::UnknownBase {
            branch: branch.to_owned(),
            base: branch.to_owned(),
        })?;
        let mut ranges = Vec::new();
        if let Some(edge) = self.edges.iter().find(|e| e.branch == branch) {
            if self.segment(&edge.base_branch).is_none() {
                return Err(TreeError::UnknownBase {
                    branch: branch.to_owned(),
                    base: edge.base_branch.clone(),
                });
            }
            for (first, last) in self.chain_lines(&edge.base_branch, depth + 1)? {
                if first <= edge.base_line {
                    ranges.push((first, last.min(edge.base_line)));
                }
            }
        }
        ranges.push(own);
        Ok(ranges)
    }
}

/// What the branch logic needs of a journal line, whether it was parsed to JSON ([`Entry`]) or
/// decoded straight into a typed record (`LineRecord`, the resume fast path).
pub trait ChainLine {
    fn line(&self) -> u64;
    /// The record's `type`.
    fn kind(&self) -> Option<&str>;
    /// The origin of a `context.append_message` record's message, when it reads as one.
    fn message_origin(&self) -> Option<Origin>;
    /// Prompt ids the record names: `promptId`, `promptIds`, and a message's `id`.
    fn prompt_ids(&self) -> Vec<String>;
}

impl ChainLine for Entry {
    fn line(&self) -> u64 {
        self.line
    }

    fn kind(&self) -> Option<&str> {
        record_type(&self.value)
    }

    fn message_origin(&self) -> Option<Origin> {
        if record_type(&self.value) != Some("context.append_message") {
            return None;
        }
        let origin = self.value.get("message")?.get("origin")?;
        serde_json::from_value(origin.clone()).ok()
    }

    fn prompt_ids(&self) -> Vec<String> {
        prompt_ids_of(&self.value)
    }
}

/// Prompt ids named by a record object (see [`ChainLine::prompt_ids`]).
pub fn prompt_ids_of(v: &Value) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    if let Some(id) = v.get("promptId").and_then(Value::as_str) {
        ids.push(id.to_owned());
    }
    if let Some(Value::Array(list)) = v.get("promptIds") {
        ids.extend(list.iter().filter_map(Value::as_str).map(str::to_owned));
    }
    if record_type(v) == Some("context.append_message")
        && let Some(id) = v
            .get("message")
            .and_then(|m| m.get("id"))
            .and_then(Value::as_str)
    {
        ids.push(id.to_owned());
    }
    ids
}

/// The lines replay follows on the active branch (metadata and `agent.switched` excluded).
pub fn active_chain<'a, L: ChainLine>(
    tree: &Tree,
    lines: &'a [L],
) -> Result<Vec<&'a L>, TreeError> {
    let ranges = tree.chain_lines(&tree.active, 0)?;
    Ok(lines
        .iter()
        .filter(|e| ranges.iter().any(|&(a, b)| a <= e.line() && e.line() <= b))
        .filter(|e| !matches!(e.kind(), Some("agent.switched" | "metadata")))
        .collect())
}

/// The records the undoable states replay: the active chain without `context.undone` and the
/// `context.undo` records paired through `legacyUndoLine`, plus injections left outside the
/// chain whose owner prompt is missing or still on the chain, at their original positions.
pub fn restorable_chain<'a, L: ChainLine>(
    tree: &Tree,
    lines: &'a [L],
) -> Result<Vec<&'a L>, TreeError> {
    let chain = active_chain(tree, lines)?;
    let paired: HashSet<u64> = tree
        .edges
        .iter()
        .filter_map(|e| e.legacy_undo_line)
        .collect();
    // Without branches every line is on the chain: nothing can be left outside it.
    let off_chain: Vec<(&L, Origin)> = if tree.edges.is_empty() {
        Vec::new()
    } else {
        let on_chain: BTreeSet<u64> = chain.iter().map(|e| e.line()).collect();
        lines
            .iter()
            .filter(|entry| !on_chain.contains(&entry.line()))
            .filter_map(|entry| entry.message_origin().map(|origin| (entry, origin)))
            .filter(|(_, origin)| origin.is_injection())
            .collect()
    };
    // Only injections left off the chain need the chain's prompt ids; most journals have none.
    let live_prompts: HashSet<String> = if off_chain.is_empty() {
        HashSet::new()
    } else {
        chain.iter().flat_map(|e| e.prompt_ids()).collect()
    };
    let mut out: Vec<&L> = chain
        .into_iter()
        .filter(|e| match e.kind() {
            Some("context.undone") => false,
            Some("context.undo") => !paired.contains(&e.line()),
            _ => true,
        })
        .collect();
    for (entry, origin) in off_chain {
        if origin
            .owner_prompt_id()
            .is_none_or(|id| live_prompts.contains(id))
        {
            out.push(entry);
        }
    }
    out.sort_by_key(|e| e.line());
    Ok(out)
}

/// Why no fork line exists (reported as `SESSION_UNDO_UNAVAILABLE`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ForkLineError {
    #[error("Nothing to undo: would cross a compaction boundary")]
    CompactionBoundary,
    #[error("Nothing to undo: only {available} of {requested} requested turn(s) available")]
    Insufficient { available: u64, requested: u64 },
    #[error("Nothing to undo: no user message to undo")]
    NoUserMessage,
    #[error(transparent)]
    Tree(#[from] TreeError),
}

/// An undo anchor (core.md §a.3 with the 2.1 rule): a user message whose origin is absent, a
/// plain user prompt not steered into a running turn, or a user-slash skill/plugin command.
pub fn is_undo_anchor(message: &Value) -> bool {
    if message.get("role").and_then(Value::as_str) != Some("user") {
        return false;
    }
    let Some(origin) = message.get("origin") else {
        return true;
    };
    let Ok(origin) = serde_json::from_value::<Origin>(origin.clone()) else {
        return false;
    };
    if origin.in_turn() {
        return false;
    }
    match origin.kind() {
        "user" => true,
        // Only skills and plugin commands the user typed as `/name`; an origin kept verbatim
        // (a field did not parse) is judged by its `trigger` alone.
        "skill_activation" | "plugin_command" => match &origin {
            Origin::Known(_) => origin.is_user_slash(),
            Origin::Other(map) => {
                map.get("trigger").and_then(Value::as_str)
                    == Some(kimi_protocol::origin::TRIGGER_USER_SLASH)
            }
        },
        _ => false,
    }
}

enum Item<'a> {
    Message { line: u64, message: &'a Value },
    Compaction,
}

/// The fork line for undoing `turns` anchors on the active chain (core-2.1 §4.1): the line of the
/// first removed message minus one.
pub fn compute_fork_line(tree: &Tree, entries: &[Entry], turns: u64) -> Result<u64, ForkLineError> {
    let chain = active_chain(tree, entries)?;
    let paired: HashSet<u64> = tree
        .edges
        .iter()
        .filter_map(|e| e.legacy_undo_line)
        .collect();
    let start = chain
        .iter()
        .rposition(|e| record_type(&e.value) == Some("context.clear"))
        .map_or(0, |i| i + 1);
    let mut items: Vec<Item> = Vec::new();
    for entry in &chain[start..] {
        match record_type(&entry.value) {
            Some("context.append_message") => {
                if let Some(message) = entry.value.get("message") {
                    items.push(Item::Message {
                        line: entry.line,
                        message,
                    });
                }
            }
            Some("context.apply_compaction") => items.push(Item::Compaction),
            Some("context.undo") if !paired.contains(&entry.line) => {
                // An unpaired legacy undo cuts history the old way.
                let count = entry
                    .value
                    .get("count")
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                if count > 0
                    && let Ok(cut) = find_cut(&items, count)
                {
                    items.truncate(cut);
                }
            }
            _ => {}
        }
    }
    let cut = find_cut(&items, turns)?;
    match items.get(cut) {
        Some(Item::Message { line, .. }) => Ok(line - 1),
        Some(Item::Compaction) | None => Err(ForkLineError::NoUserMessage),
    }
}

fn is_injection(message: &Value) -> Option<Option<String>> {
    let origin: Origin = serde_json::from_value(message.get("origin")?.clone()).ok()?;
    origin
        .is_injection()
        .then(|| origin.owner_prompt_id().map(str::to_owned))
}

/// Index of the first removed item when undoing `count` anchors.
fn find_cut(items: &[Item], count: u64) -> Result<usize, ForkLineError> {
    let mut removed = 0u64;
    let mut cut = None;
    for (i, item) in items.iter().enumerate().rev() {
        let message = match item {
            // Enough anchors break out before this, so reaching a compaction means too few.
            Item::Compaction => return Err(ForkLineError::CompactionBoundary),
            Item::Message { message, .. } => message,
        };
        if is_injection(message).is_some() {
            continue;
        }
        if is_undo_anchor(message) {
            removed += 1;
            let mut at = i;
            // Pull in injections owned by this prompt that sit right before it.
            let prompt_id = message.get("id").and_then(Value::as_str);
            while at > 0 {
                match &items[at - 1] {
                    Item::Message { message: prev, .. }
                        if prompt_id.is_some()
                            && is_injection(prev).flatten().as_deref() == prompt_id =>
                    {
                        at -= 1;
                    }
                    _ => break,
                }
            }
            cut = Some(at);
            if removed == count {
                break;
            }
        }
    }
    match cut {
        Some(cut) if removed >= count => Ok(cut),
        Some(_) => Err(ForkLineError::Insufficient {
            available: removed,
            requested: count,
        }),
        None => Err(ForkLineError::NoUserMessage),
    }
}

/// The undo triple (core-2.1 §4.1), all with the same `time`. `line_count` is the journal's
/// current number of lines; the edge goes on the next line.
pub fn build_undo_switch_records(
    tree: &Tree,
    line_count: u64,
    fork_line: u64,
    agent_id: &str,
    turns: u64,
    from_turn_id: Option<u64>,
    time: u64,
) -> (String, [Value; 3]) {
    let branch = format!("b{}", tree.edges.len() + 1);
    let edge_line = line_count + 1;
    let mut switched = Map::new();
    switched.insert("type".into(), "agent.switched".into());
    switched.insert("agentId".into(), agent_id.into());
    switched.insert("branch".into(), branch.clone().into());
    switched.insert("reason".into(), "undo".into());
    let mut base = Map::new();
    base.insert("branch".into(), tree.owner_of(fork_line).into());
    base.insert("line".into(), fork_line.into());
    switched.insert("base".into(), Value::Object(base));
    switched.insert("turns".into(), turns.into());
    switched.insert("legacyUndoLine".into(), (edge_line + 1).into());
    switched.insert("time".into(), time.into());
    let mut undo = Map::new();
    undo.insert("type".into(), "context.undo".into());
    undo.insert("agentId".into(), agent_id.into());
    undo.insert("count".into(), turns.into());
    undo.insert("time".into(), time.into());
    let mut undone = Map::new();
    undone.insert("type".into(), "context.undone".into());
    undone.insert("agentId".into(), agent_id.into());
    undone.insert("turns".into(), turns.into());
    if let Some(id) = from_turn_id {
        undone.insert("fromTurnId".into(), id.into());
    }
    undone.insert("time".into(), time.into());
    (
        branch,
        [
            Value::Object(switched),
            Value::Object(undo),
            Value::Object(undone),
        ],
    )
}

#[cfg(test)]
#[path = "tree_tests.rs"]
mod tests;
