//! Streaming answers in every wire format: text, thinking, tool calls, usage, chunking,
//! malformed lines and broken streams.

use kimi_llm::scripted::{ScriptEvent, ScriptTurn};
use kimi_llm::{FinishReason, LlmError, ProviderType, Usage};
use kimi_protocol::{ContentPart, ToolCall};
use pretty_assertions::assert_eq;

use super::common::{fixture, per_format};

per_format!(
    text,
    thinking,
    parallel_tool_calls_split_arguments,
    usage,
    unicode_split_across_chunks,
    malformed_line_is_a_clear_error,
    mid_stream_disconnect,
    close_without_end_marker,
    cancellation_stops_the_stream,
);

async fn text(kind: ProviderType) {
    let f = fixture(kind, vec![ScriptTurn::text("Hello, world")]).await;
    let done = f.complete().await.unwrap();
    assert_eq!(
        done.message.content,
        vec![ContentPart::text("Hello, world")]
    );
    assert_eq!(done.finish_reason, Some(FinishReason::Stop));
    assert!(done.provider_message_id.is_some());
    let requests = f.server.requests();
    assert_eq!(requests.len(), 1);
    let expected_path = match kind {
        ProviderType::Kimi | ProviderType::OpenAi => "/v1/chat/completions".to_owned(),
        ProviderType::OpenAiResponses => "/v1/responses".to_owned(),
        ProviderType::Anthropic => "/v1/messages".to_owned(),
        ProviderType::GoogleGenAi => {
            "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse".to_owned()
        }
        ProviderType::VertexAi => {
            "/v1/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse".to_owned()
        }
    };
    assert_eq!(requests[0].path, expected_path);
    let auth = match kind {
        ProviderType::Kimi | ProviderType::OpenAi | ProviderType::OpenAiResponses => {
            requests[0].header("authorization")
        }
        ProviderType::Anthropic => requests[0].header("x-api-key"),
        ProviderType::GoogleGenAi | ProviderType::VertexAi => requests[0].header("x-goog-api-key"),
    };
    assert!(auth.is_some_and(|a| a.ends_with("test-key")), "{auth:?}");
}

async fn thinking(kind: ProviderType) {
    let f = fixture(
        kind,
        vec![ScriptTurn::reply(vec![
            ScriptEvent::thinking("let me "),
            ScriptEvent::thinking("think"),
            ScriptEvent::ThinkingSignature {
                signature: "sig-1".into(),
            },
            ScriptEvent::text("answer"),
            ScriptEvent::finish(FinishReason::Stop),
        ])],
    )
    .await;
    let done = f.complete().await.unwrap();
    // Chat Completions has no signatures; every other format round-trips one.
    let signature = match kind {
        ProviderType::Kimi | ProviderType::OpenAi => None,
        ProviderType::OpenAiResponses
        | ProviderType::Anthropic
        | ProviderType::GoogleGenAi
        | ProviderType::VertexAi => Some("sig-1".to_owned()),
    };
    assert_eq!(
        done.message.content,
        vec![
            ContentPart::Think {
                think: "let me think".into(),
                encrypted: signature
            },
            ContentPart::text("answer"),
        ]
    );
}

async fn parallel_tool_calls_split_arguments(kind: ProviderType) {
    let calls = [
        ("call_a", "Bash", r#"{"command":"ls -la","timeout":30}"#),
        (
            "call_b",
            "Read",
            r#"{"path":"src/main.rs","lines":[1,2,3]}"#,
        ),
        ("call_c", "Grep", r#"{"pattern":"fn \\w+","glob":"*.rs"}"#),
    ];
    let mut events = vec![ScriptEvent::text("Running three tools.")];
    for (index, (id, name, args)) in (0u32..).zip(calls) {
        events.extend(ScriptEvent::tool_call(index, id, name, args, 9));
    }
    events.push(ScriptEvent::finish(FinishReason::ToolCalls));
    let f = fixture(kind, vec![ScriptTurn::reply(events)]).await;
    let done = f.complete().await.unwrap();
    let expected: Vec<ToolCall> = calls
        .iter()
        .enumerate()
        .map(|(i, (id, name, args))| {
            // Gemini has no call ids on the wire; the provider names them by function and position.
            let id = match kind {
                ProviderType::GoogleGenAi | ProviderType::VertexAi => format!("{name}_{i}"),
                ProviderType::Kimi
                | ProviderType::OpenAi
                | ProviderType::OpenAiResponses
                | ProviderType::Anthropic => (*id).to_owned(),
            };
            ToolCall::new(id, *name, Some((*args).to_owned()))
        })
        .collect();
    assert_eq!(done.message.tool_calls, expected);
    assert_eq!(
        done.message.content,
        vec![ContentPart::text("Running three tools.")]
    );
    assert_eq!(done.finish_reason, Some(FinishReason::ToolCalls));
}

async fn usage(kind: ProviderType) {
    let cache_creation = if kind == ProviderType::Anthropic {
        7
    } else {
        0
    };
    let usage = Usage {
        input_other: 100,
        output: 20,
        input_cache_read: 30,
        input_cache_creation: cache_creation,
    };
    let f = fixture(
        kind,
        vec![ScriptTurn::reply(vec![
            ScriptEvent::text("x"),
            ScriptEvent::Usage { usage },
            ScriptEvent::finish(FinishReason::Stop),
        ])],
    )
    .await;
    let done = f.complete().await.unwrap();
    assert_eq!(done.usage, Some(usage));
}

async fn unicode_split_across_chunks(kind: ProviderType) {
    let text = "héllo 日本語 — 🎉👩‍💻 done";
    let f = fixture(
        kind,
        vec![
            ScriptTurn::reply(vec![
                ScriptEvent::thinking("思考中…"),
                ScriptEvent::text(&text[..7]),
                ScriptEvent::text(&text[7..]),
                ScriptEvent::finish(FinishReason::Stop),
            ])
            .with_chunk_size(1),
        ],
    )
    .await;
    let done = f.complete().await.unwrap();
    assert_eq!(done.message.text(), text);
    assert!(
        matches!(&done.message.content[0], ContentPart::Think { think, .. } if think == "思考中…")
    );
}

async fn malformed_line_is_a_clear_error(kind: ProviderType) {
    let f = fixture(
        kind,
        vec![ScriptTurn::reply(vec![
            ScriptEvent::text("before"),
            // A line with no colon is a valid (ignored) SSE field; the broken JSON is the error.
            ScriptEvent::Malformed {
                raw: "garbage-line\n\n".into(),
            },
            ScriptEvent::Malformed {
                raw: "data: {\"choices\": [oops\n\n".into(),
            },
            ScriptEvent::text("after"),
            ScriptEvent::finish(FinishReason::Stop),
        ])],
    )
    .await;
    let err = f.complete().await.unwrap_err();
    assert!(matches!(err, LlmError::MalformedStream { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("oops") && text.contains("malformed"),
        "{text}"
    );
}

async fn mid_stream_disconnect(kind: ProviderType) {
    let f = fixture(
        kind,
        vec![ScriptTurn::reply(vec![
            ScriptEvent::text("partial an"),
            ScriptEvent::Disconnect,
        ])],
    )
    .await;
    let err = f.complete().await.unwrap_err();
    assert!(matches!(err, LlmError::StreamInterrupted { .. }), "{err}");
    assert!(err.is_retryable());
}

async fn close_without_end_marker(kind: ProviderType) {
    let f = fixture(
        kind,
        vec![ScriptTurn::reply(vec![ScriptEvent::text("short")])],
    )
    .await;
    let err = f.complete().await.unwrap_err();
    assert!(
        matches!(&err, LlmError::StreamInterrupted { detail, .. } if detail.contains("end marker")),
        "{err}"
    );
}

async fn cancellation_stops_the_stream(kind: ProviderType) {
    use futures::StreamExt;
    let f = fixture(
        kind,
        vec![ScriptTurn::reply(vec![
            ScriptEvent::text("first"),
            ScriptEvent::Delay { ms: 30_000 },
            ScriptEvent::text("never"),
            ScriptEvent::finish(FinishReason::Stop),
        ])],
    )
    .await;
    let request = super::common::request();
    let cancel = request.cancel.clone();
    let mut stream = f.provider.stream(request).await.unwrap();
    let mut got_first = false;
    let started = std::time::Instant::now();
    while let Some(item) = stream.next().await {
        match item {
            Ok(kimi_llm::StreamDelta::Text(t)) if t == "first" => {
                got_first = true;
                cancel.cancel();
            }
            Ok(_) => {}
            Err(err) => {
                assert!(matches!(err, LlmError::Cancelled), "{err}");
                break;
            }
        }
    }
    assert!(got_first);
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}
