//! Grep: ripgrep's engine in process (`ignore` walker + `grep-searcher` + `grep-regex`), with
//! rg's output shapes, newest-first file order, paging and a 20 s budget.

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

use async_trait::async_trait;
use grep_matcher::Matcher;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{
    BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch,
};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::walk::{mtime, walk_builder};
use crate::context::{ProgressSink, ToolContext};
use crate::error::ToolError;
use crate::path::{PathUse, is_sensitive_path, resolve_path};
use crate::result::ToolResult;
use crate::tool::{Execution, Resolution, Tool, ToolPlan, parse_args};

pub const TIME_BUDGET: Duration = Duration::from_secs(20);
pub const DEFAULT_HEAD_LIMIT: usize = 250;
pub const MAX_COLUMNS: usize = 500;
pub const OUTPUT_CAP_BYTES: usize = 10 * 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum OutputMode {
    #[default]
    FilesWithMatches,
    Content,
    CountMatches,
}

#[derive(Debug, Deserialize, serde::Serialize)]
struct Params {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
    #[serde(rename = "type")]
    file_type: Option<String>,
    #[serde(default)]
    output_mode: OutputMode,
    #[serde(rename = "-i", default)]
    ignore_case: bool,
    #[serde(rename = "-n")]
    line_numbers: Option<bool>,
    #[serde(rename = "-A")]
    after: Option<usize>,
    #[serde(rename = "-B")]
    before: Option<usize>,
    #[serde(rename = "-C")]
    context: Option<usize>,
    head_limit: Option<usize>,
    #[serde(default)]
    offset: usize,
    #[serde(default)]
    multiline: bool,
    #[serde(default)]
    include_ignored: bool,
}

#[derive(Debug, Default)]
pub struct GrepTool;

#[async_trait]
impl Tool for GrepTool {
    fn name(&self) -> &str {
        "Grep"
    }

    fn description(&self) -> String {
        format!(
            "Search file contents with a regular expression (ripgrep syntax). output_mode `files_with_matches` (default) lists \
             matching files newest first, `content` shows matching lines, `count_matches` shows match counts per file. \
             Results are paged with head_limit (default {DEFAULT_HEAD_LIMIT}, 0 = unlimited) and offset. `glob` filters files \
             (use a basename pattern or `**/`), `type` selects a ripgrep file type. Files ignored by .gitignore are skipped \
             unless include_ignored is true. The search stops after {} s and returns partial results.",
            TIME_BUDGET.as_secs()
        )
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Regular expression to search for."},
                "path": {"type": "string", "description": "File or directory to search (default: working directory)."},
                "glob": {"type": "string", "description": "Glob filter for files, e.g. `*.rs` or `**/src/*.ts`."},
                "type": {"type": "string", "description": "ripgrep file type, e.g. `rust`, `py`, `js`."},
                "output_mode": {"type": "string", "enum": ["files_with_matches", "content", "count_matches"]},
                "-i": {"type": "boolean", "description": "Case-insensitive search."},
                "-n": {"type": "boolean", "description": "Show line numbers (content mode, default true)."},
                "-A": {"type": "integer", "minimum": 0, "description": "Lines after each match (content mode)."},
                "-B": {"type": "integer", "minimum": 0, "description": "Lines before each match (content mode)."},
                "-C": {"type": "integer", "minimum": 0, "description": "Lines before and after each match (content mode; overrides -A/-B)."},
                "head_limit": {"type": "integer", "minimum": 0, "description": "Maximum entries to return (default 250, 0 = unlimited)."},
                "offset": {"type": "integer", "minimum": 0, "description": "Entries to skip before head_limit applies."},
                "multiline": {"type": "boolean", "description": "Let patterns span lines (`.` matches newlines)."},
                "include_ignored": {"type": "boolean", "description": "Also search files ignored by ignore files."}
            },
            "required": ["pattern"],
            "additionalProperties": false
        })
    }

    fn resolve(&self, args: Value, ctx: &ToolContext) -> Result<Resolution, ToolError> {
        Ok(Resolution::Run(Box::new(prepare(args, ctx)?)))
    }
}

struct GrepExecution {
    plan: ToolPlan,
    root: PathBuf,
    matcher: RegexMatcher,
    params: Params,
}

#[async_trait]
impl Execution for GrepExecution {
    fn plan(&self) -> &ToolPlan {
        &self.plan
    }

    async fn execute(
        self: Box<Self>,
        ctx: &ToolContext,
        cancel: CancellationToken,
        _progress: ProgressSink,
    ) -> ToolResult {
        let this = *self;
        if ctx.environment.is_local() {
            return tokio::task::spawn_blocking(move || this.run(&cancel, TIME_BUDGET))
                .await
                .unwrap_or_else(|e| ToolResult::error(format!("Grep failed: {e}")));
        }
        // On a remote target the search runs where the files are; only results come back.
        let params = match serde_json::to_value(&this.params) {
            Ok(v) => v,
            Err(e) => return ToolResult::error(format!("Grep failed: {e}")),
        };
        let request = crate::environment::GrepRequest {
            root: this.root,
            params,
            budget_ms: u64::try_from(TIME_BUDGET.as_millis()).unwrap_or(u64::MAX),
        };
        let env = ctx.environment.clone();
        tokio::task::spawn_blocking(move || env.grep(&request, &cancel))
            .await
            .map_err(|e| format!("Grep failed: {e}"))
            .and_then(|r| r.map_err(|e| e.to_string()))
            .unwrap_or_else(ToolResult::error)
    }
}

/// What one file contributed.
struct FileHit {
    path: PathBuf,
    mtime: SystemTime,
    /// Rendered lines (content mode) without the path prefix: (line number, is match, text).
    lines: Vec<(u64, bool, String)>,
    /// Positions in `lines` after which a `--` separator belongs.
    breaks: Vec<usize>,
    matches: usize,
}

/// Collects one file's matches and context lines.
struct Collector<'a> {
    matcher: &'a RegexMatcher,
    hit: FileHit,
    content: bool,
    bytes: &'a AtomicUsize,
}

fn render_line(bytes: &[u8], is_match: bool, matcher: &RegexMatcher) -> String {
    let line = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.len() > MAX_COLUMNS {
        if is_match {
            let mut n = 0;
            let _ = matcher.find_iter(line, |_| {
                n += 1;
                true
            });
            return format!("[Omitted long line with {n} matches]");
        }
        return "[Omitted long context line]".to_owned();
    }
    String::from_utf8_lossy(line).into_owned()
}

impl Sink for Collector<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _searcher: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        let mut n = 0;
        let _ = self.matcher.find_iter(mat.bytes(), |_| {
            n += 1;
            true
        });
        self.hit.matches += n.max(1);
        if self.content {
            let first = mat.line_number().unwrap_or(0);
            for (i, line) in mat.lines().enumerate() {
                let text = render_line(line, true, self.matcher);
                self.bytes.fetch_add(text.len() + 16, Ordering::Relaxed);
                self.hit.lines.push((first + i as u64, true, text));
            }
        }
        Ok(self.bytes.load(Ordering::Relaxed) < OUTPUT_CAP_BYTES)
    }

    fn context(
        &mut self,
        _searcher: &Searcher,
        ctx: &SinkContext<'_>,
    ) -> Result<bool, Self::Error> {
        if self.content {
            match ctx.kind() {
                SinkContextKind::Before | SinkContextKind::After | SinkContextKind::Other => {
                    let text = render_line(ctx.bytes(), false, self.matcher);
                    self.bytes.fetch_add(text.len() + 16, Ordering::Relaxed);
                    self.hit
                        .lines
                        .push((ctx.line_number().unwrap_or(0), false, text));
                }
            }
        }
        Ok(true)
    }

    fn context_break(&mut self, _searcher: &Searcher) -> Result<bool, Self::Error> {
        if self.content && !self.hit.lines.is_empty() {
            self.hit.breaks.push(self.hit.lines.len());
        }
        Ok(true)
    }
}

impl GrepExecution {
    fn run(&self, cancel: &CancellationToken, budget: Duration) -> ToolResult {
        let p = &self.params;
        if !self.root.exists() {
            return ToolResult::error(format!("`{}` does not exist.", self.root.display()));
        }
        let content = p.output_mode == OutputMode::Content;
        let (before, after) = match p.context {
            Some(c) => (c, c),
            None => (p.before.unwrap_or(0), p.after.unwrap_or(0)),
        };
        let mut walker = walk_builder(&self.root, p.include_ignored);
        if let Some(t) = &p.file_type {
            let mut types = ignore::types::TypesBuilder::new();
            types.add_defaults();
            types.select(t);
            match types.build() {
                Ok(types) => {
                    walker.types(types);
                }
                Err(e) => return ToolResult::error(format!("Invalid type `{t}`: {e}")),
            }
        }
        if let Some(g) = &p.glob {
            let mut ov = ignore::overrides::OverrideBuilder::new(&self.root);
            if let Err(e) = ov.add(g) {
                return ToolResult::error(format!("Invalid glob `{g}`: {e}"));
            }
            match ov.build() {
                Ok(ov) => {
                    walker.overrides(ov);
                }
                Err(e) => return ToolResult::error(format!("Invalid glob `{g}`: {e}")),
            }
        }
        let deadline = Instant::now() + budget;
        let hits: Mutex<Vec<FileHit>> = Mutex::new(Vec::new());
        let sensitive = AtomicUsize::new(0);
        let bytes = AtomicUsize::new(0);
        let timed_out = AtomicBool::new(false);
        let capped = AtomicBool::new(false);
        let line_numbers = !(content && p.line_numbers == Some(false));
        walker.build_parallel().run(|| {
            let mut searcher = SearcherBuilder::new()
                .line_number(true)
                .before_context(if content { before } else { 0 })
                .after_context(if content { after } else { 0 })
                .multi_line(p.multiline)
                .binary_detection(BinaryDetection::quit(0))
                .build();
            let matcher = &self.matcher;
            let hits = &hits;
            let sensitive = &sensitive;
            let bytes = &bytes;
            let timed_out = &timed_out;
            let capped = &capped;
            Box::new(move |entry| {
                if cancel.is_cancelled() {
                    return ignore::WalkState::Quit;
                }
                if Instant::now() > deadline {
                    timed_out.store(true, Ordering::Relaxed);
                    return ignore::WalkState::Quit;
                }
                if bytes.load(Ordering::Relaxed) >= OUTPUT_CAP_BYTES {
                    capped.store(true, Ordering::Relaxed);
                    return ignore::WalkState::Quit;
                }
                let Ok(entry) = entry else {
                    return ignore::WalkState::Continue;
                };
                if !entry.file_type().is_some_and(|t| t.is_file()) {
                    return ignore::WalkState::Continue;
                }
                let path = entry.path();
                let mut collector = Collector {
                    matcher,
                    hit: FileHit {
                        path: path.to_path_buf(),
                        mtime: SystemTime::UNIX_EPOCH,
                        lines: Vec::new(),
                        breaks: Vec::new(),
                        matches: 0,
                    },
                    content,
                    bytes,
                };
                // Opened as a regular file only: a FIFO swapped in after the walk saw a
                // file would block the search forever.
                let Ok((file, _)) = super::regular::open_regular(path) else {
                    return ignore::WalkState::Continue;
                };
                if searcher
                    .search_file(matcher, &file, &mut collector)
                    .is_err()
                    || collector.hit.matches == 0
                {
                    return ignore::WalkState::Continue;
                }
                if is_sensitive_path(path) {
                    sensitive.fetch_add(1, Ordering::Relaxed);
                    return ignore::WalkState::Continue;
                }
                let mut hit = collector.hit;
                hit.mtime = mtime(path);
                hits.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(hit);
                ignore::WalkState::Continue
            })
        });
        if cancel.is_cancelled() {
            return ToolResult::error("Grep was cancelled.");
        }
        let mut hits = hits
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        hits.sort_by(|a, b| b.mtime.cmp(&a.mtime).then_with(|| a.path.cmp(&b.path)));
        let notes = Notes {
            sensitive: sensitive.load(Ordering::Relaxed),
            timed_out: timed_out.load(Ordering::Relaxed),
            capped: capped.load(Ordering::Relaxed),
        };
        self.render(&hits, line_numbers, before + after > 0, notes, budget)
    }

    fn render(
        &self,
        hits: &[FileHit],
        line_numbers: bool,
        with_context: bool,
        notes: Notes,
        budget: Duration,
    ) -> ToolResult {
        let p = &self.params;
        let mut header: Option<String> = None;
        let entries: Vec<String> = match p.output_mode {
            OutputMode::FilesWithMatches => {
                hits.iter().map(|h| h.path.display().to_string()).collect()
            }
            OutputMode::CountMatches => {
                let total: usize = hits.iter().map(|h| h.matches).sum();
                header = Some(format!("Found {total} matches in {} files.", hits.len()));
                hits.iter()
                    .map(|h| format!("{}:{}", h.path.display(), h.matches))
                    .collect()
            }
            OutputMode::Content => {
                let mut out = Vec::new();
                for (fi, h) in hits.iter().enumerate() {
                    if with_context && fi > 0 {
                        out.push("--".to_owned());
                    }
                    let shown = h.path.display();
                    for (i, (n, is_match, text)) in h.lines.iter().enumerate() {
                        if with_context && i > 0 && h.breaks.contains(&i) {
                            out.push("--".to_owned());
                        }
                        let sep = if *is_match { ':' } else { '-' };
                        out.push(if line_numbers {
                            format!("{shown}{sep}{n}{sep}{text}")
                        } else {
                            format!("{shown}{sep}{text}")
                        });
                    }
                }
                out
            }
        };
        let total = entries.len();
        let limit = match p.head_limit {
            None => DEFAULT_HEAD_LIMIT,
            Some(0) => usize::MAX,
            Some(n) => n,
        };
        let page: Vec<&String> = entries.iter().skip(p.offset).take(limit).collect();
        let mut lines: Vec<String> = Vec::new();
        if let Some(h) = header {
            lines.push(h);
        }
        if total == 0 {
            lines.push("No matches found.".to_owned());
        } else if page.is_empty() {
            lines.push(format!(
                "offset {} is past the end of the {total} results.",
                p.offset
            ));
        }
        lines.extend(page.iter().map(|s| (*s).clone()));
        let end = p.offset + page.len();
        if end < total {
            lines.push(format!(
                "Results truncated: showing entries {}-{end} of {total}. Use offset={end} to see more.",
                p.offset + 1
            ));
        }
        if notes.sensitive > 0 {
            lines.push(format!(
                "{} sensitive file(s) were filtered from the results.",
                notes.sensitive
            ));
        }
        if notes.capped {
            lines.push(
                "Output reached the 10 MiB cap; the results are partial. Narrow the search."
                    .to_owned(),
            );
        }
        if notes.timed_out {
            lines.push(format!(
                "Search timed out after {} s; the results are partial. Narrow the path or pattern.",
                budget.as_secs()
            ));
        }
        ToolResult::ok(lines.join("\n"))
    }
}

struct Notes {
    sensitive: usize,
    timed_out: bool,
    capped: bool,
}

/// Run a search with a custom time budget (tests exercise the timeout path with a tiny one).
pub async fn grep_with_budget(args: Value, ctx: &ToolContext, budget: Duration) -> ToolResult {
    let exec = match prepare(args, ctx) {
        Ok(exec) => exec,
        Err(e) => return ToolResult::error(e.to_string()),
    };
    let cancel = CancellationToken::new();
    tokio::task::spawn_blocking(move || exec.run(&cancel, budget))
        .await
        .unwrap_or_else(|e| ToolResult::error(format!("Grep failed: {e}")))
}

/// The search of an already-resolved `root` with the tool's arguments: what the executor runs
/// on a remote target (the same code as a local Grep).
pub fn search(
    root: &std::path::Path,
    args: Value,
    cancel: &CancellationToken,
    budget: Duration,
) -> ToolResult {
    let params: Params = match parse_args(args) {
        Ok(p) => p,
        Err(e) => return ToolResult::error(e.to_string()),
    };
    match build_matcher(&params) {
        Ok(matcher) => GrepExecution {
            plan: ToolPlan::search("Grep", &params.pattern, root, "Search for"),
            root: root.to_path_buf(),
            matcher,
            params,
        }
        .run(cancel, budget),
        Err(e) => ToolResult::error(e.to_string()),
    }
}

fn build_matcher(params: &Params) -> Result<RegexMatcher, ToolError> {
    RegexMatcherBuilder::new()
        .case_insensitive(params.ignore_case)
        .multi_line(params.multiline)
        .dot_matches_new_line(params.multiline)
        .build(&params.pattern)
        .map_err(|e| ToolError::InvalidArgs(format!("invalid regex `{}`: {e}", params.pattern)))
}

fn prepare(args: Value, ctx: &ToolContext) -> Result<GrepExecution, ToolError> {
    let params: Params = parse_args(args)?;
    let root = match &params.path {
        Some(p) => resolve_path(ctx, p, PathUse::Read)?,
        None => crate::path::canonical_cwd(ctx)?,
    };
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(params.ignore_case)
        .multi_line(params.multiline)
        .dot_matches_new_line(params.multiline)
        .build(&params.pattern)
        .map_err(|e| ToolError::InvalidArgs(format!("invalid regex `{}`: {e}", params.pattern)))?;
    let plan = ToolPlan::search("Grep", &params.pattern, &root, "Search for");
    Ok(GrepExecution {
        plan,
        root,
        matcher,
        params,
    })
}
