//! WebSearch: query the configured search service (a host-provided backend) and return results
//! as blocks the model can cite. Only registered when a backend exists.

use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::context::{ProgressSink, ToolContext};
use crate::error::ToolError;
use crate::result::ToolResult;
use crate::tool::{Execution, Resolution, RuleSubject, Tool, ToolDisplay, ToolPlan, parse_args};

/// One search hit.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SearchHit {
    pub title: String,
    pub site: String,
    pub date: Option<String>,
    pub url: String,
    pub snippet: String,
}

/// How a search failed, so the model gets a message it can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SearchError {
    #[error("The search was cancelled.")]
    Cancelled,
    #[error("The search service did not answer in time. Try again, or with a simpler query.")]
    Timeout,
    #[error(
        "The search service rejected the credentials ({0}). The user needs to log in again or fix the search configuration."
    )]
    Authentication(String),
    #[error("The search service could not be reached: {0}")]
    Network(String),
    #[error("The search failed: {0}")]
    Other(String),
}

/// The configured search service (`[services.moonshot_search]`, managed login, …).
#[async_trait]
pub trait SearchBackend: Send + Sync {
    async fn search(
        &self,
        query: &str,
        cancel: CancellationToken,
    ) -> Result<Vec<SearchHit>, SearchError>;
}

#[derive(Debug, Deserialize)]
struct Params {
    query: String,
}

/// The tool, bound to its backend.
#[derive(Clone)]
pub struct WebSearchTool {
    backend: Arc<dyn SearchBackend>,
}

impl WebSearchTool {
    pub fn new(backend: Arc<dyn SearchBackend>) -> Self {
        Self { backend }
    }
}

/// Results as `Title / Site / Date / URL / Snippet` blocks separated by `---`.
pub fn render_hits(query: &str, hits: &[SearchHit]) -> String {
    if hits.is_empty() {
        return format!("No results for \"{query}\".");
    }
    let blocks: Vec<String> = hits
        .iter()
        .map(|h| {
            let mut lines = vec![format!("Title: {}", h.title), format!("Site: {}", h.site)];
            if let Some(date) = &h.date {
                lines.push(format!("Date: {date}"));
            }
            lines.push(format!("URL: {}", h.url));
            lines.push(format!("Snippet: {}", h.snippet));
            lines.join("\n")
        })
        .collect();
    format!(
        "{}\n---\nWhen you use these results, cite them as Markdown links [title](URL).",
        blocks.join("\n---\n")
    )
}

#[async_trait]
impl Tool for WebSearchTool {
    fn name(&self) -> &str {
        "WebSearch"
    }

    fn description(&self) -> String {
        "Search the web. Returns titles, sites, dates, URLs and snippets; cite what you use as Markdown links.".to_owned()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"query": {"type": "string", "minLength": 1, "description": "The search query."}},
            "required": ["query"],
            "additionalProperties": false
        })
    }

    fn resolve(&self, args: Value, _ctx: &ToolContext) -> Result<Resolution, ToolError> {
        let p: Params = parse_args(args)?;
        if p.query.trim().is_empty() {
            return Err(ToolError::InvalidArgs(
                "query must not be empty.".to_owned(),
            ));
        }
        Ok(Resolution::Run(Box::new(SearchExecution {
            plan: ToolPlan {
                accesses: Some(Vec::new()),
                approval_rule: format!("WebSearch({})", p.query),
                subject: RuleSubject::Text(p.query.clone()),
                display: ToolDisplay {
                    kind: "search".to_owned(),
                    summary: p.query.clone(),
                    detail: None,
                    diff: None,
                },
                description: format!("Search the web for {}", p.query),
                stop_batch_after_this: false,
            },
            backend: self.backend.clone(),
            query: p.query,
        })))
    }
}

struct SearchExecution {
    plan: ToolPlan,
    backend: Arc<dyn SearchBackend>,
    query: String,
}

#[async_trait]
impl Execution for SearchExecution {
    fn plan(&self) -> &ToolPlan {
        &self.plan
    }

    async fn execute(
        self: Box<Self>,
        _ctx: &ToolContext,
        cancel: CancellationToken,
        _progress: ProgressSink,
    ) -> ToolResult {
        let outcome = tokio::select! {
            r = self.backend.search(&self.query, cancel.clone()) => r,
            () = cancel.cancelled() => Err(SearchError::Cancelled),
        };
        match outcome {
            Ok(hits) => ToolResult::ok(render_hits(&self.query, &hits)),
            Err(e) => ToolResult::error(e.to_string()),
        }
    }
}
