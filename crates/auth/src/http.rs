//! The HTTP client of the account endpoints (rustls with ring, system proxies except for
//! loopback) and the form POST the OAuth endpoints take.

use std::time::Duration;

use serde_json::Value;

use crate::error::AuthError;

const TIMEOUT: Duration = Duration::from_secs(30);

fn is_loopback(url: &str) -> bool {
    reqwest::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .is_some_and(|host| {
            let host = host.trim_start_matches('[').trim_end_matches(']');
            host.eq_ignore_ascii_case("localhost")
                || host
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        })
}

/// A client for `url` (loopback bypasses proxies, as for model requests).
pub(crate) fn client_for(url: &str) -> Result<reqwest::Client, AuthError> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut builder = reqwest::Client::builder()
        .timeout(TIMEOUT)
        .user_agent(concat!("kimi-rs/", env!("CARGO_PKG_VERSION")));
    if is_loopback(url) {
        builder = builder.no_proxy();
    }
    builder.build().map_err(|err| AuthError::Network {
        url: url.to_owned(),
        detail: format!("HTTP client setup failed: {err}"),
    })
}

pub(crate) fn network(url: &str, err: &reqwest::Error) -> AuthError {
    let mut detail = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(inner) = source {
        detail = format!("{detail}: {inner}");
        source = inner.source();
    }
    AuthError::Network {
        url: url.to_owned(),
        detail,
    }
}

/// POSTs a form; returns the status and the JSON object of the answer (empty when the body
/// is not JSON: the caller judges by the status).
pub(crate) async fn post_form(
    url: &str,
    form: &[(&str, &str)],
) -> Result<(u16, serde_json::Map<String, Value>), AuthError> {
    let client = client_for(url)?;
    let response = client
        .post(url)
        .header(reqwest::header::ACCEPT, "application/json")
        .form(form)
        .send()
        .await
        .map_err(|err| network(url, &err))?;
    let status = response.status().as_u16();
    let body = response.text().await.map_err(|err| network(url, &err))?;
    let map = match serde_json::from_str::<Value>(&body) {
        Ok(Value::Object(map)) => map,
        _ => serde_json::Map::new(),
    };
    Ok((status, map))
}

/// The server's own words for an error answer: `error_description`, `message`, `error`, or
/// `detail`, else "no detail".
pub(crate) fn error_detail(map: &serde_json::Map<String, Value>) -> String {
    for key in ["error_description", "message", "detail", "error"] {
        if let Some(text) = map
            .get(key)
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
        {
            return text.to_owned();
        }
        if let Some(text) = map
            .get(key)
            .and_then(|v| v.get("message"))
            .and_then(Value::as_str)
        {
            return text.to_owned();
        }
    }
    "no detail".to_owned()
}

/// GET with a bearer token; returns the status and body.
pub(crate) async fn get_bearer(
    url: &str,
    token: &str,
    headers: &[(String, String)],
) -> Result<(u16, String), AuthError> {
    let client = client_for(url)?;
    let mut request = client
        .get(url)
        .bearer_auth(token)
        .header(reqwest::header::ACCEPT, "application/json");
    for (name, value) in headers {
        request = request.header(name.as_str(), value.as_str());
    }
    let response = request.send().await.map_err(|err| network(url, &err))?;
    let status = response.status().as_u16();
    let body = response.text().await.map_err(|err| network(url, &err))?;
    Ok((status, body))
}

/// GET `url` and return the body (a catalog, a registry): any status but 200 is an error.
pub async fn fetch_text(url: &str, bearer: Option<&str>) -> Result<String, AuthError> {
    let client = client_for(url)?;
    let mut request = client.get(url);
    if let Some(token) = bearer {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.map_err(|err| network(url, &err))?;
    let status = response.status().as_u16();
    let body = response.text().await.map_err(|err| network(url, &err))?;
    if status != 200 {
        return Err(AuthError::Http {
            url: url.to_owned(),
            status,
            detail: body.chars().take(200).collect(),
        });
    }
    Ok(body)
}

/// GET `url` and return the body bytes (a release download): any status but 200 is an error.
pub async fn fetch_bytes(url: &str) -> Result<Vec<u8>, AuthError> {
    let client = client_for(url)?;
    let response = client
        .get(url)
        .send()
        .await
        .map_err(|err| network(url, &err))?;
    let status = response.status().as_u16();
    let body = response.bytes().await.map_err(|err| network(url, &err))?;
    if status != 200 {
        return Err(AuthError::Http {
            url: url.to_owned(),
            status,
            detail: String::from_utf8_lossy(&body).chars().take(200).collect(),
        });
    }
    Ok(body.to_vec())
}
