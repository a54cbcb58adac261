//! Read: numbered lines of a text file, with offsets (negative = from the end), per-call limits
//! and a `<system>` status block describing what was shown.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read as _, Seek as _};
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::text::{Encoding, MAX_UTF16_BYTES, NotText, decode_utf16, sniff};
use crate::access::{Access, FileOperation};
use crate::context::{ProgressSink, ToolContext};
use crate::error::ToolError;
use crate::path::{PathUse, resolve_path};
use crate::result::ToolResult;
use crate::tool::{Execution, Resolution, RuleSubject, Tool, ToolDisplay, ToolPlan, parse_args};

pub const MAX_LINES: usize = 1_000;
pub const MAX_BYTES: usize = 100 * 1024;
pub const MAX_LINE_CHARS: usize = 2_000;
pub const MAX_TAIL_LINES: i64 = 1_000;

const IMAGE_EXTS: [&str; 11] = [
    "png", "jpg", "jpeg", "gif", "webp", "bmp", "ico", "tif", "tiff", "heic", "avif",
];
const VIDEO_EXTS: [&str; 7] = ["mp4", "mov", "avi", "mkv", "webm", "m4v", "mpeg"];

#[derive(Debug, Deserialize)]
struct Params {
    path: String,
    line_offset: Option<i64>,
    n_lines: Option<i64>,
}

#[derive(Debug, Default)]
pub struct ReadTool;

#[async_trait]
impl Tool for ReadTool {
    fn name(&self) -> &str {
        "Read"
    }

    fn description(&self) -> String {
        format!(
            "Read a text file. Returns numbered lines as `<line number>\\t<text>` followed by a <system> status block. \
             At most {MAX_LINES} lines or {} KiB per call; lines longer than {MAX_LINE_CHARS} characters are cut. \
             Use line_offset to start at a line (1-based), or a negative line_offset (-1 to -{MAX_TAIL_LINES}) to read the last lines. \
             Images and videos must be read with ReadMediaFile.",
            MAX_BYTES / 1024
        )
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path of the file (relative to the working directory, or absolute)."},
                "line_offset": {"type": "integer", "description": "1-based line to start from, or -1..-1000 to read that many lines from the end."},
                "n_lines": {"type": "integer", "minimum": 1, "description": "Maximum number of lines to read."}
            },
            "required": ["path"],
            "additionalProperties": false
        })
    }

    fn resolve(&self, args: Value, ctx: &ToolContext) -> Result<Resolution, ToolError> {
        let params: Params = parse_args(args)?;
        let offset = match params.line_offset {
            None => 1,
            Some(0) => {
                return Err(ToolError::InvalidArgs(
                    "line_offset must be >= 1, or between -1 and -1000 to read from the end"
                        .to_owned(),
                ));
            }
            Some(n) if n < -MAX_TAIL_LINES => {
                return Err(ToolError::InvalidArgs(format!(
                    "line_offset {n} is out of range: negative offsets read at most {MAX_TAIL_LINES} lines from the end"
                )));
            }
            Some(n) => n,
        };
        if let Some(n) = params.n_lines
            && n < 1
        {
            return Err(ToolError::InvalidArgs(
                "n_lines must be greater than 0".to_owned(),
            ));
        }
        let path = resolve_path(ctx, &params.path, PathUse::Read)?;
        let shown = path.display().to_string();
        let plan = ToolPlan {
            accesses: Some(vec![Access::file(FileOperation::Read, shown.clone())]),
            approval_rule: format!("Read({shown})"),
            subject: RuleSubject::Path(shown.clone()),
            display: ToolDisplay {
                kind: "read".to_owned(),
                summary: shown.clone(),
                detail: None,
                diff: None,
            },
            description: format!("Read {shown}"),
            stop_batch_after_this: false,
        };
        Ok(Resolution::Run(Box::new(ReadExecution {
            plan,
            path,
            offset,
            n_lines: params.n_lines.and_then(|n| usize::try_from(n).ok()),
        })))
    }
}

struct ReadExecution {
    plan: ToolPlan,
    path: PathBuf,
    offset: i64,
    n_lines: Option<usize>,
}

#[async_trait]
impl Execution for ReadExecution {
    fn plan(&self) -> &ToolPlan {
        &self.plan
    }

    async fn execute(
        self: Box<Self>,
        ctx: &ToolContext,
        _cancel: CancellationToken,
        _progress: ProgressSink,
    ) -> ToolResult {
        let this = *self;
        let stale = ctx.stale.clone();
        if !ctx.environment.is_local() {
            let env = ctx.environment.clone();
            let outcome = tokio::task::spawn_blocking(move || {
                let (result, stamp) = env.read_text(&this.path, this.offset, this.n_lines)?;
                if !result.is_error {
                    stale.record_stat(&this.path, stamp);
                }
                Ok::<_, crate::environment::EnvError>(result)
            })
            .await;
            let mut result = match outcome {
                Ok(Ok(result)) => result,
                Ok(Err(e)) => ToolResult::error(e.to_string()),
                Err(e) => ToolResult::error(format!("Read failed: {e}")),
            };
            result.spill_exempt = true;
            return result;
        }
        let outcome = tokio::task::spawn_blocking(move || {
            let result = read_file(&this.path, this.offset, this.n_lines);
            if !result.is_error {
                stale.record(&this.path);
            }
            result
        })
        .await;
        let mut result = outcome.unwrap_or_else(|e| ToolResult::error(format!("Read failed: {e}")));
        result.spill_exempt = true;
        result
    }
}

/// Counters gathered over the whole file while selecting the lines to show.
#[derive(Default)]
struct Scan {
    total: usize,
    crlf: usize,
    lf: usize,
    stray_cr: bool,
    selected: Vec<(usize, Vec<u8>)>,
}

fn scan_lines(
    reader: &mut dyn BufRead,
    offset: i64,
    n_lines: usize,
) -> std::io::Result<Result<Scan, NotText>> {
    let mut scan = Scan::default();
    let mut tail: VecDeque<(usize, Vec<u8>)> = VecDeque::new();
    let tail_len = if offset < 0 {
        usize::try_from(-offset).unwrap_or(0)
    } else {
        0
    };
    let start = usize::try_from(offset.max(1)).unwrap_or(1);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        if reader.read_until(b'\n', &mut buf)? == 0 {
            break;
        }
        scan.total += 1;
        if buf.contains(&0) {
            return Ok(Err(NotText::Binary));
        }
        let mut line = buf.as_slice();
        if let Some(rest) = line.strip_suffix(b"\n") {
            line = rest;
            if let Some(rest) = line.strip_suffix(b"\r") {
                line = rest;
                scan.crlf += 1;
            } else {
                scan.lf += 1;
            }
        }
        if line.contains(&b'\r') {
            scan.stray_cr = true;
        }
        let lineno = scan.total;
        if tail_len > 0 {
            tail.push_back((lineno, buf.clone()));
            if tail.len() > tail_len {
                tail.pop_front();
            }
        } else if lineno >= start && scan.selected.len() < n_lines {
            scan.selected.push((lineno, buf.clone()));
        }
    }
    if tail_len > 0 {
        scan.selected = tail.into_iter().take(n_lines).collect();
    }
    Ok(Ok(scan))
}

fn media_kind(path: &Path) -> Option<&'static str> {
    let ext = path.extension()?.to_string_lossy().to_lowercase();
    if IMAGE_EXTS.contains(&ext.as_str()) {
        Some("an image")
    } else if VIDEO_EXTS.contains(&ext.as_str()) {
        Some("a video")
    } else {
        None
    }
}

fn refuse(path: &Path, why: NotText) -> ToolResult {
    let shown = path.display();
    match why {
        NotText::Binary => ToolResult::error(format!(
            "`{shown}` appears to be a binary file (it contains NUL bytes), so Read cannot show it. \
             Use ReadMediaFile for images and videos, or a suitable command through Bash for other binary formats."
        )),
        NotText::UnknownEncoding => ToolResult::error(format!(
            "`{shown}` is not UTF-8 or UTF-16 text, so Read cannot show it. \
             Convert it with a command such as `iconv` through Bash if you need its contents."
        )),
    }
}

/// The whole Read operation on an already-resolved path.
pub fn read_file(path: &Path, offset: i64, n_lines: Option<usize>) -> ToolResult {
    let shown = path.display();
    if let Some(kind) = media_kind(path) {
        return ToolResult::error(format!(
            "`{shown}` is {kind} file. Read only shows text; use ReadMediaFile to view it."
        ));
    }
    // Only regular files: a FIFO would block the open (and the turn) forever.
    let (mut file, meta) = match super::regular::open_regular(path) {
        Ok(opened) => opened,
        Err(super::regular::NotRegular::Directory(_)) => {
            return ToolResult::error(format!(
                "`{shown}` is a directory. Read only reads files; use Glob or Bash `ls` to list a directory."
            ));
        }
        Err(err) => return ToolResult::error(err.to_string()),
    };
    let mut sample = vec![0u8; 8192];
    let got = match read_sample(&mut file, &mut sample) {
        Ok(n) => n,
        Err(e) => return ToolResult::error(format!("Cannot read `{shown}`: {e}")),
    };
    sample.truncate(got);
    let encoding = match sniff(&sample) {
        Ok(e) => e,
        Err(why) => return refuse(path, why),
    };
    let limit = n_lines.unwrap_or(MAX_LINES).min(MAX_LINES);
    let scanned = match encoding {
        Encoding::Utf8 | Encoding::Utf8Bom => {
            // The same descriptor, rewound: reopening by path could meet a different file.
            if let Err(e) = file.seek(std::io::SeekFrom::Start(0)) {
                return ToolResult::error(format!("Cannot read `{shown}`: {e}"));
            }
            let mut reader = BufReader::with_capacity(64 * 1024, file);
            if encoding == Encoding::Utf8Bom {
                let mut bom = [0u8; 3];
                if let Err(e) = reader.read_exact(&mut bom) {
                    return ToolResult::error(format!("Cannot read `{shown}`: {e}"));
                }
            }
            scan_lines(&mut reader, offset, limit)
        }
        Encoding::Utf16Le { .. } | Encoding::Utf16Be { .. } => {
            if meta.len() > MAX_UTF16_BYTES {
                return ToolResult::error(format!(
                    "`{shown}` is UTF-16 text larger than 10 MiB; Read only transcodes UTF-16 files up to 10 MiB."
                ));
            }
            let mut bytes = Vec::new();
            let read = file
                .seek(std::io::SeekFrom::Start(0))
                .and_then(|_| file.read_to_end(&mut bytes));
            if let Err(e) = read {
                return ToolResult::error(format!("Cannot read `{shown}`: {e}"));
            }
            let Some(text) = decode_utf16(&bytes, encoding) else {
                return refuse(path, NotText::Binary);
            };
            scan_lines(&mut std::io::Cursor::new(text.into_bytes()), offset, limit)
        }
    };
    let scan = match scanned {
        Ok(Ok(scan)) => scan,
        Ok(Err(why)) => return refuse(path, why),
        Err(e) => return ToolResult::error(format!("Cannot read `{shown}`: {e}")),
    };
    render(path, offset, n_lines, encoding, scan)
}

/// The Read operation on text the caller already has (an editor's buffer over ACP), rendered
/// exactly as [`read_file`] renders a UTF-8 file.
pub fn read_text_content(
    path: &Path,
    text: &str,
    offset: i64,
    n_lines: Option<usize>,
) -> ToolResult {
    if let Some(kind) = media_kind(path) {
        return ToolResult::error(format!(
            "`{}` is {kind} file. Read only shows text; use ReadMediaFile to view it.",
            path.display()
        ));
    }
    let limit = n_lines.unwrap_or(MAX_LINES).min(MAX_LINES);
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    match scan_lines(&mut std::io::Cursor::new(text.as_bytes()), offset, limit) {
        Ok(Ok(scan)) => render(path, offset, n_lines, Encoding::Utf8, scan),
        Ok(Err(why)) => refuse(path, why),
        Err(e) => ToolResult::error(format!("Cannot read `{}`: {e}", path.display())),
    }
}

fn read_sample(file: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        let n = file.read(&mut buf[filled..])?;
        if n == 0 {
            break;
        }
        filled += n;
    }
    Ok(filled)
}

fn render(
    path: &Path,
    offset: i64,
    n_lines: Option<usize>,
    encoding: Encoding,
    scan: Scan,
) -> ToolResult {
    if scan.total == 0 {
        return ToolResult::ok("<system>The file is empty.</system>");
    }
    if scan.selected.is_empty() {
        return ToolResult::ok(format!(
            "<system>line_offset {offset} is beyond the end of the file, which has {} lines.</system>",
            scan.total
        ));
    }
    // Pure CRLF files are shown with LF (Edit matches against this view); otherwise every CR
    // is made visible so the model knows it is there.
    let pure_crlf = scan.crlf > 0 && scan.lf == 0 && !scan.stray_cr;
    let mut out = String::new();
    let mut bytes = 0usize;
    let mut shown = 0usize;
    let mut cut_lines = 0usize;
    let mut byte_limited = false;
    let mut first = 0usize;
    let mut last = 0usize;
    for (lineno, raw) in &scan.selected {
        let text = String::from_utf8_lossy(raw);
        let body = text.strip_suffix('\n').unwrap_or(&text);
        let body = if pure_crlf {
            body.strip_suffix('\r').unwrap_or(body)
        } else {
            body
        };
        let body = body.replace('\r', "\\r");
        let body = if body.chars().count() > MAX_LINE_CHARS {
            cut_lines += 1;
            let kept: String = body.chars().take(MAX_LINE_CHARS).collect();
            format!("{kept}...")
        } else {
            body
        };
        let line = format!("{lineno}\t{body}\n");
        if bytes + line.len() > MAX_BYTES && shown > 0 {
            byte_limited = true;
            break;
        }
        bytes += line.len();
        out.push_str(&line);
        shown += 1;
        if first == 0 {
            first = *lineno;
        }
        last = *lineno;
    }
    let mut status = vec![format!(
        "Read {shown} lines ({first}-{last} of {}, {bytes} bytes).",
        scan.total
    )];
    if last < scan.total {
        let why = if byte_limited {
            format!("Stopped at the {} KiB output limit. ", MAX_BYTES / 1024)
        } else if n_lines.is_none_or(|n| n > MAX_LINES) && shown == MAX_LINES {
            format!("Stopped at the {MAX_LINES}-line limit. ")
        } else {
            String::new()
        };
        status.push(format!(
            "{why}More lines follow; use line_offset={} to continue.",
            last + 1
        ));
    } else {
        status.push("End of file reached.".to_owned());
    }
    if cut_lines > 0 {
        status.push(format!(
            "{cut_lines} lines longer than {MAX_LINE_CHARS} characters were cut (marked with ...)."
        ));
    }
    if pure_crlf {
        status.push("The file uses CRLF line endings; they are shown as LF.".to_owned());
    } else if scan.stray_cr || scan.crlf > 0 {
        status
            .push("The file has mixed line endings; carriage returns are shown as \\r.".to_owned());
    }
    match encoding {
        Encoding::Utf8 => {}
        Encoding::Utf8Bom | Encoding::Utf16Le { .. } | Encoding::Utf16Be { .. } => {
            status.push(format!("Encoding: {}.", encoding.label()));
        }
    }
    if path.file_name().is_some_and(|n| n == "wire.jsonl") {
        status.push(
            "This is a session journal (wire.jsonl): one JSON record per line, often long; read a few records at a time with line_offset and n_lines."
                .to_owned(),
        );
    }
    out.push_str(&format!("<system>{}</system>", status.join(" ")));
    ToolResult::ok(out)
}
