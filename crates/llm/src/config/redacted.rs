//! `Debug` for the resolved model, which holds the API key: the key (and the values of custom
//! headers, which may carry tokens) are shown as `[redacted]`, so a
//! `{:?}` in a log line or an error never leaks them.

use std::fmt;

use super::ResolvedModel;

const REDACTED: &str = "[redacted]";

fn header_names(headers: &[(String, String)]) -> Vec<(&str, &str)> {
    headers
        .iter()
        .map(|(n, _)| (n.as_str(), REDACTED))
        .collect()
}

impl fmt::Debug for ResolvedModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResolvedModel")
            .field("alias", &self.alias)
            .field("provider_id", &self.provider_id)
            .field("provider_type", &self.provider_type)
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("api_key", &REDACTED)
            .field("key_source", &self.key_source)
            .field("oauth", &self.oauth.as_ref().map(|o| &o.key))
            .field("custom_headers", &header_names(&self.custom_headers))
            .field("max_context_size", &self.max_context_size)
            .field("max_output_size", &self.max_output_size)
            .field("capabilities", &self.capabilities)
            .field("support_efforts", &self.support_efforts)
            .field("default_effort", &self.default_effort)
            .field("forced_effort", &self.forced_effort)
            .field("reasoning_key", &self.reasoning_key)
            .field("adaptive_thinking", &self.adaptive_thinking)
            .field("display_name", &self.display_name)
            .field("vertex_project", &self.vertex_project)
            .field("vertex_location", &self.vertex_location)
            .field("kimi_tuning", &self.kimi_tuning)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    const SECRET: &str = "sk-live-do-not-log-0123456789";

    #[test]
    fn debug_of_a_model_config_never_shows_its_key() {
        let mut model = crate::config::tests::test_model(
            crate::ProviderType::OpenAi,
            "http://127.0.0.1:1",
            "m",
        );
        model.api_key = SECRET.to_owned();
        model.custom_headers = vec![("Authorization".to_owned(), format!("Bearer {SECRET}"))];
        for text in [format!("{model:?}"), format!("{model:#?}")] {
            assert!(!text.contains(SECRET), "{text}");
            assert!(text.contains("[redacted]"), "{text}");
        }
        let shown = format!("{model:?}");
        assert!(
            shown.contains("Authorization") && shown.contains("model: \"m\""),
            "{shown}"
        );
    }
}
