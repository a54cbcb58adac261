//! Table tests of the one parse: every §4.2 key parses, unknown keys at any depth are
//! warnings with line and suggestion, wrong types are errors with file/line/key/expected type.

use std::path::Path;

use pretty_assertions::assert_eq;

use super::*;

fn parse(text: &str) -> Config {
    Config::parse(text, Path::new("/h/config.toml"))
}

fn rendered(config: &Config) -> Vec<String> {
    config.diagnostics.iter().map(ToString::to_string).collect()
}

/// Every key of surface.md §4.2 (and kimi-rs's own), with a value of the documented type.
const EVERY_KEY: &str = r#"
default_model = "k2"
default_permission_mode = "manual"
default_plan_mode = false
merge_all_available_skills = true
extra_skill_dirs = ["~/skills"]
extra_agent_dirs = ["~/agents"]
builtin_product_skills = true
telemetry = true

[providers.moon]
type = "kimi"
api_key = "sk"
base_url = "https://example.invalid/v1"
oauth = { storage = "file", key = "k" }
env = { KIMI_API_KEY = "x" }
custom_headers = { X-A = "b" }
default_model = "k2"
model_source = "static"
source = { registry = "r" }

[models.k2]
provider = "moon"
model = "kimi-k2"
max_context_size = 262144
max_input_size = 200000
max_output_size = 8192
capabilities = ["thinking"]
support_efforts = ["low", "high"]
default_effort = "high"
off_effort = "none"
display_name = "K2"
reasoning_key = "reasoning"
adaptive_thinking = true
base_url = "https://example.invalid/v1"
protocol = "openai"
beta_api = true
api_key = "sk2"
oauth = { storage = "keyring", key = "k" }
name = "k2"
aliases = ["k"]
provider_id = "moon"
[models.k2.overrides]
max_context_size = 1
max_input_size = 1
max_output_size = 1
capabilities = []
display_name = "x"
reasoning_key = "r"
adaptive_thinking = false
support_efforts = []
default_effort = "low"
off_effort = "off"

[secondary_model]
default_model = "k2"
models = { k2 = "hint" }
force = false

[thinking]
enabled = true
effort = "high"
keep = "all"
forced_effort = "max"

[loop_control]
max_steps_per_turn = 5
max_attempts_per_step = 3
reserved_context_size = 50000
compaction_trigger_ratio = 0.8
max_ralph_iterations = -1
first_token_timeout_s = 300
stream_idle_timeout_s = 120
max_retry_after_s = 300

[token_counting]
strategy = "measured+estimated"

[background]
max_running_tasks = 4
keep_alive_on_exit = false
kill_grace_period_ms = 5000
bash_auto_background_on_timeout = true
bash_task_timeout_s = 600
print_background_mode = "steer"
print_wait_ceiling_s = 2147483
print_max_turns = 100000

[subagent]
timeout_ms = 7200000

[mcp]
startup_timeout_ms = 30000
tool_timeout_ms = 60000

[identity]
name = "Kimi"
slug = "kimi"

[tools]
enabled = []
disabled = ["WebSearch"]

[image]
max_edge_px = 2000
read_byte_budget = 262144

[services.moonshot_search]
base_url = "https://example.invalid"
api_key = "k"
oauth = { storage = "file", key = "k" }
custom_headers = { A = "b" }
[services.moonshot_fetch]
base_url = "https://example.invalid"

[[permission.rules]]
decision = "deny"
pattern = "Bash(rm *)"
[[permission.deny]]
tool = "Bash"
match = "sudo *"

[[hooks]]
event = "PreToolUse"
matcher = "Bash"
command = "true"
timeout = 5

[cron]
debug = false
no_jitter = false
no_stale = false
disabled = false
manual_tick = false
clock = "system"
poll_interval_ms = 1000

[experimental]
tower = true

[model_catalog]
refresh_interval_ms = 1000
refresh_on_start = false

[sandbox]
mode = "off"
"#;

#[test]
fn every_documented_key_parses_without_unknown_keys_or_errors() {
    let config = parse(EVERY_KEY);
    let unknown: Vec<_> = rendered(&config)
        .into_iter()
        .filter(|d| d.contains("unknown") || !d.contains("not supported"))
        .collect();
    assert_eq!(unknown, Vec::<String>::new());
    assert_eq!(config.loop_control.max_steps(), Some(5));
    assert_eq!(config.loop_control.max_attempts(), 3);
    assert_eq!(config.loop_control.first_token_timeout_s, Some(300));
    assert_eq!(config.loop_control.max_retry_after_s, Some(300));
    assert_eq!(config.models["k2"].protocol, Some(ProviderType::OpenAi));
    assert_eq!(config.permission.rules.len(), 1);
    assert_eq!(config.permission.deny.len(), 1);
    assert_eq!(config.hooks.len(), 1);
    // A `[[hooks]]` entry's line is its header's.
    let header = EVERY_KEY.lines().position(|l| l == "[[hooks]]").unwrap() + 1;
    assert_eq!(config.hooks[0].line, header);
    assert_eq!(config.cron.poll_interval_ms, Some(1000));
    assert!(config.check().is_ok());
}

#[test]
fn settings_kimi_rs_does_not_act_on_are_reported_once_each_when_set() {
    let config = parse(EVERY_KEY);
    let unsupported: Vec<String> = config
        .warnings()
        .filter(|d| d.message.contains("not supported by kimi-rs"))
        .map(|d| d.key.clone())
        .collect();
    for key in [
        "telemetry",
        "secondary_model",
        "thinking.keep",
        "token_counting",
        "identity",
        "experimental.tower",
        "model_catalog",
        "models.k2.beta_api",
        "cron.clock",
    ] {
        assert_eq!(
            unsupported.iter().filter(|k| *k == key).count(),
            1,
            "{key} in {unsupported:?}"
        );
    }
    // Wired keys are not reported.
    for key in [
        "loop_control.max_steps_per_turn",
        "mcp",
        "tools",
        "cron.disabled",
        "services",
        "providers.moon.oauth",
    ] {
        assert!(!unsupported.iter().any(|k| k == key), "{key}");
    }
    assert!(parse("").diagnostics.is_empty());
}

#[test]
fn unknown_keys_at_any_depth_have_line_and_suggestion() {
    let text = "defualt_model = \"a\"\n[providers.x]\ntype = \"kimi\"\nbogus = 1\n[loop_control]\nmax_stepz_per_turn = 3\n[models.m]\nprovider = \"x\"\nmodel = \"m\"\nmax_context_size = 1\n[models.m.overrides]\ndisplay_nam = \"M\"\n[[hooks]]\nevent = \"Stop\"\ncommand = \"true\"\n[services.moonshot_serch]\nbase_url = \"u\"\n";
    let config = parse(text);
    let got: Vec<(Option<usize>, String, Option<String>)> = config
        .warnings()
        .filter(|d| d.message.starts_with("unknown key"))
        .map(|d| (d.line, d.key.clone(), d.suggestion.clone()))
        .collect();
    assert_eq!(
        got,
        vec![
            (
                Some(1),
                "defualt_model".into(),
                Some("default_model".into())
            ),
            (Some(4), "providers.x.bogus".into(), None),
            (
                Some(6),
                "loop_control.max_stepz_per_turn".into(),
                Some("max_steps_per_turn".into())
            ),
            (
                Some(12),
                "models.m.overrides.display_nam".into(),
                Some("display_name".into())
            ),
            (
                Some(16),
                "services.moonshot_serch".into(),
                Some("moonshot_search".into())
            ),
        ]
    );
    assert!(config.check().is_ok(), "unknown keys are warnings");
    let first = config.diagnostics[0].to_string();
    assert!(
        first.starts_with("/h/config.toml:1: `defualt_model`: unknown key")
            && first.ends_with("(did you mean `default_model`?)"),
        "{first}"
    );
}

#[test]
fn wrong_types_are_errors_naming_file_line_key_and_expected_type_all_in_one_run() {
    let text = "[mcp]\nstartup_timeout_ms = 10\n[loop_control]\nmax_steps_per_turn = \"ten\"\n[tools]\ndisabled = \"Bash\"\n[providers.p]\ntype = \"bedrock\"\n";
    let config = parse(text);
    let errors: Vec<&Diagnostic> = config.errors().collect();
    assert_eq!(errors.len(), 3, "{:?}", rendered(&config));
    assert_eq!(errors[0].line, Some(4));
    assert_eq!(errors[0].key, "loop_control.max_steps_per_turn");
    assert!(
        errors[0]
            .message
            .contains("expected a non-negative integer"),
        "{}",
        errors[0]
    );
    assert!(errors[0].to_string().starts_with("/h/config.toml:4: "));
    assert_eq!(
        (errors[1].line, errors[1].key.as_str()),
        (Some(6), "tools.disabled")
    );
    assert!(
        errors[1].message.contains("expected an array"),
        "{}",
        errors[1]
    );
    assert_eq!(
        (errors[2].line, errors[2].key.as_str()),
        (Some(8), "providers.p.type")
    );
    assert!(errors[2].message.contains("bedrock"), "{}", errors[2]);
    // The section that was fine still took effect.
    assert_eq!(config.mcp.startup_timeout_ms, Some(10));
    let all = config.check().unwrap_err().to_string();
    assert!(
        all.contains("max_steps_per_turn") && all.contains("tools.disabled"),
        "{all}"
    );
}

#[test]
fn invalid_toml_is_an_error_with_its_line() {
    let config = parse("a = 1\n[sandbox\nmode = \"workspace-write\"\n");
    let errors: Vec<&Diagnostic> = config.errors().collect();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].line, Some(2));
    assert!(
        errors[0].message.starts_with("not valid TOML"),
        "{}",
        errors[0]
    );
}

#[test]
fn out_of_range_values_are_errors() {
    let config =
        parse("[loop_control]\ncompaction_trigger_ratio = 1.5\n[sandbox]\nmode = \"strict\"\n");
    let keys: Vec<(&str, Option<usize>)> =
        config.errors().map(|d| (d.key.as_str(), d.line)).collect();
    assert_eq!(
        keys,
        vec![
            ("loop_control.compaction_trigger_ratio", Some(2)),
            ("sandbox.mode", Some(4))
        ]
    );
}

#[test]
fn deprecated_keys_are_warnings() {
    let config = parse(
        "default_thinking = true\n[thinking]\nmode = \"x\"\n[loop_control]\nmax_retries_per_step = 3\nmax_steps_per_run = 9\n",
    );
    let got: Vec<(&str, Option<usize>)> = config
        .warnings()
        .map(|d| (d.key.as_str(), d.line))
        .collect();
    assert_eq!(
        got,
        vec![
            ("default_thinking", Some(1)),
            ("thinking.mode", Some(3)),
            ("loop_control.max_retries_per_step", Some(5)),
            ("loop_control.max_steps_per_run", Some(6)),
        ]
    );
    assert!(config.warnings().all(|d| d.message.contains("deprecated")));
    assert_eq!(
        config.loop_control.max_attempts(),
        DEFAULT_MAX_ATTEMPTS_PER_STEP
    );
}

#[test]
fn environment_overrides_win_over_the_file_and_bad_values_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(
        &path,
        "[loop_control]\nmax_steps_per_turn = 5\nmax_retry_after_s = 300\n[mcp]\ntool_timeout_ms = 1\n",
    )
    .unwrap();
    let env = |name: &str| match name {
        "KIMI_LOOP_MAX_STEPS_PER_TURN" => Some("2".to_owned()),
        "KIMI_LOOP_MAX_RETRIES_PER_STEP" => Some("4".to_owned()),
        "KIMI_MCP_STARTUP_TIMEOUT_MS" => Some("1500".to_owned()),
        "KIMI_DISABLE_CRON" => Some("1".to_owned()),
        "KIMI_LOOP_MAX_RETRY_AFTER_S" => Some("20".to_owned()),
        "KIMI_MCP_TOOL_TIMEOUT_MS" => Some("big".to_owned()),
        _ => None,
    };
    let config = Config::load(&path, &env);
    assert_eq!(config.loop_control.max_steps(), Some(2));
    assert_eq!(
        config.loop_control.max_attempts(),
        4,
        "legacy name still works"
    );
    assert_eq!(config.mcp.startup_timeout_ms, Some(1500));
    assert_eq!(
        config.mcp.tool_timeout_ms,
        Some(1),
        "a bad override leaves the file's value"
    );
    assert_eq!(config.cron.disabled, Some(true));
    assert_eq!(config.loop_control.max_retry_after_s, Some(20));
    let errors: Vec<String> = config.errors().map(ToString::to_string).collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("KIMI_MCP_TOOL_TIMEOUT_MS") && errors[0].contains("big"));
    // A missing file is the empty configuration.
    let missing = Config::load(&dir.path().join("none.toml"), &|_| None);
    assert!(!missing.present && missing.diagnostics.is_empty());
}

#[test]
fn tui_toml_reports_unknown_unsupported_and_bad_types() {
    let path = Path::new("/h/tui.toml");
    let file = tui::TuiFile::parse(
        "theme = \"light\"\nrender_latex = false\n[editor]\ncomand = \"vim\"\n[status_line]\nitems = [\"model\"]\n",
        path,
    );
    assert_eq!(file.keys.theme.as_deref(), Some("light"));
    let got: Vec<(String, Option<usize>, Option<String>)> = file
        .diagnostics
        .iter()
        .map(|d| (d.key.clone(), d.line, d.suggestion.clone()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("editor.comand".into(), Some(4), Some("command".into())),
            ("render_latex".into(), Some(2), None),
        ]
    );
    let bad = tui::TuiFile::parse("disable_paste_burst = \"yes\"\n", path);
    assert!(bad.diagnostics[0].is_error() && bad.diagnostics[0].line == Some(1));
}

#[test]
fn the_subagent_model_pool_is_typed_and_its_unknown_keys_are_warned() {
    let config = parse(
        "[subagent]\nmodels = { cheap = \"fast searches\", tiny = \"\" }\ndefault_model = \"cheap\"\ndefualt_model = \"x\"\n",
    );
    assert_eq!(
        config.subagent.pool(),
        vec![
            ("cheap".to_owned(), "fast searches".to_owned()),
            ("tiny".to_owned(), String::new())
        ]
    );
    assert_eq!(config.subagent.default_model.as_deref(), Some("cheap"));
    let unknown: Vec<(String, Option<String>)> = config
        .warnings()
        .filter(|d| d.message.starts_with("unknown key"))
        .map(|d| (d.key.clone(), d.suggestion.clone()))
        .collect();
    assert_eq!(
        unknown,
        vec![(
            "subagent.defualt_model".to_owned(),
            Some("default_model".to_owned())
        )]
    );
    assert!(config.check().is_ok());
    assert!(
        parse("[subagent]\nmodels = \"cheap\"\n").check().is_err(),
        "a pool that is not a table is an error"
    );
}
