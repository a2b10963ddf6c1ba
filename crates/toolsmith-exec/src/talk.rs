//! A conversation with a running program over its stdin and stdout (code mode's programs
//! call tools this way: the sandbox leaves them no socket). The program writes a message as
//! one line that starts with [`MARK`]; everything else it writes is its output, captured as
//! any process's is. What the gateway answers goes to its stdin a line at a time, after what
//! the call's plan writes there (its arguments, ended by a newline). The conversation ends
//! with the process: its stdin closes when the gateway stops answering.

use std::sync::Mutex;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::capture::{Capture, Captured};

/// What a message line starts with (the ASCII record separator and a word).
pub const MARK: &[u8] = b"\x1etoolsmith ";
/// The longest message line read; a longer one ends the conversation.
pub const MAX_MESSAGE: usize = 16 * 1024 * 1024;

/// Both ends of one call's conversation, as the engine holds them.
#[derive(Debug)]
pub struct Talk {
    /// The program's messages, the mark taken off.
    pub from_program: mpsc::UnboundedSender<Vec<u8>>,
    /// Lines for its stdin (each ends with a newline when sent).
    pub to_program: Mutex<Option<mpsc::UnboundedReceiver<Vec<u8>>>>,
}

/// The gateway's ends: messages from the program, and a sender of lines to it.
pub struct Ends {
    pub messages: mpsc::UnboundedReceiver<Vec<u8>>,
    pub replies: mpsc::UnboundedSender<Vec<u8>>,
}

impl Talk {
    /// A conversation: the engine's part, and the gateway's.
    pub fn new() -> (Self, Ends) {
        let (from_program, messages) = mpsc::unbounded_channel();
        let (replies, to_program) = mpsc::unbounded_channel();
        (
            Self {
                from_program,
                to_program: Mutex::new(Some(to_program)),
            },
            Ends { messages, replies },
        )
    }

    /// Writes `first` (the plan's stdin), a newline, then each reply as it comes, to
    /// `stdin`; in a task of its own. A conversation is held once: a second call does nothing.
    pub(crate) fn feed(
        &self,
        first: Option<&str>,
        mut stdin: impl AsyncWrite + Unpin + Send + 'static,
    ) {
        let taken = self
            .to_program
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let Some(mut replies) = taken else {
            return;
        };
        let mut first = first.unwrap_or_default().as_bytes().to_vec();
        first.push(b'\n');
        tokio::spawn(async move {
            if stdin.write_all(&first).await.is_err() {
                return;
            }
            let _ = stdin.flush().await;
            while let Some(mut line) = replies.recv().await {
                line.push(b'\n');
                if stdin.write_all(&line).await.is_err() || stdin.flush().await.is_err() {
                    return;
                }
            }
        });
    }

    /// Reads `stream` to its end: message lines go to the gateway, the rest is captured (at
    /// most `cap` bytes kept).
    pub(crate) async fn listen(
        from_program: mpsc::UnboundedSender<Vec<u8>>,
        mut stream: impl AsyncRead + Unpin,
        cap: usize,
    ) -> Captured {
        let mut capture = Capture::new(cap);
        let mut line: Vec<u8> = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            for &byte in &buf[..n] {
                line.push(byte);
                if byte == b'\n' {
                    take_line(&mut line, &mut capture, &from_program);
                } else if line.len() > MAX_MESSAGE {
                    capture.push(&line);
                    line.clear();
                }
            }
        }
        if !line.is_empty() {
            take_line(&mut line, &mut capture, &from_program);
        }
        capture.finish()
    }
}

/// A whole line: a message, or output.
fn take_line(
    line: &mut Vec<u8>,
    capture: &mut Capture,
    from_program: &mpsc::UnboundedSender<Vec<u8>>,
) {
    match line.strip_prefix(MARK) {
        Some(message) => {
            let message = message.strip_suffix(b"\n").unwrap_or(message);
            let _ = from_program.send(message.to_vec());
        }
        None => capture.push(line),
    }
    line.clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn message_lines_are_taken_out_of_the_output() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let text = b"hello\n\x1etoolsmith {\"op\": 1}\nworld\n\x1etoolsmith {\"op\": 2}".as_slice();
        let out = Talk::listen(tx, text, 1024).await;
        assert_eq!(out.text, "hello\nworld\n");
        assert_eq!(rx.recv().await.as_deref(), Some(b"{\"op\": 1}".as_slice()));
        assert_eq!(rx.recv().await.as_deref(), Some(b"{\"op\": 2}".as_slice()));
    }
}
