//! Writing an undo as a branch switch (core-2.1 §4.1 step 5): compute the fork line on the
//! active chain, append the `agent.switched` + `context.undo` + `context.undone` triple, and
//! check it landed on the expected lines.

use crate::error::{Result, StoreError};
use crate::journal::Journal;
use crate::tree::{build_undo_switch_records, compute_fork_line, parse_tree};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UndoSwitch {
    pub branch: String,
    pub fork_line: u64,
    /// Line of the `agent.switched` record; the other two follow it.
    pub edge_line: u64,
}

impl Journal {
    /// Undo `turns` turns by switching to a new branch. Nothing is removed from the file.
    pub fn append_undo_switch(
        &mut self,
        agent_id: &str,
        turns: u64,
        from_turn_id: Option<u64>,
        time: u64,
    ) -> Result<UndoSwitch> {
        // Records still pending would land before the triple and shift its lines.
        self.retry_pending()?;
        let entries = self.read_entries()?;
        let tree = parse_tree(&entries);
        let fork_line = compute_fork_line(&tree, &entries, turns).map_err(|err| {
            StoreError::UndoUnavailable {
                path: self.path().to_path_buf(),
                reason: err.to_string(),
            }
        })?;
        let line_count = self.line_count();
        let (branch, records) = build_undo_switch_records(
            &tree,
            line_count,
            fork_line,
            agent_id,
            turns,
            from_turn_id,
            time,
        );
        let ack = self.append_values(records.to_vec())?;
        if ack.first_line != line_count + 1 || ack.last_line != line_count + 3 {
            return Err(StoreError::SwitchVerifyFailed {
                path: self.path().to_path_buf(),
                reason: format!(
                    "the undo switch triple landed on lines {}..={} instead of {}..={}",
                    ack.first_line,
                    ack.last_line,
                    line_count + 1,
                    line_count + 3
                ),
            });
        }
        Ok(UndoSwitch {
            branch,
            fork_line,
            edge_line: ack.first_line,
        })
    }
}
