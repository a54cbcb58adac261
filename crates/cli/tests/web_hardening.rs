//! `kimi-rs web` hardening, end to end with the real binary and its default limits: health
//! checks answer while 250 sockets sit idle or trickle (under macOS's default open-files limit),
//! WebSocket upgrades check Origin, an exposed token file is rotated, the browser launcher never
//! sees the token, and listening on every interface is warned about with the addresses.

#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::{CORE_FORMATS, Fixture, WAIT, wait_until};
use serde_json::Value;
use tokio_tungstenite::tungstenite;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

struct Server {
    child: Child,
    port: u16,
    token: String,
    /// What it printed on stderr up to "press Ctrl-C to stop".
    banner: Vec<String>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn start(mut command: Command) -> Server {
        let mut child = command
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut banner = Vec::new();
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                let done = line == "kimi-rs web: press Ctrl-C to stop";
                banner.push(line);
                if done {
                    let _ = tx.send(std::mem::take(&mut banner));
                }
            }
            // Whatever came after the banner, for a test that waits for more.
            let _ = tx.send(banner);
        });
        let banner = rx.recv_timeout(WAIT).expect("the server started");
        let url = banner
            .iter()
            .find_map(|l| l.strip_prefix("kimi-rs web: serving on http://127.0.0.1:"))
            .unwrap_or_else(|| panic!("no URL in {banner:#?}"));
        let (port, token) = url.split_once("/#token=").unwrap();
        Server {
            child,
            port: port.parse().unwrap(),
            token: token.to_owned(),
            banner,
        }
    }

    /// One request on a new connection: (status, body as JSON) and how long it took.
    fn get(&self, path: &str, token: &str) -> (u16, Value, Duration) {
        let started = Instant::now();
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream.set_read_timeout(Some(WAIT)).unwrap();
        let request = format!(
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n",
            self.port
        );
        stream.write_all(request.as_bytes()).unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        let status = response[9..12].parse().unwrap();
        let (_, body) = response.split_once("\r\n\r\n").unwrap();
        (
            status,
            serde_json::from_str(body).unwrap(),
            started.elapsed(),
        )
    }
}

fn web(fx: &Fixture, args: &[&str]) -> Command {
    let mut all = vec!["web", "--port", "0"];
    all.extend_from_slice(args);
    fx.command(&all)
}

#[test]
fn healthz_answers_promptly_while_250_sockets_sit_idle_or_trickle() {
    let fx = Fixture::new(CORE_FORMATS[0], vec![]);
    // macOS starts processes with a soft limit of 256 open files: without raising it, 250
    // sockets leave no descriptor to accept the health check with.
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(r#"ulimit -S -n 256 && exec "$0" "$@""#)
        .arg(common::BIN)
        .args(["web", "--port", "0", "--no-open"]);
    for (name, value) in web(&fx, &[]).get_envs() {
        if let Some(value) = value {
            command.env(name, value);
        }
    }
    command.current_dir(fx.cwd());
    let server = Server::start(command);

    let mut idle = Vec::new();
    for _ in 0..200 {
        idle.push(TcpStream::connect(("127.0.0.1", server.port)).unwrap());
    }
    let mut trickling = Vec::new();
    for _ in 0..50 {
        trickling.push(TcpStream::connect(("127.0.0.1", server.port)).unwrap());
    }
    let stop = Arc::new(AtomicBool::new(false));
    let trickler = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let request = b"GET /api/v1/healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n";
            let mut at = 0;
            while !stop.load(Ordering::SeqCst) && at < request.len() {
                for stream in &mut trickling {
                    let _ = stream.write_all(&request[at..=at]);
                }
                at += 1;
                // The pace of the attack, not a wait for anything.
                std::thread::sleep(Duration::from_millis(20));
            }
            trickling
        })
    };

    let (status, health, took) = server.get("/api/v1/healthz", &server.token);
    assert_eq!((status, &health["data"]["ok"]), (200, &Value::Bool(true)));
    assert!(took < Duration::from_secs(5), "healthz took {took:?}");
    let (status, meta, took) = server.get("/api/v1/meta", &server.token);
    assert_eq!(status, 200, "{meta}");
    assert!(took < Duration::from_secs(5), "meta took {took:?}");
    stop.store(true, Ordering::SeqCst);
    let trickling = trickler.join().unwrap();
    assert_eq!(idle.len() + trickling.len(), 250);
}

type WsResult = Result<
    (
        tokio_tungstenite::WebSocketStream<
            tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
        >,
        tungstenite::handshake::client::Response,
    ),
    tungstenite::Error,
>;

async fn upgrade(server: &Server, origin: Option<&str>) -> WsResult {
    let mut request = format!("ws://127.0.0.1:{}/api/v1/ws", server.port)
        .into_client_request()
        .unwrap();
    let headers = request.headers_mut();
    headers.insert(
        "Sec-WebSocket-Protocol",
        format!("kimi-code.bearer.{}", server.token)
            .parse()
            .unwrap(),
    );
    if let Some(origin) = origin {
        headers.insert("Origin", origin.parse().unwrap());
    }
    tokio::time::timeout(WAIT, tokio_tungstenite::connect_async(request))
        .await
        .expect("the handshake ended in time")
}

#[test]
fn a_websocket_from_a_foreign_origin_is_refused_and_the_own_page_or_no_origin_is_not() {
    let fx = Fixture::new(CORE_FORMATS[0], vec![]);
    let server = Server::start(web(&fx, &["--no-open"]));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let own = format!("http://127.0.0.1:{}", server.port);
        for origin in [None, Some(own.as_str())] {
            let (_socket, response) = upgrade(&server, origin).await.unwrap();
            assert_eq!(response.status(), 101, "{origin:?}");
        }
        let other_port = format!("http://127.0.0.1:{}", server.port + 1);
        for origin in ["http://evil.example.com", "null", other_port.as_str()] {
            let Err(tungstenite::Error::Http(response)) = upgrade(&server, Some(origin)).await
            else {
                panic!("{origin}: the upgrade was not refused with an HTTP answer");
            };
            assert_eq!(response.status(), 403, "{origin}");
            let body: Value = serde_json::from_slice(response.body().as_deref().unwrap()).unwrap();
            assert_eq!(body["code"], 40302, "{body}");
            assert!(body["msg"].as_str().unwrap().contains(origin), "{body}");
            assert_eq!(body["request_id"].as_str().unwrap().len(), 26);
        }
    });
}

#[test]
fn an_exposed_token_file_is_rotated_to_a_private_one() {
    let fx = Fixture::new(CORE_FORMATS[0], vec![]);
    let path = fx.home.path().join("server.token");
    std::fs::write(&path, "old-shared-token\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let server = Server::start(web(&fx, &["--no-open"]));

    let notices: Vec<&String> = server
        .banner
        .iter()
        .filter(|l| l.contains("rotated the server token"))
        .collect();
    assert_eq!(notices.len(), 1, "{:#?}", server.banner);
    assert!(notices[0].contains("mode 644"), "{}", notices[0]);
    assert_ne!(server.token, "old-shared-token");
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        format!("{}\n", server.token)
    );
    assert_eq!(server.get("/api/v1/meta", "old-shared-token").0, 401);
    assert_eq!(server.get("/api/v1/meta", &server.token).0, 200);
    // A loopback server has nothing to warn about.
    assert!(
        !server.banner.iter().any(|l| l.contains("warning")),
        "{:#?}",
        server.banner
    );
}

#[test]
fn the_browser_launcher_gets_the_page_url_and_never_the_token() {
    let fx = Fixture::new(CORE_FORMATS[0], vec![]);
    let bin = fx.work.path().join("fake-bin");
    std::fs::create_dir(&bin).unwrap();
    let opened = fx.work.path().join("opened.txt");
    // Records its arguments, one per line, written whole before they are seen.
    let script =
        "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$OPENED.tmp\" && mv \"$OPENED.tmp\" \"$OPENED\"\n";
    for name in ["xdg-open", "open"] {
        let path = bin.join(name);
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let mut command = web(&fx, &[]);
    let path = std::env::var("PATH").unwrap_or_default();
    command
        .env("PATH", format!("{}:{path}", bin.display()))
        .env("OPENED", &opened)
        .env_remove("BROWSER");
    let server = Server::start(command);

    wait_until("the browser launcher ran", || opened.exists());
    let args = std::fs::read_to_string(&opened).unwrap();
    assert_eq!(args, format!("http://127.0.0.1:{}/\n", server.port));
    assert!(!args.contains(&server.token));
    // The terminal still has the whole URL.
    assert!(
        server
            .banner
            .iter()
            .any(|l| l.ends_with(&format!("#token={}", server.token)))
    );
}

#[test]
fn listening_on_every_interface_warns_and_lists_the_addresses() {
    let fx = Fixture::new(CORE_FORMATS[0], vec![]);
    let server = Server::start(web(&fx, &["--host", "0.0.0.0", "--no-open"]));
    let banner = server.banner.join("\n");
    assert!(
        banner.contains(&format!(
            "kimi-rs web: warning: listening on 0.0.0.0:{}, so other machines can reach this server",
            server.port
        )),
        "{banner}"
    );
    let addresses: Vec<String> = if_addrs::get_if_addrs()
        .unwrap()
        .iter()
        .filter(|i| i.ip().is_ipv4() && !i.is_loopback())
        .map(|i| {
            format!(
                "kimi-rs web: reachable at http://{}:{}/",
                i.ip(),
                server.port
            )
        })
        .collect();
    for line in &addresses {
        assert!(
            banner.contains(line.as_str()),
            "{line} missing from\n{banner}"
        );
    }
    if addresses.is_empty() {
        assert!(
            banner.contains("no network interface has an address"),
            "{banner}"
        );
    }
    assert!(!banner.contains("reachable at http://127."), "{banner}");
    // Loopback still works, through the printed URL.
    assert_eq!(server.get("/api/v1/meta", &server.token).0, 200);
}
