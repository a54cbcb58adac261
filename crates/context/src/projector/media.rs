//! Media policies (core.md §b.7): what a resend does with images, audio and video after a
//! provider said the request was too large or could not read a media part.

use std::collections::HashMap;

use kimi_protocol::{ContentPart, MediaUrl, Message};

/// How many of the most recent media parts a degraded projection keeps.
pub const MEDIA_KEPT_WHEN_DEGRADED: usize = 2;

pub const IMAGE_DEGRADED: &str =
    "[image omitted: dropped to fit the provider request size limit; re-read the file to view it]";
pub const AUDIO_DEGRADED: &str =
    "[audio omitted: dropped to fit the provider request size limit; re-read the file to hear it]";
pub const VIDEO_DEGRADED: &str =
    "[video omitted: dropped to fit the provider request size limit; re-read the file to view it]";
pub const IMAGE_STRIPPED: &str = "[image omitted for provider compatibility; re-read the file to view it or get conversion guidance]";
pub const AUDIO_STRIPPED: &str =
    "[audio omitted for provider compatibility; re-read the file to hear it]";
pub const VIDEO_STRIPPED: &str =
    "[video omitted for provider compatibility; re-read the file to view it]";

/// Identity of a media part: its type, its id (or "") and its URL. The same URL with another id
/// is a different part (a fresh upload), so it is not stripped.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MediaIdentity {
    pub kind: &'static str,
    pub id: String,
    pub url: String,
}

/// The media a provider rejected: every media identity in the normal projection of history at
/// the time of the rejection. Media added later is not in it and is sent again.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MediaSnapshot {
    /// URL → (type, id) pairs seen with it; keyed by URL so a lookup borrows instead of copying
    /// what may be megabytes of base64.
    by_url: HashMap<String, Vec<(&'static str, String)>>,
}

impl MediaSnapshot {
    pub fn len(&self) -> usize {
        self.by_url.values().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.by_url.is_empty()
    }

    pub fn identities(&self) -> impl Iterator<Item = MediaIdentity> + '_ {
        self.by_url.iter().flat_map(|(url, entries)| {
            entries.iter().map(move |(kind, id)| MediaIdentity {
                kind,
                id: id.clone(),
                url: url.clone(),
            })
        })
    }

    fn insert(&mut self, kind: &'static str, media: &MediaUrl) {
        let id = media.id.as_deref().unwrap_or("");
        let entries = self.by_url.entry(media.url.clone()).or_default();
        if !entries.iter().any(|(k, i)| *k == kind && i == id) {
            entries.push((kind, id.to_owned()));
        }
    }

    fn contains(&self, kind: &str, media: &MediaUrl) -> bool {
        let id = media.id.as_deref().unwrap_or("");
        self.by_url
            .get(media.url.as_str())
            .is_some_and(|entries| entries.iter().any(|(k, i)| *k == kind && i == id))
    }
}

fn media_of(part: &ContentPart) -> Option<(&'static str, &MediaUrl)> {
    match part {
        ContentPart::Image(m) | ContentPart::Audio(m) | ContentPart::Video(m) => {
            Some((part.type_name(), m))
        }
        ContentPart::Text { .. } | ContentPart::Think { .. } => None,
    }
}

/// Snapshot the media identities of the normal projection of `history` (media the projection
/// drops, e.g. inside an orphan result, is never part of it).
pub fn media_snapshot(history: &[Message]) -> MediaSnapshot {
    let projected = super::project(history);
    let mut snapshot = MediaSnapshot::default();
    for part in projected.messages.iter().flat_map(|m| m.content.iter()) {
        if let Some((kind, media)) = media_of(part) {
            snapshot.insert(kind, media);
        }
    }
    snapshot
}

fn degraded_marker(part: &ContentPart) -> Option<&'static str> {
    match part {
        ContentPart::Image(_) => Some(IMAGE_DEGRADED),
        ContentPart::Audio(_) => Some(AUDIO_DEGRADED),
        ContentPart::Video(_) => Some(VIDEO_DEGRADED),
        ContentPart::Text { .. } | ContentPart::Think { .. } => None,
    }
}

fn stripped_marker(part: &ContentPart) -> Option<&'static str> {
    match part {
        ContentPart::Image(_) => Some(IMAGE_STRIPPED),
        ContentPart::Audio(_) => Some(AUDIO_STRIPPED),
        ContentPart::Video(_) => Some(VIDEO_STRIPPED),
        ContentPart::Text { .. } | ContentPart::Think { .. } => None,
    }
}

/// Replace all but the most recent media parts, oldest first. Returns how many were replaced.
pub(super) fn degrade(messages: &mut [Message]) -> usize {
    let total = messages
        .iter()
        .flat_map(|m| m.content.iter())
        .filter(|p| p.is_media())
        .count();
    let mut to_replace = total.saturating_sub(MEDIA_KEPT_WHEN_DEGRADED);
    let replaced = to_replace;
    for part in messages.iter_mut().flat_map(|m| m.content.iter_mut()) {
        if to_replace == 0 {
            break;
        }
        if let Some(marker) = degraded_marker(part) {
            *part = ContentPart::text(marker);
            to_replace -= 1;
        }
    }
    replaced
}

/// Replace every media part whose identity is in the snapshot. Returns how many were replaced.
pub(super) fn strip(messages: &mut [Message], snapshot: &MediaSnapshot) -> usize {
    if snapshot.is_empty() {
        return 0;
    }
    let mut replaced = 0;
    for part in messages.iter_mut().flat_map(|m| m.content.iter_mut()) {
        let hit = media_of(part).is_some_and(|(kind, media)| snapshot.contains(kind, media));
        if hit && let Some(marker) = stripped_marker(part) {
            *part = ContentPart::text(marker);
            replaced += 1;
        }
    }
    replaced
}
