//! The tracing layer: filters by level, formats each event as one line (time, level, target,
//! the span path, the message and its fields, secrets masked) and routes it to the global log
//! and, when the event happens inside a session's span, to that session's log too.
//!
//! Routing: a span carrying `session_id` and `session_dir` (opened by `open_session`)
//! registers the session's directory; events inside it, or inside any span (or event) carrying
//! only a registered `session_id` — an ACP or web handler — go to that directory's log.

use std::collections::HashMap;
use std::fmt::{Debug, Write as _};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use tracing::field::{Field, Visit};
use tracing::level_filters::LevelFilter;
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Event, Level, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::{LookupSpan, SpanRef};

use super::redact::{REDACTED, is_secret_field, redact_text};
use super::writer::LogWriter;

/// The span field naming a session.
pub const SESSION_ID: &str = "session_id";
/// The span field giving that session's directory (where `logs/` goes).
pub const SESSION_DIR: &str = "session_dir";

/// What a span contributes to lines logged inside it.
struct SpanInfo {
    name: &'static str,
    /// ` field=value` pairs, the session fields excepted.
    fields: String,
    session_id: Option<String>,
    dir: Option<Arc<PathBuf>>,
}

impl SpanInfo {
    /// `name{session_id=… field=value …}`; the session id only where it changes along the
    /// span path, so nested spans of one session do not repeat it.
    fn render(&self, outer_session: Option<&str>, out: &mut String) {
        let mut fields = String::new();
        if let Some(id) = self
            .session_id
            .as_deref()
            .filter(|id| Some(*id) != outer_session)
        {
            let _ = write!(fields, " {SESSION_ID}={id}");
        }
        fields.push_str(&self.fields);
        out.push_str(self.name);
        if !fields.is_empty() {
            let _ = write!(out, "{{{}}}", fields.trim_start());
        }
        out.push_str(": ");
    }
}

pub struct FileLayer {
    level: LevelFilter,
    writer: LogWriter,
    /// Session id → directory, for spans and events that name only the id.
    dirs: Mutex<HashMap<String, Arc<PathBuf>>>,
}

impl FileLayer {
    pub fn new(level: LevelFilter, writer: LogWriter) -> FileLayer {
        FileLayer {
            level,
            writer,
            dirs: Mutex::new(HashMap::new()),
        }
    }

    /// Our crates log at the chosen level; dependencies (HTTP, TLS, MCP client) at most at
    /// info, since their debug output would drown ours. Our spans are always kept, whatever
    /// the level, so a warning inside a session still finds its session.
    fn wants(&self, meta: &Metadata<'_>) -> bool {
        if self.level == LevelFilter::OFF {
            return false;
        }
        let ours = meta.target().starts_with("kimi");
        if meta.is_span() {
            return ours;
        }
        let limit = if ours {
            self.level
        } else {
            self.level.min(LevelFilter::INFO)
        };
        *meta.level() <= limit
    }

    fn dir_of(&self, session_id: &str) -> Option<Arc<PathBuf>> {
        self.dirs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(session_id)
            .cloned()
    }

    fn register(&self, visitor: &FieldsVisitor) -> Option<Arc<PathBuf>> {
        let (Some(id), Some(dir)) = (&visitor.session_id, &visitor.session_dir) else {
            return None;
        };
        let dir = Arc::new(PathBuf::from(dir));
        self.dirs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.clone(), dir.clone());
        Some(dir)
    }
}

impl<S> Layer<S> for FileLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn register_callsite(&self, meta: &'static Metadata<'static>) -> Interest {
        if self.wants(meta) {
            Interest::always()
        } else {
            Interest::never()
        }
    }

    fn enabled(&self, meta: &Metadata<'_>, _ctx: Context<'_, S>) -> bool {
        self.wants(meta)
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        if self.level == LevelFilter::OFF {
            Some(LevelFilter::OFF)
        } else {
            // Spans are created at info; they must not be filtered out at `warn`.
            Some(self.level.max(LevelFilter::INFO))
        }
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut visitor = FieldsVisitor::span();
        attrs.record(&mut visitor);
        let dir = self.register(&visitor);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(SpanInfo {
                name: attrs.metadata().name(),
                fields: visitor.fields,
                session_id: visitor.session_id,
                dir,
            });
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut visitor = FieldsVisitor::span();
        values.record(&mut visitor);
        let mut extensions = span.extensions_mut();
        let Some(info) = extensions.get_mut::<SpanInfo>() else {
            return;
        };
        if visitor.session_id.is_some() {
            info.session_id.clone_from(&visitor.session_id);
        }
        if visitor.session_dir.is_some() {
            visitor.session_id = info.session_id.clone();
            info.dir = self.register(&visitor);
        }
        info.fields.push_str(&visitor.fields);
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let meta = event.metadata();
        let mut visitor = FieldsVisitor::default();
        event.record(&mut visitor);
        let mut spans: Vec<SpanRef<'_, S>> = Vec::new();
        // The innermost span that names a session decides which one the line belongs to.
        let mut session: Option<Arc<PathBuf>> = None;
        let mut decided = false;
        if let Some(scope) = ctx.event_scope(event) {
            for span in scope {
                if !decided
                    && let Some(info) = span.extensions().get::<SpanInfo>()
                    && (info.dir.is_some() || info.session_id.is_some())
                {
                    decided = true;
                    session = match &info.dir {
                        Some(dir) => Some(dir.clone()),
                        None => info.session_id.as_deref().and_then(|id| self.dir_of(id)),
                    };
                }
                spans.push(span);
            }
        }
        if !decided {
            session = visitor.session_id.as_deref().and_then(|id| self.dir_of(id));
        }
        let mut line = format!(
            "{} {} {}: ",
            timestamp(),
            level_text(*meta.level()),
            meta.target()
        );
        let mut outer_session: Option<String> = None;
        for span in spans.iter().rev() {
            if let Some(info) = span.extensions().get::<SpanInfo>() {
                info.render(outer_session.as_deref(), &mut line);
                if info.session_id.is_some() {
                    outer_session.clone_from(&info.session_id);
                }
            }
        }
        line.push_str(&visitor.message);
        line.push_str(&visitor.fields);
        // One event, one line: continuation lines are indented under it.
        let mut line = redact_text(line.trim_end()).replace('\n', "\n    ");
        line.push('\n');
        self.writer.send(session, line);
    }
}

pub fn timestamp() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

fn level_text(level: Level) -> &'static str {
    match level {
        Level::ERROR => "ERROR",
        Level::WARN => "WARN ",
        Level::INFO => "INFO ",
        Level::DEBUG => "DEBUG",
        Level::TRACE => "TRACE",
    }
}

/// Collects `message`, the session fields and the rest as ` name=value` pairs.
#[derive(Default)]
struct FieldsVisitor {
    /// A span's fields: the session id is kept apart (see [`SpanInfo::render`]).
    span: bool,
    message: String,
    fields: String,
    session_id: Option<String>,
    session_dir: Option<String>,
}

impl FieldsVisitor {
    fn span() -> FieldsVisitor {
        FieldsVisitor {
            span: true,
            ..FieldsVisitor::default()
        }
    }

    fn push(&mut self, field: &Field, value: String) {
        let name = field.name();
        match name {
            "message" => self.message = value,
            SESSION_DIR => self.session_dir = Some(value),
            SESSION_ID if self.span => self.session_id = Some(value),
            _ => {
                if name == SESSION_ID {
                    self.session_id = Some(value.clone());
                }
                let value = if is_secret_field(name) {
                    REDACTED.to_owned()
                } else {
                    value
                };
                let _ = write!(self.fields, " {name}={value}");
            }
        }
    }
}

impl Visit for FieldsVisitor {
    fn record_str(&mut self, field: &Field, value: &str) {
        let shown = if field.name() == "message"
            || field.name() == SESSION_DIR
            || field.name() == SESSION_ID
            || !(value.is_empty() || value.contains(char::is_whitespace))
        {
            value.to_owned()
        } else {
            format!("{value:?}")
        };
        self.push(field, shown);
    }

    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.push(field, format!("{value:?}"));
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::logging::writer::{LOG_FILE, Limits};
    use tracing_subscriber::layer::SubscriberExt;

    const LIMITS: Limits = Limits {
        max_bytes: 1 << 20,
        files: 2,
    };

    fn read(path: &std::path::Path) -> String {
        std::fs::read_to_string(path).unwrap_or_default()
    }

    #[test]
    fn lines_route_to_their_session_and_secrets_are_masked() {
        let home = tempfile::tempdir().unwrap();
        let global = home.path().join("logs").join(LOG_FILE);
        let (writer, guard) = LogWriter::start(&global, LIMITS, LIMITS, false).unwrap();
        let subscriber =
            tracing_subscriber::registry().with(FileLayer::new(LevelFilter::INFO, writer));
        let (one, two) = (home.path().join("s1"), home.path().join("s2"));
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!("before any session");
            let s1 =
                tracing::info_span!("session", session_id = "id-1", session_dir = %one.display());
            let s2 =
                tracing::info_span!("session", session_id = "id-2", session_dir = %two.display());
            s1.in_scope(|| {
                tracing::info!(api_key = "sk-live-0123456789", "opened one");
                tracing::debug!("too detailed");
            });
            s2.in_scope(|| tracing::warn!(header = "Authorization: Bearer abcdef123", "in two"));
            // A span naming only the id (an ACP handler) still reaches the session's file.
            tracing::info_span!("acp", session_id = "id-1").in_scope(|| tracing::info!("handler"));
            tracing::info!(session_id = "id-2", "event naming its session");
        });
        guard.flush();
        let (all, first, second) = (
            read(&global),
            read(&one.join("logs").join(LOG_FILE)),
            read(&two.join("logs").join(LOG_FILE)),
        );
        assert_eq!(all.lines().count(), 5, "{all}");
        assert!(!all.contains("too detailed"), "{all}");
        assert!(
            first.contains("session{session_id=id-1}: opened one api_key=[redacted]"),
            "{first}"
        );
        assert!(
            first.contains("handler") && !first.contains("in two"),
            "{first}"
        );
        assert!(second.contains("in two") && second.contains("event naming its session"));
        assert!(!first.contains("before any session") && !second.contains("opened one"));
        for text in [&all, &first, &second] {
            assert!(
                !text.contains("sk-live") && !text.contains("abcdef123"),
                "{text}"
            );
            assert!(
                !text.contains(&*home.path().to_string_lossy()),
                "dirs stay out of lines: {text}"
            );
        }
    }
}
