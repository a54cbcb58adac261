//! Landlock and seccomp on Linux. Both restrict the calling thread and are inherited by every
//! process it starts, which is why the helper applies them right before `exec`.

use std::collections::BTreeMap;

use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus,
};
use seccompiler::{
    SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    TargetArch,
};

use super::{SandboxError, SandboxPolicy, SandboxSupport};

/// The newest ABI whose rights we ask for; older kernels get the subset they know (Landlock's
/// best-effort mode) as long as they support Landlock at all.
const ABI_WANTED: ABI = ABI::V5;

/// Writable character devices every shell needs (`> /dev/null`).
const WRITABLE_DEVICES: [&str; 3] = ["/dev/null", "/dev/zero", "/dev/tty"];

pub(super) fn probe() -> SandboxSupport {
    let created = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(ABI::V1))
        .and_then(Ruleset::create);
    match created {
        Ok(_) => match target_arch() {
            Ok(_) => SandboxSupport::Available,
            Err(reason) => SandboxSupport::Unavailable { reason },
        },
        Err(e) => SandboxSupport::Unavailable {
            reason: format!(
                "this kernel does not provide Landlock ({e}); it needs Linux 5.13+ with \
                 `landlock` in the boot-time LSM list, which some containers and WSL lack"
            ),
        },
    }
}

fn target_arch() -> Result<TargetArch, String> {
    TargetArch::try_from(std::env::consts::ARCH).map_err(|_| {
        format!(
            "seccomp filters are not built for {}",
            std::env::consts::ARCH
        )
    })
}

pub(super) fn restrict(policy: &SandboxPolicy) -> Result<(), SandboxError> {
    // The seccomp filter is compiled first so nothing is restricted if it cannot be built.
    let filter = socket_filter()?;
    // Best: protected paths become read-only mounts in a private mount namespace, so Landlock
    // can grant the whole workspace (new files at the repository root included). Where user
    // namespaces are not allowed, the grants avoid the protected paths instead.
    let grants = match protect_with_mounts(&policy.read_only) {
        Ok(()) => policy
            .writable_roots
            .iter()
            .map(|root| super::WriteGrant {
                path: root.clone(),
                is_dir: true,
            })
            .collect(),
        Err(_) => policy.write_grants(),
    };
    landlock_restrict(grants)?;
    // Landlock's restrict_self has set no_new_privs, which seccomp requires.
    seccompiler::apply_filter(&filter).map_err(|e| SandboxError::Setup(format!("seccomp: {e}")))
}

/// Enter a new user + mount namespace (mapping our own ids, so nothing gains privilege) and
/// bind-mount each existing protected path read-only over itself. Must run single-threaded,
/// right before the helper execs the command.
fn protect_with_mounts(protected: &[std::path::PathBuf]) -> Result<(), String> {
    use rustix::mount::{
        MountFlags, MountPropagationFlags, mount_bind, mount_change, mount_remount,
    };
    use rustix::thread::UnshareFlags;
    let existing: Vec<&std::path::PathBuf> = protected.iter().filter(|p| p.exists()).collect();
    if existing.is_empty() {
        return Ok(());
    }
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    // `unshare` is deprecated in favour of an unsafe variant because unsharing the file table
    // or fs state under other threads is unsound; the helper is single-threaded and only asks
    // for new user and mount namespaces.
    #[allow(deprecated)]
    rustix::thread::unshare(UnshareFlags::NEWUSER | UnshareFlags::NEWNS)
        .map_err(|e| format!("unshare: {e}"))?;
    std::fs::write("/proc/self/setgroups", "deny").map_err(|e| format!("setgroups: {e}"))?;
    std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1"))
        .map_err(|e| format!("uid_map: {e}"))?;
    std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1"))
        .map_err(|e| format!("gid_map: {e}"))?;
    mount_change(
        "/",
        MountPropagationFlags::PRIVATE | MountPropagationFlags::REC,
    )
    .map_err(|e| format!("private mounts: {e}"))?;
    for path in existing {
        mount_bind(path, path).map_err(|e| format!("bind {}: {e}", path.display()))?;
        mount_remount(path, MountFlags::BIND | MountFlags::RDONLY, "")
            .map_err(|e| format!("read-only {}: {e}", path.display()))?;
    }
    Ok(())
}

fn landlock_restrict(grants: Vec<super::WriteGrant>) -> Result<(), SandboxError> {
    let setup = |e: landlock::RulesetError| SandboxError::Setup(format!("landlock: {e}"));
    let mut ruleset = Ruleset::default()
        .handle_access(AccessFs::from_all(ABI_WANTED))
        .map_err(setup)?
        .create()
        .map_err(setup)?;
    let read = AccessFs::from_read(ABI_WANTED);
    let root = PathFd::new("/").map_err(|e| SandboxError::Setup(format!("open /: {e}")))?;
    ruleset = ruleset
        .add_rule(PathBeneath::new(root, read))
        .map_err(setup)?;
    let devices = WRITABLE_DEVICES
        .iter()
        .map(|d| (std::path::PathBuf::from(d), false));
    let grants = grants
        .into_iter()
        .map(|g| (g.path, g.is_dir))
        .chain(devices);
    for (path, is_dir) in grants {
        // Paths that vanished since planning, or devices this machine lacks, are skipped:
        // not granting is the safe direction.
        let Ok(fd) = PathFd::new(&path) else {
            continue;
        };
        let rights = if is_dir {
            AccessFs::from_all(ABI_WANTED)
        } else {
            AccessFs::from_file(ABI_WANTED)
        };
        ruleset = ruleset
            .add_rule(PathBeneath::new(fd, rights))
            .map_err(setup)?;
    }
    let status = ruleset.restrict_self().map_err(setup)?;
    match status.ruleset {
        RulesetStatus::FullyEnforced | RulesetStatus::PartiallyEnforced => Ok(()),
        RulesetStatus::NotEnforced => Err(SandboxError::Unsupported(
            "the kernel accepted no Landlock rules (Landlock missing or disabled)".to_owned(),
        )),
    }
}

/// `socket()`/`socketpair()` with any domain but `AF_UNIX` fail with EPERM; `io_uring_setup`
/// too, because io_uring can open sockets without the `socket` syscall.
fn socket_filter() -> Result<seccompiler::BpfProgram, SandboxError> {
    let setup = |e: seccompiler::BackendError| SandboxError::Setup(format!("seccomp: {e}"));
    let not_unix = || -> Result<Vec<SeccompRule>, SandboxError> {
        let cond = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Ne,
            libc::AF_UNIX as u64,
        )
        .map_err(setup)?;
        Ok(vec![SeccompRule::new(vec![cond]).map_err(setup)?])
    };
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    rules.insert(libc::SYS_socket, not_unix()?);
    rules.insert(libc::SYS_socketpair, not_unix()?);
    // An empty rule list matches every call of that syscall.
    rules.insert(libc::SYS_io_uring_setup, Vec::new());
    let arch = target_arch().map_err(SandboxError::Unsupported)?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(setup)?;
    filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| setup(e))
}
