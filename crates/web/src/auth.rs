//! Who may talk to the server: the bearer token kept in `$KIMI_RS_HOME/server.token` (0600,
//! created on first boot), accepted as `Authorization: Bearer` or as the WebSocket subprotocol
//! `kimi-code.bearer.<token>`, and the Host-header allowlist that defeats DNS rebinding.

use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use axum::http::HeaderMap;
use axum::http::header::{AUTHORIZATION, HOST, SEC_WEBSOCKET_PROTOCOL};

/// The WebSocket subprotocol prefix that carries the token (browsers cannot set headers).
pub const WS_BEARER_PREFIX: &str = "kimi-code.bearer.";

#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error(
        "cannot read the server token {path}: {source}; fix its permissions or delete it to get a new one"
    )]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "cannot create the server token {path}: {source}; check that the kimi-rs home is writable"
    )]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The token file of a kimi-rs home.
pub fn token_path(home: &Path) -> PathBuf {
    home.join("server.token")
}

/// Read the server token, creating it (owner read/write only) on first boot.
pub fn load_or_create_token(home: &Path) -> Result<String, TokenError> {
    let path = token_path(home);
    match std::fs::read_to_string(&path) {
        Ok(text) if !text.trim().is_empty() => return Ok(text.trim().to_owned()),
        Ok(_) => {}
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => return Err(TokenError::Read { path, source }),
    }
    let token = new_token();
    let write = |path: &Path| -> std::io::Result<()> {
        std::fs::create_dir_all(path.parent().unwrap_or(Path::new(".")))?;
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(path)?;
        #[cfg(unix)]
        std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
        file.write_all(token.as_bytes())?;
        file.write_all(b"\n")
    };
    write(&path).map_err(|source| TokenError::Write {
        path: path.clone(),
        source,
    })?;
    Ok(token)
}

/// 32 random bytes, hex.
fn new_token() -> String {
    let bytes: [u8; 32] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Comparison whose time does not depend on where the strings differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// The WebSocket subprotocol offered with the right token, if any (the server must echo it).
pub fn offered_ws_protocol(headers: &HeaderMap, token: &str) -> Option<String> {
    headers
        .get_all(SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .find(|p| {
            p.strip_prefix(WS_BEARER_PREFIX)
                .is_some_and(|t| same(t, token))
        })
        .map(str::to_owned)
}

/// Whether the request carries the token (header or WebSocket subprotocol).
pub fn authorized(headers: &HeaderMap, token: &str) -> bool {
    let bearer = headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .is_some_and(|t| same(t.trim(), token));
    bearer || offered_ws_protocol(headers, token).is_some()
}

/// The host part of a Host header (`name`, `name:port`, `[v6]:port`).
fn host_name(header: &str) -> &str {
    if let Some(rest) = header.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match header.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => header,
    }
}

/// DNS-rebinding defence: a page on an attacker's domain that resolves to 127.0.0.1 still sends
/// its own name as Host. IP literals, `localhost` names and the bind host are accepted; a
/// request without a Host header (HTTP/1.0 tools) is too.
pub fn host_allowed(headers: &HeaderMap, bind_host: &str) -> bool {
    headers.get_all(HOST).iter().all(|header| {
        let Ok(header) = header.to_str() else {
            return false;
        };
        let name = host_name(header.trim()).to_ascii_lowercase();
        let name = name.trim_end_matches('.');
        name.parse::<IpAddr>().is_ok()
            || name == "localhost"
            || name.ends_with(".localhost")
            || name.eq_ignore_ascii_case(bind_host.trim_matches(['[', ']']))
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(axum::http::HeaderName, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(name.clone(), HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn the_token_is_created_once_with_owner_only_permissions() {
        let home = tempfile::tempdir().unwrap();
        let first = load_or_create_token(home.path()).unwrap();
        assert_eq!(first.len(), 64);
        assert_eq!(load_or_create_token(home.path()).unwrap(), first);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(token_path(home.path()))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn bearer_header_and_ws_subprotocol_are_accepted_and_nothing_else() {
        let token = "abc123";
        assert!(authorized(
            &headers(&[(AUTHORIZATION, "Bearer abc123")]),
            token
        ));
        assert!(!authorized(
            &headers(&[(AUTHORIZATION, "Bearer abc124")]),
            token
        ));
        assert!(!authorized(
            &headers(&[(AUTHORIZATION, "Basic abc123")]),
            token
        ));
        assert!(!authorized(&HeaderMap::new(), token));
        let ws = headers(&[(SEC_WEBSOCKET_PROTOCOL, "json, kimi-code.bearer.abc123")]);
        assert!(authorized(&ws, token));
        assert_eq!(
            offered_ws_protocol(&ws, token).as_deref(),
            Some("kimi-code.bearer.abc123")
        );
        let wrong = headers(&[(SEC_WEBSOCKET_PROTOCOL, "kimi-code.bearer.nope")]);
        assert!(!authorized(&wrong, token));
    }

    #[test]
    fn host_header_allowlist_rejects_foreign_names() {
        for ok in [
            "127.0.0.1:58627",
            "localhost:58627",
            "LOCALHOST",
            "[::1]:58627",
            "app.localhost",
            "10.0.0.5:80",
            "devbox:58627",
        ] {
            assert!(host_allowed(&headers(&[(HOST, ok)]), "devbox"), "{ok}");
        }
        for bad in [
            "evil.example.com",
            "evil.example.com:58627",
            "localhost.evil.com",
        ] {
            assert!(
                !host_allowed(&headers(&[(HOST, bad)]), "127.0.0.1"),
                "{bad}"
            );
        }
        assert!(host_allowed(&HeaderMap::new(), "127.0.0.1"));
        let both = headers(&[(HOST, "127.0.0.1"), (HOST, "evil.example.com")]);
        assert!(
            !host_allowed(&both, "127.0.0.1"),
            "every Host header is checked"
        );
    }
}
