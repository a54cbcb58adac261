//! The durable turn clock (core.md §f.10): a pure fold over journal records giving the next turn
//! id, queued turns cancelled before they started, and the last ended turn.

use std::collections::BTreeSet;

use kimi_protocol::{LoopEvent, RecordPayload};
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LastEnded {
    pub turn_id: u64,
    pub reason: kimi_protocol::ops::TurnEndReason,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnClock {
    pub next_turn_id: u64,
    pub cancelled_turn_ids: BTreeSet<u64>,
    pub last_ended: Option<LastEnded>,
}

fn loop_event_turn(event: &LoopEvent) -> Option<u64> {
    event.turn_id().and_then(|id| id.parse().ok())
}

impl TurnClock {
    /// Move the clock to `next`, skipping ids that belonged to queued turns cancelled before
    /// they started: the clock never rests on such an id, so no new turn reuses it.
    fn advance_to(&mut self, mut next: u64) {
        while self.cancelled_turn_ids.remove(&next) {
            next += 1;
        }
        self.next_turn_id = next;
    }

    pub fn apply(&mut self, record: &RecordPayload) {
        match record {
            RecordPayload::TurnPrompt(prompt) => {
                // 2.1 prompts carry their turn id; older ones take the next one.
                // The prompt's turn takes the current id (skipping cancelled ones first).
                self.advance_to(self.next_turn_id);
                let next = match prompt.turn_id {
                    Some(id) => self.next_turn_id.max(id + 1),
                    None => self.next_turn_id + 1,
                };
                self.advance_to(next);
            }
            RecordPayload::AppendLoopEvent(append) => {
                if let Some(turn) = loop_event_turn(&append.event) {
                    if turn >= self.next_turn_id {
                        self.advance_to(turn + 1);
                    }
                    if self.last_ended.as_ref().is_some_and(|e| turn > e.turn_id) {
                        self.last_ended = None;
                    }
                }
            }
            RecordPayload::TurnCancel(cancel) => {
                // Only a turn that has not started yet (its id is ahead of the clock) matters.
                if let Some(turn) = cancel.turn_id
                    && turn >= self.next_turn_id
                {
                    self.cancelled_turn_ids.insert(turn);
                }
            }
            RecordPayload::TurnEnded(ended) => {
                self.last_ended = Some(LastEnded {
                    turn_id: ended.turn_id,
                    reason: ended.reason,
                    duration_ms: ended.duration_ms,
                });
            }
            // Everything else, turn.steer included, leaves the clock alone.
            _ => {}
        }
    }

    pub fn fold<'a>(records: impl IntoIterator<Item = &'a RecordPayload>) -> TurnClock {
        let mut clock = TurnClock::default();
        for record in records {
            clock.apply(record);
        }
        clock
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kimi_protocol::Record;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn fold(values: Vec<serde_json::Value>) -> TurnClock {
        let records: Vec<Record> = values
            .into_iter()
            .map(|v| Record::from_value(v).unwrap())
            .collect();
        TurnClock::fold(records.iter().map(|r| &r.payload))
    }

    #[test]
    fn queued_cancel_ahead_of_the_clock_is_skipped_when_advancing() {
        let clock = fold(vec![
            json!({"type": "turn.prompt", "input": []}),
            json!({"type": "turn.cancel", "turnId": 1, "target": "queued"}),
            json!({"type": "turn.cancel", "turnId": 3, "target": "queued"}),
        ]);
        assert_eq!(clock.cancelled_turn_ids, BTreeSet::from([1, 3]));
        let mut clock = clock;
        clock.apply(
            &Record::from_value(json!({"type": "turn.prompt", "input": []}))
                .unwrap()
                .payload,
        );
        // The new turn skips cancelled id 1 and takes 2; the clock then skips 3.
        assert_eq!(clock.next_turn_id, 4);
        assert_eq!(clock.cancelled_turn_ids, BTreeSet::new());
    }

    #[test]
    fn newer_loop_event_clears_last_ended_and_steer_is_ignored() {
        let clock = fold(vec![
            json!({"type": "turn.prompt", "input": []}),
            json!({"type": "turn.ended", "turnId": 0, "reason": "completed", "durationMs": 5}),
            json!({"type": "turn.steer", "input": []}),
            json!({"type": "context.append_loop_event", "event": {"type": "step.begin", "uuid": "s", "turnId": "1"}}),
        ]);
        assert_eq!(
            clock,
            TurnClock {
                next_turn_id: 2,
                cancelled_turn_ids: BTreeSet::new(),
                last_ended: None
            }
        );
    }
}
