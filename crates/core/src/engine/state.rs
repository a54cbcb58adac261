//! Agent, turn and tool lifecycles as explicit state machines (design.md principle 3). Every
//! transition goes through `advance`, which refuses moves the lifecycle does not allow, so a
//! bug shows up as a named error instead of a silently inconsistent engine; `snapshot()` says
//! exactly where an agent waits.

use kimi_protocol::ops::AgentStatus;

/// Where a turn is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnPhase {
    /// Checks before a model request: cancellation, steers, step limit, compaction, reminders.
    Gating {
        step: u32,
    },
    /// Waiting for or reading the model's stream.
    Thinking {
        step: u32,
        attempt: u32,
    },
    /// Waiting out a retry backoff; the retry is the same step.
    Retrying {
        step: u32,
        attempt: u32,
        delay_ms: u64,
    },
    /// Running the step's tool calls.
    Acting {
        step: u32,
        pending: Vec<String>,
    },
    /// Waiting for the user to approve a tool call.
    AwaitingApproval {
        step: u32,
        request_id: String,
    },
    /// Compacting the context before (or to recover) a request.
    Compacting {
        step: u32,
    },
    /// A cancel arrived; tools get their grace period.
    Draining {
        step: u32,
    },
    Done,
    Failed,
    Aborted,
}

impl TurnPhase {
    pub fn name(&self) -> &'static str {
        match self {
            TurnPhase::Gating { .. } => "gating",
            TurnPhase::Thinking { .. } => "thinking",
            TurnPhase::Retrying { .. } => "retrying",
            TurnPhase::Acting { .. } => "acting",
            TurnPhase::AwaitingApproval { .. } => "awaiting_approval",
            TurnPhase::Compacting { .. } => "compacting",
            TurnPhase::Draining { .. } => "draining",
            TurnPhase::Done => "done",
            TurnPhase::Failed => "failed",
            TurnPhase::Aborted => "aborted",
        }
    }

    pub fn is_final(&self) -> bool {
        matches!(
            self,
            TurnPhase::Done | TurnPhase::Failed | TurnPhase::Aborted
        )
    }

    fn allows(&self, next: &TurnPhase) -> bool {
        use TurnPhase as P;
        if self.is_final() {
            return false;
        }
        // A turn is created gating its first step, which the loop then enters explicitly.
        if let (P::Gating { step: now }, P::Gating { step: next }) = (self, next)
            && now == next
        {
            return true;
        }
        // Any live phase may end: a cancel aborts, an error fails.
        if matches!(next, P::Aborted | P::Failed | P::Draining { .. }) {
            return true;
        }
        matches!(
            (self, next),
            (
                P::Gating { .. },
                P::Thinking { .. } | P::Compacting { .. } | P::Done
            ) | (P::Compacting { .. }, P::Gating { .. } | P::Thinking { .. })
                | (
                    P::Thinking { .. },
                    P::Acting { .. }
                        | P::Retrying { .. }
                        | P::Done
                        | P::Compacting { .. }
                        | P::Gating { .. }
                )
                | (P::Retrying { .. }, P::Thinking { .. })
                | (
                    P::Acting { .. },
                    P::AwaitingApproval { .. } | P::Acting { .. } | P::Gating { .. } | P::Done
                )
                | (P::AwaitingApproval { .. }, P::Acting { .. })
                | (P::Draining { .. }, P::Done)
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {machine} transition {from} -> {to}")]
pub struct TransitionError {
    pub machine: &'static str,
    pub from: &'static str,
    pub to: &'static str,
}

/// A running turn: its id (the same in the engine, the journal and every front end) and phase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    pub id: u64,
    pub phase: TurnPhase,
}

impl Turn {
    pub fn new(id: u64) -> Self {
        Turn {
            id,
            phase: TurnPhase::Gating { step: 1 },
        }
    }

    pub fn advance(&mut self, next: TurnPhase) -> Result<(), TransitionError> {
        if !self.phase.allows(&next) {
            return Err(TransitionError {
                machine: "turn",
                from: self.phase.name(),
                to: next.name(),
            });
        }
        self.phase = next;
        Ok(())
    }
}

/// An agent's lifecycle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentPhase {
    Idle,
    Running(Turn),
    Closing,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentMachine {
    pub phase: AgentPhase,
    /// Prompts waiting for the current turn to end (journaled, so a restart keeps them).
    pub queued: usize,
    pub background_tasks: u32,
}

impl Default for AgentMachine {
    fn default() -> Self {
        AgentMachine {
            phase: AgentPhase::Idle,
            queued: 0,
            background_tasks: 0,
        }
    }
}

impl AgentMachine {
    pub fn start_turn(&mut self, turn_id: u64) -> Result<(), TransitionError> {
        match self.phase {
            AgentPhase::Idle => {
                self.phase = AgentPhase::Running(Turn::new(turn_id));
                Ok(())
            }
            AgentPhase::Running(_) => Err(TransitionError {
                machine: "agent",
                from: "running",
                to: "running",
            }),
            AgentPhase::Closing => Err(TransitionError {
                machine: "agent",
                from: "closing",
                to: "running",
            }),
        }
    }

    pub fn turn_mut(&mut self) -> Option<&mut Turn> {
        match &mut self.phase {
            AgentPhase::Running(turn) => Some(turn),
            AgentPhase::Idle | AgentPhase::Closing => None,
        }
    }

    /// The turn ended (its phase must be final); the agent is idle again.
    pub fn end_turn(&mut self) -> Result<(), TransitionError> {
        match &self.phase {
            AgentPhase::Running(turn) if turn.phase.is_final() => {
                self.phase = AgentPhase::Idle;
                Ok(())
            }
            AgentPhase::Running(turn) => Err(TransitionError {
                machine: "agent",
                from: turn.phase.name(),
                to: "idle",
            }),
            AgentPhase::Idle => Err(TransitionError {
                machine: "agent",
                from: "idle",
                to: "idle",
            }),
            AgentPhase::Closing => Err(TransitionError {
                machine: "agent",
                from: "closing",
                to: "idle",
            }),
        }
    }

    pub fn close(&mut self) {
        self.phase = AgentPhase::Closing;
    }

    /// Where the agent waits, for status lines and debugging.
    pub fn snapshot(&self) -> AgentStatus {
        match &self.phase {
            AgentPhase::Idle => AgentStatus::Idle {
                background_tasks: self.background_tasks,
            },
            AgentPhase::Closing => AgentStatus::Closing,
            AgentPhase::Running(turn) => match &turn.phase {
                TurnPhase::Gating { .. } | TurnPhase::Draining { .. } => AgentStatus::Gating,
                TurnPhase::Thinking { step, .. } => AgentStatus::Streaming { step: *step },
                TurnPhase::Retrying {
                    attempt, delay_ms, ..
                } => AgentStatus::Backoff {
                    attempt: *attempt,
                    delay_ms: *delay_ms,
                },
                TurnPhase::Acting { step, pending } => AgentStatus::RunningTools {
                    step: *step,
                    pending: pending.clone(),
                },
                TurnPhase::AwaitingApproval { request_id, .. } => AgentStatus::AwaitingApproval {
                    request_id: request_id.clone(),
                },
                TurnPhase::Compacting { .. } => AgentStatus::Compacting,
                TurnPhase::Done | TurnPhase::Failed | TurnPhase::Aborted => AgentStatus::Idle {
                    background_tasks: self.background_tasks,
                },
            },
        }
    }
}

/// A tool call's lifecycle inside a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolPhase {
    Pending,
    Approved,
    Running,
    Done,
}

impl ToolPhase {
    pub fn advance(self, next: ToolPhase) -> Result<ToolPhase, TransitionError> {
        use ToolPhase as T;
        let ok = matches!(
            (self, next),
            (T::Pending, T::Approved | T::Done)
                | (T::Approved, T::Running | T::Done)
                | (T::Running, T::Done)
        );
        if ok {
            Ok(next)
        } else {
            Err(TransitionError {
                machine: "tool",
                from: self.name(),
                to: next.name(),
            })
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ToolPhase::Pending => "pending",
            ToolPhase::Approved => "approved",
            ToolPhase::Running => "running",
            ToolPhase::Done => "done",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_turn_runs_through_its_phases_and_the_agent_reports_where_it_waits() {
        let mut agent = AgentMachine::default();
        agent.start_turn(7).unwrap();
        let turn = agent.turn_mut().unwrap();
        turn.advance(TurnPhase::Thinking {
            step: 1,
            attempt: 1,
        })
        .unwrap();
        assert_eq!(agent.snapshot(), AgentStatus::Streaming { step: 1 });
        let turn = agent.turn_mut().unwrap();
        turn.advance(TurnPhase::Retrying {
            step: 1,
            attempt: 2,
            delay_ms: 500,
        })
        .unwrap();
        assert_eq!(
            agent.snapshot(),
            AgentStatus::Backoff {
                attempt: 2,
                delay_ms: 500
            }
        );
        let turn = agent.turn_mut().unwrap();
        turn.advance(TurnPhase::Thinking {
            step: 1,
            attempt: 2,
        })
        .unwrap();
        turn.advance(TurnPhase::Acting {
            step: 1,
            pending: vec!["c1".into()],
        })
        .unwrap();
        turn.advance(TurnPhase::Gating { step: 2 }).unwrap();
        turn.advance(TurnPhase::Thinking {
            step: 2,
            attempt: 1,
        })
        .unwrap();
        turn.advance(TurnPhase::Done).unwrap();
        agent.end_turn().unwrap();
        assert_eq!(
            agent.snapshot(),
            AgentStatus::Idle {
                background_tasks: 0
            }
        );
    }

    #[test]
    fn the_first_step_may_enter_the_gating_it_was_created_in() {
        let mut turn = Turn::new(0);
        turn.advance(TurnPhase::Gating { step: 1 }).unwrap();
        // Skipping ahead is still refused.
        assert!(turn.advance(TurnPhase::Gating { step: 2 }).is_err());
    }

    #[test]
    fn illegal_moves_are_named() {
        let mut turn = Turn::new(0);
        let err = turn
            .advance(TurnPhase::Acting {
                step: 1,
                pending: vec![],
            })
            .unwrap_err();
        assert_eq!(err.to_string(), "invalid turn transition gating -> acting");
        turn.advance(TurnPhase::Aborted).unwrap();
        assert!(turn.advance(TurnPhase::Done).is_err());
        let mut agent = AgentMachine::default();
        agent.start_turn(0).unwrap();
        assert!(agent.end_turn().is_err(), "a live turn cannot be dropped");
        assert!(ToolPhase::Done.advance(ToolPhase::Running).is_err());
        assert_eq!(
            ToolPhase::Pending.advance(ToolPhase::Approved),
            Ok(ToolPhase::Approved)
        );
    }
}
