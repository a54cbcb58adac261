//! Where MCP OAuth credentials live: one JSON file per (server name, server URL) under
//! `$KIMI_RS_HOME/credentials/mcp/`, named `<sanitized name>-<24 hex of sha256(name, url)>.json`
//! (the reference's key scheme), the folder 0700 and each file 0600, written through a temporary
//! file and a rename so a crash never leaves half a token. The file holds rmcp's
//! [`StoredCredentials`] (the registered client id and the token response).

use std::io::Write;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use rmcp::transport::auth::{AuthError, CredentialStore, StoredCredentials};
use sha2::{Digest, Sha256};

/// The credentials folder of one kimi-rs home.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenDir(PathBuf);

impl TokenDir {
    /// `<kimi home>/credentials/mcp`.
    pub fn in_home(kimi_home: &Path) -> TokenDir {
        TokenDir(kimi_home.join("credentials").join("mcp"))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// The file holding the credentials of `server` at `url`.
    pub fn file(&self, server: &str, url: &str) -> PathBuf {
        self.0.join(format!("{}.json", store_key(server, url)))
    }

    /// The rmcp credential store backed by that file.
    pub fn store(&self, server: &str, url: &str) -> FileCredentialStore {
        FileCredentialStore {
            path: self.file(server, url),
        }
    }

    /// Whether an access token is stored for the server (it may be expired; refresh decides).
    pub fn has_tokens(&self, server: &str, url: &str) -> bool {
        matches!(read(&self.file(server, url)), Ok(Some(c)) if c.token_response.is_some())
    }

    /// Forget the server's credentials. Returns whether there were any.
    pub fn remove(&self, server: &str, url: &str) -> std::io::Result<bool> {
        match std::fs::remove_file(self.file(server, url)) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }
}

/// `<name with [^A-Za-z0-9_-] as _>-<first 24 hex of sha256(name \0 url-without-fragment)>`.
fn store_key(server: &str, url: &str) -> String {
    let mut safe = String::with_capacity(server.len());
    for c in server.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
            c
        } else {
            '_'
        };
        // Runs of `_` collapse, so `a..b` and `a._b` read alike (the hash keeps them apart).
        if !(c == '_' && safe.ends_with('_')) {
            safe.push(c);
        }
    }
    if safe.is_empty() {
        safe.push_str("server");
    }
    let resource = url.split('#').next().unwrap_or(url);
    let mut hash = Sha256::new();
    hash.update(server.as_bytes());
    hash.update([0]);
    hash.update(resource.as_bytes());
    let digest: String = hash
        .finalize()
        .iter()
        .take(12)
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("{safe}-{digest}")
}

fn read(path: &Path) -> Result<Option<StoredCredentials>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    serde_json::from_str(&text).map(Some).map_err(|e| {
        format!(
            "{} is not a valid MCP credential file ({e}); delete it and sign in again",
            path.display()
        )
    })
}

/// Write `bytes` to `path` readable by the owner only, atomically.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("credential path has no folder"))?;
    // `credentials/` and `credentials/mcp/` are the user's alone (0700), whoever made them.
    std::fs::create_dir_all(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let parent = dir
            .parent()
            .filter(|p| p.file_name().is_some_and(|n| n == "credentials"));
        for folder in std::iter::once(dir).chain(parent) {
            std::fs::set_permissions(folder, std::fs::Permissions::from_mode(0o700))?;
        }
    }
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("mcp"),
        std::process::id()
    ));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let result = (|| {
        let mut file = options.open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// rmcp's [`CredentialStore`] over one credential file.
#[derive(Debug, Clone)]
pub struct FileCredentialStore {
    path: PathBuf,
}

#[async_trait]
impl CredentialStore for FileCredentialStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        read(&self.path).map_err(AuthError::CredentialStoreError)
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let json = serde_json::to_vec_pretty(&credentials)
            .map_err(|e| AuthError::CredentialStoreError(format!("cannot encode: {e}")))?;
        write_private(&self.path, &json).map_err(|e| {
            AuthError::CredentialStoreError(format!("cannot write {}: {e}", self.path.display()))
        })?;
        tracing::info!(path = %self.path.display(), "MCP OAuth credentials saved");
        Ok(())
    }

    async fn clear(&self) -> Result<(), AuthError> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(AuthError::CredentialStoreError(format!(
                "cannot delete {}: {e}",
                self.path.display()
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_sanitized_and_tell_urls_apart() {
        let a = store_key("git hub/..", "https://x.test/mcp");
        assert!(a.starts_with("git_hub_-"), "{a}");
        assert_eq!(a.len(), "git_hub_-".len() + 24);
        assert_ne!(a, store_key("git hub/..", "https://y.test/mcp"));
        assert_eq!(
            store_key("s", "https://x.test/mcp#frag"),
            store_key("s", "https://x.test/mcp")
        );
        assert!(store_key("", "u").starts_with("server-"));
    }

    #[tokio::test]
    async fn saved_credentials_are_private_and_round_trip() -> Result<(), Box<dyn std::error::Error>>
    {
        let home = tempfile::tempdir()?;
        let dir = TokenDir::in_home(home.path());
        let store = dir.store("s", "http://127.0.0.1:1/mcp");
        assert!(store.load().await?.is_none());
        store
            .save(StoredCredentials::new(
                "client-1".into(),
                None,
                vec![],
                Some(5),
            ))
            .await?;
        let loaded = store.load().await?.ok_or("nothing saved")?;
        assert_eq!(loaded.client_id, "client-1");
        assert!(!dir.has_tokens("s", "http://127.0.0.1:1/mcp"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let file = dir.file("s", "http://127.0.0.1:1/mcp");
            assert_eq!(
                std::fs::metadata(&file)?.permissions().mode() & 0o777,
                0o600
            );
            for folder in [dir.path(), home.path().join("credentials").as_path()] {
                assert_eq!(
                    std::fs::metadata(folder)?.permissions().mode() & 0o777,
                    0o700
                );
            }
        }
        assert!(dir.remove("s", "http://127.0.0.1:1/mcp")?);
        assert!(!dir.remove("s", "http://127.0.0.1:1/mcp")?);
        Ok(())
    }
}
