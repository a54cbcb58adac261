//! Who may talk to the server: the bearer token kept in `$KIMI_RS_HOME/server.token` (0600,
//! created on first boot), accepted as `Authorization: Bearer` or as the WebSocket subprotocol
//! `kimi-code.bearer.<token>` (a token file others could read is replaced), the Host-header
//! allowlist that defeats DNS rebinding and the Origin check of WebSocket upgrades.

use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use axum::http::HeaderMap;
use axum::http::header::{AUTHORIZATION, HOST, ORIGIN, SEC_WEBSOCKET_PROTOCOL};

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
        "cannot create the server token {path}: {source}; check that the kimi-rs home is writable and that this path is not a directory"
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

/// The server token, and why the file that held it was not trusted, if it was replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerToken {
    pub token: String,
    /// Set when the token file was exposed (group/other permissions, or not a regular file)
    /// and a fresh token was written in its place: what was wrong with it.
    pub rotated: Option<String>,
}

/// Read the server token, creating it (owner read/write only) on first boot. A token file that
/// other users could read or change, or that is not a regular file (a symlink could point
/// anywhere), is not used: a fresh token replaces it and `rotated` says why.
pub fn load_or_create_token(home: &Path) -> Result<ServerToken, TokenError> {
    let path = token_path(home);
    // `symlink_metadata` so that a link is judged itself, not what it points to. Whoever could
    // swap the file between this check and the read can write to the kimi-rs home anyway.
    let rotated = match std::fs::symlink_metadata(&path) {
        Ok(meta) => match exposure(&meta) {
            Some(why) => Some(why),
            None => match std::fs::read_to_string(&path) {
                Ok(text) if !text.trim().is_empty() => {
                    return Ok(ServerToken {
                        token: text.trim().to_owned(),
                        rotated: None,
                    });
                }
                Ok(_) => None,
                Err(source) => return Err(TokenError::Read { path, source }),
            },
        },
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
        Err(source) => return Err(TokenError::Read { path, source }),
    };
    if let Some(why) = &rotated {
        tracing::warn!(
            "the server token file {} {why}: it is replaced by a new token readable by you only",
            path.display()
        );
    }
    let token = new_token();
    write_private(&path, &token).map_err(|source| TokenError::Write {
        path: path.clone(),
        source,
    })?;
    Ok(ServerToken { token, rotated })
}

/// What makes the token file unfit to hold a secret, if anything.
fn exposure(meta: &std::fs::Metadata) -> Option<String> {
    let kind = meta.file_type();
    if kind.is_symlink() {
        return Some("is a symbolic link, not a regular file".to_owned());
    }
    if !kind.is_file() {
        return Some("is not a regular file".to_owned());
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Some(format!(
                "could be read or changed by other users (mode {mode:03o})"
            ));
        }
    }
    None
}

/// Write `token` to `path` atomically: a temp file in the same directory, created 0600, then
/// renamed over `path`, so no reader ever sees a partial or world-readable token.
fn write_private(path: &Path, token: &str) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut builder = tempfile::Builder::new();
    builder.prefix(".server.token.");
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600));
    let mut file = builder.tempfile_in(dir)?;
    file.write_all(token.as_bytes())?;
    file.write_all(b"\n")?;
    file.as_file().sync_all()?;
    file.persist(path).map_err(|err| err.error)?;
    Ok(())
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

/// Cross-site WebSocket hijacking defence: browsers do not apply the same-origin policy to
/// WebSockets, so the upgrade checks `Origin` itself. No Origin means no browser (scripts,
/// CLIs) and is allowed; a browser must come from this server's own page, `http://` plus the
/// Host the request used (which [`host_allowed`] has vetted). Anything else, `null` included,
/// is refused.
pub fn origin_allowed(headers: &HeaderMap) -> bool {
    let mut origins = headers.get_all(ORIGIN).iter();
    let Some(origin) = origins.next() else {
        return true;
    };
    let mut hosts = headers.get_all(HOST).iter();
    let (None, Some(host), None) = (origins.next(), hosts.next(), hosts.next()) else {
        return false;
    };
    let (Ok(origin), Ok(host)) = (origin.to_str(), host.to_str()) else {
        return false;
    };
    origin
        .trim()
        .strip_prefix("http://")
        .is_some_and(|own| own.eq_ignore_ascii_case(host.trim()))
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
        assert_eq!(first.token.len(), 64);
        assert_eq!(first.rotated, None);
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

    #[cfg(unix)]
    fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::symlink_metadata(path)
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    }

    #[cfg(unix)]
    #[test]
    fn an_exposed_token_file_is_replaced_by_a_private_one() {
        use std::os::unix::fs::PermissionsExt;
        for (exposed, why) in [
            (0o644, "mode 644"),
            (0o620, "mode 620"),
            (0o601, "mode 601"),
        ] {
            let home = tempfile::tempdir().unwrap();
            let path = token_path(home.path());
            std::fs::write(&path, "old-token\n").unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(exposed)).unwrap();
            let loaded = load_or_create_token(home.path()).unwrap();
            assert_ne!(loaded.token, "old-token");
            assert_eq!(loaded.token.len(), 64);
            assert!(
                loaded.rotated.as_deref().unwrap().contains(why),
                "{loaded:?}"
            );
            assert_eq!(mode(&path), 0o600);
            assert_eq!(
                std::fs::read_to_string(&path).unwrap(),
                format!("{}\n", loaded.token)
            );
            // The new file is trusted as it is.
            assert_eq!(load_or_create_token(home.path()).unwrap().rotated, None);
            let names: Vec<_> = std::fs::read_dir(home.path())
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            assert_eq!(names, ["server.token"], "no temp file is left behind");
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_token_file_that_is_a_link_is_replaced_and_its_target_left_alone() {
        let home = tempfile::tempdir().unwrap();
        let elsewhere = home.path().join("elsewhere");
        std::fs::write(&elsewhere, "planted-token\n").unwrap();
        let path = token_path(home.path());
        std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
        let loaded = load_or_create_token(home.path()).unwrap();
        assert_ne!(loaded.token, "planted-token");
        assert!(
            loaded.rotated.as_deref().unwrap().contains("symbolic link"),
            "{loaded:?}"
        );
        assert!(std::fs::symlink_metadata(&path).unwrap().is_file());
        assert_eq!(mode(&path), 0o600);
        assert_eq!(
            std::fs::read_to_string(&elsewhere).unwrap(),
            "planted-token\n"
        );
    }

    #[test]
    fn websocket_origin_must_be_the_servers_own_page() {
        let own = [
            (HOST, "127.0.0.1:58627"),
            (ORIGIN, "http://127.0.0.1:58627"),
        ];
        assert!(origin_allowed(&headers(&own)));
        assert!(origin_allowed(&headers(&[
            (HOST, "LocalHost:9"),
            (ORIGIN, "http://localhost:9")
        ])));
        assert!(origin_allowed(&headers(&[
            (HOST, "[::1]:9"),
            (ORIGIN, "http://[::1]:9")
        ])));
        assert!(
            origin_allowed(&headers(&[(HOST, "127.0.0.1:9")])),
            "no Origin: not a browser"
        );
        assert!(origin_allowed(&HeaderMap::new()));
        for (host, origin) in [
            ("127.0.0.1:58627", "http://evil.example.com"),
            ("127.0.0.1:58627", "http://127.0.0.1:58628"),
            ("127.0.0.1:58627", "https://127.0.0.1:58627"),
            ("127.0.0.1:58627", "null"),
            ("127.0.0.1:58627", "http://127.0.0.1:58627.evil.example.com"),
        ] {
            assert!(
                !origin_allowed(&headers(&[(HOST, host), (ORIGIN, origin)])),
                "{origin}"
            );
        }
        assert!(
            !origin_allowed(&headers(&[(ORIGIN, "http://127.0.0.1:58627")])),
            "an Origin without a Host"
        );
        let two = headers(&[
            (HOST, "127.0.0.1:9"),
            (ORIGIN, "http://127.0.0.1:9"),
            (ORIGIN, "http://evil.example.com"),
        ]);
        assert!(!origin_allowed(&two));
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
