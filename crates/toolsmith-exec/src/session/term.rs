//! Terminal sessions: what a PTY's output becomes for a model, and what keys become.
//!
//! Output is parsed as a terminal would (`vte`), keeping the text and line structure and
//! dropping escape sequences — colours, cursor motion, titles. Queries a program sends to its
//! terminal and then waits for (cursor position, device attributes) are answered as a plain
//! 80-column terminal would, so such a program does not hang; other queries are dropped.
//!
//! The parser keeps an operating-system command (`ESC ]`…) whole until its terminator, so an
//! unterminated one — `cat` of a hostile file is enough — would grow the gateway without
//! bound. [`Filter`] watches every string sequence (OSC, DCS, SOS, PM, APC) itself: one longer
//! than [`STRING_MAX`] is dropped up to its terminator, with a one-line note in the text.

use vte::{Params, Parser, Perform};

/// Longest escape string (OSC, DCS, SOS, PM, APC) passed to the parser; the rest is dropped.
pub const STRING_MAX: usize = 64 * 1024;

/// Strips a PTY's output into text, collecting the answers owed to the program.
pub struct Filter {
    parser: Parser,
    sink: Sink,
    string: StringState,
    /// Bytes of escape strings dropped so far.
    pub dropped: u64,
}

/// Where the byte stream is with respect to escape strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StringState {
    Outside,
    /// An ESC outside a string.
    Escape,
    /// Inside a string, this many bytes in.
    Inside(usize),
    /// An ESC inside a string (`ESC \` ends it).
    InsideEscape(usize),
    /// Past the cap: bytes are dropped until the terminator; `esc` when the last was ESC.
    Dropping {
        esc: bool,
    },
}

#[derive(Default)]
struct Sink {
    text: Vec<u8>,
    replies: Vec<u8>,
    /// The previous byte was a carriage return, held back to join a following line feed.
    cr: bool,
}

impl Default for Filter {
    fn default() -> Self {
        Self {
            parser: Parser::new(),
            sink: Sink::default(),
            string: StringState::Outside,
            dropped: 0,
        }
    }
}

impl Filter {
    /// The text of `bytes` and the bytes to write back to the terminal.
    pub fn feed(&mut self, bytes: &[u8]) -> (Vec<u8>, Vec<u8>) {
        let mut from = 0;
        for (i, &b) in bytes.iter().enumerate() {
            use StringState::*;
            self.string = match (self.string, b) {
                (Dropping { esc }, _) => {
                    self.dropped += 1;
                    match (esc, b) {
                        (_, 0x07 | 0x18 | 0x1a) | (true, b'\\') => {
                            from = i + 1;
                            Outside
                        }
                        _ => Dropping { esc: b == 0x1b },
                    }
                }
                (Outside, 0x1b) => Escape,
                (Outside, _) => Outside,
                (Escape, b']' | b'P' | b'X' | b'^' | b'_') => Inside(0),
                (Escape, 0x1b) => Escape,
                (Escape, _) => Outside,
                (Inside(_) | InsideEscape(_), 0x07 | 0x18 | 0x1a) => Outside,
                (InsideEscape(_), b'\\') => Outside,
                // ESC and anything else ends the string and starts a new sequence.
                (InsideEscape(_), b']' | b'P' | b'X' | b'^' | b'_') => Inside(0),
                (InsideEscape(_), _) => Outside,
                (Inside(n), 0x1b) => InsideEscape(n),
                (Inside(n), _) if n >= STRING_MAX => {
                    // Hand over what came before, then start afresh without the string.
                    self.parser.advance(&mut self.sink, &bytes[from..i]);
                    self.parser = Parser::new();
                    self.sink.flush_cr();
                    self.sink.text.extend_from_slice(
                        format!(
                            "[toolsmith: an escape sequence longer than {} KiB was dropped]\n",
                            STRING_MAX / 1024
                        )
                        .as_bytes(),
                    );
                    self.dropped += 1;
                    Dropping { esc: false }
                }
                (Inside(n), _) => Inside(n + 1),
            };
        }
        if !matches!(self.string, StringState::Dropping { .. }) && from < bytes.len() {
            self.parser.advance(&mut self.sink, &bytes[from..]);
        }
        (
            std::mem::take(&mut self.sink.text),
            std::mem::take(&mut self.sink.replies),
        )
    }
}

impl Sink {
    fn flush_cr(&mut self) {
        if std::mem::take(&mut self.cr) {
            self.text.push(b'\n');
        }
    }
}

impl Perform for Sink {
    fn print(&mut self, c: char) {
        self.flush_cr();
        let mut buf = [0u8; 4];
        self.text
            .extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
    }

    fn execute(&mut self, byte: u8) {
        match byte {
            b'\n' => {
                self.cr = false;
                self.text.push(b'\n');
            }
            // "\r\n" is one line end; a lone "\r" (a progress bar redrawing) starts a line.
            b'\r' => {
                self.flush_cr();
                self.cr = true;
            }
            b'\t' => {
                self.flush_cr();
                self.text.push(b'\t');
            }
            _ => {}
        }
    }

    fn csi_dispatch(&mut self, params: &Params, intermediates: &[u8], _ignore: bool, action: char) {
        let first = params.iter().next().and_then(|p| p.first().copied());
        match (action, intermediates, first) {
            // Device status report: where is the cursor?
            ('n', [], Some(6)) => self.replies.extend_from_slice(b"\x1b[1;1R"),
            // Device status: are you well?
            ('n', [], Some(5)) => self.replies.extend_from_slice(b"\x1b[0n"),
            // Primary device attributes: a VT102.
            ('c', [], None | Some(0)) => self.replies.extend_from_slice(b"\x1b[?6c"),
            _ => {}
        }
    }
}

/// The bytes a key sends on a terminal, for `keys` (case-insensitive names such as `C-c`,
/// `Enter`, `Up`).
pub fn key_bytes(key: &str) -> Option<Vec<u8>> {
    let lower = key.to_ascii_lowercase();
    let named: &[u8] = match lower.as_str() {
        "enter" | "return" => b"\r",
        "tab" => b"\t",
        "esc" | "escape" => b"\x1b",
        "backspace" => b"\x7f",
        "space" => b" ",
        "up" => b"\x1b[A",
        "down" => b"\x1b[B",
        "right" => b"\x1b[C",
        "left" => b"\x1b[D",
        "home" => b"\x1b[H",
        "end" => b"\x1b[F",
        "pageup" => b"\x1b[5~",
        "pagedown" => b"\x1b[6~",
        "delete" => b"\x1b[3~",
        _ => {
            let rest = lower
                .strip_prefix("c-")
                .or_else(|| lower.strip_prefix("ctrl-"))?;
            let c = match rest.as_bytes() {
                [c @ b'a'..=b'z'] => c - b'a' + 1,
                [b'\\'] => 0x1c,
                [b'['] => 0x1b,
                [b']'] => 0x1d,
                [b'@'] | [b' '] => 0,
                _ => return None,
            };
            return Some(vec![c]);
        }
    };
    Some(named.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_and_motion_go_and_queries_are_answered() {
        let mut f = Filter::default();
        let (text, replies) = f.feed(b"\x1b[1;31mred\x1b[0m\r\nnext\x1b[6n line\x1b]0;title\x07");
        assert_eq!(String::from_utf8(text).expect("utf8"), "red\nnext line");
        assert_eq!(replies, b"\x1b[1;1R");
        // A sequence split across reads is still recognised.
        let (a, _) = f.feed(b"\r\n\x1b[3");
        let (b, _) = f.feed(b"2mgreen");
        assert_eq!(String::from_utf8([a, b].concat()).expect("utf8"), "\ngreen");
    }

    #[test]
    fn an_unterminated_escape_string_is_dropped_past_the_cap() {
        for start in [&b"\x1b]0;"[..], b"\x1bP", b"\x1b_", b"\x1b^", b"\x1bX"] {
            let mut f = Filter::default();
            let (a, _) = f.feed(&[b"before\n", start].concat());
            let mut text = a;
            for _ in 0..40 {
                let (t, _) = f.feed(&[b'a'; 8192]);
                text.extend(t);
            }
            let (t, _) = f.feed(b"\x07after\n");
            text.extend(t);
            let text = String::from_utf8(text).expect("utf8");
            assert_eq!(
                text,
                "before\n[toolsmith: an escape sequence longer than 64 KiB was dropped]\nafter\n",
                "{start:?}"
            );
            // The string's bytes past the cap, and its terminator.
            let inside = 40 * 8192 + start.len() as u64 - 2;
            assert_eq!(f.dropped, inside - STRING_MAX as u64 + 1, "{start:?}");
        }
        // A string under the cap, ended by ESC \\, is swallowed as before.
        let mut f = Filter::default();
        let (t, _) = f.feed(b"\x1b]0;title\x1b\\x");
        assert_eq!(t, b"x");
        assert_eq!(f.dropped, 0);
    }

    #[test]
    fn keys_have_their_terminal_bytes() {
        assert_eq!(key_bytes("C-c"), Some(vec![3]));
        assert_eq!(key_bytes("ctrl-D"), Some(vec![4]));
        assert_eq!(key_bytes("C-\\"), Some(vec![0x1c]));
        assert_eq!(key_bytes("Up").as_deref(), Some(&b"\x1b[A"[..]));
        assert_eq!(key_bytes("Enter").as_deref(), Some(&b"\r"[..]));
        assert_eq!(key_bytes("C-ü"), None);
        assert_eq!(key_bytes("F13"), None);
    }
}
