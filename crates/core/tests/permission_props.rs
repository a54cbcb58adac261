//! Property tests for the pure permission pieces: a remembered session approval matches exactly
//! the subject it was made for, and the parsers never panic on arbitrary input.

#![allow(clippy::unwrap_used)] // proptest bodies are closures, outside #[test] fns for clippy

use std::path::{Path, PathBuf};

use kimi_core::hooks::load_hooks_from_str;
use kimi_core::permission::{
    AccessOp, CallFacts, FileAccess, MatchContext, RulePattern, Subject, approval_rule_for,
    danger_labels, load_rules_from_str,
};
use proptest::prelude::*;

fn ctx() -> MatchContext<'static> {
    MatchContext {
        cwd: Path::new("/work/proj"),
        home: Some(Path::new("/home/u")),
    }
}

/// Commands built from characters that matter to globs and shells.
fn command() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just('*'),
            Just('?'),
            Just('['),
            Just(']'),
            Just('{'),
            Just('}'),
            Just('!'),
            Just('\\'),
            Just('('),
            Just(')'),
            Just(' '),
            Just('/'),
            Just(','),
            any::<char>(),
            proptest::char::range('a', 'e'),
        ],
        0..24,
    )
    .prop_map(|chars| chars.into_iter().collect())
}

proptest! {
    #[test]
    fn session_approval_matches_exactly_its_own_subject(cmd in command(), other in command()) {
        let call = CallFacts::text("Bash", &cmd);
        let rule = approval_rule_for("Bash", Some(&cmd));
        let pattern = RulePattern::parse(&rule).unwrap();
        prop_assert!(pattern.matches(&call, ctx()), "{rule} must match {cmd:?}");
        if other != cmd {
            prop_assert!(
                !pattern.matches(&CallFacts::text("Bash", &other), ctx()),
                "{rule} must not match {other:?}"
            );
        }
    }

    #[test]
    fn path_approval_matches_exactly_its_own_path(name in "[a-z*?\\[\\]{}!]{1,12}") {
        let path = PathBuf::from("/work/proj/src").join(&name);
        let call = CallFacts {
            tool_name: "Write".into(),
            subject: Subject::Path(path.clone()),
            approval_rule: approval_rule_for("Write", Some(&path.to_string_lossy())),
            accesses: vec![FileAccess { op: AccessOp::Write, path, recursive: false }],
            shell: None,
        };
        let pattern = RulePattern::parse(&call.approval_rule).unwrap();
        prop_assert!(pattern.matches(&call, ctx()));
        let sibling = CallFacts {
            subject: Subject::Path(PathBuf::from("/work/proj/src").join(format!("{name}x"))),
            ..call
        };
        prop_assert!(!pattern.matches(&sibling, ctx()));
    }

    #[test]
    fn danger_labels_never_panic(cmd in any::<String>(), shaped in command()) {
        let _ = danger_labels(&cmd);
        let _ = danger_labels(&shaped);
        let _ = danger_labels(&format!("bash -c '{shaped}' | sh; $({shaped}) `{shaped}`"));
    }

    #[test]
    fn loaders_never_panic(pattern in any::<String>(), regex in any::<String>()) {
        let rules = format!(
            "[[permission.rules]]\ndecision = \"allow\"\npattern = {}\n",
            toml_string(&pattern)
        );
        if let Ok(loaded) = load_rules_from_str(&rules) {
            prop_assert_eq!(loaded.rules.rules().len() + loaded.errors.len(), 1);
        }
        let hooks = format!(
            "[[hooks]]\nevent = \"Stop\"\nmatcher = {}\ncommand = \"true\"\n",
            toml_string(&regex)
        );
        if let Ok(loaded) = load_hooks_from_str(&hooks) {
            prop_assert_eq!(loaded.hooks.hooks().len(), 1);
        }
    }
}

fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_owned()).to_string()
}

#[test]
fn empty_subject_is_not_a_blanket_approval() {
    let rule = approval_rule_for("Grep", Some(""));
    let pattern = RulePattern::parse(&rule).unwrap();
    assert!(pattern.matches(&CallFacts::text("Grep", ""), ctx()));
    assert!(!pattern.matches(&CallFacts::text("Grep", "x"), ctx()));
}
