//! The projector (core.md §b): turns an agent's history into a provider-valid message list and
//! reports every repair it made as an ordered list of anomalies. It never mutates history.
//!
//! `project` is what every request uses; `project_strict` adds the passes a request falls back to
//! after a provider rejected the structure (§b.5, §b.8); media policies replace old or
//! incompatible media with text markers (§b.7). The work is one pass over history plus one pass
//! over the blocks it produced, so cost grows linearly with history length; [`ProjectionCache`]
//! serves a growing history's requests at the cost of what changed since the last one.

mod cache;
mod media;
mod pairing;
mod policy;
mod report;
mod strict;

use kimi_protocol::{Message, Role};

pub use cache::{ProjectionCache, SharedProjection};
pub use media::{
    AUDIO_DEGRADED, AUDIO_STRIPPED, IMAGE_DEGRADED, IMAGE_STRIPPED, MEDIA_KEPT_WHEN_DEGRADED,
    MediaIdentity, MediaSnapshot, VIDEO_DEGRADED, VIDEO_STRIPPED, media_snapshot,
};
pub use policy::{RequestErrorClass, TurnProjectionMemory, next_projection_policy_for_error};
pub use report::{RepairReport, RepairReporter};

/// Text of the tool result the projector synthesizes for a call whose result is not in history.
/// It must never read like success: the model is told the outcome is unknown.
pub const TOOL_RESULT_UNAVAILABLE: &str = "Tool result is not available in the current context. Do not assume the tool completed successfully.";

/// One repair the projector made (core.md §b.6). The order of a projection's anomalies is the
/// order in which the repairs happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Anomaly {
    /// A result was found after foreign content and moved back behind its call.
    ToolResultReordered { tool_call_id: String },
    /// A call had no result; the "not available" placeholder was sent. `trailing` marks a call
    /// of the last exchange (normally still in flight), which is not worth a warning.
    ToolResultSynthesized {
        tool_call_id: String,
        trailing: bool,
    },
    /// A result whose call is not open (never made, or already answered) was dropped.
    OrphanToolResultDropped { tool_call_id: String },
    /// Strict: a call id already used by an earlier assistant message was removed.
    DuplicateToolCallDropped { tool_call_id: String },
    /// Strict: a second result for the same call id was removed.
    DuplicateToolResultDropped { tool_call_id: String },
    /// Strict: a message before the first user message was removed.
    LeadingNonUserDropped { role: Role },
    /// Strict: two adjacent assistant messages were merged into one.
    ConsecutiveAssistantsMerged,
    /// A whitespace-only text part was removed.
    WhitespaceTextDropped { role: Role },
    /// A message with nothing but blank parts was removed.
    VacuousMessageDropped { role: Role },
}

impl Anomaly {
    /// The exact anomaly name of the reference (used in logs and conformance output).
    pub fn kind(&self) -> &'static str {
        match self {
            Anomaly::ToolResultReordered { .. } => "tool_result_reordered",
            Anomaly::ToolResultSynthesized { .. } => "tool_result_synthesized",
            Anomaly::OrphanToolResultDropped { .. } => "orphan_tool_result_dropped",
            Anomaly::DuplicateToolCallDropped { .. } => "duplicate_tool_call_dropped",
            Anomaly::DuplicateToolResultDropped { .. } => "duplicate_tool_result_dropped",
            Anomaly::LeadingNonUserDropped { .. } => "leading_non_user_dropped",
            Anomaly::ConsecutiveAssistantsMerged => "consecutive_assistants_merged",
            Anomaly::WhitespaceTextDropped { .. } => "whitespace_text_dropped",
            Anomaly::VacuousMessageDropped { .. } => "vacuous_message_dropped",
        }
    }

    pub fn tool_call_id(&self) -> Option<&str> {
        match self {
            Anomaly::ToolResultReordered { tool_call_id }
            | Anomaly::ToolResultSynthesized { tool_call_id, .. }
            | Anomaly::OrphanToolResultDropped { tool_call_id }
            | Anomaly::DuplicateToolCallDropped { tool_call_id }
            | Anomaly::DuplicateToolResultDropped { tool_call_id } => Some(tool_call_id),
            Anomaly::LeadingNonUserDropped { .. }
            | Anomaly::ConsecutiveAssistantsMerged
            | Anomaly::WhitespaceTextDropped { .. }
            | Anomaly::VacuousMessageDropped { .. } => None,
        }
    }

    pub fn role(&self) -> Option<Role> {
        match self {
            Anomaly::LeadingNonUserDropped { role }
            | Anomaly::WhitespaceTextDropped { role }
            | Anomaly::VacuousMessageDropped { role } => Some(*role),
            Anomaly::ToolResultReordered { .. }
            | Anomaly::ToolResultSynthesized { .. }
            | Anomaly::OrphanToolResultDropped { .. }
            | Anomaly::DuplicateToolCallDropped { .. }
            | Anomaly::DuplicateToolResultDropped { .. }
            | Anomaly::ConsecutiveAssistantsMerged => None,
        }
    }

    /// An unanswered call at the tail is normal (the tool is still running); everything else
    /// means history was damaged and deserves one warning.
    pub fn is_notable(&self) -> bool {
        !matches!(self, Anomaly::ToolResultSynthesized { trailing: true, .. })
    }
}

/// Which structural repairs run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StructurePolicy {
    /// The normal projection (§b.2–§b.4).
    #[default]
    Normal,
    /// Normal plus call/result dedupe, assistant merging and leading non-user removal (§b.5).
    Strict,
}

/// What happens to media parts (§b.7).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum MediaPolicy {
    #[default]
    Keep,
    /// Keep the most recent media parts, replace older ones with a text marker.
    Degraded,
    /// Replace the media a provider rejected (the snapshot) with a compatibility marker.
    Strip(MediaSnapshot),
}

/// How one request is projected. The default is what a turn starts with.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProjectionPolicy {
    pub structure: StructurePolicy,
    pub media: MediaPolicy,
}

impl ProjectionPolicy {
    pub fn strict() -> Self {
        ProjectionPolicy {
            structure: StructurePolicy::Strict,
            media: MediaPolicy::Keep,
        }
    }

    /// The name recorded in the `llm.request` record's `projection` field, `None` for the
    /// default projection.
    pub fn name(&self) -> Option<&'static str> {
        match (self.structure, &self.media) {
            (StructurePolicy::Normal, MediaPolicy::Keep) => None,
            (StructurePolicy::Strict, MediaPolicy::Keep) => Some("strict"),
            (StructurePolicy::Normal, MediaPolicy::Degraded) => Some("media-degraded"),
            (StructurePolicy::Normal, MediaPolicy::Strip(_)) => Some("media-stripped"),
            (StructurePolicy::Strict, MediaPolicy::Degraded) => Some("strict-media-degraded"),
            (StructurePolicy::Strict, MediaPolicy::Strip(_)) => Some("strict-media-stripped"),
        }
    }
}

/// The provider-facing messages and the repairs made to get them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Projection {
    pub messages: Vec<Message>,
    pub anomalies: Vec<Anomaly>,
    /// How many media parts the media policy replaced with markers (0 without a policy); a
    /// front end warns when a resend actually dropped media.
    pub media_replaced: usize,
}

/// The normal projection (§b.2–§b.4).
pub fn project(history: &[Message]) -> Projection {
    project_with(history, &ProjectionPolicy::default())
}

/// The strict projection (§b.5), for resending after a provider rejected the structure.
pub fn project_strict(history: &[Message]) -> Projection {
    project_with(history, &ProjectionPolicy::strict())
}

/// Project with an explicit policy: structural projection first, then media.
pub fn project_with(history: &[Message], policy: &ProjectionPolicy) -> Projection {
    let mut anomalies = Vec::new();
    let mut projected = pairing::project_blocks(history, &mut anomalies);
    match policy.structure {
        StructurePolicy::Normal => {}
        StructurePolicy::Strict => strict::apply(&mut projected, &mut anomalies),
    }
    let mut messages = projected.messages;
    let media_replaced = match &policy.media {
        MediaPolicy::Keep => 0,
        MediaPolicy::Degraded => media::degrade(&mut messages),
        MediaPolicy::Strip(snapshot) => media::strip(&mut messages, snapshot),
    };
    Projection {
        messages,
        anomalies,
        media_replaced,
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod cache_tests;
