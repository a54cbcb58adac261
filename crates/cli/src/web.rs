//! `kimi-rs web`: the local REST + WebSocket server and browser UI (surface.md §11.1). Sessions
//! are opened with the same model, configuration, permission rules, skills and MCP servers as
//! the terminal UI; approvals are answered from the browser or any API client.

use std::sync::Arc;

use crate::cli::RunArgs;
use crate::hosted::server_host;

/// Open the URL in the default browser; failing to is not an error (the URL is printed).
fn open_browser(url: &str) {
    let program = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let _ = std::process::Command::new(program)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
}

/// Serve until Ctrl-C. Exit status 0, or 1 when the server could not start or broke.
pub fn run(args: &RunArgs, host: &str, port: Option<u16>, no_open: bool) -> anyhow::Result<u8> {
    let session_host = Arc::new(server_host(args, "kimi-rs web")?);
    let home = session_host.home().to_owned();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let result = runtime.block_on(async {
        let bound = kimi_web::bind(kimi_web::ServerOptions {
            host: host.to_owned(),
            port: port.unwrap_or(kimi_web::DEFAULT_PORT),
            home,
        })
        .await?;
        let url = bound.url();
        eprintln!("kimi-rs web: serving on {url}");
        eprintln!("kimi-rs web: press Ctrl-C to stop");
        if !no_open {
            open_browser(&url);
        }
        let shutdown = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        let result = bound.serve(session_host.clone(), shutdown).await;
        session_host.shutdown().await;
        result
    });
    match result {
        Ok(()) => Ok(0),
        Err(err) => {
            eprintln!("kimi-rs web: {err}");
            Ok(1)
        }
    }
}
