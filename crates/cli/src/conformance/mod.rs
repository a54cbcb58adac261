//! `kimi-rs debug conformance DIR [--area AREA]`: loads every case file in DIR (schema in
//! tests/conformance/README.md), runs each case through the real code and reports failures
//! with a readable diff, a per-area summary and the closing `N passed, M failed` line.

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
    /// Empty when the case passed.
    pub problems: Vec<String>,
}

impl CaseResult {
    pub fn passed(&self) -> bool {
        self.problems.is_empty()
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
        self.results.len() - self.passed()
    }

    /// Failures with their diffs, then a line per area, then `N passed, M failed`.
    pub fn write(&self, out: &mut impl Write) -> io::Result<()> {
        for r in self.results.iter().filter(|r| !r.passed()) {
            writeln!(out, "FAIL {} :: {}", r.area, r.name)?;
            for p in r.problems.iter().take(12) {
                writeln!(out, "    {p}")?;
            }
            if r.problems.len() > 12 {
                writeln!(out, "    … {} more differences", r.problems.len() - 12)?;
            }
        }
        let mut per_area: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
        for r in &self.results {
            let entry = per_area.entry(&r.area).or_default();
            if r.passed() {
                entry.0 += 1;
            } else {
                entry.1 += 1;
            }
        }
        for (area, (p, f)) in per_area {
            writeln!(out, "area {area}: {p} passed, {f} failed")?;
        }
        writeln!(out, "{} passed, {} failed", self.passed(), self.failed())
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

/// Run one case: an unknown area, an adapter error or a panic all fail the case.
pub fn run_case(area: &str, case: &Value) -> Vec<String> {
    let Some(adapter) = areas::adapter(area) else {
        return vec![format!("no adapter for area {area:?} in this build")];
    };
    let mut input = case.get("input").cloned().unwrap_or(Value::Null);
    let expected = case.get("expected").cloned().unwrap_or(Value::Null);
    // Scheduler cases name their steps ("finish X", "fail X") only in `expected.script[*].after`
    // (schema README: "each script step then resolves or rejects one running task"); the steps
    // are inputs to the run, so hand them over. Only the step names are passed, never results.
    if let (Some(obj), Some(Value::Array(script))) = (input.as_object_mut(), expected.get("script"))
        && !obj.contains_key("script")
    {
        let steps: Vec<Value> = script
            .iter()
            .filter_map(|s| s.get("after").cloned())
            .collect();
        obj.insert("script".to_owned(), Value::Array(steps));
    }
    match catch_unwind(AssertUnwindSafe(|| adapter(&input))) {
        Ok(Ok(actual)) => compare::diff(&expected, &actual),
        Ok(Err(message)) => vec![format!("error: {message}")],
        Err(payload) => vec![format!("panicked: {}", panic_message(payload.as_ref()))],
    }
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
            report.results.push(CaseResult {
                area: area.to_owned(),
                name: name.to_owned(),
                file: path.clone(),
                problems: run_case(area, &case),
            });
        }
    }
    Ok(report)
}
