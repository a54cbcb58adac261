//! `kimi-rs import [--from DIR]`: bring a Kimi Code home (`$KIMI_CODE_HOME`, default
//! `~/.kimi-code`) into kimi-rs's: config.toml (merged, credentials left out unless
//! `--with-credentials`), mcp.json, skills, agents, themes, AGENTS.md/SYSTEM.md/tui.toml, plugin
//! records and sessions (same ids, translated journals). Idempotent: what is already there is
//! skipped and reported. Also the one-time offer the interactive start makes (`offer.rs`).

mod config_merge;
mod files;
mod journal;
pub mod legacy;
mod legacy_config;
mod legacy_sessions;
pub mod offer;
mod sessions;

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde_json::json;

/// The file under `$KIMI_RS_HOME` recording imports and the answer to the start-up offer.
pub const MARKER: &str = "kimi-code-import.json";

/// What to import.
#[derive(Debug, Clone)]
pub struct ImportRequest {
    /// The Kimi Code home (default: `$KIMI_CODE_HOME`, else `~/.kimi-code`).
    pub from: Option<PathBuf>,
    /// Copy API keys, OAuth settings, secret env/header entries and `credentials/`.
    pub with_credentials: bool,
}

/// The default Kimi Code home: `$KIMI_CODE_HOME`, else `$HOME/.kimi-code`.
pub fn default_source() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("KIMI_CODE_HOME").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    std::env::home_dir().map(|home| home.join(".kimi-code"))
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Line {
    Imported(String, String),
    Skipped(String, String),
    Failed(String, String),
    Note(String),
}

/// What an import did, printed at the end.
#[derive(Debug, Default)]
pub struct Report {
    lines: Vec<Line>,
    credentials: Vec<String>,
    /// The command that copies what was left out (default `kimi-rs import --with-credentials`).
    credentials_command: Option<&'static str>,
}

impl Report {
    fn imported(&mut self, what: &str, detail: &str) {
        self.lines
            .push(Line::Imported(what.to_owned(), detail.to_owned()));
    }
    fn skipped(&mut self, what: &str, why: &str) {
        self.lines
            .push(Line::Skipped(what.to_owned(), why.to_owned()));
    }
    fn failed(&mut self, what: &str, why: &str) {
        tracing::warn!("import of {what} failed: {why}");
        self.lines
            .push(Line::Failed(what.to_owned(), why.to_owned()));
    }
    fn note(&mut self, text: &str) {
        self.lines.push(Line::Note(text.to_owned()));
    }
    fn credential_left_out(&mut self, what: &str) {
        self.credentials.push(what.to_owned());
    }

    pub fn imported_count(&self) -> usize {
        self.count(|l| matches!(l, Line::Imported(..)))
    }
    pub fn skipped_count(&self) -> usize {
        self.count(|l| matches!(l, Line::Skipped(..)))
    }
    pub fn failed_count(&self) -> usize {
        self.count(|l| matches!(l, Line::Failed(..)))
    }
    fn count(&self, f: impl Fn(&Line) -> bool) -> usize {
        self.lines.iter().filter(|l| f(l)).count()
    }

    /// The report as printed.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for line in &self.lines {
            let text = match line {
                Line::Imported(what, detail) if detail.is_empty() => format!("imported {what}"),
                Line::Imported(what, detail) => format!("imported {what} ({detail})"),
                Line::Skipped(what, why) => format!("skipped  {what}: {why}"),
                Line::Failed(what, why) => format!("FAILED   {what}: {why}"),
                Line::Note(text) => format!("note: {text}"),
            };
            out.push_str("  ");
            out.push_str(&text);
            out.push('\n');
        }
        if !self.credentials.is_empty() {
            out.push_str(&format!(
                "  credentials left out (run `{}` to copy them, or set them in kimi-rs's \
                 config.toml): {}\n",
                self.credentials_command
                    .unwrap_or("kimi-rs import --with-credentials"),
                self.credentials.join(", ")
            ));
        }
        out.push_str(&format!(
            "{} imported, {} already there or kept, {} failed.\n",
            self.imported_count(),
            self.skipped_count(),
            self.failed_count()
        ));
        out
    }
}

/// `config.toml`: merged into kimi-rs's, which keeps its comments, layout and values.
fn import_config(from: &Path, to: &Path, with_credentials: bool, report: &mut Report) {
    let source_path = from.join("config.toml");
    let Ok(text) = std::fs::read_to_string(&source_path) else {
        return;
    };
    let source: toml_edit::DocumentMut = match text.parse() {
        Ok(doc) => doc,
        Err(err) => {
            report.failed(
                "config.toml",
                &format!("{} is not valid TOML: {err}", source_path.display()),
            );
            return;
        }
    };
    merge_config(source, to, with_credentials, report);
}

/// Merge the settings of `source` into kimi-rs's `config.toml`, which keeps its comments,
/// layout and values; the merged file is written only when kimi-rs loads it.
fn merge_config(
    mut source: toml_edit::DocumentMut,
    to: &Path,
    with_credentials: bool,
    report: &mut Report,
) {
    if !with_credentials {
        for path in config_merge::strip_credentials(&mut source) {
            report.credential_left_out(&format!("config.toml {path}"));
        }
    }
    let target = to.join("config.toml");
    let existing = std::fs::read_to_string(&target).unwrap_or_default();
    let mut dest: toml_edit::DocumentMut = match existing.parse() {
        Ok(doc) => doc,
        Err(err) => {
            report.failed(
                "config.toml",
                &format!(
                    "kimi-rs's {} is not valid TOML ({err}); fix it and import again",
                    target.display()
                ),
            );
            return;
        }
    };
    let merged = config_merge::merge(&source, &mut dest);
    for key in &merged.kept {
        report.skipped(
            &format!("config.toml {key}"),
            "kimi-rs's config.toml sets it differently; kept kimi-rs's",
        );
    }
    if merged.added.is_empty() {
        if merged.kept.is_empty() {
            report.skipped("config.toml", "every setting is already there");
        }
        return;
    }
    let text = dest.to_string();
    // kimi-rs must still start with the merged file: a value it rejects is not written.
    let check = kimi_config::Config::parse(&text, &target);
    if let Err(errors) = check.check() {
        report.failed(
            "config.toml",
            &format!("the merged file would not load in kimi-rs, so it was not written: {errors}"),
        );
        return;
    }
    match kimi_store::fsutil::atomic_write(&target, text.as_bytes()) {
        Ok(()) => report.imported("config.toml", &format!("added {}", merged.added.join(", "))),
        Err(err) => report.failed("config.toml", &err.to_string()),
    }
}

/// Run an import into the kimi-rs home `home`, returning the report.
pub fn import(request: &ImportRequest, home: &Path) -> anyhow::Result<Report> {
    let Some(from) = request.from.clone().or_else(default_source) else {
        bail!("no Kimi Code home to import: set KIMI_CODE_HOME or pass --from DIR");
    };
    if !from.is_dir() {
        bail!(
            "{} is not a Kimi Code home (no such directory); pass --from with the folder that holds its config.toml and sessions/",
            from.display()
        );
    }
    let from = std::fs::canonicalize(&from).unwrap_or(from);
    if std::fs::canonicalize(home).is_ok_and(|h| h == from) {
        bail!(
            "{} is kimi-rs's own home; point --from at the Kimi Code home",
            from.display()
        );
    }
    std::fs::create_dir_all(home).with_context(|| format!("creating {}", home.display()))?;
    let mut report = Report::default();
    let creds = request.with_credentials;
    import_config(&from, home, creds, &mut report);
    files::import_mcp(&from, home, creds, &mut report);
    for file in ["AGENTS.md", "SYSTEM.md", "tui.toml"] {
        files::import_file(&from, home, file, &mut report);
    }
    files::import_entries(&from, home, "skills", &mut report);
    files::import_entries(&from, home, "agents", &mut report);
    // Custom TUI themes: `tui.toml` may name one.
    files::import_entries(&from, home, "themes", &mut report);
    files::import_plugins(&from, home, &mut report);
    files::import_credentials(&from, home, creds, &mut report);
    sessions::import_sessions(&from, home, &mut report);
    offer::record_import(home, &from, &report);
    Ok(report)
}

/// `kimi-rs import`: import and print the report; exit 1 when something failed.
pub fn run(request: &ImportRequest) -> anyhow::Result<u8> {
    let home = kimi_store::home_from_env()?;
    if let Some(from) = request.from.clone().or_else(default_source) {
        println!(
            "Importing Kimi Code's {} into {}",
            from.display(),
            home.display()
        );
    }
    let report = import(request, &home)?;
    print!("{}", report.render());
    Ok(u8::from(report.failed_count() > 0))
}

/// The JSON written to [`MARKER`] after an import.
fn marker_json(from: &Path, report: &Report) -> serde_json::Value {
    json!({
        "from": from.display().to_string(),
        "at": kimi_store::fsutil::now_ms(),
        "imported": report.imported_count(),
        "skipped": report.skipped_count(),
        "failed": report.failed_count(),
    })
}
