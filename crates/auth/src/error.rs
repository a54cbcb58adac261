//! What can go wrong with an account login, worded so the user knows what to do next.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// `location` says where the credential was looked for (a file, or a keyring entry).
    #[error("not logged in to Kimi Code (no credential {location}); run `kimi-rs login`")]
    NotLoggedIn { location: String },
    #[error(
        "the Kimi Code login was refused when refreshing it ({detail}); run `kimi-rs login` to sign in again"
    )]
    RefreshRejected { detail: String },
    #[error("the login was denied{}", detail_suffix(.0))]
    Denied(String),
    #[error(
        "the login code expired before it was authorized; run `kimi-rs login` again and enter the new code sooner"
    )]
    Expired,
    #[error("the login was cancelled")]
    Cancelled,
    #[error("the login was not authorized within {0} s; run `kimi-rs login` again")]
    TimedOut(u64),
    #[error("could not reach {url}: {detail}. Check the network and proxy variables")]
    Network { url: String, detail: String },
    #[error("{url} answered HTTP {status}: {detail}")]
    Http {
        url: String,
        status: u16,
        detail: String,
    },
    #[error("{url} sent an unexpected answer: {detail}")]
    Protocol { url: String, detail: String },
    #[error("{path}: {detail}")]
    Storage { path: PathBuf, detail: String },
    #[error(
        "the OS keyring cannot be used for the login `{key}` ({detail}); make it available (on Linux kimi-rs uses the kernel keyring: `keyctl show @u` shows it) or run `kimi-rs login --storage file` to keep the token in $KIMI_RS_HOME/credentials/ instead"
    )]
    Keyring { key: String, detail: String },
    #[error("{0}")]
    Config(String),
}

fn detail_suffix(detail: &str) -> String {
    if detail.is_empty() {
        String::new()
    } else {
        format!(": {detail}")
    }
}

impl AuthError {
    /// Only signing in again helps (as opposed to a network or server problem).
    pub fn needs_login(&self) -> bool {
        matches!(
            self,
            AuthError::NotLoggedIn { .. } | AuthError::RefreshRejected { .. }
        )
    }

    pub(crate) fn storage(path: &std::path::Path, detail: impl std::fmt::Display) -> AuthError {
        AuthError::Storage {
            path: path.to_owned(),
            detail: detail.to_string(),
        }
    }
}
