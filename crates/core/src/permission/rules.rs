//! Permission rule patterns `Tool` / `Tool(arg-glob)` and how they match a call (surface.md
//! §3.3). The same matcher serves user rules and remembered session approvals.

use std::path::Path;

use globset::{GlobBuilder, GlobMatcher};

use super::call::{CallFacts, Subject};
use super::paths::{expand_tilde, normalize_lexically};

/// Why a pattern could not be compiled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    #[error("pattern is empty; write a tool name such as `Bash` or `Bash(git *)`")]
    Empty,
    #[error("`{pattern}` has `(` without a closing `)` at the end; write `Tool(arg-pattern)`")]
    Unclosed { pattern: String },
    #[error(
        "`{pattern}` starts with `!`; negation applies to the argument, write `Tool(!glob)` instead"
    )]
    NegatedTool { pattern: String },
    #[error("invalid tool-name glob `{glob}` in `{pattern}`: {why}")]
    ToolGlob {
        pattern: String,
        glob: String,
        why: String,
    },
    #[error("invalid argument glob `{glob}` in `{pattern}`: {why}")]
    ArgGlob {
        pattern: String,
        glob: String,
        why: String,
    },
}

/// A compiled `Tool` or `Tool(arg)` pattern.
#[derive(Debug, Clone)]
pub struct RulePattern {
    text: String,
    tool: GlobMatcher,
    arg: Option<ArgPattern>,
}

#[derive(Debug, Clone)]
struct ArgPattern {
    negated: bool,
    glob: String,
    /// Compiled for text subjects; path subjects compile per call because relative patterns
    /// resolve against the cwd.
    text: GlobMatcher,
}

/// What a path-aware match needs besides the call: the cwd for relative patterns and `~`.
#[derive(Debug, Clone, Copy)]
pub struct MatchContext<'a> {
    pub cwd: &'a Path,
    pub home: Option<&'a Path>,
}

impl PartialEq for RulePattern {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}
impl Eq for RulePattern {}

impl RulePattern {
    /// Parses and validates a pattern; every glob is compiled here so a bad one is reported
    /// at load time rather than silently never matching.
    pub fn parse(pattern: &str) -> Result<RulePattern, PatternError> {
        let text = pattern.trim();
        if text.is_empty() {
            return Err(PatternError::Empty);
        }
        if text.starts_with('!') {
            return Err(PatternError::NegatedTool {
                pattern: text.to_owned(),
            });
        }
        let (tool_part, arg_part) = match text.find('(') {
            Some(open) => {
                let Some(inner) = text[open + 1..].strip_suffix(')') else {
                    return Err(PatternError::Unclosed {
                        pattern: text.to_owned(),
                    });
                };
                (text[..open].trim(), Some(inner))
            }
            None => (text, None),
        };
        if tool_part.is_empty() {
            return Err(PatternError::Empty);
        }
        let tool = GlobBuilder::new(tool_part)
            .backslash_escape(true)
            .build()
            .map_err(|e| PatternError::ToolGlob {
                pattern: text.to_owned(),
                glob: tool_part.to_owned(),
                why: e.kind().to_string(),
            })?
            .compile_matcher();
        let arg = match arg_part {
            // Empty parens mean "name only".
            None | Some("") => None,
            Some(raw) => {
                let (negated, glob) = match raw.strip_prefix('!') {
                    Some(rest) => (true, rest),
                    None => (false, raw),
                };
                let text_glob = text_glob(glob).map_err(|why| PatternError::ArgGlob {
                    pattern: text.to_owned(),
                    glob: glob.to_owned(),
                    why,
                })?;
                // Validate the path form too (it differs only in separator handling).
                path_glob(glob).map_err(|why| PatternError::ArgGlob {
                    pattern: text.to_owned(),
                    glob: glob.to_owned(),
                    why,
                })?;
                Some(ArgPattern {
                    negated,
                    glob: glob.to_owned(),
                    text: text_glob,
                })
            }
        };
        Ok(RulePattern {
            text: text.to_owned(),
            tool,
            arg,
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the pattern matches the call. An argument pattern never matches a tool that only
    /// accepts name-only rules.
    pub fn matches(&self, call: &CallFacts, ctx: MatchContext<'_>) -> bool {
        if !self.tool.is_match(&call.tool_name) {
            return false;
        }
        let Some(arg) = &self.arg else {
            return true;
        };
        let hit = match &call.subject {
            Subject::NameOnly => return false,
            Subject::Text(text) => arg.text.is_match(text),
            Subject::Path(path) => {
                let expanded = expand_tilde(&arg.glob, ctx.home);
                let absolute = if expanded.is_absolute() {
                    expanded
                } else {
                    ctx.cwd.join(expanded)
                };
                let pattern = normalize_lexically(&absolute);
                path_glob(&pattern.to_string_lossy()).is_ok_and(|g| g.is_match(path))
            }
        };
        hit != arg.negated
    }
}

fn text_glob(glob: &str) -> Result<GlobMatcher, String> {
    GlobBuilder::new(glob)
        .backslash_escape(true)
        .literal_separator(false)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| e.kind().to_string())
}

fn path_glob(glob: &str) -> Result<GlobMatcher, String> {
    GlobBuilder::new(glob)
        .backslash_escape(true)
        .literal_separator(true)
        .case_insensitive(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| e.kind().to_string())
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::permission::call::{AccessOp, FileAccess, approval_rule_for};

    fn ctx() -> MatchContext<'static> {
        MatchContext {
            cwd: Path::new("/work/proj"),
            home: Some(Path::new("/home/u")),
        }
    }

    fn path_call(tool: &str, path: &str) -> CallFacts {
        CallFacts {
            tool_name: tool.into(),
            subject: Subject::Path(PathBuf::from(path)),
            approval_rule: approval_rule_for(tool, Some(path)),
            accesses: vec![FileAccess {
                op: AccessOp::Write,
                path: PathBuf::from(path),
                recursive: false,
            }],
        }
    }

    #[test]
    fn matching_table() {
        let bash = |cmd: &str| CallFacts::text("Bash", cmd);
        let cases: Vec<(&str, CallFacts, bool)> = vec![
            ("Bash", bash("ls"), true),
            ("Bash()", bash("ls"), true),
            ("Read", bash("ls"), false),
            ("*", bash("ls"), true),
            ("Bash(git *)", bash("git status"), true),
            ("Bash(git *)", bash("gitk"), false),
            ("Bash(rm *)", bash("rm -rf /tmp/x"), true),
            ("Bash(!git *)", bash("rm x"), true),
            ("Bash(!git *)", bash("git log"), false),
            (
                "mcp__github__*",
                CallFacts::name_only("mcp__github__issue"),
                true,
            ),
            (
                "mcp__github__*",
                CallFacts::name_only("mcp__gitlab__issue"),
                false,
            ),
            (
                "mcp__github__*(x)",
                CallFacts::name_only("mcp__github__issue"),
                false,
            ),
            (
                "Write(src/**)",
                path_call("Write", "/work/proj/src/a/b.rs"),
                true,
            ),
            (
                "Write(src/*)",
                path_call("Write", "/work/proj/src/a/b.rs"),
                false,
            ),
            (
                "Write(src/*)",
                path_call("Write", "/work/proj/src/b.rs"),
                true,
            ),
            (
                "Write(SRC/*.RS)",
                path_call("Write", "/work/proj/src/b.rs"),
                true,
            ),
            ("Write(/etc/**)", path_call("Write", "/etc/passwd"), true),
            (
                "Write(~/.ssh/*)",
                path_call("Write", "/home/u/.ssh/config"),
                true,
            ),
            (
                "Write(../other/*)",
                path_call("Write", "/work/other/x"),
                true,
            ),
            (
                "Write(**/.env)",
                path_call("Write", "/work/proj/a/.env"),
                true,
            ),
            (
                "Write(**/.env)",
                path_call("Write", "/elsewhere/.env"),
                false,
            ),
            (
                "Write(!src/**)",
                path_call("Write", "/work/proj/docs/x"),
                true,
            ),
            (
                "FetchURL(https://*.example.com/*)",
                CallFacts::text("FetchURL", "https://a.example.com/x/y"),
                true,
            ),
        ];
        for (pattern, call, expected) in cases {
            let p = RulePattern::parse(pattern).unwrap();
            assert_eq!(p.matches(&call, ctx()), expected, "{pattern} vs {call:?}");
        }
    }

    #[test]
    fn session_rule_is_literal() {
        let call = CallFacts::text("Bash", "echo * [x] {a,b} \\n ?");
        let p = RulePattern::parse(&call.approval_rule).unwrap();
        assert!(p.matches(&call, ctx()));
        assert!(!p.matches(&CallFacts::text("Bash", "echo a [x] {a,b} \\n ?"), ctx()));
        let bang = CallFacts::text("Bash", "!ls");
        let p = RulePattern::parse(&bang.approval_rule).unwrap();
        assert!(p.matches(&bang, ctx()));
        assert!(!p.matches(&CallFacts::text("Bash", "ls"), ctx()));
        let file = path_call("Write", "/work/proj/a[1].ts");
        let p = RulePattern::parse(&file.approval_rule).unwrap();
        assert!(p.matches(&file, ctx()));
        assert!(!p.matches(&path_call("Write", "/work/proj/a1.ts"), ctx()));
    }

    #[test]
    fn invalid_patterns_say_why() {
        for (pattern, needle) in [
            ("", "empty"),
            ("Bash(git *", "closing"),
            ("!Bash", "negation"),
            ("Bash(a[b)", "invalid argument glob"),
            ("Ba{sh(x)", "invalid tool-name glob"),
        ] {
            let err = RulePattern::parse(pattern).unwrap_err().to_string();
            assert!(err.contains(needle), "{pattern}: {err}");
        }
    }
}
