//! Progressive tool disclosure (experimental flag `tool-select`, surface.md §2.8 and §10): MCP
//! tools' schemas stay out of the request's tool list. The model is told their names in
//! `<tools_added>` / `<tools_removed>` announcements (hidden injections, variant
//! `loadable-tools`) and loads the schemas it needs with `select_tools`.
//!
//! Everything is a fold over the agent's history, so resume, undo and compaction need nothing
//! of their own: the announced names are the announcements folded in order; the loaded tools
//! are the "dynamic tool schema" messages (`Message::tools`) that `select_tools` journals with
//! its result, which the providers already turn into request tools. A compaction drops both,
//! and the next step announces every loadable tool again.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use kimi_protocol::origin::KnownOrigin;
use kimi_protocol::{ContentPart, Message, Origin, Role, ToolSchema};
use kimi_tools::tool::{RuleSubject, ToolDisplay, parse_args};
use kimi_tools::{
    Execution, ProgressSink, Resolution, Tool, ToolContext, ToolError, ToolPlan, ToolResult,
};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::engine::runtime::Runtime;

/// The loader tool's name.
pub const SELECT_TOOLS: &str = "select_tools";
/// The injection variant of an announcement.
pub const ANNOUNCEMENT_VARIANT: &str = "loadable-tools";

const ADDED_OPEN: &str = "<tools_added>";
const ADDED_CLOSE: &str = "</tools_added>";
const REMOVED_OPEN: &str = "<tools_removed>";
const REMOVED_CLOSE: &str = "</tools_removed>";

/// Whether a tool's schema is deferred (MCP tools, the sign-in tools included).
pub fn is_deferred(name: &str) -> bool {
    name.starts_with("mcp__")
}

/// What the loader knows as of the current request: the deferred tools the agent may use now
/// (with their schemas) and those already loaded.
#[derive(Default)]
struct View {
    loadable: BTreeMap<String, ToolSchema>,
    loaded: BTreeSet<String>,
}

/// One agent's disclosure state, shared by its turn loop and its `select_tools` tool.
#[derive(Default)]
pub struct ToolSelect {
    view: Mutex<View>,
}

impl std::fmt::Debug for ToolSelect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let view = self.lock();
        f.debug_struct("ToolSelect")
            .field("loadable", &view.loadable.keys().collect::<Vec<_>>())
            .field("loaded", &view.loaded)
            .finish()
    }
}

/// What `select_tools` made of the names it was given.
#[derive(Debug, Default, PartialEq)]
pub struct Loading {
    pub loaded: Vec<ToolSchema>,
    pub already: Vec<String>,
    pub unknown: Vec<String>,
}

impl ToolSelect {
    pub fn new() -> Arc<Self> {
        Arc::new(ToolSelect::default())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, View> {
        self.view
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Shape one request: `tools` (the registry's schemas) loses the deferred ones, and the
    /// schema declarations in `messages` keep only tools that can still be used, each with its
    /// current schema (a reconnected server may have changed it; a removed one's tools go).
    /// `pending` tells whether a server still connecting may provide a name: its loaded tools
    /// stay declared as they were (a call to one waits for the server).
    pub fn shape(
        &self,
        tools: Vec<ToolSchema>,
        history: &[Message],
        messages: &mut Vec<Message>,
        pending: &dyn Fn(&str) -> bool,
    ) -> Vec<ToolSchema> {
        let (kept, deferred): (Vec<ToolSchema>, Vec<ToolSchema>) =
            tools.into_iter().partition(|t| !is_deferred(&t.name));
        let loadable: BTreeMap<String, ToolSchema> =
            deferred.into_iter().map(|t| (t.name.clone(), t)).collect();
        messages.retain_mut(|message| {
            let Some(declared) = message.tools.take() else {
                return true;
            };
            let current: Vec<ToolSchema> = declared
                .iter()
                .filter_map(|t| match loadable.get(&t.name) {
                    Some(schema) => Some(schema.clone()),
                    None => pending(&t.name).then(|| t.clone()),
                })
                .collect();
            if current.is_empty() {
                return !(message.content.is_empty() && message.tool_calls.is_empty());
            }
            message.tools = Some(current);
            true
        });
        let loaded = declared_names(history)
            .into_iter()
            .filter(|name| loadable.contains_key(name))
            .collect();
        *self.lock() = View { loadable, loaded };
        kept
    }

    /// The announcement due now, if the loadable tools changed since the announcements in
    /// `history`: `loadable` must be sorted. A name a server still connecting may provide is
    /// not announced as removed (`pending`).
    pub fn announcement(
        loadable: &[String],
        history: &[Message],
        pending: &dyn Fn(&str) -> bool,
    ) -> Option<String> {
        let announced = announced_names(history);
        let added: Vec<&str> = loadable
            .iter()
            .filter(|n| !announced.contains(*n))
            .map(String::as_str)
            .collect();
        let removed: Vec<&str> = announced
            .iter()
            .filter(|n| loadable.binary_search(n).is_err() && !pending(n))
            .map(String::as_str)
            .collect();
        if added.is_empty() && removed.is_empty() {
            return None;
        }
        let mut sections = Vec::new();
        if !added.is_empty() {
            sections.push(format!("{ADDED_OPEN}\n{}\n{ADDED_CLOSE}", added.join("\n")));
        }
        if !removed.is_empty() {
            sections.push(format!(
                "{REMOVED_OPEN}\n{}\n{REMOVED_CLOSE}",
                removed.join("\n")
            ));
        }
        sections.push(
            "Use the select_tools tool with exact names to load full tool definitions before calling them. Names listed as removed are no longer loadable — do not select them. Fold all announcements in this conversation in order to get the current list."
                .to_owned(),
        );
        Some(sections.join("\n\n"))
    }

    /// Load `names`: each is loaded now, already loaded, or unknown.
    pub fn load(&self, names: &[String]) -> Loading {
        let mut view = self.lock();
        let mut out = Loading::default();
        let mut seen = BTreeSet::new();
        for name in names {
            if !seen.insert(name.as_str()) {
                continue;
            }
            if view.loaded.contains(name) {
                out.already.push(name.clone());
            } else if let Some(schema) = view.loadable.get(name).cloned() {
                out.loaded.push(schema);
            } else {
                out.unknown.push(name.clone());
            }
        }
        for schema in &out.loaded {
            view.loaded.insert(schema.name.clone());
        }
        out
    }

    /// Names close to `name` among the loadable tools, best first (at most five).
    pub fn close_matches(&self, name: &str) -> Vec<String> {
        let view = self.lock();
        let candidates: Vec<&str> = view.loadable.keys().map(String::as_str).collect();
        let lower = name.to_lowercase();
        let tail = lower.rsplit("__").next().unwrap_or(&lower).to_owned();
        let mut out: Vec<String> = kimi_config::did_you_mean(name, candidates.iter().copied())
            .into_iter()
            .collect();
        for candidate in candidates {
            let c = candidate.to_lowercase();
            let related = (!tail.is_empty() && c.contains(&tail))
                || c.rsplit("__").next().is_some_and(|t| lower.contains(t));
            if related && !out.iter().any(|o| o == candidate) {
                out.push(candidate.to_owned());
            }
        }
        out.truncate(5);
        out
    }

    /// The executor's veto for a deferred tool the model calls without loading it first.
    pub fn veto(&self, name: &str) -> Option<String> {
        let view = self.lock();
        (is_deferred(name) && view.loadable.contains_key(name) && !view.loaded.contains(name))
            .then(|| {
                format!(
                    "Tool \"{name}\" is available but not loaded. Call select_tools with [\"{name}\"] first, then call the tool."
                )
            })
    }
}

/// The tools declared by schema messages in `history`.
fn declared_names(history: &[Message]) -> BTreeSet<String> {
    history
        .iter()
        .flat_map(|m| m.tools.iter().flatten())
        .map(|t| t.name.clone())
        .collect()
}

fn is_announcement(message: &Message) -> bool {
    matches!(
        message.origin.as_ref().and_then(Origin::known),
        Some(KnownOrigin::Injection { variant, .. }) if variant == ANNOUNCEMENT_VARIANT
    )
}

/// The names the announcements in `history` leave announced, folded in order.
fn announced_names(history: &[Message]) -> BTreeSet<String> {
    let mut announced = BTreeSet::new();
    for message in history.iter().filter(|m| is_announcement(m)) {
        let text = message.text();
        for name in block_names(&text, REMOVED_OPEN, REMOVED_CLOSE) {
            announced.remove(name);
        }
        for name in block_names(&text, ADDED_OPEN, ADDED_CLOSE) {
            announced.insert(name.to_owned());
        }
    }
    announced
}

/// The names (one a line) inside every `open … close` block of `text`.
fn block_names<'a>(text: &'a str, open: &str, close: &str) -> Vec<&'a str> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(open) {
        let body = &rest[start + open.len()..];
        let Some(end) = body.find(close) else { break };
        names.extend(body[..end].lines().map(str::trim).filter(|l| !l.is_empty()));
        rest = &body[end + close.len()..];
    }
    names
}

/// A history without what disclosure added (announcements and schema declarations), for an
/// agent that runs without it (the flag was turned off since): `None` when there is nothing
/// to take out.
pub fn without_disclosure(history: &[Message]) -> Option<Vec<Message>> {
    let marked = |m: &Message| is_announcement(m) || m.tools.is_some();
    if !history.iter().any(marked) {
        return None;
    }
    Some(
        history
            .iter()
            .filter(|m| !is_announcement(m))
            .filter_map(|m| {
                let mut m = m.clone();
                if m.tools.take().is_some() && m.content.is_empty() && m.tool_calls.is_empty() {
                    return None;
                }
                Some(m)
            })
            .collect(),
    )
}

/// The step gate's part: announce what changed in the loadable tools since the last
/// announcement (servers that connected or went away), owned by the turn's prompt.
pub fn announce(rt: &Runtime, prompt_id: &str) {
    if rt.config.tool_select.is_none() {
        return;
    }
    let mut loadable: Vec<String> = rt
        .config
        .tools
        .names()
        .into_iter()
        .filter(|n| is_deferred(n))
        .collect();
    loadable.sort();
    let late = rt.config.tools.late();
    let pending = |name: &str| late.is_some_and(|late| late.may_provide(name));
    let text = ToolSelect::announcement(&loadable, rt.log().history().messages(), &pending);
    if let Some(text) = text {
        let mut message = Message::new(Role::User, vec![ContentPart::text(text)]);
        message.origin = Some(Origin::Known(KnownOrigin::Injection {
            variant: ANNOUNCEMENT_VARIANT.to_owned(),
            owner_prompt_id: Some(prompt_id.to_owned()),
            disclosure: None,
        }));
        rt.commit(vec![crate::engine::records::message(message)]);
    }
}

/// `select_tools`: loads the schemas of announced tools by exact name.
pub struct SelectToolsTool(Arc<ToolSelect>);

impl SelectToolsTool {
    pub fn new(state: Arc<ToolSelect>) -> Self {
        SelectToolsTool(state)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    names: Vec<String>,
}

struct Load {
    plan: ToolPlan,
    state: Arc<ToolSelect>,
    names: Vec<String>,
}

#[async_trait]
impl Execution for Load {
    fn plan(&self) -> &ToolPlan {
        &self.plan
    }

    async fn execute(
        self: Box<Self>,
        _ctx: &ToolContext,
        _cancel: CancellationToken,
        _progress: ProgressSink,
    ) -> ToolResult {
        let Loading {
            loaded,
            already,
            unknown,
        } = self.state.load(&self.names);
        let mut lines = Vec::new();
        if !loaded.is_empty() {
            let names: Vec<&str> = loaded.iter().map(|t| t.name.as_str()).collect();
            lines.push(format!("Loaded: {}", names.join(", ")));
        }
        if !already.is_empty() {
            lines.push(format!("Already available: {}", already.join(", ")));
        }
        for name in &unknown {
            let close = self.state.close_matches(name);
            let hint = if close.is_empty() {
                "Pick from the latest announced tools list.".to_owned()
            } else {
                format!("Did you mean: {}?", close.join(", "))
            };
            lines.push(format!("Unknown tool: {name}. {hint}"));
        }
        let text = lines.join("\n");
        if loaded.is_empty() && already.is_empty() {
            return ToolResult::error(text);
        }
        let mut result = ToolResult::ok(text);
        if !loaded.is_empty() {
            // The schemas join the history after this result (see the turn host), so the
            // next request — and a resumed session — carries them.
            let mut declaration = Message::new(Role::User, Vec::new());
            declaration.tools = Some(loaded);
            result = result.with_records([crate::engine::records::message(declaration)]);
        }
        result
    }
}

#[async_trait]
impl Tool for SelectToolsTool {
    fn name(&self) -> &str {
        SELECT_TOOLS
    }

    fn description(&self) -> String {
        "Load one or more tools by name so you can call them. All available tool names are listed in the <tools_added>/<tools_removed> announcements in the system context — fold them in order to get the current list. Pass the exact name(s) you need; their full definitions become available immediately, so you can call them directly in your next tool call.".to_owned()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "names": {
                    "type": "array",
                    "items": {"type": "string"},
                    "minItems": 1,
                    "description": "Exact tool names to load, taken from the latest announced tool list."
                }
            },
            "required": ["names"],
            "additionalProperties": false
        })
    }

    fn resolve(&self, args: Value, _ctx: &ToolContext) -> Result<Resolution, ToolError> {
        let Params { names } = parse_args(args)?;
        if names.is_empty() {
            return Err(ToolError::InvalidArgs(
                "`names` must list at least one tool name".to_owned(),
            ));
        }
        let summary = format!("Loading {}", names.join(", "));
        let plan = ToolPlan {
            accesses: Some(Vec::new()),
            approval_rule: SELECT_TOOLS.to_owned(),
            subject: RuleSubject::NameOnly,
            display: ToolDisplay {
                kind: "select_tools".to_owned(),
                summary: summary.clone(),
                detail: None,
                diff: None,
            },
            description: summary,
            stop_batch_after_this: false,
        };
        Ok(Resolution::Run(Box::new(Load {
            plan,
            state: Arc::clone(&self.0),
            names,
        })))
    }
}

#[cfg(test)]
#[path = "tool_select_tests.rs"]
mod tests;
