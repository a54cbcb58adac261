//! User permission rules from `config.toml` (surface.md §3.3): the rule type, the loader that
//! accepts `[[permission.rules]]` and the `[[permission.deny|allow|ask]]` spellings, and the
//! per-class lookup the policy chain uses. Invalid rules are reported with index, line and why,
//! and the valid ones are kept.

use super::call::CallFacts;
use super::rules::{MatchContext, PatternError, RulePattern, ShellMatch};

/// What a rule decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleDecision {
    Allow,
    Deny,
    Ask,
}

/// Where a rule came from; within one decision class earlier scopes are consulted first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RuleScope {
    TurnOverride,
    Project,
    User,
    SessionRuntime,
}

impl RuleScope {
    fn parse(text: &str) -> Option<RuleScope> {
        match text {
            "user" => Some(RuleScope::User),
            "project" => Some(RuleScope::Project),
            "turn-override" => Some(RuleScope::TurnOverride),
            "session-runtime" => Some(RuleScope::SessionRuntime),
            _ => None,
        }
    }
}

/// One user rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionRule {
    pub decision: RuleDecision,
    pub pattern: RulePattern,
    pub scope: RuleScope,
    pub reason: Option<String>,
}

/// The rules of one session, kept in scope order (stable within a scope).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuleSet {
    rules: Vec<PermissionRule>,
}

impl RuleSet {
    pub fn new(mut rules: Vec<PermissionRule>) -> RuleSet {
        rules.sort_by_key(|r| r.scope);
        RuleSet { rules }
    }

    pub fn rules(&self) -> &[PermissionRule] {
        &self.rules
    }

    /// The first rule of `decision`'s class that matches the call.
    pub fn first_match(
        &self,
        decision: RuleDecision,
        call: &CallFacts,
        ctx: MatchContext<'_>,
    ) -> Option<&PermissionRule> {
        let how = match decision {
            RuleDecision::Allow => ShellMatch::Every,
            RuleDecision::Deny | RuleDecision::Ask => ShellMatch::Any,
        };
        self.rules
            .iter()
            .filter(|r| r.decision == decision)
            .find(|r| r.pattern.matches_as(call, ctx, how))
    }

    /// The first rule of `decision`'s class that names this call's subject (not a bare tool
    /// name or `*`) and matches it; a literal Bash rule may name the exact line. The protected
    /// floor opens only for these.
    pub fn first_explicit_match(
        &self,
        decision: RuleDecision,
        call: &CallFacts,
        ctx: MatchContext<'_>,
    ) -> Option<&PermissionRule> {
        self.rules
            .iter()
            .filter(|r| r.decision == decision && r.pattern.names_subject())
            .find(|r| {
                r.pattern.matches_as(call, ctx, ShellMatch::Every)
                    || (r.pattern.is_literal()
                        && r.pattern.matches_as(call, ctx, ShellMatch::Literal))
            })
    }
}

/// Why one rule was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{section} rule #{index}{}: {problem}", line.map(|l| format!(" (line {l})")).unwrap_or_default())]
pub struct RuleLoadError {
    /// `permission.rules`, `permission.deny`, …
    pub section: String,
    /// 1-based position within its section.
    pub index: usize,
    /// 1-based line of the rule in the config text, when known.
    pub line: Option<usize>,
    pub problem: RuleProblem,
    /// The rule's decision, when it could be read.
    pub decision: Option<RuleDecision>,
}

impl RuleLoadError {
    /// A broken deny or ask rule (or one whose decision cannot be read) must stop start-up:
    /// dropping it would run what the user meant to stop. A broken allow rule only allows less.
    pub fn is_fatal(&self) -> bool {
        self.decision != Some(RuleDecision::Allow)
    }
}

impl LoadedRules {
    /// The errors that refuse start-up (fail closed).
    pub fn fatal_errors(&self) -> impl Iterator<Item = &RuleLoadError> {
        self.errors.iter().filter(|e| e.is_fatal())
    }
}

/// What was wrong with a rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleProblem {
    #[error("expected a table with `decision` and `pattern`")]
    NotATable,
    #[error("missing `decision`; use \"allow\", \"deny\" or \"ask\"")]
    MissingDecision,
    #[error("`decision = {0:?}` is not one of \"allow\", \"deny\", \"ask\"")]
    BadDecision(String),
    #[error("missing `pattern` (or `tool` plus `match`)")]
    MissingPattern,
    #[error(
        "`scope = {0:?}` is not one of \"user\", \"project\", \"turn-override\", \"session-runtime\""
    )]
    BadScope(String),
    #[error("`{key}` must be a string")]
    NotAString { key: String },
    #[error("{0}")]
    Pattern(#[from] PatternError),
}

/// The outcome of loading: valid rules plus one error per rejected rule.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadedRules {
    pub rules: RuleSet,
    pub errors: Vec<RuleLoadError>,
}

/// The whole config failed to parse as TOML.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("config.toml is not valid TOML: {0}; fix the file and restart")]
pub struct ConfigSyntaxError(pub String);

const SECTIONS: [(&str, Option<RuleDecision>); 4] = [
    ("rules", None),
    ("deny", Some(RuleDecision::Deny)),
    ("allow", Some(RuleDecision::Allow)),
    ("ask", Some(RuleDecision::Ask)),
];

/// Loads rules from config text (through the one config parser), with line numbers in the
/// errors.
pub fn load_rules_from_str(config: &str) -> Result<LoadedRules, ConfigSyntaxError> {
    let parsed = kimi_config::Config::parse(config, std::path::Path::new("config.toml"));
    if let Some(err) = parsed
        .errors()
        .find(|d| d.message.starts_with("not valid TOML"))
    {
        return Err(ConfigSyntaxError(err.to_string()));
    }
    Ok(load_rules(&parsed.permission))
}

/// Validates the `[permission]` entries of the parsed config.
pub fn load_rules(perm: &kimi_config::Permission) -> LoadedRules {
    let lists = [&perm.rules, &perm.deny, &perm.allow, &perm.ask];
    let mut entries = Vec::new();
    for ((name, implied), list) in SECTIONS.iter().zip(lists) {
        for (i, entry) in list.iter().enumerate() {
            entries.push((
                *name,
                *implied,
                i + 1,
                Some(entry.line),
                entry.value.clone(),
            ));
        }
    }
    build(entries)
}

/// Loads rules from an already parsed config (no line numbers available).
pub fn load_rules_from_value(config: &toml::Value) -> LoadedRules {
    let perm = config.get("permission");
    let mut entries = Vec::new();
    for (name, implied) in SECTIONS {
        let list = perm
            .and_then(|p| p.get(name))
            .and_then(toml::Value::as_array);
        for (i, value) in list.into_iter().flatten().enumerate() {
            entries.push((name, implied, i + 1, None, value.clone()));
        }
    }
    build(entries)
}

type Entry = (
    &'static str,
    Option<RuleDecision>,
    usize,
    Option<usize>,
    toml::Value,
);

fn build(entries: Vec<Entry>) -> LoadedRules {
    let mut rules = Vec::new();
    let mut errors = Vec::new();
    for (section, implied, index, line, value) in entries {
        match parse_rule(&value, implied) {
            Ok(rule) => rules.push(rule),
            Err(problem) => errors.push(RuleLoadError {
                section: format!("permission.{section}"),
                index,
                line,
                problem,
                decision: implied.or_else(|| declared_decision(&value)),
            }),
        }
    }
    LoadedRules {
        rules: RuleSet::new(rules),
        errors,
    }
}

fn declared_decision(value: &toml::Value) -> Option<RuleDecision> {
    match value.get("decision")?.as_str()? {
        "allow" => Some(RuleDecision::Allow),
        "deny" => Some(RuleDecision::Deny),
        "ask" => Some(RuleDecision::Ask),
        _ => None,
    }
}

fn string_key<'a>(table: &'a toml::Table, key: &str) -> Result<Option<&'a str>, RuleProblem> {
    match table.get(key) {
        None => Ok(None),
        Some(toml::Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(RuleProblem::NotAString {
            key: key.to_owned(),
        }),
    }
}

fn parse_rule(
    value: &toml::Value,
    implied: Option<RuleDecision>,
) -> Result<PermissionRule, RuleProblem> {
    let table = value.as_table().ok_or(RuleProblem::NotATable)?;
    let decision = match (implied, string_key(table, "decision")?) {
        (Some(d), _) => d,
        (None, None) => return Err(RuleProblem::MissingDecision),
        (None, Some("allow")) => RuleDecision::Allow,
        (None, Some("deny")) => RuleDecision::Deny,
        (None, Some("ask")) => RuleDecision::Ask,
        (None, Some(other)) => return Err(RuleProblem::BadDecision(other.to_owned())),
    };
    let tool = string_key(table, "tool")?;
    let arg = match string_key(table, "match")? {
        Some(m) => Some(m),
        None => string_key(table, "pattern")?,
    };
    let text = match (tool, arg) {
        (Some(tool), Some(arg)) => format!("{tool}({arg})"),
        (Some(tool), None) => tool.to_owned(),
        (None, Some(pattern)) => pattern.to_owned(),
        (None, None) => return Err(RuleProblem::MissingPattern),
    };
    let scope = match string_key(table, "scope")? {
        None => RuleScope::User,
        Some(s) => RuleScope::parse(s).ok_or_else(|| RuleProblem::BadScope(s.to_owned()))?,
    };
    let reason = string_key(table, "reason")?.map(str::to_owned);
    Ok(PermissionRule {
        decision,
        pattern: RulePattern::parse(&text)?,
        scope,
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = r#"
default_permission_mode = "manual"

[[permission.rules]]
decision = "deny"
pattern = "Bash(rm -rf *)"
reason = "no mass deletes"

[[permission.rules]]
decision = "allow"
pattern = "Bash(a[b)"

[[permission.rules]]
decision = "maybe"
pattern = "Read"

[[permission.rules]]
decision = "allow"
pattern = "Bash(git *)"
scope = "project"

[[permission.deny]]
tool = "Bash"
match = "sudo *"

[[permission.ask]]
tool = "mcp__*"

[[permission.allow]]
pattern = "Read(src/**)"
scope = "sometimes"
"#;

    #[test]
    fn loads_valid_and_reports_invalid() {
        let loaded = load_rules_from_str(CONFIG).unwrap();
        let got: Vec<(RuleDecision, &str, RuleScope)> = loaded
            .rules
            .rules()
            .iter()
            .map(|r| (r.decision, r.pattern.as_str(), r.scope))
            .collect();
        assert_eq!(
            got,
            vec![
                (RuleDecision::Allow, "Bash(git *)", RuleScope::Project),
                (RuleDecision::Deny, "Bash(rm -rf *)", RuleScope::User),
                (RuleDecision::Deny, "Bash(sudo *)", RuleScope::User),
                (RuleDecision::Ask, "mcp__*", RuleScope::User),
            ]
        );
        let errors: Vec<String> = loaded.errors.iter().map(ToString::to_string).collect();
        assert_eq!(errors.len(), 3, "{errors:#?}");
        assert!(
            errors[0].starts_with("permission.rules rule #2 (line 9"),
            "{}",
            errors[0]
        );
        assert!(
            errors[0].contains("invalid argument glob `a[b`"),
            "{}",
            errors[0]
        );
        assert!(
            errors[1].contains("#3") && errors[1].contains("\"maybe\""),
            "{}",
            errors[1]
        );
        assert!(
            errors[2].starts_with("permission.allow rule #1"),
            "{}",
            errors[2]
        );
        assert!(errors[2].contains("sometimes"), "{}", errors[2]);
        assert_eq!(
            loaded.rules.rules()[1].reason.as_deref(),
            Some("no mass deletes")
        );
    }

    #[test]
    fn value_loader_matches_text_loader() {
        let value: toml::Value = toml::from_str(CONFIG).unwrap();
        let from_value = load_rules_from_value(&value);
        let from_text = load_rules_from_str(CONFIG).unwrap();
        assert_eq!(from_value.rules, from_text.rules);
        assert!(from_value.errors.iter().all(|e| e.line.is_none()));
        assert_eq!(from_value.errors.len(), 3);
    }

    #[test]
    fn syntax_error_and_empty() {
        assert!(load_rules_from_str("permission = [").is_err());
        assert_eq!(load_rules_from_str("").unwrap(), LoadedRules::default());
    }
}
