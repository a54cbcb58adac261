//! Splitting journal bytes into lines (core.md §g.4 line parsing): split on `\n`, strip one
//! trailing `\r`, skip blank lines, tell a torn final fragment apart from a corrupt middle line.
//!
//! Line numbers are physical and 1-based (the metadata line is line 1) because undo branch records
//! refer to journal lines by number; a skipped line therefore keeps its number.

use serde_json::Value;

/// One non-blank, `\n`-terminated line (or the unterminated final fragment when it parses).
#[derive(Debug, Clone, PartialEq)]
pub struct ScannedLine {
    pub number: u64,
    /// Byte range of the line in the file, without the `\n` (and without a stripped `\r`).
    pub start: usize,
    pub end: usize,
    pub parsed: Result<Value, String>,
}

/// The bytes after the last `\n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tail {
    /// The file is empty or ends in `\n`.
    Clean,
    /// A final fragment without `\n` that parses: only the newline is missing.
    Unterminated { start: usize },
    /// A final fragment that does not parse: a write torn by a crash.
    Torn { start: usize },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Scan {
    /// Non-blank lines in file order, including an unterminated final line that parses.
    pub lines: Vec<ScannedLine>,
    pub tail: Tail,
}

impl Scan {
    /// Lines that do not parse (corruption anywhere but a torn tail).
    pub fn corrupt(&self) -> impl Iterator<Item = &ScannedLine> {
        self.lines.iter().filter(|l| l.parsed.is_err())
    }
}

fn parse(bytes: &[u8]) -> Result<Value, String> {
    serde_json::from_slice(bytes).map_err(|e| e.to_string())
}

/// A line the reference's writer produced after a crash: a torn fragment with the next record
/// appended to it (`{"type":"a","te{"type":"b",...}`). Returns the byte offset and value of the
/// last complete record object that ends the line, if there is one.
pub fn salvage(line: &[u8]) -> Option<(usize, Value)> {
    const START: &[u8] = b"{\"type\"";
    (1..line.len().saturating_sub(START.len() - 1))
        .filter(|&i| line[i..].starts_with(START))
        .find_map(|i| match serde_json::from_slice::<Value>(&line[i..]) {
            Ok(value @ Value::Object(_)) => Some((i, value)),
            Ok(_) | Err(_) => None,
        })
}

fn is_blank(bytes: &[u8]) -> bool {
    bytes.iter().all(u8::is_ascii_whitespace)
}

pub fn scan(bytes: &[u8]) -> Scan {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut number = 0u64;
    while let Some(offset) = bytes[start..].iter().position(|&b| b == b'\n') {
        number += 1;
        let mut end = start + offset;
        if end > start && bytes[end - 1] == b'\r' {
            end -= 1;
        }
        let line = &bytes[start..end];
        if !is_blank(line) {
            lines.push(ScannedLine {
                number,
                start,
                end,
                parsed: parse(line),
            });
        }
        start += offset + 1;
    }
    let rest = &bytes[start..];
    let tail = if rest.is_empty() {
        Tail::Clean
    } else if is_blank(rest) {
        // Whitespace after the last newline carries nothing; treat like a torn fragment so the
        // next append starts on a clean line boundary.
        Tail::Torn { start }
    } else {
        match parse(rest) {
            Ok(value) => {
                let mut end = bytes.len();
                if bytes[end - 1] == b'\r' {
                    end -= 1;
                }
                lines.push(ScannedLine {
                    number: number + 1,
                    start,
                    end,
                    parsed: Ok(value),
                });
                Tail::Unterminated { start }
            }
            Err(_) => Tail::Torn { start },
        }
    };
    Scan { lines, tail }
}

/// The reference's line reader: the parsed values, with the torn final fragment skipped. Corrupt
/// middle lines are returned separately (the reference fails the read on them; the journal
/// reports and skips them).
pub fn read_lines(text: &str) -> (Vec<Value>, Vec<u64>) {
    let scan = scan(text.as_bytes());
    let mut values = Vec::new();
    let mut corrupt = Vec::new();
    for line in scan.lines {
        match line.parsed {
            Ok(v) => values.push(v),
            Err(_) => corrupt.push(line.number),
        }
    }
    (values, corrupt)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn torn_final_fragment_is_skipped() {
        let scan = scan(b"{\"n\":1}\n{\"n\":");
        assert_eq!(scan.tail, Tail::Torn { start: 8 });
        assert_eq!(read_lines("{\"n\":1}\n{\"n\":").0, vec![json!({"n": 1})]);
    }

    #[test]
    fn crlf_and_blank_lines() {
        assert_eq!(
            read_lines("{\"n\":1}\r\n\n{\"n\":2}\r\n").0,
            vec![json!({"n": 1}), json!({"n": 2})]
        );
        // Blank line 2 keeps its number: line numbers are physical.
        let numbers: Vec<u64> = scan(b"{}\n\n{}\n").lines.iter().map(|l| l.number).collect();
        assert_eq!(numbers, vec![1, 3]);
    }

    #[test]
    fn unterminated_but_complete_final_line_is_kept() {
        let scan = scan(b"{\"n\":1}\n{\"n\":2}");
        assert_eq!(scan.tail, Tail::Unterminated { start: 8 });
        assert_eq!(scan.lines.len(), 2);
    }

    #[test]
    fn corrupt_middle_line_is_reported_and_later_lines_kept() {
        let (values, corrupt) = read_lines("{\"n\":1}\n{\"n\":\n{\"n\":3}\n");
        assert_eq!(values, vec![json!({"n": 1}), json!({"n": 3})]);
        assert_eq!(corrupt, vec![2]);
    }

    #[test]
    fn a_record_glued_to_a_torn_fragment_is_salvaged() {
        let line = b"{\"type\":\"a\",\"text\":\"{\"type\"x{\"type\":\"b\",\"n\":1}";
        assert_eq!(salvage(line), Some((28, json!({"type": "b", "n": 1}))));
        assert_eq!(salvage(b"{\"type\":\"a\""), None);
        assert_eq!(salvage(b"garbage"), None);
    }

    #[test]
    fn invalid_utf8_is_a_corrupt_line_not_a_panic() {
        let scan = scan(b"{\"a\":\"\xff\"}\n{}\n");
        assert_eq!(scan.corrupt().count(), 1);
        assert_eq!(scan.lines.len(), 2);
    }
}
