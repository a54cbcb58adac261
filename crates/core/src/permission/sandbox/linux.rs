//! Landlock and seccomp on Linux. Both restrict the calling thread and are inherited by every
//! process it starts, which is why the helper applies them right before `exec`.

use std::collections::BTreeMap;

use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, LandlockStatus, PathBeneath, PathFd,
    RestrictSelf, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetError, RulesetStatus, Scope,
};
use seccompiler::{
    SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    TargetArch,
};

use super::{KernelSupport, SandboxError, SandboxPolicy};

/// The newest ABI whose rights we ask for; older kernels get the subset they know (Landlock's
/// best-effort mode) as long as they support Landlock at all. ABI 6 adds the scopes (abstract
/// Unix sockets, signals); its filesystem rights are ABI 5's. ABI 9's `ResolveUnix` right is
/// not asked for: seccomp already refuses every `socket()` call (see [`socket_filter`]).
const ABI_WANTED: ABI = ABI::V6;

/// Writable character devices every shell needs (`> /dev/null`).
const WRITABLE_DEVICES: [&str; 3] = ["/dev/null", "/dev/zero", "/dev/tty"];

/// Bits of `socket()`/`socketpair()`'s type argument that hold the type (the rest are
/// `SOCK_CLOEXEC`/`SOCK_NONBLOCK`); the kernel's `SOCK_TYPE_MASK`, which libc does not export.
const SOCK_TYPE_MASK: u64 = 0xf;

/// x86_64's x32 system calls carry this bit in their number but the same audit arch as native
/// ones, so a filter that names only the native numbers would let them through.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: i64 = 0x4000_0000;

/// Asks the kernel, without restricting anything: the ABI version from a flag-less
/// `RestrictSelf` (it makes no system call that changes this process), then each feature by
/// creating (and dropping) a ruleset that demands it.
pub(super) fn kernel_support() -> KernelSupport {
    let landlock_abi = match RestrictSelf::default().no_new_privs(false).apply() {
        Ok(status) => match status.landlock {
            LandlockStatus::Available {
                effective_abi,
                kernel_abi,
            } => Ok(kernel_abi.unwrap_or(effective_abi as i32)),
            LandlockStatus::NotEnabled => {
                Err("Landlock is built in but not enabled at boot".to_owned())
            }
            LandlockStatus::NotImplemented => {
                Err("Landlock is not built into this kernel".to_owned())
            }
        },
        Err(e) => Err(format!("cannot query Landlock: {e}")),
    };
    let demands =
        |ruleset: Result<Ruleset, RulesetError>| ruleset.and_then(Ruleset::create).is_ok();
    let hard = || Ruleset::default().set_compatibility(CompatLevel::HardRequirement);
    KernelSupport {
        landlock_abi,
        landlock_fs: demands(hard().handle_access(AccessFs::from_all(ABI::V1))),
        scope_abstract_unix: demands(hard().scope(Scope::AbstractUnixSocket)),
        scope_signal: demands(hard().scope(Scope::Signal)),
        seccomp: target_arch().and_then(|_| seccomp_in_kernel()),
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

/// `/proc/self/status` has a `Seccomp:` line only on kernels built with seccomp. When it cannot
/// be read the answer is yes: the helper then fails loudly if seccomp is really missing, where
/// a wrong "no" would quietly run every command unsandboxed.
fn seccomp_in_kernel() -> Result<(), String> {
    match std::fs::read_to_string("/proc/self/status") {
        Ok(status) if !status.lines().any(|l| l.starts_with("Seccomp:")) => Err(
            "this kernel is built without seccomp, which the sandbox needs to refuse sockets"
                .to_owned(),
        ),
        Ok(_) | Err(_) => Ok(()),
    }
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
        // Best effort like the rest: kernels before ABI 6 drop the scopes, and the start-up
        // log and warnings say so (see `KernelSupport::missing`).
        .scope(Scope::from_all(ABI_WANTED))
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

/// The seccomp filter; each refused call fails with EPERM:
/// - every `socket()`: no network socket, and no Unix socket either, because one could
///   `connect()` to a server outside the sandbox by path (docker, D-Bus, ssh-agent, tmux) —
///   Landlock cannot mediate that before ABI 9;
/// - `socketpair()` unless it is an `AF_UNIX` stream or seqpacket pair: a datagram pair can
///   still `sendto()` any named or abstract datagram socket (journald, systemd's notify socket);
/// - `io_uring_setup`, because io_uring can open sockets without the `socket` syscall;
/// - on x86_64, the x32 numbers of the same calls.
fn socket_filter() -> Result<seccompiler::BpfProgram, SandboxError> {
    let setup = |e: seccompiler::BackendError| SandboxError::Setup(format!("seccomp: {e}"));
    let cond = |arg: u8, op: SeccompCmpOp, value: u64| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value).map_err(setup)
    };
    let rule = |conditions: Vec<SeccompCondition>| SeccompRule::new(conditions).map_err(setup);
    let unix_type = |ty: i32| cond(1, SeccompCmpOp::MaskedEq(SOCK_TYPE_MASK), ty as u64);
    // Rules are alternatives: a socketpair call matching any of them is refused.
    let socketpair = vec![
        rule(vec![cond(0, SeccompCmpOp::Ne, libc::AF_UNIX as u64)?])?,
        rule(vec![unix_type(libc::SOCK_DGRAM)?])?,
        // AF_UNIX turns SOCK_RAW into SOCK_DGRAM.
        rule(vec![unix_type(libc::SOCK_RAW)?])?,
    ];
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    // An empty rule list matches every call of that syscall.
    rules.insert(libc::SYS_socket, Vec::new());
    rules.insert(libc::SYS_socketpair, socketpair);
    rules.insert(libc::SYS_io_uring_setup, Vec::new());
    #[cfg(target_arch = "x86_64")]
    for native in [
        libc::SYS_socket,
        libc::SYS_socketpair,
        libc::SYS_io_uring_setup,
    ] {
        rules.insert(X32_SYSCALL_BIT | native, Vec::new());
    }
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

#[cfg(test)]
mod tests {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};

    use rustix::process::{Pid, Signal, kill_process, test_kill_process};

    use super::*;

    /// Kills and reaps the child when the test ends, also when it panics.
    struct Reaped(std::process::Child);

    impl Drop for Reaped {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    fn abstract_addr(tag: &str) -> SocketAddr {
        let name = format!("kimi-rs-test-{tag}-{}", std::process::id());
        SocketAddr::from_abstract_name(name.as_bytes()).unwrap()
    }

    /// The Landlock layer on its own (no seccomp, which would refuse `socket()` before Landlock
    /// is asked), on a throwaway thread: Landlock restricts only the calling thread, so the
    /// test process stays free and provides the "outside".
    #[test]
    fn landlock_scopes_stop_abstract_sockets_and_signals_to_outside() {
        let support = kernel_support();
        if !(support.scope_abstract_unix && support.scope_signal) {
            let why = format!(
                "Landlock scopes need ABI 6 (Linux 6.12+); found {:?}",
                support.landlock_abi
            );
            if kimi_test_support::sandbox::skip_unless_supported(Some(&why)) {
                return;
            }
        }
        let outside_addr = abstract_addr("outside");
        let listener = UnixListener::bind_addr(&outside_addr).unwrap();
        let outside = Reaped(
            std::process::Command::new("sleep")
                .arg("1000")
                .spawn()
                .unwrap(),
        );
        let pid = Pid::from_child(&outside.0);
        // Controls: unrestricted, both reach the outside.
        UnixStream::connect_addr(&outside_addr).unwrap();
        test_kill_process(pid).unwrap();

        let inside_addr = abstract_addr("inside");
        let (connect, signal, inside) = std::thread::spawn(move || {
            landlock_restrict(Vec::new()).unwrap();
            let connect = UnixStream::connect_addr(&outside_addr).map(drop);
            let signal = kill_process(pid, Signal::TERM);
            // A socket made inside the sandbox stays reachable from inside it.
            let inside = UnixListener::bind_addr(&inside_addr)
                .and_then(|_listener| UnixStream::connect_addr(&inside_addr))
                .map(drop);
            (connect, signal, inside)
        })
        .join()
        .unwrap();

        let connect = connect.unwrap_err();
        assert_eq!(connect.raw_os_error(), Some(libc::EPERM), "{connect}");
        let signal = signal.unwrap_err();
        assert_eq!(signal, rustix::io::Errno::PERM, "{signal}");
        inside.unwrap();
        let mut outside = outside;
        assert!(
            outside.0.try_wait().unwrap().is_none(),
            "the outside process must survive"
        );
        // Only the control connection reached the listener.
        listener.set_nonblocking(true).unwrap();
        listener.accept().unwrap();
        assert_eq!(
            listener.accept().unwrap_err().kind(),
            std::io::ErrorKind::WouldBlock
        );
    }
}
