//! Rewind (issue #17): undo the last N turns' file changes from their checkpoints, the
//! conversation, or both. The turns are the ones `/undo` counts; the files are those of the
//! `checkpoint.step` records the undone turns wrote (on the active branch, after the fork line
//! the undo would use). Conversation rewind is the existing undo (a branch switch), so a
//! resumed session never sends the undone turns to the model again.

use std::collections::HashSet;

use kimi_protocol::RecordPayload;
use kimi_protocol::checkpoint::{CheckpointRewind, CheckpointStep, RewindReport, RewindScope};
use kimi_store::tree::compute_fork_line;
use kimi_store::{active_chain, parse_tree};

use super::log::AgentLog;
use crate::checkpoint::blobs::BlobStore;
use crate::checkpoint::restore;

/// What to rewind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RewindRequest {
    pub turns: u64,
    pub scope: RewindScope,
    pub force: bool,
}

impl AgentLog {
    /// Rewind per `request`. Conflicts without `force` return a report with `applied: false`
    /// and change nothing; an error means nothing changed either (a failed restore is rolled
    /// back) unless it says otherwise.
    pub fn rewind(
        &mut self,
        request: RewindRequest,
        blobs: &BlobStore,
    ) -> Result<RewindReport, String> {
        let mut report = RewindReport {
            turns: request.turns,
            scope: request.scope,
            ..RewindReport::default()
        };
        if let Err(why) = self.history().precheck_undo(request.turns) {
            return Err(why.to_string());
        }
        let steps = if request.scope.files() {
            self.undone_steps(request.turns)?
        } else {
            Vec::new()
        };
        if !steps.is_empty() {
            let checkpoints: Vec<CheckpointStep> = steps.iter().map(|(_, s)| s.clone()).collect();
            let plan = restore::plan(&checkpoints, blobs);
            report.conflicts.clone_from(&plan.conflicts);
            report.unrestorable.clone_from(&plan.unrestorable);
            if !plan.conflicts.is_empty() && !request.force {
                return Ok(report);
            }
            restore::apply(&plan, blobs, &mut report).map_err(|e| e.to_string())?;
            let record = CheckpointRewind {
                turns: request.turns,
                steps: steps.iter().map(|(line, _)| *line).collect(),
                restored: report.restored.clone(),
                forced: report.forced.clone(),
                unrestorable: report.unrestorable.clone(),
            };
            self.commit(vec![RecordPayload::CheckpointRewind(record)])
                .map_err(|e| {
                    format!("the files were restored but the journal could not record it: {e}")
                })?;
        }
        if request.scope.conversation() {
            self.undo(request.turns)?;
            report.conversation_undone = true;
        }
        report.applied = true;
        Ok(report)
    }

    /// The `checkpoint.step` records of the last `turns` turns on the active branch, in journal
    /// order, without those an earlier files-only rewind already reverted.
    fn undone_steps(&mut self, turns: u64) -> Result<Vec<(u64, CheckpointStep)>, String> {
        let entries = self.read_entries().map_err(|e| e.to_string())?;
        let tree = parse_tree(&entries);
        let fork = compute_fork_line(&tree, &entries, turns).map_err(|e| e.to_string())?;
        let chain = active_chain(&tree, &entries).map_err(|e| e.to_string())?;
        let mut reverted: HashSet<u64> = HashSet::new();
        let mut steps = Vec::new();
        for entry in chain {
            let kind = entry.value.get("type").and_then(serde_json::Value::as_str);
            match kind {
                Some("checkpoint.rewind") => {
                    if let Ok(r) = serde_json::from_value::<CheckpointRewind>(entry.value.clone()) {
                        reverted.extend(r.steps);
                    }
                }
                Some("checkpoint.step") if entry.line > fork => {
                    let step = serde_json::from_value::<CheckpointStep>(entry.value.clone())
                        .map_err(|e| {
                            format!(
                                "checkpoint record on line {} of {} cannot be read ({e}); rewind the conversation only (--conversation)",
                                entry.line,
                                self.journal_path().display()
                            )
                        })?;
                    steps.push((entry.line, step));
                }
                _ => {}
            }
        }
        steps.retain(|(line, _)| !reverted.contains(line));
        Ok(steps)
    }
}
