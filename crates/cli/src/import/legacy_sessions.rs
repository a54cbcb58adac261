//! Migrating the sessions of the legacy kimi-cli home: `sessions/<md5 of the working
//! directory>/<uuid>/context.jsonl` (older releases: `sessions/<md5>/<uuid>.jsonl`), with the
//! directories named in `kimi.json`'s `work_dirs`. Each conversation becomes a kimi-rs session
//! under the same id, filed under the same working directory, so `kimi-rs -S <uuid>` there
//! resumes it; its title is tagged `[imported]`. Tool calls kimi-cli never answered (an
//! interrupted turn) get a result saying so, because a provider refuses unanswered calls.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use kimi_protocol::record::{Metadata, Record};
use kimi_store::session::STATE_VERSION;
use kimi_store::{
    AgentEntry, Home, IndexEntry, Journal, JournalOptions, MAIN_AGENT, Session, SessionState,
    SessionStore, save_state, workdir_key,
};
use md5::{Digest, Md5};
use serde_json::{Map, Value, json};

use super::Report;
use super::files::copy_tree;

/// The title tag of a migrated session.
pub const TAG: &str = "[imported]";

/// One legacy session.
#[derive(Debug)]
struct Legacy {
    id: String,
    workdir: String,
    /// The session folder (newer releases) or `None` for a flat `<uuid>.jsonl`.
    dir: Option<PathBuf>,
    context: PathBuf,
}

fn md5_hex(text: &str) -> String {
    Md5::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `kimi.json` `work_dirs`: md5 of the path → (path, is local).
fn workdirs(from: &Path) -> HashMap<String, (String, bool)> {
    let Ok(bytes) = std::fs::read(from.join("kimi.json")) else {
        return HashMap::new();
    };
    let Ok(json) = serde_json::from_slice::<Value>(&bytes) else {
        tracing::warn!("kimi.json of {} is not JSON", from.display());
        return HashMap::new();
    };
    json.get("work_dirs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|wd| {
            let path = wd.get("path")?.as_str()?.to_owned();
            let local = wd.get("kaos").and_then(Value::as_str).unwrap_or("local") == "local";
            Some((md5_hex(&path), (path, local)))
        })
        .collect()
}

fn discover(from: &Path, report: &mut Report) -> Vec<Legacy> {
    let known = workdirs(from);
    let mut found = Vec::new();
    let Ok(buckets) = std::fs::read_dir(from.join("sessions")) else {
        return found;
    };
    let mut buckets: Vec<_> = buckets.flatten().filter(|b| b.path().is_dir()).collect();
    buckets.sort_by_key(std::fs::DirEntry::file_name);
    for bucket in buckets {
        let name = bucket.file_name().to_string_lossy().into_owned();
        let label = format!("sessions/{name}");
        let workdir = match known.get(&name) {
            Some((path, true)) => path.clone(),
            Some((path, false)) => {
                report.skipped(
                    &label,
                    &format!("its sessions ran on a remote machine ({path}); kimi-rs resumes only local ones"),
                );
                continue;
            }
            None => {
                report.failed(
                    &label,
                    "kimi.json names no working directory for it, so kimi-rs cannot tell where to resume its sessions",
                );
                continue;
            }
        };
        let Ok(entries) = std::fs::read_dir(bucket.path()) else {
            report.failed(&label, "cannot list it");
            continue;
        };
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(std::fs::DirEntry::file_name);
        for entry in entries {
            let path = entry.path();
            let file = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() && path.join("context.jsonl").is_file() {
                found.push(Legacy {
                    id: file,
                    workdir: workdir.clone(),
                    context: path.join("context.jsonl"),
                    dir: Some(path),
                });
            } else if let Some(id) = file.strip_suffix(".jsonl").filter(|_| path.is_file()) {
                found.push(Legacy {
                    id: id.to_owned(),
                    workdir: workdir.clone(),
                    context: path.clone(),
                    dir: None,
                });
            }
        }
    }
    found
}

/// Migrate every legacy session into kimi-rs's home.
pub fn migrate_sessions(from: &Path, home: &Path, report: &mut Report) {
    let store = SessionStore::new(Home::new(home));
    for legacy in discover(from, report) {
        let label = format!("session {}", legacy.id);
        if let Some(key) = store.locate(&legacy.id) {
            report.skipped(
                &label,
                &format!("already in kimi-rs (sessions/{key}/{})", legacy.id),
            );
            continue;
        }
        match migrate_one(&legacy, &store) {
            Ok(Some(summary)) => report.imported(&label, &summary),
            Ok(None) => report.skipped(&label, "it holds no conversation"),
            Err(err) => report.failed(&label, &format!("{err:#}")),
        }
    }
}

/// A legacy content value (string or parts) as kimi-rs content parts.
fn content(raw: Option<&Value>) -> Vec<Value> {
    match raw {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(text)) => vec![json!({"type": "text", "text": text})],
        Some(Value::Array(parts)) => parts.iter().filter_map(part).collect(),
        Some(other) => vec![json!({"type": "text", "text": other.to_string()})],
    }
}

fn part(raw: &Value) -> Option<Value> {
    let kind = raw.get("type")?.as_str()?;
    Some(match kind {
        "text" => json!({"type": "text", "text": raw.get("text")?.as_str()?}),
        "think" => {
            let mut think = json!({"type": "think", "think": raw.get("think")?.as_str()?});
            if let Some(sig) = raw.get("encrypted").and_then(Value::as_str) {
                think["encrypted"] = Value::from(sig);
            }
            think
        }
        "image_url" | "audio_url" | "video_url" => {
            let media = raw.get(kind)?;
            let camel = match kind {
                "image_url" => "imageUrl",
                "audio_url" => "audioUrl",
                _ => "videoUrl",
            };
            json!({"type": kind, camel: media})
        }
        _ => return None,
    })
}

fn tool_call(raw: &Value) -> Option<Value> {
    let function = raw.get("function")?;
    Some(json!({
        "type": "function",
        "id": raw.get("id")?.as_str()?,
        "name": function.get("name")?.as_str()?,
        "arguments": function.get("arguments").and_then(Value::as_str).unwrap_or("{}"),
    }))
}

/// The journal built from a legacy `context.jsonl`.
#[derive(Debug, Default)]
struct Built {
    records: Vec<Value>,
    prompts: Vec<String>,
    unreadable: usize,
    closed_calls: usize,
}

impl Built {
    fn push(&mut self, value: Value, time: u64) -> anyhow::Result<()> {
        // Parsing through kimi-protocol proves kimi-rs reads back what is written.
        let mut record = Record::from_value(value).context("building a journal record")?;
        record.time = Some(time);
        self.records.push(record.to_value());
        Ok(())
    }

    /// Answer the calls of the turn that got no result, then end the turn.
    fn end_turn(&mut self, turn: u64, pending: &mut Vec<String>, time: u64) -> anyhow::Result<()> {
        for id in pending.drain(..) {
            self.closed_calls += 1;
            self.push(
                json!({"type": "context.append_message", "message": {
                    "role": "tool", "toolCallId": id,
                    "content": [{"type": "text", "text": "kimi-cli recorded no result for this call (the turn was interrupted)."}]
                }}),
                time,
            )?;
        }
        self.push(
            json!({"type": "turn.ended", "turnId": turn, "reason": "completed"}),
            time,
        )
    }
}

fn build(context: &str, time: u64) -> anyhow::Result<Built> {
    let mut out = Built::default();
    let mut turn: Option<u64> = None;
    let mut pending: Vec<String> = Vec::new();
    for line in context.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(row) = serde_json::from_str::<Value>(line) else {
            out.unreadable += 1;
            continue;
        };
        match row.get("role").and_then(Value::as_str) {
            Some("user") => {
                let next = turn.map_or(0, |t| t + 1);
                if let Some(t) = turn {
                    out.end_turn(t, &mut pending, time)?;
                }
                turn = Some(next);
                let parts = content(row.get("content"));
                let text = parts
                    .iter()
                    .find_map(|p| p.get("text").and_then(Value::as_str))
                    .unwrap_or_default()
                    .to_owned();
                out.prompts.push(text);
                let prompt_id = format!("migrated-{next}");
                out.push(
                    json!({"type": "turn.prompt", "input": parts, "origin": {"kind": "user"},
                           "promptId": prompt_id, "turnId": next}),
                    time,
                )?;
                out.push(
                    json!({"type": "context.append_message", "message": {
                        "role": "user", "content": parts, "id": prompt_id,
                        "origin": {"kind": "user"}}}),
                    time,
                )?;
            }
            Some("assistant") => {
                let calls: Vec<Value> = row
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(tool_call)
                    .collect();
                pending.extend(
                    calls
                        .iter()
                        .filter_map(|c| c["id"].as_str().map(str::to_owned)),
                );
                out.push(
                    json!({"type": "context.append_message", "message": {
                        "role": "assistant", "content": content(row.get("content")),
                        "toolCalls": calls}}),
                    time,
                )?;
            }
            Some("tool") => {
                let Some(id) = row.get("tool_call_id").and_then(Value::as_str) else {
                    out.unreadable += 1;
                    continue;
                };
                if !pending.iter().any(|p| p == id) {
                    // A result without its call would be refused by every provider.
                    out.unreadable += 1;
                    continue;
                }
                pending.retain(|p| p != id);
                out.push(
                    json!({"type": "context.append_message", "message": {
                        "role": "tool", "toolCallId": id, "content": content(row.get("content"))}}),
                    time,
                )?;
            }
            // kimi-cli's own markers: its system prompt, checkpoints, token counts.
            Some(_) => {}
            None => out.unreadable += 1,
        }
    }
    if let Some(t) = turn {
        out.end_turn(t, &mut pending, time)?;
    }
    Ok(out)
}

fn mtime_ms(path: &Path) -> Option<u64> {
    let modified = std::fs::metadata(path).ok()?.modified().ok()?;
    let since = modified.duration_since(std::time::UNIX_EPOCH).ok()?;
    u64::try_from(since.as_millis()).ok()
}

fn migrate_one(legacy: &Legacy, store: &SessionStore) -> anyhow::Result<Option<String>> {
    let text = std::fs::read_to_string(&legacy.context)
        .with_context(|| format!("reading {}", legacy.context.display()))?;
    let old_state: Value = legacy
        .dir
        .as_ref()
        .and_then(|d| std::fs::read(d.join("state.json")).ok())
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null);
    let created_at = old_state
        .get("wire_mtime")
        .and_then(Value::as_f64)
        .filter(|s| *s > 0.0)
        .map(|s| (s * 1000.0) as u64)
        .or_else(|| mtime_ms(&legacy.context))
        .unwrap_or_else(kimi_store::fsutil::now_ms);
    let built = build(&text, created_at)?;
    if built.prompts.is_empty() {
        if built.unreadable > 0 {
            bail!(
                "{} has {} unreadable line(s) and no conversation",
                legacy.context.display(),
                built.unreadable
            );
        }
        return Ok(None);
    }
    let key = workdir_key(Path::new(&legacy.workdir));
    let dir = store.home().session_dir(&key, &legacy.id);
    let staging = store
        .home()
        .root()
        .join(".staging")
        .join(format!("migrate-{}", legacy.id));
    let state = super::sessions::build_in_staging(&staging, &dir, "migration", |staging| {
        write_session(legacy, &built, &old_state, created_at, staging)
    })?;
    let journal = kimi_store::home::journal_path(&dir, MAIN_AGENT);
    Journal::open_replay(&journal, JournalOptions::default(), MAIN_AGENT)
        .with_context(|| format!("reading back {}", journal.display()))?;
    let session = Session {
        dir,
        workdir_key: key,
        state,
    };
    store.index().append(&IndexEntry::from_session(&session))?;
    let mut summary = format!("{}: {} prompt(s)", legacy.workdir, built.prompts.len());
    if built.closed_calls > 0 {
        summary.push_str(&format!(
            ", {} unanswered tool call(s) marked interrupted",
            built.closed_calls
        ));
    }
    if built.unreadable > 0 {
        summary.push_str(&format!(
            ", {} unreadable line(s) left out",
            built.unreadable
        ));
    }
    Ok(Some(summary))
}

fn write_session(
    legacy: &Legacy,
    built: &Built,
    old_state: &Value,
    created_at: u64,
    staging: &Path,
) -> anyhow::Result<SessionState> {
    std::fs::create_dir_all(staging).with_context(|| format!("creating {}", staging.display()))?;
    // The original files, kept as they were.
    match &legacy.dir {
        Some(dir) => copy_tree(dir, &staging.join("kimi-cli"))?,
        None => copy_tree(
            &legacy.context,
            &staging.join("kimi-cli").join("context.jsonl"),
        )?,
    };
    let metadata = Record {
        payload: kimi_protocol::RecordPayload::Metadata(Metadata::current(created_at)),
        time: None,
    };
    let mut bytes = Vec::new();
    for value in std::iter::once(metadata.to_value()).chain(built.records.iter().cloned()) {
        bytes.extend(serde_json::to_vec(&value)?);
        bytes.push(b'\n');
    }
    let journal = kimi_store::home::journal_path(staging, MAIN_AGENT);
    if let Some(parent) = journal.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    kimi_store::fsutil::atomic_write(&journal, &bytes)?;
    let first_line = built
        .prompts
        .iter()
        .find_map(|p| p.lines().find(|l| !l.trim().is_empty()))
        .map(|l| l.trim().chars().take(60).collect::<String>())
        .unwrap_or_default();
    let base = old_state
        .get("custom_title")
        .or_else(|| old_state.get("title"))
        .and_then(Value::as_str)
        .filter(|t| !t.trim().is_empty())
        .map_or(first_line, str::to_owned);
    let mut extra = Map::new();
    extra.insert(
        "importedFrom".to_owned(),
        json!({
            "product": "kimi-cli",
            "source": legacy.dir.as_ref().unwrap_or(&legacy.context).display().to_string(),
            "importedAt": kimi_store::fsutil::now_ms(),
        }),
    );
    let mut agents = std::collections::BTreeMap::new();
    agents.insert(MAIN_AGENT.to_owned(), AgentEntry::main());
    let state = SessionState {
        id: legacy.id.clone(),
        version: STATE_VERSION,
        title: Some(format!("{TAG} {base}")),
        title_kind: Some("custom".to_owned()),
        last_prompt: built.prompts.last().map(|p| p.chars().take(200).collect()),
        created_at,
        updated_at: created_at,
        archived: old_state.get("archived") == Some(&Value::Bool(true)),
        archived_at: None,
        cwd: Some(legacy.workdir.clone()),
        forked_from: None,
        agents,
        custom: None,
        last_turn_reason: Some("completed".to_owned()),
        extra,
    };
    save_state(staging, &state)?;
    Ok(state)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_context_becomes_turns_and_unanswered_calls_are_closed() {
        let context = r#"{"role":"_system_prompt","content":"You are Kimi CLI"}
{"role":"_checkpoint","id":0}
{"role":"user","content":"list files"}
{"role":"assistant","content":[{"type":"think","think":"hm"},{"type":"text","text":"ok"}],"tool_calls":[{"type":"function","id":"c1","function":{"name":"Shell","arguments":"{\"command\":\"ls\"}"}}]}
{"role":"tool","content":[{"type":"text","text":"a.txt"}],"tool_call_id":"c1"}
{"role":"_usage","token_count":42}
{"role":"assistant","content":"done"}
{"role":"user","content":[{"type":"text","text":"again"}]}
{"role":"assistant","content":"","tool_calls":[{"type":"function","id":"c2","function":{"name":"Shell","arguments":"{}"}}]}
broken
"#;
        let built = build(context, 1000).unwrap();
        let types: Vec<String> = built
            .records
            .iter()
            .map(|r| r["type"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            types,
            [
                "turn.prompt",
                "context.append_message",
                "context.append_message",
                "context.append_message",
                "context.append_message",
                "turn.ended",
                "turn.prompt",
                "context.append_message",
                "context.append_message",
                "context.append_message",
                "turn.ended"
            ]
        );
        assert_eq!(built.prompts, ["list files", "again"]);
        assert_eq!(built.closed_calls, 1);
        assert_eq!(built.unreadable, 1);
        assert_eq!(built.records[2]["message"]["toolCalls"][0]["name"], "Shell");
        assert_eq!(built.records[3]["message"]["toolCallId"], "c1");
        assert_eq!(built.records[9]["message"]["toolCallId"], "c2");
    }

    #[test]
    fn md5_matches_kimi_cli_bucket_names() {
        assert_eq!(md5_hex("/tmp"), "d42b9c57d24cf5db3bd8d332dc35437f");
    }
}
