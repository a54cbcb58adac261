//! `kimi-rs vis [SESSION]`: the session visualizer (surface.md §2, the reference's `kimi vis`).
//! A small HTTP server on the loopback interface serves one self-contained page (inline SVG,
//! JS and CSS; nothing is fetched from elsewhere) and the session's data as JSON, read again
//! from the journals on every request so a session still running can be followed by reloading.
//! It reads only; the session is not opened, so it can be looked at while a kimi-rs uses it.

pub mod model;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use anyhow::{Context, bail};
use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use kimi_store::{Home, SessionStore, home_from_env};

const PAGE: &str = include_str!("page.html");

/// What the command line asked for.
#[derive(Debug, Clone)]
pub struct VisArgs {
    pub session: Option<String>,
    pub host: String,
    pub port: u16,
    pub open: bool,
}

#[derive(Clone)]
struct Served {
    dir: PathBuf,
    id: String,
    /// The `Host` values a request may carry (the bound address, and `localhost` on loopback),
    /// so a web page that rebinds its own name to 127.0.0.1 cannot read the session.
    hosts: Vec<String>,
}

pub fn run(args: &VisArgs) -> anyhow::Result<u8> {
    let home = home_from_env()?;
    let store = SessionStore::new(Home::new(&home));
    let (key, id) = match &args.session {
        Some(id) => match store.locate(id) {
            Some(key) => (key, id.clone()),
            None => bail!(
                "no session {id} under {}; list sessions with `kimi-rs sessions --all`",
                home.join("sessions").display()
            ),
        },
        None => {
            let cwd = std::env::current_dir().context("cannot read the current directory")?;
            kimi_core::session::latest_session(&store, &cwd).with_context(|| {
                format!(
                    "no session with a prompt in {}; pass a session id (`kimi-rs vis <SESSION_ID>`, ids from `kimi-rs sessions --all`)",
                    cwd.display()
                )
            })?
        }
    };
    let dir = store.home().session_dir(&key, &id);
    // Read once before serving, so a broken session fails here and not in the browser.
    model::load(&dir, &id).with_context(|| {
        format!(
            "cannot read the journals of session {id} in {}",
            dir.display()
        )
    })?;
    let ip: IpAddr = args
        .host
        .parse()
        .with_context(|| format!("--host {} is not an IP address (e.g. 127.0.0.1)", args.host))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(serve(SocketAddr::new(ip, args.port), dir, id, args.open))
}

async fn serve(addr: SocketAddr, dir: PathBuf, id: String, open: bool) -> anyhow::Result<u8> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}; pick another --port"))?;
    let bound = listener
        .local_addr()
        .context("cannot read the bound address")?;
    if kimi_web::reach::exposed(bound) {
        eprintln!(
            "kimi-rs vis: warning: {bound} can be reached from other machines and the page has no login; anyone who can reach it can read this session"
        );
    }
    let mut hosts = vec![bound.to_string()];
    if bound.ip().is_loopback() {
        hosts.push(format!("localhost:{}", bound.port()));
    }
    let url = format!("http://{bound}/");
    let served = Served { dir, id, hosts };
    let app = Router::new()
        .route("/", get(page))
        .route("/api/session", get(session_json))
        .layer(middleware::from_fn_with_state(served.clone(), check_host))
        .with_state(served.clone());
    println!("kimi-rs vis: session {} at {url}", served.id);
    println!("Press Ctrl-C to stop.");
    tracing::info!(session_id = %served.id, %url, "vis server started");
    if open {
        open_browser(&url);
    }
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            // A failing signal handler would make the server unstoppable: stop at once.
            if let Err(err) = tokio::signal::ctrl_c().await {
                tracing::warn!("cannot wait for Ctrl-C: {err}");
            }
        })
        .await
        .context("the vis server failed")?;
    Ok(0)
}

async fn check_host(State(served): State<Served>, request: Request, next: Next) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default();
    if served.hosts.iter().any(|h| h == host) {
        next.run(request).await
    } else {
        (
            StatusCode::FORBIDDEN,
            format!(
                "kimi-rs vis answers only to {}; open that address",
                served.hosts.join(" or ")
            ),
        )
            .into_response()
    }
}

async fn page() -> Response {
    let mut response = PAGE.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    // Everything the page needs is inline; it may talk only to this server.
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:",
        ),
    );
    response
}

async fn session_json(State(served): State<Served>) -> Response {
    let dir = served.dir.clone();
    let id = served.id.clone();
    let loaded = tokio::task::spawn_blocking(move || model::load(&dir, &id)).await;
    match loaded {
        Ok(Ok(view)) => axum::Json(view).into_response(),
        Ok(Err(err)) => {
            tracing::warn!(session_id = %served.id, "vis cannot read the session: {err}");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                format!(
                    "cannot read the journals in {}: {err}",
                    served.dir.display()
                ),
            )
                .into_response()
        }
        Err(err) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("reading the session failed: {err}"),
        )
            .into_response(),
    }
}

fn open_browser(url: &str) {
    let program = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    match Command::new(program)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    {
        // Reaped in the background so the launcher does not linger as a zombie.
        Ok(mut child) => {
            std::thread::spawn(move || child.wait());
        }
        Err(err) => {
            tracing::warn!("cannot start {program}: {err}");
            eprintln!("kimi-rs vis: cannot open a browser ({program}: {err}); open {url} yourself");
        }
    }
}
