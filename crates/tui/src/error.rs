//! Typed errors of the UI; each message says what the user can do about it.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum TuiError {
    #[error("cannot {what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "the terminal could not be set up ({source}); run in a real terminal or use print mode (-p)"
    )]
    Terminal {
        #[source]
        source: std::io::Error,
    },
    #[error(
        "external editor `{command}` failed: {detail}; set [editor] command in tui.toml or $VISUAL"
    )]
    Editor { command: String, detail: String },
}
