//! The RFC 8628 device authorization grant against the Kimi OAuth host: ask for a device code
//! (`/api/oauth/device_authorization`), show the user the URL and code, then poll
//! `/api/oauth/token` at the server's `interval` until the user approves
//! (`authorization_pending` waits, `slow_down` adds five seconds for good, `expired_token` and
//! `access_denied` end the login).

use std::time::Duration;

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::CLIENT_ID;
use crate::endpoints::Endpoints;
use crate::error::AuthError;
use crate::http::{error_detail, post_form};
use crate::store::{Token, now_secs};

/// A login waits at most this long even when the server gives its code a longer life.
const LOCAL_DEADLINE: Duration = Duration::from_secs(15 * 60);
const DEVICE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";

/// The server's answer to the device authorization request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceCode {
    pub user_code: String,
    pub device_code: String,
    pub verification_uri: String,
    pub verification_uri_complete: String,
    /// Seconds until the code expires, when the server says.
    pub expires_in: Option<u64>,
    /// Seconds between polls.
    pub interval: u64,
}

impl DeviceCode {
    /// The page to open: the one with the code filled in when there is one.
    pub fn url(&self) -> &str {
        if self.verification_uri_complete.is_empty() {
            &self.verification_uri
        } else {
            &self.verification_uri_complete
        }
    }
}

fn text(map: &Map<String, Value>, key: &str) -> Option<String> {
    map.get(key)
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
}

fn number(map: &Map<String, Value>, key: &str) -> Option<u64> {
    match map.get(key)? {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Step one: a device code for the user to approve.
pub async fn request_code(endpoints: &Endpoints) -> Result<DeviceCode, AuthError> {
    let url = format!("{}/api/oauth/device_authorization", endpoints.oauth_host);
    let (status, map) = post_form(&url, &[("client_id", CLIENT_ID)]).await?;
    if status != 200 {
        return Err(AuthError::Http {
            url,
            status,
            detail: error_detail(&map),
        });
    }
    let missing = |field: &str| AuthError::Protocol {
        url: url.clone(),
        detail: format!("the device authorization has no `{field}`"),
    };
    let user_code = text(&map, "user_code").ok_or_else(|| missing("user_code"))?;
    let device_code = text(&map, "device_code").ok_or_else(|| missing("device_code"))?;
    let verification_uri = text(&map, "verification_uri").unwrap_or_default();
    let verification_uri_complete = text(&map, "verification_uri_complete").unwrap_or_default();
    if verification_uri.is_empty() && verification_uri_complete.is_empty() {
        return Err(missing("verification_uri"));
    }
    Ok(DeviceCode {
        user_code,
        device_code,
        verification_uri,
        verification_uri_complete,
        expires_in: number(&map, "expires_in"),
        // RFC 8628 §3.2: five seconds when the server does not say.
        interval: number(&map, "interval").unwrap_or(5),
    })
}

/// A token answer (device grant or refresh); the three load-bearing fields are required so an
/// empty token is never stored.
pub(crate) fn token_from(url: &str, map: &Map<String, Value>) -> Result<Token, AuthError> {
    let missing = |field: &str| AuthError::Protocol {
        url: url.to_owned(),
        detail: format!("the token answer has no `{field}`"),
    };
    let access_token = text(map, "access_token").ok_or_else(|| missing("access_token"))?;
    let refresh_token = text(map, "refresh_token").ok_or_else(|| missing("refresh_token"))?;
    let expires_in = number(map, "expires_in")
        .filter(|n| *n > 0)
        .ok_or_else(|| missing("expires_in"))?;
    let expires_in = i64::try_from(expires_in).unwrap_or(i64::MAX / 2);
    Ok(Token {
        access_token,
        refresh_token,
        expires_at: now_secs().saturating_add(expires_in),
        scope: text(map, "scope").unwrap_or_default(),
        token_type: text(map, "token_type").unwrap_or_else(|| "Bearer".to_owned()),
        expires_in,
    })
}

/// What one poll said.
enum Poll {
    Done(Token),
    Pending { slow_down: bool },
}

async fn poll_once(endpoints: &Endpoints, code: &DeviceCode) -> Result<Poll, AuthError> {
    let url = format!("{}/api/oauth/token", endpoints.oauth_host);
    let (status, map) = post_form(
        &url,
        &[
            ("client_id", CLIENT_ID),
            ("device_code", &code.device_code),
            ("grant_type", DEVICE_GRANT),
        ],
    )
    .await?;
    if status == 200 && map.contains_key("access_token") {
        return token_from(&url, &map).map(Poll::Done);
    }
    if status >= 500 {
        return Err(AuthError::Http {
            url,
            status,
            detail: error_detail(&map),
        });
    }
    let description = text(&map, "error_description").unwrap_or_default();
    match text(&map, "error").as_deref() {
        Some("authorization_pending") => Ok(Poll::Pending { slow_down: false }),
        Some("slow_down") => Ok(Poll::Pending { slow_down: true }),
        Some("expired_token") => Err(AuthError::Expired),
        Some("access_denied") => Err(AuthError::Denied(description)),
        _ => Err(AuthError::Http {
            url,
            status,
            detail: error_detail(&map),
        }),
    }
}

/// Step two: poll until the user approves, denies, the code expires, or `cancel` fires.
pub async fn wait_for_token(
    endpoints: &Endpoints,
    code: &DeviceCode,
    cancel: &CancellationToken,
) -> Result<Token, AuthError> {
    let budget = code.expires_in.map_or(LOCAL_DEADLINE, |s| {
        Duration::from_secs(s).min(LOCAL_DEADLINE)
    });
    let deadline = tokio::time::Instant::now() + budget;
    let mut interval = Duration::from_secs(code.interval.max(1));
    loop {
        let poll = tokio::select! {
            poll = poll_once(endpoints, code) => poll?,
            () = cancel.cancelled() => return Err(AuthError::Cancelled),
        };
        match poll {
            Poll::Done(token) => return Ok(token),
            Poll::Pending { slow_down } => {
                if slow_down {
                    // RFC 8628 §3.5: five more seconds, for every later poll too.
                    interval += Duration::from_secs(5);
                }
            }
        }
        if tokio::time::Instant::now() + interval > deadline {
            return Err(AuthError::TimedOut(budget.as_secs()));
        }
        tokio::select! {
            () = tokio::time::sleep(interval) => {}
            () = cancel.cancelled() => return Err(AuthError::Cancelled),
        }
    }
}
