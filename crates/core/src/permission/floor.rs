//! The protected floor: what no permission mode approves on its own. It runs right after the
//! user's deny rules and before any mode's approval, for every front end and subagent, as a pure
//! function over the call's facts and the one shell parse:
//!
//! - writes to kimi-rs's own control files (everything under `$KIMI_RS_HOME` except the
//!   session's plan files) and the project's `.kimi-code/` configuration and `.mcp.json`;
//! - writes into git's control directories (`config`, `hooks/`, `info/attributes` run code);
//! - writes outside the workspace, the `--add-dir` directories and the temp dir;
//! - dangerous commands: recursive deletes of `/`, `~`, a workspace root or a system directory,
//!   `sudo`/`doas`/`su`, downloads piped into an interpreter, raw disk writes and disk
//!   formatting, fork bombs, recursive `chmod`/`chown` of such directories, killing PID 1 or
//!   every process, shutting the machine down — and commands that cannot be parsed.
//!
//! Auto mode (and so print mode) refuses these with a reason the model can act on; manual and
//! yolo ask. An allow rule that names the path or the command (not a bare `Bash` or `*`), or an
//! "approve for this session" of the exact call, lets the chain continue. With the OS sandbox
//! on, a file tool's write outside the sandbox's writable roots is refused in every mode and no
//! rule opens it, so no tool can edit the sandbox's own configuration.

use std::path::{Component, Path, PathBuf};

use kimi_protocol::ops::PermissionMode;

use super::call::{CallFacts, Subject};
use super::danger::{is_privileged, is_raw_disk};
use super::paths::{Workspace, is_git_control_path};
use super::policy::{Decision, PolicyInput, PolicyName, Verdict};
use super::rule_set::RuleDecision;
use super::shell::{ShellParse, SimpleCommand, is_interpreter};

/// What the floor protects besides the workspace, resolved once per session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Protected {
    /// kimi-rs's data home (canonical).
    pub kimi_home: Option<PathBuf>,
    /// The session's directory: its agents' plan files (`agents/<id>/plans/`) may be written.
    pub session_dir: Option<PathBuf>,
    /// Scratch directories writes may go to besides the workspace (the system temp dir).
    pub temp_dirs: Vec<PathBuf>,
    /// The OS sandbox is on: file tools stay inside its writable roots in every mode.
    pub sandbox: bool,
    /// An isolated subagent's git worktree: it lies inside the session directory (so inside
    /// kimi-rs's home), yet it is that agent's workspace and writable like any other.
    pub worktree: Option<PathBuf>,
}

/// Whether `path` is in kimi-rs's home outside an isolated agent's worktree.
fn in_kimi_home(path: &Path, ws: &Workspace) -> bool {
    ws.protected
        .kimi_home
        .as_ref()
        .is_some_and(|home| path.starts_with(home))
        && !ws
            .protected
            .worktree
            .as_ref()
            .is_some_and(|tree| path.starts_with(tree))
}

/// One reason the floor stops a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    ControlFile(PathBuf),
    GitInternals(PathBuf),
    Outside(PathBuf),
    /// A write whose directory the command line changes at run time (`cd "$X"; … > f`).
    UnknownTarget(String),
    Dangerous {
        what: String,
        command: String,
    },
    Unparsable(String),
}

impl Finding {
    fn describe(&self, workspace: &Workspace) -> String {
        match self {
            Finding::ControlFile(path) => format!(
                "{} is one of kimi-rs's own configuration or session files (or the project's \
                 agent configuration); changing it could change what kimi-rs runs next time",
                path.display()
            ),
            Finding::GitInternals(path) => format!(
                "{} is inside git's control directory, where hooks and config run code on the \
                 next git command",
                path.display()
            ),
            Finding::Outside(path) => format!(
                "{} is outside the workspace ({})",
                path.display(),
                workspace
                    .roots
                    .iter()
                    .map(|r| r.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Finding::UnknownTarget(target) => format!(
                "the command writes `{target}` after changing to a directory only known at run \
                 time"
            ),
            Finding::Dangerous { what, command } => format!("`{command}` {what}"),
            Finding::Unparsable(why) => format!(
                "kimi-rs could not parse this command ({why}), so it cannot check what it runs"
            ),
        }
    }

    fn is_command(&self) -> bool {
        matches!(self, Finding::Dangerous { .. } | Finding::Unparsable(_))
    }
}

/// The floor policy of the chain: `None` lets the chain go on.
pub fn protected_floor(input: &PolicyInput<'_>) -> Option<Decision> {
    let call = input.call;
    let ws = input.workspace;
    if ws.protected.sandbox
        && let Some(path) = sandbox_escape(call, ws)
    {
        return Some(decision(
            Verdict::Deny,
            format!(
                "the OS sandbox is on and {} is outside its writable roots (the workspace and \
                 the temp dir; `.git` and kimi-rs's home are read-only). No tool writes there \
                 while the sandbox is on; write inside the workspace instead.",
                path.display()
            ),
        ));
    }
    let finding = findings(call, ws).into_iter().next()?;
    if explicitly_allowed(input, &finding)
        || input
            .session
            .find(call, input.ctx(), &input.workspace.environment)
            .is_some()
    {
        return None;
    }
    let what = finding.describe(ws);
    match input.mode {
        PermissionMode::Auto => {
            let how = if finding.is_command() {
                "If it is really needed, ask the user to run it themselves or to add an allow \
                 rule naming this exact command to config.toml ([[permission.rules]] decision = \
                 \"allow\", pattern = \"Bash(<command>)\")."
            } else {
                "Work inside the workspace instead; if the user wants this path changed, they \
                 can rerun with --add-dir <dir> or add an allow rule naming the path \
                 ([[permission.rules]] decision = \"allow\", pattern = \"Write(<path>)\")."
            };
            Some(decision(
                Verdict::Deny,
                format!(
                    "refused by kimi-rs's safety floor: {what}. Auto and print mode never run \
                     this without a person's approval. {how}"
                ),
            ))
        }
        PermissionMode::Manual | PermissionMode::Yolo => Some(decision(Verdict::Ask, what)),
    }
}

fn decision(verdict: Verdict, reason: String) -> Decision {
    Decision {
        verdict,
        policy: PolicyName::ProtectedFloor,
        rule: None,
        reason: Some(reason),
    }
}

/// An allow rule opens the floor only when it names this path or command: a bare `Bash`, `*`
/// or `Write(**)` does not count.
fn explicitly_allowed(input: &PolicyInput<'_>, finding: &Finding) -> bool {
    if matches!(finding, Finding::Unparsable(_)) {
        return false;
    }
    input
        .rules
        .first_explicit_match(RuleDecision::Allow, input.call, input.ctx())
        .is_some()
}

/// Everything the floor objects to in this call, most serious first.
pub fn findings(call: &CallFacts, ws: &Workspace) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(parsed) = call.shell() {
        command_findings(parsed, ws, &mut out);
        for target in shell_write_targets(parsed, ws) {
            match target {
                Target::Known(path) => path_findings(&path, ws, &mut out),
                Target::Unknown(text) => out.push(Finding::UnknownTarget(text)),
            }
        }
    }
    for access in call.write_targets() {
        path_findings(&access.path, ws, &mut out);
    }
    if let Subject::Path(path) = &call.subject
        && call.write_targets().next().is_some()
        && !call.accesses.iter().any(|a| &a.path == path)
    {
        path_findings(path, ws, &mut out);
    }
    out
}

fn path_findings(path: &Path, ws: &Workspace, out: &mut Vec<Finding>) {
    if is_plan_file(path, ws) {
        return;
    }
    if is_control_file(path, ws) {
        out.push(Finding::ControlFile(path.to_owned()));
    } else if has_git_component(path) || is_git_control_path(path, ws) {
        out.push(Finding::GitInternals(path.to_owned()));
    } else if !is_writable_place(path, ws) {
        out.push(Finding::Outside(path.to_owned()));
    }
}

fn is_writable_place(path: &Path, ws: &Workspace) -> bool {
    ws.contains(path) || ws.protected.temp_dirs.iter().any(|t| path.starts_with(t))
}

/// With the sandbox on: the first write target a file tool may not touch.
fn sandbox_escape(call: &CallFacts, ws: &Workspace) -> Option<PathBuf> {
    if call.shell().is_some() {
        // Bash runs inside the OS sandbox itself.
        return None;
    }
    call.write_targets()
        .map(|a| a.path.as_path())
        .find(|path| {
            !is_plan_file(path, ws)
                && (!is_writable_place(path, ws)
                    || has_git_component(path)
                    || is_git_control_path(path, ws)
                    || in_kimi_home(path, ws))
        })
        .map(Path::to_owned)
}

fn has_git_component(path: &Path) -> bool {
    path.components().any(|c| match c {
        Component::Normal(n) => n.to_string_lossy().eq_ignore_ascii_case(".git"),
        _ => false,
    })
}

fn is_plan_file(path: &Path, ws: &Workspace) -> bool {
    let Some(session) = &ws.protected.session_dir else {
        return false;
    };
    let Ok(rel) = path.strip_prefix(session.join("agents")) else {
        return false;
    };
    let parts: Vec<Component<'_>> = rel.components().collect();
    parts.len() >= 3
        && matches!(parts[1], Component::Normal(n) if n == "plans")
        && parts.iter().all(|c| matches!(c, Component::Normal(_)))
}

/// kimi-rs's home, and each workspace root's (and the git work tree's) agent configuration.
fn is_control_file(path: &Path, ws: &Workspace) -> bool {
    if in_kimi_home(path, ws) {
        return true;
    }
    let project_roots = ws.roots.iter().chain(ws.git.as_ref().map(|g| &g.work_tree));
    project_roots.into_iter().any(|root| {
        let Ok(rel) = path.strip_prefix(root) else {
            return false;
        };
        let mut parts = rel.components().filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_string_lossy().to_ascii_lowercase()),
            _ => None,
        });
        match parts.next().as_deref() {
            Some(".mcp.json") => true,
            // Skills, agent files and AGENTS.md are instructions the model reads; everything
            // else in `.kimi-code/` configures what kimi-rs starts or trusts.
            Some(".kimi-code") => !matches!(
                parts.next().as_deref(),
                Some("skills" | "agents" | "agents.md")
            ),
            _ => false,
        }
    })
}

/// System directories whose recursive deletion or permission change breaks the machine.
const SYSTEM_DIRS: [&str; 20] = [
    "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/media", "/mnt", "/opt",
    "/proc", "/root", "/run", "/sbin", "/srv", "/sys", "/usr", "/var", "/snap",
];

/// What kind of tree an operand names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tree {
    /// `/`, the home directory or a system directory (or everything in one).
    System,
    /// A workspace root or a parent of one.
    Workspace,
}

/// Whether an operand names `/`, the home directory, a workspace root (or a parent of one), a
/// system directory — or everything in one of those (`/*`, `~/*`, `*` in the workspace root).
fn protected_tree(operand: &str, dynamic: bool, cwd: &Path, ws: &Workspace) -> Option<Tree> {
    if dynamic {
        // `"$DIR"/*` or `$X` alone may expand to anything, `/` included.
        let literal = operand.trim_start_matches(|c| c != '/' && c != '*');
        let unknown_root = operand.starts_with('$') && matches!(literal, "" | "/" | "/*" | "*");
        return unknown_root.then_some(Tree::System);
    }
    let dir = match operand.rsplit_once('/') {
        Some((dir, last)) if last.contains(['*', '?', '[']) => {
            if dir.is_empty() {
                "/"
            } else {
                dir
            }
        }
        None if operand.contains(['*', '?', '[']) => ".",
        _ => operand,
    };
    let resolved = resolve_from(dir, cwd, ws);
    let system = resolved.as_os_str().is_empty()
        || resolved == Path::new("/")
        || ws.home.as_deref() == Some(resolved.as_path())
        || SYSTEM_DIRS
            .iter()
            .any(|sys| resolved == Path::new(sys) || Path::new(sys).starts_with(&resolved));
    if system {
        Some(Tree::System)
    } else if ws.roots.iter().any(|root| root.starts_with(&resolved)) {
        Some(Tree::Workspace)
    } else {
        None
    }
}

fn is_protected_tree(operand: &str, dynamic: bool, cwd: &Path, ws: &Workspace) -> bool {
    protected_tree(operand, dynamic, cwd, ws).is_some()
}

/// `find` tests that narrow a `-delete` to some files; without one, everything found goes.
fn find_narrows(args: &[String]) -> bool {
    args.iter().any(|a| {
        matches!(
            a.as_str(),
            "-name"
                | "-iname"
                | "-path"
                | "-ipath"
                | "-wholename"
                | "-iwholename"
                | "-regex"
                | "-iregex"
                | "-newer"
                | "-mtime"
                | "-mmin"
                | "-atime"
                | "-amin"
                | "-ctime"
                | "-cmin"
                | "-size"
                | "-empty"
                | "-inum"
                | "-samefile"
        )
    })
}

/// Resolves a word the way the shell would from `cwd` (with `~` and symlinks).
fn resolve_from(word: &str, cwd: &Path, ws: &Workspace) -> PathBuf {
    let with_home = super::paths::expand_tilde(word, ws.home.as_deref());
    let absolute = if with_home.is_absolute() {
        with_home
    } else {
        cwd.join(with_home)
    };
    ws.resolve(&absolute.to_string_lossy())
}

fn command_findings(parsed: &ShellParse, ws: &Workspace, out: &mut Vec<Finding>) {
    if let Some(why) = &parsed.error {
        out.push(Finding::Unparsable(why.clone()));
    }
    if let Some(name) = parsed.fork_bombs.first() {
        out.push(Finding::Dangerous {
            what: format!("defines `{name}` as a fork bomb (it starts copies of itself until the machine stops)"),
            command: format!("{name}()"),
        });
    }
    let mut cwd = Some(ws.canonical_cwd().to_path_buf());
    for command in &parsed.commands {
        if let Some(what) = cwd.as_deref().and_then(|cwd| dangerous(command, cwd, ws)) {
            out.push(Finding::Dangerous {
                what,
                command: command.display(),
            });
        }
        if let Some(target) = cwd
            .as_deref()
            .and_then(|cwd| link_into_protected(command, cwd, ws))
        {
            out.push(Finding::ControlFile(target));
        }
        cwd = track_cd(command, cwd, ws);
    }
}

/// `ln -s TARGET LINK` whose target is kimi-rs's home, a directory holding it, or a git control
/// directory: a later write through the link (in this line or the next call) would land there
/// while its spelling stays in the workspace.
fn link_into_protected(command: &SimpleCommand, cwd: &Path, ws: &Workspace) -> Option<PathBuf> {
    if command.program() != Some("ln") {
        return None;
    }
    let args = command.args();
    let symbolic = args.iter().any(|a| {
        a == "--symbolic" || (a.starts_with('-') && !a.starts_with("--") && a.contains('s'))
    });
    let operands: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    if !symbolic || operands.len() < 2 {
        return None;
    }
    operands[..operands.len() - 1].iter().find_map(|target| {
        let resolved = resolve_from(target, cwd, ws);
        let into_home = ws
            .protected
            .kimi_home
            .as_ref()
            .is_some_and(|home| home.starts_with(&resolved) || resolved.starts_with(home));
        (into_home || has_git_component(&resolved) || is_git_control_path(&resolved, ws))
            .then_some(resolved)
    })
}

/// Follows a literal `cd DIR` for the commands after it; a `cd` to a run-time value makes the
/// directory unknown.
fn track_cd(command: &SimpleCommand, cwd: Option<PathBuf>, ws: &Workspace) -> Option<PathBuf> {
    if command.program() != Some("cd") {
        return cwd;
    }
    let cwd = cwd?;
    let operand = command
        .args()
        .iter()
        .zip(&command.dynamic[1..])
        .find(|(a, _)| !a.starts_with('-'));
    match operand {
        None => ws.home.clone(),
        Some((_, true)) => None,
        Some((dir, false)) => Some(resolve_from(dir, &cwd, ws)),
    }
}

/// What makes one simple command dangerous, if anything.
fn dangerous(command: &SimpleCommand, cwd: &Path, ws: &Workspace) -> Option<String> {
    if let Some(wrapper) = command.wrappers.iter().find(|w| is_privileged(w)) {
        return Some(format!("runs a command as another user with `{wrapper}`"));
    }
    if let Some(redirect) = command
        .redirects
        .iter()
        .find(|r| r.kind.writes() && is_raw_disk(&r.target))
    {
        return Some(format!(
            "writes straight onto the disk device {}",
            redirect.target
        ));
    }
    let program = command.program()?;
    let args = command.args();
    let dynamic = command.dynamic.get(1..).unwrap_or(&[]);
    let flags: Vec<&str> = args
        .iter()
        .take_while(|a| a.as_str() != "--")
        .filter(|a| a.starts_with('-'))
        .map(String::as_str)
        .collect();
    let operands = || {
        let mut after_dashdash = false;
        args.iter().zip(dynamic).filter(move |(a, _)| {
            if a.as_str() == "--" && !after_dashdash {
                after_dashdash = true;
                return false;
            }
            after_dashdash || !a.starts_with('-')
        })
    };
    let recursive = |short: &[char]| {
        flags.iter().any(|f| {
            *f == "--recursive"
                || (!f.starts_with("--") && f[1..].chars().any(|c| short.contains(&c)))
        })
    };
    if is_privileged(program) {
        return Some(format!("runs a command as another user with `{program}`"));
    }
    if command.fed_by_download && is_interpreter(program) {
        return Some("runs a script downloaded from the network".to_owned());
    }
    match program {
        "rm" if flags.contains(&"--no-preserve-root") => {
            Some("deletes / recursively (--no-preserve-root)".to_owned())
        }
        "rm" if recursive(&['r', 'R']) => operands()
            .find(|(a, d)| is_protected_tree(a, **d, cwd, ws))
            .map(|(a, _)| format!("deletes {a} recursively")),
        "find" if args.iter().any(|a| a == "-delete") => {
            let starts: Vec<(&String, &bool)> = args
                .iter()
                .zip(dynamic)
                .take_while(|(a, _)| !a.starts_with('-') && !matches!(a.as_str(), "(" | "!"))
                .collect();
            let dot = String::from(".");
            let starts = if starts.is_empty() {
                vec![(&dot, &false)]
            } else {
                starts
            };
            let narrowed = find_narrows(args);
            starts
                .iter()
                .find(|(a, d)| match protected_tree(a, **d, cwd, ws) {
                    Some(Tree::System) => true,
                    Some(Tree::Workspace) => !narrowed,
                    None => false,
                })
                .map(|(dir, _)| format!("deletes everything under {dir}"))
        }
        "chmod" | "chown" | "chgrp" => {
            let whole_root = operands()
                .skip(1)
                .any(|(a, d)| !d && resolve_from(a, cwd, ws) == Path::new("/"));
            let tree = recursive(&['R'])
                && operands()
                    .skip(1)
                    .any(|(a, d)| is_protected_tree(a, *d, cwd, ws));
            (whole_root || tree).then(|| {
                format!("changes ownership or permissions of a whole system tree with {program}")
            })
        }
        "dd" => args
            .iter()
            .find_map(|a| a.strip_prefix("of="))
            .filter(|target| is_raw_disk(target))
            .map(|target| format!("writes straight onto the disk device {target}")),
        "mkfs" | "mke2fs" | "mkswap" | "wipefs" | "fdisk" | "sfdisk" | "parted" | "blkdiscard" => {
            Some(format!("formats or repartitions a disk with {program}"))
        }
        _ if program.starts_with("mkfs.") => Some(format!("formats a disk with {program}")),
        "kill" => {
            let pids: Vec<&String> = kill_targets(args);
            pids.iter()
                .find(|p| matches!(p.as_str(), "1" | "-1"))
                .map(|p| {
                    if p.as_str() == "1" {
                        "kills PID 1 (init), which stops the machine".to_owned()
                    } else {
                        "kills every process the user can signal".to_owned()
                    }
                })
        }
        "killall5" => Some("kills every process".to_owned()),
        "shutdown" | "reboot" | "halt" | "poweroff" => Some("shuts the machine down".to_owned()),
        "init" | "telinit" if args.iter().any(|a| a == "0" || a == "6") => {
            Some("shuts the machine down".to_owned())
        }
        "systemctl"
            if args
                .iter()
                .any(|a| matches!(a.as_str(), "poweroff" | "reboot" | "halt" | "kexec")) =>
        {
            Some("shuts the machine down".to_owned())
        }
        _ => None,
    }
}

/// The process ids of a `kill` command line: everything after the signal option.
fn kill_targets(args: &[String]) -> Vec<&String> {
    let mut out = Vec::new();
    let mut i = 0;
    let mut signal_seen = false;
    while i < args.len() {
        let a = &args[i];
        if a == "--" {
            out.extend(&args[i + 1..]);
            break;
        }
        if !signal_seen && (a == "-s" || a == "-n") {
            signal_seen = true;
            i += 2;
            continue;
        }
        if !signal_seen && a.starts_with('-') && a.len() > 1 && a != "-1" {
            signal_seen = true;
            i += 1;
            continue;
        }
        if a == "-l" || a == "-L" {
            return Vec::new();
        }
        out.push(a);
        i += 1;
    }
    out
}

/// Where a parsed command line writes.
enum Target {
    Known(PathBuf),
    Unknown(String),
}

/// Devices that are not files: writing them changes nothing on disk.
fn is_harmless_device(target: &str) -> bool {
    matches!(
        target,
        "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty" | "/dev/zero"
    ) || target.starts_with("/dev/fd/")
        || target.starts_with("/dev/pts/")
}

/// The files the command line visibly writes: redirections, `tee`, `cp`/`mv`/`install`/`ln`
/// destinations, `dd of=`, and the operands of `touch`, `truncate`, `mkdir`, `rm`, `chmod`,
/// `sed -i` and friends. Scripts a program runs internally are the OS sandbox's job.
fn shell_write_targets(parsed: &ShellParse, ws: &Workspace) -> Vec<Target> {
    let mut out = Vec::new();
    let mut cwd = Some(ws.canonical_cwd().to_path_buf());
    for command in &parsed.commands {
        let mut words: Vec<(&str, bool)> = command
            .redirects
            .iter()
            .filter(|r| r.kind.writes() && !is_harmless_device(&r.target))
            .map(|r| (r.target.as_str(), r.dynamic))
            .collect();
        words.extend(program_write_operands(command));
        for (word, dynamic) in words {
            if dynamic || is_harmless_device(word) {
                continue;
            }
            let absolute = word.starts_with('/') || word.starts_with('~');
            match (&cwd, absolute) {
                (_, true) => out.push(Target::Known(resolve_from(word, Path::new("/"), ws))),
                (Some(dir), false) => out.push(Target::Known(resolve_from(word, dir, ws))),
                (None, false) => out.push(Target::Unknown(word.to_owned())),
            }
        }
        cwd = track_cd(command, cwd, ws);
    }
    out
}

fn program_write_operands(command: &SimpleCommand) -> Vec<(&str, bool)> {
    let Some(program) = command.program() else {
        return Vec::new();
    };
    let args = command.args();
    let dynamic = command.dynamic.get(1..).unwrap_or(&[]);
    let operands: Vec<(&str, bool)> = args
        .iter()
        .zip(dynamic)
        .filter(|(a, _)| !a.starts_with('-'))
        .map(|(a, d)| (a.as_str(), *d))
        .collect();
    match program {
        "tee" | "touch" | "truncate" | "mkdir" | "rmdir" | "rm" | "unlink" | "shred" => operands,
        "cp" | "mv" | "install" | "ln" | "rsync" | "scp" => {
            let target_dir = args
                .iter()
                .position(|a| a == "-t" || a == "--target-directory")
                .and_then(|at| args.get(at + 1).map(|t| (t.as_str(), dynamic[at + 1])));
            target_dir
                .or(operands.last().copied())
                .into_iter()
                .collect()
        }
        "dd" => args
            .iter()
            .zip(dynamic)
            .filter_map(|(a, d)| a.strip_prefix("of=").map(|t| (t, *d)))
            .collect(),
        "chmod" | "chown" | "chgrp" => operands.into_iter().skip(1).collect(),
        "sed" | "perl"
            if args
                .iter()
                .any(|a| a.starts_with("-i") || a == "--in-place") =>
        {
            let has_script_option = args.iter().any(|a| a == "-e" || a == "-f");
            let skip = if has_script_option { 0 } else { 1 };
            operands.into_iter().skip(skip).collect()
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
#[path = "floor_tests.rs"]
mod tests;
