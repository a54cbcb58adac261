//! `/environment` in the TUI: list the declared execution environments with their connection
//! status, move the attached session's tools to one of them (or back to this machine) at a
//! turn boundary, reconnect the one in use, and declare a new one in `config.toml` (global) or
//! the trusted project's `.kimi-code/environments.toml`. A move connects first, so a target
//! that cannot be reached leaves the session where it is; the session is then reopened with
//! an `environment.bind` record and a reminder for the model.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use kimi_config::environments::{Environments, Launcher, PROJECT_FILE, check_id};
use kimi_core::session::EnvironmentSwitch;
use kimi_tools::EnvironmentInfo;
use toml_edit::{Array, DocumentMut, Item, Table, value};

const USAGE: &str = "/environment (list) · /environment <id> | local (move this session's tools) · /environment reconnect · \
/environment add [--project] <id> ssh <host> <defaultCwd> | docker <container> <defaultCwd> | command <defaultCwd> <program> [args…]";

/// What `/environment` did.
pub enum Outcome {
    Notice(String),
    Error(String),
    /// Reopen the session so the switch taken by the factory applies; the notice says where.
    Reopen(String),
}

/// The TUI launch's environments: its declarations (following the watcher) and the switch
/// the next reopen applies.
pub struct TuiEnvironments {
    pub home: PathBuf,
    pub cwd: PathBuf,
    pub trusted: bool,
    pub initial: Environments,
    switch: Mutex<Option<EnvironmentSwitch>>,
}

/// What the footer shows for where the tools run: nothing here, `ssh:<id>`, or the id.
pub fn footer_label(info: &EnvironmentInfo) -> Option<String> {
    match info.kind.as_str() {
        "local" => None,
        "ssh" => Some(format!("ssh:{}", info.id)),
        _ => Some(info.id.clone()),
    }
}

fn target_of(launcher: &Launcher) -> String {
    match launcher {
        Launcher::Ssh { host, .. } => format!("ssh {host}"),
        Launcher::Docker { container, .. } => format!("docker {container}"),
        Launcher::Command { command, args, .. } => format!("{command} {}", args.join(" "))
            .trim_end()
            .to_owned(),
    }
}

impl TuiEnvironments {
    pub fn new(home: PathBuf, cwd: PathBuf, trusted: bool, initial: Environments) -> Self {
        TuiEnvironments {
            home,
            cwd,
            trusted,
            initial,
            switch: Mutex::new(None),
        }
    }

    /// The declarations as they are now.
    pub fn envs(&self) -> Environments {
        crate::environments::current(&self.cwd, &self.initial)
    }

    /// The move a reopen applies (once).
    pub fn take_switch(&self) -> Option<EnvironmentSwitch> {
        self.switch
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    fn set_switch(&self, switch: EnvironmentSwitch) {
        *self.switch.lock().unwrap_or_else(PoisonError::into_inner) = Some(switch);
    }

    /// Runs `/environment <args>` for a session whose tools run on `here`. Blocks while it
    /// connects (bounded by the connect timeout).
    pub fn run(&self, args: &str, here: &EnvironmentInfo) -> Outcome {
        let words: Vec<&str> = args.split_whitespace().collect();
        let error = |text: String| Outcome::Error(format!("/environment: {text}"));
        match words.as_slice() {
            [] | ["list"] => Outcome::Notice(self.list(here)),
            ["local"] if here.kind == "local" => {
                Outcome::Notice("This session's tools already run on this machine.".to_owned())
            }
            ["local"] => {
                self.set_switch(EnvironmentSwitch::Local);
                Outcome::Reopen(format!(
                    "Moved this session's tools from `{}` back to this machine ({}).",
                    here.id,
                    self.cwd.display()
                ))
            }
            ["reconnect"] => match self.reconnect(here) {
                Ok(text) => Outcome::Notice(text),
                Err(text) => error(text),
            },
            ["add", rest @ ..] => match self.add(rest) {
                Ok(text) => Outcome::Notice(text),
                Err(text) => error(text),
            },
            [id] if *id == here.id => {
                Outcome::Notice(format!("This session's tools already run on `{id}`."))
            }
            [id] => {
                let envs = self.envs();
                if envs.get(id).is_none() {
                    return error(format!(
                        "`{id}` is not declared ({}); usage: {USAGE}",
                        declared_ids(&envs)
                    ));
                }
                match crate::environments::bind_declared(&envs, id) {
                    Ok(binding) => {
                        let info = binding.environment.info().clone();
                        let cwd = binding.cwd.display().to_string();
                        self.set_switch(EnvironmentSwitch::To(binding));
                        Outcome::Reopen(format!(
                            "Moved this session's tools to `{id}` ({} {} {}), working directory {cwd}.",
                            info.kind, info.os, info.arch
                        ))
                    }
                    Err(e) => error(format!("{e:#}; the session stays where it is")),
                }
            }
            _ => error(format!("usage: {USAGE}")),
        }
    }

    fn list(&self, here: &EnvironmentInfo) -> String {
        let envs = self.envs();
        let mark = |id: &str| if id == here.id { "*" } else { " " };
        let mut lines = vec![
            format!(
                "Environments (* = this session's tools; the default for new sessions: {}):",
                envs.default.as_deref().unwrap_or("local")
            ),
            format!(
                "{} local  this machine",
                if here.kind == "local" { "*" } else { " " }
            ),
        ];
        for (id, decl) in &envs.entries {
            let status = kimi_exec::pool::status(id).unwrap_or_else(|| "not connected".to_owned());
            let cwd = decl
                .default_cwd
                .as_deref()
                .map_or_else(String::new, |c| format!(" · {c}"));
            lines.push(format!(
                "{} {id}  {}{cwd} · {status} · from {}",
                mark(id),
                target_of(&decl.launcher),
                decl.source.display()
            ));
        }
        if envs.entries.is_empty() {
            lines.push(
                "  (none declared: /environment add, or [environments] in config.toml)".to_owned(),
            );
        }
        lines.push(format!("Usage: {USAGE}"));
        lines.join("\n")
    }

    fn reconnect(&self, here: &EnvironmentInfo) -> Result<String, String> {
        if here.kind == "local" {
            return Err(
                "this session's tools run on this machine; there is nothing to reconnect"
                    .to_owned(),
            );
        }
        let envs = self.envs();
        let decl = envs.get(&here.id).ok_or_else(|| {
            format!(
                "`{}` is no longer declared; declare it again or move the session with /environment <id>",
                here.id
            )
        })?;
        let exe = kimi_exec::launch::current_exe();
        kimi_exec::pool::reconnect(decl, exe.as_deref()).map_err(|e| e.to_string())?;
        Ok(format!(
            "Reconnected `{}`: the next tool calls use the new connection (calls still running on the old one finish there).",
            here.id
        ))
    }

    fn add(&self, words: &[&str]) -> Result<String, String> {
        let (project, words) = match words.split_first() {
            Some((&"--project", rest)) => (true, rest),
            _ => (false, words),
        };
        let (id, entry) = parse_entry(words)?;
        let file = if project {
            if !self.trusted {
                return Err(format!(
                    "{} is read only in a trusted workspace; run `kimi-rs trust` first, or add it globally (without --project)",
                    self.cwd.join(PROJECT_FILE).display()
                ));
            }
            let file = self.cwd.join(PROJECT_FILE);
            if let Some(dir) = file.parent() {
                std::fs::create_dir_all(dir)
                    .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            }
            file
        } else {
            self.home.join("config.toml")
        };
        kimi_auth::managed::edit_config(&file, |doc| {
            insert_entry(doc, &id, entry)
                .map_err(|e| kimi_auth::AuthError::Config(format!("{}: {e}", file.display())))
        })
        .map_err(|e| e.to_string())?;
        let (envs, warnings) = crate::environments::reload(&self.home, &self.cwd, self.trusted)?;
        kimi_exec::pool::redeclare(&envs);
        if envs.get(&id).is_none() {
            return Err(format!(
                "`{id}` was written to {} but is not usable: {}",
                file.display(),
                warnings.join("; ")
            ));
        }
        Ok(format!(
            "Declared `{id}` in {}. Move this session there with /environment {id}.",
            file.display()
        ))
    }
}

fn declared_ids(envs: &Environments) -> String {
    if envs.entries.is_empty() {
        "none is declared".to_owned()
    } else {
        format!(
            "declared: {}",
            envs.entries.keys().cloned().collect::<Vec<_>>().join(", ")
        )
    }
}

/// `<id> ssh <host> <cwd>`, `<id> docker <container> <cwd>`, `<id> command <cwd> <program>
/// [args…]` as a declaration table.
fn parse_entry(words: &[&str]) -> Result<(String, Table), String> {
    let mut table = Table::new();
    let (id, cwd) = match words {
        [id, kind @ ("ssh" | "docker"), target, cwd] => {
            table.insert("type", value(*kind));
            let key = if *kind == "ssh" { "host" } else { "container" };
            table.insert(key, value(*target));
            (id, cwd)
        }
        [id, "command", cwd, program, args @ ..] => {
            table.insert("command", value(*program));
            let mut list = Array::new();
            for arg in args {
                list.push(*arg);
            }
            table.insert("args", value(list));
            (id, cwd)
        }
        _ => return Err(format!("usage: {USAGE}")),
    };
    check_id(id)?;
    if !Path::new(cwd).is_absolute() {
        return Err(format!(
            "defaultCwd must be an absolute path on the target, got `{cwd}`"
        ));
    }
    table.insert("defaultCwd", value(*cwd));
    Ok(((*id).to_owned(), table))
}

fn insert_entry(doc: &mut DocumentMut, id: &str, entry: Table) -> Result<(), String> {
    let root = doc.as_table_mut();
    let environments = root.entry("environments").or_insert_with(|| {
        let mut t = Table::new();
        t.set_implicit(true);
        Item::Table(t)
    });
    let environments = environments
        .as_table_mut()
        .ok_or_else(|| "`environments` is not a table".to_owned())?;
    if environments.contains_key(id) {
        return Err(format!(
            "`{id}` is already declared there; edit or remove it in the file"
        ));
    }
    environments.insert(id, Item::Table(entry));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_written_in_the_declaration_schema() {
        let mut doc: DocumentMut = "model = \"k2\"\n".parse().unwrap();
        let (id, entry) = parse_entry(&["box", "ssh", "dev-box", "/home/me/proj"]).unwrap();
        insert_entry(&mut doc, &id, entry).unwrap();
        let (id, entry) = parse_entry(&[
            "pod-0",
            "command",
            "/work",
            "kubectl",
            "exec",
            "-i",
            "pod-0",
            "--",
            "kimi-rs",
            "exec-server",
        ])
        .unwrap();
        insert_entry(&mut doc, &id, entry).unwrap();
        assert_eq!(
            doc.to_string(),
            "model = \"k2\"\n\n[environments.box]\ntype = \"ssh\"\nhost = \"dev-box\"\ndefaultCwd = \"/home/me/proj\"\n\n\
             [environments.pod-0]\ncommand = \"kubectl\"\nargs = [\"exec\", \"-i\", \"pod-0\", \"--\", \"kimi-rs\", \"exec-server\"]\ndefaultCwd = \"/work\"\n"
        );
        let (id, entry) = parse_entry(&["box", "docker", "app", "/w"]).unwrap();
        assert!(
            insert_entry(&mut doc, &id, entry)
                .unwrap_err()
                .contains("already declared")
        );
        assert!(
            parse_entry(&["local", "ssh", "h", "/w"])
                .unwrap_err()
                .contains("reserved")
        );
        assert!(
            parse_entry(&["x", "ssh", "h", "rel"])
                .unwrap_err()
                .contains("absolute")
        );
        assert!(
            parse_entry(&["x", "telnet", "h", "/w"])
                .unwrap_err()
                .contains("usage")
        );
    }
}
