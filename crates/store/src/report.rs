//! What opening a journal repaired or skipped, as sentences for the user: each names the file and
//! the line numbers and says where the removed bytes were kept, so no repair is silent.

use std::path::Path;

use crate::envelope::{CORRUPT_LINE, Reported};
use crate::journal::Repair;
use crate::replay::Skipped;

fn line_list(lines: &[u64]) -> String {
    let numbers: Vec<String> = lines.iter().map(u64::to_string).collect();
    match numbers.len() {
        1 => format!("line {}", numbers[0]),
        _ => format!("lines {}", numbers.join(", ")),
    }
}

/// One warning per repair made while opening `path`. A fresh journal written for a new session
/// (`Rewritten` without a previous version) is not a repair and yields nothing.
pub fn repair_warnings(path: &Path, repairs: &[Repair]) -> Vec<String> {
    let file = path.display();
    repairs
        .iter()
        .filter_map(|repair| match repair {
            Repair::TornTail { bytes, side_file } => Some(format!(
                "{file}: the last line was cut off mid-write ({bytes} bytes, not a complete \
                 record) and was removed from the journal; the bytes are kept in {}",
                side_file.display()
            )),
            Repair::NewlineAdded => Some(format!(
                "{file}: the last record lacked its line end; a newline was added (nothing lost)"
            )),
            Repair::CorruptLines { lines, backup } => Some(format!(
                "{file}: {} {} not valid JSON and {} skipped, so what {} recorded is missing from \
                 this session; the records after {} were kept, and the original file is kept in {}",
                line_list(lines),
                if lines.len() == 1 { "was" } else { "were" },
                if lines.len() == 1 { "was" } else { "were" },
                if lines.len() == 1 { "it" } else { "they" },
                if lines.len() == 1 { "it" } else { "them" },
                backup.display()
            )),
            Repair::Salvaged {
                line,
                dropped_bytes,
            } => Some(format!(
                "{file}: line {line} held {dropped_bytes} bytes of a torn write followed by a \
                 complete record; the record was kept and the torn bytes were skipped (the \
                 original file is kept in {file}.bak)"
            )),
            Repair::Rewritten {
                from_version: Some(version),
                backup,
            } => Some(format!(
                "{file}: upgraded from journal protocol {version} to {}{}",
                kimi_protocol::WIRE_PROTOCOL_VERSION,
                backup
                    .as_ref()
                    .map(|b| format!("; the original is kept in {}", b.display()))
                    .unwrap_or_default()
            )),
            Repair::Rewritten {
                from_version: None, ..
            } => None,
        })
        .collect()
}

/// One warning per line left out of replay: lines that are not records (corrupt lines are
/// already named by [`repair_warnings`]) and records that do not fit their schema or belong to
/// another agent.
pub fn skip_warnings(path: &Path, reported: &[Reported], skipped: &[Skipped]) -> Vec<String> {
    let file = path.display();
    let not_records = reported.iter().filter(|r| r.code != CORRUPT_LINE).map(|r| {
        format!(
            "{file}: line {} is not a journal record ({}) and was skipped",
            r.line, r.code
        )
    });
    let unfit = skipped
        .iter()
        .map(|s| format!("{file}: line {} was skipped: {}", s.line, s.reason));
    not_records.chain(unfit).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn a_corrupt_middle_line_names_the_file_the_line_and_the_backup() {
        let warnings = repair_warnings(
            Path::new("/s/wire.jsonl"),
            &[Repair::CorruptLines {
                lines: vec![3],
                backup: PathBuf::from("/s/wire.jsonl.bak"),
            }],
        );
        assert_eq!(warnings.len(), 1);
        let w = &warnings[0];
        assert!(
            w.starts_with("/s/wire.jsonl: line 3 was not valid JSON"),
            "{w}"
        );
        assert!(w.contains("/s/wire.jsonl.bak"), "{w}");
    }

    #[test]
    fn a_new_journal_is_not_a_repair() {
        let repairs = [Repair::Rewritten {
            from_version: None,
            backup: None,
        }];
        assert!(repair_warnings(Path::new("/s/wire.jsonl"), &repairs).is_empty());
    }
}
