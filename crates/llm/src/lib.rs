//! Provider trait, streaming wire formats (OpenAI, Kimi, Anthropic, Gemini), retries and model config.
