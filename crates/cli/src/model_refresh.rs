//! The managed provider's model list, refreshed at start-up (surface.md §5.5, `[model_catalog]`
//! of §4.2): a background task that never holds up the first prompt, bounded to
//! [`TIMEOUT`], skipped when `refresh_on_start = false` or when the last good refresh is
//! younger than `refresh_interval_ms`. A failure is logged every time and shown to the user
//! once: `model-refresh.json` in the home remembers the last failure shown, so the same
//! problem does not greet every start.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

/// How long a refresh may take before it is given up.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// The state file under `$KIMI_RS_HOME`.
pub const STATE_FILE: &str = "model-refresh.json";

fn read_state(home: &Path) -> Value {
    std::fs::read(home.join(STATE_FILE))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_else(|| json!({}))
}

fn write_state(home: &Path, state: &Value) {
    let bytes = serde_json::to_vec_pretty(state).unwrap_or_default();
    if let Err(err) = kimi_store::fsutil::atomic_write(&home.join(STATE_FILE), &bytes) {
        tracing::warn!("cannot write {STATE_FILE}: {err}");
    }
}

/// Whether a refresh is due: a login is configured, `refresh_on_start` is not off, and the
/// last good refresh is older than `refresh_interval_ms` (default 0: every start).
pub fn due(home: &Path, config: &kimi_config::Config) -> bool {
    let managed = config
        .providers
        .get(kimi_auth::PROVIDER_NAME)
        .is_some_and(|p| p.oauth.is_some());
    if !managed || config.model_catalog.refresh_on_start == Some(false) {
        return false;
    }
    let interval = config.model_catalog.refresh_interval_ms.unwrap_or(0);
    let last_ok = read_state(home)
        .get("lastOkAt")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    kimi_store::fsutil::now_ms().saturating_sub(last_ok) >= interval
}

/// Run one refresh; the text to show the user, if any (a failure not shown before).
pub async fn refresh(home: PathBuf, config: kimi_config::Config) -> Option<String> {
    let outcome = tokio::time::timeout(
        TIMEOUT,
        crate::accounts::refresh_managed_models(&home, &config),
    )
    .await;
    let failure = match outcome {
        Ok(Ok(Some(applied))) => {
            tracing::info!(
                "model list of the Kimi login refreshed: {} model(s)",
                applied.aliases.len()
            );
            write_state(
                &home,
                &json!({ "lastOkAt": kimi_store::fsutil::now_ms(), "models": applied.aliases }),
            );
            return None;
        }
        Ok(Ok(None)) => return None,
        Ok(Err(err)) => err.to_string(),
        Err(_) => format!("the server did not answer within {} s", TIMEOUT.as_secs()),
    };
    let message = format!(
        "could not refresh the Kimi login's model list ({failure}); the models in config.toml \
         are used as they are"
    );
    tracing::warn!("{message}");
    let mut state = read_state(&home);
    if state.get("lastErrorShown").and_then(Value::as_str) == Some(failure.as_str()) {
        return None;
    }
    if let Some(map) = state.as_object_mut() {
        map.insert("lastErrorShown".to_owned(), Value::from(failure));
    }
    write_state(&home, &state);
    Some(message)
}

/// Start the refresh on the current runtime when it is due.
pub fn spawn(
    home: &Path,
    config: &kimi_config::Config,
) -> Option<tokio::task::JoinHandle<Option<String>>> {
    due(home, config).then(|| tokio::spawn(refresh(home.to_owned(), config.clone())))
}

/// Wait (bounded by the refresh's own timeout) for a refresh started by [`spawn`] and print
/// its notice on stderr: print mode's end.
pub async fn finish_on_stderr(handle: Option<tokio::task::JoinHandle<Option<String>>>) {
    if let Some(handle) = handle
        && let Ok(Some(notice)) = handle.await
    {
        eprintln!("kimi-rs: {notice}");
    }
}
