//! When a repair is worth a warning (core.md §b.6): trailing synthesized results are normal, any
//! other anomaly is notable; each distinct set of defects is reported once, and again only after
//! a clean projection in between.

use super::Anomaly;

/// How many tool-call ids a report names.
const REPORTED_IDS: usize = 5;

/// What to log (and send as `context_projection_repaired` telemetry) for one projection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepairReport {
    /// Sorted `kind:toolCallId` / `kind` entries joined by `|`.
    pub signature: String,
    /// Notable anomalies per kind, in first-seen order.
    pub counts: Vec<(&'static str, usize)>,
    /// Up to five distinct tool-call ids involved, in first-seen order.
    pub tool_call_ids: Vec<String>,
}

impl RepairReport {
    pub fn message(&self) -> String {
        let counts = self
            .counts
            .iter()
            .map(|(kind, n)| format!("{kind}={n}"))
            .collect::<Vec<_>>()
            .join(", ");
        let ids = self.tool_call_ids.join(", ");
        if ids.is_empty() {
            format!("repaired the request to keep it wire-valid ({counts})")
        } else {
            format!("repaired the request to keep it wire-valid ({counts}; tool calls: {ids})")
        }
    }
}

/// Per-agent memory of the last reported defect signature.
#[derive(Debug, Clone, Default)]
pub struct RepairReporter {
    last_signature: Option<String>,
}

impl RepairReporter {
    /// Look at one projection's anomalies; `Some` when a warning should be logged now.
    pub fn observe(&mut self, anomalies: &[Anomaly]) -> Option<RepairReport> {
        let notable: Vec<&Anomaly> = anomalies.iter().filter(|a| a.is_notable()).collect();
        if notable.is_empty() {
            self.last_signature = None;
            return None;
        }
        let mut keys: Vec<String> = notable
            .iter()
            .map(|a| match a.tool_call_id() {
                Some(id) => format!("{}:{id}", a.kind()),
                None => a.kind().to_owned(),
            })
            .collect();
        keys.sort();
        let signature = keys.join("|");
        if self.last_signature.as_deref() == Some(signature.as_str()) {
            return None;
        }
        self.last_signature = Some(signature.clone());

        let mut counts: Vec<(&'static str, usize)> = Vec::new();
        let mut tool_call_ids: Vec<String> = Vec::new();
        for anomaly in notable {
            match counts.iter_mut().find(|(k, _)| *k == anomaly.kind()) {
                Some((_, n)) => *n += 1,
                None => counts.push((anomaly.kind(), 1)),
            }
            if let Some(id) = anomaly.tool_call_id()
                && tool_call_ids.len() < REPORTED_IDS
                && !tool_call_ids.iter().any(|t| t == id)
            {
                tool_call_ids.push(id.to_owned());
            }
        }
        Some(RepairReport {
            signature,
            counts,
            tool_call_ids,
        })
    }
}
