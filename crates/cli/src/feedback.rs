//! `/feedback <message>` (alias `/bug`): the report bundle — the message, the session
//! (journals, state, its log), the global logs and config.toml, tui.toml and mcp.json with
//! secrets redacted, and with `--code` an archive of the working directory (`.gitignore`-aware,
//! bounded) — saved as one ZIP in the working directory, and sent only when
//! `[feedback] endpoint` is configured (POSTed as `application/zip`). Nothing leaves the
//! machine otherwise, and the user is told where the file is either way.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::json;

/// A codebase file bigger than this is listed as skipped, not archived.
pub const MAX_CODE_FILE_BYTES: u64 = 1024 * 1024;
/// The codebase part stops growing here (the rest is listed as skipped).
pub const MAX_CODE_TOTAL_BYTES: u64 = 50 * 1024 * 1024;
const SEND_TIMEOUT: Duration = Duration::from_secs(120);

/// What `/feedback` was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedbackRequest {
    pub message: String,
    pub with_code: bool,
}

/// `[--code] <message>`; the message is required.
pub fn parse(args: &str) -> anyhow::Result<FeedbackRequest> {
    let args = args.trim();
    let (with_code, message) = match args.strip_prefix("--code") {
        Some(rest) if rest.is_empty() || rest.starts_with(char::is_whitespace) => {
            (true, rest.trim())
        }
        _ => (false, args),
    };
    if message.is_empty() {
        bail!(
            "say what happened: /feedback <message> (add --code first to include an archive of this directory)"
        );
    }
    Ok(FeedbackRequest {
        message: message.to_owned(),
        with_code,
    })
}

/// Where the bundle went.
#[derive(Debug)]
pub struct FeedbackOutcome {
    pub path: PathBuf,
    pub bytes: u64,
    /// `Some(endpoint)` when it was sent.
    pub sent_to: Option<String>,
    pub code_files: usize,
    pub code_skipped: usize,
}

impl FeedbackOutcome {
    pub fn describe(&self) -> String {
        let size = crate::export::human_size(self.bytes);
        let code = if self.code_files + self.code_skipped > 0 {
            format!(
                "; codebase: {} files{}",
                self.code_files,
                if self.code_skipped > 0 {
                    format!(
                        ", {} left out (over the size limits or unreadable, listed in feedback.json)",
                        self.code_skipped
                    )
                } else {
                    String::new()
                }
            )
        } else {
            String::new()
        };
        match &self.sent_to {
            Some(endpoint) => format!(
                "Feedback sent to {endpoint} ({size}{code}). A copy is at {}.",
                self.path.display()
            ),
            None => format!(
                "Feedback saved to {} ({size}{code}); nothing was sent: no [feedback] endpoint is configured in config.toml. Attach the file to a bug report.",
                self.path.display()
            ),
        }
    }
}

/// The working directory's files for the bundle: `.gitignore`-aware, no `.git`, no hidden
/// files; bounded per file and in total. Returns the entries and the skipped paths with why.
fn codebase(cwd: &Path) -> (Vec<crate::export::Extra>, Vec<String>) {
    let mut entries = Vec::new();
    let mut skipped = Vec::new();
    let mut total = 0;
    for entry in ignore::WalkBuilder::new(cwd).build() {
        let entry = match entry {
            Ok(entry) => entry,
            Err(err) => {
                skipped.push(format!("{err}"));
                continue;
            }
        };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let path = entry.path();
        let rel = path
            .strip_prefix(cwd)
            .unwrap_or(path)
            .to_string_lossy()
            .replace('\\', "/");
        // Earlier bundles and exports are not part of the code.
        if rel.starts_with("kimi-rs-feedback-") || rel.starts_with("kimi-export-") {
            continue;
        }
        let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
        if size > MAX_CODE_FILE_BYTES {
            skipped.push(format!(
                "{rel}: {size} bytes, over the 1 MiB per-file limit"
            ));
            continue;
        }
        if total + size > MAX_CODE_TOTAL_BYTES {
            skipped.push(format!("{rel}: the 50 MiB codebase limit was reached"));
            continue;
        }
        match std::fs::read(path) {
            Ok(bytes) => {
                total += size;
                entries.push((format!("codebase/{rel}"), bytes));
            }
            Err(err) => skipped.push(format!("{rel}: {err}")),
        }
    }
    (entries, skipped)
}

/// Builds the bundle in `cwd` and sends it when an endpoint is configured.
pub async fn run(
    request: &FeedbackRequest,
    session_dir: &Path,
    session_id: &str,
    home: &Path,
    cwd: &Path,
    endpoint: Option<&str>,
) -> anyhow::Result<FeedbackOutcome> {
    if let Some(url) = endpoint
        && !(url.starts_with("http://") || url.starts_with("https://"))
    {
        bail!("[feedback] endpoint `{url}` in config.toml is not an http(s) URL; fix it");
    }
    let (code, skipped) = if request.with_code {
        let cwd = cwd.to_owned();
        tokio::task::spawn_blocking(move || codebase(&cwd))
            .await
            .context("archiving the codebase failed")?
    } else {
        (Vec::new(), Vec::new())
    };
    let mut extras = crate::export_debug::extras(home);
    let report = json!({
        "message": request.message,
        "version": env!("CARGO_PKG_VERSION"),
        "sessionId": session_id,
        "os": std::env::consts::OS,
        "arch": std::env::consts::ARCH,
        "time": kimi_core::engine::log::now_ms(),
        "codebase": request.with_code,
        "codebaseSkipped": skipped,
    });
    extras.push((
        "feedback.json".to_owned(),
        serde_json::to_vec_pretty(&report).context("cannot encode feedback.json")?,
    ));
    let code_files = code.len();
    extras.extend(code);
    let short: String = session_id
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(8)
        .collect();
    let path = cwd.join(format!(
        "kimi-rs-feedback-{short}-{}.zip",
        kimi_core::engine::log::now_ms()
    ));
    let (dir, id, out) = (session_dir.to_owned(), session_id.to_owned(), path.clone());
    let exported =
        tokio::task::spawn_blocking(move || crate::export::export_dir(&dir, &id, &out, &extras))
            .await
            .context("writing the feedback bundle failed")??;
    tracing::info!(path = %exported.path.display(), bytes = exported.bytes, "feedback bundle written");
    let mut outcome = FeedbackOutcome {
        path: exported.path,
        bytes: exported.bytes,
        sent_to: None,
        code_files,
        code_skipped: skipped.len(),
    };
    if let Some(url) = endpoint {
        send(url, &outcome.path).await.with_context(|| {
            format!(
                "the feedback bundle is saved at {} but could not be sent",
                outcome.path.display()
            )
        })?;
        tracing::info!(endpoint = url, "feedback sent");
        outcome.sent_to = Some(url.to_owned());
    }
    Ok(outcome)
}

async fn send(url: &str, path: &Path) -> anyhow::Result<()> {
    let body = tokio::fs::read(path)
        .await
        .with_context(|| format!("cannot read {}", path.display()))?;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut builder = reqwest::Client::builder()
        .timeout(SEND_TIMEOUT)
        .user_agent(concat!("kimi-rs/", env!("CARGO_PKG_VERSION")));
    let loopback = reqwest::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .is_some_and(|h| {
            let h = h.trim_start_matches('[').trim_end_matches(']');
            h.eq_ignore_ascii_case("localhost")
                || h.parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        });
    if loopback {
        builder = builder.no_proxy();
    }
    let client = builder.build().context("cannot set up the HTTP client")?;
    let response = client
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/zip")
        .body(body)
        .send()
        .await
        .with_context(|| format!("POST {url} failed"))?;
    let status = response.status();
    if !status.is_success() {
        let text = response.text().await.unwrap_or_default();
        let text: String = text.chars().take(300).collect();
        bail!("{url} answered {status}: {text}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn parse_needs_a_message_and_reads_code() {
        assert_eq!(
            parse("--code it broke").unwrap(),
            FeedbackRequest {
                message: "it broke".into(),
                with_code: true
            }
        );
        assert_eq!(
            parse("--codebase is odd").unwrap(),
            FeedbackRequest {
                message: "--codebase is odd".into(),
                with_code: false
            }
        );
        assert!(parse("  ").is_err());
        assert!(parse("--code").is_err());
    }

    #[test]
    fn codebase_is_gitignore_aware_and_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
        std::fs::create_dir_all(root.join("target")).unwrap();
        std::fs::write(root.join("target/out.bin"), "x").unwrap();
        std::fs::write(root.join("main.rs"), "fn main() {}\n").unwrap();
        std::fs::write(
            root.join("big.dat"),
            vec![0u8; (MAX_CODE_FILE_BYTES + 1) as usize],
        )
        .unwrap();
        let (entries, skipped) = codebase(root);
        let names: Vec<&str> = entries.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["codebase/main.rs"]);
        assert_eq!(skipped.len(), 1);
        assert!(skipped[0].starts_with("big.dat:"), "{skipped:?}");
    }
}
