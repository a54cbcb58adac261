//! The HTTP side shared by every wire format: the generic provider, client construction (rustls
//! with ring, proxies, loopback bypass), sending with cancellation, status classification, and
//! turning a response body into a delta stream through an SSE parser and a per-format decoder.

use std::collections::VecDeque;
use std::marker::PhantomData;
use std::sync::OnceLock;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tokio_util::sync::CancellationToken;

use crate::config::ResolvedModel;
use crate::delta::StreamDelta;
use crate::error::{HttpFailure, LlmError, classify_http, parse_retry_after};
use crate::provider::{DeltaStream, Provider};
use crate::request::ChatRequest;
use crate::sse::{SseEvent, SseParser};

/// Turns SSE events of one wire format into deltas.
pub(crate) trait Decoder: Send + 'static {
    fn event(&mut self, event: SseEvent, out: &mut Vec<StreamDelta>) -> Result<(), LlmError>;
    /// The format's end marker was seen (`[DONE]`, `message_stop`, `response.completed`):
    /// stop reading even if the server keeps the connection open.
    fn terminal(&self) -> bool;
    /// Ending here (EOF) is a complete answer.
    fn complete(&self) -> bool;
}

/// What differs between wire formats; everything else lives in [`HttpProvider`].
pub(crate) trait WireFormat: Send + Sync + 'static {
    /// The JSON request body.
    fn body(model: &ResolvedModel, request: &ChatRequest) -> serde_json::Value;
    /// Format-specific headers (auth, versions, betas); custom headers are added after them.
    fn auth(model: &ResolvedModel, request: &ChatRequest) -> Vec<(&'static str, String)>;
    /// The streaming endpoint.
    fn url(model: &ResolvedModel) -> String;
    /// A fresh decoder for one answer.
    fn decoder(model: &ResolvedModel) -> Box<dyn Decoder>;
}

/// A provider speaking wire format `W` over HTTP: serialises the body, attaches headers, POSTs,
/// classifies HTTP errors and hands the byte stream to `W`'s decoder.
pub(crate) struct HttpProvider<W> {
    model: ResolvedModel,
    client: reqwest::Client,
    format: PhantomData<fn() -> W>,
}

impl<W: WireFormat> HttpProvider<W> {
    pub(crate) fn new(model: ResolvedModel) -> Result<Self, LlmError> {
        let client = build_client(&model)?;
        Ok(HttpProvider {
            model,
            client,
            format: PhantomData,
        })
    }
}

#[async_trait]
impl<W: WireFormat> Provider for HttpProvider<W> {
    fn name(&self) -> &str {
        &self.model.provider_id
    }

    fn model(&self) -> &str {
        &self.model.model
    }

    async fn stream(&self, request: ChatRequest) -> Result<DeltaStream, LlmError> {
        let body = serde_json::to_vec(&W::body(&self.model, &request)).map_err(|err| {
            LlmError::InvalidRequest {
                provider: self.model.provider_id.clone(),
                detail: err.to_string(),
            }
        })?;
        let headers = headers(&self.model, &W::auth(&self.model, &request))?;
        post_stream(
            &self.client,
            &self.model,
            W::url(&self.model),
            headers,
            body,
            request.cancel,
            W::decoder(&self.model),
        )
        .await
    }
}

/// Clients are shared process-wide (one for proxied hosts, one for loopback): building one
/// loads the platform's root certificates, and a shared pool reuses connections across
/// providers and model switches.
static PROXIED_CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
static LOOPBACK_CLIENT: OnceLock<reqwest::Client> = OnceLock::new();

/// The reqwest client for one provider. The ring crypto provider is installed first: with
/// `rustls-no-provider`, building a client without one panics (crates.md §4).
fn build_client(model: &ResolvedModel) -> Result<reqwest::Client, LlmError> {
    let loopback = is_loopback(&model.base_url);
    let cell = if loopback {
        &LOOPBACK_CLIENT
    } else {
        &PROXIED_CLIENT
    };
    if let Some(client) = cell.get() {
        return Ok(client.clone());
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut builder = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(30))
        // Thinking models can go quiet for minutes; this bounds a dead connection, not an answer.
        .read_timeout(Duration::from_secs(600))
        .user_agent(concat!("kimi-rs/", env!("CARGO_PKG_VERSION")));
    if loopback {
        // Proxies come from HTTP(S)_PROXY/ALL_PROXY via reqwest's system-proxy support;
        // loopback must never go through them (surface.md §4.4).
        builder = builder.no_proxy();
    }
    let client = builder.build().map_err(|err| LlmError::InvalidRequest {
        provider: model.provider_id.clone(),
        detail: format!("HTTP client setup failed: {err}"),
    })?;
    // A concurrent first call may have won the race; either client is equivalent.
    Ok(cell.get_or_init(|| client).clone())
}

fn is_loopback(base_url: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(base_url) else {
        return false;
    };
    let Some(host) = url.host_str() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Request headers: format-specific auth first, then the user's custom headers (which win).
fn headers(model: &ResolvedModel, auth: &[(&str, String)]) -> Result<HeaderMap, LlmError> {
    let mut map = HeaderMap::new();
    let bad = |name: &str| LlmError::InvalidRequest {
        provider: model.provider_id.clone(),
        detail: format!(
            "header `{name}` has a name or value that cannot be sent over HTTP; check custom_headers and the API key"
        ),
    };
    for (name, value) in auth.iter().map(|(n, v)| (*n, v.as_str())).chain(
        model
            .custom_headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str())),
    ) {
        let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad(name))?;
        let value = HeaderValue::from_str(value).map_err(|_| bad(name))?;
        map.insert(header, value);
    }
    Ok(map)
}

fn send_error(provider: &str, url: &str, err: &reqwest::Error) -> LlmError {
    // The innermost source carries the useful words ("connection refused", "reset by peer").
    let mut detail = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(inner) = source {
        detail = format!("{detail}: {inner}");
        source = inner.source();
    }
    if err.is_timeout() {
        LlmError::Timeout {
            provider: provider.to_owned(),
            detail,
        }
    } else {
        LlmError::Connection {
            provider: provider.to_owned(),
            url: url.to_owned(),
            detail,
        }
    }
}

/// POSTs `body` and, on a 2xx answer, returns the delta stream produced by `decoder`.
async fn post_stream(
    client: &reqwest::Client,
    model: &ResolvedModel,
    url: String,
    headers: HeaderMap,
    body: Vec<u8>,
    cancel: CancellationToken,
    decoder: Box<dyn Decoder>,
) -> Result<DeltaStream, LlmError> {
    let provider = model.provider_id.clone();
    let log = crate::request_log::RequestLog::start(model, &url, &headers, body.len());
    let send = client
        .post(&url)
        .headers(headers)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header(reqwest::header::ACCEPT, "text/event-stream")
        .body(body)
        .send();
    let response = tokio::select! {
        () = cancel.cancelled() => return Err(LlmError::Cancelled),
        result = send => result.map_err(|err| send_error(&provider, &url, &err)).inspect_err(|err| log.not_sent(err))?,
    };
    let status = response.status();
    if !status.is_success() {
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let retry_after = parse_retry_after(
            header("retry-after-ms").as_deref(),
            header("retry-after").as_deref(),
        );
        let text = tokio::select! {
            () = cancel.cancelled() => return Err(LlmError::Cancelled),
            text = response.text() => text.unwrap_or_default(),
        };
        let error = classify_http(HttpFailure {
            provider: &provider,
            status: status.as_u16(),
            body: &text,
            retry_after,
            key_source: &model.key_source,
        });
        log.refused(status.as_u16(), text.len(), &error);
        return Err(error);
    }
    let (body, meter) = log.meter(status.as_u16(), response.bytes_stream());
    Ok(meter.summarise(decode_body(provider, body, cancel, decoder)))
}

struct StreamState<S> {
    bytes: S,
    parser: SseParser,
    decoder: Box<dyn Decoder>,
    pending: VecDeque<Result<StreamDelta, LlmError>>,
    events: Vec<SseEvent>,
    deltas: Vec<StreamDelta>,
    provider: String,
    cancel: CancellationToken,
    done: bool,
}

impl<S> StreamState<S> {
    /// Runs parsed events through the decoder; a decoder error ends the stream after the
    /// deltas that preceded it.
    fn drain_events(&mut self) {
        for event in std::mem::take(&mut self.events) {
            if self.done {
                break;
            }
            let result = self.decoder.event(event, &mut self.deltas);
            self.pending.extend(self.deltas.drain(..).map(Ok));
            if let Err(err) = result {
                self.pending.push_back(Err(err));
                self.done = true;
            } else if self.decoder.terminal() {
                self.done = true;
            }
        }
    }
}

/// Decodes a byte stream (any chunking) into deltas. Works on any byte stream so the
/// benchmark and tests can drive it without a socket.
pub(crate) fn decode_body<S, E>(
    provider: String,
    bytes: S,
    cancel: CancellationToken,
    decoder: Box<dyn Decoder>,
) -> DeltaStream
where
    S: futures::Stream<Item = Result<bytes::Bytes, E>> + Send + Unpin + 'static,
    E: std::fmt::Display + Send + 'static,
{
    let state = StreamState {
        bytes,
        parser: SseParser::new(),
        decoder,
        pending: VecDeque::new(),
        events: Vec::new(),
        deltas: Vec::new(),
        provider,
        cancel,
        done: false,
    };
    Box::pin(futures::stream::unfold(state, |mut st| async move {
        loop {
            if let Some(item) = st.pending.pop_front() {
                return Some((item, st));
            }
            if st.done {
                return None;
            }
            let next = tokio::select! {
                () = st.cancel.cancelled() => {
                    st.done = true;
                    return Some((Err(LlmError::Cancelled), st));
                }
                next = st.bytes.next() => next,
            };
            match next {
                Some(Ok(chunk)) => {
                    st.parser.feed(&chunk, &mut st.events);
                    st.drain_events();
                }
                Some(Err(err)) => {
                    st.done = true;
                    let detail = format!("the connection failed mid-answer: {err}");
                    st.pending.push_back(Err(LlmError::StreamInterrupted {
                        provider: st.provider.clone(),
                        detail,
                    }));
                }
                None => {
                    st.parser.finish(&mut st.events);
                    st.drain_events();
                    if !st.done && !st.decoder.complete() {
                        st.pending.push_back(Err(LlmError::StreamInterrupted {
                            provider: st.provider.clone(),
                            detail: "the server closed the stream without its end marker"
                                .to_owned(),
                        }));
                    }
                    st.done = true;
                }
            }
        }
    }))
}

/// Parses one SSE data payload as JSON, with an error that shows what arrived.
pub(crate) fn parse_json(provider: &str, data: &str) -> Result<serde_json::Value, LlmError> {
    serde_json::from_str(data).map_err(|err| LlmError::MalformedStream {
        provider: provider.to_owned(),
        detail: format!(
            "{err} in data `{}`",
            data.chars().take(200).collect::<String>()
        ),
    })
}

/// Decodes a raw SSE byte stream in `model`'s wire format into deltas, exactly as a live
/// response would be. Used by the benchmark and handy for replaying captured streams.
pub fn decode_sse<S, E>(model: &ResolvedModel, bytes: S) -> DeltaStream
where
    S: futures::Stream<Item = Result<bytes::Bytes, E>> + Send + Unpin + 'static,
    E: std::fmt::Display + Send + 'static,
{
    use crate::config::ProviderType;
    let decoder = match model.provider_type {
        ProviderType::Kimi | ProviderType::OpenAi => crate::openai_chat::OpenAiChat::decoder(model),
        ProviderType::OpenAiResponses => crate::openai_responses::OpenAiResponses::decoder(model),
        ProviderType::Anthropic => crate::anthropic::Anthropic::decoder(model),
        ProviderType::GoogleGenAi | ProviderType::VertexAi => crate::gemini::Gemini::decoder(model),
    };
    decode_body(
        model.provider_id.clone(),
        bytes,
        CancellationToken::new(),
        decoder,
    )
}

#[cfg(test)]
mod tests {
    use super::is_loopback;

    #[test]
    fn loopback_hosts_bypass_proxies() {
        for url in [
            "http://127.0.0.1:8000/v1",
            "http://localhost:11434",
            "http://[::1]:80",
            "http://127.8.9.1",
        ] {
            assert!(is_loopback(url), "{url}");
        }
        for url in ["https://api.moonshot.ai/v1", "http://10.0.0.2", "not a url"] {
            assert!(!is_loopback(url), "{url}");
        }
    }
}
