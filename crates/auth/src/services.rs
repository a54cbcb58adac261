//! The Moonshot search and fetch services behind WebSearch and FetchURL (surface.md §2.3,
//! §4.2): `[services.moonshot_search]` / `[services.moonshot_fetch]` (`base_url`, `api_key` or
//! the login's `oauth`, `custom_headers`), overridden by `KIMI_WEB_SEARCH_BASE_URL/_API_KEY`
//! and `KIMI_WEB_FETCH_BASE_URL/_API_KEY`, else the managed login's `<base>/search` and
//! `<base>/fetch`. Requests are `POST <base_url>` with JSON and a bearer credential; a login
//! token the service refuses is refreshed once.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use kimi_config::{Config, OAuthRef, ServiceEntry};
use kimi_tools::builtin::FetchService;
use kimi_tools::builtin::web_search::{SearchBackend, SearchError, SearchHit};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::PROVIDER_NAME;
use crate::endpoints::{Endpoints, env_base_url};
use crate::http::{client_for, network};
use crate::refresh::TokenManager;
use crate::store::{Storage, TokenStore};

/// Which service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Search,
    Fetch,
}

impl Kind {
    fn env_prefix(self) -> &'static str {
        match self {
            Kind::Search => "KIMI_WEB_SEARCH",
            Kind::Fetch => "KIMI_WEB_FETCH",
        }
    }

    fn path(self) -> &'static str {
        match self {
            Kind::Search => "search",
            Kind::Fetch => "fetch",
        }
    }

    fn entry(self, config: &Config) -> Option<&ServiceEntry> {
        match self {
            Kind::Search => config.services.moonshot_search.as_ref(),
            Kind::Fetch => config.services.moonshot_fetch.as_ref(),
        }
    }
}

/// A resolved service endpoint and its credential.
pub struct Service {
    kind: Kind,
    url: String,
    api_key: Option<String>,
    tokens: Option<Arc<TokenManager>>,
    headers: Vec<(String, String)>,
    /// Where the settings came from, for messages.
    origin: String,
}

fn non_blank(text: Option<String>) -> Option<String> {
    text.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty())
}

fn tokens_for(
    home: &Path,
    oauth: &OAuthRef,
    base_url: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Arc<TokenManager> {
    let endpoints = Endpoints::configured(oauth.oauth_host.as_deref(), base_url, env);
    Arc::new(TokenManager::new(
        TokenStore::with_storage(home, Storage::from_config(oauth.storage.as_deref())),
        &oauth.key,
        &endpoints,
    ))
}

/// The service of `kind`, or `None` when nothing configures one.
pub fn resolve(
    kind: Kind,
    home: &Path,
    config: &Config,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<Service> {
    let prefix = kind.env_prefix();
    let env_url = non_blank(env(&format!("{prefix}_BASE_URL")));
    let env_key = non_blank(env(&format!("{prefix}_API_KEY")));
    if let Some(url) = env_url {
        return Some(Service {
            kind,
            url,
            api_key: env_key,
            tokens: None,
            headers: Vec::new(),
            origin: format!("{prefix}_BASE_URL"),
        });
    }
    if let Some(entry) = kind.entry(config)
        && let Some(url) = non_blank(entry.base_url.clone())
    {
        // An API key from the environment replaces the file's credential (key and login).
        let (api_key, tokens) = match env_key {
            Some(key) => (Some(key), None),
            None => (
                non_blank(entry.api_key.clone()),
                entry
                    .oauth
                    .as_ref()
                    .map(|oauth| tokens_for(home, oauth, None, env)),
            ),
        };
        return Some(Service {
            kind,
            url,
            api_key,
            tokens,
            headers: entry
                .custom_headers
                .clone()
                .unwrap_or_default()
                .into_iter()
                .collect(),
            origin: format!("[services.moonshot_{}] of config.toml", kind.path()),
        });
    }
    // The managed login offers both services at its own base URL.
    let provider = config.providers.get(PROVIDER_NAME)?;
    let oauth = provider.oauth.as_ref()?;
    let base = env_base_url(env)
        .or_else(|| provider.base_url.clone())
        .unwrap_or_else(|| crate::Region::MainlandCn.base_url().to_owned());
    let base = base.trim_end_matches('/').to_owned();
    Some(Service {
        kind,
        url: format!("{base}/{}", kind.path()),
        api_key: env_key,
        tokens: Some(tokens_for(home, oauth, Some(&base), env)),
        headers: provider.custom_headers.clone().into_iter().collect(),
        origin: "the Kimi Code login".to_owned(),
    })
}

/// Why a request failed: an auth refusal (status 401/403) is told apart.
enum Failure {
    Auth(String),
    Other(String),
}

impl Service {
    async fn credential(&self, stale: Option<&str>) -> Result<String, String> {
        if let Some(tokens) = &self.tokens {
            match tokens.access_token(stale).await {
                Ok(token) => return Ok(token),
                Err(err) => {
                    if let Some(key) = &self.api_key {
                        return Ok(key.clone());
                    }
                    return Err(err.to_string());
                }
            }
        }
        self.api_key.clone().ok_or_else(|| {
            format!(
                "the {} service from {} has neither an API key nor a login",
                self.kind.path(),
                self.origin
            )
        })
    }

    async fn post_once(
        &self,
        body: &Value,
        accept: &str,
        credential: &str,
    ) -> Result<String, Failure> {
        let client = client_for(&self.url).map_err(|e| Failure::Other(e.to_string()))?;
        let mut request = client
            .post(&self.url)
            .bearer_auth(credential)
            .header(reqwest::header::ACCEPT, accept)
            .json(body);
        for (name, value) in &self.headers {
            request = request.header(name.as_str(), value.as_str());
        }
        let response = request
            .send()
            .await
            .map_err(|err| Failure::Other(network(&self.url, &err).to_string()))?;
        let status = response.status().as_u16();
        let text = response
            .text()
            .await
            .map_err(|err| Failure::Other(network(&self.url, &err).to_string()))?;
        match status {
            200 => Ok(text),
            401 | 403 => Err(Failure::Auth(format!(
                "HTTP {status} from {}: {}",
                self.url,
                text.chars().take(200).collect::<String>()
            ))),
            _ => Err(Failure::Other(format!(
                "HTTP {status} from {}: {}",
                self.url,
                text.chars().take(200).collect::<String>()
            ))),
        }
    }

    /// POSTs `body`; with a login, a refused token is refreshed and the request sent again.
    async fn post(&self, body: &Value, accept: &str) -> Result<String, Failure> {
        let credential = self.credential(None).await.map_err(Failure::Auth)?;
        match self.post_once(body, accept, &credential).await {
            Err(Failure::Auth(_)) if self.tokens.is_some() => {
                let fresh = self
                    .credential(Some(&credential))
                    .await
                    .map_err(Failure::Auth)?;
                self.post_once(body, accept, &fresh).await
            }
            other => other,
        }
    }
}

/// WebSearch through a search service.
pub struct SearchService(pub Service);

#[async_trait]
impl SearchBackend for SearchService {
    async fn search(
        &self,
        query: &str,
        cancel: CancellationToken,
    ) -> Result<Vec<SearchHit>, SearchError> {
        let body = json!({"text_query": query});
        let answer = tokio::select! {
            a = self.0.post(&body, "application/json") => a,
            () = cancel.cancelled() => return Err(SearchError::Cancelled),
        };
        let text = match answer {
            Ok(text) => text,
            Err(Failure::Auth(detail)) => return Err(SearchError::Authentication(detail)),
            Err(Failure::Other(detail)) if detail.contains("could not reach") => {
                return Err(SearchError::Network(detail));
            }
            Err(Failure::Other(detail)) => return Err(SearchError::Other(detail)),
        };
        let json: Value = serde_json::from_str(&text)
            .map_err(|err| SearchError::Other(format!("the search service sent no JSON: {err}")))?;
        let field = |item: &Value, key: &str| {
            item.get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        Ok(json
            .get("search_results")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|item| SearchHit {
                title: field(item, "title"),
                site: field(item, "site_name"),
                date: Some(field(item, "date")).filter(|d| !d.is_empty()),
                url: field(item, "url"),
                snippet: field(item, "snippet"),
            })
            .collect())
    }
}

/// FetchURL through a fetch service (the tool falls back to its local fetcher on failure).
pub struct FetchServiceImpl(pub Service);

#[async_trait]
impl FetchService for FetchServiceImpl {
    fn label(&self) -> String {
        format!("the fetch service of {}", self.0.origin)
    }

    async fn fetch(&self, url: &str, cancel: CancellationToken) -> Result<String, String> {
        let body = json!({"url": url});
        tokio::select! {
            a = self.0.post(&body, "text/markdown") => a.map_err(|f| match f {
                Failure::Auth(d) | Failure::Other(d) => d,
            }),
            () = cancel.cancelled() => Err("cancelled".to_owned()),
        }
    }
}

/// The WebSearch and FetchURL tools these settings call for: WebSearch only when a search
/// service exists, FetchURL with its service when a fetch service exists.
pub fn tools(
    home: &Path,
    config: &Config,
    env: &dyn Fn(&str) -> Option<String>,
) -> Vec<Arc<dyn kimi_tools::Tool>> {
    let mut tools: Vec<Arc<dyn kimi_tools::Tool>> = Vec::new();
    if let Some(search) = resolve(Kind::Search, home, config, env) {
        tracing::info!("WebSearch uses {} ({})", search.url, search.origin);
        tools.push(Arc::new(kimi_tools::builtin::WebSearchTool::new(Arc::new(
            SearchService(search),
        ))));
    }
    if let Some(fetch) = resolve(Kind::Fetch, home, config, env) {
        tracing::info!("FetchURL uses {} ({})", fetch.url, fetch.origin);
        tools.push(Arc::new(kimi_tools::builtin::FetchUrlTool::with_service(
            Arc::new(FetchServiceImpl(fetch)),
        )));
    }
    tools
}
