//! Logging for every entry point: one global log at `$KIMI_RS_HOME/logs/kimi-rs.log` and one
//! per session at `<session-dir>/logs/kimi-rs.log`, both rotated by size, at the level
//! `--log-level` or `KIMI_LOG_LEVEL` asks for (default info). Nothing is ever logged to stdout;
//! stderr only carries a once-only notice when a log file cannot be written (never in ACP mode,
//! where stdio belongs to the editor).
//!
//! Sizes: `KIMI_LOG_GLOBAL_MAX_BYTES` (6 MiB), `KIMI_LOG_GLOBAL_FILES` (5),
//! `KIMI_LOG_SESSION_MAX_BYTES` (5 MiB), `KIMI_LOG_SESSION_FILES` (3); `*_FILES` counts the live
//! file and its rotated predecessors together.

pub mod layer;
pub mod redact;
pub mod rotate;
pub mod writer;

use std::path::{Path, PathBuf};

use clap::ValueEnum;
use tracing::level_filters::LevelFilter;
use tracing_subscriber::layer::SubscriberExt;

pub use writer::{FlushGuard, LOG_FILE, Limits};

const MIB: u64 = 1024 * 1024;
pub const GLOBAL_DEFAULT: Limits = Limits {
    max_bytes: 6 * MIB,
    files: 5,
};
pub const SESSION_DEFAULT: Limits = Limits {
    max_bytes: 5 * MIB,
    files: 3,
};

/// `--log-level` / `KIMI_LOG_LEVEL`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogLevel {
    Off,
    Error,
    Warn,
    Info,
    Debug,
    Trace,
}

impl LogLevel {
    fn parse(text: &str) -> Option<LogLevel> {
        LogLevel::from_str(text.trim(), true).ok()
    }

    fn filter(self) -> LevelFilter {
        match self {
            LogLevel::Off => LevelFilter::OFF,
            LogLevel::Error => LevelFilter::ERROR,
            LogLevel::Warn => LevelFilter::WARN,
            LogLevel::Info => LevelFilter::INFO,
            LogLevel::Debug => LevelFilter::DEBUG,
            LogLevel::Trace => LevelFilter::TRACE,
        }
    }
}

/// Everything the setup needs, read from the flag and the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSettings {
    pub level: LogLevel,
    pub global_path: PathBuf,
    pub global: Limits,
    pub session: Limits,
    /// Problems with the variables themselves, for the caller to show.
    pub problems: Vec<String>,
}

impl LogSettings {
    /// The flag wins over `KIMI_LOG_LEVEL`; an invalid value is a problem and the default
    /// is used.
    pub fn from_env(
        home: &Path,
        flag: Option<LogLevel>,
        env: impl Fn(&str) -> Option<String>,
    ) -> LogSettings {
        let mut problems = Vec::new();
        let level = match (flag, env("KIMI_LOG_LEVEL").filter(|v| !v.trim().is_empty())) {
            (Some(level), _) => level,
            (None, Some(text)) => LogLevel::parse(&text).unwrap_or_else(|| {
                problems.push(format!(
                    "KIMI_LOG_LEVEL={text} is not a log level (off, error, warn, info, debug, trace); logging at info"
                ));
                LogLevel::Info
            }),
            (None, None) => LogLevel::Info,
        };
        let mut number = |name: &str, default: u64| -> u64 {
            let Some(text) = env(name).filter(|v| !v.trim().is_empty()) else {
                return default;
            };
            match text.trim().parse::<u64>() {
                Ok(value) if value > 0 => value,
                _ => {
                    problems.push(format!(
                        "{name}={text} is not a positive whole number; using {default}"
                    ));
                    default
                }
            }
        };
        let global = Limits {
            max_bytes: number("KIMI_LOG_GLOBAL_MAX_BYTES", GLOBAL_DEFAULT.max_bytes),
            files: to_count(number("KIMI_LOG_GLOBAL_FILES", GLOBAL_DEFAULT.files as u64)),
        };
        let session = Limits {
            max_bytes: number("KIMI_LOG_SESSION_MAX_BYTES", SESSION_DEFAULT.max_bytes),
            files: to_count(number(
                "KIMI_LOG_SESSION_FILES",
                SESSION_DEFAULT.files as u64,
            )),
        };
        LogSettings {
            level,
            global_path: home.join("logs").join(LOG_FILE),
            global,
            session,
            problems,
        }
    }
}

fn to_count(value: u64) -> usize {
    usize::try_from(value).unwrap_or(usize::MAX)
}

/// Installs the process-wide subscriber. Returns the guard that flushes on exit, or `None`
/// when logging is off or could not start (already reported when `stderr_notices`).
pub fn init(settings: &LogSettings, stderr_notices: bool) -> Option<FlushGuard> {
    if stderr_notices {
        for problem in &settings.problems {
            eprintln!("kimi-rs: {problem}");
        }
    }
    if settings.level == LogLevel::Off {
        return None;
    }
    let (writer, guard) = match writer::LogWriter::start(
        &settings.global_path,
        settings.global,
        settings.session,
        stderr_notices,
    ) {
        Ok(started) => started,
        Err(err) => {
            if stderr_notices {
                eprintln!("kimi-rs: cannot start the log writer: {err}; continuing without logs");
            }
            return None;
        }
    };
    let layer = layer::FileLayer::new(settings.level.filter(), writer);
    let subscriber = tracing_subscriber::registry().with(layer);
    // Only fails when a subscriber is already installed (a test harness): keep that one.
    tracing::subscriber::set_global_default(subscriber).ok()?;
    for problem in &settings.problems {
        tracing::warn!("{problem}");
    }
    Some(guard)
}

/// The setup `main` runs once the home and the subcommand are known.
/// `mode` names the entry point (`tui`, `print`, `acp`, `web`, …) in the first line.
pub fn init_from_env(
    mode: &str,
    flag: Option<LogLevel>,
    stderr_notices: bool,
) -> Option<FlushGuard> {
    let home = kimi_store::home_from_env().ok()?;
    let settings = LogSettings::from_env(&home, flag, |name| std::env::var(name).ok());
    let guard = init(&settings, stderr_notices);
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        pid = std::process::id(),
        mode,
        home = %home.display(),
        level = ?settings.level,
        "kimi-rs started"
    );
    guard
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(flag: Option<LogLevel>, vars: &[(&str, &str)]) -> LogSettings {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        LogSettings::from_env(Path::new("/h"), flag, move |name| {
            vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
        })
    }

    #[test]
    fn defaults_follow_the_spec() {
        let s = settings(None, &[]);
        assert_eq!(s.level, LogLevel::Info);
        assert_eq!(s.global_path, Path::new("/h/logs/kimi-rs.log"));
        assert_eq!(s.global, GLOBAL_DEFAULT);
        assert_eq!(s.session, SESSION_DEFAULT);
        assert_eq!(GLOBAL_DEFAULT.max_bytes, 6 * 1024 * 1024);
        assert!(s.problems.is_empty());
    }

    #[test]
    fn the_flag_wins_over_the_variable_and_sizes_are_honoured() {
        let s = settings(
            Some(LogLevel::Warn),
            &[
                ("KIMI_LOG_LEVEL", "debug"),
                ("KIMI_LOG_GLOBAL_MAX_BYTES", "1000"),
                ("KIMI_LOG_GLOBAL_FILES", "2"),
                ("KIMI_LOG_SESSION_MAX_BYTES", "500"),
                ("KIMI_LOG_SESSION_FILES", "4"),
            ],
        );
        assert_eq!(s.level, LogLevel::Warn);
        assert_eq!(
            (s.global, s.session),
            (
                Limits {
                    max_bytes: 1000,
                    files: 2
                },
                Limits {
                    max_bytes: 500,
                    files: 4
                }
            )
        );
        assert_eq!(
            settings(None, &[("KIMI_LOG_LEVEL", "TRACE")]).level,
            LogLevel::Trace
        );
    }

    #[test]
    fn invalid_values_are_reported_not_ignored() {
        let s = settings(
            None,
            &[("KIMI_LOG_LEVEL", "loud"), ("KIMI_LOG_SESSION_FILES", "0")],
        );
        assert_eq!(s.level, LogLevel::Info);
        assert_eq!(s.session.files, SESSION_DEFAULT.files);
        assert_eq!(s.problems.len(), 2, "{:?}", s.problems);
        assert!(s.problems[0].contains("KIMI_LOG_LEVEL=loud"));
    }
}
