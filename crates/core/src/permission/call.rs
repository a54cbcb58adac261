//! The facts about one tool call that permission policies and listeners decide on. The engine
//! adapts a tool's execution plan (kimi-tools) into this shape; nothing here depends on tools.

use std::path::PathBuf;
use std::sync::Arc;

use super::paths::Workspace;
use super::shell::{self, ShellParse};

/// How a declared file access uses its path (`write` and `readwrite` count as writing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessOp {
    Read,
    Write,
    Readwrite,
    Search,
}

impl AccessOp {
    pub fn writes(self) -> bool {
        match self {
            AccessOp::Write | AccessOp::Readwrite => true,
            AccessOp::Read | AccessOp::Search => false,
        }
    }
}

/// One declared file access, with its path already resolved by [`Workspace::resolve`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileAccess {
    pub op: AccessOp,
    pub path: PathBuf,
    pub recursive: bool,
}

/// What the argument part of a rule `Tool(pattern)` is matched against (surface.md §3.3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    /// A resolved absolute path, matched path-aware (case-insensitive, `*` within a component).
    Path(PathBuf),
    /// A command, search pattern, query, URL, profile name, task id…; `*` matches anything.
    Text(String),
    /// The tool accepts name-only rules (MCP tools, TodoList, AskUserQuestion…).
    NameOnly,
}

/// One tool call as the permission chain sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallFacts {
    pub tool_name: String,
    pub subject: Subject,
    /// What "approve for this session" remembers: `Tool(escaped subject)` or the bare name.
    pub approval_rule: String,
    /// Declared file accesses; empty when the tool declares none (`all`, e.g. Bash, MCP).
    pub accesses: Vec<FileAccess>,
    /// For Bash: the command line parsed once into what it runs (rules and the floor read it).
    pub shell: Option<Arc<ShellParse>>,
}

/// Tools whose text subject is a shell command line.
pub fn is_shell_tool(tool_name: &str) -> bool {
    tool_name == "Bash"
}

fn shell_of(tool_name: &str, subject: &Subject) -> Option<Arc<ShellParse>> {
    match subject {
        Subject::Text(command) if is_shell_tool(tool_name) => Some(Arc::new(shell::parse(command))),
        Subject::Text(_) | Subject::Path(_) | Subject::NameOnly => None,
    }
}

impl CallFacts {
    /// The general constructor the engine's plan adapter uses: the approval rule is derived
    /// from the subject here (escaped), so session memory always matches its own call. Paths in
    /// `subject` and `accesses` must already be resolved with [`Workspace::resolve`].
    pub fn new(tool_name: &str, subject: Subject, accesses: Vec<FileAccess>) -> CallFacts {
        let approval_rule = match &subject {
            Subject::Path(p) => approval_rule_for(tool_name, Some(&p.to_string_lossy())),
            Subject::Text(t) => approval_rule_for(tool_name, Some(t)),
            Subject::NameOnly => approval_rule_for(tool_name, None),
        };
        CallFacts {
            tool_name: tool_name.to_owned(),
            shell: shell_of(tool_name, &subject),
            subject,
            approval_rule,
            accesses,
        }
    }

    /// A call whose only subject is its name (MCP tools, TodoList, …).
    pub fn name_only(tool_name: &str) -> CallFacts {
        CallFacts {
            tool_name: tool_name.to_owned(),
            subject: Subject::NameOnly,
            approval_rule: tool_name.to_owned(),
            accesses: Vec::new(),
            shell: None,
        }
    }

    /// A call whose subject is text (Bash command, Grep pattern, URL, …) and that declares no
    /// file accesses.
    pub fn text(tool_name: &str, subject: &str) -> CallFacts {
        CallFacts::new(tool_name, Subject::Text(subject.to_owned()), Vec::new())
    }

    /// A single-path call (Read, Write, Edit, ReadMediaFile): resolves `raw_path` against the
    /// workspace (following `..` and symlinks) and declares one access on it.
    pub fn path(tool_name: &str, op: AccessOp, raw_path: &str, workspace: &Workspace) -> CallFacts {
        let resolved = workspace.resolve(raw_path);
        let shown = resolved.to_string_lossy().into_owned();
        CallFacts {
            tool_name: tool_name.to_owned(),
            approval_rule: approval_rule_for(tool_name, Some(&shown)),
            subject: Subject::Path(resolved.clone()),
            accesses: vec![FileAccess {
                op,
                path: resolved,
                recursive: false,
            }],
            shell: None,
        }
    }

    /// Whether the tool is an MCP tool (`mcp__<server>__<tool>`).
    pub fn is_mcp(&self) -> bool {
        self.tool_name.starts_with("mcp__")
    }

    /// The shell parse of a Bash call.
    pub fn shell(&self) -> Option<&ShellParse> {
        self.shell.as_deref()
    }

    /// The paths this call writes.
    pub fn write_targets(&self) -> impl Iterator<Item = &FileAccess> {
        self.accesses.iter().filter(|a| a.op.writes())
    }
}

/// The session-approval string for a call: the tool name plus the glob-escaped literal subject,
/// so that remembering `npm run *` approves exactly that text and not every npm command.
pub fn approval_rule_for(tool_name: &str, subject: Option<&str>) -> String {
    match subject {
        // `Tool()` would mean "name only" and approve every call; `!?*` matches exactly the
        // empty subject.
        Some("") => format!("{tool_name}(!?*)"),
        Some(subject) => format!("{tool_name}({})", escape_glob(subject)),
        None => tool_name.to_owned(),
    }
}

/// Escapes every glob metacharacter with a backslash (rule globs are built with backslash
/// escapes on), and a leading `!` so a literal subject is never read as a negation.
pub fn escape_glob(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for (i, c) in text.chars().enumerate() {
        let special = matches!(c, '\\' | '?' | '*' | '[' | ']' | '{' | '}') || (i == 0 && c == '!');
        if special {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::*;
    use crate::permission::rules::{MatchContext, RulePattern};

    #[test]
    fn constructors_agree_on_the_approval_rule() {
        let ctx = MatchContext {
            cwd: Path::new("/w"),
            home: None,
        };
        let path = PathBuf::from("/w/a*b.rs");
        let by_new = CallFacts::new("Write", Subject::Path(path), Vec::new());
        assert_eq!(by_new.approval_rule, "Write(/w/a\\*b.rs)");
        let pattern = RulePattern::parse(&by_new.approval_rule).unwrap();
        assert!(pattern.matches(&by_new, ctx));
        assert_eq!(
            CallFacts::new("Bash", Subject::Text("ls".into()), Vec::new()),
            CallFacts::text("Bash", "ls")
        );
        assert_eq!(
            CallFacts::new("TodoList", Subject::NameOnly, Vec::new()),
            CallFacts::name_only("TodoList")
        );
        assert_eq!(approval_rule_for("Grep", Some("")), "Grep(!?*)");
        assert_eq!(escape_glob("!a[b]\\"), "\\!a\\[b\\]\\\\");
        assert!(AccessOp::Readwrite.writes() && !AccessOp::Search.writes());
    }
}
