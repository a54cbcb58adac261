//! Shared fixtures: a scripted server plus a real HTTP provider pointed at it.

use std::sync::Arc;

use kimi_llm::scripted::ScriptTurn;
use kimi_llm::{
    ChatRequest, LlmError, Provider, ProviderType, ResolvedModel, build_provider, complete,
};
use kimi_test_support::ScriptServer;

pub struct Fixture {
    pub server: ScriptServer,
    pub provider: Arc<dyn Provider>,
}

pub async fn fixture(kind: ProviderType, turns: Vec<ScriptTurn>) -> Fixture {
    fixture_with(kind, turns, |_| {}).await
}

pub async fn fixture_with(
    kind: ProviderType,
    turns: Vec<ScriptTurn>,
    edit: impl FnOnce(&mut ResolvedModel),
) -> Fixture {
    let server = ScriptServer::start(turns).await.unwrap();
    let mut model = server.model(kind, model_name(kind));
    edit(&mut model);
    let provider = build_provider(&model).unwrap();
    Fixture { server, provider }
}

pub fn model_name(kind: ProviderType) -> &'static str {
    match kind {
        ProviderType::Kimi => "kimi-k2-thinking",
        ProviderType::OpenAi => "gpt-4.1",
        ProviderType::OpenAiResponses => "gpt-5",
        ProviderType::Anthropic => "claude-sonnet-4-5",
        ProviderType::GoogleGenAi | ProviderType::VertexAi => "gemini-2.5-pro",
    }
}

pub fn request() -> ChatRequest {
    ChatRequest::new(
        "You are a test.",
        vec![kimi_protocol::Message::user_text("hi")],
    )
}

impl Fixture {
    pub async fn complete(&self) -> Result<kimi_llm::Completion, LlmError> {
        complete(self.provider.as_ref(), request()).await
    }

    /// Every request this fixture's server saw must pair its tool calls and results.
    pub fn assert_paired(&self) {
        let violations = self.server.pairing_violations();
        assert!(violations.is_empty(), "{violations:?}");
    }
}

/// Generates one `#[tokio::test]` per wire format for an `async fn(ProviderType)` scenario.
macro_rules! per_format {
    ($($scenario:ident),* $(,)?) => {$(
        mod $scenario {
            use kimi_llm::ProviderType;
            #[tokio::test]
            async fn kimi() { super::$scenario(ProviderType::Kimi).await }
            #[tokio::test]
            async fn openai() { super::$scenario(ProviderType::OpenAi).await }
            #[tokio::test]
            async fn openai_responses() { super::$scenario(ProviderType::OpenAiResponses).await }
            #[tokio::test]
            async fn anthropic() { super::$scenario(ProviderType::Anthropic).await }
            #[tokio::test]
            async fn google_genai() { super::$scenario(ProviderType::GoogleGenAi).await }
            #[tokio::test]
            async fn vertexai() { super::$scenario(ProviderType::VertexAi).await }
        }
    )*};
}
pub(crate) use per_format;
