//! Plugin slash commands: each `.md` file under a manifest's `commands` becomes
//! `/<plugin>:<name>` (the name is the file's path below the folder without `.md`, folders
//! joined with `:`), with an optional `description` in YAML-style frontmatter. Invoking one sends
//! its body with `$ARGUMENTS` replaced by the arguments (or `ARGUMENTS: …` appended when the body
//! has no placeholder).

use std::path::{Path, PathBuf};

/// How deep a commands folder is walked.
const MAX_DEPTH: usize = 6;

/// One command of a plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginCommand {
    pub plugin: String,
    /// The name after `<plugin>:`.
    pub name: String,
    pub description: String,
    pub body: String,
    pub path: PathBuf,
}

/// A typed `/<plugin>:<command> args` that names a known command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandInvocation<'a> {
    pub command: &'a PluginCommand,
    pub args: String,
}

impl PluginCommand {
    /// `<plugin>:<name>`, what follows the slash.
    pub fn slash_name(&self) -> String {
        format!("{}:{}", self.plugin, self.name)
    }

    /// The prompt the command sends with `args`.
    pub fn expand(&self, args: &str) -> String {
        let args = args.trim();
        if self.body.contains("$ARGUMENTS") {
            self.body.replace("$ARGUMENTS", args)
        } else if args.is_empty() {
            self.body.clone()
        } else {
            format!("{}\n\nARGUMENTS: {args}", self.body)
        }
    }
}

/// `description` from a leading `---` block, and the body after it.
fn split(text: &str) -> (Option<String>, String) {
    let mut lines = text.lines();
    if lines.next().map(str::trim) != Some("---") {
        return (None, text.trim().to_owned());
    }
    let mut description = None;
    let mut consumed = 1;
    for line in lines.by_ref() {
        consumed += 1;
        if line.trim() == "---" {
            let body: Vec<&str> = text.lines().skip(consumed).collect();
            return (description, body.join("\n").trim().to_owned());
        }
        if let Some(value) = line.strip_prefix("description:") {
            let value = value.trim().trim_matches('"').trim_matches('\'');
            if !value.is_empty() {
                description = Some(value.to_owned());
            }
        }
    }
    // No closing fence: the whole file is the body.
    (None, text.trim().to_owned())
}

fn read_command(
    plugin: &str,
    name: String,
    path: &Path,
    warnings: &mut Vec<String>,
) -> Option<PluginCommand> {
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let (description, body) = split(&text);
            let description = description.unwrap_or_else(|| {
                body.lines()
                    .map(str::trim)
                    .find(|l| !l.is_empty())
                    .unwrap_or("No description provided.")
                    .chars()
                    .take(120)
                    .collect()
            });
            Some(PluginCommand {
                plugin: plugin.to_owned(),
                name,
                description,
                body,
                path: path.to_path_buf(),
            })
        }
        Err(e) => {
            warnings.push(format!(
                "{plugin}: command file {} was skipped: {e}",
                path.display()
            ));
            None
        }
    }
}

fn walk(
    plugin: &str,
    root: &Path,
    dir: &Path,
    depth: usize,
    out: &mut Vec<PluginCommand>,
    warnings: &mut Vec<String>,
) {
    if depth > MAX_DEPTH {
        return;
    }
    let Ok(read) = std::fs::read_dir(dir) else {
        warnings.push(format!(
            "{plugin}: commands folder {} cannot be read",
            dir.display()
        ));
        return;
    };
    let mut entries: Vec<PathBuf> = read.filter_map(Result::ok).map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        // Symlinks leading out of the plugin are not followed.
        let Ok(real) = std::fs::canonicalize(&path) else {
            continue;
        };
        if !real.starts_with(root) {
            warnings.push(format!(
                "{plugin}: {} leads outside the plugin and was skipped",
                path.display()
            ));
            continue;
        }
        if real.is_dir() {
            walk(plugin, root, &path, depth + 1, out, warnings);
        } else if path.extension().is_some_and(|e| e == "md") {
            let Ok(rel) = path.strip_prefix(root) else {
                continue;
            };
            let name = rel
                .with_extension("")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(":");
            if let Some(command) = read_command(plugin, name, &path, warnings) {
                out.push(command);
            }
        }
    }
}

/// The commands at the manifest's `commands` paths (folders walked, `.md` files taken as is).
/// `plugin_root` is canonical; nothing outside it is read.
pub fn discover_commands(
    plugin: &str,
    plugin_root: &Path,
    paths: &[PathBuf],
) -> (Vec<PluginCommand>, Vec<String>) {
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    for path in paths {
        if path.is_dir() {
            walk(plugin, path, path, 0, &mut out, &mut warnings);
        } else if path.starts_with(plugin_root) {
            let name = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            if let Some(command) = read_command(plugin, name, path, &mut warnings) {
                out.push(command);
            }
        }
    }
    (out, warnings)
}

/// Parse `input` as `/<plugin>:<command> args` against `commands`.
pub fn parse_invocation<'a>(
    input: &str,
    commands: &'a [PluginCommand],
) -> Option<CommandInvocation<'a>> {
    let line = input.trim_start().strip_prefix('/')?;
    let (head, args) = match line.find(char::is_whitespace) {
        Some(at) => (&line[..at], line[at..].trim()),
        None => (line, ""),
    };
    let command = commands.iter().find(|c| c.slash_name() == head)?;
    Some(CommandInvocation {
        command,
        args: args.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(body: &str) -> PluginCommand {
        PluginCommand {
            plugin: "p".into(),
            name: "greet".into(),
            description: "d".into(),
            body: body.into(),
            path: PathBuf::from("greet.md"),
        }
    }

    #[test]
    fn arguments_are_substituted_or_appended() {
        assert_eq!(command("Hello $ARGUMENTS!").expand(" Bob "), "Hello Bob!");
        assert_eq!(command("Say hi").expand("Bob"), "Say hi\n\nARGUMENTS: Bob");
        assert_eq!(command("Say hi").expand(""), "Say hi");
    }

    #[test]
    fn frontmatter_gives_the_description() {
        let (d, body) = split("---\ndescription: \"Greets\"\n---\nHello $ARGUMENTS\n");
        assert_eq!(d.as_deref(), Some("Greets"));
        assert_eq!(body, "Hello $ARGUMENTS");
        assert_eq!(split("plain").0, None);
    }

    #[test]
    fn invocations_match_plugin_and_command() {
        let commands = vec![command("x")];
        let call = parse_invocation("/p:greet  Bob Smith", &commands).unwrap();
        assert_eq!(call.args, "Bob Smith");
        assert!(parse_invocation("/p:other Bob", &commands).is_none());
        assert!(parse_invocation("p:greet", &commands).is_none());
    }
}
