//! The `Tool` trait: a tool turns arguments into an execution (plan + run), so the executor can
//! schedule by accesses and ask permission by approval subject before anything runs.

use async_trait::async_trait;
use kimi_protocol::ToolSchema;
use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::access::Access;
use crate::context::{ProgressSink, ToolContext};
use crate::error::ToolError;
use crate::result::ToolResult;

/// What the UI shows for a call before and while it runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct ToolDisplay {
    /// A short kind tag (`read`, `write`, `edit`, `search`, `shell`, `task`, …).
    pub kind: String,
    /// One line: the path, the pattern or the command.
    pub summary: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Unified diff of the change (Write/Edit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
}

/// How permission-rule patterns `Tool(pattern)` match this call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleSubject {
    /// Matched as a path-aware glob (`*` stays in one component, `**` crosses them).
    Path(String),
    /// Matched as a plain glob where `*` matches anything (commands, patterns, queries).
    Text(String),
    /// Rules match by tool name only.
    NameOnly,
}

/// The execution plan of one call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolPlan {
    /// `None` = the tool declared nothing and runs exclusively (`[all]`).
    pub accesses: Option<Vec<Access>>,
    /// What "approve for this session" remembers.
    pub approval_rule: String,
    pub subject: RuleSubject,
    pub display: ToolDisplay,
    /// A short description of the call for approval prompts.
    pub description: String,
    pub stop_batch_after_this: bool,
}

impl ToolPlan {
    /// The plan of a recursive search tool (Glob, Grep): one `search` access on `root`, the
    /// pattern as the rule subject, and "<verb> <pattern> in <root>" as the description.
    pub fn search(tool: &str, pattern: &str, root: &std::path::Path, verb: &str) -> ToolPlan {
        let shown = root.display().to_string();
        ToolPlan {
            accesses: Some(vec![Access::file_recursive(
                crate::access::FileOperation::Search,
                shown.clone(),
            )]),
            approval_rule: format!("{tool}({pattern})"),
            subject: RuleSubject::Text(pattern.to_owned()),
            display: ToolDisplay {
                kind: "search".to_owned(),
                summary: format!("{pattern} in {shown}"),
                detail: None,
                diff: None,
            },
            description: format!("{verb} {pattern} in {shown}"),
            stop_batch_after_this: false,
        }
    }

    /// The accesses the scheduler uses.
    pub fn effective_accesses(&self) -> Vec<Access> {
        self.accesses.clone().unwrap_or_else(|| vec![Access::All])
    }
}

/// A resolved call, ready to run.
#[async_trait]
pub trait Execution: Send + Sync {
    fn plan(&self) -> &ToolPlan;

    async fn execute(
        self: Box<Self>,
        ctx: &ToolContext,
        cancel: CancellationToken,
        progress: ProgressSink,
    ) -> ToolResult;
}

/// What `resolve` produced.
pub enum Resolution {
    Run(Box<dyn Execution>),
    /// A synthetic result returned without running anything.
    Result(ToolResult),
}

impl std::fmt::Debug for Resolution {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Resolution::Run(exec) => f.debug_tuple("Run").field(exec.plan()).finish(),
            Resolution::Result(r) => f.debug_tuple("Result").field(r).finish(),
        }
    }
}

#[async_trait]
pub trait Tool: Send + Sync {
    fn name(&self) -> &str;
    fn description(&self) -> String;
    /// JSON schema of the arguments.
    fn parameters(&self) -> Value;

    fn schema(&self) -> ToolSchema {
        ToolSchema {
            name: self.name().to_owned(),
            description: self.description(),
            parameters: self.parameters(),
        }
    }

    /// Turn validated arguments into an execution. A `ToolError` (for example a path-security
    /// refusal) is returned to the model as the call's error result.
    fn resolve(&self, args: Value, ctx: &ToolContext) -> Result<Resolution, ToolError>;
}

/// Run a call end to end without the executor (tests, debug commands).
pub async fn run_tool(tool: &dyn Tool, args: Value, ctx: &ToolContext) -> ToolResult {
    match tool.resolve(args, ctx) {
        Ok(Resolution::Run(exec)) => {
            exec.execute(ctx, CancellationToken::new(), ProgressSink::none())
                .await
        }
        Ok(Resolution::Result(result)) => result,
        Err(err) => ToolResult::error(err.to_string()),
    }
}

/// Deserialize arguments into a tool's typed parameters with a readable error.
pub fn parse_args<T: serde::de::DeserializeOwned>(args: Value) -> Result<T, ToolError> {
    serde_json::from_value(args).map_err(|e| ToolError::InvalidArgs(e.to_string()))
}
