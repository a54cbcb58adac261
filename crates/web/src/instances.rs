//! Running servers, registered under the kimi-rs home (`server/instances/<pid>.json`, as the
//! reference does) so the terminal UI's `/web` can hand a session to one. A file is written
//! after binding and removed when serving ends; one left by a killed server is skipped (and
//! removed) because nothing answers at its address any more.

use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How long a liveness probe may take.
const PROBE: Duration = Duration::from_millis(300);

/// One registered server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Instance {
    pub pid: u32,
    /// Where to connect (the listening address).
    pub addr: SocketAddr,
    /// The page's URL without the token.
    pub page_url: String,
    pub started_at: String,
}

pub fn instances_dir(home: &Path) -> PathBuf {
    home.join("server").join("instances")
}

/// Removes the registration when dropped.
#[derive(Debug)]
pub struct Registration {
    path: PathBuf,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Registers this process's server.
pub fn register(home: &Path, addr: SocketAddr, page_url: &str) -> std::io::Result<Registration> {
    let dir = instances_dir(home);
    std::fs::create_dir_all(&dir)?;
    let pid = std::process::id();
    let instance = Instance {
        pid,
        addr,
        page_url: page_url.to_owned(),
        started_at: chrono::Utc::now().to_rfc3339(),
    };
    let path = dir.join(format!("{pid}.json"));
    let tmp = dir.join(format!(".{pid}.json.tmp"));
    std::fs::write(
        &tmp,
        serde_json::to_vec(&instance).map_err(std::io::Error::other)?,
    )?;
    std::fs::rename(&tmp, &path)?;
    Ok(Registration { path })
}

/// The registered servers that answer, oldest first.
pub fn running(home: &Path) -> Vec<Instance> {
    let Ok(entries) = std::fs::read_dir(instances_dir(home)) else {
        return Vec::new();
    };
    let mut found: Vec<Instance> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter_map(|path| {
            let instance: Instance = std::fs::read(&path)
                .ok()
                .and_then(|bytes| serde_json::from_slice(&bytes).ok())?;
            let mut probe = instance.addr;
            if probe.ip().is_unspecified() {
                probe.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
            }
            if TcpStream::connect_timeout(&probe, PROBE).is_ok() {
                Some(instance)
            } else {
                tracing::info!(
                    "removing the registration of a server that is gone: {}",
                    path.display()
                );
                let _ = std::fs::remove_file(&path);
                None
            }
        })
        .collect();
    found.sort_by(|a, b| a.started_at.cmp(&b.started_at));
    found
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_live_server_is_listed_and_a_dead_one_is_dropped() {
        let home = tempfile::tempdir().unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let reg = register(home.path(), addr, "http://x/").unwrap();
        let live = running(home.path());
        assert_eq!(live.len(), 1);
        assert_eq!(live[0].page_url, "http://x/");
        drop(listener);
        assert_eq!(running(home.path()), Vec::new());
        drop(reg);
        assert_eq!(
            std::fs::read_dir(instances_dir(home.path()))
                .unwrap()
                .count(),
            0
        );
    }
}
