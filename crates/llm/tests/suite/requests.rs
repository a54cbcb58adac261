//! Request bodies as each provider sends them: history conversion, thinking parameters,
//! cache keys, signatures and tool-call extras round-tripping, and call/result pairing.

use kimi_llm::scripted::{ScriptEvent, ScriptTurn};
use kimi_llm::{ChatRequest, ModelParams, ProviderType, ThinkingEffort, complete};
use kimi_protocol::{ContentPart, MediaUrl, Message, Role, ToolCall, ToolSchema};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::{fixture, per_format};

per_format!(history_with_tools_is_paired);

fn history() -> ChatRequest {
    let mut signed_call = ToolCall::new("call_1", "Bash", Some(r#"{"command":"ls"}"#.into()));
    signed_call.extras = Some(json!({"thought_signature": "gsig"}));
    let messages = vec![
        Message::user_text("list files"),
        Message::assistant(
            vec![
                ContentPart::Think {
                    think: "I should run ls".into(),
                    encrypted: Some("sig-a".into()),
                },
                ContentPart::text("Running ls."),
            ],
            vec![
                signed_call,
                ToolCall::new("call_2", "Read", Some(r#"{"path":"a.png"}"#.into())),
            ],
        ),
        Message::tool_result("call_1", vec![ContentPart::text("a.png\nb.txt")], None),
        Message::tool_result(
            "call_2",
            vec![
                ContentPart::text("image:"),
                ContentPart::Image(MediaUrl {
                    url: "data:image/png;base64,iVBORw0KGgo=".into(),
                    id: None,
                }),
            ],
            Some(false),
        ),
        Message::user_text("thanks"),
    ];
    let mut request = ChatRequest::new("system prompt", messages);
    request.tools = vec![ToolSchema {
        name: "Bash".into(),
        description: "run a command".into(),
        parameters: json!({"type": "object", "properties": {"command": {"type": "string"}}}),
    }];
    request.cache_key = Some("session-123".into());
    request.params = ModelParams {
        max_tokens: Some(8000),
        thinking: Some(ThinkingEffort::High),
        ..ModelParams::default()
    };
    request
}

async fn send(kind: ProviderType, request: ChatRequest) -> Value {
    let f = fixture(kind, vec![ScriptTurn::text("ok")]).await;
    complete(f.provider.as_ref(), request).await.unwrap();
    f.assert_paired();
    f.server.requests().remove(0).body
}

async fn history_with_tools_is_paired(kind: ProviderType) {
    let body = send(kind, history()).await;
    assert!(body.is_object());
}

#[tokio::test]
async fn kimi_body_has_thinking_cache_key_and_completion_budget() {
    let mut model_request = history();
    model_request.messages.truncate(1);
    let f = super::common::fixture_with(ProviderType::Kimi, vec![ScriptTurn::text("ok")], |m| {
        m.support_efforts = vec!["low".into(), "high".into()];
    })
    .await;
    complete(f.provider.as_ref(), model_request).await.unwrap();
    let body = f.server.requests().remove(0).body;
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "effort": "high"})
    );
    assert_eq!(body["prompt_cache_key"], json!("session-123"));
    assert_eq!(body["max_completion_tokens"], json!(8000));
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(
        body["messages"][0],
        json!({"role": "system", "content": "system prompt"})
    );
    assert!(body.get("max_tokens").is_none());
}

#[tokio::test]
async fn openai_body_echoes_reasoning_and_moves_tool_images_after_results() {
    let body = send(ProviderType::OpenAi, history()).await;
    let messages = body["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        vec![
            "system",
            "user",
            "assistant",
            "tool",
            "tool",
            "user",
            "user"
        ]
    );
    assert_eq!(messages[2]["reasoning_content"], json!("I should run ls"));
    assert_eq!(
        messages[2]["tool_calls"][0]["function"]["arguments"],
        json!(r#"{"command":"ls"}"#)
    );
    assert_eq!(messages[4]["content"], json!("image:"));
    assert_eq!(
        messages[5]["content"],
        json!([{"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}])
    );
    assert_eq!(body["reasoning_effort"], json!("high"));
    assert_eq!(body["max_tokens"], json!(8000));
    assert!(body.get("prompt_cache_key").is_none());
}

#[tokio::test]
async fn anthropic_body_merges_user_turns_and_marks_the_last_block_cacheable() {
    let body = send(ProviderType::Anthropic, history()).await;
    let messages = body["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, vec!["user", "assistant", "user"]);
    assert_eq!(
        messages[1]["content"][0],
        json!({"type": "thinking", "thinking": "I should run ls", "signature": "sig-a"})
    );
    assert_eq!(messages[1]["content"][2]["input"], json!({"command": "ls"}));
    let last = messages[2]["content"].as_array().unwrap();
    let types: Vec<&str> = last.iter().map(|b| b["type"].as_str().unwrap()).collect();
    assert_eq!(types, vec!["tool_result", "tool_result", "text"]);
    assert_eq!(
        last[1]["content"][1]["source"]["media_type"],
        json!("image/png")
    );
    assert_eq!(last[2]["cache_control"], json!({"type": "ephemeral"}));
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 7999})
    );
    assert_eq!(body["max_tokens"], json!(8000));
    assert_eq!(body["system"][0]["text"], json!("system prompt"));
}

#[tokio::test]
async fn anthropic_adaptive_thinking_and_default_max_tokens() {
    let f =
        super::common::fixture_with(ProviderType::Anthropic, vec![ScriptTurn::text("ok")], |m| {
            m.model = "claude-opus-4-6".into();
        })
        .await;
    let mut request = super::common::request();
    request.params.thinking = Some(ThinkingEffort::Low);
    complete(f.provider.as_ref(), request).await.unwrap();
    let req = f.server.requests().remove(0);
    assert_eq!(req.body["thinking"], json!({"type": "adaptive"}));
    assert_eq!(req.body["output_config"], json!({"effort": "low"}));
    assert_eq!(req.body["max_tokens"], json!(32000));
    assert_eq!(req.header("anthropic-version"), Some("2023-06-01"));
    assert!(req.header("anthropic-beta").is_some());
}

#[tokio::test]
async fn responses_body_uses_items_and_replays_encrypted_reasoning() {
    let body = send(ProviderType::OpenAiResponses, history()).await;
    let types: Vec<String> = body["input"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            i.get("type")
                .and_then(Value::as_str)
                .unwrap_or("message")
                .to_owned()
        })
        .collect();
    assert_eq!(
        types,
        vec![
            "message",
            "reasoning",
            "message",
            "function_call",
            "function_call",
            "function_call_output",
            "function_call_output",
            "message"
        ]
    );
    assert_eq!(body["input"][1]["encrypted_content"], json!("sig-a"));
    assert_eq!(body["instructions"], json!("system prompt"));
    assert_eq!(body["reasoning"]["effort"], json!("high"));
    assert_eq!(body["max_output_tokens"], json!(8000));
}

#[tokio::test]
async fn gemini_body_round_trips_thought_signatures_and_names_function_responses() {
    let body = send(ProviderType::GoogleGenAi, history()).await;
    let contents = body["contents"].as_array().unwrap();
    let roles: Vec<&str> = contents
        .iter()
        .map(|c| c["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, vec!["user", "model", "user"]);
    let model_parts = contents[1]["parts"].as_array().unwrap();
    assert_eq!(
        model_parts[0],
        json!({"text": "I should run ls", "thought": true, "thoughtSignature": "sig-a"})
    );
    assert_eq!(model_parts[2]["thoughtSignature"], json!("gsig"));
    assert_eq!(
        model_parts[2]["functionCall"],
        json!({"name": "Bash", "args": {"command": "ls"}})
    );
    let user_parts = contents[2]["parts"].as_array().unwrap();
    assert_eq!(user_parts[0]["functionResponse"]["name"], json!("Bash"));
    assert_eq!(user_parts[1]["functionResponse"]["name"], json!("Read"));
    assert_eq!(user_parts[2]["inlineData"]["mimeType"], json!("image/png"));
    assert_eq!(
        body["generationConfig"]["thinkingConfig"],
        json!({"thinkingBudget": 32000, "includeThoughts": true})
    );
    assert_eq!(
        body["systemInstruction"]["parts"][0]["text"],
        json!("system prompt")
    );
}

#[tokio::test]
async fn gemini_call_signature_lands_in_tool_call_extras() {
    let f = fixture(
        ProviderType::GoogleGenAi,
        vec![ScriptTurn::reply(vec![
            ScriptEvent::ToolCallStart {
                index: 0,
                id: "ignored".into(),
                name: "Bash".into(),
                extras: Some(json!({"thought_signature": "sig-call"})),
            },
            ScriptEvent::ToolCallArgs {
                index: 0,
                fragment: r#"{"command":"pwd"}"#.into(),
            },
            ScriptEvent::finish(kimi_llm::FinishReason::ToolCalls),
        ])],
    )
    .await;
    let done = f.complete().await.unwrap();
    let mut expected = ToolCall::new("Bash_0", "Bash", Some(r#"{"command":"pwd"}"#.into()));
    expected.extras = Some(json!({"thought_signature": "sig-call"}));
    assert_eq!(done.message.tool_calls, vec![expected]);
    assert_eq!(done.message.role, Role::Assistant);
}

#[tokio::test]
async fn vertex_path_uses_project_and_location_when_configured() {
    let f =
        super::common::fixture_with(ProviderType::VertexAi, vec![ScriptTurn::text("ok")], |m| {
            m.vertex_project = Some("proj".into());
            m.vertex_location = Some("us-central1".into());
        })
        .await;
    f.complete().await.unwrap();
    assert_eq!(
        f.server.requests()[0].path,
        "/v1/projects/proj/locations/us-central1/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    );
}

#[tokio::test]
async fn custom_headers_are_sent() {
    let f = super::common::fixture_with(ProviderType::OpenAi, vec![ScriptTurn::text("ok")], |m| {
        m.custom_headers = vec![("X-Team".into(), "core".into())];
    })
    .await;
    f.complete().await.unwrap();
    assert_eq!(f.server.requests()[0].header("x-team"), Some("core"));
}

#[tokio::test]
async fn env_variables_alone_reach_an_openai_compatible_server() {
    let server = kimi_test_support::ScriptServer::start(vec![ScriptTurn::text("hello from local")])
        .await
        .unwrap();
    let base = format!("{}/v1", server.base_url());
    let env = move |key: &str| match key {
        "KIMI_MODEL_NAME" => Some("qwen3-coder".to_owned()),
        "KIMI_MODEL_API_KEY" => Some("local".to_owned()),
        "KIMI_MODEL_PROVIDER_TYPE" => Some("openai".to_owned()),
        "KIMI_MODEL_BASE_URL" => Some(base.clone()),
        _ => None,
    };
    let model = kimi_llm::config::LlmConfig::default()
        .resolve_model(None, &env)
        .unwrap();
    let provider = kimi_llm::build_provider(&model).unwrap();
    let done = complete(provider.as_ref(), super::common::request())
        .await
        .unwrap();
    assert_eq!(done.message.text(), "hello from local");
    let recorded = server.requests().remove(0);
    assert_eq!(recorded.header("authorization"), Some("Bearer local"));
    assert_eq!(recorded.body["model"], json!("qwen3-coder"));
}

#[tokio::test]
async fn empty_answer_is_a_retryable_error() {
    let f = fixture(
        ProviderType::OpenAi,
        vec![ScriptTurn::reply(vec![ScriptEvent::finish(
            kimi_llm::FinishReason::Stop,
        )])],
    )
    .await;
    let err = f.complete().await.unwrap_err();
    assert!(
        matches!(err, kimi_llm::LlmError::EmptyResponse { .. }),
        "{err}"
    );
    assert!(err.is_retryable());
}

#[tokio::test]
async fn dynamic_tool_declarations_become_tools_not_messages() {
    let mut declaration = Message::new(Role::System, Vec::new());
    declaration.tools = Some(vec![ToolSchema {
        name: "mcp__search".into(),
        description: "search".into(),
        parameters: json!({"type": "object"}),
    }]);
    let mut request = ChatRequest::new("sys", vec![Message::user_text("hi"), declaration]);
    request.tools = vec![ToolSchema {
        name: "Bash".into(),
        description: "run".into(),
        parameters: json!({"type": "object"}),
    }];
    for kind in [
        ProviderType::OpenAi,
        ProviderType::Anthropic,
        ProviderType::OpenAiResponses,
        ProviderType::GoogleGenAi,
    ] {
        let body = send(kind, request.clone()).await;
        let text = body.to_string();
        assert!(
            text.contains("mcp__search") && text.contains("Bash"),
            "{kind:?}: {text}"
        );
        let messages = body
            .get("messages")
            .or_else(|| body.get("input"))
            .or_else(|| body.get("contents"))
            .and_then(Value::as_array)
            .unwrap();
        let expected = if kind == ProviderType::OpenAi { 2 } else { 1 };
        assert_eq!(messages.len(), expected, "{kind:?}: {text}");
    }
}
