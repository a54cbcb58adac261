//! The engine side of the tool executor for one step of a turn: the permission decision (with
//! the plan guard), approvals asked through the front end, hooks around tool calls, and the
//! journal and events of each call.

use kimi_protocol::ToolCall;
use kimi_protocol::ops::Event;
use kimi_tools::{ToolPlan, ToolResult};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::executor::{BatchHost, GateDecision, UserAnswer};
use super::records as rec;
use super::runtime::Runtime;
use super::state::TurnPhase;
use super::turn::set_phase;
use crate::checkpoint::{CaptureKind, Ticket, capture_kind};
use crate::hooks::{HookEventData, PermissionRequestInfo, clip_tool_output};

/// The engine side of the executor: permissions, approvals, journal and events.
pub(super) struct TurnHost<'a> {
    pub(super) rt: &'a Runtime,
    pub(super) turn_id: u64,
    pub(super) step: u32,
    pub(super) step_uuid: String,
    pub(super) cancel: CancellationToken,
    /// How many tool calls the step's response holds (AgentSwarm must be alone in it).
    pub(super) calls_in_step: usize,
}

#[async_trait::async_trait]
impl BatchHost for TurnHost<'_> {
    async fn before_run(&self, call: &ToolCall, plan: &ToolPlan) -> Option<Ticket> {
        if let Some(instructions) = &self.rt.config.instructions {
            instructions.touched(&call.name, call.arguments.as_deref(), plan);
        }
        let checkpoints = self.rt.config.checkpoints.clone()?;
        let kind = capture_kind(&call.name, plan);
        if kind == CaptureKind::None {
            return None;
        }
        // Scans and pre-images read files: off the async workers.
        match tokio::task::spawn_blocking(move || checkpoints.before(&kind)).await {
            Ok(ticket) => ticket,
            Err(err) => {
                self.rt.emit(Event::Warning {
                    message: format!(
                        "the file checkpoint before {} {} failed ({err}); a rewind cannot restore what it changes",
                        call.name, call.id
                    ),
                });
                None
            }
        }
    }

    async fn after_run(&self, call: &ToolCall, ticket: Option<Ticket>) {
        let (Some(checkpoints), Some(ticket)) = (self.rt.config.checkpoints.clone(), ticket) else {
            return;
        };
        let (turn_id, id, name) = (self.turn_id, call.id.clone(), call.name.clone());
        let step =
            tokio::task::spawn_blocking(move || checkpoints.after(ticket, turn_id, &id, &name))
                .await;
        match step {
            Ok(Some(step)) => {
                if !step.skipped.is_empty() {
                    self.rt.emit(Event::Warning {
                        message: skipped_message(&step),
                    });
                }
                self.rt
                    .commit(vec![kimi_protocol::RecordPayload::CheckpointStep(step)]);
            }
            Ok(None) => {}
            Err(err) => self.rt.emit(Event::Warning {
                message: format!(
                    "the file checkpoint after {} {} failed ({err}); a rewind cannot restore what it changed",
                    call.name, call.id
                ),
            }),
        }
    }

    fn decide(&self, call: &ToolCall, args: &Value, plan: &ToolPlan) -> GateDecision {
        if let Some(text) = crate::subagent::swarm_veto(&call.name, self.calls_in_step) {
            return GateDecision::Deny(text);
        }
        if let Some(goals) = &self.rt.config.goal
            && let Some(text) = goals.veto(self.turn_id, &call.name)
        {
            return GateDecision::Deny(text.to_owned());
        }
        let gate = self.rt.config.permissions.decide(call, args, plan);
        let mode = self.rt.config.permissions.mode();
        let gate = match &self.rt.config.plan {
            Some(plan_mode) => plan_mode.guard(&call.name, plan, gate, mode),
            None => gate,
        };
        crate::goal::review::guard(&call.name, gate, mode)
    }

    fn settle(&self, call: &ToolCall, plan: &ToolPlan, answer: &UserAnswer) -> Option<ToolResult> {
        if call.name == crate::goal::CREATE_GOAL {
            crate::goal::review::settle(self.rt, answer);
            return None;
        }
        let plan_mode = self.rt.config.plan.as_ref()?;
        (call.name == crate::plan::tools::EXIT_PLAN_MODE)
            .then(|| crate::plan::tools::settle_review(plan_mode, plan, answer))
    }

    async fn ask(
        &self,
        call: &ToolCall,
        plan: &ToolPlan,
        action: &str,
        policy: &str,
        danger: Option<&str>,
    ) -> Option<UserAnswer> {
        let request_id = rec::new_id("apr_");
        // Approvals name the target when the call acts on a remote environment (the file
        // and shell tools; MCP, web and agent tools run here).
        let environment = &self.rt.config.tool_ctx.environment;
        let targeted = format!("{action} on {}", environment.info().label());
        let action = if !environment.is_local()
            && [
                "Bash",
                "Read",
                "Write",
                "Edit",
                "Grep",
                "Glob",
                "ReadMediaFile",
            ]
            .contains(&call.name.as_str())
        {
            targeted.as_str()
        } else {
            action
        };
        let rx = self
            .rt
            .link()
            .await_approval(&request_id, Some((call.id.clone(), call.name.clone())));
        set_phase(
            self.rt,
            TurnPhase::AwaitingApproval {
                step: self.step,
                request_id: request_id.clone(),
            },
        );
        let request_info = PermissionRequestInfo {
            id: request_id.clone(),
            agent_id: self.rt.log().agent_id().to_owned(),
            turn_id: Value::from(self.turn_id),
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            action: action.to_owned(),
            display: serde_json::to_value(&plan.display).unwrap_or(Value::Null),
            tool_input: call
                .arguments
                .as_deref()
                .and_then(|a| serde_json::from_str(a).ok())
                .unwrap_or(Value::Null),
        };
        if let Some(hooks) = &self.rt.config.hooks {
            hooks.fire_and_forget(HookEventData::PermissionRequest {
                request: request_info.clone(),
            });
        }
        self.rt.emit(Event::ApprovalRequested(
            kimi_protocol::ops::ApprovalRequest {
                request_id: request_id.clone(),
                tool_call_id: call.id.clone(),
                tool_name: call.name.clone(),
                action: action.to_owned(),
                summary: plan.display.summary.clone(),
                detail: plan.display.detail.clone(),
                diff: plan.display.diff.clone(),
                danger: danger.map(str::to_owned),
                policy: policy.to_owned(),
                options: if call.name == crate::plan::tools::EXIT_PLAN_MODE {
                    crate::plan::tools::review_options(call.arguments.as_deref())
                } else if call.name == crate::goal::CREATE_GOAL {
                    crate::goal::review::options()
                } else {
                    Vec::new()
                },
            },
        ));
        let answer = tokio::select! {
            answer = rx => answer.ok(),
            () = self.cancel.cancelled() => None,
        };
        self.rt.link().forget_approval(&request_id);
        if let Some(hooks) = &self.rt.config.hooks {
            let (decision, scope, feedback) = match &answer {
                Some(UserAnswer::Approve | UserAnswer::ApproveOption(_)) => {
                    ("approved", None, None)
                }
                Some(UserAnswer::ApproveForSession) => ("approved", Some("session"), None),
                Some(UserAnswer::Reject(feedback)) => ("rejected", None, feedback.clone()),
                None => ("cancelled", None, None),
            };
            hooks.fire_and_forget(HookEventData::PermissionResult {
                request: request_info,
                decision: decision.to_owned(),
                scope: scope.map(str::to_owned),
                feedback,
                selected_label: match &answer {
                    Some(UserAnswer::ApproveOption(label)) => Some(label.clone()),
                    _ => None,
                },
                error: None,
            });
        }
        if let Some(answer) = &answer {
            let (decision, rule) = match answer {
                UserAnswer::Approve | UserAnswer::ApproveOption(_) => ("approved", None),
                UserAnswer::ApproveForSession
                    if call.name == crate::plan::tools::EXIT_PLAN_MODE =>
                {
                    ("approved", None)
                }
                UserAnswer::ApproveForSession => (
                    "approved",
                    self.rt
                        .config
                        .permissions
                        .remember_session_approval(call, plan),
                ),
                UserAnswer::Reject(_) => ("rejected", None),
            };
            let (rule, environment) = match rule {
                Some((rule, environment)) => (Some(rule), environment),
                None => (None, None),
            };
            let mut result = serde_json::json!({"decision": decision});
            if rule.is_some()
                && let Some(obj) = result.as_object_mut()
            {
                obj.insert("scope".into(), Value::from("session"));
            }
            self.rt
                .commit(vec![kimi_protocol::RecordPayload::ApprovalResult(
                    kimi_protocol::record::ApprovalResult {
                        agent_id: None,
                        turn_id: Some(Value::from(self.turn_id)),
                        tool_call_id: call.id.clone(),
                        tool_name: call.name.clone(),
                        action: action.to_owned(),
                        session_approval_rule: rule,
                        environment,
                        result,
                    },
                )]);
        }
        set_phase(
            self.rt,
            TurnPhase::Acting {
                step: self.step,
                pending: Vec::new(),
            },
        );
        answer
    }

    async fn pre_tool_use(&self, call: &ToolCall, args: &Value) -> Option<String> {
        let hooks = self.rt.config.hooks.as_ref()?;
        let result = hooks
            .fire(HookEventData::PreToolUse {
                tool_name: call.name.clone(),
                tool_input: args.clone(),
                tool_call_id: call.id.clone(),
            })
            .await;
        for message in result.warnings {
            self.rt.emit(Event::Warning { message });
        }
        result.blocked
    }

    fn started(&self, call: &ToolCall, args: &Value, plan: Option<&ToolPlan>) {
        self.rt.commit(vec![rec::tool_call(
            &self.step_uuid,
            self.turn_id,
            self.step,
            call,
            args,
        )]);
        self.rt.emit(Event::ToolStarted { call: call.clone() });
        // Front ends show the real change, not a guess from the arguments (without it a
        // rewrite with the same content looks like every line added when nobody is asked).
        if let Some(diff) = plan.and_then(|p| p.display.diff.clone()) {
            self.rt.emit(Event::ToolDiff {
                tool_call_id: call.id.clone(),
                diff,
            });
        }
    }

    fn progress(&self, call: &ToolCall, text: &str) {
        self.rt.emit(Event::ToolProgress {
            tool_call_id: call.id.clone(),
            text: format!("{text}\n"),
        });
    }

    fn finished(&self, call: &ToolCall, result: &ToolResult) {
        if let Some(goals) = &self.rt.config.goal {
            goals.tool_finished(self.turn_id);
        }
        // The state change the tool made (todos, plan mode, cron) and its result are one
        // batch: durable together, or (on a write error) retried together.
        // Schema declarations (`select_tools`) follow the result, keeping the call and its
        // result adjacent in the history.
        let (declarations, mut records): (Vec<_>, Vec<_>) =
            result.records.iter().cloned().partition(|record| {
                matches!(record, kimi_protocol::RecordPayload::AppendMessage(m) if m.message.is_tool_declaration_only())
            });
        records.push(rec::tool_result(
            &call.id,
            result.output.clone(),
            result.is_error,
            result.note.clone(),
        ));
        records.extend(declarations);
        self.rt.commit(records);
        self.rt.emit(Event::ToolResult {
            tool_call_id: call.id.clone(),
            output: result.output.clone().into_parts(),
            is_error: result.is_error,
        });
        if let Some(hooks) = &self.rt.config.hooks {
            let tool_input = call
                .arguments
                .as_deref()
                .and_then(|a| serde_json::from_str(a).ok())
                .unwrap_or(Value::Null);
            let text = result.text().unwrap_or_default();
            let data = if result.is_error {
                HookEventData::PostToolUseFailure {
                    tool_name: call.name.clone(),
                    tool_input,
                    tool_call_id: call.id.clone(),
                    error: serde_json::json!({"name": "ToolError", "message": text}),
                }
            } else {
                HookEventData::PostToolUse {
                    tool_name: call.name.clone(),
                    tool_input,
                    tool_call_id: call.id.clone(),
                    tool_output: clip_tool_output(&text),
                }
            };
            hooks.fire_and_forget(data);
        }
    }
}

/// What a checkpoint's limits left out, for the front ends (the record keeps it too).
fn skipped_message(step: &kimi_protocol::checkpoint::CheckpointStep) -> String {
    const SHOWN: usize = 5;
    let mut lines: Vec<String> = step
        .skipped
        .iter()
        .take(SHOWN)
        .map(|s| {
            if s.path.is_empty() {
                s.reason.clone()
            } else {
                format!("{}: {}", s.path, s.reason)
            }
        })
        .collect();
    if step.skipped.len() > SHOWN {
        lines.push(format!("… and {} more", step.skipped.len() - SHOWN));
    }
    format!(
        "checkpoint of {} {}: a rewind cannot restore {} change(s): {}",
        step.tool,
        step.tool_call_id,
        step.skipped.len(),
        lines.join("; ")
    )
}
