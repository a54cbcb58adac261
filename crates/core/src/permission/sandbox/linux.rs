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
    landlock_restrict(policy)?;
    // Landlock's restrict_self has set no_new_privs, which seccomp requires.
    seccompiler::apply_filter(&filter).map_err(|e| SandboxError::Setup(format!("seccomp: {e}")))
}

fn landlock_restrict(policy: &SandboxPolicy) -> Result<(), SandboxError> {
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
    let grants = policy
        .write_grants()
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
