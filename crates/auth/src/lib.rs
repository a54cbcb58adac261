//! Kimi account login for kimi-rs (surface.md §5.5): the RFC 8628 device flow against the Kimi
//! OAuth host ([`device`]), tokens stored under `$KIMI_RS_HOME/credentials/` readable only by
//! the user or in the OS keyring ([`store`]) and refreshed before they expire or when a server refuses them
//! ([`refresh`]), the managed provider `managed:kimi-code` and its `kimi-code/*` models written
//! into `config.toml` ([`managed`]), the LLM provider that signs its requests with the token
//! ([`provider`]), the plan quotas of `/usage` ([`usage`]) and the Moonshot search and fetch
//! services of WebSearch and FetchURL ([`services`]).
//!
//! Library code never reads the process environment: callers pass a lookup function.

pub mod device;
pub mod endpoints;
pub mod error;
pub mod keyring_store;
pub mod managed;
pub mod platform;
pub mod provider;
pub mod refresh;
pub mod services;
pub mod store;
pub mod usage;

mod http;

pub use endpoints::{Endpoints, Region};
pub use error::AuthError;
pub use http::{fetch_bytes, fetch_text};
pub use refresh::TokenManager;
pub use store::{Storage, Token, TokenStore};

/// The OAuth client id of Kimi Code, shared by every region.
pub const CLIENT_ID: &str = "17e5f671-d194-4dfb-9706-5516cb48c098";
/// The provider id login writes (`[providers."managed:kimi-code"]`).
pub const PROVIDER_NAME: &str = kimi_llm::config::MANAGED_PROVIDER;
/// Model aliases of the managed provider are `kimi-code/<model id>`.
pub const ALIAS_PREFIX: &str = "kimi-code/";
/// The credential key of the default (mainland-cn, default endpoints) login.
pub const DEFAULT_OAUTH_KEY: &str = "oauth/kimi-code";
