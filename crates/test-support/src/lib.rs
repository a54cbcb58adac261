//! Loopback scripted-LLM server for tests: serves `kimi_llm::scripted` scripts in each real
//! wire format (OpenAI Chat/Kimi, OpenAI Responses, Anthropic, Gemini/Vertex) with their real
//! SSE framing, records every request, and checks tool call/result pairing.

mod pairing;
mod render;
pub mod sandbox;
mod server;

pub use pairing::check_tool_pairing;
pub use render::{Frame, WireFormat, render};
pub use server::{RecordedRequest, ScriptServer};
