//! Terminal sessions: what a PTY's output becomes for a model, and what keys become.
//!
//! Output is parsed as a terminal would (`vte`), keeping the text and line structure and
//! dropping escape sequences — colours, cursor motion, titles. Queries a program sends to its
//! terminal and then waits for (cursor position, device attributes) are answered as a plain
//! 80-column terminal would, so such a program does not hang; other queries are dropped.

use vte::{Params, Parser, Perform};

/// Strips a PTY's output into text, collecting the answers owed to the program.
pub struct Filter {
    parser: Parser,
    sink: Sink,
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
        }
    }
}

impl Filter {
    /// The text of `bytes` and the bytes to write back to the terminal.
    pub fn feed(&mut self, bytes: &[u8]) -> (Vec<u8>, Vec<u8>) {
        self.parser.advance(&mut self.sink, bytes);
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
