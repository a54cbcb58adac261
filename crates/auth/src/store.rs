//! Where tokens are kept. `storage = "file"` (the default): `$KIMI_RS_HOME/credentials/<name>.json`
//! (directory 0700, file 0600), written to a temporary file, synced and renamed so a crash
//! never leaves half a token. `storage = "keyring"`: the OS credential store
//! ([`crate::keyring_store`]). The JSON is Kimi Code's (`access_token`, `refresh_token`,
//! `expires_at`, …), so a credential can move between the two programs.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::AuthError;

/// One stored login.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Token {
    pub access_token: String,
    pub refresh_token: String,
    /// Unix seconds when `access_token` expires.
    pub expires_at: i64,
    #[serde(default)]
    pub scope: String,
    #[serde(default = "bearer")]
    pub token_type: String,
    /// The lifetime the server gave (seconds), for the refresh threshold.
    #[serde(default)]
    pub expires_in: i64,
}

fn bearer() -> String {
    "Bearer".to_owned()
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Token")
            .field("access_token", &"[redacted]")
            .field("refresh_token", &"[redacted]")
            .field("expires_at", &self.expires_at)
            .field("expires_in", &self.expires_in)
            .finish_non_exhaustive()
    }
}

/// Seconds since the Unix epoch.
pub fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

impl Token {
    /// Refresh when less than half the lifetime (at least five minutes) is left, as Kimi Code
    /// does: a long turn never starts with a token about to lapse.
    pub fn needs_refresh(&self, now: i64) -> bool {
        if self.expires_at == 0 {
            return false;
        }
        let threshold = (self.expires_in / 2).max(300);
        self.expires_at - now < threshold
    }
}

/// Where a login's token lives: the `storage` of an `oauth = { … }` reference.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Storage {
    /// `$KIMI_RS_HOME/credentials/<name>.json`.
    #[default]
    File,
    /// The OS credential store.
    Keyring,
    /// A value kimi-rs does not know: every use of the store fails saying so.
    Unknown(String),
}

impl Storage {
    /// The configured value; absent means `file`.
    pub fn from_config(value: Option<&str>) -> Storage {
        match value {
            None | Some("file") => Storage::File,
            Some("keyring") => Storage::Keyring,
            Some(other) => Storage::Unknown(other.to_owned()),
        }
    }

    /// The value written into config.toml.
    pub fn as_str(&self) -> &str {
        match self {
            Storage::File => "file",
            Storage::Keyring => "keyring",
            Storage::Unknown(other) => other,
        }
    }

    fn known(&self) -> Result<(), AuthError> {
        match self {
            Storage::File | Storage::Keyring => Ok(()),
            Storage::Unknown(other) => Err(AuthError::Config(format!(
                "config.toml has `oauth.storage = \"{other}\"`, which kimi-rs does not know; set it to \"file\" or \"keyring\", or run `kimi-rs login --storage file|keyring` to rewrite it"
            ))),
        }
    }
}

/// The credentials of a home, in one storage. The `credentials/` directory also holds the
/// refresh lock files for keyring logins.
#[derive(Debug, Clone)]
pub struct TokenStore {
    dir: PathBuf,
    storage: Storage,
}

impl TokenStore {
    /// File storage.
    pub fn new(home: &Path) -> TokenStore {
        TokenStore::with_storage(home, Storage::File)
    }

    pub fn with_storage(home: &Path, storage: Storage) -> TokenStore {
        TokenStore {
            dir: home.join("credentials"),
            storage,
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn storage(&self) -> &Storage {
        &self.storage
    }

    /// Where the credential of `key` is kept, for messages: "at <file>" or "in the OS keyring
    /// (…)".
    pub fn location(&self, key: &str) -> Result<String, AuthError> {
        // The key must be a plain name in every storage: it names the lock file.
        let path = self.path_for(key)?;
        self.storage.known()?;
        if self.storage == Storage::Keyring {
            Ok(crate::keyring_store::location(key))
        } else {
            Ok(format!("at {}", path.display()))
        }
    }

    /// Fails when this storage cannot be used for `key` (an unknown `storage` value, an OS
    /// keyring that is not there), so a login can say so before it starts.
    pub fn check(&self, key: &str) -> Result<(), AuthError> {
        self.path_for(key)?;
        self.storage.known()?;
        if self.storage == Storage::Keyring {
            crate::keyring_store::probe(key)?;
        }
        Ok(())
    }

    /// The lock file serialising refreshes of `key` across processes.
    pub fn lock_path(&self, key: &str) -> Result<PathBuf, AuthError> {
        let path = self.path_for(key)?.with_extension("lock");
        create_private_dir(&self.dir)?;
        Ok(path)
    }

    /// The file of a credential key: `oauth/kimi-code` → `credentials/kimi-code.json`. A key
    /// that would leave the directory is refused.
    pub fn path_for(&self, key: &str) -> Result<PathBuf, AuthError> {
        let name = key.strip_prefix("oauth/").unwrap_or(key);
        if name.is_empty()
            || name.starts_with('.')
            || name.contains(['/', '\\'])
            || name.contains("..")
        {
            return Err(AuthError::Config(format!(
                "the credential key `{key}` is not a plain name; fix `oauth.key` in config.toml or run `kimi-rs login`"
            )));
        }
        Ok(self.dir.join(format!("{name}.json")))
    }

    /// The stored token, `None` when there is none. A damaged file is an error naming it.
    pub fn load(&self, key: &str) -> Result<Option<Token>, AuthError> {
        let path = self.path_for(key)?;
        self.storage.known()?;
        if self.storage == Storage::Keyring {
            return crate::keyring_store::load(key);
        }
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(AuthError::storage(&path, format!("cannot read: {err}"))),
        };
        serde_json::from_str(&text).map(Some).map_err(|err| {
            AuthError::storage(
                &path,
                format!("is not a valid credential ({err}); run `kimi-rs login` to replace it"),
            )
        })
    }

    /// Writes the token readable only by the user; returns where it went (as
    /// [`TokenStore::location`]).
    pub fn save(&self, key: &str, token: &Token) -> Result<String, AuthError> {
        let path = self.path_for(key)?;
        self.storage.known()?;
        if self.storage == Storage::Keyring {
            crate::keyring_store::save(key, token)?;
            return self.location(key);
        }
        create_private_dir(&self.dir)?;
        let tmp = self.dir.join(format!(
            ".{}.tmp.{}.{:08x}",
            path.file_name().and_then(|n| n.to_str()).unwrap_or("token"),
            std::process::id(),
            rand::random::<u32>()
        ));
        let mut text = serde_json::to_string_pretty(token)
            .map_err(|err| AuthError::storage(&path, format!("cannot encode: {err}")))?;
        text.push('\n');
        let written =
            write_private(&tmp, text.as_bytes()).and_then(|()| std::fs::rename(&tmp, &path));
        if let Err(err) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(AuthError::storage(&path, format!("cannot write: {err}")));
        }
        self.location(key)
    }

    /// Deletes the credential; `false` when there was none.
    pub fn remove(&self, key: &str) -> Result<bool, AuthError> {
        let path = self.path_for(key)?;
        self.storage.known()?;
        if self.storage == Storage::Keyring {
            return crate::keyring_store::remove(key);
        }
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(err) => Err(AuthError::storage(&path, format!("cannot delete: {err}"))),
        }
    }
}

fn create_private_dir(dir: &Path) -> Result<(), AuthError> {
    std::fs::create_dir_all(dir).map_err(|err| AuthError::storage(dir, err))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // create_dir_all leaves an existing directory's mode alone: tighten it.
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|err| AuthError::storage(dir, err))?;
    }
    Ok(())
}

fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token() -> Token {
        Token {
            access_token: "a".into(),
            refresh_token: "r".into(),
            expires_at: 1000,
            scope: String::new(),
            token_type: "Bearer".into(),
            expires_in: 900,
        }
    }

    #[test]
    fn saved_tokens_are_private_and_load_back() {
        let home = tempfile::tempdir().unwrap();
        let store = TokenStore::new(home.path());
        let location = store.save("oauth/kimi-code", &token()).unwrap();
        let path = home.path().join("credentials/kimi-code.json");
        assert_eq!(location, format!("at {}", path.display()));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
            let dir = std::fs::metadata(store.dir()).unwrap().permissions().mode() & 0o777;
            assert_eq!(dir, 0o700);
        }
        assert_eq!(store.load("oauth/kimi-code").unwrap(), Some(token()));
        assert!(store.remove("oauth/kimi-code").unwrap());
        assert_eq!(store.load("oauth/kimi-code").unwrap(), None);
        assert!(!store.remove("oauth/kimi-code").unwrap());
    }

    #[test]
    fn keys_cannot_leave_the_directory() {
        let store = TokenStore::new(Path::new("/h"));
        for key in ["oauth/../x", "../x", "oauth/.hidden", "a/b", ""] {
            assert!(store.path_for(key).is_err(), "{key}");
        }
    }

    #[test]
    fn refresh_is_due_when_half_the_lifetime_is_gone() {
        let t = Token {
            expires_at: 10_000,
            expires_in: 3600,
            ..token()
        };
        assert!(!t.needs_refresh(10_000 - 1801));
        assert!(t.needs_refresh(10_000 - 1799));
    }
}
