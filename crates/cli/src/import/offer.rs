//! The one-time offer at the first interactive start: when a Kimi Code home exists and nothing
//! was imported from it, ask (on the terminal, before the TUI takes the screen) whether to
//! import it. The answer is remembered in `$KIMI_RS_HOME/kimi-code-import.json`, so the
//! question is asked once; `kimi-rs import` stays available at any time.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;

use serde_json::{Value, json};

use super::{ImportRequest, MARKER, Report, default_source, import, marker_json};

fn read_marker(home: &Path) -> Value {
    std::fs::read(home.join(MARKER))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_else(|| json!({}))
}

fn write_marker(home: &Path, marker: &Value) {
    let mut bytes = serde_json::to_vec_pretty(marker).unwrap_or_default();
    bytes.push(b'\n');
    if let Err(err) = std::fs::create_dir_all(home)
        .map_err(|e| e.to_string())
        .and_then(|()| {
            kimi_store::fsutil::atomic_write(&home.join(MARKER), &bytes).map_err(|e| e.to_string())
        })
    {
        tracing::warn!("cannot record the Kimi Code import in {MARKER}: {err}");
    }
}

/// Record a finished import (`lastImport`), keeping the offer's answer.
pub(super) fn record_import(home: &Path, from: &Path, report: &Report) {
    let mut marker = read_marker(home);
    if let Some(map) = marker.as_object_mut() {
        map.insert("lastImport".to_owned(), marker_json(from, report));
    }
    write_marker(home, &marker);
}

/// Whether the offer should be made: a Kimi Code home with a config or sessions exists, and
/// kimi-rs has neither imported from it nor been answered before.
pub fn should_offer(home: &Path) -> Option<std::path::PathBuf> {
    let from = default_source()?;
    let worth = from.join("config.toml").is_file() || from.join("sessions").is_dir();
    if !worth {
        return None;
    }
    let marker = read_marker(home);
    if marker.get("lastImport").is_some() || marker.get("offer").is_some() {
        return None;
    }
    Some(from)
}

/// Print `question` on stderr and read a yes/no answer from stdin (anything but yes is no).
fn ask(question: &str) -> bool {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "{question}");
    let _ = err.flush();
    drop(err);
    let mut answer = String::new();
    if let Err(err) = std::io::stdin().lock().read_line(&mut answer) {
        tracing::warn!("cannot read the answer: {err}");
        return false;
    }
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

/// Ask on the terminal (stdin and stderr must both be terminals) and import when the answer
/// is yes. The answer is remembered either way.
pub fn offer_on_terminal(home: &Path) {
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return;
    }
    let Some(from) = should_offer(home) else {
        return;
    };
    let mut err = std::io::stderr().lock();
    let _ = write!(
        err,
        "Found a Kimi Code home at {}.\nImport its settings, skills, agents and sessions into kimi-rs (API keys stay behind)? [y/N] ",
        from.display()
    );
    let _ = err.flush();
    drop(err);
    let yes = ask("");
    let mut marker = read_marker(home);
    if let Some(map) = marker.as_object_mut() {
        map.insert(
            "offer".to_owned(),
            json!({ "answer": if yes { "yes" } else { "no" }, "at": kimi_store::fsutil::now_ms() }),
        );
    }
    write_marker(home, &marker);
    if !yes {
        eprintln!("Not imported. Run `kimi-rs import` whenever you want to.");
        return;
    }
    let with_credentials = ask("Also copy API keys, OAuth settings and stored logins? [y/N] ");
    let request = ImportRequest {
        from: Some(from),
        with_credentials,
    };
    match import(&request, home) {
        Ok(report) => eprint!("{}", report.render()),
        Err(err) => eprintln!("kimi-rs: the import failed: {err:#}"),
    }
}
