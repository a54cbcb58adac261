//! `kimi-rs doctor` on the real binary with a temp `KIMI_RS_HOME`: a valid home passes, and
//! each kind of broken file is reported with its file, where in it, and exit status 1.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::{BIN, Run, wait_child};

struct Home {
    home: tempfile::TempDir,
    work: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        Home {
            home: tempfile::tempdir().unwrap(),
            work: tempfile::tempdir().unwrap(),
        }
    }

    fn write(&self, name: &str, text: &str) {
        let path = self.home.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn doctor(&self, args: &[&str]) -> Run {
        let mut cmd = Command::new(BIN);
        cmd.arg("doctor")
            .args(args)
            .current_dir(self.work.path())
            .env("KIMI_RS_HOME", self.home.path())
            .env("HOME", self.home.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for var in [
            "KIMI_MODEL_NAME",
            "KIMI_MODEL_API_KEY",
            "KIMI_MODEL_PROVIDER_TYPE",
        ] {
            cmd.env_remove(var);
        }
        wait_child(cmd.spawn().unwrap())
    }

    fn path(&self, name: &str) -> String {
        self.home.path().join(name).display().to_string()
    }
}

/// The report line of `label` at `path`.
fn line_for<'a>(run: &'a Run, label: &str, path: &str) -> &'a str {
    run.stdout
        .lines()
        .find(|l| l.starts_with(label) && l.contains(path))
        .unwrap_or_else(|| panic!("no line for {label} {path}\n{run:?}"))
}

const VALID_CONFIG: &str = r#"
default_model = "main"
default_permission_mode = "manual"

[providers.local]
type = "openai"
api_key = "sk-test"
base_url = "http://127.0.0.1:9/v1"

[models.main]
provider = "local"
model = "some-model"
max_context_size = 128000

[[permission.rules]]
decision = "deny"
pattern = "Bash(rm -rf *)"

[[hooks]]
event = "PreToolUse"
matcher = "Bash"
command = "true"

[sandbox]
mode = "off"
"#;

#[test]
fn a_valid_home_passes_and_absent_files_are_skipped() {
    let h = Home::new();
    h.write("config.toml", VALID_CONFIG);
    h.write(
        "tui.toml",
        "theme = \"dark\"\n[status_line]\nitems = [\"mode\", \"model\"]\n",
    );
    h.write(
        "mcp.json",
        r#"{"mcpServers": {"files": {"command": "echo", "args": ["hi"]}}}"#,
    );
    let run = h.doctor(&[]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        line_for(&run, "config.toml", &h.path("config.toml")).ends_with(": ok"),
        "{run:?}"
    );
    assert!(
        line_for(&run, "tui.toml", &h.path("tui.toml")).ends_with(": ok"),
        "{run:?}"
    );
    assert!(
        line_for(&run, "mcp.json", &h.path("mcp.json")).ends_with(": ok (1 server)"),
        "{run:?}"
    );
    let project = h.work.path().join(".mcp.json").display().to_string();
    assert!(
        line_for(&run, ".mcp.json", &project).contains("skipped (not present"),
        "{run:?}"
    );
    assert!(
        run.stdout.contains("Everything present is valid."),
        "{run:?}"
    );
    assert!(!run.stdout.contains("error:"), "{run:?}");

    // An empty home: nothing to check, nothing wrong.
    let empty = Home::new();
    let run = empty.doctor(&[]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        line_for(&run, "config.toml", &empty.path("config.toml")).contains("skipped"),
        "{run:?}"
    );
}

#[test]
fn bad_rule_hook_model_alias_and_mcp_json_are_each_named_with_their_file() {
    let h = Home::new();
    h.write(
        "config.toml",
        r#"default_model = "nope"
frobnicate = true

[providers.local]
type = "openai"
api_key = "sk-test"

[models.main]
provider = "local"
model = "m"
max_context_size = 1000

[[permission.rules]]
decision = "maybe"
pattern = "Read"

[[hooks]]
event = "NoSuchEvent"
command = "true"
"#,
    );
    h.write("mcp.json", "{ \"mcpServers\": ");
    let run = h.doctor(&[]);
    assert_eq!(run.code, Some(1), "{run:?}");
    let config = line_for(&run, "config.toml", &h.path("config.toml"));
    assert!(config.ends_with(": 3 problems"), "{run:?}");
    assert!(
        run.stdout.contains("permission.rules rule #1 (line 13)")
            && run.stdout.contains("\"maybe\""),
        "{run:?}"
    );
    assert!(
        run.stdout.contains("hooks entry #1 (line 17)") && run.stdout.contains("NoSuchEvent"),
        "{run:?}"
    );
    assert!(
        run.stdout
            .contains("default_model `nope` (line 1): unknown model alias `nope`"),
        "{run:?}"
    );
    // Not a Kimi Code key: a warning, not a problem.
    assert!(
        run.stdout
            .contains("warning: line 2: `frobnicate`: unknown key: is not a config.toml setting"),
        "{run:?}"
    );
    let mcp = line_for(&run, "mcp.json", &h.path("mcp.json"));
    assert!(mcp.ends_with(": 1 problem"), "{run:?}");
    assert!(
        run.stdout.contains(&format!(
            "Invalid JSON in MCP config {}",
            h.path("mcp.json")
        )),
        "{run:?}"
    );
    assert!(
        run.stdout.contains("Found 4 problems in 2 files"),
        "{run:?}"
    );
}

#[test]
fn a_bad_sandbox_mode_and_a_broken_skill_are_problems() {
    let h = Home::new();
    h.write("config.toml", "[sandbox]\nmode = \"everything\"\n");
    h.write(
        "skills/broken/SKILL.md",
        "---\nname: [unclosed\n---\nbody\n",
    );
    let run = h.doctor(&["config"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(
        run.stdout.contains(
            "error: line 2: `sandbox.mode`: is `everything`, which is not a sandbox mode"
        ),
        "{run:?}"
    );
    let skills = run
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("skills"))
        .take(2)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(skills.contains("1 problem"), "{run:?}");
    assert!(skills.contains("SKILL.md"), "{run:?}");
    // `doctor config` leaves tui.toml alone.
    assert!(!run.stdout.contains("tui.toml"), "{run:?}");
}

#[test]
fn tui_toml_errors_and_ignored_values() {
    let h = Home::new();
    h.write("tui.toml", "theme = 3\n");
    let run = h.doctor(&["tui"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(
        line_for(&run, "tui.toml", &h.path("tui.toml")).ends_with(": 1 problem"),
        "{run:?}"
    );
    assert!(
        run.stdout
            .contains("line 1: `theme`: invalid type: integer `3`, expected a string")
            && run.stdout.contains("uses its defaults"),
        "{run:?}"
    );
    assert!(!run.stdout.contains("config.toml"), "{run:?}");

    h.write(
        "tui.toml",
        "theme = \"solarized\"\n[status_line]\nitems = [\"mode\", \"weather\"]\n",
    );
    let run = h.doctor(&["tui"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        run.stdout
            .contains("line 1: `theme`: `solarized`: there is no custom theme file")
            && run.stdout.contains("`weather` is not a status-line item"),
        "{run:?}"
    );

    // Broken TOML syntax names the line.
    h.write("tui.toml", "[editor\ncommand = 1\n");
    let run = h.doctor(&["tui"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(run.stdout.contains("line 1"), "{run:?}");
}

#[test]
fn an_explicit_path_must_exist_and_is_checked_instead_of_the_home_file() {
    let h = Home::new();
    let run = h.doctor(&["config", "/definitely/not/here/config.toml"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(
        run.stdout
            .contains("/definitely/not/here/config.toml: 1 problem")
            && run.stdout.contains("the file does not exist"),
        "{run:?}"
    );
    let run = h.doctor(&["tui", "missing-tui.toml"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    let missing = Path::new(h.work.path()).join("missing-tui.toml");
    assert!(
        run.stdout.contains(&missing.display().to_string()),
        "relative paths resolve against the cwd: {run:?}"
    );

    std::fs::write(h.work.path().join("other.toml"), VALID_CONFIG).unwrap();
    let run = h.doctor(&["config", "other.toml"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stdout.contains("other.toml: ok"), "{run:?}");
    std::fs::write(h.work.path().join("other.toml"), "default_model = \n").unwrap();
    let run = h.doctor(&["config", "other.toml"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(run.stdout.contains("not valid TOML"), "{run:?}");
}

#[test]
fn every_unknown_key_at_any_depth_and_every_wrong_type_is_reported_in_one_run() {
    let h = Home::new();
    h.write(
        "config.toml",
        r#"defualt_model = "main"
telemetry = false

[providers.local]
type = "openai"
api_key = "sk-test"
bogus = 1

[models.main]
provider = "local"
model = "m"
max_context_size = 1000
[models.main.overrides]
display_nam = "M"

[loop_control]
max_stepz = 3
max_attempts_per_step = "three"

[mcp]
startup_timeout_ms = true

[services.moonshot_search]
base_url = "https://example.invalid"
colour = "blue"
"#,
    );
    let run = h.doctor(&["config"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    for expected in [
        "warning: line 1: `defualt_model`: unknown key: is not a config.toml setting; it is ignored (check its spelling or remove it) (did you mean `default_model`?)",
        "warning: line 7: `providers.local.bogus`: unknown key: is not a key of [providers.local]",
        "warning: line 14: `models.main.overrides.display_nam`: unknown key",
        "(did you mean `display_name`?)",
        "warning: line 17: `loop_control.max_stepz`: unknown key",
        "error: line 18: `loop_control.max_attempts_per_step`: invalid type: string \"three\", expected a non-negative integer",
        "error: line 21: `mcp.startup_timeout_ms`: invalid type: boolean `true`",
        "warning: line 25: `services.moonshot_search.colour`: unknown key",
        "warning: line 2: `telemetry`: not supported by kimi-rs; ignored",
    ] {
        assert!(run.stdout.contains(expected), "{expected}\n{run:?}");
    }
    let config = line_for(&run, "config.toml", &h.path("config.toml"));
    assert!(config.ends_with(": 2 problems"), "{run:?}");
}

/// `mcp.json` entries are checked one by one: a misspelt key is named with a did-you-mean, a
/// stdio command that is not on PATH is a problem, the good entry still counts, a VS Code-shaped
/// project file is named as such, and project servers of an untrusted folder are a warning.
#[test]
fn mcp_entries_are_checked_one_by_one_and_commands_must_exist() {
    let h = Home::new();
    h.write(
        "mcp.json",
        r#"{"mcpServers": {
            "good": {"command": "sh", "args": ["-c", "true"]},
            "typo": {"comand": "npx"},
            "missing": {"command": "kimi-rs-no-such-mcp-server"}
        }}"#,
    );
    std::fs::create_dir(h.work.path().join(".kimi-code")).unwrap();
    std::fs::write(
        h.work.path().join(".kimi-code/mcp.json"),
        r#"{"servers": {"x": {"command": "sh"}}}"#,
    )
    .unwrap();
    std::fs::write(
        h.work.path().join(".mcp.json"),
        r#"{"mcpServers": {"proj": {"command": "sh"}}}"#,
    )
    .unwrap();
    let run = h.doctor(&[]);
    assert_eq!(run.code, Some(1), "{run:?}");
    let user = line_for(&run, "mcp.json", &h.path("mcp.json"));
    assert!(user.ends_with(": 2 problems"), "{run:?}");
    assert!(
        run.stdout.contains("Invalid MCP server `typo`")
            && run
                .stdout
                .contains("unknown key `comand` (did you mean `command`?)"),
        "{run:?}"
    );
    assert!(
        run.stdout.contains(
            "MCP server `missing`: command `kimi-rs-no-such-mcp-server` was not found (not an executable file on PATH)"
        ),
        "{run:?}"
    );
    assert!(!run.stdout.contains("MCP server `good`"), "{run:?}");
    assert!(
        run.stdout.contains(
            "this is a VS Code-style file (its servers are under \"servers\"); kimi-rs reads \"mcpServers\": rename the key \"servers\" to \"mcpServers\""
        ),
        "{run:?}"
    );
    assert!(
        run.stdout.contains(
            "this folder is not trusted, so these servers do not start; run `kimi-rs trust"
        ),
        "{run:?}"
    );
}
