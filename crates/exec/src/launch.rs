//! Reaching an executor: the launcher command of a declared environment (`ssh`, `docker exec`
//! or any command), the bounded handshake, the executor install for SSH targets that have none,
//! (the process-wide pool of shared connections is [`crate::pool`]).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kimi_config::environments::{EnvironmentDecl, Launcher};
use sha2::Digest as _;

use crate::client::{CallError, Connection, RemoteEnvironment, handshake};

/// Every connect attempt (launch plus handshake) ends within this.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Where the executor is installed on an SSH target unless `remoteBin` says otherwise.
pub const DEFAULT_REMOTE_BIN: &str = "~/.kimi-rs/bin/kimi-rs";
/// How much of a launcher's stderr an error carries.
const STDERR_TAIL_BYTES: usize = 2048;

/// Why an environment could not be connected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot connect to environment `{id}` ({kind}): {message}")]
pub struct ConnectError {
    pub id: String,
    pub kind: String,
    pub message: String,
    pub exit_code: Option<i32>,
    pub stderr_tail: String,
}

/// What a launcher left behind: its exit code and the tail of its stderr.
#[derive(Clone)]
struct Launched {
    child: Arc<Mutex<Child>>,
    stderr: Arc<Mutex<Vec<u8>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Launched {
    fn exit_code(&self) -> Option<Option<i32>> {
        match lock(&self.child).try_wait() {
            Ok(Some(status)) => Some(status.code()),
            Ok(None) | Err(_) => None,
        }
    }

    /// Waits up to `bound` for the launcher to exit.
    fn wait_exit(&self, bound: Duration) -> Option<Option<i32>> {
        let deadline = Instant::now() + bound;
        loop {
            if let Some(code) = self.exit_code() {
                return Some(code);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn stderr_tail(&self) -> String {
        String::from_utf8_lossy(&lock(&self.stderr))
            .trim()
            .to_owned()
    }

    fn report(&self) -> String {
        let code = match self.exit_code() {
            Some(Some(code)) => format!("the launcher exited with code {code}"),
            Some(None) => "the launcher was ended by a signal".to_owned(),
            None => "the launcher is still running".to_owned(),
        };
        let tail = self.stderr_tail();
        if tail.is_empty() {
            code
        } else {
            format!("{code}; its stderr ends with: {tail}")
        }
    }

    fn kill(&self) {
        let mut child = lock(&self.child);
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// Kills the launcher when the environment goes away.
struct LauncherGuard(Launched);

impl Drop for LauncherGuard {
    fn drop(&mut self) {
        self.0.kill();
    }
}

fn ssh_base(ssh_args: &[String]) -> Command {
    let mut cmd = Command::new("ssh");
    cmd.args([
        "-T",
        "-o",
        "BatchMode=yes",
        "-o",
        "StrictHostKeyChecking=accept-new",
        "-o",
        "ConnectTimeout=10",
    ]);
    cmd.args(ssh_args);
    cmd
}

/// The launcher command of `decl` (not started).
pub fn launcher_command(decl: &EnvironmentDecl) -> Command {
    match &decl.launcher {
        Launcher::Ssh {
            host,
            ssh_args,
            remote_bin,
        } => {
            let mut cmd = ssh_base(ssh_args);
            cmd.arg(host).arg("--").arg(format!(
                "{} exec-server",
                remote_bin.as_deref().unwrap_or(DEFAULT_REMOTE_BIN)
            ));
            cmd
        }
        Launcher::Docker {
            container,
            context,
            remote_bin,
        } => {
            // Through `sh` so `~/` and the install directory work as on SSH targets; a
            // missing executor makes `sh` exit 127, which triggers the install.
            let mut cmd = crate::install_docker::docker_base(context.as_deref());
            cmd.args(["exec", "-i", container, "sh", "-c"])
                .arg(crate::install_docker::exec_line(remote_bin.as_deref()));
            cmd
        }
        Launcher::Command { command, args, env } => {
            let mut cmd = Command::new(command);
            cmd.args(args).envs(env);
            cmd
        }
    }
}

/// One connect attempt, bounded by `deadline`.
fn attempt(decl: &EnvironmentDecl, deadline: Instant) -> Result<RemoteEnvironment, ConnectError> {
    let kind = decl.launcher.kind();
    let fail = |message: String, exit_code: Option<i32>, stderr_tail: String| ConnectError {
        id: decl.id.clone(),
        kind: kind.to_owned(),
        message,
        exit_code,
        stderr_tail,
    };
    let mut cmd = launcher_command(decl);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let program = cmd.get_program().to_string_lossy().into_owned();
    let mut child = cmd.spawn().map_err(|e| {
        fail(
            format!("cannot start `{program}`: {e}; check that it is installed and on PATH"),
            None,
            String::new(),
        )
    })?;
    let (Some(stdin), Some(stdout), Some(mut stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        let _ = child.kill();
        return Err(fail(
            "the launcher's stdio could not be captured".to_owned(),
            None,
            String::new(),
        ));
    };
    let launched = Launched {
        child: Arc::new(Mutex::new(child)),
        stderr: Arc::new(Mutex::new(Vec::new())),
    };
    let tail = launched.stderr.clone();
    let _ = std::thread::Builder::new()
        .name("kimi-exec-stderr".to_owned())
        .spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let mut tail = lock(&tail);
                tail.extend_from_slice(&buf[..n]);
                let excess = tail.len().saturating_sub(STDERR_TAIL_BYTES);
                tail.drain(..excess);
            }
        });
    let reporter = launched.clone();
    let conn = Connection::start(
        Box::new(stdout),
        Box::new(stdin),
        Box::new(move || reporter.report()),
    );
    let left = deadline.saturating_duration_since(Instant::now());
    match handshake(&conn, left) {
        Ok(hello) => {
            if hello.os != "linux" && hello.os != "macos" {
                tracing::warn!(
                    "environment `{}` runs on {}; only POSIX targets are supported",
                    decl.id,
                    hello.os
                );
            }
            tracing::info!(
                "environment `{}` connected: {} {} {}",
                decl.id,
                hello.os,
                hello.arch,
                hello.shell
            );
            Ok(RemoteEnvironment::new(
                &decl.id,
                kind,
                &hello,
                conn,
                Some(Box::new(LauncherGuard(launched))),
            ))
        }
        Err(err) => {
            let exited = launched.wait_exit(Duration::from_millis(500));
            if exited.is_none() {
                launched.kill();
            }
            let code = exited.flatten();
            let tail = launched.stderr_tail();
            let mut message = match err {
                CallError::Remote { code, message } => {
                    format!("the executor refused the handshake ({code}): {message}")
                }
                CallError::Lost(_) if exited.is_none() => format!(
                    "no handshake within {} s; the launcher was stopped",
                    CONNECT_TIMEOUT.as_secs()
                ),
                CallError::Lost(_) => "the launcher ended before the handshake".to_owned(),
            };
            match code {
                Some(code) => message.push_str(&format!("; exit code {code}")),
                None if exited.is_some() => message.push_str("; ended by a signal"),
                None => {}
            }
            message.push_str(match (kind, code) {
                ("ssh", Some(255)) => " (ssh could not reach or log in to the host)",
                (_, Some(127)) => " (the executor was not found on the target)",
                _ => "",
            });
            if !tail.is_empty() {
                message.push_str(&format!("; stderr: {tail}"));
            }
            conn.close("the handshake failed");
            Err(fail(message, code, tail))
        }
    }
}

/// Connects to `decl`, installing the executor on an SSH target that has none (when `exe` is
/// given and the target's OS/arch match this machine).
pub fn connect(
    decl: &EnvironmentDecl,
    exe: Option<&Path>,
) -> Result<RemoteEnvironment, ConnectError> {
    let started = Instant::now();
    match attempt(decl, started + CONNECT_TIMEOUT) {
        Ok(env) => Ok(env),
        Err(err) if err.exit_code == Some(127) => match (&decl.launcher, exe) {
            (
                Launcher::Ssh {
                    host,
                    ssh_args,
                    remote_bin,
                },
                Some(exe),
            ) => {
                let bin = remote_bin.as_deref().unwrap_or(DEFAULT_REMOTE_BIN);
                install_over_ssh(host, ssh_args, bin, exe).map_err(|message| ConnectError {
                    message: format!("{}; installing the executor failed: {message}", err.message),
                    ..err
                })?;
                attempt(decl, Instant::now() + CONNECT_TIMEOUT)
            }
            (
                Launcher::Docker {
                    container,
                    context,
                    remote_bin,
                },
                Some(exe),
            ) => {
                crate::install_docker::install(
                    context.as_deref(),
                    container,
                    remote_bin.as_deref(),
                    exe,
                )
                .map_err(|message| ConnectError {
                    message: format!("{}; installing the executor failed: {message}", err.message),
                    ..err
                })?;
                attempt(decl, Instant::now() + CONNECT_TIMEOUT)
            }
            _ => Err(ConnectError {
                message: format!("{}. {}", err.message, manual_install(decl)),
                ..err
            }),
        },
        Err(err) => Err(err),
    }
}

/// The commands a user runs to put an executor on the target by hand.
fn manual_install(decl: &EnvironmentDecl) -> String {
    match &decl.launcher {
        Launcher::Ssh {
            host, remote_bin, ..
        } => {
            let bin = remote_bin.as_deref().unwrap_or(DEFAULT_REMOTE_BIN);
            format!(
                "Install kimi-rs for the target's OS/arch there: `ssh {host} mkdir -p $(dirname {bin})`, \
                 `scp kimi-rs {host}:{bin}`, `ssh {host} chmod 755 {bin}`"
            )
        }
        Launcher::Docker {
            container,
            remote_bin,
            ..
        } => {
            let bin = remote_bin.as_deref().unwrap_or("/usr/local/bin/kimi-rs");
            format!(
                "Install kimi-rs for the container's OS/arch there: `docker cp kimi-rs {container}:{bin}` \
                 (and set remoteBin = \"{bin}\" unless it is on the container's PATH)"
            )
        }
        Launcher::Command { .. } => {
            "Put kimi-rs on the target and make the launcher run `kimi-rs exec-server`".to_owned()
        }
    }
}

/// A remote path for a shell command line, with a leading `~/` left to the remote shell.
pub(crate) fn remote_path(bin: &str) -> String {
    match bin.strip_prefix("~/") {
        Some(rest) => format!("\"$HOME\"/{}", quote(rest)),
        None => quote(bin),
    }
}

pub(crate) fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

fn run_ssh(host: &str, ssh_args: &[String], script: &str, stdin: Stdio) -> Result<String, String> {
    let out = ssh_base(ssh_args)
        .arg(host)
        .arg("--")
        .arg(script)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("cannot run ssh: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "`{script}` on {host} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

pub(crate) fn sha256_file(path: &Path) -> Result<String, String> {
    let mut file =
        std::fs::File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut hasher = sha2::Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file
            .read(&mut buf)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// `uname -s -m` names for this build's OS and arch.
pub(crate) fn local_uname() -> (&'static str, &'static [&'static str]) {
    let os = match std::env::consts::OS {
        "linux" => "Linux",
        "macos" => "Darwin",
        other => other,
    };
    let arch: &'static [&'static str] = match std::env::consts::ARCH {
        "x86_64" => &["x86_64", "amd64"],
        "aarch64" => &["aarch64", "arm64"],
        _ => &[],
    };
    (os, arch)
}

/// Copies `exe` to `bin` on `host` through ssh itself (so `sshArgs`, ProxyJump and
/// ~/.ssh/config apply exactly as for the connection), then checks its SHA-256 there.
pub fn install_over_ssh(
    host: &str,
    ssh_args: &[String],
    bin: &str,
    exe: &Path,
) -> Result<(), String> {
    let uname = run_ssh(host, ssh_args, "uname -s -m", Stdio::null())?;
    let mut parts = uname.split_whitespace();
    let (os, arch) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let (local_os, local_arch) = local_uname();
    if os != local_os || !local_arch.contains(&arch) {
        return Err(format!(
            "the target runs {os} {arch} and this kimi-rs is built for {} {}, so it cannot be copied. \
             Install a kimi-rs built for {os} {arch} there: `scp kimi-rs {host}:{bin}` then `ssh {host} chmod 755 {bin}`",
            std::env::consts::OS,
            std::env::consts::ARCH
        ));
    }
    let path = remote_path(bin);
    let partial = format!("{path}.partial");
    tracing::info!("installing the executor on {host} at {bin}");
    let file =
        std::fs::File::open(exe).map_err(|e| format!("cannot read {}: {e}", exe.display()))?;
    run_ssh(
        host,
        ssh_args,
        &format!(
            "mkdir -p \"$(dirname {path})\" && cat > {partial} && chmod 755 {partial} && mv -f {partial} {path}"
        ),
        Stdio::from(file),
    )?;
    let expected = sha256_file(exe)?;
    let listed = run_ssh(
        host,
        ssh_args,
        &format!("sha256sum {path} 2>/dev/null || shasum -a 256 {path}"),
        Stdio::null(),
    )?;
    let actual = listed.split_whitespace().next().unwrap_or("");
    if actual != expected {
        let _ = run_ssh(host, ssh_args, &format!("rm -f {path}"), Stdio::null());
        return Err(format!(
            "the copy at {bin} has SHA-256 {actual}, not {expected}; it was removed. Check the disk space on the target and retry"
        ));
    }
    tracing::info!("installed the executor on {host} at {bin} (sha256 {expected})");
    Ok(())
}

/// The running binary, to copy to targets that lack an executor.
pub fn current_exe() -> Option<PathBuf> {
    std::env::current_exe().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_paths_keep_home_for_the_remote_shell() {
        assert_eq!(
            remote_path("~/.kimi-rs/bin/kimi-rs"),
            "\"$HOME\"/'.kimi-rs/bin/kimi-rs'"
        );
        assert_eq!(remote_path("/opt/it's"), "'/opt/it'\\''s'");
    }
}
