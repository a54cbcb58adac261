//! Last line of defence before a log line reaches disk: fields named like secrets lose their
//! values, and secret-looking text (bearer tokens, `authorization: …`/`x-api-key: …` header
//! values, `api_key = …`, `sk-…` keys) is masked wherever it appears. The code logging a
//! request already logs header names only; this catches what slips through (an error body
//! echoing a header, a hook command with a token in it).

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

pub const REDACTED: &str = "[redacted]";

/// Whether a field with this name carries a secret (its value is never written).
pub fn is_secret_field(name: &str) -> bool {
    let name = name.to_ascii_lowercase().replace('-', "_");
    matches!(
        name.as_str(),
        "authorization" | "proxy_authorization" | "cookie" | "set_cookie" | "password"
    ) || name.ends_with("api_key")
        || name.ends_with("apikey")
        || name.ends_with("_token")
        || name == "token"
        || name.contains("secret")
}

static PATTERNS: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    [
        // `Authorization: Bearer abc`, `"authorization":"Basic abc"`, `x-api-key=abc`, …
        (
            r#"(?i)\b((?:proxy-)?authorization|x-api-key|api[-_]?key|x-goog-api-key|cookie|set-cookie|access[-_]token|refresh[-_]token)(["']?\s*[:=]\s*["']?)(?:(?:bearer|basic)\s+)?[^\s"',;&]+"#,
            "${1}${2}[redacted]",
        ),
        (r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]{6,}", "${1} [redacted]"),
        (r"\bsk-[A-Za-z0-9_-]{6,}", "sk-[redacted]"),
    ]
    .into_iter()
    .filter_map(|(pattern, with)| Regex::new(pattern).ok().map(|re| (re, with)))
    .collect()
});

/// `text` with every secret-looking part masked.
pub fn redact_text(text: &str) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(text);
    for (re, with) in PATTERNS.iter() {
        if re.is_match(&out) {
            out = Cow::Owned(re.replace_all(&out, *with).into_owned());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_fields_are_recognised() {
        for name in [
            "api_key",
            "apiKey",
            "Authorization",
            "x-api-key",
            "access_token",
            "cookie",
            "client_secret",
            "token",
        ] {
            assert!(is_secret_field(name), "{name}");
        }
        for name in [
            "tokens_before",
            "max_tokens",
            "provider",
            "status",
            "headers",
        ] {
            assert!(!is_secret_field(name), "{name}");
        }
    }

    #[test]
    fn secret_text_is_masked() {
        let cases = [
            (
                "Authorization: Bearer sk-abcdef123456",
                "Authorization: [redacted]",
            ),
            ("x-api-key=abc123def", "x-api-key=[redacted]"),
            (
                r#"{"api_key": "moonshot-1234567"}"#,
                r#"{"api_key": "[redacted]"}"#,
            ),
            (
                "curl -H 'Bearer eyJhbGciOi.x.y' https://h",
                "curl -H 'Bearer [redacted]' https://h",
            ),
            (
                "invalid key sk-kimi-ABCDEF0123456789 rejected",
                "invalid key sk-[redacted] rejected",
            ),
            ("cookie: session=abc; other", "cookie: [redacted]; other"),
        ];
        for (input, expected) in cases {
            assert_eq!(redact_text(input), expected, "{input}");
        }
    }

    #[test]
    fn ordinary_text_is_untouched() {
        for text in [
            "model request finished status=200 bytes=812",
            "tool call finished tool=Bash duration_ms=12",
            "the ask-key task skipped",
        ] {
            assert!(matches!(redact_text(text), Cow::Borrowed(_)), "{text}");
        }
    }
}
