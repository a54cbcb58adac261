//! The executor on Docker targets: the `sh -c` line `docker exec` runs (so `~/` in `remoteBin`
//! and the default install directory work as on SSH targets), and the install by `docker cp`
//! of the running binary when the container's OS/arch match this build, checked by SHA-256
//! inside the container afterwards.

use std::path::Path;
use std::process::Command;

use crate::launch::{DEFAULT_REMOTE_BIN, local_uname, quote, remote_path, sha256_file};

/// `docker`, with `--context` when the declaration names one.
pub(crate) fn docker_base(context: Option<&str>) -> Command {
    let mut cmd = Command::new("docker");
    if let Some(context) = context {
        cmd.args(["--context", context]);
    }
    cmd
}

/// What `sh -c` runs in the container: `remoteBin`, or `kimi-rs` from the PATH with the
/// default install directory appended.
pub(crate) fn exec_line(remote_bin: Option<&str>) -> String {
    match remote_bin {
        Some(bin) => format!("exec {} exec-server", remote_path(bin)),
        None => "PATH=\"$PATH:$HOME/.kimi-rs/bin\" exec kimi-rs exec-server".to_owned(),
    }
}

/// `bin` with a leading `~/` resolved against the container's `home`.
fn absolute(bin: &str, home: &str) -> String {
    match bin.strip_prefix("~/") {
        Some(rest) => format!("{}/{rest}", home.trim_end_matches('/')),
        None => bin.to_owned(),
    }
}

/// The argument lists (after `docker [--context c]`) that copy `exe` to `path` in `container`:
/// make the directory, `docker cp` to a partial file, make it executable and move it into
/// place (so a broken copy never sits at `path`).
fn copy_steps(container: &str, exe: &Path, path: &str) -> Vec<Vec<String>> {
    let partial = format!("{path}.partial");
    let dir = Path::new(path)
        .parent()
        .map_or_else(|| "/".to_owned(), |d| d.display().to_string());
    let s = |v: &str| v.to_owned();
    vec![
        vec![s("exec"), s(container), s("mkdir"), s("-p"), dir],
        vec![
            s("cp"),
            exe.display().to_string(),
            format!("{container}:{partial}"),
        ],
        vec![
            s("exec"),
            s(container),
            s("sh"),
            s("-c"),
            format!(
                "chmod 755 {} && mv -f {} {}",
                quote(&partial),
                quote(&partial),
                quote(path)
            ),
        ],
    ]
}

fn run(context: Option<&str>, args: &[String]) -> Result<String, String> {
    let out = docker_base(context)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run docker: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "`docker {}` failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn in_container(context: Option<&str>, container: &str, script: &str) -> Result<String, String> {
    run(
        context,
        &[
            "exec".to_owned(),
            container.to_owned(),
            "sh".to_owned(),
            "-c".to_owned(),
            script.to_owned(),
        ],
    )
}

/// Copies `exe` into `container` at `remoteBin` (default `~/.kimi-rs/bin/kimi-rs`) with
/// `docker cp` and checks its SHA-256 there; refuses when the container's `uname -s -m`
/// differs from this build.
pub(crate) fn install(
    context: Option<&str>,
    container: &str,
    remote_bin: Option<&str>,
    exe: &Path,
) -> Result<(), String> {
    let uname = in_container(context, container, "uname -s -m")?;
    let mut parts = uname.split_whitespace();
    let (os, arch) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let (local_os, local_arch) = local_uname();
    let bin = remote_bin.unwrap_or(DEFAULT_REMOTE_BIN);
    if os != local_os || !local_arch.contains(&arch) {
        return Err(format!(
            "the container runs {os} {arch} and this kimi-rs is built for {} {}, so it cannot be copied. \
             Install a kimi-rs built for {os} {arch} there: `docker cp kimi-rs {container}:/usr/local/bin/kimi-rs`",
            std::env::consts::OS,
            std::env::consts::ARCH
        ));
    }
    let home = in_container(context, container, "printf %s \"$HOME\"")?;
    if bin.starts_with("~/") && !home.starts_with('/') {
        return Err(format!(
            "the container reports no home directory (HOME={home:?}), so {bin} has no place; set remoteBin to an absolute path"
        ));
    }
    let path = absolute(bin, &home);
    tracing::info!("installing the executor in container {container} at {path}");
    for step in copy_steps(container, exe, &path) {
        run(context, &step)?;
    }
    let expected = sha256_file(exe)?;
    let listed = in_container(
        context,
        container,
        &format!(
            "sha256sum {p} 2>/dev/null || shasum -a 256 {p}",
            p = quote(&path)
        ),
    )?;
    let actual = listed.split_whitespace().next().unwrap_or("");
    if actual != expected {
        let _ = in_container(context, container, &format!("rm -f {}", quote(&path)));
        return Err(format!(
            "the copy at {path} has SHA-256 {actual}, not {expected}; it was removed. Check the disk space in the container and retry"
        ));
    }
    tracing::info!("installed the executor in container {container} at {path} (sha256 {expected})");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    // No Docker daemon runs where these tests run, so the commands are checked as built.
    #[test]
    fn the_launcher_runs_the_executor_through_sh() {
        assert_eq!(
            exec_line(None),
            "PATH=\"$PATH:$HOME/.kimi-rs/bin\" exec kimi-rs exec-server"
        );
        assert_eq!(
            exec_line(Some("~/tools/kimi-rs")),
            "exec \"$HOME\"/'tools/kimi-rs' exec-server"
        );
        assert_eq!(
            exec_line(Some("/opt/kimi-rs")),
            "exec '/opt/kimi-rs' exec-server"
        );
        let decl = kimi_config::environments::EnvironmentDecl {
            id: "box".to_owned(),
            launcher: kimi_config::environments::Launcher::Docker {
                container: "app".to_owned(),
                context: Some("orbstack".to_owned()),
                remote_bin: None,
            },
            default_cwd: None,
            source: "config.toml".into(),
        };
        let cmd = crate::launch::launcher_command(&decl);
        let argv: Vec<String> = std::iter::once(cmd.get_program())
            .chain(cmd.get_args())
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            argv,
            [
                "docker",
                "--context",
                "orbstack",
                "exec",
                "-i",
                "app",
                "sh",
                "-c",
                "PATH=\"$PATH:$HOME/.kimi-rs/bin\" exec kimi-rs exec-server"
            ]
        );
    }

    #[test]
    fn the_copy_lands_in_a_partial_file_then_moves_into_place() {
        let path = absolute(DEFAULT_REMOTE_BIN, "/root/");
        assert_eq!(path, "/root/.kimi-rs/bin/kimi-rs");
        assert_eq!(absolute("/opt/k", "/root"), "/opt/k");
        assert_eq!(
            copy_steps("app", Path::new("/usr/bin/kimi-rs"), &path),
            [
                vec!["exec", "app", "mkdir", "-p", "/root/.kimi-rs/bin"],
                vec![
                    "cp",
                    "/usr/bin/kimi-rs",
                    "app:/root/.kimi-rs/bin/kimi-rs.partial"
                ],
                vec![
                    "exec",
                    "app",
                    "sh",
                    "-c",
                    "chmod 755 '/root/.kimi-rs/bin/kimi-rs.partial' && mv -f '/root/.kimi-rs/bin/kimi-rs.partial' '/root/.kimi-rs/bin/kimi-rs'"
                ],
            ]
        );
    }
}
