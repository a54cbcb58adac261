//! Shared fixtures: a temporary workspace with a tool context rooted in it.

use std::path::{Path, PathBuf};

use kimi_tools::tool::run_tool;
use kimi_tools::{Tool, ToolContext, ToolResult};
use serde_json::Value;

pub struct Workspace {
    _dir: tempfile::TempDir,
    pub agent: tempfile::TempDir,
    pub ctx: ToolContext,
}

impl Workspace {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let agent = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let ctx = ToolContext::new(root, agent.path());
        Self {
            _dir: dir,
            agent,
            ctx,
        }
    }

    pub fn root(&self) -> PathBuf {
        self.ctx.cwd.clone()
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root().join(rel)
    }

    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, content).unwrap();
        p
    }

    pub async fn run(&self, tool: &dyn Tool, args: Value) -> ToolResult {
        run_tool(tool, args, &self.ctx).await
    }
}

pub fn text(result: &ToolResult) -> String {
    result.text().unwrap()
}

pub fn shown(path: &Path) -> String {
    path.display().to_string()
}
