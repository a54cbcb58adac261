//! Turning a profile into what an agent runs with: its system prompt (the built-in template
//! with the profile's role text, `SYSTEM.md` for the main agent, or a custom file's template)
//! and its tool registry.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use kimi_tools::{Tool, ToolRegistry};

use super::Profile;
use crate::prompt::{
    PromptError, PromptVars, cwd_listing, discover_agents_md, render_agent_template,
    render_system_prompt,
};

/// The surroundings every prompt of a session is rendered against.
#[derive(Debug, Clone)]
pub struct PromptEnv {
    pub home: PathBuf,
    pub cwd: PathBuf,
    pub additional_dirs: Vec<PathBuf>,
    /// The skills listing (shown only to profiles that have the Skill tool).
    pub skills: String,
    /// The remote environment the tools act on (`None` = this machine): `cwd` is its path,
    /// and the OS, shell and listing are the target's, never this machine's.
    pub target: Option<kimi_tools::EnvironmentInfo>,
    /// Plugins' prompt sections (the `plugin_sections` variable).
    pub plugin_sections: String,
}

fn base_vars(env: &PromptEnv) -> PromptVars {
    if let Some(target) = &env.target {
        // Only the user's own AGENTS.md: the project's lives on the target.
        let agents_md = discover_agents_md(&env.home, std::env::home_dir().as_deref(), &env.home);
        return PromptVars {
            os: format!(
                "{} ({} {}, remote environment `{}`)",
                target.os, target.os, target.arch, target.id
            ),
            shell: format!("`{}` on the target", target.shell),
            now: crate::engine::log::now_iso(),
            cwd: env.cwd.display().to_string(),
            cwd_listing: format!(
                "(the working directory is on the remote environment `{}`; list it with Glob or Bash)",
                target.id
            ),
            agents_md: agents_md.render(),
            additional_dirs_info: String::new(),
            ..PromptVars::default()
        };
    }
    let agents_md = discover_agents_md(&env.home, std::env::home_dir().as_deref(), &env.cwd);
    let shell = std::env::var("SHELL").unwrap_or_else(|_| "/bin/sh".to_owned());
    let shell_name = Path::new(&shell)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| shell.clone());
    PromptVars {
        os: std::env::consts::OS.to_owned(),
        shell: format!("{shell_name} (`{shell}`)"),
        now: crate::engine::log::now_iso(),
        cwd: env.cwd.display().to_string(),
        cwd_listing: cwd_listing(&env.cwd),
        agents_md: agents_md.render(),
        additional_dirs_info: env
            .additional_dirs
            .iter()
            .map(|d| format!("- {}", d.display()))
            .collect::<Vec<_>>()
            .join("\n"),
        ..PromptVars::default()
    }
}

/// The system prompt of an agent bound to `profile`. `main` = the session's main agent: only
/// it reads `$KIMI_RS_HOME/SYSTEM.md` as its default prompt (custom files still see it as
/// `${base_prompt}`).
pub fn render_profile_prompt(
    profile: &Profile,
    env: &PromptEnv,
    main: bool,
) -> Result<String, PromptError> {
    let mut vars = base_vars(env);
    if profile.allows_tool("Skill") {
        vars.skills.clone_from(&env.skills);
    }
    vars.plugin_sections.clone_from(&env.plugin_sections);
    let system_md = std::fs::read_to_string(env.home.join("SYSTEM.md")).ok();
    match &profile.template {
        None => {
            vars.role_additional.clone_from(&profile.role);
            let system_md = if main { system_md.as_deref() } else { None };
            render_system_prompt(vars, system_md)
        }
        Some(template) => {
            let base = render_system_prompt(vars.clone(), system_md.as_deref())?;
            let source = profile
                .file()
                .map_or_else(|| profile.name.clone(), |p| p.display().to_string());
            render_agent_template(vars, &source, template, base)
        }
    }
}

/// Offer the tools of `late` (MCP servers still connecting) that `[tools]` and the profile allow, as they
/// arrive.
pub fn attach_late_for(
    registry: &mut ToolRegistry,
    profile: &Profile,
    late: &kimi_tools::LateTools,
    allowed: &kimi_config::Tools,
) {
    let profile = profile.clone();
    let allowed = allowed.clone();
    registry.attach_late(
        late.clone(),
        Arc::new(move |name: &str| allowed.allows(name) && profile.allows_tool(name)),
    );
}

/// The tools of `available` (in order) the profile allows.
pub fn registry_for<'a>(
    profile: &Profile,
    available: impl IntoIterator<Item = &'a Arc<dyn Tool>>,
) -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    for tool in available {
        if profile.allows_tool(tool.name()) {
            registry.register(tool.clone());
        }
    }
    registry
}

/// A short `<git-context>` block (branch, status, recent commits) for exploration tasks;
/// empty outside a repository or when git is slow or missing.
pub async fn git_context(cwd: &Path) -> String {
    async fn git(cwd: &Path, args: &[&str]) -> Option<String> {
        // A repository's own `.git/config` may name an fsmonitor program that `git status`
        // would run: reading context must not execute what a cloned or unpacked repository
        // configures.
        let run = tokio::process::Command::new("git")
            .args([
                "-c",
                "core.fsmonitor=false",
                "-c",
                "core.hooksPath=/dev/null",
            ])
            .args(args)
            .current_dir(cwd)
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output();
        // Context is a nicety: never hold the task up for it.
        let output = tokio::time::timeout(std::time::Duration::from_secs(3), run)
            .await
            .ok()?
            .ok()?;
        output
            .status
            .success()
            .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
    }
    let Some(branch) = git(cwd, &["rev-parse", "--abbrev-ref", "HEAD"]).await else {
        return String::new();
    };
    let status = git(cwd, &["status", "--short"]).await.unwrap_or_default();
    let status: String = status.lines().take(30).collect::<Vec<_>>().join("\n");
    let log = git(cwd, &["log", "--oneline", "-5"])
        .await
        .unwrap_or_default();
    format!(
        "<git-context>\nBranch: {branch}\nChanged files:\n{}\nRecent commits:\n{}\n</git-context>\n\n",
        if status.is_empty() { "(none)" } else { &status },
        if log.is_empty() { "(none)" } else { &log },
    )
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    /// A repository whose own config names an fsmonitor program: plain `git status` runs it,
    /// the context kimi-rs reads does not.
    #[tokio::test]
    async fn git_context_does_not_run_a_repositorys_fsmonitor() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path();
        let marker = repo.join("fsmonitor-ran");
        let git = |args: &[&str]| {
            Command::new("git")
                .args(args)
                .current_dir(repo)
                .output()
                .unwrap()
        };
        assert!(git(&["init", "-q"]).status.success());
        let commit = git(&[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.invalid",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "init",
        ]);
        assert!(commit.status.success(), "{commit:?}");
        let hook = format!("touch {}; false", marker.display());
        assert!(git(&["config", "core.fsmonitor", &hook]).status.success());
        std::fs::write(repo.join("a.txt"), "a").unwrap();

        let context = super::git_context(repo).await;
        assert!(context.contains("a.txt"), "{context}");
        assert!(!marker.exists(), "kimi-rs ran the repository's fsmonitor");

        // Control: git itself would have run it.
        git(&["status", "--short"]);
        assert!(marker.exists(), "the fixture's fsmonitor never runs");
    }
}
