//! The `Provider` trait and the factory that builds the right wire format for a model.

use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use futures::Stream;

use crate::config::{ProviderType, ResolvedModel};
use crate::delta::StreamDelta;
use crate::error::LlmError;
use crate::request::ChatRequest;

/// The deltas of one answer. It ends after a `Finish` (or the format's end marker); a stream
/// that breaks early yields an error item ([`LlmError::StreamInterrupted`]) as its last item.
pub type DeltaStream = Pin<Box<dyn Stream<Item = Result<StreamDelta, LlmError>> + Send>>;

/// A model endpoint. `stream` resolves once the server accepted the request (so HTTP errors
/// come back from the call itself); the returned stream carries the answer.
#[async_trait]
pub trait Provider: Send + Sync {
    /// The provider id used in messages (`[providers.<id>]`, `env:kimi`, `scripted`).
    fn name(&self) -> &str;
    /// The model id sent to the provider.
    fn model(&self) -> &str;
    async fn stream(&self, request: ChatRequest) -> Result<DeltaStream, LlmError>;
}

/// Builds the HTTP provider for a resolved model.
pub fn build_provider(model: &ResolvedModel) -> Result<Arc<dyn Provider>, LlmError> {
    if model.oauth.is_some() && model.api_key.is_empty() {
        return Err(LlmError::LoginRequired {
            provider: model.provider_id.clone(),
            message: "this provider signs in with an account login and no access token was supplied; run `kimi-rs login`".to_owned(),
        });
    }
    Ok(match model.provider_type {
        ProviderType::Kimi | ProviderType::OpenAi => {
            Arc::new(crate::openai_chat::OpenAiChatProvider::new(model.clone())?)
        }
        ProviderType::OpenAiResponses => Arc::new(crate::openai_responses::ResponsesProvider::new(
            model.clone(),
        )?),
        ProviderType::Anthropic => {
            Arc::new(crate::anthropic::AnthropicProvider::new(model.clone())?)
        }
        ProviderType::GoogleGenAi | ProviderType::VertexAi => {
            Arc::new(crate::gemini::GeminiProvider::new(model.clone())?)
        }
    })
}
