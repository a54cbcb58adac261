//! "Approve for this session" on a path holds on the environment it was given on only
//! (environments.md, failure rules): the same absolute path on another target, on this machine
//! or for a subagent placed elsewhere is asked again. The real Write tool plans the call; the
//! real permission chain decides.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use kimi_core::engine::executor::GateDecision;
use kimi_core::engine::permissions::ChainPolicy;
use kimi_core::engine::runtime::PermissionPolicy;
use kimi_core::permission::{PermissionState, Workspace};
use kimi_protocol::ToolCall;
use kimi_tools::ToolContext;
use kimi_tools::builtin::{BashTool, WriteTool};
use kimi_tools::tool::{Resolution, Tool, ToolPlan};
use serde_json::{Value, json};

fn plan(tool: &dyn Tool, args: &Value, ctx: &ToolContext) -> ToolPlan {
    match tool.resolve(args.clone(), ctx).unwrap() {
        Resolution::Run(execution) => execution.plan().clone(),
        Resolution::Result(result) => panic!("no plan: {result:?}"),
    }
}

fn asks(decision: &GateDecision) -> bool {
    matches!(decision, GateDecision::Ask { .. })
}

#[test]
fn a_path_approved_on_one_environment_is_asked_again_on_another() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = std::fs::canonicalize(dir.path()).unwrap();
    let ctx = ToolContext::new(&cwd, &cwd.join(".agent"));
    let write_args = json!({"path": cwd.join("notes.txt"), "content": "x\n"});
    let write = plan(&WriteTool, &write_args, &ctx);
    let call = ToolCall::new("c1", "Write", Some(write_args.to_string()));
    let on_a: std::sync::Arc<dyn PermissionPolicy> = std::sync::Arc::new(ChainPolicy::new(
        PermissionState::default(),
        Workspace::new(&cwd, &[], None).on_environment("box-a"),
    ));
    assert!(
        asks(&on_a.decide(&call, &write_args, &write)),
        "manual mode asks first"
    );
    let (rule, scope) = on_a.remember_session_approval(&call, &write).unwrap();
    assert_eq!(scope.as_deref(), Some("box-a"), "{rule}");
    assert_eq!(
        on_a.decide(&call, &write_args, &write),
        GateDecision::Approve
    );

    // The same path elsewhere: another target, this machine — asked again.
    for other in ["box-b", "local"] {
        let moved = on_a.for_environment(other, &cwd).unwrap();
        assert!(
            asks(&moved.decide(&call, &write_args, &write)),
            "approved on box-a, must not hold on {other}"
        );
    }
    // A subagent placed on the same environment keeps it.
    let same = on_a.for_environment("box-a", &cwd).unwrap();
    assert_eq!(
        same.decide(&call, &write_args, &write),
        GateDecision::Approve
    );

    // A command approval is not a path: it holds everywhere, as before.
    let bash_args = json!({"command": "echo hi"});
    let bash = plan(&BashTool, &bash_args, &ctx);
    let bash_call = ToolCall::new("c2", "Bash", Some(bash_args.to_string()));
    let (_, scope) = on_a.remember_session_approval(&bash_call, &bash).unwrap();
    assert_eq!(scope, None);
    let on_b = on_a.for_environment("box-b", &cwd).unwrap();
    assert_eq!(
        on_b.decide(&bash_call, &bash_args, &bash),
        GateDecision::Approve
    );
}
