//! Plugins through the real `kimi-rs` binary and the loopback scripted model: `kimi-rs plugin
//! install DIR` of a plugin with a skill, a command, a UserPromptSubmit hook, a stdio MCP
//! server and prompt text makes all five take effect in the next session; `plugin disable`
//! takes all five away; a manifest whose paths lead out of the plugin is refused and nothing
//! is installed; zip files and marketplace entries install the same plugin.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};

use common::{CORE_FORMATS, Fixture, mcp_fixture};
use kimi_llm::scripted::ScriptTurn;
use serde_json::{Value, json};

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[cfg(unix)]
fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A plugin `demo` holding one of everything, in `dir`.
fn demo_plugin(dir: &Path) -> PathBuf {
    let root = dir.join("demo-plugin");
    let manifest = json!({
        "name": "demo",
        "version": "1.2.0",
        "description": "A plugin with one of everything",
        "skills": "./skills",
        "commands": "./commands",
        "hooks": [{
            "event": "UserPromptSubmit",
            "command": "pwd > \"$KIMI_RS_HOME/hook-cwd\"; printf %s \"$KIMI_PLUGIN_ROOT\" > \"$KIMI_RS_HOME/hook-root\"; echo HOOK-SAYS-HI"
        }],
        "mcpServers": {"demo-echo": {"command": "./bin/server"}},
        "systemPrompt": "PLUGIN-PROMPT-TEXT: be kind to plugins.",
        "tools": ["ignored"]
    });
    write(&root.join("kimi.plugin.json"), &manifest.to_string());
    write(
        &root.join("skills/wave/SKILL.md"),
        "---\nname: wave\ndescription: Waves at people from the demo plugin\n---\nWave at $ARGUMENTS.\n",
    );
    write(
        &root.join("commands/hello.md"),
        "---\ndescription: Say hello\n---\nGreet $ARGUMENTS warmly, from the demo command.\n",
    );
    let server = root.join("bin/server");
    write(
        &server,
        &format!("#!/bin/sh\nexec '{}' \"$@\"\n", mcp_fixture().display()),
    );
    #[cfg(unix)]
    make_executable(&server);
    root
}

fn installed(fx: &Fixture) -> Value {
    let text = std::fs::read_to_string(fx.home.path().join("plugins/installed.json"))
        .unwrap_or_else(|_| "{}".to_owned());
    serde_json::from_str(&text).unwrap()
}

#[test]
fn an_installed_plugin_adds_its_skill_command_hook_mcp_server_and_prompt_and_disable_takes_them_away()
 {
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![
            ScriptTurn::tool_calls(&[(
                "call_p",
                "mcp__demo-echo__echo",
                r#"{"text":"ping through the plugin"}"#,
            )]),
            ScriptTurn::text("The plugin server echoed it."),
            ScriptTurn::text("Without the plugin."),
        ],
    );
    let source = tempfile::tempdir().unwrap();
    let root = demo_plugin(source.path());

    let run = fx.run(&["plugin", "install", root.to_str().unwrap()]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        run.stdout.contains("Installed plugin `demo` 1.2.0"),
        "{run:?}"
    );
    assert!(
        run.stdout
            .contains("1 skill(s), 1 command(s), 1 hook(s), 1 MCP server(s)"),
        "{run:?}"
    );
    assert!(
        run.stdout.contains("`tools` is not supported by kimi-rs"),
        "unsupported keys are diagnostics: {run:?}"
    );
    let managed = std::fs::canonicalize(fx.home.path().join("plugins/managed/demo")).unwrap();
    assert!(managed.join("kimi.plugin.json").is_file());
    assert_eq!(installed(&fx)["plugins"]["demo"]["enabled"], true);
    let list = fx.run(&["plugin", "list", "--json"]);
    assert_eq!(list.code, Some(0), "{list:?}");
    let listed: Value = serde_json::from_str(&list.stdout).unwrap();
    assert_eq!(listed["demo"]["version"], "1.2.0");
    let info = fx.run(&["plugin", "info", "demo"]);
    assert!(
        info.stdout.contains("command /demo:hello: Say hello"),
        "{info:?}"
    );
    assert!(
        info.stdout.contains("MCP server demo-echo (stdio)"),
        "{info:?}"
    );

    // The next session: all five take effect.
    let run = fx.run(&["-p", "/demo:hello Bob", "--output-format", "stream-json"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let first = fx.requests()[0].body.to_string();
    assert!(
        first.contains("Greet Bob warmly, from the demo command."),
        "the command was expanded: {first}"
    );
    assert!(
        first.contains("Waves at people from the demo plugin"),
        "the skill is listed"
    );
    assert!(
        first.contains("mcp__demo-echo__echo"),
        "the MCP tool is offered"
    );
    assert!(
        first.contains("PLUGIN-PROMPT-TEXT: be kind to plugins."),
        "the prompt text is in the system prompt"
    );
    assert!(first.contains("HOOK-SAYS-HI"), "the hook's output joined");
    let hook_cwd = std::fs::read_to_string(fx.home.path().join("hook-cwd")).unwrap();
    assert_eq!(
        Path::new(hook_cwd.trim()),
        managed,
        "hooks run in the plugin root"
    );
    let hook_root = std::fs::read_to_string(fx.home.path().join("hook-root")).unwrap();
    assert_eq!(Path::new(&hook_root), managed);
    let second = fx.requests()[1].body.to_string();
    assert!(
        second.contains("ping through the plugin"),
        "the MCP result reached the model: {second}"
    );

    // Disabled: none of the five.
    let run = fx.run(&["plugin", "disable", "demo"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(installed(&fx)["plugins"]["demo"]["enabled"], false);
    std::fs::remove_file(fx.home.path().join("hook-cwd")).unwrap();
    let run = fx.run(&["-p", "/demo:hello Bob", "--output-format", "stream-json"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let third = fx.requests()[2].body.to_string();
    assert!(third.contains("/demo:hello Bob"), "sent as typed: {third}");
    for gone in [
        "Greet Bob warmly",
        "Waves at people from the demo plugin",
        "mcp__demo-echo__echo",
        "PLUGIN-PROMPT-TEXT",
        "HOOK-SAYS-HI",
    ] {
        assert!(!third.contains(gone), "{gone} is gone: {third}");
    }
    assert!(
        !fx.home.path().join("hook-cwd").exists(),
        "the hook did not run"
    );

    // Enabled again, then removed: the record and the copy go.
    assert_eq!(fx.run(&["plugin", "enable", "demo"]).code, Some(0));
    assert_eq!(installed(&fx)["plugins"]["demo"]["enabled"], true);
    let run = fx.run(&["plugin", "remove", "demo"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(!managed.exists());
    assert!(installed(&fx)["plugins"].get("demo").is_none());
    let run = fx.run(&["plugin", "info", "demo"]);
    assert_eq!(run.code, Some(1));
    assert!(run.stderr.contains("no installed plugin `demo`"), "{run:?}");
}

#[test]
fn a_manifest_whose_paths_lead_outside_the_plugin_is_refused_and_nothing_is_installed() {
    let fx = Fixture::new(CORE_FORMATS[0], vec![]);
    let source = tempfile::tempdir().unwrap();
    let outside = source.path().join("outside");
    write(
        &outside.join("SKILL.md"),
        "---\nname: stolen\ndescription: x\n---\nx\n",
    );
    let dotdot = source.path().join("dotdot");
    write(
        &dotdot.join("kimi.plugin.json"),
        r#"{"name": "dotdot", "skills": "../outside"}"#,
    );
    let linked = source.path().join("linked");
    write(
        &linked.join("kimi.plugin.json"),
        r#"{"name": "linked", "skills": "./skills"}"#,
    );
    std::os::unix::fs::symlink(&outside, linked.join("skills")).unwrap();
    let server = source.path().join("server");
    write(
        &server.join("kimi.plugin.json"),
        r#"{"name": "server", "mcpServers": {"s": {"command": "node", "cwd": "../.."}}}"#,
    );
    for (dir, id, field) in [
        (&dotdot, "dotdot", "`skills`"),
        (&linked, "linked", "`skills`"),
        (&server, "server", "`mcpServers.s.cwd`"),
    ] {
        let run = fx.run(&["plugin", "install", dir.to_str().unwrap()]);
        assert_eq!(run.code, Some(1), "{run:?}");
        assert!(
            run.stderr.contains(field) && run.stderr.contains("outside the plugin folder"),
            "{id}: the field is named: {run:?}"
        );
        assert!(!fx.home.path().join("plugins/managed").join(id).exists());
        assert!(installed(&fx)["plugins"].get(id).is_none());
    }
}

/// Zip `root` under a top-level folder, as GitHub archives are laid out.
fn zip_plugin(root: &Path, out: &Path) {
    use std::io::Write;
    let file = std::fs::File::create(out).unwrap();
    let mut zip = zip::ZipWriter::new(file);
    let options = zip::write::SimpleFileOptions::default().unix_permissions(0o755);
    fn add(
        zip: &mut zip::ZipWriter<std::fs::File>,
        base: &Path,
        dir: &Path,
        options: zip::write::SimpleFileOptions,
    ) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(base).unwrap();
            let name = format!("demo-main/{}", rel.display());
            if path.is_dir() {
                zip.add_directory(name, options).unwrap();
                add(zip, base, &path, options);
            } else {
                zip.start_file(name, options).unwrap();
                zip.write_all(&std::fs::read(&path).unwrap()).unwrap();
            }
        }
    }
    add(&mut zip, root, root, options);
    zip.finish().unwrap();
}

#[test]
fn zip_files_and_marketplace_entries_install_the_same_plugin() {
    let fx = Fixture::new(CORE_FORMATS[0], vec![]);
    let source = tempfile::tempdir().unwrap();
    let root = demo_plugin(source.path());
    let archive = source.path().join("demo.zip");
    zip_plugin(&root, &archive);
    let run = fx.run(&["plugin", "install", archive.to_str().unwrap()]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let managed = fx.home.path().join("plugins/managed/demo");
    assert!(managed.join("skills/wave/SKILL.md").is_file());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(managed.join("bin/server"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o111, 0o111, "executable bits survive the zip");
    }

    let market = source.path().join("market.json");
    write(
        &market,
        &json!({"version": "2", "plugins": [{"id": "demo", "displayName": "Demo", "source": "./demo-plugin"}]})
            .to_string(),
    );
    let url = format!("file://{}", market.display());
    let list = fx.run(&["plugin", "marketplace", &url]);
    assert_eq!(list.code, Some(0), "{list:?}");
    assert!(list.stdout.contains("demo  Demo"), "{list:?}");
    let mut cmd = fx.command(&["plugin", "install", "demo"]);
    cmd.env("KIMI_CODE_PLUGIN_MARKETPLACE_URL", &url);
    let run = common::Run::from(cmd.output().unwrap());
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stdout.contains("Reinstalled plugin `demo`"), "{run:?}");
    assert_eq!(installed(&fx)["plugins"]["demo"]["source"], "demo");
    let missing = fx.run(&["plugin", "install", "nosuch-plugin"]);
    assert_eq!(missing.code, Some(1));
    assert!(
        missing.stderr.contains("KIMI_CODE_PLUGIN_MARKETPLACE_URL"),
        "{missing:?}"
    );
}
