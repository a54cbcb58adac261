//! `kimi-rs acp`: serve the Agent Client Protocol on stdin/stdout for editors (Zed, JetBrains,
//! …). Sessions are opened with the same model, configuration, permission rules, skills and
//! MCP servers as the terminal UI; approvals are asked through the editor.

use std::sync::Arc;

use crate::cli::RunArgs;
use crate::hosted::server_host;

/// Serve until the editor closes stdin. Exit status 0, or 1 when the connection broke.
pub fn run(args: &RunArgs) -> anyhow::Result<u8> {
    let host = Arc::new(server_host(args, "kimi-rs acp")?);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let result = runtime.block_on(async {
        let login: kimi_acp::LoginCheck = Arc::new(crate::accounts::login_status);
        // ACP `logout`: what `kimi-rs logout` does (its report goes to stderr, the log).
        let logout: kimi_acp::LogoutAction = Arc::new(|| {
            crate::accounts::logout()
                .map(drop)
                .map_err(|err| err.to_string())
        });
        let result = kimi_acp::serve(
            host.clone(),
            tokio::io::stdin(),
            tokio::io::stdout(),
            login,
            logout,
        )
        .await;
        host.shutdown().await;
        result
    });
    match result {
        Ok(()) => Ok(0),
        Err(err) => {
            eprintln!("kimi-rs acp: {err}");
            Ok(1)
        }
    }
}
