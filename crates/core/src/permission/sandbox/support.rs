//! What the running kernel lets the workspace-write sandbox enforce, and the words kimi-rs uses
//! to report it: the start-up log line, the user-visible warnings about missing protections and
//! `kimi-rs sandbox --status`. The probing itself is in `linux.rs`; this module only decides.

use std::fmt;

use super::SandboxSupport;

/// The kernel features the sandbox builds on, found without restricting this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelSupport {
    /// The Landlock ABI version the kernel reports, or why there is none.
    pub landlock_abi: Result<i32, String>,
    /// Landlock accepts filesystem rules (ABI 1, Linux 5.13).
    pub landlock_fs: bool,
    /// Landlock can keep the sandbox from connecting to abstract Unix sockets made outside it
    /// (`LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET`, ABI 6, Linux 6.12).
    pub scope_abstract_unix: bool,
    /// Landlock can keep the sandbox from signalling processes outside it
    /// (`LANDLOCK_SCOPE_SIGNAL`, ABI 6, Linux 6.12).
    pub scope_signal: bool,
    /// The seccomp socket filter can be built and loaded here, or why not.
    pub seccomp: Result<(), String>,
}

/// One thing the sandbox keeps a command from doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protection {
    /// Writing outside the workspace and temp dirs, or to `.git` and the kimi-rs home.
    Filesystem,
    /// Opening network sockets.
    Network,
    /// Connecting to Unix sockets by path (docker, D-Bus, ssh-agent, tmux, …).
    PathUnixSockets,
    /// Connecting to abstract Unix sockets made outside the sandbox.
    AbstractUnixSockets,
    /// Signalling processes outside the sandbox.
    Signals,
}

impl fmt::Display for Protection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `pad`, not `write_str`, so that `{:<30}` in the status report aligns the columns.
        f.pad(match self {
            Protection::Filesystem => "filesystem",
            Protection::Network => "network",
            Protection::PathUnixSockets => "Unix sockets by path",
            Protection::AbstractUnixSockets => "abstract Unix sockets",
            Protection::Signals => "signals to outside processes",
        })
    }
}

/// Whether one protection is in force on this machine, and by what (or why not).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtectionStatus {
    pub protection: Protection,
    pub in_force: bool,
    pub how: String,
}

impl KernelSupport {
    /// Whether the sandbox can run at all: it needs Landlock's filesystem rules and seccomp.
    /// Missing scopes only weaken it (see [`KernelSupport::missing`]).
    pub fn support(&self) -> SandboxSupport {
        if !self.landlock_fs {
            let why = match &self.landlock_abi {
                Err(why) => why.clone(),
                Ok(abi) => format!("Landlock (ABI {abi}) refused a filesystem ruleset"),
            };
            return SandboxSupport::Unavailable {
                reason: format!(
                    "this kernel does not provide Landlock ({why}); it needs Linux 5.13+ with \
                     `landlock` in the boot-time LSM list, which some containers and WSL lack"
                ),
            };
        }
        match &self.seccomp {
            Ok(()) => SandboxSupport::Available,
            Err(reason) => SandboxSupport::Unavailable {
                reason: reason.clone(),
            },
        }
    }

    /// Every protection, in a fixed order, with whether it is in force here.
    pub fn protections(&self) -> Vec<ProtectionStatus> {
        let seccomp = self.seccomp.is_ok();
        let status = |protection, in_force, how: &str| ProtectionStatus {
            protection,
            in_force,
            how: how.to_owned(),
        };
        let no_seccomp = match &self.seccomp {
            Ok(()) => String::new(),
            Err(why) => why.clone(),
        };
        let abstract_how = match (self.scope_abstract_unix, seccomp) {
            (true, true) => "Landlock scope (ABI 6) and the seccomp refusal of socket()".to_owned(),
            (true, false) => "Landlock scope (ABI 6)".to_owned(),
            (false, true) => "the seccomp refusal of socket() only; this kernel's Landlock has \
                              no abstract-socket scope (needs ABI 6, Linux 6.12+)"
                .to_owned(),
            (false, false) => format!(
                "no Landlock abstract-socket scope (needs ABI 6, Linux 6.12+) and {no_seccomp}"
            ),
        };
        vec![
            status(
                Protection::Filesystem,
                self.landlock_fs,
                if self.landlock_fs {
                    "Landlock: system read-only, workspace and temp dirs writable, `.git` and \
                     the kimi-rs home read-only"
                } else {
                    "Landlock is missing"
                },
            ),
            status(
                Protection::Network,
                seccomp,
                if seccomp {
                    "seccomp: socket() refused for every address family, io_uring refused"
                } else {
                    &no_seccomp
                },
            ),
            status(
                Protection::PathUnixSockets,
                seccomp,
                if seccomp {
                    "seccomp: socket(AF_UNIX) refused, datagram socketpairs refused; stream \
                     and seqpacket socketpairs still work"
                } else {
                    &no_seccomp
                },
            ),
            ProtectionStatus {
                protection: Protection::AbstractUnixSockets,
                in_force: self.scope_abstract_unix || seccomp,
                how: abstract_how,
            },
            status(
                Protection::Signals,
                self.scope_signal,
                if self.scope_signal {
                    "Landlock scope (ABI 6): no signals to processes outside the sandbox"
                } else {
                    "this kernel's Landlock has no signal scope (needs ABI 6, Linux 6.12+): \
                     sandboxed commands can signal your other processes"
                },
            ),
        ]
    }

    /// One user-facing warning per protection that is not in force (empty when all are).
    pub fn missing(&self) -> Vec<String> {
        self.protections()
            .into_iter()
            .filter(|p| !p.in_force)
            .map(|p| {
                format!(
                    "the OS sandbox does not protect {} here: {}. The rest of the sandbox is \
                     in force; `kimi-rs sandbox --status` lists what is",
                    p.protection, p.how
                )
            })
            .collect()
    }

    /// One line for the start-up log: the ABI and what is in force and missing.
    pub fn log_line(&self) -> String {
        let (on, off): (Vec<ProtectionStatus>, Vec<ProtectionStatus>) =
            self.protections().into_iter().partition(|p| p.in_force);
        let names = |list: &[ProtectionStatus]| {
            if list.is_empty() {
                "none".to_owned()
            } else {
                list.iter()
                    .map(|p| p.protection.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        format!(
            "OS sandbox: {}; in force: {}; missing: {}",
            self.abi_text(),
            names(&on),
            names(&off)
        )
    }

    /// The multi-line report `kimi-rs sandbox --status` prints.
    pub fn report(&self) -> String {
        let mut out = format!("{}\n", self.abi_text());
        match self.support() {
            SandboxSupport::Available => {
                out.push_str("sandbox: available (`[sandbox] mode = \"workspace-write\"`)\n");
            }
            SandboxSupport::Unavailable { reason } => {
                out.push_str(&format!(
                    "sandbox: NOT available ({reason}); Bash runs with the permission chain only\n"
                ));
            }
        }
        for p in self.protections() {
            let state = if p.in_force { "in force" } else { "MISSING" };
            out.push_str(&format!("{:<30} {state:<9} {}\n", p.protection, p.how));
        }
        out
    }

    fn abi_text(&self) -> String {
        match &self.landlock_abi {
            Ok(abi) => format!("Landlock ABI {abi}"),
            Err(why) => format!("no Landlock ({why})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(abi: i32) -> KernelSupport {
        KernelSupport {
            landlock_abi: Ok(abi),
            landlock_fs: true,
            scope_abstract_unix: abi >= 6,
            scope_signal: abi >= 6,
            seccomp: Ok(()),
        }
    }

    #[test]
    fn a_current_kernel_has_everything_in_force() {
        let k = kernel(7);
        assert_eq!(k.support(), SandboxSupport::Available);
        assert!(k.protections().iter().all(|p| p.in_force));
        assert_eq!(k.missing(), Vec::<String>::new());
        assert_eq!(
            k.log_line(),
            "OS sandbox: Landlock ABI 7; in force: filesystem, network, Unix sockets by path, \
             abstract Unix sockets, signals to outside processes; missing: none"
        );
        let report = k.report();
        assert!(
            report.starts_with("Landlock ABI 7\nsandbox: available"),
            "{report}"
        );
        assert_eq!(report.matches("in force").count(), 5, "{report}");
        assert!(
            report.contains(
                "\nsignals to outside processes   in force  Landlock scope (ABI 6): no signals \
                 to processes outside the sandbox\n"
            ),
            "{report}"
        );
    }

    #[test]
    fn a_kernel_without_scopes_misses_signals_only() {
        let k = kernel(5);
        assert_eq!(k.support(), SandboxSupport::Available);
        let missing = k.missing();
        assert_eq!(missing.len(), 1, "{missing:?}");
        assert!(
            missing[0].contains("signals to outside processes") && missing[0].contains("ABI 6"),
            "{missing:?}"
        );
        // Abstract sockets stay closed by seccomp, and the report says the scope is absent.
        let abstract_unix = k
            .protections()
            .into_iter()
            .find(|p| p.protection == Protection::AbstractUnixSockets)
            .unwrap();
        assert!(abstract_unix.in_force);
        assert!(abstract_unix.how.contains("seccomp"), "{abstract_unix:?}");
        assert!(
            k.log_line()
                .ends_with("missing: signals to outside processes"),
            "{}",
            k.log_line()
        );
        assert!(k.report().contains("MISSING"), "{}", k.report());
    }

    #[test]
    fn no_landlock_or_no_seccomp_means_no_sandbox() {
        let no_landlock = KernelSupport {
            landlock_abi: Err("Landlock is not enabled".to_owned()),
            landlock_fs: false,
            scope_abstract_unix: false,
            scope_signal: false,
            seccomp: Ok(()),
        };
        let SandboxSupport::Unavailable { reason } = no_landlock.support() else {
            panic!("no Landlock must mean no sandbox");
        };
        assert!(
            reason.contains("Landlock is not enabled") && reason.contains("5.13"),
            "{reason}"
        );
        assert!(no_landlock.report().contains("NOT available"));
        let no_seccomp = KernelSupport {
            seccomp: Err("this kernel is built without seccomp".to_owned()),
            ..kernel(6)
        };
        assert_eq!(
            no_seccomp.support(),
            SandboxSupport::Unavailable {
                reason: "this kernel is built without seccomp".to_owned()
            }
        );
        let off: Vec<Protection> = no_seccomp
            .protections()
            .into_iter()
            .filter(|p| !p.in_force)
            .map(|p| p.protection)
            .collect();
        assert_eq!(off, vec![Protection::Network, Protection::PathUnixSockets]);
    }
}
