//! `kimi-rs upgrade`: read a release manifest (`--manifest-url` or `KIMI_RS_UPDATE_URL`; JSON
//! `{"version": "x.y.z", "targets": {"<arch>-<os>": {"url": …, "sha256": …}}}`), and when it
//! offers a newer version for this machine, download it next to the running binary, check its
//! SHA-256 and rename it over the binary (atomic on one filesystem). kimi-rs never checks for
//! updates on its own.

use std::path::Path;

use anyhow::{Context, bail};
use serde::Deserialize;
use sha2::{Digest, Sha256};

#[derive(Debug, Deserialize)]
struct Manifest {
    version: String,
    #[serde(default)]
    targets: std::collections::BTreeMap<String, Target>,
}

#[derive(Debug, Deserialize)]
struct Target {
    url: String,
    sha256: String,
}

/// This machine's key in `targets`: `x86_64-linux`, `aarch64-macos`, …
pub fn target_key() -> String {
    format!("{}-{}", std::env::consts::ARCH, std::env::consts::OS)
}

fn version_parts(text: &str) -> Vec<u64> {
    text.trim()
        .trim_start_matches('v')
        .split(['.', '-', '+'])
        .map_while(|p| p.parse().ok())
        .collect()
}

/// `candidate` is a later version than `current` (numeric dotted components).
pub fn is_newer(candidate: &str, current: &str) -> bool {
    version_parts(candidate) > version_parts(current)
}

async fn get_bytes(url: &str) -> anyhow::Result<Vec<u8>> {
    if let Some(path) = url.strip_prefix("file://") {
        return std::fs::read(path).with_context(|| format!("cannot read {path}"));
    }
    Ok(kimi_auth::fetch_bytes(url).await?)
}

fn replace_binary(exe: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = exe
        .parent()
        .context("the running binary has no directory")?;
    let tmp = dir.join(format!(".kimi-rs.upgrade.{}", std::process::id()));
    let written = (|| -> std::io::Result<()> {
        std::fs::write(&tmp, bytes)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755))?;
        }
        std::fs::File::open(&tmp)?.sync_all()?;
        std::fs::rename(&tmp, exe)
    })();
    if let Err(err) = written {
        let _ = std::fs::remove_file(&tmp);
        bail!(
            "cannot replace {}: {err} (is its directory writable?)",
            exe.display()
        );
    }
    Ok(())
}

/// `kimi-rs upgrade [--manifest-url URL] [--check]`: 0 up to date or upgraded, 1 on failure.
pub fn run(manifest_url: Option<String>, check_only: bool) -> anyhow::Result<u8> {
    let url = manifest_url
        .or_else(|| std::env::var("KIMI_RS_UPDATE_URL").ok())
        .filter(|u| !u.trim().is_empty())
        .context(
            "no release manifest configured: pass --manifest-url URL or set KIMI_RS_UPDATE_URL",
        )?;
    let current = env!("CARGO_PKG_VERSION");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let text = get_bytes(&url).await?;
        let manifest: Manifest = serde_json::from_slice(&text)
            .with_context(|| format!("{url} is not a release manifest"))?;
        if !is_newer(&manifest.version, current) {
            println!("kimi-rs {current} is up to date (latest: {}).", manifest.version);
            return Ok(0);
        }
        let key = target_key();
        let target = manifest.targets.get(&key).with_context(|| {
            format!(
                "kimi-rs {} has no build for {key} in {url} (it has: {})",
                manifest.version,
                manifest.targets.keys().cloned().collect::<Vec<_>>().join(", ")
            )
        })?;
        if check_only {
            println!("kimi-rs {} is available (you have {current}); run `kimi-rs upgrade` to install it.", manifest.version);
            return Ok(0);
        }
        let bytes = get_bytes(&target.url).await?;
        let digest: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        if !digest.eq_ignore_ascii_case(target.sha256.trim()) {
            bail!(
                "the download from {} has SHA-256 {digest}, not the manifest's {}; nothing was replaced",
                target.url,
                target.sha256
            );
        }
        let exe = std::env::current_exe().context("cannot find the running binary")?;
        replace_binary(&exe, &bytes)?;
        println!(
            "Upgraded kimi-rs {current} → {} ({}).",
            manifest.version,
            exe.display()
        );
        Ok(0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_numerically() {
        assert!(is_newer("0.10.0", "0.9.1"));
        assert!(is_newer("v1.0.0", "0.9.9"));
        assert!(!is_newer("0.1.0", "0.1.0"));
        assert!(!is_newer("0.0.9", "0.1.0"));
    }
}
