//! `kimi-rs web`: the local REST + WebSocket server and browser UI (surface.md §11.1). Sessions
//! are opened with the same model, configuration, permission rules, skills and MCP servers as
//! the terminal UI; approvals are answered from the browser or any API client. The URL with the
//! token goes to the terminal only; the browser is opened on the page without it.

use std::net::SocketAddr;
use std::sync::Arc;

use kimi_web::{Limits, Notices, ServerOptions};

use crate::cli::RunArgs;
use crate::hosted::server_host;

/// The page to open: the page URL, with the session to show when there is one. Only this
/// goes on the browser's command line: the arguments of the launcher, and of the browser it
/// starts, can be read by every user of the machine, so the token must not be there. The page
/// asks for the token (or remembers it from an earlier visit).
pub fn page_for(page_url: &str, session: Option<&str>) -> String {
    match session {
        Some(id) => format!("{page_url}#session={id}"),
        None => page_url.to_owned(),
    }
}

/// The URL with the token, for the terminal only.
pub fn terminal_url(page_url: &str, token: &str, session: Option<&str>) -> String {
    match session {
        Some(id) => format!("{page_url}#token={token}&session={id}"),
        None => format!("{page_url}#token={token}"),
    }
}

/// Open the page in the browser (`$BROWSER`, else the system's opener); when that fails, say
/// so (the URL with the token is printed above).
pub fn open_browser(page: &str) {
    match crate::browser::open(page, std::env::var("BROWSER").ok().as_deref()) {
        Ok(()) => eprintln!(
            "kimi-rs web: opened {page} in your browser; paste the token there once (the part after #token= above), or open the URL above instead"
        ),
        Err(err) => {
            tracing::warn!("cannot start the browser: {err}");
            eprintln!("kimi-rs web: cannot open a browser ({err}); open the URL above yourself");
        }
    }
}

/// Warn when other machines can reach the server, and list the URLs they would use.
fn warn_if_exposed(addr: SocketAddr) {
    if !kimi_web::reach::exposed(addr) {
        return;
    }
    tracing::warn!("the web server listens on {addr}, reachable from other machines");
    eprintln!(
        "kimi-rs web: warning: listening on {addr}, so other machines can reach this server over plain HTTP, and whoever gets the token can read your sessions and run commands as you; use --host 127.0.0.1 (the default) unless you mean it"
    );
    match kimi_web::reach::interface_ips() {
        Ok(ips) => {
            let urls = kimi_web::reach::remote_urls(addr, &ips);
            if urls.is_empty() {
                eprintln!(
                    "kimi-rs web: no network interface has an address other machines could use right now"
                );
            }
            for url in urls {
                eprintln!("kimi-rs web: reachable at {url}");
            }
        }
        Err(err) => eprintln!(
            "kimi-rs web: cannot list the network interfaces ({err}); assume every address of this machine reaches the server"
        ),
    }
}

/// Open files the process needs besides its connections (session journals, logs, MCP servers'
/// and tools' pipes).
#[cfg(unix)]
const FD_RESERVE: u64 = 256;

/// Raise the soft open-files limit to what the connection bound needs (macOS starts processes
/// at 256), and lower the bound when the hard limit forbids that: a connection over the bound
/// is closed on arrival, while one over the file limit would make every accept fail.
#[cfg(unix)]
fn fit_open_files(limits: &mut Limits) {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let wanted = limits.max_connections as u64 + FD_RESERVE;
    let old = getrlimit(Resource::Nofile);
    // `None` is "unlimited".
    let mut soft = old.current.unwrap_or(u64::MAX);
    if soft < wanted {
        let raised = old.maximum.map_or(wanted, |hard| hard.min(wanted));
        let new = Rlimit {
            current: Some(raised),
            maximum: old.maximum,
        };
        match setrlimit(Resource::Nofile, new) {
            Ok(()) => soft = raised,
            Err(err) => tracing::warn!("cannot raise the open-files limit to {raised}: {err}"),
        }
    }
    let room = usize::try_from(soft.saturating_sub(FD_RESERVE)).unwrap_or(usize::MAX);
    if room < limits.max_connections {
        // A handful of connections still serve one browser and a script.
        limits.max_connections = room.max(16);
        eprintln!(
            "kimi-rs web: the open-files limit ({soft}) allows {} connections at once instead of {}; raise it with ulimit -n",
            limits.max_connections,
            kimi_web::MAX_CONNECTIONS
        );
    }
}

/// Serve until Ctrl-C. Exit status 0, or 1 when the server could not start. With `session`
/// (the terminal UI's `/web`), the URLs open that session.
pub fn run(
    args: &RunArgs,
    host: &str,
    port: Option<u16>,
    no_open: bool,
    session: Option<&str>,
    allow_remote_terminals: bool,
) -> anyhow::Result<u8> {
    let session_host = Arc::new(server_host(args, "kimi-rs web")?);
    let home = session_host.home().to_owned();
    let mut options = ServerOptions::new(host, port.unwrap_or(kimi_web::DEFAULT_PORT), &home);
    options.allow_remote_terminals = allow_remote_terminals;
    #[cfg(unix)]
    fit_open_files(&mut options.limits);
    options.notices = Notices::new(|message| eprintln!("kimi-rs web: {message}"));
    let flags_home = home.clone();
    options.experimental_flags = Some(kimi_web::FlagsSource(Arc::new(move || {
        // Read afresh: `/experiments` in a terminal may have switched one since start-up.
        match crate::config::load(&flags_home) {
            Ok(config) => config
                .flags()
                .into_iter()
                .map(|state| {
                    (
                        state.flag.id.to_owned(),
                        serde_json::Value::Bool(state.enabled),
                    )
                })
                .collect(),
            Err(err) => {
                tracing::warn!("GET /meta cannot read the experimental flags: {err:#}");
                serde_json::Map::new()
            }
        }
    })));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let result = runtime.block_on(async {
        let bound = kimi_web::bind(options).await?;
        if let Some(why) = bound.token_rotated() {
            eprintln!(
                "kimi-rs web: rotated the server token: {} {why}, so a new token readable by you only replaces it",
                kimi_web::token_path(&home).display()
            );
        }
        let page_url = bound.page_url();
        eprintln!(
            "kimi-rs web: serving on {}",
            terminal_url(&page_url, bound.token(), session)
        );
        warn_if_exposed(bound.addr());
        // `/web` in a terminal UI finds this server through it.
        let _registration = kimi_web::instances::register(&home, bound.addr(), &page_url)
            .map_err(|err| {
                tracing::warn!("cannot register the server for /web: {err}");
                eprintln!("kimi-rs web: cannot register this server under {} ({err}); /web in a terminal UI will not find it", kimi_web::instances::instances_dir(&home).display());
            })
            .ok();
        eprintln!("kimi-rs web: press Ctrl-C to stop");
        if !no_open {
            open_browser(&page_for(&page_url, session));
        }
        let shutdown = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        bound.serve(session_host.clone(), shutdown).await;
        session_host.shutdown().await;
        Ok::<(), kimi_web::WebError>(())
    });
    match result {
        Ok(()) => Ok(0),
        Err(err) => {
            eprintln!("kimi-rs web: {err}");
            Ok(1)
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[tokio::test]
    async fn the_browser_is_given_the_page_url_and_never_the_token() {
        let home = tempfile::tempdir().unwrap();
        let bound = kimi_web::bind(ServerOptions::new("127.0.0.1", 0, home.path()))
            .await
            .unwrap();
        let page = page_for(&bound.page_url(), Some("s1"));
        let command = crate::browser::command(&page, None);
        let args: Vec<String> = command
            .get_args()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect();
        let port = bound.addr().port();
        assert_eq!(args, [format!("http://127.0.0.1:{port}/#session=s1")]);
        let url = terminal_url(&bound.page_url(), bound.token(), Some("s1"));
        assert!(url.contains(bound.token()), "the terminal URL does");
        assert!(
            !args.iter().any(|arg| arg.contains(bound.token())),
            "{args:?}"
        );
    }
}
