//! An incremental Server-Sent Events parser (WHATWG "event stream" rules): LF, CRLF and lone CR
//! line ends, multi-line `data:`, comments, `event:` names, and input split at any byte — a
//! line is decoded only once complete, so a multi-byte UTF-8 character split across chunks is
//! reassembled before decoding.

/// One dispatched event. `data` lines are joined with `\n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub event: Option<String>,
    pub data: String,
}

#[derive(Debug, Default)]
pub struct SseParser {
    buf: Vec<u8>,
    data: String,
    has_data: bool,
    event: Option<String>,
    /// The previous chunk ended in `\r`; a leading `\n` in the next chunk belongs to it.
    pending_cr: bool,
    started: bool,
}

impl SseParser {
    pub fn new() -> Self {
        SseParser::default()
    }

    /// Feeds bytes; complete events are appended to `out`.
    pub fn feed(&mut self, mut chunk: &[u8], out: &mut Vec<SseEvent>) {
        if self.pending_cr {
            self.pending_cr = false;
            if let Some(rest) = chunk.strip_prefix(b"\n") {
                chunk = rest;
            }
        }
        // Fast path: no partial line buffered, parse straight from the chunk.
        let tail_start = if self.buf.is_empty() {
            self.scan(chunk, out)
        } else {
            self.buf.extend_from_slice(chunk);
            let buf = std::mem::take(&mut self.buf);
            let consumed = self.scan(&buf, out);
            self.buf = buf;
            self.buf.drain(..consumed);
            return;
        };
        self.buf.extend_from_slice(&chunk[tail_start..]);
    }

    /// Processes every complete line of `bytes`; returns the offset of the unterminated tail.
    fn scan(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) -> usize {
        let mut start = 0;
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            if b == b'\n' || b == b'\r' {
                self.line(&bytes[start..i], out);
                if b == b'\r' {
                    if i + 1 == bytes.len() {
                        self.pending_cr = true;
                    } else if bytes[i + 1] == b'\n' {
                        i += 1;
                    }
                }
                start = i + 1;
            }
            i += 1;
        }
        start
    }

    /// End of input: a final event without its blank line is still delivered, because several
    /// OpenAI-compatible servers close the connection right after the last `data:` line.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) {
        if !self.buf.is_empty() {
            let buf = std::mem::take(&mut self.buf);
            self.line(&buf, out);
        }
        self.dispatch(out);
    }

    fn line(&mut self, raw: &[u8], out: &mut Vec<SseEvent>) {
        let mut line = raw;
        if !self.started {
            self.started = true;
            if let Some(rest) = line.strip_prefix("\u{feff}".as_bytes()) {
                line = rest;
            }
        }
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.has_data = true;
                self.data.push_str(&String::from_utf8_lossy(value));
            }
            b"event" => self.event = Some(String::from_utf8_lossy(value).into_owned()),
            // `id` and `retry` matter only for reconnecting EventSource clients; ours never
            // reconnect mid-answer, so they are ignored like unknown fields.
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        if self.has_data {
            out.push(SseEvent {
                event: self.event.take(),
                data: std::mem::take(&mut self.data),
            });
            self.has_data = false;
        } else {
            self.event = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn parse_in_pieces(input: &[u8], piece: usize) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        for chunk in input.chunks(piece) {
            parser.feed(chunk, &mut out);
        }
        parser.finish(&mut out);
        out
    }

    #[test]
    fn every_split_gives_the_same_events() {
        let input = "\u{feff}: comment\r\nevent: a\r\ndata: héllo 日本\r\ndata:  two\r\n\r\ndata: x\rdata: y\r\r\ndata: z\n\nevent: lost\n\ndata: tail".as_bytes();
        let expected = vec![
            SseEvent {
                event: Some("a".into()),
                data: "héllo 日本\n two".into(),
            },
            SseEvent {
                event: None,
                data: "x\ny".into(),
            },
            SseEvent {
                event: None,
                data: "z".into(),
            },
            SseEvent {
                event: None,
                data: "tail".into(),
            },
        ];
        for piece in 1..=input.len() {
            assert_eq!(
                parse_in_pieces(input, piece),
                expected,
                "piece size {piece}"
            );
        }
    }

    #[test]
    fn field_without_colon_and_empty_data() {
        let out = parse_in_pieces(b"garbage\ndata\n\n", 3);
        assert_eq!(
            out,
            vec![SseEvent {
                event: None,
                data: String::new()
            }]
        );
    }
}
