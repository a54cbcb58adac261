//! What a remote (streamable HTTP or SSE) server needs before its handshake: its HTTP client
//! and headers, whether OAuth may be used for it, and its stored OAuth sign-in.

use std::collections::HashMap;

use rmcp::transport::auth::AuthorizationManager;

use crate::config::RemoteConfig;
use crate::oauth::{TokenDir, connect_manager};

/// A remote server's client, headers and whether OAuth may be used for it.
pub(crate) struct Remote {
    pub(crate) client: reqwest::Client,
    /// `headers`, plus `Authorization` from `bearerTokenEnvVar`.
    pub(crate) headers: reqwest::header::HeaderMap,
    pub(crate) url: String,
    /// `auth: "oauth"`: a sign-in is needed before connecting.
    pub(crate) oauth_required: bool,
    /// OAuth is tried on a 401: `auth: "oauth"`, or a server with no static `headers` /
    /// `bearerTokenEnvVar` (surface.md §10).
    pub(crate) oauth_allowed: bool,
}

/// Why a handshake did not produce a connection.
pub(crate) enum HandshakeError {
    Failed(String),
    /// The server wants an OAuth sign-in; `challenge` is its 401's `WWW-Authenticate`.
    NeedsLogin {
        why: String,
        challenge: Option<String>,
    },
}

impl From<String> for HandshakeError {
    fn from(reason: String) -> Self {
        HandshakeError::Failed(reason)
    }
}

pub(crate) fn remote_parts(
    remote: &RemoteConfig,
    env: &HashMap<String, String>,
    source: &str,
) -> Result<Remote, String> {
    let (client, headers) = remote_client(remote, env, source)?;
    let static_auth = !remote.headers.is_empty() || remote.bearer_token_env_var.is_some();
    Ok(Remote {
        client,
        headers,
        url: remote.url.clone(),
        oauth_required: remote.oauth,
        oauth_allowed: remote.oauth || !static_auth,
    })
}

/// The stored sign-in of a server OAuth may be used for: `Ok(None)` when there is none (or OAuth
/// is off for it); needs-login when `auth: "oauth"` asks for one and none is stored.
pub(crate) async fn stored_login(
    remote: &Remote,
    name: &str,
    token_dir: Option<&TokenDir>,
) -> Result<Option<AuthorizationManager>, HandshakeError> {
    let Some(dir) = token_dir.filter(|_| remote.oauth_allowed) else {
        if remote.oauth_required {
            return Err(HandshakeError::Failed(
                "it needs an OAuth sign-in, and OAuth is off in this kimi-rs (no credentials folder)".to_owned(),
            ));
        }
        return Ok(None);
    };
    let manager = connect_manager(dir, name, &remote.url).await?;
    if manager.is_none() && remote.oauth_required {
        return Err(HandshakeError::NeedsLogin {
            why: "it is set to `\"auth\": \"oauth\"` and kimi-rs has not signed in to it yet"
                .to_owned(),
            challenge: None,
        });
    }
    Ok(manager)
}

/// The HTTP client and headers (`headers`, and `Authorization` from `bearerTokenEnvVar`) of a
/// remote server.
fn remote_client(
    remote: &RemoteConfig,
    env: &HashMap<String, String>,
    source: &str,
) -> Result<(reqwest::Client, reqwest::header::HeaderMap), String> {
    use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue};

    // reqwest is built without a default TLS provider; install the same one the rest of
    // kimi-rs uses (a no-op when another part of the program already did).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        // The reference client disables idle pooling too: a half-read body on a pooled
        // connection stalls the next request.
        .pool_max_idle_per_host(0)
        .build()
        .map_err(|e| format!("cannot create the HTTP client: {e}"))?;
    let mut headers = HeaderMap::new();
    for (name, value) in &remote.headers {
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("header name `{name}` in {source} is not a valid HTTP header"))?;
        let value = HeaderValue::from_str(value).map_err(|_| {
            format!("the value of header `{name}` in {source} is not a valid HTTP header value")
        })?;
        headers.insert(header, value);
    }
    if let Some(var) = &remote.bearer_token_env_var {
        match env.get(var).filter(|token| !token.is_empty()) {
            Some(token) => {
                let value = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
                    format!("the token in `{var}` (its `bearerTokenEnvVar`) is not a valid HTTP header value")
                })?;
                headers.insert(AUTHORIZATION, value);
            }
            None => {
                return Err(format!(
                    "environment variable `{var}` (its `bearerTokenEnvVar`) is not set. Export it before starting kimi-rs, or remove `bearerTokenEnvVar` from {source}"
                ));
            }
        }
    }
    Ok((client, headers))
}
