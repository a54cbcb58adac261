//! When a resend switches projection policies (core.md §b.8): a rejected request is classified,
//! and the policy escalates one step at a time (media degraded → media stripped; strict
//! structure) before the error is given up on. The llm crate maps provider errors into
//! [`RequestErrorClass`].

use kimi_protocol::Message;

use super::{MediaPolicy, ProjectionPolicy, StructurePolicy, media_snapshot};

/// What a failed request's error means for projection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestErrorClass {
    /// The request was cancelled; never retried with another policy.
    Aborted,
    /// The context window is exceeded; compaction handles it, not projection.
    ContextOverflow,
    /// HTTP 413 with a "too large" message: the body (usually media) is too big.
    RequestTooLarge,
    /// The provider could not read an image (format not supported, invalid base64 data).
    ImageFormat,
    /// A structure complaint strict projection repairs: tool_use/tool_result adjacency, roles
    /// not alternating, first message not from the user, empty text blocks, duplicate ids.
    RecoverableStructure,
    /// Anything else.
    Other,
}

/// The policy to resend with after `error`, or `None` when the error is not one projection can
/// fix (the caller rethrows it). `history` is what the failed request was projected from; it is
/// needed to snapshot the media to strip.
pub fn next_projection_policy_for_error(
    current: &ProjectionPolicy,
    error: RequestErrorClass,
    history: &[Message],
) -> Option<ProjectionPolicy> {
    let with_media = |media| ProjectionPolicy {
        structure: current.structure,
        media,
    };
    match error {
        RequestErrorClass::Aborted
        | RequestErrorClass::ContextOverflow
        | RequestErrorClass::Other => None,
        RequestErrorClass::RequestTooLarge => match current.media {
            MediaPolicy::Keep => Some(with_media(MediaPolicy::Degraded)),
            MediaPolicy::Degraded => Some(with_media(MediaPolicy::Strip(media_snapshot(history)))),
            MediaPolicy::Strip(_) => None,
        },
        RequestErrorClass::ImageFormat => match current.media {
            MediaPolicy::Keep | MediaPolicy::Degraded => {
                Some(with_media(MediaPolicy::Strip(media_snapshot(history))))
            }
            MediaPolicy::Strip(_) => None,
        },
        RequestErrorClass::RecoverableStructure => match current.structure {
            StructurePolicy::Normal => Some(ProjectionPolicy {
                structure: StructurePolicy::Strict,
                media: current.media.clone(),
            }),
            StructurePolicy::Strict => None,
        },
    }
}

/// The media policy a turn's requests start with. A turn that needed degraded or stripped
/// media once keeps it for its later steps; state for older turns is dropped when a newer turn
/// records. Operation requests (e.g. the compaction summary) start from the default instead.
#[derive(Debug, Clone, Default)]
pub struct TurnProjectionMemory {
    turn: Option<u64>,
    degraded: bool,
    snapshot: Option<super::MediaSnapshot>,
}

impl TurnProjectionMemory {
    /// The policy the next request of `turn` starts with.
    pub fn initial_policy(&self, turn: u64) -> ProjectionPolicy {
        if self.turn != Some(turn) {
            return ProjectionPolicy::default();
        }
        let media = match (&self.snapshot, self.degraded) {
            (Some(snapshot), _) => MediaPolicy::Strip(snapshot.clone()),
            (None, true) => MediaPolicy::Degraded,
            (None, false) => MediaPolicy::Keep,
        };
        ProjectionPolicy {
            structure: StructurePolicy::Normal,
            media,
        }
    }

    /// Remember the media policy a request of `turn` escalated to.
    pub fn record(&mut self, turn: u64, policy: &ProjectionPolicy) {
        if self.turn.is_none_or(|t| t < turn) {
            *self = TurnProjectionMemory {
                turn: Some(turn),
                degraded: false,
                snapshot: None,
            };
        } else if self.turn != Some(turn) {
            // A request of an older turn finishing late must not overwrite the newer turn.
            return;
        }
        match &policy.media {
            MediaPolicy::Keep => {}
            MediaPolicy::Degraded => self.degraded = true,
            MediaPolicy::Strip(snapshot) => self.snapshot = Some(snapshot.clone()),
        }
    }
}
