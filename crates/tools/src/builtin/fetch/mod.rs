//! FetchURL: through the configured fetch service when there is one (`[services.moonshot_fetch]`
//! or the Kimi login, see [`FetchService`]), else — and whenever the service fails — the local
//! fetcher: GET with a browser-like User-Agent, at most 10 redirects, every hop re-checked
//! against the SSRF guard; HTML is reduced to text.

mod guard;
mod html;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use reqwest::Url;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

pub use guard::is_forbidden_ip;
pub use html::html_to_text;

use crate::context::{ProgressSink, ToolContext};
use crate::error::ToolError;
use crate::result::ToolResult;
use crate::tool::{Execution, Resolution, RuleSubject, Tool, ToolDisplay, ToolPlan, parse_args};

pub const MAX_BODY_BYTES: usize = 10 * 1024 * 1024;
pub const MAX_REDIRECTS: usize = 10;
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
const USER_AGENT: &str = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36";

#[derive(Debug, Deserialize)]
struct Params {
    url: String,
}

/// A remote fetch service: returns the page's main text (Markdown), or why it could not.
#[async_trait]
pub trait FetchService: Send + Sync {
    /// What the service is, for the output note and logs (`the Kimi fetch service`).
    fn label(&self) -> String;
    async fn fetch(&self, url: &str, cancel: CancellationToken) -> Result<String, String>;
}

/// The tool; [`FetchUrlTool::default`] fetches locally only.
#[derive(Clone, Default)]
pub struct FetchUrlTool {
    service: Option<Arc<dyn FetchService>>,
}

impl FetchUrlTool {
    /// FetchURL through `service`, falling back to the local fetcher when it fails.
    pub fn with_service(service: Arc<dyn FetchService>) -> FetchUrlTool {
        FetchUrlTool {
            service: Some(service),
        }
    }
}

impl std::fmt::Debug for FetchUrlTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FetchUrlTool")
            .field("service", &self.service.as_ref().map(|s| s.label()))
            .finish()
    }
}

#[async_trait]
impl Tool for FetchUrlTool {
    fn name(&self) -> &str {
        "FetchURL"
    }

    fn description(&self) -> String {
        "Fetch a web page (http or https) and return its main text; HTML is reduced to readable text, plain text and \
         Markdown are returned verbatim. Private and local network addresses are refused."
            .to_owned()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"url": {"type": "string", "description": "The http(s) URL to fetch."}},
            "required": ["url"],
            "additionalProperties": false
        })
    }

    fn resolve(&self, args: Value, _ctx: &ToolContext) -> Result<Resolution, ToolError> {
        let p: Params = parse_args(args)?;
        let url = Url::parse(p.url.trim())
            .map_err(|e| ToolError::InvalidArgs(format!("`{}` is not a valid URL: {e}", p.url)))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ToolError::InvalidArgs(format!(
                "only http and https URLs can be fetched, not `{}`.",
                url.scheme()
            )));
        }
        let shown = url.to_string();
        Ok(Resolution::Run(Box::new(FetchExecution {
            plan: ToolPlan {
                accesses: Some(Vec::new()),
                approval_rule: format!("FetchURL({shown})"),
                subject: RuleSubject::Text(shown.clone()),
                display: ToolDisplay {
                    kind: "fetch".to_owned(),
                    summary: shown.clone(),
                    detail: None,
                    diff: None,
                },
                description: format!("Fetch {shown}"),
                stop_batch_after_this: false,
            },
            url,
            service: self.service.clone(),
        })))
    }
}

struct FetchExecution {
    plan: ToolPlan,
    url: Url,
    service: Option<Arc<dyn FetchService>>,
}

#[async_trait]
impl Execution for FetchExecution {
    fn plan(&self) -> &ToolPlan {
        &self.plan
    }

    async fn execute(
        self: Box<Self>,
        ctx: &ToolContext,
        cancel: CancellationToken,
        _progress: ProgressSink,
    ) -> ToolResult {
        let mut note = String::new();
        if let Some(service) = &self.service {
            let label = service.label();
            match service.fetch(self.url.as_str(), cancel.clone()).await {
                Ok(text) => {
                    return ToolResult::ok(format!(
                        "[Main text of {} extracted by {label}]\n{text}",
                        self.url
                    ));
                }
                Err(_) if cancel.is_cancelled() => {
                    return ToolResult::error("FetchURL was cancelled.");
                }
                Err(err) => {
                    tracing::warn!("{label} failed for {}: {err}; fetching locally", self.url);
                    note = format!("[{label} failed ({err}); fetched locally instead]\n");
                }
            }
        }
        tokio::select! {
            result = fetch(self.url, ctx.settings.fetch_allow_private) => match result {
                Ok(text) => ToolResult::ok(format!("{note}{text}")),
                Err(message) => ToolResult::error(format!("{note}{message}")),
            },
            () = cancel.cancelled() => ToolResult::error("FetchURL was cancelled."),
        }
    }
}

/// Resolve the hop's host and refuse forbidden addresses; returns the addresses to pin so the
/// connection cannot be re-resolved somewhere else (DNS rebinding).
async fn check_hop(url: &Url, allow_private: bool) -> Result<Vec<SocketAddr>, String> {
    let host = url
        .host_str()
        .ok_or_else(|| format!("`{url}` has no host."))?;
    let port = url.port_or_known_default().unwrap_or(80);
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let addrs: Vec<SocketAddr> = match bare.parse::<std::net::IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => tokio::net::lookup_host((bare, port))
            .await
            .map_err(|e| format!("Could not resolve `{host}`: {e}"))?
            .collect(),
    };
    if addrs.is_empty() {
        return Err(format!("Could not resolve `{host}`: no addresses."));
    }
    if !allow_private && let Some(bad) = addrs.iter().find(|a| is_forbidden_ip(a.ip())) {
        return Err(format!(
            "Refusing to fetch {url}: `{host}` resolves to {}, a private, loopback or link-local address. \
             Only public addresses can be fetched.",
            bad.ip()
        ));
    }
    Ok(addrs)
}

async fn fetch(start: Url, allow_private: bool) -> Result<String, String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut url = start;
    let mut redirects = 0;
    let response = loop {
        let addrs = check_hop(&url, allow_private).await?;
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(USER_AGENT)
            .timeout(REQUEST_TIMEOUT)
            .no_proxy();
        if let Some(host) = url.host_str()
            && host.parse::<std::net::IpAddr>().is_err()
        {
            builder = builder.resolve_to_addrs(host, &addrs);
        }
        let client = builder
            .build()
            .map_err(|e| format!("Could not build the HTTP client: {e}"))?;
        let response = client
            .get(url.clone())
            .send()
            .await
            .map_err(|e| format!("Request to {url} failed: {e}"))?;
        if response.status().is_redirection()
            && let Some(location) = response.headers().get(reqwest::header::LOCATION)
        {
            redirects += 1;
            if redirects > MAX_REDIRECTS {
                return Err(format!(
                    "Too many redirects (more than {MAX_REDIRECTS}) starting at {url}."
                ));
            }
            let location = location
                .to_str()
                .map_err(|_| format!("{url} sent an unreadable redirect location."))?;
            url = url.join(location).map_err(|e| {
                format!("{url} redirected to an invalid location `{location}`: {e}")
            })?;
            if !matches!(url.scheme(), "http" | "https") {
                return Err(format!(
                    "Refusing to follow a redirect to a `{}` URL.",
                    url.scheme()
                ));
            }
            continue;
        }
        break response;
    };
    let status = response.status();
    let final_url = response.url().clone();
    if !status.is_success() {
        return Err(format!("HTTP {status} for {final_url}."));
    }
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let is_html = content_type.contains("html");
    let is_text = content_type.is_empty()
        || content_type.starts_with("text/")
        || ["json", "xml", "markdown", "javascript", "yaml", "toml"]
            .iter()
            .any(|k| content_type.contains(k));
    if !is_html && !is_text {
        return Err(format!(
            "{final_url} returned `{content_type}`, which is not text; FetchURL only returns text content."
        ));
    }
    let mut body: Vec<u8> = Vec::new();
    let mut capped = false;
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| format!("Reading the body of {final_url} failed: {e}"))?;
        let room = MAX_BODY_BYTES - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            capped = true;
            break;
        }
        body.extend_from_slice(&chunk);
    }
    let text = String::from_utf8_lossy(&body);
    let cap_note = if capped {
        " (body cut at the 10 MiB limit)"
    } else {
        ""
    };
    if is_html {
        let (title, content) = html_to_text(&text);
        let mut out = format!("[Extracted text of the HTML page {final_url}{cap_note}]\n");
        if let Some(title) = title {
            out.push_str(&format!("Title: {title}\n\n"));
        }
        out.push_str(&content);
        Ok(out)
    } else {
        Ok(format!(
            "[Verbatim body of {final_url} ({content_type}){cap_note}]\n{text}"
        ))
    }
}
