//! Rendering the system prompt. The built-in template is a minijinja template with strict
//! undefined variables (a typo is an error, not an empty string). A user's
//! `$KIMI_RS_HOME/SYSTEM.md` may use Kimi Code's `${name}` variables (unknown names are left as
//! written, a bare `$` is literal) and, optionally, minijinja syntax as well.

use minijinja::{Environment, UndefinedBehavior, Value};

/// The built-in template (our own wording).
pub const BUILTIN_TEMPLATE: &str = include_str!("system.md");

const REPLY_STYLE: &str = "Your replies are shown in a terminal. Keep them short and direct; use Markdown only where it helps (code blocks with a language tag, short lists). Refer to code as `path:line`. Do not restate what the user can already see in tool output.";

#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    #[error(
        "the system prompt template {source_name} does not render: {message}; fix the template (variables: {vars})"
    )]
    Render {
        source_name: String,
        message: String,
        vars: String,
    },
}

/// The variables of surface.md §9.6, with the reference's names.
#[derive(Debug, Clone, Default)]
pub struct PromptVars {
    pub product_name: String,
    pub role_additional: String,
    pub reply_style_guide: String,
    pub os: String,
    pub windows_notes: String,
    pub shell: String,
    pub now: String,
    pub cwd: String,
    pub cwd_listing: String,
    pub agents_md: String,
    pub additional_dirs_info: String,
    pub additional_dirs_section: String,
    pub skills: String,
    pub skills_section: String,
    pub plugin_sections: String,
    /// Only meaningful inside SYSTEM.md: the built-in prompt rendered with these variables.
    pub base_prompt: String,
    /// Not a reference variable: whether Bash runs under the opt-in sandbox.
    pub sandboxed: bool,
}

impl PromptVars {
    pub fn with_defaults(mut self) -> Self {
        if self.product_name.is_empty() {
            "kimi-rs".clone_into(&mut self.product_name);
        }
        if self.reply_style_guide.is_empty() {
            REPLY_STYLE.clone_into(&mut self.reply_style_guide);
        }
        if self.additional_dirs_section.is_empty() && !self.additional_dirs_info.is_empty() {
            self.additional_dirs_section =
                format!("\n{DIRS_HEADING}\n{}\n", self.additional_dirs_info);
        }
        if self.skills_section.is_empty() && !self.skills.is_empty() {
            self.skills_section = format!(
                "\n# Skills\n\nSkills are instructions for specific tasks. When one fits the task, load it with the Skill tool before you start.\n\n{}\n",
                self.skills
            );
        }
        self
    }

    fn to_context(&self) -> Value {
        let mut map: std::collections::BTreeMap<&str, Value> = VAR_NAMES
            .split(", ")
            .map(|name| (name, Value::from(self.lookup(name).unwrap_or_default())))
            .collect();
        map.insert("sandboxed", Value::from(self.sandboxed));
        Value::from(map)
    }

    fn lookup(&self, name: &str) -> Option<&str> {
        Some(match name {
            "product_name" => &self.product_name,
            "role_additional" => &self.role_additional,
            "reply_style_guide" => &self.reply_style_guide,
            "os" => &self.os,
            "windows_notes" => &self.windows_notes,
            "shell" => &self.shell,
            "now" => &self.now,
            "cwd" => &self.cwd,
            "cwd_listing" => &self.cwd_listing,
            "agents_md" => &self.agents_md,
            "additional_dirs_info" => &self.additional_dirs_info,
            "additional_dirs_section" => &self.additional_dirs_section,
            "skills" => &self.skills,
            "skills_section" => &self.skills_section,
            "plugin_sections" => &self.plugin_sections,
            "base_prompt" => &self.base_prompt,
            _ => return None,
        })
    }
}

const VAR_NAMES: &str = "product_name, role_additional, reply_style_guide, os, windows_notes, shell, now, cwd, cwd_listing, agents_md, additional_dirs_info, additional_dirs_section, skills, skills_section, plugin_sections, base_prompt";

/// `${name}` substitution as Kimi Code does it: known names are replaced (empty when unset),
/// unknown names and lone `$` are left as written.
pub fn substitute_dollar_vars(text: &str, vars: &PromptVars) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = rest.find("${") {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 2..];
        match after.find('}') {
            Some(end) => match vars.lookup(&after[..end]) {
                Some(value) => {
                    out.push_str(value);
                    rest = &after[end + 1..];
                }
                None => {
                    out.push_str("${");
                    rest = after;
                }
            },
            None => {
                out.push_str("${");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn render_jinja(
    source_name: &str,
    template: &str,
    vars: &PromptVars,
) -> Result<String, PromptError> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.render_str(template, vars.to_context())
        .map_err(|e| PromptError::Render {
            source_name: source_name.to_owned(),
            message: e.to_string(),
            vars: VAR_NAMES.to_owned(),
        })
}

/// Render the system prompt: the built-in template, or `system_md` (the user's SYSTEM.md)
/// when given, with `${base_prompt}` available inside it.
pub fn render_system_prompt(
    vars: PromptVars,
    system_md: Option<&str>,
) -> Result<String, PromptError> {
    let mut vars = vars.with_defaults();
    let builtin = render_jinja("(built-in)", BUILTIN_TEMPLATE, &vars)?;
    let Some(custom) = system_md else {
        return Ok(collapse_blank_runs(&builtin));
    };
    vars.base_prompt = builtin;
    let substituted = substitute_dollar_vars(custom, &vars);
    let rendered = if custom.contains("{{") || custom.contains("{%") {
        render_jinja("SYSTEM.md", &substituted, &vars)?
    } else {
        substituted
    };
    Ok(collapse_blank_runs(&rendered))
}

/// Render a custom agent file's body (§8.2): `${name}` variables (and minijinja syntax when
/// present), with `${base_prompt}` standing for `base`, the effective default prompt.
pub fn render_agent_template(
    vars: PromptVars,
    source_name: &str,
    body: &str,
    base: String,
) -> Result<String, PromptError> {
    let mut vars = vars.with_defaults();
    vars.base_prompt = base;
    let substituted = substitute_dollar_vars(body, &vars);
    let rendered = if body.contains("{{") || body.contains("{%") {
        render_jinja(source_name, &substituted, &vars)?
    } else {
        substituted
    };
    Ok(collapse_blank_runs(&rendered))
}

/// Optional sections leave runs of blank lines behind; keep at most one.
fn collapse_blank_runs(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.lines() {
        if line.trim().is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim().to_owned() + "\n"
}

const DIRS_HEADING: &str = "The workspace also includes these directories:";

/// The extra workspace directories a rendered prompt lists (its `additional_dirs_section`), so
/// a reopened session can tell whether its journaled prompt still names the right ones.
pub fn listed_dirs(prompt: &str) -> Vec<&str> {
    let Some((_, after)) = prompt.split_once(DIRS_HEADING) else {
        return Vec::new();
    };
    after
        .lines()
        .skip(1)
        .map_while(|line| line.strip_prefix("- "))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> PromptVars {
        PromptVars {
            os: "Linux".into(),
            shell: "bash (`/bin/bash`)".into(),
            now: "2026-11-30T05:00:00Z".into(),
            cwd: "/repo".into(),
            cwd_listing: "src/".into(),
            agents_md: "<!-- From: /repo/AGENTS.md -->\nuse tabs".into(),
            ..PromptVars::default()
        }
    }

    #[test]
    fn builtin_template_renders_every_section() {
        let text = render_system_prompt(vars(), None).unwrap();
        assert!(text.starts_with("You are kimi-rs,"));
        assert!(text.contains("- Working directory: /repo"));
        assert!(text.contains("use tabs"));
        assert!(text.contains("not sandboxed"));
        assert!(!text.contains("\n\n\n"));
        assert!(!text.contains("{{"));
    }

    #[test]
    fn dollar_variables_follow_the_reference() {
        let v = vars().with_defaults();
        assert_eq!(
            substitute_dollar_vars("${cwd} ${unknown} $ ${role_additional}| ${cwd", &v),
            "/repo ${unknown} $ | ${cwd"
        );
    }

    #[test]
    fn system_md_overrides_and_can_include_the_base_prompt() {
        let text =
            render_system_prompt(vars(), Some("Custom for ${cwd}.\n\n${base_prompt}")).unwrap();
        assert!(text.starts_with("Custom for /repo.\n\nYou are kimi-rs,"));
    }

    #[test]
    fn undefined_jinja_variables_are_errors_that_name_the_file() {
        let err = render_system_prompt(vars(), Some("{{ cwdd }}")).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("SYSTEM.md"), "{text}");
        assert!(text.contains("cwd_listing"), "{text}");
    }

    #[test]
    fn listed_dirs_reads_back_the_rendered_section() {
        let vars = PromptVars {
            additional_dirs_info: "- /a/one\n- /b/two".to_owned(),
            ..PromptVars::default()
        }
        .with_defaults();
        let prompt = format!("intro\n{}\nafter", vars.additional_dirs_section);
        assert_eq!(listed_dirs(&prompt), ["/a/one", "/b/two"]);
        assert_eq!(listed_dirs("no section"), Vec::<&str>::new());
    }
}
