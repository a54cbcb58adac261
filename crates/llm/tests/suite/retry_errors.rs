//! HTTP errors and retries in every wire format: Retry-After, 5xx, auth, context overflow.

use std::sync::Mutex;
use std::time::Duration;

use kimi_llm::scripted::{ScriptEvent, ScriptTurn};
use kimi_llm::{
    ErrorKind, FinishReason, KeySource, LlmError, ProviderType, RetryPolicy, complete, with_retry,
};
use kimi_protocol::ContentPart;
use pretty_assertions::assert_eq;
use tokio_util::sync::CancellationToken;

use super::common::{Fixture, fixture, fixture_with, per_format, request};

per_format!(
    rate_limit_with_retry_after_then_success,
    server_error_then_success,
    unauthorized_names_provider_and_key_source,
    context_overflow_is_recognised,
    stream_error_event_is_classified,
);

fn fast_policy() -> RetryPolicy {
    RetryPolicy {
        base_delay: Duration::from_millis(1),
        jitter_ratio: 0.0,
        ..RetryPolicy::default()
    }
}

async fn run_with_retry(
    f: &Fixture,
    policy: &RetryPolicy,
) -> (
    Result<kimi_llm::Completion, LlmError>,
    Vec<(u32, Duration, String)>,
) {
    let events = Mutex::new(Vec::new());
    let result = with_retry(
        policy,
        &CancellationToken::new(),
        |e| {
            events
                .lock()
                .unwrap()
                .push((e.failed_attempt, e.delay, e.error.name().to_owned()))
        },
        |_| complete(f.provider.as_ref(), request()),
    )
    .await;
    (result, events.into_inner().unwrap())
}

async fn rate_limit_with_retry_after_then_success(kind: ProviderType) {
    let f = fixture(
        kind,
        vec![
            ScriptTurn::Error {
                status: 429,
                body: r#"{"error":{"message":"Rate limit reached, slow down","type":"rate_limit_error"}}"#.into(),
                headers: vec![("Retry-After".into(), "0.05".into())],
            },
            ScriptTurn::text("ok"),
        ],
    )
    .await;
    let (result, events) = run_with_retry(&f, &RetryPolicy::default()).await;
    assert_eq!(
        result.unwrap().message.content,
        vec![ContentPart::text("ok")]
    );
    assert_eq!(
        events,
        vec![(1, Duration::from_millis(50), "http_error".to_owned())]
    );
    assert_eq!(f.server.requests().len(), 2);
}

async fn server_error_then_success(kind: ProviderType) {
    let f = fixture(
        kind,
        vec![
            ScriptTurn::error(500, "upstream exploded"),
            ScriptTurn::reply(vec![ScriptEvent::text("par"), ScriptEvent::Disconnect]),
            ScriptTurn::text("recovered"),
        ],
    )
    .await;
    let (result, events) = run_with_retry(&f, &fast_policy()).await;
    assert_eq!(result.unwrap().message.text(), "recovered");
    let names: Vec<_> = events.iter().map(|e| (e.0, e.2.as_str())).collect();
    assert_eq!(names, vec![(1, "http_error"), (2, "stream_interrupted")]);
    assert_eq!(events[1].1, Duration::from_millis(2));
    // The retried requests are identical: a retry re-sends, it does not re-build history.
    let requests = f.server.requests();
    assert_eq!(requests[0].body, requests[2].body);
}

async fn unauthorized_names_provider_and_key_source(kind: ProviderType) {
    let f = fixture_with(
        kind,
        vec![ScriptTurn::error(401, r#"{"error":{"message":"Invalid Authentication","type":"invalid_authentication_error"}}"#)],
        |m| {
            m.provider_id = "my-gateway".into();
            m.key_source = KeySource::EnvVar("KIMI_MODEL_API_KEY".into());
        },
    )
    .await;
    let (result, events) = run_with_retry(&f, &fast_policy()).await;
    let err = result.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Auth);
    assert!(events.is_empty());
    let text = err.to_string();
    assert!(
        text.contains("my-gateway")
            && text.contains("KIMI_MODEL_API_KEY")
            && text.contains("Invalid Authentication"),
        "{text}"
    );
}

async fn context_overflow_is_recognised(kind: ProviderType) {
    let body = match kind {
        ProviderType::Kimi => {
            r#"{"error":{"message":"Invalid request: Your request exceeded model token limit: 262144","type":"invalid_request_error"}}"#
        }
        ProviderType::OpenAi | ProviderType::OpenAiResponses => {
            r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#
        }
        ProviderType::Anthropic => {
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#
        }
        ProviderType::GoogleGenAi | ProviderType::VertexAi => {
            r#"{"error":{"code":400,"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}"#
        }
    };
    let f = fixture(kind, vec![ScriptTurn::error(400, body)]).await;
    let err = f.complete().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ContextOverflow, "{err}");
    assert!(!err.is_retryable());
}

async fn stream_error_event_is_classified(kind: ProviderType) {
    let f = fixture(
        kind,
        vec![ScriptTurn::reply(vec![
            ScriptEvent::text("so far"),
            ScriptEvent::StreamError {
                code: "overloaded_error".into(),
                message: "Overloaded".into(),
            },
            ScriptEvent::finish(FinishReason::Stop),
        ])],
    )
    .await;
    let err = f.complete().await.unwrap_err();
    assert!(err.is_retryable(), "{err}");
    assert!(err.to_string().contains("Overloaded"), "{err}");
}

#[tokio::test]
async fn kimi_quota_exhausted_429_is_not_retried() {
    let f = fixture(
        ProviderType::Kimi,
        vec![
            ScriptTurn::error(
                429,
                r#"{"error":{"message":"Your account org-1 <ak-1> request reached organization max quota, exceeded_current_quota_error","type":"exceeded_current_quota_error"}}"#,
            ),
            ScriptTurn::text("unreachable"),
        ],
    )
    .await;
    let (result, events) = run_with_retry(&f, &fast_policy()).await;
    assert_eq!(result.unwrap_err().kind(), ErrorKind::QuotaExhausted);
    assert!(events.is_empty());
    assert_eq!(f.server.remaining_turns(), 1);
}

#[tokio::test]
async fn structure_and_size_errors_switch_projection_policy() {
    let f = fixture(
        ProviderType::Anthropic,
        vec![
            ScriptTurn::error(
                400,
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"messages.3: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1"}}"#,
            ),
            ScriptTurn::error(413, r#"{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}"#),
            ScriptTurn::error(400, r#"{"type":"error","error":{"type":"invalid_request_error","message":"messages.0.content.1.image.source.base64: invalid base64 data / image format image/bmp not supported"}}"#),
        ],
    )
    .await;
    let kinds = [
        f.complete().await.unwrap_err().kind(),
        f.complete().await.unwrap_err().kind(),
        f.complete().await.unwrap_err().kind(),
    ];
    assert_eq!(
        kinds,
        [
            ErrorKind::StructureRejected,
            ErrorKind::RequestTooLarge,
            ErrorKind::ImageFormat
        ]
    );
}

#[tokio::test]
async fn connection_refused_is_a_retryable_connection_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let model =
        kimi_test_support::test_model(ProviderType::OpenAi, &format!("http://{addr}/v1"), "m");
    let provider = kimi_llm::build_provider(&model).unwrap();
    let err = complete(provider.as_ref(), request()).await.unwrap_err();
    assert!(matches!(err, LlmError::Connection { .. }), "{err}");
    assert!(err.is_retryable());
    assert!(err.to_string().contains("base_url"), "{err}");
}
