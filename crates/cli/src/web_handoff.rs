//! `/web` after the terminal UI has closed (and so let the session's journal go): open the
//! session in the running `kimi-rs web` server the user picked, or serve it from this terminal.
//! The URL with the token is printed here only; the browser gets the page without it (see
//! `web.rs`).

use std::path::Path;

use kimi_tui::web_handoff::WebHandoff;

use crate::cli::RunArgs;

pub fn run(args: &RunArgs, home: &Path, session: &str, handoff: WebHandoff) -> anyhow::Result<u8> {
    match handoff {
        WebHandoff::Server { page_url } => {
            let token = kimi_web::load_or_create_token(home)?.token;
            eprintln!(
                "Continue this session in the web UI: {}",
                crate::web::terminal_url(&page_url, &token, Some(session))
            );
            let page = crate::web::page_for(&page_url, Some(session));
            match crate::browser::open(&page, std::env::var("BROWSER").ok().as_deref()) {
                Ok(()) => eprintln!("Opened {page} in your browser."),
                Err(err) => {
                    eprintln!("Cannot open a browser ({err}); open the URL above yourself.")
                }
            }
            Ok(0)
        }
        WebHandoff::Start => {
            eprintln!("Starting kimi-rs web for this session (Ctrl-C stops it)…");
            crate::web::run(args, "127.0.0.1", None, false, Some(session), false)
        }
    }
}
