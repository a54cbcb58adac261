//! `kimi-rs debug conformance DIR [--area AREA]`: loads every case file in DIR (schema in
//! tests/conformance/README.md), runs each case through the real code and reports failures
//! with a readable diff, a per-area summary and the closing `N passed, M failed, K skipped`
//! line. A case that cannot execute in this build is skipped with its reason, never passed.

pub mod areas;
pub mod compare;
pub mod neutral;

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use serde_json::Value;

#[derive(Debug, thiserror::Error)]
pub enum ConformanceError {
    #[error("cannot read conformance directory {path}: {source}; pass a directory of case files")]
    ReadDir { path: PathBuf, source: io::Error },
    #[error("cannot read case file {path}: {source}")]
    ReadFile { path: PathBuf, source: io::Error },
    #[error("case file {path} is not valid JSON: {source}")]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
}

#[derive(Debug, Clone)]
pub struct CaseResult {
    pub area: String,
    pub name: String,
    pub file: PathBuf,
    /// Empty when the case passed (or was skipped).
    pub problems: Vec<String>,
    /// Why the case could not execute; `None` when it ran.
    pub skipped: Option<String>,
}

impl CaseResult {
    pub fn passed(&self) -> bool {
        self.skipped.is_none() && self.problems.is_empty()
    }

    pub fn failed(&self) -> bool {
        !self.problems.is_empty()
    }
}

#[derive(Debug, Default)]
pub struct Report {
    pub results: Vec<CaseResult>,
}

impl Report {
    pub fn passed(&self) -> usize {
        self.results.iter().filter(|r| r.passed()).count()
    }

    pub fn failed(&self) -> usize {
        self.results.iter().filter(|r| r.failed()).count()
    }

    pub fn skipped(&self) -> usize {
        self.results.iter().filter(|r| r.skipped.is_some()).count()
    }

    /// Skipped cases with their reasons, failures with their diffs, then a line per area, then
    /// `N passed, M failed, K skipped` (scripts read the `N passed, M failed` start).
    pub fn write(&self, out: &mut impl Write) -> io::Result<()> {
        for r in &self.results {
            if let Some(why) = &r.skipped {
                writeln!(out, "SKIP {} :: {}: {why}", r.area, r.name)?;
            }
        }
        for r in self.results.iter().filter(|r| r.failed()) {
            writeln!(out, "FAIL {} :: {}", r.area, r.name)?;
            for p in r.problems.iter().take(12) {
                writeln!(out, "    {p}")?;
            }
            if r.problems.len() > 12 {
                writeln!(out, "    … {} more differences", r.problems.len() - 12)?;
            }
        }
        let mut per_area: BTreeMap<&str, (usize, usize, usize)> = BTreeMap::new();
        for r in &self.results {
            let entry = per_area.entry(&r.area).or_default();
            if r.passed() {
                entry.0 += 1;
            } else if r.failed() {
                entry.1 += 1;
            } else {
                entry.2 += 1;
            }
        }
        for (area, (p, f, s)) in per_area {
            writeln!(out, "area {area}: {p} passed, {f} failed, {s} skipped")?;
        }
        writeln!(
            out,
            "{} passed, {} failed, {} skipped",
            self.passed(),
            self.failed(),
            self.skipped()
        )
    }
}

/// Case files in `dir`, sorted by name. Files that are not case files (no `cases` array) are
/// skipped; files that are not JSON at all are an error, so a typo is not silently ignored.
fn case_files(dir: &Path) -> Result<Vec<(PathBuf, Value)>, ConformanceError> {
    let entries = std::fs::read_dir(dir).map_err(|source| ConformanceError::ReadDir {
        path: dir.to_owned(),
        source,
    })?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    let mut files = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(&path).map_err(|source| ConformanceError::ReadFile {
            path: path.clone(),
            source,
        })?;
        let value: Value =
            serde_json::from_str(&text).map_err(|source| ConformanceError::Parse {
                path: path.clone(),
                source,
            })?;
        if value.get("cases").is_some_and(Value::is_array) {
            files.push((path, value));
        }
    }
    Ok(files)
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned())
}

/// What became of one case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The case ran; the differences from `expected` (empty when it passed).
    Ran(Vec<String>),
    /// The case cannot execute in this build, for this reason.
    Skipped(String),
}

/// Run one case: the adapter sees only the case's `input`, and its output is compared with
/// `expected`. An unknown area, an adapter error or a panic all fail the case.
pub fn run_case(area: &str, case: &Value) -> Verdict {
    let Some(adapter) = areas::adapter(area) else {
        return Verdict::Ran(vec![format!("no adapter for area {area:?} in this build")]);
    };
    if let Some(why) = areas::skip_reason(area, case) {
        return Verdict::Skipped(why);
    }
    let input = case.get("input").cloned().unwrap_or(Value::Null);
    let expected = case.get("expected").cloned().unwrap_or(Value::Null);
    Verdict::Ran(match catch_unwind(AssertUnwindSafe(|| adapter(&input))) {
        Ok(Ok(actual)) => compare::diff(&expected, &actual),
        Ok(Err(message)) => vec![format!("error: {message}")],
        Err(payload) => vec![format!("panicked: {}", panic_message(payload.as_ref()))],
    })
}

pub fn run_dir(dir: &Path, area_filter: Option<&str>) -> Result<Report, ConformanceError> {
    let mut report = Report::default();
    for (path, file) in case_files(dir)? {
        let file_area = file.get("area").and_then(Value::as_str).unwrap_or("");
        let cases = file
            .get("cases")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for case in cases {
            let area = case
                .get("area")
                .and_then(Value::as_str)
                .unwrap_or(file_area);
            if area_filter.is_some_and(|f| f != area) {
                continue;
            }
            let name = case
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("(unnamed)");
            let (problems, skipped) = match run_case(area, &case) {
                Verdict::Ran(problems) => (problems, None),
                Verdict::Skipped(why) => (Vec::new(), Some(why)),
            };
            report.results.push(CaseResult {
                area: area.to_owned(),
                name: name.to_owned(),
                file: path.clone(),
                problems,
                skipped,
            });
        }
    }
    Ok(report)
}
