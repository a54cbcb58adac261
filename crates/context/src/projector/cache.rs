//! The normal projection of a history that grows at its end, at a cost proportional to what
//! changed since the last request rather than to the whole history (issue 20: flat per-step
//! cost). The projected messages are shared (`Arc`), so a request built from them copies
//! pointers, not the conversation.
//!
//! The cache keeps the output of the longest head of history that ended at a checkpoint of the
//! pairing pass (every call there answered or closed, no prompt open for merging: see
//! `pairing::project_tail`), and projects only the rest. Whoever owns the history reports each
//! change with [`ProjectionCache::invalidate`]; a change inside the head drops it.

use std::sync::{Arc, Mutex, PoisonError};

use kimi_protocol::Message;

use super::{Anomaly, ProjectionPolicy, pairing, project_with};

/// A projection whose messages are shared with the cache (and with earlier requests).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SharedProjection {
    pub messages: Vec<Arc<Message>>,
    pub anomalies: Vec<Anomaly>,
    /// As [`super::Projection::media_replaced`].
    pub media_replaced: usize,
}

impl SharedProjection {
    /// The messages as owned values (tests, callers that edit them).
    pub fn to_messages(&self) -> Vec<Message> {
        self.messages.iter().map(|m| Message::clone(m)).collect()
    }
}

/// The cached head: `history[..history]` projects to `messages` and `anomalies`.
#[derive(Default)]
pub(super) struct Head {
    pub(super) history: usize,
    messages: Vec<Arc<Message>>,
    anomalies: Vec<Anomaly>,
}

/// See the module docs. It is a cache, not state: clones start empty and two caches always
/// compare equal.
#[derive(Default)]
pub struct ProjectionCache(pub(super) Mutex<Head>);

impl ProjectionCache {
    /// `history[from..]` changed (or went away): forget a head that reaches into it.
    pub fn invalidate(&mut self, from: usize) {
        let head = self.0.get_mut().unwrap_or_else(PoisonError::into_inner);
        if from < head.history {
            *head = Head::default();
        }
    }

    /// [`project_with`] of `history`, with shared messages. The default policy (what every
    /// request starts with) is served incrementally; the strict and media policies, used only
    /// to resend after a rejection, project the whole history.
    pub fn project_with(&self, history: &[Message], policy: &ProjectionPolicy) -> SharedProjection {
        if *policy != ProjectionPolicy::default() {
            let full = project_with(history, policy);
            return SharedProjection {
                messages: full.messages.into_iter().map(Arc::new).collect(),
                anomalies: full.anomalies,
                media_replaced: full.media_replaced,
            };
        }
        // A poisoned lock only means a panic mid-update; start over rather than trust it.
        let mut head = match self.0.lock() {
            Ok(head) => head,
            Err(poisoned) => {
                let mut head = poisoned.into_inner();
                *head = Head::default();
                head
            }
        };
        if head.history > history.len() {
            // Shorter than the head without an invalidation: the owner broke the contract;
            // the full projection is still right.
            *head = Head::default();
        }
        let start = head.history;
        let known_anomalies = head.anomalies.len();
        let mut anomalies = head.anomalies.clone();
        let tail = history.get(start..).unwrap_or_default();
        let (projected, checkpoint) = pairing::project_tail(tail, start > 0, &mut anomalies);
        let tail: Vec<Arc<Message>> = projected.messages.into_iter().map(Arc::new).collect();
        let mut messages = Vec::with_capacity(head.messages.len() + tail.len());
        messages.extend(head.messages.iter().cloned());
        messages.extend(tail.iter().cloned());
        if let Some(checkpoint) = checkpoint
            && checkpoint.history > 0
            && let Some(new_messages) = tail.get(..checkpoint.messages)
            && let Some(new_anomalies) = anomalies.get(known_anomalies..checkpoint.anomalies)
        {
            head.history = start + checkpoint.history;
            head.messages.extend(new_messages.iter().cloned());
            head.anomalies.extend_from_slice(new_anomalies);
        }
        SharedProjection {
            messages,
            anomalies,
            media_replaced: 0,
        }
    }
}

impl Clone for ProjectionCache {
    fn clone(&self) -> Self {
        ProjectionCache::default()
    }
}

impl PartialEq for ProjectionCache {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for ProjectionCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProjectionCache")
    }
}
