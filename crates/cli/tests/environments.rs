//! Execution environments with real components: a second local user, its own `sshd` on
//! 127.0.0.1 (free port, temporary host key, key-only auth), the real binary as both agent and
//! executor. The model is the only scripted part.
//!
//! Needs root (to create the user and run sshd) and `openssh-server` (`.ci/run` installs it).
//! `KIMI_RS_SKIP_ENVIRONMENT_TESTS=1` skips these tests on machines that cannot do either.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{BIN, CORE_FORMATS, Fixture, tool_results, user_texts, wait_until};
use kimi_llm::scripted::ScriptTurn;

const USER: &str = "kimi-rs-env";

/// `None` (after printing why) when the tests are skipped on purpose; a missing prerequisite
/// without the skip variable fails.
fn prerequisites() -> Option<()> {
    if std::env::var("KIMI_RS_SKIP_ENVIRONMENT_TESTS").as_deref() == Ok("1") {
        println!("skipped: KIMI_RS_SKIP_ENVIRONMENT_TESTS=1");
        return None;
    }
    let uid = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| {
            l.strip_prefix("Uid:")
                .map(|r| r.split_whitespace().next().unwrap_or("").to_owned())
        })
        .unwrap();
    assert_eq!(
        uid, "0",
        "the environment tests create a user and run sshd, so they run as root (CI does); \
         set KIMI_RS_SKIP_ENVIRONMENT_TESTS=1 to skip them"
    );
    assert!(
        Path::new("/usr/sbin/sshd").exists(),
        "sshd is missing: install openssh-server (`apt-get install -y openssh-server`; .ci/run does), \
         or set KIMI_RS_SKIP_ENVIRONMENT_TESTS=1"
    );
    ensure_user();
    Some(())
}

fn run_ok(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn ensure_user() {
    // The tests run in parallel processes: one creates the user, the others wait for it.
    let lock = std::fs::File::create(std::env::temp_dir().join("kimi-rs-env-user.lock")).unwrap();
    lock.lock().unwrap();
    let exists = || {
        Command::new("id")
            .args(["-u", USER])
            .output()
            .unwrap()
            .status
            .success()
    };
    if !exists() {
        run_ok(Command::new("useradd").args(["-m", "-s", "/bin/bash", USER]));
    }
    // A new account is locked (`!` password), and sshd refuses locked accounts even for keys:
    // `*` means "no password" without the lock.
    run_ok(Command::new("usermod").args(["-p", "*", USER]));
    std::fs::create_dir_all(user_home()).unwrap();
    run_ok(
        Command::new("chown")
            .arg(format!("{USER}:{USER}"))
            .arg(user_home()),
    );
    lock.unlock().unwrap();
}

fn user_home() -> PathBuf {
    PathBuf::from(format!("/home/{USER}"))
}

fn uid_of_user() -> u32 {
    run_ok(Command::new("id").args(["-u", USER]))
        .trim()
        .parse()
        .unwrap()
}

fn as_user(script: &str) -> String {
    run_ok(Command::new("runuser").args(["-u", USER, "--", "sh", "-c", script]))
}

/// A fresh working directory of the test user (removed on drop).
struct RemoteDir(PathBuf);

impl RemoteDir {
    fn new() -> RemoteDir {
        let dir = user_home().join(format!("w-{}", uuid_like()));
        as_user(&format!("mkdir -p '{}'", dir.display()));
        RemoteDir(dir)
    }
}

impl Drop for RemoteDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn uuid_like() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{}-{nanos}", std::process::id())
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// An sshd of its own for the test user, and the ssh client config that reaches it.
struct Sshd {
    dir: tempfile::TempDir,
    child: Child,
    port: u16,
}

impl Sshd {
    fn start() -> Sshd {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // sshd reads authorized_keys as the user: the directory must be traversable.
        run_ok(Command::new("chmod").arg("755").arg(d));
        for key in ["host_key", "client_key"] {
            run_ok(
                Command::new("ssh-keygen")
                    .args(["-q", "-t", "ed25519", "-N", ""])
                    .arg("-f")
                    .arg(d.join(key)),
            );
        }
        std::fs::copy(d.join("client_key.pub"), d.join("authorized_keys")).unwrap();
        run_ok(
            Command::new("chmod")
                .arg("644")
                .arg(d.join("authorized_keys")),
        );
        std::fs::create_dir_all("/run/sshd").unwrap();
        let port = free_port();
        std::fs::write(
            d.join("sshd_config"),
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\nPidFile {d}/sshd.pid\n\
                 AuthorizedKeysFile {d}/authorized_keys\nStrictModes no\nPasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\nPubkeyAuthentication yes\nUsePAM no\nAllowUsers {USER}\n\
                 LogLevel ERROR\n",
                d = d.display()
            ),
        )
        .unwrap();
        std::fs::write(
            d.join("ssh_config"),
            format!(
                "Host kimi-target\n  HostName 127.0.0.1\n  Port {port}\n  User {USER}\n  IdentityFile {d}/client_key\n  \
                 IdentitiesOnly yes\n  UserKnownHostsFile {d}/known_hosts\n  LogLevel ERROR\n",
                d = d.display()
            ),
        )
        .unwrap();
        let child = Command::new("/usr/sbin/sshd")
            .args(["-D", "-e", "-f"])
            .arg(d.join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_until("sshd to listen", || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        Sshd { dir, child, port }
    }

    fn ssh_config(&self) -> PathBuf {
        self.dir.path().join("ssh_config")
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A copy of the binary the test user may run (the build directory may be private to root).
fn executor_copy() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    run_ok(Command::new("chmod").arg("755").arg(dir.path()));
    let bin = dir.path().join("kimi-rs");
    std::fs::copy(BIN, &bin).unwrap();
    run_ok(Command::new("chmod").arg("755").arg(&bin));
    (dir, bin)
}

fn write_config(fx: &Fixture, environments: &str) {
    std::fs::write(fx.home.path().join("config.toml"), environments).unwrap();
}

fn ssh_entry(id: &str, sshd: &Sshd, cwd: &Path, remote_bin: Option<&Path>) -> String {
    let bin = remote_bin.map_or_else(String::new, |b| {
        format!("remoteBin = \"{}\"\n", b.display())
    });
    format!(
        "[environments.{id}]\ntype = \"ssh\"\nhost = \"kimi-target\"\nsshArgs = [\"-F\", \"{}\"]\ndefaultCwd = \"{}\"\n{bin}",
        sshd.ssh_config().display(),
        cwd.display()
    )
}

fn local_entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn results_by_id(fx: &Fixture) -> Vec<(String, String)> {
    fx.requests()
        .last()
        .map(|r| tool_results(&r.body))
        .unwrap_or_default()
}

fn result_of<'a>(results: &'a [(String, String)], id: &str) -> &'a str {
    &results
        .iter()
        .find(|(i, _)| i == id)
        .unwrap_or_else(|| panic!("no result for {id}: {results:#?}"))
        .1
}

fn owner_uid(path: &Path) -> u32 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).unwrap().uid()
}

#[test]
fn ssh_environment_runs_every_tool_on_the_target_installs_the_executor_and_resumes_there() {
    if prerequisites().is_none() {
        return;
    }
    let format = CORE_FORMATS[0];
    let sshd = Sshd::start();
    let remote = RemoteDir::new();
    as_user(&format!(
        "cd '{}' && printf 'first line\\nneedle here\\n' > notes.txt && mkdir -p src && echo 'fn needle() {{}}' > src/lib.rs",
        remote.0.display()
    ));
    // The executor is installed by copying the running binary.
    let installed = user_home().join(".kimi-rs/bin/kimi-rs");
    let _ = std::fs::remove_file(&installed);
    let fx = Fixture::new(
        format,
        vec![
            ScriptTurn::tool_calls(&[
                (
                    "c_bash",
                    "Bash",
                    r#"{"command":"echo \"$(whoami) in $(pwd)\""}"#,
                ),
                ("c_read", "Read", r#"{"path":"notes.txt"}"#),
                ("c_glob", "Glob", r#"{"pattern":"**/*.rs"}"#),
                (
                    "c_grep",
                    "Grep",
                    r#"{"pattern":"needle","output_mode":"content"}"#,
                ),
            ]),
            ScriptTurn::tool_calls(&[
                (
                    "c_write",
                    "Write",
                    r#"{"path":"made.txt","content":"made remotely\n"}"#,
                ),
                (
                    "c_edit",
                    "Edit",
                    r#"{"path":"notes.txt","old_string":"first line","new_string":"edited line"}"#,
                ),
            ]),
            ScriptTurn::text("Done on the target."),
        ],
    );
    write_config(&fx, &ssh_entry("box", &sshd, &remote.0, None));
    let before = local_entries(&fx.cwd());
    let run = fx.run(&["-p", "work on the box", "--environment", "box"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stdout.contains("Done on the target."), "{run:?}");

    let results = results_by_id(&fx);
    let canon = std::fs::canonicalize(&remote.0).unwrap();
    assert_eq!(
        result_of(&results, "c_bash").trim_end(),
        format!("{USER} in {}", canon.display()),
        "Bash ran as the target user in defaultCwd"
    );
    assert!(
        result_of(&results, "c_read").contains("2\tneedle here"),
        "{results:#?}"
    );
    assert_eq!(
        result_of(&results, "c_glob").trim(),
        canon.join("src/lib.rs").display().to_string()
    );
    let grep = result_of(&results, "c_grep");
    assert!(
        grep.contains(&format!(
            "{}:2:needle here",
            canon.join("notes.txt").display()
        )),
        "{grep}"
    );
    assert!(grep.contains("fn needle()"), "{grep}");
    assert!(
        result_of(&results, "c_write").starts_with("Wrote 14 bytes"),
        "{results:#?}"
    );
    assert!(
        result_of(&results, "c_edit").starts_with("Replaced 1"),
        "{results:#?}"
    );

    // The files are the target user's, in its directory; nothing was written here.
    assert_eq!(
        std::fs::read_to_string(canon.join("made.txt")).unwrap(),
        "made remotely\n"
    );
    assert_eq!(owner_uid(&canon.join("made.txt")), uid_of_user());
    assert_eq!(
        std::fs::read_to_string(canon.join("notes.txt")).unwrap(),
        "edited line\nneedle here\n"
    );
    assert_eq!(local_entries(&fx.cwd()), before);

    // The executor was copied into place and is the running binary.
    assert!(
        installed.exists(),
        "the executor was installed at {}",
        installed.display()
    );
    assert_eq!(
        std::fs::read(&installed).unwrap().len(),
        std::fs::metadata(BIN).unwrap().len() as usize
    );
    assert_eq!(owner_uid(&installed), uid_of_user());

    // The binding and the reminder are journaled; the model saw the reminder.
    let ids = fx.session_ids();
    let session = ids.last().unwrap().clone();
    let journal = fx.journal(&session);
    let bind = journal
        .iter()
        .find(|r| r["type"] == "environment.bind")
        .expect("environment.bind journaled");
    assert_eq!(bind["id"], "box");
    assert_eq!(bind["kind"], "ssh");
    assert_eq!(bind["cwd"], remote.0.display().to_string());
    let first = &fx.requests()[0];
    assert!(
        user_texts(&first.body)
            .iter()
            .any(|t| t.contains("remote environment `box`")
                && t.contains(&remote.0.display().to_string())),
        "{:#?}",
        user_texts(&first.body)
    );

    // `-S` reconnects to the same target and directory.
    fx.server.push(ScriptTurn::tool_calls(&[(
        "c_again",
        "Bash",
        r#"{"command":"cat made.txt; whoami"}"#,
    )]));
    fx.server.push(ScriptTurn::text("Still there."));
    let run = fx.run(&["-S", &session, "-p", "again"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let results = results_by_id(&fx);
    assert_eq!(
        result_of(&results, "c_again").trim_end(),
        format!("made remotely\n{USER}")
    );
    assert_eq!(local_entries(&fx.cwd()), before);
}

#[test]
fn an_unreachable_target_fails_start_up_naming_the_environment_and_runs_nothing() {
    if prerequisites().is_none() {
        return;
    }
    let fx = Fixture::new(CORE_FORMATS[0], vec![ScriptTurn::text("never")]);
    let dir = tempfile::tempdir().unwrap();
    // A port nobody listens on.
    let port = free_port();
    std::fs::write(
        dir.path().join("ssh_config"),
        format!("Host down\n  HostName 127.0.0.1\n  Port {port}\n  UserKnownHostsFile /dev/null\n"),
    )
    .unwrap();
    write_config(
        &fx,
        &format!(
            "[environments.downbox]\ntype = \"ssh\"\nhost = \"down\"\nsshArgs = [\"-F\", \"{}\"]\ndefaultCwd = \"/tmp\"\n",
            dir.path().join("ssh_config").display()
        ),
    );
    let started = Instant::now();
    let run = fx.run(&["-p", "hello", "--environment", "downbox"]);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(run.stderr.contains("environment `downbox`"), "{run:?}");
    assert!(run.stderr.contains("exit code 255"), "{run:?}");
    assert!(fx.requests().is_empty(), "no model request, no tool ran");
    assert!(fx.session_ids().is_empty(), "no session was created");

    // An unknown id fails the same way, naming what is declared.
    let run = fx.run(&["-p", "hello", "--environment", "nope"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(run.stderr.contains("unknown environment `nope`"), "{run:?}");
    assert!(run.stderr.contains("downbox"), "{run:?}");
    // And it is refused with -S.
    let run = fx.run(&["-S", "x", "-p", "hello", "--environment", "downbox"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(
        run.stderr.contains("--environment binds a new session"),
        "{run:?}"
    );
}

#[test]
fn a_command_launcher_runs_the_executor_as_another_user() {
    if prerequisites().is_none() {
        return;
    }
    let (_bin_dir, bin) = executor_copy();
    let remote = RemoteDir::new();
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![
            ScriptTurn::tool_calls(&[
                (
                    "c_write",
                    "Write",
                    r#"{"path":"out.txt","content":"hello\n"}"#,
                ),
                ("c_bash", "Bash", r#"{"command":"whoami; echo $HOME"}"#),
            ]),
            ScriptTurn::text("ok"),
        ],
    );
    write_config(
        &fx,
        &format!(
            "[environments]\ndefault = \"runas\"\n[environments.runas]\ncommand = \"runuser\"\nargs = [\"-u\", \"{USER}\", \"--\", \"{}\", \"exec-server\"]\ndefaultCwd = \"{}\"\n",
            bin.display(),
            remote.0.display()
        ),
    );
    // No flag: `default` binds the new session.
    let run = fx.run(&["-p", "go"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let results = results_by_id(&fx);
    let bash = result_of(&results, "c_bash");
    assert!(bash.starts_with(USER), "{bash}");
    assert_eq!(owner_uid(&remote.0.join("out.txt")), uid_of_user());
    assert!(!fx.cwd().join("out.txt").exists());
}

fn processes_with(marker: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            std::fs::read(e.path().join("cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(marker))
        })
        .filter(|e| {
            // Not a zombie.
            std::fs::read_to_string(e.path().join("stat"))
                .ok()
                .and_then(|s| {
                    s.rsplit_once(')')
                        .map(|(_, r)| r.trim_start().starts_with('Z'))
                })
                == Some(false)
        })
        .count()
}

#[test]
fn a_dropped_connection_ends_the_running_bash_kills_it_on_the_target_and_later_calls_fail() {
    if prerequisites().is_none() {
        return;
    }
    let (_bin_dir, bin) = executor_copy();
    let sshd = Sshd::start();
    let remote = RemoteDir::new();
    let marker = format!("{}", 3_000_000 + std::process::id());
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![
            ScriptTurn::tool_calls(&[(
                "c_long",
                "Bash",
                &format!(r#"{{"command":"echo started; sleep {marker}"}}"#),
            )]),
            ScriptTurn::tool_calls(&[("c_after", "Read", r#"{"path":"x.txt"}"#)]),
            ScriptTurn::text("gave up"),
        ],
    );
    write_config(&fx, &ssh_entry("box", &sshd, &remote.0, Some(&bin)));
    let child = fx.spawn(&["-p", "run it", "--environment", "box"]);
    // bash may exec the last command, so the marker is matched alone.
    let sleep = marker;
    wait_until("the command to run on the target", || {
        processes_with(&sleep) > 0
    });
    // Drop the connection: end the ssh client that carries it.
    let config = sshd.ssh_config().display().to_string();
    let ssh_pids: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            std::fs::read(e.path().join("cmdline")).is_ok_and(|c| {
                let c = String::from_utf8_lossy(&c);
                c.starts_with("ssh\0") && c.contains(&config)
            })
        })
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!ssh_pids.is_empty());
    for pid in &ssh_pids {
        run_ok(Command::new("kill").args(["-9", pid]));
    }
    let run = common::wait_child(child);
    assert_eq!(run.code, Some(0), "{run:?}");
    wait_until("the target's command to be killed", || {
        processes_with(&sleep) == 0
    });
    let requests = fx.requests();
    let long = tool_results(&requests[1].body);
    let text = result_of(&long, "c_long");
    assert!(text.contains("environment.unavailable"), "{text}");
    let after = tool_results(&requests[2].body);
    let text = result_of(&after, "c_after");
    assert!(text.contains("environment.unavailable"), "{text}");
    assert!(text.contains("Nothing was run on this machine"), "{text}");
    let _ = sshd.port;
}

#[test]
fn a_web_terminal_on_an_ssh_bound_session_is_a_shell_of_the_target_user() {
    if prerequisites().is_none() {
        return;
    }
    let (_bin_dir, bin) = executor_copy();
    let sshd = Sshd::start();
    let remote = RemoteDir::new();
    let fx = Fixture::new(CORE_FORMATS[0], vec![]);
    write_config(&fx, &ssh_entry("box", &sshd, &remote.0, Some(&bin)));
    let server =
        common::web_client::WebServer::start(fx.command(&["web", "--port", "0", "--no-open"]));
    let created = server.call(
        "POST",
        "/api/v1/sessions",
        serde_json::json!({"metadata": {"cwd": fx.cwd(), "environment": "box"}}),
    );
    assert_eq!(created["code"], 0, "{created}");
    let session = created["data"]["id"].as_str().unwrap().to_owned();
    let canon = std::fs::canonicalize(&remote.0).unwrap();
    let whoami = format!("<{USER} in {}>", canon.display());
    let checks = [("echo \"<$(id -un) in $(pwd)>\"", whoami.as_str())];
    let (closed, output) = common::terminal_client::client_runtime()
        .block_on(common::terminal_client::echo_hi(&server, &session, &checks));
    assert_eq!(closed["environment"], "ssh:box", "{closed}");
    assert!(
        common::terminal_client::screen_lines(output.as_bytes()).contains(&"hi".to_owned()),
        "{output}"
    );
}
