//! The exec protocol: newline-delimited JSON frames over the executor's stdio.
//!
//! The client sends `{"id": N, "op": "...", ...}`; the executor answers each request with
//! `{"id": N, "ok": ...}` or `{"id": N, "error": {"code", "message"}}`, in whatever order the
//! work finishes, so many requests can be in flight at once. Process output arrives as
//! `{"output": {"process": N, "stderr": bool, "data": "<base64>"}}`, where `N` is the id of the
//! `spawn` request; all of a process's output is sent before the answer to its `wait`.
//! A frame that cannot be read gets an error answer (`id` null when even the id is unreadable);
//! the executor never stops over one.

use std::path::PathBuf;

use kimi_tools::environment::{FileKind, FileStat, GlobRequest, GrepRequest, ReadError};
use serde::{Deserialize, Serialize};

/// The protocol this build speaks. Bumped on any incompatible change, and when ops are added
/// (2: terminals), so a client knows what an older executor cannot do.
pub const PROTOCOL_VERSION: u32 = 2;
/// The first protocol with terminals (`terminal_open`, `terminal_input`, `terminal_resize`).
pub const TERMINAL_PROTOCOL_VERSION: u32 = 2;
/// The oldest protocol this build still accepts from the other side.
pub const MIN_PROTOCOL_VERSION: u32 = 1;

/// A request and the id its answer will carry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestFrame {
    pub id: u64,
    #[serde(flatten)]
    pub request: Request,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// The handshake: the client's protocol version; answered with [`Hello`].
    Hello { version: u32 },
    /// `canonicalize_lenient` of each path. Answer: `Vec<PathBuf>`.
    Canonicalize { paths: Vec<PathBuf> },
    /// Answer: `Option<FileStat>` (`null` when missing).
    Stat { path: PathBuf },
    /// The path must still resolve to itself. Answer: `Result<(), String>`.
    CheckUnchanged { path: PathBuf },
    /// A whole regular file. Answer: `Result<Base64, ReadError>`.
    ReadFile { path: PathBuf },
    /// The Read tool's rendering. Answer: [`TextReply`].
    ReadText {
        path: PathBuf,
        offset: i64,
        n_lines: Option<usize>,
    },
    /// Answer: `Result<Option<FileStat>, String>`.
    WriteFile {
        path: PathBuf,
        #[serde(with = "b64")]
        data: Vec<u8>,
        #[serde(default)]
        append: bool,
    },
    /// Answer: `Result<Vec<DirEntry>, String>`.
    List { path: PathBuf },
    /// Answer: `Result<(), String>`.
    Mkdir {
        path: PathBuf,
        #[serde(default)]
        parents: bool,
    },
    /// Answer: `Result<(), String>`.
    Remove {
        path: PathBuf,
        #[serde(default)]
        recursive: bool,
    },
    /// Answer: `Result<(), String>`.
    Rename { from: PathBuf, to: PathBuf },
    /// Answer: [`TextReply`].
    Grep(GrepRequest),
    /// Answer: [`TextReply`].
    Glob(GlobRequest),
    /// Stops a running `grep`/`glob` request. Answer: `null`.
    Cancel { target: u64 },
    /// A shell command in its own process group; its id is this request's id. Answer:
    /// `Result<Spawned, String>`.
    Spawn {
        command: String,
        cwd: PathBuf,
        /// Set on top of the executor's own environment.
        #[serde(default)]
        env: Vec<(String, String)>,
        /// The executor kills the group after this long.
        #[serde(default)]
        timeout_ms: Option<u64>,
    },
    /// Waits for the process to end. Answer: [`Exit`].
    Wait { process: u64 },
    /// SIGTERM to the group, SIGKILL after the grace. Answer: [`Exit`].
    Kill { process: u64, grace_ms: u64 },
    /// A shell on a new PTY, the leader of its own session and process group; its id is this
    /// request's id, its output arrives as `output` frames (`stderr` false) and `wait`/`kill`
    /// work on it like on a process (a kill sends SIGHUP first). Answer:
    /// `Result<Spawned, String>`.
    TerminalOpen {
        cwd: PathBuf,
        /// Set on top of the executor's own environment.
        #[serde(default)]
        env: Vec<(String, String)>,
        cols: u16,
        rows: u16,
        /// The program to run; `null` for the target's shell.
        #[serde(default)]
        shell: Option<String>,
    },
    /// Bytes typed into a terminal, written in the order the requests arrive. Answer:
    /// `Result<(), String>`.
    TerminalInput {
        terminal: u64,
        #[serde(with = "b64")]
        data: Vec<u8>,
    },
    /// Answer: `Result<(), String>`.
    TerminalResize { terminal: u64, cols: u16, rows: u16 },
}

impl Request {
    pub fn name(&self) -> &'static str {
        match self {
            Request::Hello { .. } => "hello",
            Request::Canonicalize { .. } => "canonicalize",
            Request::Stat { .. } => "stat",
            Request::CheckUnchanged { .. } => "check_unchanged",
            Request::ReadFile { .. } => "read_file",
            Request::ReadText { .. } => "read_text",
            Request::WriteFile { .. } => "write_file",
            Request::List { .. } => "list",
            Request::Mkdir { .. } => "mkdir",
            Request::Remove { .. } => "remove",
            Request::Rename { .. } => "rename",
            Request::Grep(_) => "grep",
            Request::Glob(_) => "glob",
            Request::Cancel { .. } => "cancel",
            Request::Spawn { .. } => "spawn",
            Request::Wait { .. } => "wait",
            Request::Kill { .. } => "kill",
            Request::TerminalOpen { .. } => "terminal_open",
            Request::TerminalInput { .. } => "terminal_input",
            Request::TerminalResize { .. } => "terminal_resize",
        }
    }
}

/// The handshake answer: who the executor is and where it runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    pub version: u32,
    pub os: String,
    pub arch: String,
    pub shell: String,
    pub home: Option<PathBuf>,
    /// The executor's own version (`CARGO_PKG_VERSION`), for messages.
    pub build: String,
}

/// A tool's text result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextReply {
    pub text: String,
    pub is_error: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stat: Option<FileStat>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirEntry {
    pub name: String,
    pub kind: Option<FileKind>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spawned {
    pub pid: Option<u32>,
}

/// How a process ended: its exit code, `null` when a signal ended it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exit {
    pub exit_code: Option<i32>,
}

/// `Result<Vec<u8>, ReadError>` with the bytes as base64.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileBytes {
    Ok(#[serde(with = "b64")] Vec<u8>),
    Err(ReadError),
}

/// An error answer. Codes: `bad_frame` (not JSON / no id), `bad_request` (unknown op or
/// fields), `version` (handshake refused), `no_process`, `internal`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireError {
    pub code: String,
    pub message: String,
}

/// Process output as it arrives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Output {
    pub process: u64,
    pub stderr: bool,
    #[serde(with = "b64")]
    pub data: Vec<u8>,
}

/// Everything the executor writes: an answer (`id` with `ok` or `error`) or an output event.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ServerFrame {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ok: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<WireError>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Output>,
}

impl ServerFrame {
    pub fn ok(id: u64, value: serde_json::Value) -> Self {
        Self {
            id: Some(id),
            ok: Some(value),
            ..Self::default()
        }
    }

    pub fn error(id: Option<u64>, code: &str, message: impl Into<String>) -> Self {
        Self {
            id,
            error: Some(WireError {
                code: code.to_owned(),
                message: message.into(),
            }),
            ..Self::default()
        }
    }
}

/// Bytes as a base64 string.
pub mod b64 {
    use base64::Engine as _;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        base64::engine::general_purpose::STANDARD
            .decode(text.as_bytes())
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip() {
        let frame = RequestFrame {
            id: 7,
            request: Request::WriteFile {
                path: PathBuf::from("/tmp/x"),
                data: b"a\0b".to_vec(),
                append: true,
            },
        };
        let text = serde_json::to_string(&frame).unwrap();
        assert_eq!(
            text,
            r#"{"id":7,"op":"write_file","path":"/tmp/x","data":"YQBi","append":true}"#
        );
        assert_eq!(serde_json::from_str::<RequestFrame>(&text).unwrap(), frame);
        let grep = RequestFrame {
            id: 8,
            request: Request::Grep(GrepRequest {
                root: PathBuf::from("/w"),
                params: serde_json::json!({"pattern": "x"}),
                budget_ms: 20_000,
            }),
        };
        let text = serde_json::to_string(&grep).unwrap();
        assert_eq!(serde_json::from_str::<RequestFrame>(&text).unwrap(), grep);
    }
}
