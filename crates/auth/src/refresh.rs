//! A login's access token, kept fresh: [`TokenManager::access_token`] refreshes it when less
//! than half its lifetime is left, and on demand after a server refused it (a 401). Refreshes
//! are serialised in this process by a mutex and across processes by a lock file next to the
//! credential, and the file is read again under the lock so a token another kimi-rs just
//! rotated is used instead of refreshing twice (the refresh token is single-use).

use std::time::Duration;

use crate::endpoints::Endpoints;
use crate::error::AuthError;
use crate::http::{error_detail, post_form};
use crate::store::{Token, TokenStore, now_secs};
use crate::{CLIENT_ID, device::token_from};

const REFRESH_ATTEMPTS: u32 = 3;

/// The token source of one configured login.
#[derive(Debug)]
pub struct TokenManager {
    store: TokenStore,
    key: String,
    oauth_host: String,
    lock: tokio::sync::Mutex<()>,
}

impl TokenManager {
    pub fn new(store: TokenStore, key: &str, endpoints: &Endpoints) -> TokenManager {
        TokenManager {
            store,
            key: key.to_owned(),
            oauth_host: endpoints.oauth_host.clone(),
            lock: tokio::sync::Mutex::new(()),
        }
    }

    pub fn key(&self) -> &str {
        &self.key
    }

    /// Where the credential is kept, for messages.
    pub fn location(&self) -> Result<String, AuthError> {
        self.store.location(&self.key)
    }

    /// The stored token, or "not logged in".
    pub fn load(&self) -> Result<Token, AuthError> {
        match self.store.load(&self.key)? {
            Some(token) => Ok(token),
            None => Err(AuthError::NotLoggedIn {
                location: self.location()?,
            }),
        }
    }

    /// A usable access token. `stale` is the token a server just refused: a refresh is
    /// forced unless the stored token already differs from it.
    pub async fn access_token(&self, stale: Option<&str>) -> Result<String, AuthError> {
        let token = self.load()?;
        let due =
            |t: &Token| stale.is_some_and(|s| s == t.access_token) || t.needs_refresh(now_secs());
        if !due(&token) {
            return Ok(token.access_token);
        }
        let _guard = self.lock.lock().await;
        let _file_lock = self.lock_file().await?;
        // Another task or process may have refreshed while we waited.
        let token = self.load()?;
        if !due(&token) {
            return Ok(token.access_token);
        }
        tracing::info!(key = %self.key, "refreshing the Kimi Code access token");
        let refreshed = self.refresh(&token.refresh_token).await?;
        self.store.save(&self.key, &refreshed)?;
        Ok(refreshed.access_token)
    }

    async fn lock_file(&self) -> Result<std::fs::File, AuthError> {
        let path = self.store.lock_path(&self.key)?;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|err| AuthError::storage(&path, format!("cannot open the lock: {err}")))?;
        tokio::task::spawn_blocking(move || file.lock().map(|()| file))
            .await
            .map_err(|err| AuthError::storage(&path, format!("lock task failed: {err}")))?
            .map_err(|err| AuthError::storage(&path, format!("cannot lock: {err}")))
    }

    async fn refresh(&self, refresh_token: &str) -> Result<Token, AuthError> {
        if refresh_token.is_empty() {
            return Err(AuthError::RefreshRejected {
                detail: "the stored login has no refresh token".to_owned(),
            });
        }
        let url = format!("{}/api/oauth/token", self.oauth_host);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let answer = post_form(
                &url,
                &[
                    ("client_id", CLIENT_ID),
                    ("grant_type", "refresh_token"),
                    ("refresh_token", refresh_token),
                ],
            )
            .await;
            let retry = match answer {
                Ok((200, map)) if map.contains_key("access_token") => {
                    return token_from(&url, &map);
                }
                Ok((status, map))
                    if status == 401
                        || status == 403
                        || map.get("error").and_then(|e| e.as_str()) == Some("invalid_grant") =>
                {
                    return Err(AuthError::RefreshRejected {
                        detail: format!("HTTP {status}: {}", error_detail(&map)),
                    });
                }
                Ok((status, map)) if [429, 500, 502, 503, 504].contains(&status) => {
                    AuthError::Http {
                        url: url.clone(),
                        status,
                        detail: error_detail(&map),
                    }
                }
                Ok((status, map)) => {
                    return Err(AuthError::Http {
                        url,
                        status,
                        detail: error_detail(&map),
                    });
                }
                Err(err) => err,
            };
            if attempt >= REFRESH_ATTEMPTS {
                return Err(retry);
            }
            tracing::warn!("token refresh attempt {attempt} failed, retrying: {retry}");
            // 1 s, 2 s: a blip on the auth server should not log the user out.
            tokio::time::sleep(Duration::from_secs(1 << (attempt - 1))).await;
        }
    }
}
