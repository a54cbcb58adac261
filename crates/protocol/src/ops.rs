//! The one protocol every front end speaks (design.md principle 4): operations go into the
//! engine, events come out. The TUI, print mode, ACP and REST/WebSocket servers are adapters
//! over these types and never reach into engine internals.

use serde::{Deserialize, Serialize};

use crate::checkpoint::{RewindReport, RewindScope};
use crate::host::{GoalChange, GoalSnapshot, McpStatus, QueuedGoal, SessionSummary, TaskSummary};
use crate::message::{ContentPart, Message, ToolCall};
use crate::origin::Origin;
use crate::question::{Answers, QuestionSet};

/// Permission modes (surface.md §3.1); plan mode is a separate, orthogonal guard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PermissionMode {
    Manual,
    Yolo,
    Auto,
}

/// What turned swarm mode on (surface.md §3.1): `manual` stays until turned off; `task` (a
/// `/swarm <task>`) and `tool` (an AgentSwarm call) end with the turn they started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SwarmTrigger {
    #[default]
    Manual,
    Task,
    Tool,
}

/// How a user answered an approval request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum ApprovalDecision {
    ApproveOnce,
    ApproveForSession,
    Reject,
    RejectWithFeedback {
        feedback: String,
    },
    /// Approve and pick one of the request's `options` (a plan review's approaches) by label.
    ApproveOption {
        label: String,
    },
}

/// A choice an approval request offers besides approve/reject (ExitPlanMode's approaches).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalOption {
    pub label: String,
    #[serde(default)]
    pub description: String,
}

fn one_turn() -> u32 {
    1
}

/// Operations a front end sends to a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// A new prompt; queued (and journaled) if a turn is running.
    Submit {
        input: Vec<ContentPart>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        origin: Option<Origin>,
        /// The id the front end already told its user (the web API's `prompt_id`); the
        /// engine makes one when absent. `PromptRecorded` names it once journaled.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prompt_id: Option<String>,
    },
    /// Text that joins the running turn at its next step (or starts a turn when idle).
    Steer {
        input: Vec<ContentPart>,
    },
    /// Cancel the running turn (and, with `queued`, the queued prompts too).
    Cancel {
        #[serde(default)]
        queued: bool,
    },
    Approve {
        request_id: String,
        decision: ApprovalDecision,
    },
    /// The user's answer to `Event::QuestionRequested` (see [`Answers`] for its JSON shapes);
    /// [`Answers::Dismissed`] (or no answers at all) dismisses the questions.
    Answer {
        request_id: String,
        answers: Answers,
    },
    Undo {
        count: u32,
    },
    /// Rewind the last `turns` turns: the files the agent changed in them (from their
    /// checkpoints), the conversation, or both. Files changed outside the agent since are
    /// conflicts that stop it unless `force`. Answered with `Event::Rewound`.
    Rewind {
        #[serde(default = "one_turn")]
        turns: u32,
        #[serde(default)]
        scope: RewindScope,
        #[serde(default)]
        force: bool,
    },
    Compact {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        instruction: Option<String>,
    },
    SetPermissionMode {
        mode: PermissionMode,
    },
    SetPlanMode {
        enabled: bool,
    },
    /// Empty the current plan file (`/plan clear`); plan mode itself is unchanged.
    ClearPlan,
    /// Turn swarm mode on or off (`/swarm on|off`; `/swarm <task>` sends it with trigger
    /// `task` before the task). Only while the agent is idle; answered with
    /// `Event::SwarmMode`.
    SetSwarmMode {
        enabled: bool,
        #[serde(default)]
        trigger: SwarmTrigger,
    },
    /// Switch the session's model for the next request (`/model`): a `[models]` alias or the
    /// environment's model name. Journaled (resume keeps it); answered with
    /// `Event::ModelChanged` or `Event::Error`.
    SetModel {
        alias: String,
    },
    /// Switch the thinking effort (`/effort`): off, on, low, medium, high, xhigh or max.
    /// Journaled like the model; answered with `Event::ModelChanged` or `Event::Error`.
    SetEffort {
        effort: String,
    },
    /// A side question (`/btw`): answered from a tool-less copy of the conversation so far,
    /// with `Event::BtwAnswered`; neither question nor answer joins the history, and a
    /// running turn goes on undisturbed.
    Btw {
        question: String,
    },
    /// Goal mode (`/goal …`, surface.md §9.2); answered with `Event::GoalUpdated` (or
    /// `Event::Error` / `Event::Warning` saying why nothing changed).
    Goal {
        action: GoalAction,
    },
    /// Walk a flow skill's chart (`/flow:<name>`): each node's prompt is a turn; a decision's
    /// reply picks the next node with `<choice>`. The first prompt queues like a submitted
    /// one (`prompt_id` as in `Submit`). Progress is `Event::FlowUpdated`; every run ends
    /// with a `finished` or `stopped` update (a refusal, while another flow runs, too).
    Flow {
        name: String,
        graph: crate::flow::FlowGraph,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prompt_id: Option<String>,
    },
    Shutdown,

    // ---- Host ops: answered by the session host (`kimi_core::host::SessionHost`), not the
    // agent loop, with the events of the same block below. A later host feature (goals,
    // environments, rewind) is one more op here and one more event there.
    /// List stored sessions: those of this session's directory, or `all` of them. Answered
    /// with `Event::SessionList`.
    ListSessions {
        #[serde(default)]
        all: bool,
    },
    /// Answered with `Event::TaskList`.
    ListTasks,
    /// Stop one background task; answered with `Event::TaskStopped` (or `Event::Error`).
    StopTask {
        task_id: String,
    },
    /// The last `max_bytes` (default 32 KiB) of a task's output; answered with
    /// `Event::TaskOutput`.
    TaskOutput {
        task_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_bytes: Option<u64>,
    },
    /// A `!command` the user runs in the session's directory (not a model tool call). The
    /// command and its output join the conversation (the model sees them). A foreground one is
    /// announced with `Event::ShellStarted` and answered with `Event::ShellOutput`; with
    /// `background` it starts as a background task at once (`Event::ShellBackgrounded`).
    Shell {
        command: String,
        #[serde(default)]
        background: bool,
    },
    /// Ctrl-B: move the running foreground `!command` to the background as a task (it shows in
    /// the task list and the model is told when it ends); answered with
    /// `Event::ShellBackgrounded`, or `Event::Error` when none runs.
    ShellToBackground,
    /// Answered with `Event::McpStatus`.
    McpStatus,
    /// Sign in to, sign out of or reconnect one MCP server (`/mcp-config login|logout|
    /// reconnect <server>`). A login is announced with `Event::McpSignIn`; every action ends
    /// with `Event::McpServerDone` (or `Event::Error` when it cannot start).
    McpServer {
        server: String,
        action: crate::host::McpServerAction,
    },
    /// Name the session (`/title <text>`, kept over later prompts), or with `None` ask for its
    /// title; answered with `Event::SessionTitle`.
    SetTitle {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
    },
    /// Copy this session, as it is now, into a new one (`/fork`); refused while a turn runs.
    /// Answered with `Event::SessionForked`.
    Fork,
}

impl Op {
    /// Whether the session host answers this op (rather than the agent loop).
    pub fn is_host_op(&self) -> bool {
        matches!(
            self,
            Op::ListSessions { .. }
                | Op::ListTasks
                | Op::StopTask { .. }
                | Op::TaskOutput { .. }
                | Op::Shell { .. }
                | Op::ShellToBackground
                | Op::McpStatus
                | Op::McpServer { .. }
                | Op::SetTitle { .. }
                | Op::Fork
        )
    }
}

/// What `Op::Goal` asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum GoalAction {
    /// Create a goal (actor user) and send its objective as the first goal turn's prompt.
    /// Refused while a goal exists unless `replace`.
    Start {
        objective: String,
        #[serde(default)]
        replace: bool,
    },
    /// Report the current goal (`Event::GoalUpdated` without a change).
    Status,
    /// Pause the active goal and stop its running turn.
    Pause,
    /// Reactivate a paused or blocked goal and start a goal turn.
    Resume,
    /// Remove the goal and stop its running turn.
    Cancel,
    /// `/goal next <objective>`: queue a goal for when the current one completes (starts it
    /// now when there is no goal and the agent is idle).
    Next {
        objective: String,
    },
    /// Start the first queued goal if there is no goal (a front end sends it after a
    /// completion).
    StartNext,
    /// List the queue (`Event::GoalQueue`).
    QueueList,
    QueueRemove {
        id: String,
    },
    QueueEdit {
        id: String,
        objective: String,
    },
    /// Move a queued goal one place earlier (`up`) or later.
    QueueMove {
        id: String,
        up: bool,
    },
}

/// Where an agent is waiting right now: the value `snapshot()` returns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum AgentStatus {
    Idle {
        #[serde(default)]
        background_tasks: u32,
    },
    Gating,
    Streaming {
        step: u32,
    },
    RunningTools {
        step: u32,
        pending: Vec<String>,
    },
    AwaitingApproval {
        request_id: String,
    },
    Backoff {
        attempt: u32,
        delay_ms: u64,
    },
    Compacting,
    Closing,
}

/// A request for the user's decision on one tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRequest {
    pub request_id: String,
    pub tool_call_id: String,
    pub tool_name: String,
    /// e.g. "run command", "edit file".
    pub action: String,
    pub summary: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Unified diff for Write/Edit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// Set when the command looks dangerous (recursive rm, sudo, curl|sh …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub danger: Option<String>,
    /// Why the permission chain asked (the deciding policy's name).
    pub policy: String,
    /// Approaches the user may pick when approving (ExitPlanMode's `options`); answered with
    /// [`ApprovalDecision::ApproveOption`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<ApprovalOption>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnEndReason {
    Completed,
    Cancelled,
    Failed,
    Blocked,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    pub input_other: u64,
    pub output: u64,
    pub input_cache_read: u64,
    pub input_cache_creation: u64,
}

impl Usage {
    pub fn total(&self) -> u64 {
        self.input_other + self.output + self.input_cache_read + self.input_cache_creation
    }
}

/// Events the engine emits. Turn ids are the same here, in the journal and in every front end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Event {
    #[serde(rename = "turn.started")]
    TurnStarted { turn_id: u64 },
    #[serde(rename = "turn.ended")]
    TurnEnded {
        turn_id: u64,
        reason: TurnEndReason,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    #[serde(rename = "turn.step.started")]
    StepStarted { turn_id: u64, step: u32 },
    #[serde(rename = "turn.step.completed")]
    StepCompleted {
        turn_id: u64,
        step: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        finish_reason: Option<String>,
    },
    #[serde(rename = "turn.step.retrying")]
    StepRetrying {
        turn_id: u64,
        failed_attempt: u32,
        next_attempt: u32,
        max_attempts: u32,
        delay_ms: u64,
        error_name: String,
        error_message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status_code: Option<u16>,
    },
    #[serde(rename = "assistant.delta")]
    AssistantDelta { text: String },
    #[serde(rename = "thinking.delta")]
    ThinkingDelta { text: String },
    /// The finished assistant message of a step (tool calls included).
    #[serde(rename = "assistant.message")]
    AssistantMessage { message: Message },
    #[serde(rename = "tool.call.started")]
    ToolStarted { call: ToolCall },
    /// The change a file tool will make, computed against the file as it is when the call is
    /// planned (sent right after `ToolStarted`, in every permission mode). An empty `diff`
    /// means the call leaves the file as it is (a rewrite with the same content).
    #[serde(rename = "tool.diff")]
    ToolDiff { tool_call_id: String, diff: String },
    #[serde(rename = "tool.progress")]
    ToolProgress { tool_call_id: String, text: String },
    #[serde(rename = "tool.result")]
    ToolResult {
        tool_call_id: String,
        output: Vec<ContentPart>,
        is_error: bool,
    },
    #[serde(rename = "approval.requested")]
    ApprovalRequested(ApprovalRequest),
    #[serde(rename = "question.requested")]
    QuestionRequested {
        request_id: String,
        questions: QuestionSet,
    },
    #[serde(rename = "compaction.started")]
    CompactionStarted { manual: bool },
    #[serde(rename = "compaction.completed")]
    CompactionCompleted {
        tokens_before: u64,
        tokens_after: u64,
    },
    #[serde(rename = "compaction.cancelled")]
    CompactionCancelled { reason: String },
    #[serde(rename = "prompt.queued")]
    PromptQueued { prompt_id: String },
    #[serde(rename = "prompt.steered")]
    PromptSteered { prompt_id: String },
    /// The answer to `Op::Steer`, sent once the steer is safe: journaled (`joined`: it joins the
    /// running turn at its next step gate, and survives a crash before then) or, the turn having
    /// ended meanwhile, taken as the next prompt (`joined` false). A steer the journal refused
    /// gets no acceptance; the write error is reported instead.
    #[serde(rename = "prompt.steer_accepted")]
    SteerAccepted { prompt_id: String, joined: bool },
    /// The answer to an approval or a question (`Op::Approve`, `Op::Answer`) is journaled:
    /// a crash from now on does not lose it. A front end that confirms answers to its user
    /// (the web API) waits for this.
    #[serde(rename = "answer.recorded")]
    AnswerRecorded { request_id: String },
    /// A user's prompt (`Op::Submit`) is journaled: a crash from now on does not lose it
    /// (resume runs it). A front end that confirms prompts to its user (the web API)
    /// waits for this.
    #[serde(rename = "prompt.recorded")]
    PromptRecorded { prompt_id: String },
    #[serde(rename = "context.undone")]
    ContextUndone { turns: u32 },
    /// The answer to `Op::Rewind` (also when conflicts stopped it: `report.applied` is false).
    #[serde(rename = "rewind.done")]
    Rewound { report: RewindReport },
    #[serde(rename = "usage")]
    Usage { usage: Usage, context_tokens: u64 },
    #[serde(rename = "status")]
    Status { status: AgentStatus },
    #[serde(rename = "warning")]
    Warning { message: String },
    #[serde(rename = "error")]
    Error { message: String },
    /// The session's model or thinking effort changed (`Op::SetModel`, `Op::SetEffort`).
    #[serde(rename = "model.changed")]
    ModelChanged {
        /// The `[models]` alias (or the environment model's name) now in use.
        alias: String,
        /// The provider's model id.
        model: String,
        /// The thinking effort requests now carry (`None`: thinking is not mentioned).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        effort: Option<String>,
        /// The model's context window in tokens (0 = unknown).
        context_window: u64,
    },
    /// A flow run (`Op::Flow`) moved: started, entered a node, asked again, finished or
    /// stopped. Journaled as `flow.update` before it is sent.
    #[serde(rename = "flow.updated")]
    FlowUpdated { update: crate::flow::FlowUpdate },
    /// The answer to `Op::Btw`, or why there is none (`error`).
    #[serde(rename = "btw.answered")]
    BtwAnswered {
        question: String,
        answer: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// Swarm mode turned on (with what started it) or off.
    #[serde(rename = "swarm_mode")]
    SwarmMode {
        active: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        trigger: Option<SwarmTrigger>,
    },
    /// The goal changed (or `Op::Goal { Status }` asked): its snapshot, `None` when there is
    /// no goal any more, and what changed.
    #[serde(rename = "goal.updated")]
    GoalUpdated {
        goal: Option<GoalSnapshot>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        change: Option<GoalChange>,
    },
    /// The workspace's queue of upcoming goals, after `Op::Goal` listed or changed it.
    #[serde(rename = "goal.queue")]
    GoalQueue { goals: Vec<QueuedGoal> },

    // ---- Host events: the session host's answers to the host ops above.
    #[serde(rename = "session.list")]
    SessionList { sessions: Vec<SessionSummary> },
    #[serde(rename = "task.list")]
    TaskList { tasks: Vec<TaskSummary> },
    #[serde(rename = "task.stopped")]
    TaskStopped { task_id: String, status: String },
    #[serde(rename = "task.output")]
    TaskOutput {
        task_id: String,
        output: String,
        /// The task wrote more than `output` holds.
        truncated: bool,
    },
    /// The agent's todo list as journaled now (after `TodoList`, undo, rewind, or at resume).
    #[serde(rename = "todo.updated")]
    TodosUpdated { todos: Vec<crate::record::TodoItem> },
    /// A foreground `!command` started as task `task_id` (Ctrl-B can background it).
    #[serde(rename = "shell.started")]
    ShellStarted { command: String, task_id: String },
    #[serde(rename = "shell.output")]
    ShellOutput {
        command: String,
        output: String,
        is_error: bool,
    },
    /// A `!command` runs in the background as task `task_id` (`/tasks` lists it).
    #[serde(rename = "shell.backgrounded")]
    ShellBackgrounded { command: String, task_id: String },
    #[serde(rename = "mcp.status")]
    McpStatus { status: McpStatus },
    /// An MCP sign-in started: the user opens `url` in a browser.
    #[serde(rename = "mcp.sign_in")]
    McpSignIn { server: String, url: String },
    /// `Op::McpServer` finished; `message` says what happened and `status` is the servers'
    /// status afterwards.
    #[serde(rename = "mcp.server_done")]
    McpServerDone {
        server: String,
        action: crate::host::McpServerAction,
        ok: bool,
        message: String,
        status: McpStatus,
    },
    /// The session's title (`None` while untitled); `changed` when `Op::SetTitle` set it.
    #[serde(rename = "session.title")]
    SessionTitle {
        title: Option<String>,
        changed: bool,
    },
    /// `Op::Fork` made `session_id`, a copy of the asking session, in `cwd`.
    #[serde(rename = "session.forked")]
    SessionForked {
        session_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cwd: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn ops_and_events_have_stable_json() {
        let op: Op = serde_json::from_value(json!({"op": "approve", "request_id": "r1", "decision": {"decision": "reject_with_feedback", "feedback": "no"}})).unwrap();
        assert_eq!(
            op,
            Op::Approve {
                request_id: "r1".into(),
                decision: ApprovalDecision::RejectWithFeedback {
                    feedback: "no".into()
                }
            }
        );
        let ev = Event::TurnEnded {
            turn_id: 3,
            reason: TurnEndReason::Completed,
            error: None,
        };
        assert_eq!(
            serde_json::to_value(&ev).unwrap(),
            json!({"type": "turn.ended", "turn_id": 3, "reason": "completed"})
        );
    }

    #[test]
    fn host_ops_and_events_have_stable_json() {
        let op: Op = serde_json::from_value(json!({"op": "list_sessions"})).unwrap();
        assert_eq!(op, Op::ListSessions { all: false });
        assert!(op.is_host_op());
        let op: Op = serde_json::from_value(json!({"op": "shell", "command": "ls"})).unwrap();
        assert_eq!(
            op,
            Op::Shell {
                command: "ls".into(),
                background: false
            }
        );
        assert!(!Op::Cancel { queued: false }.is_host_op());
        let ev = Event::McpStatus {
            status: McpStatus {
                servers: vec![crate::host::McpServerEntry {
                    name: "docs".into(),
                    transport: "stdio".into(),
                    state: crate::host::McpServerState::Failed("no such file".into()),
                    tool_count: 0,
                    source: None,
                }],
                problem: None,
                config_files: vec![],
            },
        };
        assert_eq!(
            serde_json::to_value(&ev).unwrap(),
            json!({"type": "mcp.status", "status": {"servers": [{"name": "docs", "transport": "stdio", "state": {"failed": "no such file"}, "tool_count": 0}], "config_files": []}})
        );
        let back: Event = serde_json::from_value(serde_json::to_value(&ev).unwrap()).unwrap();
        assert_eq!(back, ev);
    }
}
