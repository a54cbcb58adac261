//! The LLM provider of a login: before each request it takes a fresh access token from the
//! [`TokenManager`] and sends it as `Authorization: Bearer`; when the server answers 401 it
//! refreshes the token once and sends the request again. A login that is gone or refused
//! fails the request with "run `kimi-rs login`" (not retried: waiting cannot fix it).

use std::sync::Arc;

use async_trait::async_trait;
use kimi_llm::{ChatRequest, DeltaStream, LlmError, Provider, ResolvedModel, build_provider};

use crate::endpoints::Endpoints;
use crate::error::AuthError;
use crate::refresh::TokenManager;
use crate::store::{Storage, TokenStore};

pub struct ManagedProvider {
    model: ResolvedModel,
    tokens: Arc<TokenManager>,
}

impl ManagedProvider {
    pub fn new(model: ResolvedModel, tokens: Arc<TokenManager>) -> ManagedProvider {
        ManagedProvider { model, tokens }
    }

    fn login_error(&self, err: &AuthError) -> LlmError {
        if err.needs_login() {
            LlmError::LoginRequired {
                provider: self.model.provider_id.clone(),
                message: err.to_string(),
            }
        } else {
            // The auth server could not be reached or failed: a transient problem.
            LlmError::Connection {
                provider: self.model.provider_id.clone(),
                url: self.model.base_url.clone(),
                detail: format!("could not get an access token: {err}"),
            }
        }
    }

    fn with_token(&self, token: String) -> ResolvedModel {
        let mut model = self.model.clone();
        model.api_key = token;
        model
    }
}

/// The token manager of a resolved login model (its `oauth` reference and base URL), or
/// `None` for a key-based model.
pub fn token_manager(
    home: &std::path::Path,
    model: &ResolvedModel,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<Arc<TokenManager>>, AuthError> {
    let Some(oauth) = &model.oauth else {
        return Ok(None);
    };
    let endpoints = Endpoints::configured(oauth.oauth_host.as_deref(), Some(&model.base_url), env);
    Ok(Some(Arc::new(TokenManager::new(
        TokenStore::with_storage(home, Storage::from_config(oauth.storage.as_deref())),
        &oauth.key,
        &endpoints,
    ))))
}

#[async_trait]
impl Provider for ManagedProvider {
    fn name(&self) -> &str {
        &self.model.provider_id
    }

    fn model(&self) -> &str {
        &self.model.model
    }

    async fn stream(&self, request: ChatRequest) -> Result<DeltaStream, LlmError> {
        let token = self
            .tokens
            .access_token(None)
            .await
            .map_err(|err| self.login_error(&err))?;
        let first = build_provider(&self.with_token(token.clone()))?;
        match first.stream(request.clone()).await {
            Err(LlmError::Auth { status: 401, .. }) => {
                tracing::info!(
                    provider = %self.model.provider_id,
                    "the server refused the access token; refreshing it and retrying once"
                );
                let fresh = self
                    .tokens
                    .access_token(Some(&token))
                    .await
                    .map_err(|err| self.login_error(&err))?;
                build_provider(&self.with_token(fresh))?
                    .stream(request)
                    .await
            }
            other => other,
        }
    }
}
