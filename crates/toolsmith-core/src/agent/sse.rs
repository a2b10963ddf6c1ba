//! Server-sent events, decoded from bytes as they arrive (the WHATWG rules): `field: value`
//! lines, a blank line ends an event, several `data:` lines join with `\n`, lines starting
//! with `:` are comments (keep-alives), `\r\n` and `\r` end lines too, a leading BOM is
//! dropped, and a chunk may end anywhere — in a line or in a UTF-8 sequence.

/// One event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` field; empty when absent (a "message").
    pub event: String,
    pub data: String,
}

/// Feeds bytes in, takes events out.
#[derive(Debug, Default)]
pub struct Decoder {
    buffer: Vec<u8>,
    started: bool,
    event: String,
    data: Vec<String>,
    /// The last byte seen was `\r`: a `\n` right after it belongs to the same line end.
    after_cr: bool,
}

impl Decoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// The events completed by `bytes`.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        for &b in bytes {
            if self.after_cr {
                self.after_cr = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\n' | b'\r' => {
                    self.after_cr = b == b'\r';
                    let line = std::mem::take(&mut self.buffer);
                    self.line(&line, &mut out);
                }
                _ => self.buffer.push(b),
            }
        }
        out
    }

    /// At the end of the stream: an event not closed by a blank line still counts.
    pub fn finish(&mut self) -> Vec<SseEvent> {
        let mut out = Vec::new();
        if !self.buffer.is_empty() {
            let line = std::mem::take(&mut self.buffer);
            self.line(&line, &mut out);
        }
        self.dispatch(&mut out);
        out
    }

    fn line(&mut self, raw: &[u8], out: &mut Vec<SseEvent>) {
        let mut line = String::from_utf8_lossy(raw).into_owned();
        if !self.started {
            self.started = true;
            if let Some(rest) = line.strip_prefix('\u{feff}') {
                line = rest.to_owned();
            }
        }
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line.as_str(), ""),
        };
        match field {
            "event" => self.event = value.to_owned(),
            "data" => self.data.push(value.to_owned()),
            _ => {} // id, retry and unknown fields
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        if self.data.is_empty() && self.event.is_empty() {
            return;
        }
        out.push(SseEvent {
            event: std::mem::take(&mut self.event),
            data: std::mem::take(&mut self.data).join("\n"),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut d = Decoder::new();
        let mut out: Vec<SseEvent> = chunks.iter().flat_map(|c| d.push(c)).collect();
        out.extend(d.finish());
        out
    }

    #[test]
    fn fields_comments_and_line_ends() {
        let text = "\u{feff}: keep-alive\r\nevent: a\r\ndata: one\r\ndata:two\r\n\r\ndata: x\rid: 7\r\rdata: é\n\n";
        let got = all(&[text.as_bytes()]);
        assert_eq!(
            got,
            [
                SseEvent {
                    event: "a".into(),
                    data: "one\ntwo".into()
                },
                SseEvent {
                    event: String::new(),
                    data: "x".into()
                },
                SseEvent {
                    event: String::new(),
                    data: "é".into()
                },
            ]
        );
        // Split at every byte, the same events come out (a CRLF and a UTF-8 sequence cut too).
        for cut in 0..text.len() {
            let (a, b) = text.as_bytes().split_at(cut);
            assert_eq!(all(&[a, b]), got, "cut at {cut}");
        }
    }

    #[test]
    fn an_unterminated_last_event_still_counts() {
        assert_eq!(
            all(&[b"data: [DONE]"]),
            [SseEvent {
                event: String::new(),
                data: "[DONE]".into()
            }]
        );
    }
}
