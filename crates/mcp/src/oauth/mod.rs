//! OAuth for remote MCP servers (surface.md §10), on rmcp's `auth` support: discovery
//! (protected resource metadata, then authorization server metadata), dynamic client
//! registration, the authorization-code flow with PKCE and a loopback redirect listener
//! ([`callback`]), tokens stored per server under `credentials/mcp/` ([`store`]) and refreshed
//! by rmcp before they expire (and once more when the server rejects one).
//!
//! [`begin_login`] runs discovery and registration and returns a [`LoginFlow`] holding the URL
//! the user opens; [`LoginFlow::finish`] waits (bounded) for the browser to come back and
//! exchanges the code. The connection side asks [`connect_manager`] for a manager loaded from the
//! stored credentials.

pub mod callback;
pub mod store;

use std::time::{Duration, Instant};

use rmcp::transport::auth::{
    AuthError, AuthorizationCallback, AuthorizationManager, AuthorizationRequest,
    AuthorizationSession,
};
use tokio_util::sync::CancellationToken;

pub use callback::CallbackListener;
pub use store::{FileCredentialStore, TokenDir};

/// How long a login waits for the browser (the reference's 15 minutes).
pub const LOGIN_WAIT: Duration = Duration::from_secs(15 * 60);

/// Why a login did not complete; each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    #[error(
        "cannot listen for the sign-in callback on 127.0.0.1: {0}. Check that loopback networking works"
    )]
    Listener(std::io::Error),
    #[error(
        "OAuth discovery for {url} failed: {source}. Check `url` in mcp.json, and that the server supports MCP OAuth (otherwise give it a token with `bearerTokenEnvVar`)"
    )]
    Discovery { url: String, source: AuthError },
    #[error(
        "the authorization server of {url} did not register kimi-rs as a client: {source}. The server may not allow dynamic client registration"
    )]
    Registration { url: String, source: AuthError },
    #[error(
        "the sign-in was not completed within {} minutes. Start it again and open the URL in a browser", .0.as_secs() / 60
    )]
    TimedOut(Duration),
    #[error("the sign-in was cancelled before the browser came back")]
    Cancelled,
    #[error("the authorization server refused the sign-in: {0}. Start it again to retry")]
    Denied(String),
    #[error("exchanging the authorization code for a token failed: {0}. Start the sign-in again")]
    Exchange(AuthError),
}

/// A manager for `url` whose tokens live in `dir`. Private addresses are allowed for discovered
/// endpoints: a company's server often sits on one, and the user chose the URL.
async fn manager(
    dir: &TokenDir,
    server: &str,
    url: &str,
) -> Result<AuthorizationManager, AuthError> {
    // reqwest is built without a default TLS provider (see `remote_client`).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut manager = AuthorizationManager::new_allowing_private_addresses(url).await?;
    manager.set_credential_store(dir.store(server, url));
    Ok(manager)
}

/// For connecting: a manager loaded from the stored credentials, or `None` when there are none
/// (the server is then tried without a token; a 401 means it needs a login).
pub async fn connect_manager(
    dir: &TokenDir,
    server: &str,
    url: &str,
) -> Result<Option<AuthorizationManager>, String> {
    if !dir.has_tokens(server, url) {
        return Ok(None);
    }
    let mut manager = manager(dir, server, url)
        .await
        .map_err(|e| format!("cannot use its stored OAuth credentials: {e}"))?;
    match manager.initialize_from_store().await {
        Ok(true) => Ok(Some(manager)),
        Ok(false) => Ok(None),
        Err(e) => Err(format!(
            "loading its stored OAuth credentials failed: {e}. Sign in again (`kimi-rs mcp login {server}`)"
        )),
    }
}

/// A login under way: the URL to open, and the listener the browser returns to.
pub struct LoginFlow {
    session: AuthorizationSession,
    listener: CallbackListener,
}

impl std::fmt::Debug for LoginFlow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoginFlow")
            .field("redirect_uri", &self.listener.redirect_uri())
            .finish_non_exhaustive()
    }
}

/// Discover the server's authorization server, register kimi-rs with it (dynamic client
/// registration, redirect `http://127.0.0.1:<port>/callback`) and build the authorization URL
/// (PKCE S256, random `state`). `challenge` is the `WWW-Authenticate` header of the server's
/// 401, when there was one: it names the metadata and scopes to use.
pub async fn begin_login(
    dir: &TokenDir,
    server: &str,
    url: &str,
    client_name: &str,
    challenge: Option<&str>,
) -> Result<LoginFlow, OAuthError> {
    let listener = CallbackListener::start()
        .await
        .map_err(OAuthError::Listener)?;
    let discovery = |source| OAuthError::Discovery {
        url: url.to_owned(),
        source,
    };
    let mut manager = manager(dir, server, url).await.map_err(discovery)?;
    let resolution = manager
        .resolve_metadata_from_challenge(challenge)
        .await
        .map_err(discovery)?;
    manager.set_metadata(resolution.metadata);
    let mut request =
        AuthorizationRequest::new(listener.redirect_uri()).with_client_name(client_name);
    if let Some(challenge) = challenge {
        request = request.with_challenge(challenge);
    }
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, source)| OAuthError::Registration {
            url: url.to_owned(),
            source,
        })?;
    tracing::info!(
        server,
        redirect = listener.redirect_uri(),
        "MCP OAuth login started"
    );
    Ok(LoginFlow { session, listener })
}

impl LoginFlow {
    /// The page the user opens to sign in.
    pub fn authorization_url(&self) -> &str {
        self.session.get_authorization_url()
    }

    /// Wait up to `limit` for the browser's redirect, then exchange the code (checking
    /// `state` and, when given, the issuer) and store the tokens.
    pub async fn finish(
        mut self,
        limit: Duration,
        cancel: &CancellationToken,
    ) -> Result<(), OAuthError> {
        let deadline = Instant::now() + limit;
        let redirect = tokio::select! {
            () = cancel.cancelled() => return Err(OAuthError::Cancelled),
            () = tokio::time::sleep_until(deadline.into()) => return Err(OAuthError::TimedOut(limit)),
            redirect = self.listener.next() => redirect.ok_or(OAuthError::Cancelled)?,
        };
        let parsed = url::Url::parse(&redirect)
            .map_err(|e| OAuthError::Denied(format!("the redirect was not a URL ({e})")))?;
        let query = |key: &str| {
            parsed
                .query_pairs()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.into_owned())
        };
        if let Some(error) = query("error") {
            let detail = query("error_description").map_or_else(String::new, |d| format!(" ({d})"));
            return Err(OAuthError::Denied(format!("{error}{detail}")));
        }
        let callback = AuthorizationCallback::from_redirect_url(&redirect)
            .map_err(|e| OAuthError::Denied(e.to_string()))?;
        self.session
            .handle_callback_with_issuer(
                &callback.code,
                &callback.csrf_token,
                callback.issuer.as_deref(),
            )
            .await
            .map_err(OAuthError::Exchange)?;
        tracing::info!("MCP OAuth login completed");
        Ok(())
    }
}
