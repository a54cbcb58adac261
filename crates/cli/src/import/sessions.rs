//! Importing Kimi Code sessions: each `sessions/<wd>/<id>/` becomes a kimi-rs session under
//! the same id, filed under kimi-rs's key for the same working directory, so `kimi-rs -S <id>`
//! in that directory resumes it. Journals are translated (`journal.rs`); the original files
//! are kept in the session's `kimi-code/` folder. A session is assembled in `.staging/` and
//! renamed into place, so an interrupted import leaves nothing that looks imported.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use kimi_store::session::STATE_VERSION;
use kimi_store::{
    AgentEntry, Home, IndexEntry, Journal, JournalOptions, MAIN_AGENT, Session, SessionState,
    SessionStore, save_state, workdir_key,
};
use serde_json::{Map, Value, json};

use super::Report;
use super::files::copy_tree;
use super::journal::translate;

/// A session found in the Kimi Code home.
#[derive(Debug)]
struct Found {
    id: String,
    dir: PathBuf,
    /// `state.json` as written (`Null` when missing or unreadable).
    state: Value,
    cwd: Option<String>,
}

/// `session_index.jsonl`: session id → working directory.
fn index_workdirs(from: &Path) -> HashMap<String, String> {
    let text = std::fs::read_to_string(from.join("session_index.jsonl")).unwrap_or_default();
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|v| {
            Some((
                v.get("sessionId")?.as_str()?.to_owned(),
                v.get("workDir")?.as_str()?.to_owned(),
            ))
        })
        .collect()
}

fn discover(from: &Path) -> Vec<Found> {
    let workdirs = index_workdirs(from);
    let mut found = Vec::new();
    let Ok(keys) = std::fs::read_dir(from.join("sessions")) else {
        return found;
    };
    for key in keys.flatten() {
        if key.file_name().to_string_lossy().starts_with('.') || !key.path().is_dir() {
            continue;
        }
        let Ok(ids) = std::fs::read_dir(key.path()) else {
            continue;
        };
        for entry in ids.flatten() {
            let dir = entry.path();
            let id = entry.file_name().to_string_lossy().into_owned();
            if id.starts_with('.') || !dir.join("agents").is_dir() {
                continue;
            }
            let state: Value = std::fs::read(dir.join("state.json"))
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok())
                .unwrap_or(Value::Null);
            let cwd = state
                .get("cwd")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .or_else(|| workdirs.get(&id).cloned());
            found.push(Found {
                id,
                dir,
                state,
                cwd,
            });
        }
    }
    found.sort_by(|a, b| a.id.cmp(&b.id));
    found
}

fn number(value: Option<&Value>) -> Option<u64> {
    let value = value?;
    value
        .as_u64()
        .or_else(|| value.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
}

fn text(value: Option<&Value>) -> Option<String> {
    value
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
        .map(str::to_owned)
}

/// Import every session of the Kimi Code home at `from` into kimi-rs's home.
pub fn import_sessions(from: &Path, home: &Path, report: &mut Report) {
    let store = SessionStore::new(Home::new(home));
    for found in discover(from) {
        let label = format!("session {}", found.id);
        if let Some(key) = store.locate(&found.id) {
            report.skipped(
                &label,
                &format!("already in kimi-rs (sessions/{key}/{})", found.id),
            );
            continue;
        }
        match import_one(&found, &store) {
            Ok(summary) => report.imported(&label, &summary),
            Err(err) => report.failed(&label, &format!("{err:#}")),
        }
    }
}

fn import_one(found: &Found, store: &SessionStore) -> anyhow::Result<String> {
    let Some(cwd) = &found.cwd else {
        bail!(
            "its working directory is recorded neither in its state.json nor in \
             session_index.jsonl, so kimi-rs cannot tell where to resume it"
        );
    };
    let key = workdir_key(Path::new(cwd));
    let dir = store.home().session_dir(&key, &found.id);
    // Outside `sessions/`, so a crash mid-import leaves nothing a session scan would list.
    let staging = store
        .home()
        .root()
        .join(".staging")
        .join(format!("import-{}", found.id));
    let (mut state, summary) = build_in_staging(&staging, &dir, "import", |staging| {
        assemble(found, cwd, staging)
    })?;
    // Opening each journal the way a resume does proves kimi-rs can read what was written.
    for agent in state.agents.keys() {
        let path = kimi_store::home::journal_path(&dir, agent);
        let (_journal, read) = Journal::open_replay(&path, JournalOptions::default(), agent)
            .with_context(|| format!("reading back {}", path.display()))?;
        if !read.input.skipped.is_empty() {
            tracing::warn!(
                session = %found.id,
                agent,
                skipped = read.input.skipped.len(),
                "imported journal has lines kimi-rs skips"
            );
        }
    }
    state.updated_at = state.updated_at.max(state.created_at);
    let session = Session {
        dir,
        workdir_key: key,
        state,
    };
    store.index().append(&IndexEntry::from_session(&session))?;
    Ok(summary)
}

/// Write the translated session into `staging`; returns its metadata and a summary line.
fn assemble(found: &Found, cwd: &str, staging: &Path) -> anyhow::Result<(SessionState, String)> {
    std::fs::create_dir_all(staging).with_context(|| format!("creating {}", staging.display()))?;
    // The original files, kept as they were.
    copy_tree(&found.dir, &staging.join("kimi-code"))?;
    let source_agents = found.state.get("agents").and_then(Value::as_object);
    let mut agents = BTreeMap::new();
    let mut prompts = Vec::new();
    let mut kept = 0;
    let mut dropped = 0;
    let mut unreadable = Vec::new();
    let agents_dir = found.dir.join("agents");
    let mut agent_ids: Vec<String> = std::fs::read_dir(&agents_dir)
        .with_context(|| format!("listing {}", agents_dir.display()))?
        .flatten()
        .filter(|e| e.path().join("wire.jsonl").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    agent_ids.sort();
    if !agent_ids.iter().any(|a| a == MAIN_AGENT) {
        bail!("it has no main journal (agents/main/wire.jsonl), so there is nothing to resume");
    }
    for agent in &agent_ids {
        let source = agents_dir.join(agent);
        let bytes = std::fs::read(source.join("wire.jsonl"))
            .with_context(|| format!("reading {}", source.join("wire.jsonl").display()))?;
        let translated = translate(&bytes);
        let target = staging.join("agents").join(agent);
        // Plans and other files of the agent come along as they are.
        for entry in std::fs::read_dir(&source)
            .with_context(|| format!("listing {}", source.display()))?
            .flatten()
        {
            if entry.file_name() != "wire.jsonl" {
                copy_tree(&entry.path(), &target.join(entry.file_name()))?;
            }
        }
        std::fs::create_dir_all(&target)
            .with_context(|| format!("creating {}", target.display()))?;
        kimi_store::fsutil::atomic_write(&target.join("wire.jsonl"), &translated.bytes)?;
        kept += translated.kept;
        dropped += translated.dropped.values().sum::<usize>();
        unreadable.extend(
            translated
                .unreadable
                .iter()
                .map(|line| format!("agents/{agent}/wire.jsonl {line}")),
        );
        if agent == MAIN_AGENT {
            prompts = translated.prompts;
        }
        let info = source_agents.and_then(|a| a.get(agent));
        let kind = text(info.and_then(|i| i.get("type")))
            .unwrap_or_else(|| if agent == MAIN_AGENT { "main" } else { "sub" }.to_owned());
        agents.insert(
            agent.clone(),
            AgentEntry {
                kind,
                parent_agent_id: text(info.and_then(|i| i.get("parentAgentId"))),
                ..AgentEntry::main()
            },
        );
    }
    for line in &unreadable {
        tracing::warn!(session = %found.id, "not imported: {line}");
    }
    let st = &found.state;
    let first_line = prompts
        .first()
        .and_then(|p| p.lines().find(|l| !l.trim().is_empty()))
        .map(|l| l.trim().chars().take(60).collect::<String>());
    let (title, title_kind) = match text(st.get("title")) {
        Some(title) if st.get("isCustomTitle") == Some(&Value::Bool(true)) => {
            (Some(title), Some("custom"))
        }
        Some(title) => (Some(title), Some("generated")),
        None => (
            first_line.clone(),
            first_line.as_ref().map(|_| "replaceable"),
        ),
    };
    let now = kimi_store::fsutil::now_ms();
    let created_at = number(st.get("createdAt")).unwrap_or(now);
    let mut extra = Map::new();
    extra.insert(
        "importedFrom".to_owned(),
        json!({
            "product": "kimi-code",
            "sessionDir": found.dir.display().to_string(),
            "importedAt": now,
        }),
    );
    let state = SessionState {
        id: found.id.clone(),
        version: STATE_VERSION,
        title,
        title_kind: title_kind.map(str::to_owned),
        last_prompt: text(st.get("lastPrompt"))
            .or_else(|| prompts.last().cloned())
            .map(|p| p.chars().take(200).collect()),
        created_at,
        updated_at: number(st.get("updatedAt")).unwrap_or(created_at),
        archived: st.get("archived") == Some(&Value::Bool(true)),
        archived_at: number(st.get("archivedAt")),
        cwd: Some(cwd.to_owned()),
        forked_from: None,
        agents,
        custom: None,
        last_turn_reason: text(st.get("lastTurnReason")),
        extra,
    };
    save_state(staging, &state)?;
    let mut summary = format!(
        "{cwd}: {} prompt(s), {} agent(s), {kept} records ({dropped} Kimi Code-only records left in kimi-code/)",
        prompts.len(),
        state.agents.len(),
    );
    if !unreadable.is_empty() {
        summary.push_str(&format!(
            "; {} unreadable line(s) left out: {}",
            unreadable.len(),
            unreadable.join("; ")
        ));
    }
    Ok((state, summary))
}

/// Builds a session folder in `staging` (cleared first: a crash may have left one) and moves it
/// to `dir` in one rename, so a session scan never sees half a session; a failed build leaves
/// nothing behind. `what` names the operation in errors ("import", "migration").
pub(crate) fn build_in_staging<T>(
    staging: &Path,
    dir: &Path,
    what: &str,
    build: impl FnOnce(&Path) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    if staging.exists() {
        std::fs::remove_dir_all(staging)
            .with_context(|| format!("removing the unfinished {what} {}", staging.display()))?;
    }
    let built = match build(staging) {
        Ok(built) => built,
        Err(err) => {
            let _ = std::fs::remove_dir_all(staging);
            return Err(err);
        }
    };
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    std::fs::rename(staging, dir)
        .with_context(|| format!("moving {} to {}", staging.display(), dir.display()))?;
    Ok(built)
}
