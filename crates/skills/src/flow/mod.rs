//! Flow skills' charts: the mermaid and d2 flowchart subsets a `type: flow` skill may carry,
//! parsed into a validated [`FlowGraph`] for `/flow:<name>` to walk (see `kimi_protocol::flow`
//! for the walk's rules).
//!
//! Both parsers only collect nodes and edges; [`GraphBuilder`] does what they share — node
//! kinds (`BEGIN`/`END` by label, decisions by their number of edges), conflicting labels and
//! the checks that make a walk possible, each error naming its line.

mod d2;
mod mermaid;

use kimi_protocol::flow::{FlowEdge, FlowGraph, FlowNode, FlowNodeKind};

pub use d2::parse_d2;
pub use mermaid::parse_mermaid;

/// Why a chart cannot be walked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FlowError {
    /// A line the parser could not read.
    #[error("line {line}: {message}")]
    Parse { line: usize, message: String },
    /// The chart reads but cannot be walked from BEGIN to END.
    #[error("{0}")]
    Invalid(String),
}

pub(crate) fn parse_error(line: usize, message: impl Into<String>) -> FlowError {
    FlowError::Parse {
        line,
        message: message.into(),
    }
}

/// Nodes and edges in the order the chart mentions them.
#[derive(Default)]
pub(crate) struct GraphBuilder {
    /// (id, label, written explicitly)
    nodes: Vec<(String, String, bool)>,
    edges: Vec<FlowEdge>,
}

impl GraphBuilder {
    /// Mention node `id`, with its label when the chart writes one here.
    pub(crate) fn node(
        &mut self,
        id: &str,
        label: Option<&str>,
        line: usize,
    ) -> Result<(), FlowError> {
        let label = label.map(str::trim);
        if label == Some("") {
            return Err(parse_error(
                line,
                format!("node \"{id}\" has an empty label"),
            ));
        }
        match self.nodes.iter_mut().find(|(known, _, _)| known == id) {
            None => self.nodes.push((
                id.to_owned(),
                label.unwrap_or(id).to_owned(),
                label.is_some(),
            )),
            Some((_, known, explicit)) => match label {
                None => {}
                Some(label) if label == known => *explicit = true,
                Some(label) if !*explicit => {
                    *known = label.to_owned();
                    *explicit = true;
                }
                Some(label) => {
                    return Err(parse_error(
                        line,
                        format!(
                            "node \"{id}\" is labelled twice (\"{known}\" and \"{label}\"); give one of them another id"
                        ),
                    ));
                }
            },
        }
        Ok(())
    }

    pub(crate) fn edge(&mut self, from: &str, to: &str, label: Option<&str>) {
        let label = label.map(str::trim).filter(|l| !l.is_empty());
        self.edges.push(FlowEdge {
            from: from.to_owned(),
            to: to.to_owned(),
            label: label.map(str::to_owned),
        });
    }

    /// The graph, once it can be walked from BEGIN to END.
    pub(crate) fn finish(self) -> Result<FlowGraph, FlowError> {
        let kind_of = |id: &str, label: &str| {
            let out = self.edges.iter().filter(|e| e.from == id).count();
            match label.trim().to_ascii_lowercase().as_str() {
                "begin" => FlowNodeKind::Begin,
                "end" => FlowNodeKind::End,
                _ if out > 1 => FlowNodeKind::Decision,
                _ => FlowNodeKind::Task,
            }
        };
        let nodes: Vec<FlowNode> = self
            .nodes
            .iter()
            .map(|(id, label, _)| FlowNode {
                id: id.clone(),
                label: label.clone(),
                kind: kind_of(id, label),
            })
            .collect();
        let only = |kind: FlowNodeKind, name: &str| -> Result<String, FlowError> {
            let found: Vec<&FlowNode> = nodes.iter().filter(|n| n.kind == kind).collect();
            match found.as_slice() {
                [one] => Ok(one.id.clone()),
                [] => Err(FlowError::Invalid(format!(
                    "the chart has no {name} node; label one node {name} (for example `S([{name}])`)"
                ))),
                many => Err(FlowError::Invalid(format!(
                    "the chart has {} {name} nodes ({}); keep exactly one",
                    many.len(),
                    many.iter()
                        .map(|n| n.id.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))),
            }
        };
        let begin = only(FlowNodeKind::Begin, "BEGIN")?;
        let end = only(FlowNodeKind::End, "END")?;
        let graph = FlowGraph {
            nodes,
            edges: self.edges,
            begin,
            end,
        };
        check_walkable(&graph)?;
        Ok(graph)
    }
}

/// BEGIN has one way out, END none; every node BEGIN reaches has a way on, and a decision's
/// branches are labelled distinctly; END is reachable.
fn check_walkable(graph: &FlowGraph) -> Result<(), FlowError> {
    let out = |id: &str| graph.outgoing(id).count();
    if out(&graph.begin) != 1 {
        return Err(FlowError::Invalid(format!(
            "BEGIN (\"{}\") must have exactly one outgoing edge, found {}",
            graph.begin,
            out(&graph.begin)
        )));
    }
    if out(&graph.end) != 0 {
        return Err(FlowError::Invalid(format!(
            "END (\"{}\") cannot have outgoing edges",
            graph.end
        )));
    }
    let mut seen = vec![graph.begin.clone()];
    let mut todo = vec![graph.begin.clone()];
    while let Some(id) = todo.pop() {
        let Some(node) = graph.node(&id) else {
            continue;
        };
        let edges: Vec<&FlowEdge> = graph.outgoing(&id).collect();
        if node.kind != FlowNodeKind::End && edges.is_empty() {
            return Err(FlowError::Invalid(format!(
                "node \"{id}\" has no outgoing edge; connect it to another node or to END"
            )));
        }
        if node.kind == FlowNodeKind::Decision {
            let mut labels: Vec<&str> = Vec::new();
            for edge in &edges {
                let Some(label) = edge.label.as_deref() else {
                    return Err(FlowError::Invalid(format!(
                        "node \"{id}\" branches to \"{}\" without a label; label every branch of a decision (`{id} -->|yes| {}`)",
                        edge.to, edge.to
                    )));
                };
                if labels.iter().any(|l| l.eq_ignore_ascii_case(label)) {
                    return Err(FlowError::Invalid(format!(
                        "node \"{id}\" has two branches labelled \"{label}\"; labels must differ"
                    )));
                }
                labels.push(label);
            }
        }
        for edge in edges {
            if !seen.contains(&edge.to) {
                seen.push(edge.to.clone());
                todo.push(edge.to.clone());
            }
        }
    }
    if !seen.contains(&graph.end) {
        return Err(FlowError::Invalid(format!(
            "END (\"{}\") cannot be reached from BEGIN",
            graph.end
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
