//! `[sandbox] mode = "workspace-write"` end to end on the real binary: Bash in print mode with a
//! scripted model on loopback writing inside and outside the workspace, and `kimi-rs sandbox --
//! CMD` against escapes a hostile command would try (Unix sockets by path and abstract name,
//! datagram socketpairs, x32 system calls, signals to outside processes), each next to a control
//! run without the sandbox that shows the escape is real. Where the kernel has no Landlock the
//! tests fail, unless `KIMI_RS_SKIP_SANDBOX_TESTS=1` says to skip.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // helpers outside #[test] fns count as tests here

mod common;

use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram, UnixListener};
use std::process::{Child, Command as StdCommand, Stdio};

use assert_cmd::Command;
use common::{BIN, Run, wait_child};
use kimi_llm::scripted::ScriptTurn;
use kimi_test_support::ScriptServer;

/// Runs commands through `kimi-rs sandbox --` from a temp workspace with a temp home.
struct Sandbox {
    home: tempfile::TempDir,
    work: tempfile::TempDir,
}

impl Sandbox {
    /// `None` when the sandbox is missing and `KIMI_RS_SKIP_SANDBOX_TESTS=1` says to skip; a
    /// missing sandbox fails the test otherwise.
    fn new() -> Option<Sandbox> {
        let sandbox = Sandbox::unprobed();
        let probe = sandbox.run(&["true"]);
        if probe.code != Some(0) {
            assert!(probe.stderr.contains("not available"), "{probe:?}");
            if kimi_test_support::sandbox::skip_unless_supported(Some(&probe.stderr)) {
                return None;
            }
        }
        Some(sandbox)
    }

    fn unprobed() -> Sandbox {
        Sandbox {
            home: tempfile::tempdir().unwrap(),
            work: tempfile::tempdir().unwrap(),
        }
    }

    fn run(&self, argv: &[&str]) -> Run {
        self.spawn(StdCommand::new(BIN).args(["sandbox", "--"]).args(argv))
    }

    /// The same command without the sandbox: the control that shows an escape is real.
    fn run_unsandboxed(&self, argv: &[&str]) -> Run {
        self.spawn(StdCommand::new(argv[0]).args(&argv[1..]))
    }

    fn spawn(&self, cmd: &mut StdCommand) -> Run {
        cmd.current_dir(self.work.path())
            .env("KIMI_RS_HOME", self.home.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        wait_child(cmd.spawn().unwrap_or_else(|e| {
            panic!("cannot start {:?} (is it on PATH?): {e}", cmd.get_program())
        }))
    }
}

/// Kills and reaps a process the test started when the test ends, also when it panics.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Connects to the stream socket at `argv[1]` (`argv[2]` = `path` or `abstract`) and sends
/// `hello`; a refused `socket()` or `connect()` ends with a Python traceback and exit 1.
const STREAM_CLIENT: &str = r#"
import socket, sys
addr = sys.argv[1] if sys.argv[2] == "path" else "\0" + sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(addr)
s.sendall(b"hello")
print("connected")
"#;

/// Sends to the datagram socket at `argv[1]` from one end of a datagram socketpair: no
/// `socket()` call, and the pair is already connected, yet Linux delivers to the address given.
const DGRAM_PAIR_CLIENT: &str = r#"
import socket, sys
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
a.sendto(b"hello", sys.argv[1])
print("sent")
"#;

/// True when the listener has a pending connection (it is non-blocking).
fn was_reached(listener: &UnixListener) -> bool {
    listener.set_nonblocking(true).unwrap();
    match listener.accept() {
        Ok(_) => true,
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => false,
        Err(e) => panic!("accept: {e}"),
    }
}

fn refused(run: &Run) -> bool {
    run.code != Some(0) && run.stderr.contains("Operation not permitted")
}

#[test]
fn unix_socket_servers_outside_are_unreachable_by_path() {
    let Some(sandbox) = Sandbox::new() else {
        return;
    };
    // A server outside the workspace and the temp dirs, as the docker or D-Bus socket would be.
    let outside = kimi_test_support::sandbox::outside_dir();
    let path = outside.path().join("server.sock");
    let listener = UnixListener::bind(&path).unwrap();
    let path = path.to_str().unwrap();
    let client = ["python3", "-c", STREAM_CLIENT, path, "path"];

    let control = sandbox.run_unsandboxed(&client);
    assert_eq!(control.stdout, "connected\n", "{control:?}");
    assert!(was_reached(&listener), "the control connects");

    let run = sandbox.run(&client);
    assert!(refused(&run), "{run:?}");
    assert!(
        !was_reached(&listener),
        "the sandboxed client must not connect: {run:?}"
    );

    // A datagram socketpair could send to a named socket outside without calling socket().
    let dgram_path = outside.path().join("journal.sock");
    let server = UnixDatagram::bind(&dgram_path).unwrap();
    server.set_nonblocking(true).unwrap();
    let client = [
        "python3",
        "-c",
        DGRAM_PAIR_CLIENT,
        dgram_path.to_str().unwrap(),
    ];
    let control = sandbox.run_unsandboxed(&client);
    assert_eq!(control.stdout, "sent\n", "{control:?}");
    let mut buf = [0u8; 16];
    assert_eq!(
        server.recv(&mut buf).unwrap(),
        5,
        "the control's datagram arrives"
    );
    let run = sandbox.run(&client);
    assert!(refused(&run), "{run:?}");
    assert_eq!(
        server.recv(&mut buf).unwrap_err().kind(),
        std::io::ErrorKind::WouldBlock,
        "no datagram from the sandbox: {run:?}"
    );
}

#[test]
fn abstract_unix_sockets_outside_are_unreachable() {
    let Some(sandbox) = Sandbox::new() else {
        return;
    };
    let name = format!("kimi-rs-test-abstract-{}", std::process::id());
    let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let listener = UnixListener::bind_addr(&addr).unwrap();
    let client = ["python3", "-c", STREAM_CLIENT, &name, "abstract"];

    let control = sandbox.run_unsandboxed(&client);
    assert_eq!(control.stdout, "connected\n", "{control:?}");
    assert!(was_reached(&listener), "the control connects");

    let run = sandbox.run(&client);
    assert!(refused(&run), "{run:?}");
    assert!(
        !was_reached(&listener),
        "the sandboxed client must not connect: {run:?}"
    );
}

/// x86_64's x32 system calls have their own numbers; the filter must refuse them too.
#[cfg(target_arch = "x86_64")]
#[test]
fn x32_socket_calls_are_refused_too() {
    let Some(sandbox) = Sandbox::new() else {
        return;
    };
    // socket(AF_INET, SOCK_STREAM, 0) through the x32 number; prints "<result> <errno>".
    let script = "import ctypes\n\
                  libc = ctypes.CDLL(None, use_errno=True)\n\
                  r = libc.syscall(0x40000000 + 41, 2, 1, 0)\n\
                  print(r, ctypes.get_errno())";
    let control = sandbox.run_unsandboxed(&["python3", "-c", script]);
    assert_eq!(control.code, Some(0), "{control:?}");
    // Without the sandbox: a socket, or ENOSYS where the kernel has no x32 support.
    assert_ne!(control.stdout, "-1 1\n", "{control:?}");
    let run = sandbox.run(&["python3", "-c", script]);
    assert_eq!(run.stdout, "-1 1\n", "refused with EPERM (1): {run:?}");
}

#[test]
fn signals_cannot_reach_processes_outside() {
    let Some(sandbox) = Sandbox::new() else {
        return;
    };
    let outside = Reaped(
        StdCommand::new("sleep")
            .arg("1000")
            .stdin(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let pid = outside.0.id().to_string();
    // Control: without the sandbox the process can be signalled (signal 0 only checks).
    let control = sandbox.run_unsandboxed(&["sh", "-c", &format!("kill -0 {pid}")]);
    assert_eq!(control.code, Some(0), "{control:?}");

    let run = sandbox.run(&["sh", "-c", &format!("kill -TERM {pid}")]);
    assert!(refused(&run), "{run:?}");
    let mut outside = outside;
    assert!(
        outside.0.try_wait().unwrap().is_none(),
        "the outside process must survive: {run:?}"
    );
}

#[test]
fn inside_the_sandbox_children_can_be_signalled_and_socketpairs_work() {
    let Some(sandbox) = Sandbox::new() else {
        return;
    };
    // `wait` reports 143 = 128 + SIGTERM when the kill reached the child. The child's output
    // goes to /dev/null so that, were the kill refused, it would not hold the pipes open.
    let run = sandbox.run(&[
        "sh",
        "-c",
        "sleep 60 >/dev/null 2>&1 & child=$!; kill -TERM \"$child\" && wait \"$child\"; \
         echo \"status=$?\"",
    ]);
    assert_eq!(run.stdout, "status=143\n", "{run:?}");
    let pair = "import socket\n\
                a, b = socket.socketpair()\n\
                a.sendall(b'ping')\n\
                print(b.recv(4).decode())";
    let run = sandbox.run(&["python3", "-c", pair]);
    assert_eq!(run.stdout, "ping\n", "{run:?}");
}

#[test]
fn status_lists_every_protection() {
    let run = Sandbox::unprobed().spawn(StdCommand::new(BIN).args(["sandbox", "--status"]));
    let available = !run.stdout.contains("NOT available");
    if !available && kimi_test_support::sandbox::skip_unless_supported(Some(&run.stdout)) {
        return;
    }
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stdout.starts_with("Landlock ABI "), "{run:?}");
    for protection in [
        "filesystem",
        "network",
        "Unix sockets by path",
        "abstract Unix sockets",
        "signals to outside processes",
    ] {
        assert!(
            run.stdout
                .lines()
                .any(|l| l.starts_with(protection)
                    && (l.contains("in force") || l.contains("MISSING"))),
            "{protection}: {run:?}"
        );
    }
}

#[tokio::test]
async fn bash_under_the_sandbox_writes_inside_the_workspace_only() {
    if Sandbox::new().is_none() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    std::fs::create_dir(work.path().join("sub")).unwrap();
    std::fs::create_dir(work.path().join(".git")).unwrap();
    std::fs::write(work.path().join(".git/config"), "[core]\n").unwrap();
    let home = tempfile::tempdir().unwrap();
    // Outside the workspace, the temp dirs and the checkout, wherever the checkout lives.
    let outside = kimi_test_support::sandbox::outside_dir();
    let target = outside.path().join("escaped.txt");
    std::fs::write(
        home.path().join("config.toml"),
        // The allow rule names these `echo` commands, so the protected floor lets them through
        // and the kernel's sandbox is what stops the writes.
        "[sandbox]\nmode = \"workspace-write\"\n\n[[permission.rules]]\ndecision = \"allow\"\n\
         pattern = \"Bash(echo *)\"\n",
    )
    .unwrap();
    let outside_cmd =
        serde_json::json!({"command": format!("echo no > {}", target.display())}).to_string();
    let server = ScriptServer::start(vec![
        ScriptTurn::tool_calls(&[
            (
                "c1",
                "Bash",
                r#"{"command":"echo yes > sub/inside.txt && echo top > top.txt"}"#,
            ),
            ("c2", "Bash", &outside_cmd),
            ("c3", "Bash", r#"{"command":"echo hacked > .git/config"}"#),
        ]),
        ScriptTurn::text("done"),
    ])
    .await
    .unwrap();
    let base_url = server.base_url();
    let work_path = work.path().to_owned();
    let home_path = home.path().to_owned();
    let output = tokio::task::spawn_blocking(move || {
        Command::cargo_bin("kimi-rs")
            .unwrap()
            .current_dir(&work_path)
            .env("KIMI_RS_HOME", &home_path)
            .env("KIMI_MODEL_NAME", "m")
            .env("KIMI_MODEL_API_KEY", "k")
            .env("KIMI_MODEL_PROVIDER_TYPE", "openai")
            .env("KIMI_MODEL_BASE_URL", format!("{base_url}/v1"))
            .args(["-p", "write two files", "--output-format", "stream-json"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(work.path().join("sub/inside.txt").exists(), "{stdout}");
    assert!(
        work.path().join("top.txt").exists(),
        "new files at the workspace root are allowed: {stdout}"
    );
    assert_eq!(
        std::fs::read_to_string(work.path().join(".git/config")).unwrap(),
        "[core]\n",
        "`.git` stays read-only: {stdout}"
    );
    assert!(
        !target.exists(),
        "a write outside the workspace must fail: {stdout}"
    );
    assert!(stdout.contains("Permission denied"), "{stdout}");
}
