//! Downloads for installs: a zip URL, a GitHub URL form turned into a `codeload.github.com`
//! archive (only github.com and codeload.github.com are contacted), and marketplace JSON. Size
//! is capped while streaming, so a huge or endless body cannot fill the disk or memory.

use std::time::Duration;

use crate::error::PluginError;

/// Largest download accepted.
pub(crate) const MAX_DOWNLOAD_BYTES: usize = 256 * 1024 * 1024;
const TIMEOUT: Duration = Duration::from_secs(120);

fn is_loopback(url: &str) -> bool {
    reqwest::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .is_some_and(|host| {
            let host = host.trim_start_matches('[').trim_end_matches(']');
            host.eq_ignore_ascii_case("localhost")
                || host
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        })
}

fn client(url: &str) -> Result<reqwest::Client, PluginError> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut builder = reqwest::Client::builder()
        .timeout(TIMEOUT)
        .user_agent(concat!("kimi-rs/", env!("CARGO_PKG_VERSION")));
    if is_loopback(url) {
        builder = builder.no_proxy();
    }
    builder.build().map_err(|e| PluginError::Download {
        url: url.to_owned(),
        detail: format!("HTTP client setup failed: {e}"),
    })
}

fn detail(err: &reqwest::Error) -> String {
    let mut text = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(inner) = source {
        text = format!("{text}: {inner}");
        source = inner.source();
    }
    text
}

/// GET `url`; returns the final URL (after redirects) and the body.
pub(crate) async fn get(url: &str) -> Result<(String, Vec<u8>), PluginError> {
    let fail = |detail: String| PluginError::Download {
        url: url.to_owned(),
        detail,
    };
    let mut response = client(url)?
        .get(url)
        .send()
        .await
        .map_err(|e| fail(detail(&e)))?;
    let status = response.status();
    if !status.is_success() {
        return Err(fail(format!("the server answered {status}")));
    }
    let final_url = response.url().to_string();
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| fail(detail(&e)))? {
        if body.len() + chunk.len() > MAX_DOWNLOAD_BYTES {
            return Err(fail(format!(
                "it is larger than {} MiB",
                MAX_DOWNLOAD_BYTES / (1024 * 1024)
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((final_url, body))
}

/// Which snapshot of a GitHub repository a URL names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GitHubRef {
    /// `/owner/repo`: the latest release, else the default branch.
    Latest,
    /// `/tree/<ref>`.
    Tree(String),
    /// `/releases/tag/<tag>`.
    Tag(String),
    /// `/commit/<sha>`.
    Commit(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitHubSource {
    pub owner: String,
    pub repo: String,
    pub reference: GitHubRef,
}

/// A `https://github.com/...` URL of one of the supported forms.
pub fn parse_github(url: &str) -> Option<GitHubSource> {
    let parsed = reqwest::Url::parse(url).ok()?;
    if parsed.scheme() != "https" && parsed.scheme() != "http" {
        return None;
    }
    let host = parsed.host_str()?;
    if !host.eq_ignore_ascii_case("github.com") && !host.eq_ignore_ascii_case("www.github.com") {
        return None;
    }
    let parts: Vec<&str> = parsed.path_segments()?.filter(|s| !s.is_empty()).collect();
    let (owner, repo) = (parts.first()?, parts.get(1)?);
    let repo = repo.strip_suffix(".git").unwrap_or(repo);
    let reference = match parts.get(2..).unwrap_or_default() {
        [] => GitHubRef::Latest,
        ["tree", rest @ ..] if !rest.is_empty() => GitHubRef::Tree(rest.join("/")),
        ["releases", "tag", tag] => GitHubRef::Tag((*tag).to_owned()),
        ["commit", sha] => GitHubRef::Commit((*sha).to_owned()),
        _ => return None,
    };
    Some(GitHubSource {
        owner: (*owner).to_owned(),
        repo: repo.to_owned(),
        reference,
    })
}

impl GitHubSource {
    /// The `codeload.github.com` zip of a fixed reference (`None` for [`GitHubRef::Latest`],
    /// which is decided by asking github.com first).
    pub fn archive_url(&self) -> Option<String> {
        let base = format!(
            "https://codeload.github.com/{}/{}/zip",
            self.owner, self.repo
        );
        match &self.reference {
            GitHubRef::Latest => None,
            GitHubRef::Tree(r) | GitHubRef::Commit(r) => Some(format!("{base}/{r}")),
            GitHubRef::Tag(tag) => Some(format!("{base}/refs/tags/{tag}")),
        }
    }

    /// The latest release's archive, or the default branch's when there is no release.
    pub(crate) async fn resolve_latest(&self) -> String {
        let latest = format!(
            "https://github.com/{}/{}/releases/latest",
            self.owner, self.repo
        );
        let base = format!(
            "https://codeload.github.com/{}/{}/zip",
            self.owner, self.repo
        );
        // github.com redirects to `/releases/tag/<tag>` when a release exists.
        if let Ok((final_url, _)) = get(&latest).await
            && let Some(tag) = final_url.split("/releases/tag/").nth(1)
            && !tag.is_empty()
        {
            return format!("{base}/refs/tags/{tag}");
        }
        format!("{base}/HEAD")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn github_url_forms_map_to_codeload_archives() {
        let cases = [
            ("https://github.com/o/r", None),
            (
                "https://github.com/o/r/tree/feature/x",
                Some("https://codeload.github.com/o/r/zip/feature/x"),
            ),
            (
                "https://github.com/o/r/releases/tag/v1.2",
                Some("https://codeload.github.com/o/r/zip/refs/tags/v1.2"),
            ),
            (
                "https://github.com/o/r.git/commit/abc123",
                Some("https://codeload.github.com/o/r/zip/abc123"),
            ),
        ];
        for (url, archive) in cases {
            let source = parse_github(url).unwrap();
            assert_eq!(source.archive_url().as_deref(), archive, "{url}");
        }
        assert_eq!(
            parse_github("https://github.com/o/r").unwrap().reference,
            GitHubRef::Latest
        );
        assert!(parse_github("https://example.com/o/r").is_none());
        assert!(parse_github("https://github.com/o/r/issues/1").is_none());
        assert!(parse_github("https://github.com/o").is_none());
    }
}
