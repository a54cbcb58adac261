//! Agent-unique tool-call ids (core.md §h.1). Some providers number calls per response
//! (`Bash_0` every time); everything downstream keys on the id, so a reused id is rewritten to
//! `<raw>__<n>` as it is ingested. The first occurrence of an unseen id keeps it.
//!
//! One [`ToolCallIdNormalizer`] per agent holds every id the agent has claimed; one
//! [`ResponseIds`] per model response remembers that response's assignments (so streamed deltas
//! and the final message agree) and its claims (so a failed attempt can give them back).

use std::collections::{HashMap, HashSet};

use kimi_protocol::{Message, ToolCall};

/// The ids an agent has claimed, seeded once from its restored history.
#[derive(Debug, Clone, Default)]
pub struct ToolCallIdNormalizer {
    seen: HashSet<String>,
    seeded: bool,
}

/// How a provider identifies a streamed call across deltas: a numeric index (OpenAI Chat,
/// Anthropic content blocks) or an item key (Responses API).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum StreamKey {
    Index(u64),
    Key(String),
}

impl From<u64> for StreamKey {
    fn from(index: u64) -> Self {
        StreamKey::Index(index)
    }
}

impl From<&str> for StreamKey {
    fn from(key: &str) -> Self {
        StreamKey::Key(key.to_owned())
    }
}

/// One rewrite, for provenance logging.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remap {
    pub raw: String,
    pub assigned: String,
}

impl ToolCallIdNormalizer {
    pub fn new() -> Self {
        ToolCallIdNormalizer::default()
    }

    /// Claim every call id and tool-result id in `history`. Only the first call has an effect:
    /// later histories are this agent's own output, already claimed as it was produced.
    pub fn seed_from(&mut self, history: &[Message]) {
        if self.seeded {
            return;
        }
        self.seeded = true;
        for message in history {
            for call in &message.tool_calls {
                self.seen.insert(call.id.clone());
            }
            if let Some(id) = &message.tool_call_id {
                self.seen.insert(id.clone());
            }
        }
    }

    pub fn is_claimed(&self, id: &str) -> bool {
        self.seen.contains(id)
    }

    /// Start normalising one model response.
    pub fn begin_response(&self) -> ResponseIds {
        ResponseIds::default()
    }

    /// Claim `raw` for its `occurrence`-th appearance in a response: the first appearance of an
    /// unclaimed id keeps it, anything else gets the first free `__n`, `n ≥ max(occurrence+1, 2)`.
    fn claim(&mut self, response: &mut ResponseIds, raw: &str, occurrence: usize) -> String {
        if occurrence == 0 && !self.seen.contains(raw) {
            self.seen.insert(raw.to_owned());
            response.claimed.push(raw.to_owned());
            return raw.to_owned();
        }
        let mut n = (occurrence + 1).max(2);
        let mut candidate = format!("{raw}__{n}");
        while self.seen.contains(&candidate) {
            n += 1;
            candidate = format!("{raw}__{n}");
        }
        self.seen.insert(candidate.clone());
        response.claimed.push(candidate.clone());
        response.remapped.push(Remap {
            raw: raw.to_owned(),
            assigned: candidate.clone(),
        });
        candidate
    }
}

/// The assignments of one model response.
#[derive(Debug, Clone, Default)]
pub struct ResponseIds {
    by_stream_key: HashMap<StreamKey, String>,
    /// For each raw id, the ids assigned to its 1st, 2nd, … occurrence in this response.
    occurrences: HashMap<String, Vec<String>>,
    claimed: Vec<String>,
    remapped: Vec<Remap>,
}

impl ResponseIds {
    /// The id for a streamed call delta. Deltas of the same call (same stream key) get the same
    /// id; a delta without a key counts as a new occurrence.
    pub fn remap_streamed(
        &mut self,
        ids: &mut ToolCallIdNormalizer,
        raw: &str,
        key: Option<StreamKey>,
    ) -> String {
        if let Some(existing) = key.as_ref().and_then(|k| self.by_stream_key.get(k)) {
            return existing.clone();
        }
        let occurrence = self.occurrences.get(raw).map_or(0, Vec::len);
        let assigned = ids.claim(self, raw, occurrence);
        self.occurrences
            .entry(raw.to_owned())
            .or_default()
            .push(assigned.clone());
        if let Some(key) = key {
            self.by_stream_key.insert(key, assigned.clone());
        }
        assigned
    }

    /// The ids for the response's final calls, in order: the n-th call with a raw id gets what
    /// that id's n-th streamed occurrence got; calls that never streamed are claimed now.
    pub fn remap_finalized(
        &mut self,
        ids: &mut ToolCallIdNormalizer,
        raw_ids: &[&str],
    ) -> Vec<String> {
        let mut seen_in_final: HashMap<&str, usize> = HashMap::new();
        raw_ids
            .iter()
            .map(|raw| {
                let occurrence = seen_in_final.entry(raw).or_insert(0);
                let nth = *occurrence;
                *occurrence += 1;
                if let Some(assigned) = self.occurrences.get(*raw).and_then(|v| v.get(nth)) {
                    return assigned.clone();
                }
                let assigned = ids.claim(self, raw, nth);
                // Remember it, so finalising the same calls again is idempotent.
                self.occurrences
                    .entry((*raw).to_owned())
                    .or_default()
                    .push(assigned.clone());
                assigned
            })
            .collect()
    }

    /// Rewrite the ids of finalized calls in place.
    pub fn apply_to_calls(&mut self, ids: &mut ToolCallIdNormalizer, calls: &mut [ToolCall]) {
        let raw: Vec<String> = calls.iter().map(|c| c.id.clone()).collect();
        let raw_refs: Vec<&str> = raw.iter().map(String::as_str).collect();
        for (call, id) in calls.iter_mut().zip(self.remap_finalized(ids, &raw_refs)) {
            call.id = id;
        }
    }

    /// Every rewrite this response made, oldest first.
    pub fn remapped(&self) -> &[Remap] {
        &self.remapped
    }

    /// The request failed: give this response's claims back so a retry re-streams the same
    /// logical calls under the same ids. Ids claimed by committed responses stay claimed.
    pub fn rollback(&mut self, ids: &mut ToolCallIdNormalizer) {
        for id in self.claimed.drain(..) {
            ids.seen.remove(&id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kimi_protocol::ContentPart;
    use pretty_assertions::assert_eq;

    #[test]
    fn deltas_of_one_call_share_an_id_and_finalize_matches_them() {
        let mut ids = ToolCallIdNormalizer::new();
        ids.seed_from(&[Message::tool_result(
            "x",
            vec![ContentPart::text("r")],
            None,
        )]);
        let mut r = ids.begin_response();
        assert_eq!(r.remap_streamed(&mut ids, "x", Some(0.into())), "x__2");
        assert_eq!(r.remap_streamed(&mut ids, "x", Some(0.into())), "x__2");
        assert_eq!(r.remap_streamed(&mut ids, "x", Some(1.into())), "x__3");
        let mut calls = vec![ToolCall::new("x", "A", None), ToolCall::new("x", "B", None)];
        r.apply_to_calls(&mut ids, &mut calls);
        assert_eq!(
            calls.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
            ["x__2", "x__3"]
        );
        assert_eq!(r.remap_finalized(&mut ids, &["x", "x"]), ["x__2", "x__3"]);
        assert_eq!(r.remapped().len(), 2);
    }

    #[test]
    fn rollback_frees_only_the_failed_responses_claims() {
        let mut ids = ToolCallIdNormalizer::new();
        let mut ok = ids.begin_response();
        ok.remap_streamed(&mut ids, "a", Some(0.into()));
        let mut failed = ids.begin_response();
        assert_eq!(failed.remap_streamed(&mut ids, "b", Some(0.into())), "b");
        failed.rollback(&mut ids);
        assert!(ids.is_claimed("a"));
        assert!(!ids.is_claimed("b"));
    }
}
