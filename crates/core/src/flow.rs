//! Flow runs (`/flow:<name>`, `Op::Flow`): the engine walks a flow skill's chart from BEGIN
//! to END, one turn per node. A task node's label is the prompt and the flow moves along its
//! only edge when the turn completes; a decision node's prompt lists its branches and the
//! reply's last `<choice>…</choice>` picks one (asked again, at most [`MAX_REASKS`] times, when
//! it names none). A turn that fails, is cancelled or blocked stops the flow, as does the
//! move limit. Every change is journaled (`flow.update`) before front ends hear of it
//! (`Event::FlowUpdated`), so a flow the process died in is reported on resume.

use std::sync::Arc;

use kimi_protocol::flow::{FlowGraph, FlowNodeKind, FlowState, FlowUpdate, parse_choice};
use kimi_protocol::ops::{Event, TurnEndReason};
use kimi_protocol::origin::KnownOrigin;
use kimi_protocol::{ContentPart, Origin, RecordPayload, Role};

use crate::engine::records as rec;
use crate::engine::runtime::{Job, Pending, Runtime};

/// Node prompts one run may send (the reference's `DEFAULT_MAX_FLOW_MOVES`); a chart that
/// loops without reaching END stops here instead of running forever.
pub const MAX_MOVES: u32 = 1000;
/// Times a decision is asked again when its reply names no branch.
pub const MAX_REASKS: u32 = 3;
/// The origin name of node prompts (`system_trigger`).
pub const ORIGIN: &str = kimi_protocol::flow::NODE_ORIGIN;

/// The flow being walked.
#[derive(Debug, Clone)]
pub struct ActiveFlow {
    pub name: String,
    pub graph: FlowGraph,
    /// The node whose prompt is queued or running.
    pub node: String,
    /// The prompt id of that turn.
    pub prompt_id: String,
    pub moves: u32,
    /// How often the current decision was asked (1 = once).
    pub asked: u32,
}

/// `Op::Flow`: start walking `graph`. Its first prompt queues behind any running or queued
/// turn like a submitted prompt (`prompt_id` is that prompt's id, acknowledged with
/// `PromptRecorded` once the start is journaled). Refused, with a `Stopped` update that is not
/// journaled, while another flow runs.
pub fn start(rt: &Arc<Runtime>, name: String, graph: FlowGraph, prompt_id: Option<String>) {
    let running = rt
        .shared()
        .flow
        .as_ref()
        .map(|active| (active.name.clone(), active.node.clone()));
    if let Some((active, node)) = running {
        let reason = format!(
            "flow {active} is still running (at {node}); wait for it to finish or press Esc to stop it, then start /flow:{name} again"
        );
        rt.emit(Event::FlowUpdated {
            update: FlowUpdate {
                name,
                state: stopped(&reason),
                moves: 0,
            },
        });
        return;
    }
    let first = graph
        .outgoing(&graph.begin)
        .next()
        .map(|edge| edge.to.clone());
    let Some(first) = first else {
        // The parser guarantees BEGIN's edge; a hand-made Op without one is refused.
        rt.emit(Event::FlowUpdated {
            update: FlowUpdate {
                name,
                state: stopped("the chart has no edge out of BEGIN"),
                moves: 0,
            },
        });
        return;
    };
    if !announce(rt, &name, FlowState::Started, 0) {
        return;
    }
    // What the user typed names the session (its title until a better one, the last prompt),
    // so `-c` and the session picker find a session that only ran a flow.
    if let Some(meta) = &rt.config.session_meta {
        meta.prompt_started(&format!("/flow:{name}"));
    }
    let prompt_id = prompt_id.unwrap_or_else(|| rec::new_id("msg_"));
    let waits = {
        let shared = rt.shared();
        shared.turn_cancel.is_some() || !shared.jobs.is_empty()
    };
    rt.emit(Event::PromptRecorded {
        prompt_id: prompt_id.clone(),
    });
    if waits {
        rt.emit(Event::PromptQueued {
            prompt_id: prompt_id.clone(),
        });
    }
    enter(rt, name, graph, first, None, 0, Some(prompt_id));
}

fn stopped(reason: &str) -> FlowState {
    FlowState::Stopped {
        reason: reason.to_owned(),
    }
}

/// Journal and announce `state`; `false` when the journal refused it (the failure was shown).
fn announce(rt: &Runtime, name: &str, state: FlowState, moves: u32) -> bool {
    let update = FlowUpdate {
        name: name.to_owned(),
        state,
        moves,
    };
    if !rt.commit(vec![RecordPayload::FlowUpdate(update.clone())]) {
        rt.shared().flow = None;
        return false;
    }
    tracing::info!(flow = %update.name, "{}", update.describe());
    rt.emit(Event::FlowUpdated { update });
    true
}

/// Move to `node`: END finishes the run; any other node's prompt is queued as a turn.
fn enter(
    rt: &Arc<Runtime>,
    name: String,
    graph: FlowGraph,
    node: String,
    choice: Option<String>,
    moves: u32,
    prompt_id: Option<String>,
) {
    if node == graph.end {
        rt.shared().flow = None;
        announce(rt, &name, FlowState::Finished, moves);
        return;
    }
    if moves >= MAX_MOVES {
        rt.shared().flow = None;
        announce(
            rt,
            &name,
            stopped(&format!(
                "{MAX_MOVES} node prompts sent without reaching END; check the chart for a loop the model cannot leave"
            )),
            moves,
        );
        return;
    }
    let Some(label) = graph.node(&node).map(|n| n.label.clone()) else {
        rt.shared().flow = None;
        announce(
            rt,
            &name,
            stopped(&format!("the chart has no node \"{node}\"")),
            moves,
        );
        return;
    };
    let moves = moves + 1;
    let entered = FlowState::Entered {
        node: node.clone(),
        label,
        choice,
    };
    if !announce(rt, &name, entered, moves) {
        return;
    }
    let flow = ActiveFlow {
        name,
        graph,
        node,
        prompt_id: prompt_id.unwrap_or_else(|| rec::new_id("msg_")),
        moves,
        asked: 1,
    };
    queue_prompt(rt, flow, false);
}

/// The prompt of the flow's current node (with `nudge` after a reply that chose nothing).
fn node_prompt(flow: &ActiveFlow, nudge: bool) -> String {
    let Some(node) = flow.graph.node(&flow.node) else {
        return String::new();
    };
    if node.kind != FlowNodeKind::Decision {
        return node.label.clone();
    }
    let mut text = node.label.clone();
    text.push_str("\n\nAvailable branches:\n");
    for choice in flow.graph.choices(&node.id) {
        text.push_str(&format!("- {choice}\n"));
    }
    text.push_str("\nReply with a choice using <choice>...</choice>.");
    if nudge {
        text.push_str(
            "\n\nYour last response did not include a valid choice. Reply with one of the choices using <choice>...</choice>.",
        );
    }
    text
}

fn queue_prompt(rt: &Runtime, flow: ActiveFlow, nudge: bool) {
    let input = vec![ContentPart::text(node_prompt(&flow, nudge))];
    let job = Job::Prompt(Pending {
        prompt_id: flow.prompt_id.clone(),
        input,
        origin: Origin::Known(KnownOrigin::SystemTrigger {
            name: ORIGIN.to_owned(),
        }),
    });
    let mut shared = rt.shared();
    if shared.shutting_down {
        shared.flow = None;
        return;
    }
    shared.flow = Some(flow);
    shared.jobs.push_back(job);
    shared.machine.queued = shared.jobs.len();
    drop(shared);
    rt.wake.notify_one();
}

/// The text of the last assistant message of the turn that `prompt_id` started.
fn reply_text(rt: &Runtime, prompt_id: &str) -> String {
    let log = rt.log();
    let messages = log.history().messages();
    messages
        .iter()
        .rev()
        .take_while(|m| m.id.as_deref() != Some(prompt_id))
        .find(|m| m.role == Role::Assistant && !m.text().trim().is_empty())
        .map(kimi_protocol::Message::text)
        .unwrap_or_default()
}

/// The turn started by `prompt_id` ended: move the flow on, ask again, or stop it. Runs
/// before `TurnEnded` is announced, so a print run sees the next node queued.
pub fn turn_ended(rt: &Arc<Runtime>, prompt_id: &str, reason: TurnEndReason, error: Option<&str>) {
    let flow = {
        let mut shared = rt.shared();
        match &shared.flow {
            Some(flow) if flow.prompt_id == prompt_id => shared.flow.take(),
            _ => None,
        }
    };
    let Some(mut flow) = flow else {
        return;
    };
    let why = match reason {
        TurnEndReason::Completed => None,
        TurnEndReason::Cancelled => Some(format!("the turn at {} was cancelled", flow.node)),
        TurnEndReason::Blocked => Some(format!(
            "the turn at {} was blocked: {}",
            flow.node,
            error.unwrap_or("a hook refused it")
        )),
        TurnEndReason::Failed => Some(format!(
            "the turn at {} failed: {}",
            flow.node,
            error.unwrap_or("unknown error")
        )),
    };
    if let Some(why) = why {
        announce(rt, &flow.name, stopped(&why), flow.moves);
        return;
    }
    let is_decision = flow
        .graph
        .node(&flow.node)
        .is_some_and(|n| n.kind == FlowNodeKind::Decision);
    if !is_decision {
        let next = flow
            .graph
            .outgoing(&flow.node)
            .next()
            .map(|edge| edge.to.clone());
        match next {
            Some(next) => enter(rt, flow.name, flow.graph, next, None, flow.moves, None),
            None => {
                let why = format!("node {} has no outgoing edge", flow.node);
                announce(rt, &flow.name, stopped(&why), flow.moves);
            }
        }
        return;
    }
    let reply = reply_text(rt, prompt_id);
    let choice = parse_choice(&reply);
    let next = choice
        .as_deref()
        .and_then(|c| flow.graph.follow(&flow.node, c))
        .map(str::to_owned);
    if let Some(next) = next {
        enter(rt, flow.name, flow.graph, next, choice, flow.moves, None);
        return;
    }
    let options = flow.graph.choices(&flow.node).join(", ");
    if flow.asked > MAX_REASKS {
        let got = choice.map_or_else(
            || "no <choice>".to_owned(),
            |c| format!("<choice>{c}</choice>"),
        );
        let why = format!(
            "the reply at {} named no branch after {} tries (got {got}; branches: {options})",
            flow.node, flow.asked
        );
        announce(rt, &flow.name, stopped(&why), flow.moves);
        return;
    }
    flow.asked += 1;
    let state = FlowState::Reasked {
        node: flow.node.clone(),
        attempt: flow.asked,
    };
    if !announce(rt, &flow.name, state, flow.moves) {
        return;
    }
    flow.prompt_id = rec::new_id("msg_");
    queue_prompt(rt, flow, true);
}

/// Its next prompt was dropped from the queue (`Op::Cancel` with `queued`).
pub fn cancelled(rt: &Runtime, flow: &ActiveFlow) {
    let why = format!("its prompt at {} was cancelled", flow.node);
    announce(rt, &flow.name, stopped(&why), flow.moves);
}

/// On resume: a flow the journal shows started but not over was cut off with the process.
/// It is reported (and journaled as stopped) rather than continued, since the turn it was in
/// may have half-run.
pub fn report_interrupted(rt: &Runtime, last: Option<&FlowUpdate>) {
    let Some(last) = last.filter(|u| !u.state.is_over()) else {
        return;
    };
    let why = format!(
        "the previous kimi-rs process ended during the flow; run /flow:{} to start it again",
        last.name
    );
    let update = FlowUpdate {
        name: last.name.clone(),
        state: stopped(&why),
        moves: last.moves,
    };
    if rt.commit(vec![RecordPayload::FlowUpdate(update.clone())]) {
        rt.emit(Event::Warning {
            message: update.describe(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kimi_protocol::flow::{FlowEdge, FlowNode};

    fn decision_flow() -> ActiveFlow {
        let node = |id: &str, label: &str, kind| FlowNode {
            id: id.to_owned(),
            label: label.to_owned(),
            kind,
        };
        let edge = |from: &str, to: &str, label: &str| FlowEdge {
            from: from.to_owned(),
            to: to.to_owned(),
            label: Some(label.to_owned()),
        };
        ActiveFlow {
            name: "f".to_owned(),
            graph: FlowGraph {
                nodes: vec![
                    node("S", "BEGIN", FlowNodeKind::Begin),
                    node("Q", "Green?", FlowNodeKind::Decision),
                    node("E", "END", FlowNodeKind::End),
                ],
                edges: vec![
                    edge("S", "Q", "x"),
                    edge("Q", "E", "yes"),
                    edge("Q", "Q", "no"),
                ],
                begin: "S".to_owned(),
                end: "E".to_owned(),
            },
            node: "Q".to_owned(),
            prompt_id: "p".to_owned(),
            moves: 1,
            asked: 1,
        }
    }

    #[test]
    fn decision_prompts_list_the_branches_and_nudge_after_a_miss() {
        let flow = decision_flow();
        assert_eq!(
            node_prompt(&flow, false),
            "Green?\n\nAvailable branches:\n- yes\n- no\n\nReply with a choice using <choice>...</choice>."
        );
        assert!(node_prompt(&flow, true).ends_with(
            "Your last response did not include a valid choice. Reply with one of the choices using <choice>...</choice>."
        ));
    }
}
