//! Which servers a login talks to: the OAuth host (device flow, refresh) and the managed API
//! base URL (models, usage, search, fetch, chat). `KIMI_CODE_OAUTH_HOST` > `KIMI_OAUTH_HOST` >
//! the region's host; `KIMI_CODE_BASE_URL` > the region's base URL (surface.md §4.4). The
//! credential key follows from the pair, so a login against a staging or local server never
//! overwrites the real one.

use sha2::{Digest, Sha256};

use crate::DEFAULT_OAUTH_KEY;

/// The Kimi Code deployments: kimi.com (mainland China) and kimi.ai (global).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Region {
    #[default]
    MainlandCn,
    Global,
}

impl Region {
    pub fn parse(text: &str) -> Option<Region> {
        match text.trim() {
            "mainland-cn" => Some(Region::MainlandCn),
            "global" => Some(Region::Global),
            _ => None,
        }
    }

    pub fn oauth_host(self) -> &'static str {
        match self {
            Region::MainlandCn => "https://auth.kimi.com",
            Region::Global => "https://auth.kimi.ai",
        }
    }

    pub fn base_url(self) -> &'static str {
        match self {
            Region::MainlandCn => "https://api.kimi.com/coding/v1",
            Region::Global => "https://api.kimi.ai/coding/v1",
        }
    }
}

/// The two endpoints of one login, without trailing slashes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoints {
    pub oauth_host: String,
    pub base_url: String,
}

fn normalize(url: &str) -> String {
    url.trim().trim_end_matches('/').to_owned()
}

fn env_value(env: &dyn Fn(&str) -> Option<String>, name: &str) -> Option<String> {
    env(name).map(|v| normalize(&v)).filter(|v| !v.is_empty())
}

/// `KIMI_CODE_OAUTH_HOST`, else `KIMI_OAUTH_HOST`.
pub fn env_oauth_host(env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    env_value(env, "KIMI_CODE_OAUTH_HOST").or_else(|| env_value(env, "KIMI_OAUTH_HOST"))
}

/// `KIMI_CODE_BASE_URL`.
pub fn env_base_url(env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    env_value(env, "KIMI_CODE_BASE_URL")
}

impl Endpoints {
    /// The endpoints a new login uses: the environment's, else the region's.
    pub fn for_login(region: Region, env: &dyn Fn(&str) -> Option<String>) -> Endpoints {
        Endpoints {
            oauth_host: env_oauth_host(env).unwrap_or_else(|| region.oauth_host().to_owned()),
            base_url: env_base_url(env).unwrap_or_else(|| region.base_url().to_owned()),
        }
    }

    /// The endpoints of a configured login: the environment's, else what config.toml
    /// recorded, else the mainland defaults.
    pub fn configured(
        oauth_host: Option<&str>,
        base_url: Option<&str>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Endpoints {
        Endpoints {
            oauth_host: env_oauth_host(env)
                .or_else(|| oauth_host.map(normalize))
                .unwrap_or_else(|| Region::MainlandCn.oauth_host().to_owned()),
            base_url: env_base_url(env)
                .or_else(|| base_url.map(normalize))
                .unwrap_or_else(|| Region::MainlandCn.base_url().to_owned()),
        }
    }

    /// The credential key of this pair: `oauth/kimi-code` for the default endpoints, a key
    /// scoped by a hash of both otherwise (as Kimi Code names them).
    pub fn credential_key(&self) -> String {
        if self.oauth_host == Region::MainlandCn.oauth_host()
            && self.base_url == Region::MainlandCn.base_url()
        {
            return DEFAULT_OAUTH_KEY.to_owned();
        }
        let json = serde_json::json!({"oauthHost": self.oauth_host, "baseUrl": self.base_url});
        let digest = Sha256::digest(json.to_string().as_bytes());
        let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
        format!("oauth/kimi-code-env-{hex}")
    }

    /// The host recorded in config.toml: none for the default host (so switching regions
    /// later is not pinned by a stale value).
    pub fn persisted_oauth_host(&self) -> Option<&str> {
        (self.oauth_host != Region::MainlandCn.oauth_host()).then_some(self.oauth_host.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn code_host_beats_the_generic_host_which_beats_the_region() {
        let both = env_of(&[
            ("KIMI_CODE_OAUTH_HOST", "http://a/"),
            ("KIMI_OAUTH_HOST", "http://b"),
        ]);
        assert_eq!(
            Endpoints::for_login(Region::Global, &both).oauth_host,
            "http://a"
        );
        let generic = env_of(&[("KIMI_OAUTH_HOST", "http://b")]);
        assert_eq!(
            Endpoints::for_login(Region::Global, &generic).oauth_host,
            "http://b"
        );
        let none = env_of(&[]);
        let global = Endpoints::for_login(Region::Global, &none);
        assert_eq!(global.oauth_host, "https://auth.kimi.ai");
        assert_eq!(global.base_url, "https://api.kimi.ai/coding/v1");
        assert!(global.credential_key().starts_with("oauth/kimi-code-env-"));
        let default = Endpoints::for_login(Region::MainlandCn, &none);
        assert_eq!(default.credential_key(), "oauth/kimi-code");
        assert_eq!(default.persisted_oauth_host(), None);
    }
}
