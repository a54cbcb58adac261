//! What skills and MCP servers look like in the UI: skill rows of the `/` completion menu and
//! the `/mcp` status panel (a transcript block: one row per server with its transport, state
//! and tool count, failures with their reason, and where to configure servers when none are).

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use crate::cells::RenderCtx;
use crate::host::{McpServerEntry, McpServerState, McpStatus, SkillEntry};
use crate::theme::Theme;
use crate::wrap::{str_width, wrap_line};

/// Completion rows (`/command`, description) for skills matching `prefix` (typed after the
/// slash). `/skill:<name>` matches on the whole command and on the bare name, the shorthand
/// `/<name>`; names match without regard to case.
pub fn skill_completions(prefix: &str, skills: &[SkillEntry]) -> Vec<(String, String)> {
    let prefix = prefix.to_lowercase();
    skills
        .iter()
        .filter(|s| {
            let command = s.command.to_lowercase();
            let bare = command.strip_prefix("skill:").unwrap_or(&command);
            command.starts_with(&prefix) || bare.starts_with(&prefix)
        })
        .map(|s| (format!("/{}", s.command), s.description.clone()))
        .collect()
}

fn state_label(state: &McpServerState) -> &'static str {
    match state {
        McpServerState::Connecting => "connecting",
        McpServerState::Connected => "connected",
        McpServerState::Failed(_) => "failed",
        McpServerState::NeedsLogin(_) => "needs login",
        McpServerState::Disabled => "disabled",
    }
}

/// Failures first, then connecting, connected and disabled servers; by name within each.
fn sorted(servers: &[McpServerEntry]) -> Vec<&McpServerEntry> {
    let rank = |s: &McpServerEntry| match s.state {
        McpServerState::Failed(_) | McpServerState::NeedsLogin(_) => 0,
        McpServerState::Connecting => 1,
        McpServerState::Connected => 2,
        McpServerState::Disabled => 3,
    };
    let mut out: Vec<&McpServerEntry> = servers.iter().collect();
    out.sort_by(|a, b| rank(a).cmp(&rank(b)).then_with(|| a.name.cmp(&b.name)));
    out
}

fn tools_text(server: &McpServerEntry) -> String {
    match server.state {
        McpServerState::Connected => plural(server.tool_count, "tool"),
        McpServerState::Connecting => "…".to_owned(),
        McpServerState::Failed(_) | McpServerState::NeedsLogin(_) | McpServerState::Disabled => {
            "—".to_owned()
        }
    }
}

fn plural(n: usize, word: &str) -> String {
    let s = if n == 1 { "" } else { "s" };
    format!("{n} {word}{s}")
}

fn summary(servers: &[McpServerEntry]) -> String {
    let count = |f: fn(&McpServerState) -> bool| servers.iter().filter(|s| f(&s.state)).count();
    let mut parts = Vec::new();
    for (n, label) in [
        (
            count(|s| matches!(s, McpServerState::Connected)),
            "connected",
        ),
        (
            count(|s| matches!(s, McpServerState::Connecting)),
            "connecting",
        ),
        (count(|s| matches!(s, McpServerState::Failed(_))), "failed"),
        (
            count(|s| matches!(s, McpServerState::NeedsLogin(_))),
            "need login",
        ),
        (count(|s| matches!(s, McpServerState::Disabled)), "disabled"),
    ] {
        if n > 0 {
            parts.push(format!("{n} {label}"));
        }
    }
    let tools: usize = servers
        .iter()
        .filter(|s| s.state == McpServerState::Connected)
        .map(|s| s.tool_count)
        .sum();
    parts.push(format!("{} available", plural(tools, "tool")));
    parts.join(" · ")
}

/// The panel's rows as styled text runs, before wrapping.
fn rows(status: &McpStatus, t: &Theme) -> Vec<Vec<(String, Style)>> {
    let mut rows = vec![vec![("MCP servers".to_owned(), t.primary)]];
    if status.servers.is_empty() {
        let first = match &status.problem {
            Some(problem) => format!("  No MCP server was started: {problem}"),
            None => "  No MCP servers configured.".to_owned(),
        };
        rows.push(vec![(first, t.text_dim)]);
        if let Some(user_file) = status.config_files.first() {
            let mut where_ = format!("  Add servers to {user_file}");
            if status.config_files.len() > 1 {
                where_.push_str(&format!(
                    " (or, for one project, {})",
                    status.config_files[1..].join(" or ")
                ));
            }
            rows.push(vec![(where_, t.text_dim)]);
            rows.push(vec![(
                r#"  as {"mcpServers": {"<name>": {"command": "…", "args": […]}}}, then restart kimi-rs."#
                    .to_owned(),
                t.text_dim,
            )]);
        }
        return rows;
    }
    let servers = sorted(&status.servers);
    let width = |header: &str, f: &dyn Fn(&McpServerEntry) -> String| {
        servers
            .iter()
            .map(|s| str_width(&f(s)))
            .chain([str_width(header)])
            .max()
            .unwrap_or(0)
    };
    let name_w = width("Name", &|s| s.name.clone());
    let state_w = width("Status", &|s| state_label(&s.state).to_owned());
    let transport_w = width("Transport", &|s| s.transport.clone());
    let pad = |s: &str, w: usize| format!("{s}{}", " ".repeat(w.saturating_sub(str_width(s))));
    rows.push(vec![(
        format!(
            "  {}  {}  {}  Tools",
            pad("Name", name_w),
            pad("Status", state_w),
            pad("Transport", transport_w)
        ),
        t.text_dim,
    )]);
    for s in &servers {
        let state_style = match s.state {
            McpServerState::Connected => t.success,
            McpServerState::Connecting | McpServerState::NeedsLogin(_) => t.warning,
            McpServerState::Failed(_) => t.error,
            McpServerState::Disabled => t.text_dim,
        };
        rows.push(vec![
            (format!("  {}  ", pad(&s.name, name_w)), t.text),
            (
                format!("{}  ", pad(state_label(&s.state), state_w)),
                state_style,
            ),
            (format!("{}  ", pad(&s.transport, transport_w)), t.text_dim),
            (tools_text(s), t.text),
        ]);
        if let Some(source) = &s.source {
            rows.push(vec![
                ("    from: ".to_owned(), t.text_dim),
                (source.clone(), t.text_dim),
            ]);
        }
        if let McpServerState::Failed(reason) = &s.state {
            let reason = reason.split_whitespace().collect::<Vec<_>>().join(" ");
            rows.push(vec![
                ("    error: ".to_owned(), t.text_dim),
                (reason, t.error),
            ]);
        }
        if let McpServerState::NeedsLogin(how) = &s.state {
            let how = how.split_whitespace().collect::<Vec<_>>().join(" ");
            rows.push(vec![
                ("    login: ".to_owned(), t.text_dim),
                (how, t.warning),
            ]);
        }
    }
    rows.push(vec![(format!("  {}", summary(&status.servers)), t.text)]);
    // Entries that did not load (a bad entry disables only itself) and project servers an
    // untrusted folder skipped: listed under the servers that did.
    if let Some(problem) = &status.problem {
        rows.push(vec![("  Not loaded:".to_owned(), t.warning)]);
        for line in problem.lines() {
            rows.push(vec![(format!("    {}", line.trim_start()), t.text_dim)]);
        }
    }
    rows
}

/// The `/mcp` block, wrapped to the width (continuation rows indented under the text).
pub fn mcp_lines(status: &McpStatus, ctx: &RenderCtx<'_>) -> Vec<Line<'static>> {
    let indent = [Span::raw("    ")];
    rows(status, ctx.theme)
        .into_iter()
        .flat_map(|row| {
            let spans: Vec<Span<'static>> = row
                .into_iter()
                .map(|(text, style)| Span::styled(text, style))
                .collect();
            wrap_line(&Line::from(spans), ctx.width, &indent)
        })
        .collect()
}

/// The `/mcp` block as plain text (for `/export-md`).
pub fn mcp_text(status: &McpStatus) -> String {
    rows(status, &Theme::default())
        .into_iter()
        .map(|row| {
            row.into_iter()
                .map(|(text, _)| text)
                .collect::<String>()
                .trim_end()
                .to_owned()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(command: &str) -> SkillEntry {
        SkillEntry {
            command: command.to_owned(),
            description: format!("about {command}"),
        }
    }

    #[test]
    fn skills_match_on_command_and_bare_name() {
        let skills = [
            skill("skill:review"),
            skill("skill:Release"),
            skill("sub.child"),
        ];
        let names = |p: &str| -> Vec<String> {
            skill_completions(p, &skills)
                .into_iter()
                .map(|(c, _)| c)
                .collect()
        };
        assert_eq!(names("re"), ["/skill:review", "/skill:Release"]);
        assert_eq!(names("skill:rel"), ["/skill:Release"]);
        assert_eq!(names("sub."), ["/sub.child"]);
        assert!(names("x").is_empty());
        assert_eq!(names("").len(), 3);
    }

    #[test]
    fn summary_counts_states_and_connected_tools() {
        let entry = |name: &str, state, tool_count| McpServerEntry {
            name: name.to_owned(),
            transport: "stdio".to_owned(),
            state,
            tool_count,
            source: None,
        };
        let servers = [
            entry("a", McpServerState::Connected, 2),
            entry("b", McpServerState::Failed("boom".into()), 0),
            entry("c", McpServerState::Connected, 1),
        ];
        assert_eq!(
            summary(&servers),
            "2 connected · 1 failed · 3 tools available"
        );
    }
}
