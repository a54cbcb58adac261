//! `kimi-rs sessions`: list stored sessions (this directory's or, with `--all`, every
//! directory's; `--json` for scripts), `sessions prune` by age and total size (sessions open in
//! a running kimi-rs are kept), and `sessions recover <id>`: rebuild a session's `state.json`
//! and index entry from its journal, so a session whose metadata was deleted or damaged can be
//! resumed again.

use anyhow::{Context, bail};
use kimi_store::{Home, SessionStore, home_from_env};

/// Find the session's directory by scanning `$KIMI_RS_HOME/sessions/*/<id>/`, rebuild what is
/// missing and say what was done.
pub fn recover(session_id: &str) -> anyhow::Result<()> {
    let home = home_from_env()?;
    let store = SessionStore::new(Home::new(&home));
    let Some(key) = store.locate(session_id) else {
        bail!(
            "no directory for session {session_id} under {}; check the id (the directory names \
             there are session ids) or start a new session",
            home.join("sessions").display()
        );
    };
    let (session, kept, rebuilt) = store
        .recover(&key, session_id)
        .with_context(|| format!("recovering session {session_id}"))?;
    let state = session.dir.join("state.json");
    if rebuilt {
        tracing::warn!(session_id, "state.json rebuilt from the journal");
        println!("Rebuilt {} from its journal:", state.display());
        println!(
            "  agents: {}",
            session
                .state
                .agents
                .keys()
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        );
        if let Some(title) = &session.state.title {
            println!("  title: {title}");
        }
        if let Some(kept) = kept {
            println!("  the unreadable file was kept in {}", kept.display());
        }
    } else {
        println!("{} is readable; it was kept as it is.", state.display());
    }
    println!("Recorded session {session_id} in the session index.");
    println!("Resume it with: kimi-rs -S {session_id}");
    Ok(())
}

/// One stored session as listed.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Listed {
    pub id: String,
    pub cwd: Option<String>,
    pub title: Option<String>,
    pub created_at: u64,
    pub updated_at: u64,
    pub archived: bool,
    pub workdir_key: String,
    /// Bytes on disk (every file of the session's directory).
    pub size_bytes: u64,
}

fn dir_size(dir: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.metadata() {
            Ok(meta) if meta.is_dir() => dir_size(&entry.path()),
            Ok(meta) => meta.len(),
            Err(_) => 0,
        })
        .sum()
}

/// Every session from a fresh scan of `sessions/*/*/state.json` (the index is rewritten from
/// it), newest first.
fn scan_all(home: &Home) -> anyhow::Result<Vec<Listed>> {
    let mut entries = kimi_store::SessionIndex::new(home.clone())
        .rebuild()
        .context("scanning the sessions")?;
    entries.sort_by(|a, b| b.updated_at.cmp(&a.updated_at).then(a.id.cmp(&b.id)));
    Ok(entries
        .into_iter()
        .map(|e| Listed {
            size_bytes: dir_size(&home.session_dir(&e.workdir_key, &e.id)),
            id: e.id,
            cwd: e.cwd,
            title: e.title,
            created_at: e.created_at,
            updated_at: e.updated_at,
            archived: e.archived,
            workdir_key: e.workdir_key,
        })
        .collect())
}

fn local_time(ms: u64) -> String {
    i64::try_from(ms)
        .ok()
        .and_then(chrono::DateTime::from_timestamp_millis)
        .map(|t| {
            t.with_timezone(&chrono::Local)
                .format("%Y-%m-%d %H:%M")
                .to_string()
        })
        .unwrap_or_else(|| "?".to_owned())
}

/// `kimi-rs sessions [--all] [--json]`: this directory's sessions (or every directory's),
/// newest first.
pub fn list(all: bool, json: bool) -> anyhow::Result<()> {
    let home = Home::new(home_from_env()?);
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let key = kimi_store::workdir_key(&cwd);
    let mut sessions = scan_all(&home)?;
    if !all {
        sessions.retain(|s| s.workdir_key == key);
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&sessions)?);
        return Ok(());
    }
    if sessions.is_empty() {
        if all {
            println!("No sessions under {}.", home.sessions_dir().display());
        } else {
            println!(
                "No sessions in {}; `kimi-rs sessions --all` lists every directory's.",
                cwd.display()
            );
        }
        return Ok(());
    }
    for s in &sessions {
        let mut line = format!("{}  {}", s.id, local_time(s.updated_at));
        if all {
            line.push_str(&format!("  {}", s.cwd.as_deref().unwrap_or("?")));
        }
        line.push_str(&format!(
            "  {}",
            s.title.as_deref().unwrap_or("(no prompt yet)")
        ));
        if s.archived {
            line.push_str("  (archived)");
        }
        println!("{line}");
    }
    println!(
        "{} session(s). Resume one with `kimi-rs -S <id>` in its directory.",
        sessions.len()
    );
    Ok(())
}

/// `30d`, `12h`, `90m`, `2w`, `45s` (a bare number is days).
pub fn parse_age(text: &str) -> Option<std::time::Duration> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: u64 = number.parse().ok()?;
    let secs = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "d" | "day" | "days" => 86_400,
        "w" | "week" | "weeks" => 7 * 86_400,
        "h" | "hour" | "hours" => 3_600,
        "m" | "min" | "minutes" => 60,
        "s" | "sec" | "seconds" => 1,
        _ => return None,
    };
    Some(std::time::Duration::from_secs(n.checked_mul(secs)?))
}

/// `500M`, `2G`, `100K`, `1.5G`, bytes without a unit (binary multiples).
pub fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: f64 = number.parse().ok()?;
    let factor: u64 = match unit.trim().to_ascii_lowercase().trim_end_matches("ib") {
        "" | "b" => 1,
        "k" | "kb" => 1 << 10,
        "m" | "mb" => 1 << 20,
        "g" | "gb" => 1 << 30,
        "t" | "tb" => 1 << 40,
        _ => return None,
    };
    (n.is_finite() && n >= 0.0).then_some((n * factor as f64) as u64)
}

/// What `sessions prune` removes.
#[derive(Debug, Clone, Default)]
pub struct PruneRequest {
    pub older_than: Option<std::time::Duration>,
    pub max_total_size: Option<u64>,
    pub dry_run: bool,
}

/// Sessions to remove: those not updated within `older_than`, then the oldest of the rest
/// until the total fits `max_total_size`. Sessions in use are never chosen (`in_use`).
pub fn choose_prunable(
    sessions: &[Listed],
    request: &PruneRequest,
    now_ms: u64,
    in_use: &dyn Fn(&Listed) -> bool,
) -> Vec<usize> {
    let mut chosen = Vec::new();
    if let Some(age) = request.older_than {
        let cutoff = now_ms.saturating_sub(u64::try_from(age.as_millis()).unwrap_or(u64::MAX));
        chosen.extend(
            sessions
                .iter()
                .enumerate()
                .filter(|(_, s)| s.updated_at < cutoff && !in_use(s))
                .map(|(i, _)| i),
        );
    }
    if let Some(max) = request.max_total_size {
        let mut total: u64 = sessions
            .iter()
            .enumerate()
            .filter(|(i, _)| !chosen.contains(i))
            .map(|(_, s)| s.size_bytes)
            .sum();
        let mut oldest_first: Vec<usize> = (0..sessions.len()).collect();
        oldest_first.sort_by_key(|&i| sessions[i].updated_at);
        for i in oldest_first {
            if total <= max {
                break;
            }
            if chosen.contains(&i) || in_use(&sessions[i]) {
                continue;
            }
            total -= sessions[i].size_bytes;
            chosen.push(i);
        }
    }
    chosen
}

/// `kimi-rs sessions prune`: remove old sessions (or only list them with `--dry-run`).
pub fn prune(request: &PruneRequest) -> anyhow::Result<()> {
    if request.older_than.is_none() && request.max_total_size.is_none() {
        bail!(
            "say what to prune: --older-than AGE (e.g. 30d) and/or --max-total-size SIZE (e.g. 2G)"
        );
    }
    let home = Home::new(home_from_env()?);
    let sessions = scan_all(&home)?;
    let in_use = |s: &Listed| {
        kimi_store::Journal::is_in_use(&kimi_store::home::journal_path(
            &home.session_dir(&s.workdir_key, &s.id),
            kimi_store::MAIN_AGENT,
        ))
    };
    let busy: Vec<&Listed> = sessions.iter().filter(|s| in_use(s)).collect();
    let chosen = choose_prunable(&sessions, request, kimi_store::fsutil::now_ms(), &in_use);
    let verb = if request.dry_run {
        "would remove"
    } else {
        "removed"
    };
    let mut freed = 0;
    let mut failed = 0;
    for &i in &chosen {
        let s = &sessions[i];
        let dir = home.session_dir(&s.workdir_key, &s.id);
        if !request.dry_run
            && let Err(err) = std::fs::remove_dir_all(&dir)
        {
            eprintln!("kimi-rs: cannot remove {}: {err}", dir.display());
            failed += 1;
            continue;
        }
        freed += s.size_bytes;
        println!(
            "{verb} {}  {}  {}  {} KiB",
            s.id,
            local_time(s.updated_at),
            s.cwd.as_deref().unwrap_or("?"),
            s.size_bytes.div_ceil(1024)
        );
    }
    for s in busy {
        println!("kept {} (in use by a running kimi-rs)", s.id);
    }
    if !request.dry_run && !chosen.is_empty() {
        kimi_store::SessionIndex::new(home.clone())
            .rebuild()
            .context("rewriting the session index")?;
    }
    println!(
        "{} {} session(s), {} KiB; {} kept.",
        verb,
        chosen.len() - failed,
        freed.div_ceil(1024),
        sessions.len() - (chosen.len() - failed)
    );
    if failed > 0 {
        bail!("{failed} session(s) could not be removed");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(id: &str, updated_at: u64, size_bytes: u64) -> Listed {
        Listed {
            id: id.to_owned(),
            cwd: None,
            title: None,
            created_at: 0,
            updated_at,
            archived: false,
            workdir_key: "k".to_owned(),
            size_bytes,
        }
    }

    #[test]
    fn ages_and_sizes_parse() {
        assert_eq!(parse_age("30d").map(|d| d.as_secs()), Some(30 * 86_400));
        assert_eq!(parse_age("12h").map(|d| d.as_secs()), Some(12 * 3_600));
        assert_eq!(parse_age("2w").map(|d| d.as_secs()), Some(14 * 86_400));
        assert_eq!(parse_age("7").map(|d| d.as_secs()), Some(7 * 86_400));
        assert_eq!(parse_age("soon"), None);
        assert_eq!(parse_size("100K"), Some(100 * 1024));
        assert_eq!(parse_size("1.5G"), Some(3 << 29));
        assert_eq!(parse_size("2MiB"), Some(2 << 20));
        assert_eq!(parse_size("42"), Some(42));
        assert_eq!(parse_size("lots"), None);
    }

    #[test]
    fn prune_takes_the_old_then_the_oldest_until_it_fits_and_spares_sessions_in_use() {
        let day = 86_400_000;
        let now = 100 * day;
        let sessions = [
            listed("new", now, 400),
            listed("busy-old", now - 60 * day, 400),
            listed("old", now - 40 * day, 400),
            listed("middle", now - 5 * day, 400),
            listed("recent", now - day, 400),
        ];
        let busy = |s: &Listed| s.id == "busy-old";
        let by_age = PruneRequest {
            older_than: Some(std::time::Duration::from_secs(30 * 86_400)),
            ..PruneRequest::default()
        };
        let ids = |chosen: Vec<usize>| -> Vec<&str> {
            chosen.iter().map(|&i| sessions[i].id.as_str()).collect()
        };
        assert_eq!(
            ids(choose_prunable(&sessions, &by_age, now, &busy)),
            ["old"]
        );
        let by_size = PruneRequest {
            max_total_size: Some(900),
            ..PruneRequest::default()
        };
        // 2000 bytes: the oldest not in use go first until 800 are left.
        assert_eq!(
            ids(choose_prunable(&sessions, &by_size, now, &busy)),
            ["old", "middle", "recent"]
        );
    }
}
