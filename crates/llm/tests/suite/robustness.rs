//! Garbage in, clear errors out: random bytes and shuffled fragments of real streams never
//! panic any decoder, and every stream ends.

use futures::StreamExt;
use kimi_llm::{ProviderType, decode_sse};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const FRAGMENTS: &[&str] = &[
    "data: ",
    "event: message_start\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"function\":{\"name\":\"X\",\"arguments\":\"{\"}}]}}]}\n\n",
    "data: {\"type\":\"content_block_delta\",\"index\":7,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\"}}\n\n",
    "data: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":99,\"delta\":\"x\"}\n\n",
    "data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"f\",\"args\":7}}]},\"finishReason\":\"STOP\"}]}\r\n\r\n",
    "data: {\"error\":{\"message\":\"boom\"}}\n\n",
    "data: [DONE]\n\n",
    "data: {\"choices\":[{\"finish_reason\":\"stop\"}]}\n\n",
    "data: null\n\n",
    "data: []\n\n",
    "data: {\"choices\":\"nope\",\"usage\":5}\n\n",
    ": keep-alive\n",
    "\r",
    "\n",
    "\u{1F389}",
];

#[tokio::test]
async fn random_input_never_panics_and_always_ends() {
    let mut rng = StdRng::seed_from_u64(7);
    for kind in [
        ProviderType::Kimi,
        ProviderType::OpenAiResponses,
        ProviderType::Anthropic,
        ProviderType::GoogleGenAi,
    ] {
        let model = kimi_test_support::test_model(kind, "http://127.0.0.1:1", "m");
        for _ in 0..300 {
            let mut body = Vec::new();
            for _ in 0..rng.random_range(0..12) {
                if rng.random_bool(0.2) {
                    let len = rng.random_range(0..40);
                    body.extend((0..len).map(|_| rng.random::<u8>()));
                } else {
                    body.extend_from_slice(
                        FRAGMENTS[rng.random_range(0..FRAGMENTS.len())].as_bytes(),
                    );
                }
            }
            let piece = rng.random_range(1..64);
            let chunks: Vec<Result<bytes::Bytes, std::io::Error>> = body
                .chunks(piece)
                .map(|c| Ok(bytes::Bytes::copy_from_slice(c)))
                .collect();
            let mut stream = decode_sse(&model, futures::stream::iter(chunks));
            let mut items = 0;
            while let Some(item) = stream.next().await {
                items += 1;
                assert!(items < 10_000, "stream did not end");
                if item.is_err() {
                    assert!(stream.next().await.is_none(), "items after an error");
                    break;
                }
            }
        }
    }
}
