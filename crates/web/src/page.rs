//! The browser page: one HTML file, one hand-written stylesheet and two scripts, embedded in
//! the binary (no build step, no CDN) and served outside `/api` without the token (the page
//! asks for it). A strict Content-Security-Policy allows only these same-origin assets, so
//! even a rendering bug cannot run or load anything a model wrote.

use axum::extract::Path;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

use crate::error::{ApiError, code};

const INDEX_HTML: &str = include_str!("page/index.html");

/// `(name under /assets/, content type, body)`.
const ASSETS: &[(&str, &str, &str)] = &[
    (
        "app.css",
        "text/css; charset=utf-8",
        include_str!("page/app.css"),
    ),
    (
        "app.js",
        "text/javascript; charset=utf-8",
        include_str!("page/app.js"),
    ),
    (
        "markdown.js",
        "text/javascript; charset=utf-8",
        include_str!("page/markdown.js"),
    ),
];

/// Scripts and styles from this server only: no inline script, no remote images.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
                   connect-src 'self' ws: wss:; base-uri 'none'; form-action 'none'; \
                   frame-ancestors 'none'";

fn harden(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

pub async fn index() -> Response {
    harden(axum::response::Html(INDEX_HTML).into_response())
}

pub async fn asset(Path(name): Path<String>) -> Response {
    match ASSETS.iter().find(|(n, _, _)| *n == name) {
        Some((_, content_type, body)) => harden(
            (
                [(header::CONTENT_TYPE, HeaderValue::from_static(content_type))],
                *body,
            )
                .into_response(),
        ),
        None => ApiError::new(
            code::NO_ENDPOINT,
            format!(
                "no asset {name}: the page uses {}",
                ASSETS
                    .iter()
                    .map(|(n, _, _)| format!("/assets/{n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
        .into_response(),
    }
}
