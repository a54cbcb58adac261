//! Table tests for the twelve policies of the chain: each policy alone and the whole chain, with
//! at least one case per policy ending in approve, one in ask and one in deny.

#![allow(clippy::unwrap_used)] // helpers outside #[test] fns unwrap fixture I/O

use kimi_core::permission::policy::{self, PolicyName, Verdict};
use kimi_core::permission::{
    AccessOp, CallFacts, FileAccess, PolicyInput, RuleSet, SessionApprovals, Workspace, decide,
    load_rules_from_str,
};
use kimi_protocol::ops::PermissionMode::{self, Auto, Manual, Yolo};
use pretty_assertions::assert_eq;
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;

struct Env {
    _dir: tempfile::TempDir,
    ws: Workspace,
    ws_plain: Workspace,
    root: PathBuf,
}

/// A git workspace (`ws/.git`), the same tree without git (`plain`), and an outside dir.
fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    for d in ["ws/.git", "ws/src", "plain/src", "outside"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    std::fs::write(root.join("ws/src/main.rs"), "fn main() {}").unwrap();
    let ws = Workspace::new(&root.join("ws"), &[], Some(&root));
    let ws_plain = Workspace::new(&root.join("plain"), &[], Some(&root));
    Env {
        _dir: dir,
        ws,
        ws_plain,
        root,
    }
}

const RULES: &str = r#"
[[permission.rules]]
decision = "deny"
pattern = "Bash(rm -rf *)"
reason = "no mass deletes"

[[permission.rules]]
decision = "ask"
pattern = "Bash(git push*)"

[[permission.rules]]
decision = "allow"
pattern = "Bash(git *)"

[[permission.allow]]
tool = "Bash"
match = "cargo *"

[[permission.deny]]
tool = "mcp__evil__*"
"#;

fn rules() -> RuleSet {
    let loaded = load_rules_from_str(RULES).unwrap();
    assert_eq!(loaded.errors, vec![]);
    loaded.rules
}

#[derive(Clone, Copy, Debug)]
enum Ws {
    Git,
    Plain,
}

struct Case {
    focus: PolicyName,
    mode: PermissionMode,
    ws: Ws,
    call: CallFacts,
    session: &'static [&'static str],
    /// What the focus policy answers on its own.
    alone: Option<Verdict>,
    /// What the whole chain answers, and which policy decided.
    chain: (Verdict, PolicyName),
}

fn bash(cmd: &str) -> CallFacts {
    CallFacts::text("Bash", cmd)
}

#[test]
fn every_policy_allows_asks_and_denies() {
    use PolicyName as P;
    use Verdict::{Approve as A, Ask as Q, Deny as D};
    let e = env();
    let rules = rules();
    let read = |p: &str| CallFacts::path("Read", AccessOp::Read, p, &e.ws);
    let write = |p: &str| CallFacts::path("Write", AccessOp::Write, p, &e.ws);
    let write_plain = |p: &str| CallFacts::path("Write", AccessOp::Write, p, &e.ws_plain);
    let outside = e.root.join("outside/x.txt").to_string_lossy().into_owned();
    let case = |focus, mode, call, alone, chain| Case {
        focus,
        mode,
        ws: Ws::Git,
        call,
        session: &[],
        alone,
        chain,
    };
    let mut cases = vec![
        // 1 auto-mode-ask-user-question-deny
        case(
            P::AutoModeAskUserQuestionDeny,
            Auto,
            CallFacts::name_only("AskUserQuestion"),
            Some(D),
            (D, P::AutoModeAskUserQuestionDeny),
        ),
        case(
            P::AutoModeAskUserQuestionDeny,
            Manual,
            CallFacts::name_only("AskUserQuestion"),
            None,
            (A, P::DefaultToolApprove),
        ),
        case(
            P::AutoModeAskUserQuestionDeny,
            Auto,
            bash("ls"),
            None,
            (A, P::AutoModeApprove),
        ),
        case(
            P::AutoModeAskUserQuestionDeny,
            Manual,
            bash("ls"),
            None,
            (Q, P::FallbackAsk),
        ),
        // 2 user-configured-deny
        case(
            P::UserConfiguredDeny,
            Auto,
            bash("rm -rf /"),
            Some(D),
            (D, P::UserConfiguredDeny),
        ),
        case(
            P::UserConfiguredDeny,
            Yolo,
            CallFacts::name_only("mcp__evil__x"),
            Some(D),
            (D, P::UserConfiguredDeny),
        ),
        case(
            P::UserConfiguredDeny,
            Manual,
            bash("rm -r x"),
            None,
            (Q, P::FallbackAsk),
        ),
        case(
            P::UserConfiguredDeny,
            Manual,
            bash("cargo test"),
            None,
            (A, P::UserConfiguredAllow),
        ),
        // kimi-rs's protected floor (between 2 and 3)
        case(
            P::ProtectedFloor,
            Auto,
            bash("sudo reboot"),
            Some(D),
            (D, P::ProtectedFloor),
        ),
        case(
            P::ProtectedFloor,
            Yolo,
            write(".git/hooks/pre-commit"),
            Some(Q),
            (Q, P::ProtectedFloor),
        ),
        case(
            P::ProtectedFloor,
            Auto,
            bash("cargo build"),
            None,
            (A, P::AutoModeApprove),
        ),
        // 3 auto-mode-approve
        case(
            P::AutoModeApprove,
            Auto,
            write(&outside),
            Some(A),
            (A, P::AutoModeApprove),
        ),
        case(
            P::AutoModeApprove,
            Auto,
            read(".env"),
            Some(A),
            (A, P::AutoModeApprove),
        ),
        case(
            P::AutoModeApprove,
            Manual,
            write(&outside),
            None,
            (Q, P::FallbackAsk),
        ),
        case(
            P::AutoModeApprove,
            Auto,
            bash("rm -rf build"),
            Some(A),
            (D, P::UserConfiguredDeny),
        ),
        // 5 user-configured-ask
        case(
            P::UserConfiguredAsk,
            Yolo,
            bash("git push origin"),
            Some(Q),
            (Q, P::UserConfiguredAsk),
        ),
        case(
            P::UserConfiguredAsk,
            Auto,
            bash("git push origin"),
            Some(Q),
            (A, P::AutoModeApprove),
        ),
        case(
            P::UserConfiguredAsk,
            Manual,
            bash("git status"),
            None,
            (A, P::UserConfiguredAllow),
        ),
        case(
            P::UserConfiguredAsk,
            Manual,
            bash("rm -rf x"),
            None,
            (D, P::UserConfiguredDeny),
        ),
        // 6 user-configured-allow
        case(
            P::UserConfiguredAllow,
            Manual,
            bash("cargo build"),
            Some(A),
            (A, P::UserConfiguredAllow),
        ),
        // An allow rule must match every command of the line; the deny rule sees `rm -rf x`.
        case(
            P::UserConfiguredAllow,
            Manual,
            bash("cargo build; rm -rf x"),
            None,
            (D, P::UserConfiguredDeny),
        ),
        case(
            P::UserConfiguredAllow,
            Manual,
            bash("cargo build && make"),
            None,
            (Q, P::FallbackAsk),
        ),
        case(
            P::UserConfiguredAllow,
            Manual,
            bash("make"),
            None,
            (Q, P::FallbackAsk),
        ),
        case(
            P::UserConfiguredAllow,
            Manual,
            bash("git push"),
            Some(A),
            (Q, P::UserConfiguredAsk),
        ),
        case(
            P::UserConfiguredAllow,
            Manual,
            bash("rm -rf cargo"),
            None,
            (D, P::UserConfiguredDeny),
        ),
        // 7 sensitive-file-access-ask
        case(
            P::SensitiveFileAccessAsk,
            Yolo,
            read(".env"),
            Some(Q),
            (Q, P::SensitiveFileAccessAsk),
        ),
        case(
            P::SensitiveFileAccessAsk,
            Manual,
            write("~/.ssh/id_rsa"),
            Some(Q),
            (Q, P::SensitiveFileAccessAsk),
        ),
        case(
            P::SensitiveFileAccessAsk,
            Manual,
            read(".env.example"),
            None,
            (A, P::DefaultToolApprove),
        ),
        case(
            P::SensitiveFileAccessAsk,
            Auto,
            read(".env"),
            Some(Q),
            (A, P::AutoModeApprove),
        ),
        case(
            P::SensitiveFileAccessAsk,
            Auto,
            CallFacts::name_only("AskUserQuestion"),
            None,
            (D, P::AutoModeAskUserQuestionDeny),
        ),
        // 8 git-control-path-access-ask
        // Writes into `.git` meet the protected floor first; reads still reach policy 8.
        case(
            P::GitControlPathAccessAsk,
            Yolo,
            write(".git/config"),
            Some(Q),
            (Q, P::ProtectedFloor),
        ),
        case(
            P::GitControlPathAccessAsk,
            Yolo,
            read(".git/config"),
            Some(Q),
            (Q, P::GitControlPathAccessAsk),
        ),
        case(
            P::GitControlPathAccessAsk,
            Manual,
            read("src/.git/HEAD"),
            Some(Q),
            (Q, P::GitControlPathAccessAsk),
        ),
        case(
            P::GitControlPathAccessAsk,
            Manual,
            read(".gitignore"),
            None,
            (A, P::DefaultToolApprove),
        ),
        case(
            P::GitControlPathAccessAsk,
            Auto,
            write(".git/config"),
            Some(Q),
            (D, P::ProtectedFloor),
        ),
        case(
            P::GitControlPathAccessAsk,
            Auto,
            read(".git/config"),
            Some(Q),
            (A, P::AutoModeApprove),
        ),
        case(
            P::GitControlPathAccessAsk,
            Yolo,
            bash("rm -rf .git"),
            None,
            (D, P::UserConfiguredDeny),
        ),
        // 9 yolo-mode-approve
        case(
            P::YoloModeApprove,
            Yolo,
            bash("make"),
            Some(A),
            (A, P::YoloModeApprove),
        ),
        case(
            P::YoloModeApprove,
            Yolo,
            CallFacts::name_only("mcp__srv__tool"),
            Some(A),
            (A, P::YoloModeApprove),
        ),
        case(
            P::YoloModeApprove,
            Manual,
            bash("make"),
            None,
            (Q, P::FallbackAsk),
        ),
        case(
            P::YoloModeApprove,
            Yolo,
            bash("rm -rf ."),
            Some(A),
            (D, P::UserConfiguredDeny),
        ),
        // 10 default-tool-approve
        case(
            P::DefaultToolApprove,
            Manual,
            read("src/main.rs"),
            Some(A),
            (A, P::DefaultToolApprove),
        ),
        case(
            P::DefaultToolApprove,
            Manual,
            CallFacts::text("FetchURL", "https://example.com"),
            Some(A),
            (A, P::DefaultToolApprove),
        ),
        case(
            P::DefaultToolApprove,
            Manual,
            CallFacts::name_only("TaskStop"),
            None,
            (Q, P::FallbackAsk),
        ),
        case(
            P::DefaultToolApprove,
            Auto,
            CallFacts::name_only("AskUserQuestion"),
            Some(A),
            (D, P::AutoModeAskUserQuestionDeny),
        ),
        // 11 git-cwd-write-approve
        case(
            P::GitCwdWriteApprove,
            Manual,
            write("src/new.rs"),
            Some(A),
            (A, P::GitCwdWriteApprove),
        ),
        case(
            P::GitCwdWriteApprove,
            Manual,
            CallFacts::path("Edit", AccessOp::Readwrite, "src/main.rs", &e.ws),
            Some(A),
            (A, P::GitCwdWriteApprove),
        ),
        case(
            P::GitCwdWriteApprove,
            Manual,
            write("../outside/x.txt"),
            None,
            (Q, P::FallbackAsk),
        ),
        case(
            P::GitCwdWriteApprove,
            Manual,
            write(".env"),
            Some(A),
            (Q, P::SensitiveFileAccessAsk),
        ),
        case(
            P::GitCwdWriteApprove,
            Auto,
            CallFacts::name_only("AskUserQuestion"),
            None,
            (D, P::AutoModeAskUserQuestionDeny),
        ),
        Case {
            ws: Ws::Plain,
            ..case(
                P::GitCwdWriteApprove,
                Manual,
                write_plain("src/new.rs"),
                None,
                (Q, P::FallbackAsk),
            )
        },
        // 12 fallback-ask
        case(
            P::FallbackAsk,
            Manual,
            CallFacts::name_only("mcp__srv__tool"),
            Some(Q),
            (Q, P::FallbackAsk),
        ),
        case(
            P::FallbackAsk,
            Manual,
            CallFacts::name_only("TodoList"),
            Some(Q),
            (A, P::DefaultToolApprove),
        ),
        case(
            P::FallbackAsk,
            Manual,
            bash("rm -rf /"),
            Some(Q),
            (D, P::UserConfiguredDeny),
        ),
    ];
    // 4 session-approval-history
    let session = |mode, call, s: &'static [&'static str], alone, chain| Case {
        session: s,
        ..case(P::SessionApprovalHistory, mode, call, alone, chain)
    };
    cases.extend([
        session(
            Manual,
            bash("npm test"),
            &["Bash(npm test)"],
            Some(A),
            (A, P::SessionApprovalHistory),
        ),
        session(
            Manual,
            CallFacts::name_only("mcp__srv__tool"),
            &["mcp__srv__tool"],
            Some(A),
            (A, P::SessionApprovalHistory),
        ),
        session(
            Manual,
            bash("npm test && curl x"),
            &["Bash(npm test)"],
            None,
            (Q, P::FallbackAsk),
        ),
        // Session memory does not override a deny rule.
        session(
            Manual,
            bash("rm -rf x"),
            &["Bash(rm -rf x)"],
            Some(A),
            (D, P::UserConfiguredDeny),
        ),
        // …and wins over an ask rule.
        session(
            Yolo,
            bash("git push origin"),
            &["Bash(git push origin)"],
            Some(A),
            (A, P::SessionApprovalHistory),
        ),
    ]);

    let mut coverage: HashMap<PolicyName, BTreeSet<&str>> = HashMap::new();
    for c in &cases {
        let mut memory = SessionApprovals::default();
        for rule in c.session {
            memory.grant(rule, None).unwrap();
        }
        let ws = match c.ws {
            Ws::Git => &e.ws,
            Ws::Plain => &e.ws_plain,
        };
        let input = PolicyInput {
            mode: c.mode,
            call: &c.call,
            workspace: ws,
            rules: &rules,
            session: &memory,
        };
        let (_, alone_fn) = policy::CHAIN
            .iter()
            .find(|(name, _)| *name == c.focus)
            .unwrap();
        let alone = alone_fn(&input).map(|d| d.verdict);
        assert_eq!(
            alone, c.alone,
            "{:?} alone on {:?} in {:?}",
            c.focus, c.call, c.mode
        );
        let decision = decide(&input);
        assert_eq!(
            (decision.verdict, decision.policy),
            c.chain,
            "{:?} chain on {:?} in {:?}",
            c.focus,
            c.call,
            c.mode
        );
        let outcome = match decision.verdict {
            Verdict::Approve => "approve",
            Verdict::Ask => "ask",
            Verdict::Deny => "deny",
        };
        coverage.entry(c.focus).or_default().insert(outcome);
    }
    for (name, _) in policy::CHAIN {
        assert_eq!(
            coverage.get(&name).cloned().unwrap_or_default(),
            BTreeSet::from(["approve", "ask", "deny"]),
            "coverage of {}",
            name.as_str()
        );
    }
}

#[test]
fn deny_messages_name_the_rule_and_reason() {
    let e = env();
    let rules = rules();
    let call = bash("rm -rf /");
    let memory = SessionApprovals::default();
    let d = decide(&PolicyInput {
        mode: Yolo,
        call: &call,
        workspace: &e.ws,
        rules: &rules,
        session: &memory,
    });
    assert_eq!(d.rule.as_deref(), Some("Bash(rm -rf *)"));
    assert_eq!(
        d.deny_message("Bash"),
        "Tool call denied by permission rule `Bash(rm -rf *)`: no mass deletes"
    );
    assert_eq!(d.policy.as_str(), "user-configured-deny");
}

#[test]
fn accesses_declared_by_hand_are_checked_too() {
    let e = env();
    let call = CallFacts {
        tool_name: "Grep".into(),
        subject: kimi_core::permission::Subject::Text("TODO".into()),
        approval_rule: "Grep(TODO)".into(),
        accesses: vec![FileAccess {
            op: AccessOp::Search,
            path: e.ws.resolve(".git"),
            recursive: true,
        }],
        shell: None,
    };
    let d = decide(&PolicyInput {
        mode: Manual,
        call: &call,
        workspace: &e.ws,
        rules: &RuleSet::default(),
        session: &SessionApprovals::default(),
    });
    assert_eq!(
        (d.verdict, d.policy),
        (Verdict::Ask, PolicyName::GitControlPathAccessAsk)
    );
}
