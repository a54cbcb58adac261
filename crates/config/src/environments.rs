//! `[environments]`: the execution environments a session can be bound to (tools running on
//! an SSH host, in a container or behind any launcher command), from `config.toml` and from a
//! trusted project's `.kimi-code/environments.toml` (same schema; project entries replace user
//! entries with the same id).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Longest environment id.
pub const MAX_ID_CHARS: usize = 64;
/// Ids that name something else (`local` is this machine, `default` the default key).
pub const RESERVED_IDS: [&str; 2] = ["local", "default"];
/// Where a project declares its environments, relative to the project root.
pub const PROJECT_FILE: &str = ".kimi-code/environments.toml";

/// How kimi-rs reaches the executor of an environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Launcher {
    /// The system `ssh` (BatchMode, accept-new host keys); `ssh_args` go before the host.
    Ssh {
        host: String,
        ssh_args: Vec<String>,
        remote_bin: Option<String>,
    },
    /// `docker [--context c] exec -i <container> <remoteBin> exec-server`.
    Docker {
        container: String,
        context: Option<String>,
        remote_bin: Option<String>,
    },
    /// Any command whose stdio reaches an executor; `env` is the launcher's own.
    Command {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
    },
}

impl Launcher {
    /// `ssh`, `docker` or `command`.
    pub fn kind(&self) -> &'static str {
        match self {
            Launcher::Ssh { .. } => "ssh",
            Launcher::Docker { .. } => "docker",
            Launcher::Command { .. } => "command",
        }
    }
}

/// One declared environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvironmentDecl {
    pub id: String,
    pub launcher: Launcher,
    /// The working directory on the target for sessions bound here (absolute).
    pub default_cwd: Option<String>,
    /// The file that declared it.
    pub source: PathBuf,
}

/// Every declared environment and the default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Environments {
    pub default: Option<String>,
    pub entries: BTreeMap<String, EnvironmentDecl>,
}

impl Environments {
    /// `project` over `self`: project entries replace user entries of the same id, and a
    /// project default replaces the user default.
    pub fn merged_with(&self, project: &Environments) -> Environments {
        let mut out = self.clone();
        for (id, decl) in &project.entries {
            out.entries.insert(id.clone(), decl.clone());
        }
        if project.default.is_some() {
            out.default.clone_from(&project.default);
        }
        out
    }

    pub fn get(&self, id: &str) -> Option<&EnvironmentDecl> {
        self.entries.get(id)
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawEntry {
    #[serde(rename = "type")]
    kind: Option<String>,
    host: Option<String>,
    ssh_args: Option<Vec<String>>,
    remote_bin: Option<String>,
    container: Option<String>,
    context: Option<String>,
    command: Option<String>,
    args: Option<Vec<String>>,
    env: Option<BTreeMap<String, String>>,
    default_cwd: Option<String>,
}

/// A problem with one key: its path under `[environments]` and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub path: Vec<String>,
    pub message: String,
}

fn problem(path: &[&str], message: String) -> Problem {
    Problem {
        path: std::iter::once("environments")
            .chain(path.iter().copied())
            .map(str::to_owned)
            .collect(),
        message,
    }
}

/// Why an id cannot name an environment.
pub fn check_id(id: &str) -> Result<(), String> {
    if RESERVED_IDS.contains(&id) {
        return Err(format!(
            "`{id}` is reserved (`local` is this machine, `default` names the default environment); choose another id"
        ));
    }
    if id.is_empty() || id.chars().count() > MAX_ID_CHARS {
        return Err(format!(
            "environment ids have 1 to {MAX_ID_CHARS} characters; `{id}` has {}",
            id.chars().count()
        ));
    }
    if !id
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(format!(
            "environment id `{id}` may only use letters, digits, `-`, `_` and `.`"
        ));
    }
    Ok(())
}

/// Reads the `[environments]` table of `source`. Invalid entries are left out and reported.
pub fn parse_table(table: &toml::Table, source: &Path) -> (Environments, Vec<Problem>) {
    let mut out = Environments::default();
    let mut problems = Vec::new();
    for (key, value) in table {
        if key == "default" {
            match value.as_str() {
                Some(id) => out.default = Some(id.to_owned()),
                None => problems.push(problem(
                    &["default"],
                    "`default` must be the id of a declared environment (a string)".to_owned(),
                )),
            }
            continue;
        }
        if let Err(why) = check_id(key) {
            problems.push(problem(&[key], why));
            continue;
        }
        let raw: RawEntry = match value.clone().try_into() {
            Ok(raw) => raw,
            Err(e) => {
                problems.push(problem(
                    &[key],
                    format!(
                        "{}; an environment sets `type` (\"ssh\" or \"docker\") or `command`, plus `defaultCwd`",
                        e.message().trim_end()
                    ),
                ));
                continue;
            }
        };
        match entry(key, raw, source) {
            Ok(decl) => {
                out.entries.insert(key.clone(), decl);
            }
            Err(message) => problems.push(problem(&[key], message)),
        }
    }
    (out, problems)
}

fn entry(id: &str, raw: RawEntry, source: &Path) -> Result<EnvironmentDecl, String> {
    if let Some(cwd) = &raw.default_cwd
        && !cwd.starts_with('/')
    {
        return Err(format!(
            "defaultCwd `{cwd}` must be an absolute path on the target"
        ));
    }
    let launcher = match (raw.kind.as_deref(), raw.command) {
        (Some(_), Some(_)) => {
            return Err(
                "`type` and `command` are mutually exclusive: use `type` for ssh/docker or `command` for a launcher"
                    .to_owned(),
            );
        }
        (Some("ssh"), None) => Launcher::Ssh {
            host: raw
                .host
                .ok_or("an ssh environment needs `host` (a name ssh and ~/.ssh/config resolve)")?,
            ssh_args: raw.ssh_args.unwrap_or_default(),
            remote_bin: raw.remote_bin,
        },
        (Some("docker"), None) => Launcher::Docker {
            container: raw
                .container
                .ok_or("a docker environment needs `container`")?,
            context: raw.context,
            remote_bin: raw.remote_bin,
        },
        (Some(other), None) => {
            return Err(format!(
                "unknown type `{other}`; use \"ssh\" or \"docker\", or `command` for any other launcher"
            ));
        }
        (None, Some(command)) => Launcher::Command {
            command,
            args: raw.args.unwrap_or_default(),
            env: raw.env.unwrap_or_default(),
        },
        (None, None) => {
            return Err(
                "set `type` (\"ssh\" or \"docker\") or `command` (a launcher whose stdio reaches `kimi-rs exec-server`)"
                    .to_owned(),
            );
        }
    };
    Ok(EnvironmentDecl {
        id: id.to_owned(),
        launcher,
        default_cwd: raw.default_cwd,
        source: source.to_path_buf(),
    })
}

/// `<project>/.kimi-code/environments.toml` (`None` when absent). Only a trusted workspace's
/// declarations are read: an untrusted one could point the agent's commands anywhere.
pub fn load_project(
    project: &Path,
    trusted: bool,
) -> Result<Option<(Environments, Vec<Problem>)>, String> {
    let path = project.join(PROJECT_FILE);
    if !path.exists() {
        return Ok(None);
    }
    if !trusted {
        return Err(format!(
            "{} is ignored: the workspace is not trusted (run `kimi-rs trust` to trust it, or pass --trust-workspace for one run)",
            path.display()
        ));
    }
    let text = crate::read_regular_file(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let doc: toml::Table = toml::from_str(&text).map_err(|e| {
        format!(
            "{}: not valid TOML: {}",
            path.display(),
            e.message().trim_end()
        )
    })?;
    let mut problems = Vec::new();
    let mut table = toml::Table::new();
    for (key, value) in doc {
        match (key.as_str(), value) {
            ("environments", toml::Value::Table(t)) => table = t,
            (other, _) => problems.push(Problem {
                path: vec![other.to_owned()],
                message: format!(
                    "`{other}` is not read from {PROJECT_FILE}; it holds only [environments]"
                ),
            }),
        }
    }
    let (envs, more) = parse_table(&table, &path);
    problems.extend(more);
    Ok(Some((envs, problems)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> (Environments, Vec<Problem>) {
        let doc: toml::Table = toml::from_str(text).unwrap();
        let table = doc["environments"].as_table().unwrap().clone();
        parse_table(&table, Path::new("/c.toml"))
    }

    #[test]
    fn reads_the_three_launchers() {
        let (envs, problems) = parse(
            r#"
[environments]
default = "box"
[environments.box]
type = "ssh"
host = "dev"
sshArgs = ["-F", "/x"]
defaultCwd = "/home/u/p"
[environments.c]
type = "docker"
container = "app"
defaultCwd = "/w"
[environments.pod]
command = "kubectl"
args = ["exec", "-i", "p", "--", "kimi-rs", "exec-server"]
env = { KUBECONFIG = "/k" }
"#,
        );
        assert_eq!(problems, Vec::new());
        assert_eq!(envs.default.as_deref(), Some("box"));
        assert_eq!(
            envs.entries["box"].launcher,
            Launcher::Ssh {
                host: "dev".into(),
                ssh_args: vec!["-F".into(), "/x".into()],
                remote_bin: None
            }
        );
        assert_eq!(envs.entries["c"].launcher.kind(), "docker");
        assert_eq!(envs.entries["pod"].launcher.kind(), "command");
    }

    #[test]
    fn rejects_bad_entries_with_reasons() {
        let long = "x".repeat(65);
        let (envs, problems) = parse(&format!(
            r#"
[environments.local]
command = "a"
[environments.{long}]
command = "a"
[environments.both]
type = "ssh"
host = "h"
command = "c"
[environments.rel]
command = "c"
defaultCwd = "work"
[environments.typo]
command = "c"
defaultcwd = "/w"
"#
        ));
        assert!(envs.entries.is_empty(), "{envs:?}");
        let text: Vec<String> = problems.iter().map(|p| p.message.clone()).collect();
        assert_eq!(problems.len(), 5, "{text:#?}");
        assert!(text[0].contains("reserved") || text.iter().any(|t| t.contains("reserved")));
        assert!(text.iter().any(|t| t.contains("1 to 64 characters")));
        assert!(text.iter().any(|t| t.contains("mutually exclusive")));
        assert!(text.iter().any(|t| t.contains("absolute")));
        assert!(text.iter().any(|t| t.contains("defaultcwd")));
    }

    #[test]
    fn project_entries_override_and_need_trust() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".kimi-code")).unwrap();
        std::fs::write(
            dir.path().join(PROJECT_FILE),
            "[environments.box]\ncommand = \"runuser\"\ndefaultCwd = \"/p\"\n",
        )
        .unwrap();
        assert!(
            load_project(dir.path(), false)
                .unwrap_err()
                .contains("not trusted")
        );
        let (project, problems) = load_project(dir.path(), true).unwrap().unwrap();
        assert!(problems.is_empty());
        let (user, _) = parse(
            "[environments]\ndefault = \"box\"\n[environments.box]\ntype = \"ssh\"\nhost = \"h\"\n",
        );
        let merged = user.merged_with(&project);
        assert_eq!(merged.entries["box"].launcher.kind(), "command");
        assert_eq!(merged.default.as_deref(), Some("box"));
    }
}
