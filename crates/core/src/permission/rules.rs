//! Permission rule patterns `Tool` / `Tool(arg-glob)` and how they match a call (surface.md
//! §3.3). The same matcher serves user rules and remembered session approvals.
//!
//! For Bash the argument glob is also matched against each simple command of the shell parse,
//! with the program's base name and normalised flags on both sides (`Bash(rm -rf *)` matches
//! `/bin/rm -r -f /` inside `echo hi; bash -c '…'`): a deny or ask rule matches if it matches
//! the whole line or any part, an allow rule only if it matches every part (wrappers such as
//! `sudo` included), and a remembered approval only the exact line.

use std::path::Path;

use globset::{GlobBuilder, GlobMatcher};

use super::call::{CallFacts, Subject};
use super::paths::{expand_tilde, normalize_lexically};
use super::shell::{ShellParse, SimpleCommand, normalize_words};

/// How an argument pattern must match a Bash command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShellMatch {
    /// Deny and ask rules: the whole line or any simple command in it.
    Any,
    /// Allow rules: every simple command, wrappers included.
    Every,
    /// Remembered approvals: the exact line.
    Literal,
}

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
    /// The glob with its command words normalised like a parsed command (in place, hoisted).
    shell: Option<(GlobMatcher, GlobMatcher)>,
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
                let compiled = text_glob(glob).map_err(|why| PatternError::ArgGlob {
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
                let words: Vec<&str> = glob.split_whitespace().collect();
                let shell = text_glob(&normalize_words(&words, false))
                    .ok()
                    .zip(text_glob(&normalize_words(&words, true)).ok());
                Some(ArgPattern {
                    negated,
                    glob: glob.to_owned(),
                    text: compiled,
                    shell,
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

    /// Whether the pattern matches the call, a Bash line taken literally. An argument pattern
    /// never matches a tool that only accepts name-only rules.
    pub fn matches(&self, call: &CallFacts, ctx: MatchContext<'_>) -> bool {
        self.matches_as(call, ctx, ShellMatch::Literal)
    }

    /// Whether the pattern has an argument that names something: not `Tool`, `Tool(*)`,
    /// `Tool(**)` or a negation.
    pub fn names_subject(&self) -> bool {
        self.arg.as_ref().is_some_and(|arg| {
            !arg.negated && !arg.glob.chars().all(|c| matches!(c, '*' | '/' | ' '))
        })
    }

    /// Whether the argument is a literal (no glob characters): the exact subject.
    pub fn is_literal(&self) -> bool {
        self.arg
            .as_ref()
            .is_some_and(|arg| !arg.negated && !has_glob_chars(&arg.glob))
    }

    /// Whether the pattern matches the call, Bash lines matched as `how` says.
    pub fn matches_as(&self, call: &CallFacts, ctx: MatchContext<'_>, how: ShellMatch) -> bool {
        if !self.tool.is_match(&call.tool_name) {
            return false;
        }
        let Some(arg) = &self.arg else {
            return true;
        };
        if let (Some(parsed), Subject::Text(text)) = (call.shell(), &call.subject)
            && how != ShellMatch::Literal
        {
            return arg.matches_shell(text, parsed, how);
        }
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

impl ArgPattern {
    fn matches_shell(&self, text: &str, parsed: &ShellParse, how: ShellMatch) -> bool {
        let parts: Vec<&SimpleCommand> = parsed
            .commands
            .iter()
            .filter(|c| c.program().is_some())
            .collect();
        let Some((in_place, hoisted)) = &self.shell else {
            return (how != ShellMatch::Every) && (self.text.is_match(text) != self.negated);
        };
        match how {
            ShellMatch::Any | ShellMatch::Literal => {
                let hit = |c: &&SimpleCommand| {
                    in_place.is_match(c.normalized()) || hoisted.is_match(c.hoisted())
                };
                let raw = self.text.is_match(text);
                if self.negated {
                    !raw || parts.iter().any(|c| !hit(c))
                } else {
                    raw || parts.iter().any(hit)
                }
            }
            ShellMatch::Every => {
                if parsed.error.is_some() || parts.is_empty() {
                    return false;
                }
                let hit = |c: &&SimpleCommand| {
                    let prefix = c.wrappers.join(" ");
                    let with = |form: String| {
                        if prefix.is_empty() {
                            form
                        } else {
                            format!("{prefix} {form}")
                        }
                    };
                    in_place.is_match(with(c.normalized())) || hoisted.is_match(with(c.hoisted()))
                };
                parts.iter().all(|c| hit(c) != self.negated)
            }
        }
    }
}

fn has_glob_chars(text: &str) -> bool {
    let mut escaped = false;
    for c in text.chars() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if matches!(c, '*' | '?' | '[' | '{') {
            return true;
        }
    }
    false
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
            shell: None,
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
