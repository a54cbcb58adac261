//! Errors a tool raises while planning a call; their text is what the model sees as the result.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum ToolError {
    #[error("Invalid arguments: {0}")]
    InvalidArgs(String),
    #[error(
        "`{path}` is outside the workspace. Paths outside the workspace ({workspace}) must be given as absolute paths."
    )]
    RelativeOutsideWorkspace { path: String, workspace: String },
    #[error(
        "`{path}` resolves through a symbolic link to `{target}`, which is outside the workspace. Use the real absolute path instead."
    )]
    SymlinkEscape { path: String, target: PathBuf },
    #[error(
        "`{path}` is a sensitive file (credentials or secrets) and cannot be accessed by this tool."
    )]
    Sensitive { path: String },
    #[error("Path must not be empty.")]
    EmptyPath,
    #[error("{0}")]
    Other(String),
    #[error(transparent)]
    Environment(#[from] crate::environment::EnvError),
}
