//! Flow skills' shared vocabulary: the flowchart a `type: flow` skill carries (parsed from its
//! mermaid or d2 block by `kimi_skills`), the `flow.update` journal record and the event front
//! ends show while `/flow:<name>` walks it node by node.
//!
//! A chart has one `BEGIN` and one `END` node (matched by label, any case); every other node's
//! label is a prompt. A node with several outgoing edges is a decision: its edges carry distinct
//! labels and the model picks one by ending its reply with `<choice>LABEL</choice>`.

use serde::{Deserialize, Serialize};

/// The `system_trigger` origin name of a flow's node prompts.
pub const NODE_ORIGIN: &str = "flow";

/// What a node is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlowNodeKind {
    Begin,
    End,
    /// Its label is sent as a prompt; the flow moves along its only edge.
    Task,
    /// Its label is sent with the branch labels; the reply's `<choice>` picks the edge.
    Decision,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowNode {
    pub id: String,
    pub label: String,
    pub kind: FlowNodeKind,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowEdge {
    pub from: String,
    pub to: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

/// A validated flowchart: `begin` reaches `end`, and every decision's edges are labelled
/// distinctly (the parser checks both before handing one out).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowGraph {
    /// In the order the chart first mentions them.
    pub nodes: Vec<FlowNode>,
    /// In the chart's order, so a node's first edge is the one written first.
    pub edges: Vec<FlowEdge>,
    pub begin: String,
    pub end: String,
}

impl FlowGraph {
    pub fn node(&self, id: &str) -> Option<&FlowNode> {
        self.nodes.iter().find(|n| n.id == id)
    }

    pub fn outgoing<'a>(&'a self, id: &'a str) -> impl Iterator<Item = &'a FlowEdge> + 'a {
        self.edges.iter().filter(move |e| e.from == id)
    }

    /// The node `edges` of a decision lead to for `choice`: the label as written, else the
    /// only label equal to it ignoring case and surrounding spaces.
    pub fn follow<'a>(&'a self, from: &'a str, choice: &str) -> Option<&'a str> {
        let choice = choice.trim();
        let edges: Vec<&FlowEdge> = self.outgoing(from).collect();
        if let Some(edge) = edges.iter().find(|e| e.label.as_deref() == Some(choice)) {
            return Some(&edge.to);
        }
        let mut loose = edges.iter().filter(|e| {
            e.label
                .as_deref()
                .is_some_and(|l| l.trim().eq_ignore_ascii_case(choice))
        });
        match (loose.next(), loose.next()) {
            (Some(edge), None) => Some(&edge.to),
            _ => None,
        }
    }

    /// The labels a decision offers, in the chart's order.
    pub fn choices(&self, from: &str) -> Vec<String> {
        self.outgoing(from)
            .filter_map(|e| e.label.clone())
            .collect()
    }
}

/// The last `<choice>…</choice>` of a reply, trimmed (the model may think aloud before it).
pub fn parse_choice(text: &str) -> Option<String> {
    let mut last = None;
    let mut from = 0;
    while let Some(close) = text[from..].find("</choice>").map(|at| from + at) {
        if let Some(open) = text[from..close].rfind("<choice>") {
            last = Some(
                text[from + open + "<choice>".len()..close]
                    .trim()
                    .to_owned(),
            );
        }
        from = close + "</choice>".len();
    }
    last
}

/// How a flow run stands, as journaled (`flow.update`) and announced (`Event::FlowUpdated`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FlowState {
    /// `/flow:<name>` was accepted; the first node's prompt follows.
    Started,
    /// A node's prompt was sent (`choice` = the branch that led here, if any).
    Entered {
        node: String,
        label: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        choice: Option<String>,
    },
    /// A decision's reply named no branch; its prompt is sent again (`attempt` counts from 2).
    Reasked { node: String, attempt: u32 },
    /// `END` was reached.
    Finished,
    /// The run stopped before `END`: a turn failed or was cancelled, no branch was chosen,
    /// the move limit was reached, or the process ended mid-flow (found on resume).
    Stopped { reason: String },
}

impl FlowState {
    pub fn is_over(&self) -> bool {
        matches!(self, FlowState::Finished | FlowState::Stopped { .. })
    }
}

/// `flow.update`: one step of a flow run. `moves` counts the node prompts sent so far.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FlowUpdate {
    /// The skill's name (`/flow:<name>`).
    pub name: String,
    pub state: FlowState,
    #[serde(default)]
    pub moves: u32,
}

impl FlowUpdate {
    /// How the request that started a flow ends, given this last update and how the last
    /// turn ended: `finished` completes it; `stopped` fails it with its line (or cancels it,
    /// when the turn it stopped on was cancelled).
    pub fn outcome(
        &self,
        last_turn: crate::ops::TurnEndReason,
    ) -> (crate::ops::TurnEndReason, Option<String>) {
        use crate::ops::TurnEndReason;
        match &self.state {
            FlowState::Finished => (TurnEndReason::Completed, None),
            _ if last_turn == TurnEndReason::Cancelled => (TurnEndReason::Cancelled, None),
            _ => (TurnEndReason::Failed, Some(self.describe())),
        }
    }

    /// One line for a transcript or stderr.
    pub fn describe(&self) -> String {
        let name = &self.name;
        match &self.state {
            FlowState::Started => format!("flow {name}: started"),
            FlowState::Entered {
                node,
                label,
                choice,
            } => {
                let label = first_line(label);
                match choice {
                    Some(choice) => format!("flow {name}: chose {choice} → {node}: {label}"),
                    None => format!("flow {name}: {node}: {label}"),
                }
            }
            FlowState::Reasked { node, attempt } => format!(
                "flow {name}: the reply at {node} named no branch; asking again (attempt {attempt})"
            ),
            FlowState::Finished => format!("flow {name}: finished after {} moves", self.moves),
            FlowState::Stopped { reason } => format!("flow {name}: stopped: {reason}"),
        }
    }
}

fn first_line(text: &str) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let mut out: String = line.trim().chars().take(80).collect();
    if line.trim().chars().count() > 80 || text.trim().lines().count() > 1 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph() -> FlowGraph {
        let node = |id: &str, kind| FlowNode {
            id: id.to_owned(),
            label: id.to_owned(),
            kind,
        };
        let edge = |from: &str, to: &str, label: Option<&str>| FlowEdge {
            from: from.to_owned(),
            to: to.to_owned(),
            label: label.map(str::to_owned),
        };
        FlowGraph {
            nodes: vec![
                node("B", FlowNodeKind::Begin),
                node("Q", FlowNodeKind::Decision),
                node("E", FlowNodeKind::End),
            ],
            edges: vec![
                edge("B", "Q", None),
                edge("Q", "Q", Some("again")),
                edge("Q", "E", Some("Done")),
            ],
            begin: "B".to_owned(),
            end: "E".to_owned(),
        }
    }

    #[test]
    fn choices_follow_exact_then_loose_labels() {
        let g = graph();
        assert_eq!(g.follow("Q", "Done"), Some("E"));
        assert_eq!(g.follow("Q", " done "), Some("E"));
        assert_eq!(g.follow("Q", "again"), Some("Q"));
        assert_eq!(g.follow("Q", "nope"), None);
        assert_eq!(g.choices("Q"), vec!["again", "Done"]);
    }

    #[test]
    fn the_last_well_formed_choice_wins() {
        let table = [
            ("<choice>yes</choice>", Some("yes")),
            (
                "maybe <choice>yes</choice> then <choice> no </choice>",
                Some("no"),
            ),
            ("<choice>yes", None),
            ("no tag", None),
            ("<choice><choice>x</choice>", Some("x")),
            ("<choice></choice>", Some("")),
        ];
        for (text, want) in table {
            assert_eq!(parse_choice(text).as_deref(), want, "{text}");
        }
    }

    #[test]
    fn updates_round_trip_with_their_state_inline() {
        let update = FlowUpdate {
            name: "review".to_owned(),
            state: FlowState::Entered {
                node: "A".to_owned(),
                label: "Run the tests\nand more".to_owned(),
                choice: Some("yes".to_owned()),
            },
            moves: 2,
        };
        let json = serde_json::to_value(&update).unwrap();
        assert_eq!(json["state"]["kind"], "entered");
        assert_eq!(json["state"]["node"], "A");
        let back: FlowUpdate = serde_json::from_value(json).unwrap();
        assert_eq!(back, update);
        assert_eq!(
            update.describe(),
            "flow review: chose yes → A: Run the tests…"
        );
    }
}
