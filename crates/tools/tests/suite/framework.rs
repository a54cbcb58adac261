//! Scheduler, preflight, builder and spill behaviour through the public API.

use kimi_tools::access::{Access, FileOperation};
use kimi_tools::args::{ArgsValidator, Preflight, RawArgs, ToolLookup, preflight};
use kimi_tools::result::{ToolOutputAccumulator, ToolResultBuilder, truncate_for_model};
use kimi_tools::scheduler::Scheduler;
use kimi_tools::{ToolRegistry, ToolResult};
use pretty_assertions::assert_eq;
use serde_json::json;

#[test]
fn scheduler_serializes_writes_and_keeps_queue_order() {
    let mut s = Scheduler::new();
    let w = || Some(vec![Access::file(FileOperation::Write, "/r/a")]);
    assert_eq!(s.add(0, w()), vec![0]);
    assert_eq!(s.add(1, None), Vec::<usize>::new());
    assert_eq!(
        s.add(2, Some(vec![Access::file(FileOperation::Read, "/r/b")])),
        Vec::<usize>::new()
    );
    assert_eq!(s.add(3, Some(vec![])), vec![3]);
    assert_eq!(s.finish(0), vec![1]);
    assert_eq!(s.finish(1), vec![2]);
    assert_eq!(s.finish(2), Vec::<usize>::new());
    assert_eq!(s.finish(3), Vec::<usize>::new());
    assert!(s.is_idle());
}

#[test]
fn preflight_reports_type_errors_with_paths() {
    let v = ArgsValidator::new();
    let schema = json!({"type": "object", "properties": {"value": {"type": "number"}, "mode": {"enum": ["a", "b"]}}});
    let out = preflight(
        &v,
        "t",
        ToolLookup::Found {
            parameters: &schema,
        },
        RawArgs::Text(r#"{"value":"x","mode":"c"}"#),
    );
    assert_eq!(
        out,
        Preflight::Rejected {
            output: "Invalid args for tool \"t\": /value must be number; /mode must be equal to one of the allowed values".to_owned(),
            args: json!({"value": "x", "mode": "c"}),
        }
    );
    let out = preflight(
        &v,
        "t",
        ToolLookup::Disabled("Tool \"t\" is disabled."),
        RawArgs::Missing,
    );
    assert_eq!(
        out,
        Preflight::Rejected {
            output: "Tool \"t\" is disabled.".to_owned(),
            args: json!({})
        }
    );
    let whitespace = preflight(
        &v,
        "t",
        ToolLookup::Found {
            parameters: &schema,
        },
        RawArgs::Text("  "),
    );
    assert_eq!(whitespace, Preflight::Runnable { args: json!({}) });
}

#[test]
fn builder_error_without_output_is_just_the_message() {
    let b = ToolResultBuilder::default();
    assert_eq!(b.error("boom"), ToolResult::error("boom"));
}

#[test]
fn accumulator_keeps_head_and_reports_total() {
    let mut acc = ToolOutputAccumulator::new(10);
    acc.write("0123456789abc");
    acc.write("more");
    assert_eq!((acc.n_chars(), acc.total_chars()), (10, 17));
    let (result, spill) = acc.ok("done");
    assert_eq!(result.text().unwrap(), "0123456789");
    let spill = spill.unwrap();
    assert_eq!(
        (spill.total_chars, spill.suffix.as_deref()),
        (Some(17), Some("done."))
    );
}

#[test]
fn spill_writes_full_text_and_previews() {
    let dir = tempfile::tempdir().unwrap();
    let big = "line\n".repeat(20_000);
    let outcome = truncate_for_model(
        ToolResult::ok(big.clone()),
        "Bash",
        "call/1",
        dir.path(),
        None,
    );
    let path = outcome.spilled_to.unwrap();
    assert!(
        path.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("Bash-call_1-")
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), big);
    let text = outcome.result.text().unwrap();
    assert!(text.starts_with("Tool output exceeded 50000 characters; showing a preview only.\n"));
    assert!(text.contains(&format!("output_path: {}", path.display())));
    assert!(outcome.result.truncated);
    // Read results are never spilled again.
    let mut exempt = ToolResult::ok(big);
    exempt.spill_exempt = true;
    assert!(
        truncate_for_model(exempt, "Read", "c", dir.path(), None)
            .spilled_to
            .is_none()
    );
}

#[test]
fn registry_lists_builtin_schemas() {
    let reg = kimi_tools::builtin::default_registry();
    let names = reg.names();
    for n in ["Read", "Write", "Edit", "Glob"] {
        assert!(names.iter().any(|x| x == n), "{n} missing from {names:?}");
    }
    for schema in reg.schemas() {
        assert_eq!(schema.parameters["type"], "object", "{}", schema.name);
        jsonschema::validator_for(&schema.parameters).unwrap();
    }
    let _unused: ToolRegistry = reg;
}

#[test]
fn registry_preflight_uses_tool_schemas() {
    let reg = kimi_tools::builtin::default_registry();
    let v = ArgsValidator::new();
    let out = reg.preflight(&v, "Read", RawArgs::Text(r#"{"path": 3}"#), |_| None);
    assert_eq!(
        out,
        Preflight::Rejected {
            output: "Invalid args for tool \"Read\": /path must be string".to_owned(),
            args: json!({"path": 3}),
        }
    );
    let out = reg.preflight(&v, "Bash", RawArgs::Text(r#"{"command": "ls"}"#), |n| {
        (n == "Bash").then(|| "Bash is disabled.".to_owned())
    });
    assert_eq!(
        out,
        Preflight::Rejected {
            output: "Bash is disabled.".to_owned(),
            args: json!({"command": "ls"})
        }
    );
    let out = reg.preflight(&v, "Nope", RawArgs::Missing, |_| None);
    assert_eq!(
        out,
        Preflight::Rejected {
            output: "Tool \"Nope\" not found".to_owned(),
            args: json!({})
        }
    );
    let out = reg.preflight(&v, "Glob", RawArgs::Text(r#"{"pattern": "*"}"#), |_| None);
    assert_eq!(
        out,
        Preflight::Runnable {
            args: json!({"pattern": "*"})
        }
    );
}

#[test]
fn tool_plans_feed_the_scheduler() {
    use kimi_tools::builtin::{BashTool, GlobTool, ReadTool, WriteTool};
    use kimi_tools::tool::Resolution;
    use kimi_tools::{Tool, ToolContext};
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext::new(std::fs::canonicalize(dir.path()).unwrap(), dir.path());
    let plan = |tool: &dyn Tool, args: serde_json::Value| match tool.resolve(args, &ctx).unwrap() {
        Resolution::Run(exec) => exec.plan().effective_accesses(),
        Resolution::Result(r) => panic!("unexpected synthetic result {r:?}"),
    };
    let mut s = Scheduler::new();
    assert_eq!(
        s.add(0, Some(plan(&ReadTool, json!({"path": "a.txt"})))),
        vec![0]
    );
    assert_eq!(
        s.add(1, Some(plan(&ReadTool, json!({"path": "b.txt"})))),
        vec![1]
    );
    // Writing a.txt waits for its reader; the tree search waits for the queued writer.
    assert_eq!(
        s.add(
            2,
            Some(plan(&WriteTool, json!({"path": "a.txt", "content": ""})))
        ),
        Vec::<usize>::new()
    );
    assert_eq!(
        s.add(3, Some(plan(&GlobTool, json!({"pattern": "*"})))),
        Vec::<usize>::new()
    );
    assert_eq!(
        s.add(4, Some(plan(&BashTool, json!({"command": "ls"})))),
        Vec::<usize>::new()
    );
    assert_eq!(s.finish(1), Vec::<usize>::new());
    assert_eq!(s.finish(0), vec![2]);
    assert_eq!(s.finish(2), vec![3]);
    assert_eq!(s.finish(3), vec![4]);
}
