//! Prints two figures: SSE parsing throughput (raw parser, and parser + OpenAI Chat decoder +
//! delta accumulation) and the cost of building one request body from a 10,000-message
//! history for each wire format.
//!
//! Run: `cargo bench -p kimi-llm --bench throughput`

use std::hint::black_box;
use std::time::{Duration, Instant};

use futures::StreamExt;
use kimi_llm::sse::SseParser;
use kimi_llm::{
    Accumulator, ChatRequest, ModelParams, ProviderType, ResolvedModel, ThinkingEffort, decode_sse,
    wire,
};
use kimi_protocol::{ContentPart, Message, ToolCall, ToolSchema};
use serde_json::json;

fn sse_corpus(target_bytes: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(target_bytes + 1024);
    let mut i = 0u64;
    while out.len() < target_bytes {
        let chunk = json!({
            "id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0, "model": "m",
            "choices": [{"index": 0, "delta": {"content": format!("token {i} with some ünïcödé 文字 ")}, "finish_reason": null}],
        });
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(chunk.to_string().as_bytes());
        out.extend_from_slice(b"\n\n");
        i += 1;
    }
    out.extend_from_slice(b"data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n");
    out
}

fn mb_per_s(bytes: usize, elapsed: Duration) -> f64 {
    bytes as f64 / 1_000_000.0 / elapsed.as_secs_f64()
}

fn bench_parser(corpus: &[u8]) {
    let mut best = Duration::MAX;
    let mut events = 0;
    for _ in 0..5 {
        let start = Instant::now();
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        events = 0;
        for chunk in corpus.chunks(16 * 1024) {
            parser.feed(chunk, &mut out);
            events += out.len();
            out.clear();
        }
        parser.finish(&mut out);
        black_box(&out);
        best = best.min(start.elapsed());
    }
    println!(
        "sse parser only:            {:>8.1} MB/s  ({} bytes, {events} events, best of 5: {:.1} ms)",
        mb_per_s(corpus.len(), best),
        corpus.len(),
        best.as_secs_f64() * 1000.0
    );
}

fn bench_decode(corpus: &[u8], runtime: &tokio::runtime::Runtime) {
    let model = kimi_test_support::test_model(ProviderType::OpenAi, "http://127.0.0.1:1/v1", "m");
    let mut best = Duration::MAX;
    for _ in 0..3 {
        let chunks: Vec<Result<bytes::Bytes, std::io::Error>> = corpus
            .chunks(16 * 1024)
            .map(|c| Ok(bytes::Bytes::copy_from_slice(c)))
            .collect();
        let start = Instant::now();
        let text_len = runtime.block_on(async {
            let mut stream = decode_sse(&model, futures::stream::iter(chunks));
            let mut acc = Accumulator::new();
            while let Some(delta) = stream.next().await {
                acc.push(delta.unwrap_or_else(|e| panic!("bench stream failed: {e}")));
            }
            acc.finish().message.text().len()
        });
        black_box(text_len);
        best = best.min(start.elapsed());
    }
    println!(
        "sse + openai decode + merge: {:>7.1} MB/s  (best of 3: {:.1} ms)",
        mb_per_s(corpus.len(), best),
        best.as_secs_f64() * 1000.0
    );
}

fn history(n: usize) -> ChatRequest {
    let mut messages = Vec::with_capacity(n);
    let mut i = 0;
    while messages.len() < n {
        messages.push(Message::user_text(format!(
            "Please look at file src/module_{i}.rs and fix the bug near line {i}."
        )));
        let id = format!("call_{i}");
        messages.push(Message::assistant(
            vec![
                ContentPart::Think {
                    think: "The user wants a fix; read the file first.".into(),
                    encrypted: Some("c2lnbmF0dXJl".repeat(4)),
                },
                ContentPart::text(format!("I'll read src/module_{i}.rs.")),
            ],
            vec![ToolCall::new(
                &id,
                "Read",
                Some(format!(r#"{{"path":"src/module_{i}.rs"}}"#)),
            )],
        ));
        messages.push(Message::tool_result(
            &id,
            vec![ContentPart::text(
                format!("fn f_{i}() -> u32 {{\n    {i}\n}}\n").repeat(4),
            )],
            None,
        ));
        messages.push(Message::assistant(
            vec![ContentPart::text(format!("Fixed module {i}."))],
            Vec::new(),
        ));
        i += 1;
    }
    messages.truncate(n);
    let mut request = ChatRequest::new("You are a coding agent.".repeat(50), messages);
    request.tools = (0..20)
        .map(|t| ToolSchema {
            name: format!("Tool{t}"),
            description: "does a thing".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        })
        .collect();
    request.params = ModelParams {
        max_tokens: Some(32_000),
        thinking: Some(ThinkingEffort::High),
        ..ModelParams::default()
    };
    request.cache_key = Some("session".into());
    request
}

type BodyBuilder = fn(&ResolvedModel, &ChatRequest) -> serde_json::Value;

fn bench_bodies() {
    let request = history(10_000);
    let formats: [(&str, ProviderType, BodyBuilder); 6] = [
        ("kimi", ProviderType::Kimi, wire::openai_chat_body),
        ("openai", ProviderType::OpenAi, wire::openai_chat_body),
        (
            "openai_responses",
            ProviderType::OpenAiResponses,
            wire::openai_responses_body,
        ),
        ("anthropic", ProviderType::Anthropic, wire::anthropic_body),
        ("google-genai", ProviderType::GoogleGenAi, wire::gemini_body),
        ("vertexai", ProviderType::VertexAi, wire::gemini_body),
    ];
    for (name, kind, build) in formats {
        let model = kimi_test_support::test_model(kind, "http://127.0.0.1:1", "model");
        let mut best = Duration::MAX;
        let mut best_build = Duration::MAX;
        let mut size = 0;
        for _ in 0..5 {
            let start = Instant::now();
            let value = build(&model, &request);
            let built = start.elapsed();
            let body = serde_json::to_vec(&value).unwrap_or_default();
            best = best.min(start.elapsed());
            best_build = best_build.min(built);
            size = body.len();
            black_box(body);
        }
        println!(
            "request body, 10k messages, {name:<17} {:>7.2} ms  (build {:.2} ms + serialize; {:.1} MB JSON, best of 5)",
            best.as_secs_f64() * 1000.0,
            best_build.as_secs_f64() * 1000.0,
            size as f64 / 1_000_000.0
        );
    }
}

fn main() {
    let runtime = match tokio::runtime::Builder::new_current_thread().build() {
        Ok(rt) => rt,
        Err(err) => panic!("no tokio runtime: {err}"),
    };
    let corpus = sse_corpus(64 * 1024 * 1024);
    bench_parser(&corpus);
    bench_decode(&corpus, &runtime);
    bench_bodies();
}
