//! `kimi-rs migrate [--from DIR]`: bring the legacy Python kimi-cli home (`~/.kimi/`) into
//! kimi-rs's (surface.md §1.3, §12): its `config.toml` (or older `config.json`) translated
//! and merged, `mcp.json`, skills, the `theme`/`default_editor` settings as `tui.toml`, and
//! its sessions tagged `[imported]` (`legacy_sessions.rs`). Stored logins never come along
//! (the Kimi login is per client: `kimi-rs login`); API keys only with `--with-credentials`.
//! Idempotent: what is already there is skipped and reported.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde_json::{Map, Value, json};

use super::{Report, files, legacy_config, legacy_sessions, merge_config};

/// The file under `$KIMI_RS_HOME` recording migrations.
pub const MARKER: &str = "kimi-cli-migration.json";

/// What to migrate.
#[derive(Debug, Clone)]
pub struct MigrateRequest {
    /// The kimi-cli home (default `~/.kimi`).
    pub from: Option<PathBuf>,
    /// Copy API keys and secret headers of providers, services and MCP servers.
    pub with_credentials: bool,
}

/// The default kimi-cli home: `$HOME/.kimi`.
pub fn default_source() -> Option<PathBuf> {
    std::env::home_dir().map(|home| home.join(".kimi"))
}

/// The legacy config as JSON: `config.toml`, else the older `config.json`. `None` when
/// there is neither.
fn read_config(from: &Path, report: &mut Report) -> Option<(String, Map<String, Value>)> {
    for name in ["config.toml", "config.json"] {
        let path = from.join(name);
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let parsed: Result<Value, String> = if name.ends_with(".toml") {
            toml::from_str::<toml::Table>(&text)
                .map_err(|e| e.to_string())
                .and_then(|t| serde_json::to_value(t).map_err(|e| e.to_string()))
        } else {
            serde_json::from_str(&text).map_err(|e| e.to_string())
        };
        match parsed {
            Ok(Value::Object(map)) => return Some((name.to_owned(), map)),
            Ok(_) => report.failed(name, &format!("{} is not a table", path.display())),
            Err(err) => report.failed(
                name,
                &format!(
                    "{} cannot be read: {err}; fix it and migrate again",
                    path.display()
                ),
            ),
        }
        return None;
    }
    None
}

fn migrate_config(from: &Path, home: &Path, with_credentials: bool, report: &mut Report) {
    let Some((name, legacy)) = read_config(from, report) else {
        return;
    };
    let translated = legacy_config::translate(&legacy);
    for (key, why) in &translated.dropped {
        report.skipped(&format!("{name} {key}"), why);
    }
    if !translated.logins.is_empty() {
        report.note(&format!(
            "kimi-cli was logged in to a Kimi account ({}); logins are not carried over: run \
             `kimi-rs login`",
            translated.logins.join(", ")
        ));
    }
    if !translated.config.is_empty() {
        match legacy_config::to_document(&translated.config) {
            Ok(doc) => merge_config(doc, home, with_credentials, report),
            Err(err) => report.failed(&name, &format!("cannot translate it: {err}")),
        }
    }
    if !translated.tui.is_empty() {
        migrate_tui(&translated.tui, home, report);
    }
}

/// `theme` and `default_editor` become kimi-rs's `tui.toml` unless it has one.
fn migrate_tui(settings: &Map<String, Value>, home: &Path, report: &mut Report) {
    let target = home.join("tui.toml");
    if target.exists() {
        report.skipped(
            "tui.toml (theme, editor)",
            "kimi-rs has its own tui.toml; kept it",
        );
        return;
    }
    let written = toml::to_string(settings)
        .map_err(|e| e.to_string())
        .and_then(|text| {
            kimi_store::fsutil::atomic_write(&target, text.as_bytes()).map_err(|e| e.to_string())
        });
    let keys: Vec<&str> = settings.keys().map(String::as_str).collect();
    match written {
        Ok(()) => report.imported("tui.toml", &keys.join(", ")),
        Err(err) => report.failed("tui.toml", &err),
    }
}

/// Run a migration into the kimi-rs home `home`, returning the report.
pub fn migrate(request: &MigrateRequest, home: &Path) -> anyhow::Result<Report> {
    let Some(from) = request.from.clone().or_else(default_source) else {
        bail!("no kimi-cli home to migrate: pass --from DIR (the folder holding its config.toml)");
    };
    if !from.is_dir() {
        bail!(
            "{} is not a kimi-cli home (no such directory); pass --from with the folder that \
             holds its config.toml, kimi.json and sessions/",
            from.display()
        );
    }
    let from = std::fs::canonicalize(&from).unwrap_or(from);
    if std::fs::canonicalize(home).is_ok_and(|h| h == from) {
        bail!(
            "{} is kimi-rs's own home; point --from at the kimi-cli home",
            from.display()
        );
    }
    std::fs::create_dir_all(home).with_context(|| format!("creating {}", home.display()))?;
    let mut report = Report {
        credentials_command: Some("kimi-rs migrate --with-credentials"),
        ..Report::default()
    };
    let creds = request.with_credentials;
    migrate_config(&from, home, creds, &mut report);
    files::import_mcp(&from, home, creds, &mut report);
    files::import_entries(&from, home, "skills", &mut report);
    if from.join("credentials").is_dir() {
        report.note(
            "kimi-cli's stored logins (credentials/) are not carried over; run `kimi-rs login` \
             to log in to your Kimi account",
        );
    }
    if from.join("user-history").is_dir() {
        report.note("kimi-cli's input history (user-history/) stays behind: kimi-rs keeps none");
    }
    legacy_sessions::migrate_sessions(&from, home, &mut report);
    record(home, &from, &report);
    Ok(report)
}

fn record(home: &Path, from: &Path, report: &Report) {
    let marker = json!({
        "from": from.display().to_string(),
        "at": kimi_store::fsutil::now_ms(),
        "imported": report.imported_count(),
        "skipped": report.skipped_count(),
        "failed": report.failed_count(),
    });
    let mut bytes = serde_json::to_vec_pretty(&marker).unwrap_or_default();
    bytes.push(b'\n');
    if let Err(err) = kimi_store::fsutil::atomic_write(&home.join(MARKER), &bytes) {
        tracing::warn!("cannot record the migration in {MARKER}: {err}");
    }
}

/// `kimi-rs migrate`: migrate and print the report; exit 1 when something failed.
pub fn run(request: &MigrateRequest) -> anyhow::Result<u8> {
    let home = kimi_store::home_from_env()?;
    if let Some(from) = request.from.clone().or_else(default_source) {
        println!(
            "Migrating kimi-cli's {} into {}",
            from.display(),
            home.display()
        );
    }
    let report = migrate(request, &home)?;
    print!("{}", report.render());
    Ok(u8::from(report.failed_count() > 0))
}
