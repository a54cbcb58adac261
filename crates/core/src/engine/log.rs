//! An agent's durable state: its journal and the one history folded from it. Every change goes
//! through `commit`, which makes the records durable first and then folds the same records into
//! history — the live path and the resume path are one code path, so a resumed session sees
//! exactly what the live one saw.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use kimi_context::history::{History, HistoryConfig, ReplayReport};
use kimi_protocol::record::TodoItem;
use kimi_protocol::{Record, RecordPayload};
use kimi_store::{Journal, JournalOptions, Repair, TurnClock};

use crate::plan::PlanSnapshot;

#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error(transparent)]
    Store(#[from] kimi_store::StoreError),
}

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// The current UTC time as ISO-8601 (for the system prompt's `now`).
pub fn now_iso() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// What opening an agent's journal found.
#[derive(Debug, Default)]
pub struct Restored {
    pub report: ReplayReport,
    pub repairs: Vec<Repair>,
    /// Lines that could not be read as records, with why.
    pub skipped: Vec<String>,
    /// Prompts that were queued when the process stopped and never started.
    pub queued_prompts: Vec<QueuedPrompt>,
    /// The system prompt journaled when the agent was bound (`profile.bind`), reused on resume.
    pub system_prompt: Option<String>,
    /// The profile named by that `profile.bind` record, and the agent file it came from (when
    /// it was a custom one), so a resumed agent keeps its tools.
    pub profile: Option<BoundProfile>,
    /// Approval answers (`permission.record_approval_result`): session approvals survive resume.
    pub approvals: Vec<kimi_protocol::record::ApprovalResult>,
    /// The last `plan.mode` state on the active branch (plan mode survives resume).
    pub plan: Option<PlanSnapshot>,
    /// Cron jobs alive at the end of the journal (`cron.add` / `cron.delete` / `cron.cursor`).
    pub cron: Vec<crate::cron::CronJob>,
    /// The todo list as the active branch last journaled it (`todo.set`).
    pub todos: Vec<TodoItem>,
    /// The goal after every `goal.*` record (goals are not undoable, so all branches count).
    pub goal: Option<crate::goal::GoalState>,
    /// Every `checkpoint.step` of the journal with its time, in order (retention prunes by them).
    pub checkpoint_steps: Vec<(u64, kimi_protocol::checkpoint::CheckpointStep)>,
    /// The model and thinking effort the session last switched to (`model.set`, newest of
    /// each; switches are not undone with the conversation).
    pub model: Option<kimi_protocol::record::ModelSet>,
    /// The execution environment the session is bound to (the last `environment.bind`).
    pub environment: Option<kimi_protocol::record::EnvironmentBind>,
}

/// The profile an agent was bound to, as journaled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoundProfile {
    pub name: String,
    pub file: Option<std::path::PathBuf>,
}

/// A prompt waiting for its turn; journaled as `prompt.queued` so a restart keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct QueuedPrompt {
    pub prompt_id: String,
    pub input: Vec<kimi_protocol::ContentPart>,
}

pub struct AgentLog {
    agent_id: String,
    journal: Journal,
    history: History,
    clock: TurnClock,
    /// The last `plan.mode` state on the active branch.
    plan: Option<PlanSnapshot>,
    /// The last `todo.set` list on the active branch.
    todos: Vec<TodoItem>,
    /// Results for unanswered calls whose answer the journal has (`settle`), committed when
    /// the agent starts.
    settled: Vec<RecordPayload>,
    /// The last `flow.update`, taken by the starting agent to report a flow cut off mid-run.
    flow: Option<kimi_protocol::flow::FlowUpdate>,
}

impl std::fmt::Debug for AgentLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentLog")
            .field("agent_id", &self.agent_id)
            .field("journal", &self.journal.path())
            .field("messages", &self.history.len())
            .finish()
    }
}

impl AgentLog {
    /// Open (or create) the journal at `path`, repair and migrate it, and replay its active
    /// branch into history.
    pub fn open(
        path: &Path,
        agent_id: &str,
        options: JournalOptions,
    ) -> Result<(AgentLog, Restored), LogError> {
        let (journal, read) = Journal::open_replay(path, options, agent_id)?;
        let input = read.input;
        let clock = TurnClock::fold(input.all.iter().map(|r| &r.record.payload));
        let queued_prompts = pending_queue(input.all.iter().map(|r| &r.record.payload));
        let binds = || {
            input
                .all
                .iter()
                .rev()
                .filter_map(|r| match &r.record.payload {
                    RecordPayload::ProfileBind(bind) => Some(bind),
                    _ => None,
                })
        };
        let system_prompt = binds().find_map(|b| b.system_prompt.clone());
        let environment = input
            .all
            .iter()
            .rev()
            .find_map(|r| match &r.record.payload {
                RecordPayload::EnvironmentBind(bind) => Some(bind.clone()),
                _ => None,
            });
        let profile = binds().find_map(|b| {
            Some(BoundProfile {
                name: b.profile.clone()?,
                file: b.profile_file.as_ref().map(std::path::PathBuf::from),
            })
        });
        let approvals = input
            .all
            .iter()
            .filter_map(|r| match &r.record.payload {
                RecordPayload::ApprovalResult(a) => Some(a.clone()),
                _ => None,
            })
            .collect();
        let mut skipped: Vec<String> = input
            .skipped
            .iter()
            .map(|s| format!("line {}: {}", s.line, s.reason))
            .collect();
        skipped.extend(read.reported.iter().map(|r| format!("{r:?}")));
        let plan = plan_on_branch(&input);
        let todos = todos_on_branch(&input);
        let cron = crate::cron::fold_records(input.all.iter().map(|r| &r.record.payload));
        let goal = crate::goal::GoalState::fold(input.all.iter().map(|r| &r.record.payload));
        let checkpoint_steps = input
            .all
            .iter()
            .filter_map(|r| match &r.record.payload {
                RecordPayload::CheckpointStep(step) => {
                    Some((r.record.time.unwrap_or(0), step.clone()))
                }
                _ => None,
            })
            .collect();
        let model = fold_model_sets(input.all.iter().map(|r| &r.record.payload));
        let flow = input
            .all
            .iter()
            .rev()
            .find_map(|r| match &r.record.payload {
                RecordPayload::FlowUpdate(update) => Some(update.clone()),
                _ => None,
            });
        let answered =
            super::settle::Answered::collect(input.all.iter().map(|r| &r.record.payload));
        let mut history = History::new(HistoryConfig::default());
        let report = history.replay(input.into_undoable(), agent_id);
        let settled = answered.results(
            history.messages(),
            history.fold_state().pending_tool_calls(),
        );
        Ok((
            AgentLog {
                agent_id: agent_id.to_owned(),
                journal,
                history,
                clock,
                plan: plan.clone(),
                todos: todos.clone(),
                settled,
                flow,
            },
            Restored {
                report,
                repairs: read.repairs,
                skipped,
                queued_prompts,
                system_prompt,
                profile,
                approvals,
                plan,
                cron,
                todos,
                goal,
                checkpoint_steps,
                model,
                environment,
            },
        ))
    }

    /// The results an answer decided for calls a crash left unanswered (see `settle`); the
    /// starting agent commits them, once.
    pub fn take_settled(&mut self) -> Vec<RecordPayload> {
        std::mem::take(&mut self.settled)
    }

    /// The journal's last `flow.update` (see `crate::flow::report_interrupted`); once.
    pub fn take_flow(&mut self) -> Option<kimi_protocol::flow::FlowUpdate> {
        self.flow.take()
    }

    pub fn agent_id(&self) -> &str {
        &self.agent_id
    }

    pub fn history(&self) -> &History {
        &self.history
    }

    pub fn clock(&self) -> &TurnClock {
        &self.clock
    }

    /// The plan-mode state the active branch last journaled.
    pub fn plan_snapshot(&self) -> Option<PlanSnapshot> {
        self.plan.clone()
    }

    /// The todo list the active branch last journaled (empty when none was).
    pub fn todos(&self) -> &[TodoItem] {
        &self.todos
    }

    pub fn journal_path(&self) -> &Path {
        self.journal.path()
    }

    /// Every line of the journal, parsed (rewind reads its checkpoint records).
    pub(crate) fn read_entries(&mut self) -> Result<Vec<kimi_store::Entry>, LogError> {
        self.journal.retry_pending()?;
        Ok(self.journal.read_entries()?)
    }

    /// Physical lines in the journal (metadata included).
    pub fn line_count(&self) -> u64 {
        self.journal.line_count()
    }

    /// Make `payloads` durable (one batch, one fsync), then fold them into history and the
    /// turn clock. On a write error nothing is folded, so memory never runs ahead of disk.
    pub fn commit(&mut self, payloads: Vec<RecordPayload>) -> Result<(), LogError> {
        if payloads.is_empty() {
            return Ok(());
        }
        let time = now_ms();
        let records: Vec<Record> = payloads
            .into_iter()
            .map(|mut p| {
                p.fill_agent_id(&self.agent_id);
                Record::new(p, time)
            })
            .collect();
        self.journal.append(&records)?;
        for record in records {
            self.clock.apply(&record.payload);
            match &record.payload {
                RecordPayload::PlanMode(plan) => self.plan = Some(PlanSnapshot::from(plan)),
                RecordPayload::TodoSet(set) => self.todos.clone_from(&set.todos),
                _ => {}
            }
            // Outcomes of live records are known-good; replay reports are for foreign files.
            let _ = self.history.apply_record(record, &self.agent_id);
        }
        Ok(())
    }

    /// Undo `count` user turns: refused with the reference's message when not possible,
    /// otherwise a branch switch is appended (nothing is deleted) and history is replayed from
    /// the new active branch.
    pub fn undo(&mut self, count: u64) -> Result<(), String> {
        if let Err(why) = self.history.precheck_undo(count) {
            return Err(why.to_string());
        }
        self.journal
            .append_undo_switch(&self.agent_id, count, None, now_ms())
            .map_err(|e| e.to_string())?;
        self.reload().map_err(|e| e.to_string())
    }

    /// Re-read the journal and replay it (after a branch switch).
    fn reload(&mut self) -> Result<(), LogError> {
        let input = self.journal.read_replay(&self.agent_id)?;
        self.clock = TurnClock::fold(input.all.iter().map(|r| &r.record.payload));
        self.plan = plan_on_branch(&input);
        self.todos = todos_on_branch(&input);
        let mut history = History::new(self.history.config());
        history.replay(input.into_undoable(), &self.agent_id);
        self.history = history;
        Ok(())
    }

    /// Retry batches whose append failed earlier.
    pub fn retry_pending(&mut self) -> Result<(), LogError> {
        self.journal.retry_pending()?;
        Ok(())
    }

    pub fn pending_records(&self) -> usize {
        self.journal.pending_records()
    }
}

/// The records on the active branch's restorable chain, newest first: undoable state (plan
/// mode, todos) is the last one found there.
fn on_branch_newest_first(
    input: &kimi_store::OwnedReplayInput,
) -> impl Iterator<Item = &RecordPayload> {
    input
        .all
        .iter()
        .zip(&input.undoable)
        .rev()
        .filter(|(_, on_chain)| **on_chain)
        .map(|(r, _)| &r.record.payload)
}

/// The last `plan.mode` record on the active branch's restorable chain.
/// The newest alias and the newest effort of the `model.set` records; `None` without any.
fn fold_model_sets<'a>(
    payloads: impl Iterator<Item = &'a RecordPayload>,
) -> Option<kimi_protocol::record::ModelSet> {
    let mut folded: Option<kimi_protocol::record::ModelSet> = None;
    for payload in payloads {
        if let RecordPayload::ModelSet(set) = payload {
            let entry = folded.get_or_insert_with(Default::default);
            if set.alias.is_some() {
                entry.alias.clone_from(&set.alias);
            }
            if set.effort.is_some() {
                entry.effort.clone_from(&set.effort);
            }
        }
    }
    folded
}

fn plan_on_branch(input: &kimi_store::OwnedReplayInput) -> Option<PlanSnapshot> {
    on_branch_newest_first(input).find_map(|p| match p {
        RecordPayload::PlanMode(plan) => Some(PlanSnapshot::from(plan)),
        _ => None,
    })
}

/// The last `todo.set` list on the active branch's restorable chain (empty when none).
fn todos_on_branch(input: &kimi_store::OwnedReplayInput) -> Vec<TodoItem> {
    on_branch_newest_first(input)
        .find_map(|p| match p {
            RecordPayload::TodoSet(set) => Some(set.todos.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

/// `prompt.queued` and `prompt.steer` records whose prompt neither started (`turn.prompt` /
/// `prompt.steered` with the same id), nor joined a turn (`turn.steer` naming it), nor was
/// cancelled (`prompt.aborted`), in the order they were accepted. A steer whose turn died with
/// the process is delivered this way on resume, once: its turn's `turn.prompt` consumes it.
pub(crate) fn pending_queue<'a>(
    records: impl Iterator<Item = &'a RecordPayload>,
) -> Vec<QueuedPrompt> {
    let mut queue: Vec<QueuedPrompt> = Vec::new();
    for payload in records {
        match payload {
            RecordPayload::PromptQueued(queued) => queue.push(QueuedPrompt {
                prompt_id: queued.prompt_id.clone(),
                input: queued.input.clone(),
            }),
            RecordPayload::PromptSteer(steer) => queue.push(QueuedPrompt {
                prompt_id: steer.prompt_id.clone(),
                input: steer.input.clone(),
            }),
            RecordPayload::TurnSteer(steer) => {
                let ids: Vec<&String> = steer
                    .prompt_ids
                    .iter()
                    .flatten()
                    .chain(steer.message_id.as_ref())
                    .collect();
                queue.retain(|q| !ids.contains(&&q.prompt_id));
            }
            RecordPayload::TurnPrompt(p) => {
                if let Some(id) = &p.prompt_id {
                    queue.retain(|q| &q.prompt_id != id);
                }
            }
            RecordPayload::PromptAborted(p) | RecordPayload::PromptSteered(p) => {
                let mut ids: Vec<&str> = p.prompt_id.as_deref().into_iter().collect();
                if let Some(serde_json::Value::Array(more)) = p.extra.get("promptIds") {
                    ids.extend(more.iter().filter_map(serde_json::Value::as_str));
                }
                queue.retain(|q| !ids.contains(&q.prompt_id.as_str()));
            }
            _ => {}
        }
    }
    queue
}
