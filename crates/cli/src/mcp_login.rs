//! `kimi-rs mcp login <server>` and `kimi-rs mcp logout <server>`: sign in to a remote MCP
//! server that uses OAuth (or forget that sign-in) from the shell, for scripts and for users who
//! would rather not ask the model (`/mcp-config login <server>` does the same inside a session).
//! The login prints the URL to open, waits up to 15 minutes for the browser to come back to a
//! loopback callback, and stores the token under `$KIMI_RS_HOME/credentials/mcp/` (0600).

use std::path::Path;

use anyhow::{Context, bail};
use clap::Subcommand;
use kimi_mcp::oauth::{LOGIN_WAIT, TokenDir, begin_login};
use kimi_mcp::{CLIENT_NAME, McpConfig, TransportConfig};
use tokio_util::sync::CancellationToken;

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Sign in to a remote MCP server with OAuth: prints the URL to open, waits for the
    /// browser, and stores the token for new sessions.
    Login {
        /// The server's name in mcp.json.
        server: String,
    },
    /// Delete the stored OAuth sign-in of a remote MCP server.
    Logout {
        /// The server's name in mcp.json.
        server: String,
    },
}

pub fn run(command: McpCommand, trust_flag: bool) -> anyhow::Result<u8> {
    let home = kimi_store::home_from_env()?;
    let cwd = std::env::current_dir().context("cannot read the current folder")?;
    let (trusted, warning) = crate::trust::trusted_without_asking(&home, &cwd, trust_flag);
    if let Some(warning) = warning {
        eprintln!("kimi-rs: {warning}");
    }
    let config = kimi_mcp::load_config(&home, &cwd, trusted);
    let dir = TokenDir::in_home(&home);
    match command {
        McpCommand::Login { server } => {
            let url = remote_url(&config, &server, &home)?;
            let runtime = tokio::runtime::Runtime::new().context("cannot start the runtime")?;
            runtime.block_on(login(&dir, &server, &url))
        }
        McpCommand::Logout { server } => {
            let url = remote_url(&config, &server, &home)?;
            let file = dir.file(&server, &url);
            if dir
                .remove(&server, &url)
                .with_context(|| format!("cannot delete {}", file.display()))?
            {
                println!("Deleted the stored sign-in of MCP server `{server}`.");
            } else {
                println!("MCP server `{server}` had no stored sign-in.");
            }
            Ok(0)
        }
    }
}

async fn login(dir: &TokenDir, server: &str, url: &str) -> anyhow::Result<u8> {
    let flow = begin_login(dir, server, url, CLIENT_NAME, None)
        .await
        .with_context(|| format!("signing in to MCP server `{server}` could not start"))?;
    eprintln!(
        "Open this URL in a browser to sign in to MCP server `{server}`:\n\n  {}\n\nWaiting up to {} minutes for the browser to come back (Ctrl-C gives up)…",
        flow.authorization_url(),
        LOGIN_WAIT.as_secs() / 60
    );
    flow.finish(LOGIN_WAIT, &CancellationToken::new())
        .await
        .with_context(|| format!("signing in to MCP server `{server}` failed"))?;
    println!(
        "Signed in to MCP server `{server}`; the token is stored in {}. New sessions use it.",
        dir.file(server, url).display()
    );
    Ok(0)
}

/// The URL of the remote server `name`, or an error naming the servers there are.
fn remote_url(config: &McpConfig, name: &str, home: &Path) -> anyhow::Result<String> {
    let Some(server) = config.servers.get(name) else {
        let known: Vec<&str> = config.servers.keys().map(String::as_str).collect();
        let untrusted = config.untrusted.iter().any(|(n, _)| n == name);
        if untrusted {
            bail!(
                "MCP server `{name}` is defined by this project, which is not trusted. Trust the folder first (`kimi-rs trust`) or pass --trust-workspace"
            );
        }
        bail!(
            "no MCP server `{name}` in {} or this project's mcp.json files{}",
            home.join("mcp.json").display(),
            if known.is_empty() {
                String::new()
            } else {
                format!(" (configured: {})", known.join(", "))
            }
        );
    };
    match &server.transport {
        TransportConfig::Http(remote) | TransportConfig::Sse(remote) => Ok(remote.url.clone()),
        TransportConfig::Stdio { .. } => bail!(
            "MCP server `{name}` is a stdio server (it runs a command); only remote (`url`) servers sign in"
        ),
    }
}
