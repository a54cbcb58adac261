//! `Debug` for the config entries that hold an API key or OAuth data: those values (and the
//! values of custom headers and provider env entries, which may carry tokens) are shown as
//! `[redacted]`, so a `{:?}` in a log line or an error never leaks them.

use std::collections::BTreeMap;
use std::fmt;

use crate::providers::{ModelEntry, ProviderEntry};

const REDACTED: &str = "[redacted]";

fn hidden<T>(value: Option<&T>) -> Option<&'static str> {
    value.map(|_| REDACTED)
}

fn names(map: &BTreeMap<String, String>) -> Vec<(&str, &str)> {
    map.keys().map(|n| (n.as_str(), REDACTED)).collect()
}

impl fmt::Debug for ProviderEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderEntry")
            .field("kind", &self.kind)
            .field("api_key", &hidden(self.api_key.as_ref()))
            .field("base_url", &self.base_url)
            .field("env", &names(&self.env))
            .field("custom_headers", &names(&self.custom_headers))
            .field("default_model", &self.default_model)
            .field("oauth", &hidden(self.oauth.as_ref()))
            .field("model_source", &self.model_source)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for ModelEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelEntry")
            .field("provider", &self.provider)
            .field("model", &self.model)
            .field("max_context_size", &self.max_context_size)
            .field("max_output_size", &self.max_output_size)
            .field("capabilities", &self.capabilities)
            .field("base_url", &self.base_url)
            .field("protocol", &self.protocol)
            .field("api_key", &hidden(self.api_key.as_ref()))
            .field("oauth", &hidden(self.oauth.as_ref()))
            .field("overrides", &self.overrides)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "sk-live-do-not-log-0123456789";

    #[test]
    fn debug_of_config_entries_never_shows_keys() {
        let provider = ProviderEntry {
            api_key: Some(SECRET.to_owned()),
            env: BTreeMap::from([("KIMI_API_KEY".to_owned(), SECRET.to_owned())]),
            custom_headers: BTreeMap::from([("x-api-key".to_owned(), SECRET.to_owned())]),
            oauth: Some(crate::OAuthRef {
                key: SECRET.to_owned(),
                ..crate::OAuthRef::default()
            }),
            ..ProviderEntry::default()
        };
        let entry = ModelEntry {
            api_key: Some(SECRET.to_owned()),
            ..ModelEntry::default()
        };
        for text in [format!("{provider:?}"), format!("{entry:#?}")] {
            assert!(!text.contains(SECRET), "{text}");
            assert!(text.contains("[redacted]"), "{text}");
        }
    }
}
