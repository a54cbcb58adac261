//! Loopback scripted-LLM server for tests: serves `kimi_llm::scripted` scripts in each real
//! wire format (OpenAI Chat/Kimi, OpenAI Responses, Anthropic, Gemini/Vertex) with their real
//! SSE framing, records every request, and checks tool call/result pairing. Also the other
//! test-only code of the workspace: the journal crash harness (`kimi-store-crash`), the MCP
//! fixture server (`kimi-mcp-fixture`), sandbox-test rules and test model constructors.

pub mod crash_harness;
pub mod engine_soak;
pub mod mcp_fixture;
mod pairing;
mod render;
pub mod sandbox;
mod server;
pub mod web_soak;

pub use pairing::check_tool_pairing;
pub use render::{Frame, WireFormat, render};
pub use server::{RecordedRequest, ScriptServer};

use kimi_llm::{KeySource, KimiTuning, ProviderType, ResolvedModel};

/// A minimal resolved model pointed at `base_url` (no key source, default limits), for tests
/// and benchmarks that build a provider by hand.
pub fn test_model(provider_type: ProviderType, base_url: &str, model: &str) -> ResolvedModel {
    ResolvedModel {
        alias: model.to_owned(),
        provider_id: provider_type.as_str().to_owned(),
        provider_type,
        model: model.to_owned(),
        base_url: base_url.to_owned(),
        api_key: "test-key".to_owned(),
        key_source: KeySource::Unknown,
        oauth: None,
        custom_headers: Vec::new(),
        max_context_size: 262_144,
        max_output_size: None,
        capabilities: Vec::new(),
        support_efforts: Vec::new(),
        default_effort: None,
        forced_effort: None,
        reasoning_key: None,
        adaptive_thinking: None,
        display_name: None,
        vertex_project: None,
        vertex_location: None,
        kimi_tuning: KimiTuning::default(),
    }
}
