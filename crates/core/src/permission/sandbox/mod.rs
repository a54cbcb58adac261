//! The optional Bash sandbox (beyond the reference, opt-in with `[sandbox] mode =
//! "workspace-write"`): Landlock with a read-only root, writable workspace and temp dirs, `.git`
//! and the kimi-rs home kept read-only, Landlock scopes that keep the command from signalling
//! processes outside the sandbox or connecting to abstract Unix sockets made outside it, and a
//! seccomp filter refusing every `socket()` call.
//!
//! Unix sockets are refused outright, not only network ones: a Unix socket can reach a service
//! outside the sandbox (the docker socket, the D-Bus session bus, ssh-agent, a tmux server in
//! the writable `/tmp`), and Landlock cannot mediate `connect()` on a pathname socket before
//! ABI 9. The trade-off: inside the sandbox no program can create a Unix socket, so local
//! servers and clients (a test suite's own Unix-socket server, `ssh` through an agent, `docker`,
//! `git` credential caches, syslog) fail with "Operation not permitted". Pipes and
//! `socketpair(AF_UNIX, SOCK_STREAM | SOCK_SEQPACKET)` still work (runtimes use them for
//! subprocess IPC); datagram socketpairs are refused because they can `sendto()` a named
//! socket outside.
//!
//! It is applied in a child only: the kimi-rs binary re-executes itself as a helper
//! ([`helper_command`] builds that command line, [`parse_helper_args`] reads it back), the helper
//! calls [`exec_sandboxed`], which restricts itself and execs the real command. Where the
//! kernel cannot do it, [`probe`] says why so the caller can warn once and fall back to the
//! permission chain alone; [`kernel_support`] says which protections the kernel offers, so
//! missing ones (signal scoping before Linux 6.12) are reported too.

mod plan;
mod support;

#[cfg(target_os = "linux")]
mod linux;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use plan::{WriteGrant, list_dir_fs, plan_write_grants};
pub use support::{KernelSupport, Protection, ProtectionStatus};

use super::paths::Workspace;

/// `[sandbox] mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SandboxMode {
    /// No OS sandbox: the permission chain alone (the reference's behaviour).
    #[default]
    Off,
    WorkspaceWrite,
}

/// Problems with the sandbox configuration or its application.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SandboxError {
    #[error("`[sandbox] mode = {0:?}` is not a sandbox mode; use \"workspace-write\" or \"off\"")]
    BadMode(String),
    #[error(
        "the OS sandbox is not available here: {0}. Commands run with the permission chain only"
    )]
    Unsupported(String),
    #[error("could not set up the sandbox: {0}")]
    Setup(String),
    #[error("sandbox helper arguments are malformed: {0}; expected `--policy <json> -- <command>`")]
    HelperArgs(String),
    #[error("could not start `{program}` inside the sandbox: {why}")]
    Exec { program: String, why: String },
}

/// `[sandbox] mode` of the parsed config; unset means off.
pub fn sandbox_mode(mode: Option<&str>) -> Result<SandboxMode, SandboxError> {
    match mode {
        None | Some("off") => Ok(SandboxMode::Off),
        Some("workspace-write") => Ok(SandboxMode::WorkspaceWrite),
        Some(other) => Err(SandboxError::BadMode(other.to_owned())),
    }
}

/// Reads `[sandbox] mode` from a TOML value; a missing section means off.
pub fn sandbox_mode_from_config(config: &toml::Value) -> Result<SandboxMode, SandboxError> {
    match config
        .get("sandbox")
        .and_then(|s| s.get("mode"))
        .map(|m| {
            m.as_str()
                .ok_or_else(|| SandboxError::BadMode(m.to_string()))
        })
        .transpose()?
    {
        None | Some("off") => Ok(SandboxMode::Off),
        Some("workspace-write") => Ok(SandboxMode::WorkspaceWrite),
        Some(other) => Err(SandboxError::BadMode(other.to_owned())),
    }
}

/// What the sandboxed command may write, plus what stays read-only even inside those roots.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxPolicy {
    pub writable_roots: Vec<PathBuf>,
    pub read_only: Vec<PathBuf>,
}

impl SandboxPolicy {
    /// Workspace roots and temp dirs writable; every root's `.git`, the git control dir and the
    /// kimi-rs home read-only.
    pub fn workspace_write(
        workspace: &Workspace,
        temp_dirs: &[PathBuf],
        kimi_home: &Path,
    ) -> SandboxPolicy {
        let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let mut writable_roots = workspace.roots.clone();
        writable_roots.extend(temp_dirs.iter().map(|d| canonical(d)));
        let mut read_only: Vec<PathBuf> = workspace.roots.iter().map(|r| r.join(".git")).collect();
        if let Some(git) = &workspace.git {
            read_only.push(git.control_dir.clone());
        }
        read_only.push(canonical(kimi_home));
        read_only.sort();
        read_only.dedup();
        SandboxPolicy {
            writable_roots,
            read_only,
        }
    }

    /// The Landlock write grants for this policy, from the file system as it is now.
    pub fn write_grants(&self) -> Vec<WriteGrant> {
        plan_write_grants(&self.writable_roots, &self.read_only, &list_dir_fs)
    }
}

/// Whether this machine can run the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxSupport {
    Available,
    Unavailable { reason: String },
}

/// Checks, without restricting this process, whether Landlock and seccomp are usable.
pub fn probe() -> SandboxSupport {
    kernel_support().support()
}

/// What the running kernel lets the sandbox enforce, asked once per process (it cannot change
/// while kimi-rs runs) and without restricting this process.
pub fn kernel_support() -> &'static KernelSupport {
    static SUPPORT: std::sync::OnceLock<KernelSupport> = std::sync::OnceLock::new();
    SUPPORT.get_or_init(|| {
        #[cfg(target_os = "linux")]
        {
            linux::kernel_support()
        }
        #[cfg(not(target_os = "linux"))]
        {
            let why = "Landlock and seccomp exist only on Linux".to_owned();
            KernelSupport {
                landlock_abi: Err(why.clone()),
                landlock_fs: false,
                scope_abstract_unix: false,
                scope_signal: false,
                seccomp: Err(why),
            }
        }
    })
}

/// Restricts the calling thread (and everything it starts afterwards). Meant for the helper
/// process, just before it execs the command. Fails with [`SandboxError::Unsupported`] when
/// the kernel enforces nothing.
pub fn restrict_current_thread(policy: &SandboxPolicy) -> Result<(), SandboxError> {
    #[cfg(target_os = "linux")]
    {
        linux::restrict(policy)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _unused = policy;
        Err(SandboxError::Unsupported(
            "Landlock and seccomp exist only on Linux".to_owned(),
        ))
    }
}

/// The helper's whole job: restrict itself, then replace itself with the command. Returns only
/// on failure.
pub fn exec_sandboxed(policy: &SandboxPolicy, argv: &[OsString]) -> SandboxError {
    let Some((program, args)) = argv.split_first() else {
        return SandboxError::HelperArgs("no command given".to_owned());
    };
    if let Err(e) = restrict_current_thread(policy) {
        return e;
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        let err = std::process::Command::new(program).args(args).exec();
        SandboxError::Exec {
            program: program.to_string_lossy().into_owned(),
            why: err.to_string(),
        }
    }
    #[cfg(not(unix))]
    {
        let _unused = args;
        SandboxError::Unsupported("no exec on this platform".to_owned())
    }
}

/// The command line that runs `argv` under the sandbox through the helper entry point:
/// `<helper_exe> <helper_args…> --policy <json> -- <argv…>`.
pub fn helper_command(
    helper_exe: &Path,
    helper_args: &[&str],
    policy: &SandboxPolicy,
    argv: &[OsString],
) -> Result<std::process::Command, SandboxError> {
    let json = serde_json::to_string(policy).map_err(|e| SandboxError::Setup(e.to_string()))?;
    let mut cmd = std::process::Command::new(helper_exe);
    cmd.args(helper_args)
        .arg("--policy")
        .arg(json)
        .arg("--")
        .args(argv);
    Ok(cmd)
}

/// Reads back what [`helper_command`] wrote (the arguments after the helper's own ones).
pub fn parse_helper_args(
    args: &[OsString],
) -> Result<(SandboxPolicy, Vec<OsString>), SandboxError> {
    let [flag, json, sep, rest @ ..] = args else {
        return Err(SandboxError::HelperArgs(format!(
            "{} arguments",
            args.len()
        )));
    };
    if flag != "--policy" || sep != "--" {
        return Err(SandboxError::HelperArgs(format!(
            "got `{}` … `{}`",
            flag.to_string_lossy(),
            sep.to_string_lossy()
        )));
    }
    let policy: SandboxPolicy = serde_json::from_str(&json.to_string_lossy())
        .map_err(|e| SandboxError::HelperArgs(e.to_string()))?;
    Ok((policy, rest.to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_modes() {
        let parse = |text: &str| sandbox_mode_from_config(&toml::from_str(text).unwrap());
        assert_eq!(parse(""), Ok(SandboxMode::Off));
        assert_eq!(parse("[sandbox]\nmode = \"off\""), Ok(SandboxMode::Off));
        assert_eq!(
            parse("[sandbox]\nmode = \"workspace-write\""),
            Ok(SandboxMode::WorkspaceWrite)
        );
        let err = parse("[sandbox]\nmode = \"full\"").unwrap_err();
        assert!(err.to_string().contains("workspace-write"), "{err}");
        assert!(parse("[sandbox]\nmode = 1").is_err());
    }

    #[test]
    fn helper_args_roundtrip() {
        let policy = SandboxPolicy {
            writable_roots: vec![PathBuf::from("/ws")],
            read_only: vec![PathBuf::from("/ws/.git")],
        };
        let argv: Vec<OsString> = vec!["sh".into(), "-c".into(), "echo hi".into()];
        let cmd =
            helper_command(Path::new("/bin/kimi-rs"), &["sandbox-exec"], &policy, &argv).unwrap();
        let args: Vec<OsString> = cmd.get_args().map(OsString::from).collect();
        assert_eq!(args[0], "sandbox-exec");
        assert_eq!(parse_helper_args(&args[1..]).unwrap(), (policy, argv));
        assert!(parse_helper_args(&["--policy".into()]).is_err());
        assert!(parse_helper_args(&["--x".into(), "{}".into(), "--".into()]).is_err());
    }

    #[test]
    fn workspace_policy_keeps_git_and_home_read_only() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("ws/.git")).unwrap();
        std::fs::create_dir_all(root.join("ws/src")).unwrap();
        std::fs::create_dir_all(root.join("home/.kimi-rs")).unwrap();
        let ws = Workspace::new(&root.join("ws"), &[], None);
        let policy =
            SandboxPolicy::workspace_write(&ws, &[root.join("tmp")], &root.join("home/.kimi-rs"));
        assert_eq!(
            policy.writable_roots,
            vec![root.join("ws"), root.join("tmp")]
        );
        assert!(policy.read_only.contains(&root.join("ws/.git")));
        assert!(policy.read_only.contains(&root.join("home/.kimi-rs")));
        let grants = policy.write_grants();
        assert!(grants.iter().any(|g| g.path == root.join("ws/src")));
        assert!(
            !grants
                .iter()
                .any(|g| g.path.starts_with(root.join("ws/.git")))
        );
    }
}
