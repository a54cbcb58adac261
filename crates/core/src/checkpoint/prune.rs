//! Retention (`checkpoint.retain_turns`, `checkpoint.retain_days`): at session open, content
//! only older checkpoints name is deleted. Their records stay in the journal, so a rewind that
//! reaches them says the content was pruned instead of restoring nothing silently.

use std::collections::HashSet;

use kimi_protocol::checkpoint::CheckpointStep;

use super::CheckpointSettings;
use super::blobs::BlobStore;

/// What pruning removed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Pruned {
    pub blobs: u64,
    pub bytes: u64,
}

/// Keep the content of the steps of the last `retain_turns` turns that are younger than
/// `retain_days`; delete every other blob. `steps` are `(time ms, step)` in journal order.
/// Must run before the session takes its first snapshot (nothing else refers to blobs then).
pub fn prune(
    blobs: &BlobStore,
    steps: &[(u64, CheckpointStep)],
    settings: &CheckpointSettings,
    now_ms: u64,
) -> Pruned {
    let oldest = now_ms.saturating_sub(settings.retain_days.saturating_mul(86_400_000));
    let mut turns_seen: Vec<u64> = Vec::new();
    for (_, step) in steps.iter().rev() {
        if turns_seen.last() != Some(&step.turn_id) && !turns_seen.contains(&step.turn_id) {
            turns_seen.push(step.turn_id);
        }
    }
    let kept_turns: HashSet<u64> = turns_seen
        .into_iter()
        .take(usize::try_from(settings.retain_turns).unwrap_or(usize::MAX))
        .collect();
    let mut keep: HashSet<&str> = HashSet::new();
    for (time, step) in steps {
        if *time < oldest || !kept_turns.contains(&step.turn_id) {
            continue;
        }
        for change in &step.changes {
            for image in [&change.before, &change.after].into_iter().flatten() {
                keep.insert(image.sha256.as_str());
            }
        }
    }
    let mut pruned = Pruned::default();
    for (sha, path) in blobs.list() {
        if keep.contains(sha.as_str()) {
            continue;
        }
        let size = std::fs::metadata(&path).map_or(0, |m| m.len());
        match std::fs::remove_file(&path) {
            Ok(()) => {
                pruned.blobs += 1;
                pruned.bytes += size;
            }
            Err(err) => {
                tracing::warn!(path = %path.display(), %err, "checkpoint content could not be pruned")
            }
        }
    }
    pruned
}
