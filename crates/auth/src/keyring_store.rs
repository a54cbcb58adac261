//! Tokens in the OS credential store (`oauth = { storage = "keyring", … }`): one entry per
//! credential key under the service `kimi-rs`, holding the same JSON as a credential file. On
//! Linux this is the kernel key retention service (keyutils: the user's persistent and session
//! keyrings), which needs no desktop session and lasts until reboot; on macOS the Keychain, on
//! Windows the Credential Manager. Every failure is an error that says how to get out of it,
//! never a silent switch to files.

use keyring::Entry;

use crate::error::AuthError;
use crate::store::Token;

/// The service name of kimi-rs's keyring entries; the entry's user is the credential key.
pub const SERVICE: &str = "kimi-rs";

/// Where a key lives, for messages.
pub(crate) fn location(key: &str) -> String {
    format!("in the OS keyring (service `{SERVICE}`, entry `{key}`)")
}

fn unusable(key: &str, err: &keyring::Error) -> AuthError {
    tracing::warn!(key, "OS keyring error: {err}");
    AuthError::Keyring {
        key: key.to_owned(),
        detail: err.to_string(),
    }
}

/// On Linux `keyring` adds entries to the process's session keyring and links them into the
/// user's persistent keyring, and looks them up through the session keyring. A process
/// started outside a login session (CI, a container, cron, ssh without pam_keyinit) has no
/// session keyring of its own: the first lookup sees the shared user-session keyring, which
/// does not hold the persistent keyring, and the second lands in a new per-process keyring —
/// so a token saved by one kimi-rs would be invisible to the next. Linking the persistent
/// keyring into the session keyring once, before any entry is made, gives every entry the
/// same keyring, and every kimi-rs process the same persistent entries.
#[cfg(target_os = "linux")]
fn attach_persistent_keyring() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        use linux_keyutils::{KeyRing, KeyRingIdentifier};
        if let Err(err) = KeyRing::get_persistent(KeyRingIdentifier::Session) {
            // Entries still work within this session; say why the next one may miss them.
            tracing::warn!(
                "the kernel's persistent keyring is not available ({err:?}); keyring logins last only as long as this session keyring"
            );
        }
    });
}

fn entry(key: &str) -> Result<Entry, AuthError> {
    #[cfg(target_os = "linux")]
    attach_persistent_keyring();
    Entry::new(SERVICE, key).map_err(|err| unusable(key, &err))
}

/// The stored token, `None` when the keyring has no entry for `key`.
pub(crate) fn load(key: &str) -> Result<Option<Token>, AuthError> {
    let text = match entry(key)?.get_password() {
        Ok(text) => text,
        Err(keyring::Error::NoEntry) => return Ok(None),
        Err(err) => return Err(unusable(key, &err)),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|err| AuthError::Keyring {
            key: key.to_owned(),
            detail: format!(
                "the entry is not a valid credential ({err}); run `kimi-rs login` to replace it"
            ),
        })
}

/// Fails when the keyring cannot be read (an entry that is there, damaged or not, is fine).
pub(crate) fn probe(key: &str) -> Result<(), AuthError> {
    match entry(key)?.get_password() {
        Ok(_) | Err(keyring::Error::NoEntry | keyring::Error::BadEncoding(_)) => Ok(()),
        Err(err) => Err(unusable(key, &err)),
    }
}

pub(crate) fn save(key: &str, token: &Token) -> Result<(), AuthError> {
    let text = serde_json::to_string(token).map_err(|err| AuthError::Keyring {
        key: key.to_owned(),
        detail: format!("cannot encode the token: {err}"),
    })?;
    entry(key)?
        .set_password(&text)
        .map_err(|err| unusable(key, &err))
}

/// Deletes the entry; `false` when there was none.
pub(crate) fn remove(key: &str) -> Result<bool, AuthError> {
    match entry(key)?.delete_credential() {
        Ok(()) => Ok(true),
        Err(keyring::Error::NoEntry) => Ok(false),
        Err(err) => Err(unusable(key, &err)),
    }
}
