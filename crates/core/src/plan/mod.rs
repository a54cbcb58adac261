//! Plan mode (surface.md §9.1): one agent's `{active, id}` state and its plan file
//! `<agentDir>/plans/<id>.md`, the `plan.mode` journal record that lets resume and undo restore
//! it, the plan guard applied on top of the permission decision, the step-gate reminders
//! ([`reminders`]) and the `EnterPlanMode` / `ExitPlanMode` tools ([`tools`]).

pub mod reminders;
pub mod tools;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use kimi_protocol::RecordPayload;
use kimi_protocol::ops::PermissionMode;
use kimi_protocol::record::PlanModeRecord;

use crate::engine::executor::GateDecision;
use crate::engine::permissions::call_facts;
use crate::permission::{ListenerVerdict, PlanState, Workspace, plan_guard};
use kimi_tools::ToolPlan;

/// The policy name an `ExitPlanMode` review carries in its approval request.
pub const REVIEW_POLICY: &str = "exit-plan-mode-review-ask";

/// Plan-mode state as journaled.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlanSnapshot {
    pub active: bool,
    /// The current (or last) plan's id; kept after exit so re-entering continues that plan.
    pub id: Option<String>,
}

impl PlanSnapshot {
    /// The `plan.mode` record for this state.
    pub fn record(&self) -> RecordPayload {
        RecordPayload::PlanMode(PlanModeRecord {
            active: self.active,
            plan_id: self.id.clone(),
        })
    }
}

impl From<&PlanModeRecord> for PlanSnapshot {
    /// A journaled plan id that is not a slug (hand-edited, or hostile) is dropped: it would
    /// name a file outside the plans directory.
    fn from(record: &PlanModeRecord) -> Self {
        PlanSnapshot {
            active: record.active,
            id: record.plan_id.clone().filter(|id| is_valid_id(id)),
        }
    }
}

/// A plan id is a slug: lowercase letters, digits and dashes (it becomes a file name).
fn is_valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

const ADJECTIVES: [&str; 16] = [
    "brave", "calm", "clever", "bold", "swift", "quiet", "bright", "steady", "keen", "noble",
    "nimble", "gentle", "fearless", "radiant", "patient", "wise",
];
const NOUNS: [&str; 16] = [
    "falcon", "comet", "harbor", "meadow", "summit", "lantern", "river", "beacon", "glacier",
    "orchid", "compass", "ember", "voyager", "sparrow", "canyon", "atlas",
];

/// A random readable slug such as `swift-lantern-comet-3f`.
pub fn new_plan_id() -> String {
    let bytes = *uuid::Uuid::new_v4().as_bytes();
    let pick = |list: &[&'static str; 16], b: u8| list[usize::from(b % 16)];
    format!(
        "{}-{}-{}-{:02x}",
        pick(&ADJECTIVES, bytes[0]),
        pick(&NOUNS, bytes[1]),
        pick(&NOUNS, bytes[2]),
        bytes[3]
    )
}

/// Why a plan-mode action failed.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("there is no plan file yet; enter plan mode first")]
    NoPlan,
    #[error("could not empty the plan file {path}: {source}; check its permissions and retry")]
    Clear {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The live plan-mode state of one (main) agent, shared by the engine's guard, the gate
/// reminders and the plan tools. Every change returns the `plan.mode` record that makes it
/// durable; the caller hands it to the engine (a tool in its result, an op handler through
/// `Runtime::commit`), so no change can happen without its record reaching the journal's writer.
pub struct PlanMode {
    plans_dir: PathBuf,
    workspace: Workspace,
    state: Mutex<PlanSnapshot>,
}

impl std::fmt::Debug for PlanMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlanMode")
            .field("plans_dir", &self.plans_dir)
            .field("state", &*self.state())
            .finish_non_exhaustive()
    }
}

impl PlanMode {
    /// Plan mode for the agent whose data lives in `agent_dir`, starting from `restored` (the
    /// journal's last `plan.mode` record on the active branch).
    pub fn new(agent_dir: &Path, workspace: Workspace, restored: Option<PlanSnapshot>) -> Self {
        PlanMode {
            plans_dir: agent_dir.join("plans"),
            workspace,
            state: Mutex::new(restored.unwrap_or_default()),
        }
    }

    fn state(&self) -> MutexGuard<'_, PlanSnapshot> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn snapshot(&self) -> PlanSnapshot {
        self.state().clone()
    }

    pub fn is_active(&self) -> bool {
        self.state().active
    }

    /// The current plan file (whether or not it exists yet); `None` before any plan id.
    pub fn plan_file(&self) -> Option<PathBuf> {
        let id = self.state().id.clone()?;
        Some(self.plans_dir.join(format!("{id}.md")))
    }

    /// The plan file's text; empty when there is none yet.
    pub fn plan_text(&self) -> String {
        self.plan_file()
            .and_then(|p| std::fs::read_to_string(p).ok())
            .unwrap_or_default()
    }

    /// Take `next`; the record to journal when that changed anything.
    fn set(&self, next: PlanSnapshot) -> Option<RecordPayload> {
        let mut state = self.state();
        let changed = *state != next;
        *state = next;
        changed.then(|| state.record())
    }

    /// Turn plan mode on. `fresh` starts a new plan id (EnterPlanMode); otherwise the last
    /// plan continues (`/plan`, Shift-Tab, `--plan`). The file itself is not created; its
    /// directory is, so the Write tool can create it. Returns the plan file's path and the
    /// record to journal.
    #[must_use = "the returned plan.mode record must be committed"]
    pub fn enter(&self, fresh: bool) -> (PathBuf, Option<RecordPayload>) {
        let id = match self.state().id.clone() {
            Some(id) if !fresh => id,
            Some(_) | None => new_plan_id(),
        };
        if let Err(err) = std::fs::create_dir_all(&self.plans_dir) {
            tracing::warn!("cannot create {}: {err}", self.plans_dir.display());
        }
        let path = self.plans_dir.join(format!("{id}.md"));
        let record = self.set(PlanSnapshot {
            active: true,
            id: Some(id),
        });
        (path, record)
    }

    /// Turn plan mode off (the plan id is kept for a later re-entry); the record to journal.
    #[must_use = "the returned plan.mode record must be committed"]
    pub fn exit(&self) -> Option<RecordPayload> {
        let id = self.state().id.clone();
        self.set(PlanSnapshot { active: false, id })
    }

    /// `Op::SetPlanMode`; the record to journal when the state changed.
    #[must_use = "the returned plan.mode record must be committed"]
    pub fn set_enabled(&self, enabled: bool) -> Option<RecordPayload> {
        if enabled {
            if !self.is_active() {
                return self.enter(false).1;
            }
        } else if self.is_active() {
            return self.exit();
        }
        None
    }

    /// `/plan clear`: empty the current plan file (when it exists); returns its path.
    pub fn clear(&self) -> Result<PathBuf, PlanError> {
        let path = self.plan_file().ok_or(PlanError::NoPlan)?;
        if path.exists() {
            std::fs::write(&path, "").map_err(|source| PlanError::Clear {
                path: path.clone(),
                source,
            })?;
        }
        Ok(path)
    }

    /// Undo moved the conversation back: take the state its branch last journaled (nothing is
    /// journaled — the state already is the branch's).
    pub fn restore(&self, snapshot: Option<PlanSnapshot>) {
        *self.state() = snapshot.unwrap_or_default();
    }

    /// The plan guard on top of the permission decision (v2 order: the gate's veto first, then
    /// the guard's veto or allow, then the first deferred ask).
    pub fn guard(
        &self,
        tool_name: &str,
        tool_plan: &ToolPlan,
        gate: GateDecision,
        mode: PermissionMode,
    ) -> GateDecision {
        if matches!(gate, GateDecision::Deny(_)) {
            return gate;
        }
        let facts = call_facts(&self.workspace, tool_name, tool_plan);
        let state = self.snapshot();
        let plan_file = state.id.as_ref().map(|id| {
            let path = self.plans_dir.join(format!("{id}.md"));
            self.workspace.resolve(&path.display().to_string())
        });
        let verdict = plan_guard(
            &facts,
            PlanState {
                active: state.active,
                plan_file: plan_file.as_deref(),
            },
            mode,
        );
        match verdict {
            ListenerVerdict::Pass | ListenerVerdict::Duplicate { .. } => gate,
            ListenerVerdict::Allow => GateDecision::Approve,
            ListenerVerdict::Veto(message) => GateDecision::Deny(message),
            ListenerVerdict::Ask(_) => match gate {
                // The chain's own ask comes first; a review is an ask too, so it is the review.
                GateDecision::Approve | GateDecision::Ask { .. } => GateDecision::Ask {
                    action: "review plan".to_owned(),
                    policy: REVIEW_POLICY.to_owned(),
                    danger: None,
                },
                GateDecision::Deny(_) => gate,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_ids_are_slugs() {
        let id = new_plan_id();
        assert!(is_valid_id(&id), "{id}");
        let snap = PlanSnapshot {
            active: true,
            id: Some(id),
        };
        let RecordPayload::PlanMode(record) = snap.record() else {
            panic!("not a plan.mode record");
        };
        assert_eq!(PlanSnapshot::from(&record), snap);
        let bad = PlanModeRecord {
            active: true,
            plan_id: Some("../../etc/passwd".to_owned()),
        };
        assert_eq!(
            PlanSnapshot::from(&bad),
            PlanSnapshot {
                active: true,
                id: None
            }
        );
    }

    #[test]
    fn changes_return_their_record_and_no_change_returns_none() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path(), &[], None);
        let plan = PlanMode::new(dir.path(), ws, None);
        let (_, record) = plan.enter(false);
        assert!(matches!(
            record,
            Some(RecordPayload::PlanMode(PlanModeRecord { active: true, .. }))
        ));
        assert_eq!(plan.set_enabled(true), None);
        assert!(matches!(
            plan.set_enabled(false),
            Some(RecordPayload::PlanMode(PlanModeRecord {
                active: false,
                ..
            }))
        ));
        assert_eq!(plan.exit(), None);
    }

    #[test]
    fn entering_keeps_the_plan_unless_fresh() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path(), &[], None);
        let plan = PlanMode::new(dir.path(), ws, None);
        let (first, _) = plan.enter(false);
        let _ = plan.exit();
        assert!(!plan.is_active());
        assert_eq!(plan.enter(false).0, first);
        assert_ne!(plan.enter(true).0, first);
        assert!(plan.is_active());
    }
}
