//! A conversation with a running program over its stdin and stdout (code mode's programs
//! call tools this way: the sandbox leaves them no socket). The program writes a message as
//! one line that starts with [`MARK`]; everything else it writes is its output, captured as
//! any process's is. What the gateway answers goes to its stdin a line at a time, after what
//! the call's plan writes there (its arguments, ended by a newline). The conversation ends
//! with the process: its stdin closes when the gateway stops answering.
//!
//! A program may say it is done ([`DONE`], after its answer): its output is then final — what it
//! writes later is dropped — and a warm call answers at once, without waiting for the process
//! to exit: the gateway kills what is left of it and cleans its slot after the answer
//! (`warm`'s early answer; the exit of a forked interpreter, freeing its copied pages, is
//! most of a millisecond). Saying it is done only ends the program sooner: it is no way past
//! a limit.

use std::sync::Mutex;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

use crate::capture::{Capture, Captured};

/// What a message line starts with (the ASCII record separator and a word).
pub const MARK: &[u8] = b"\x1etoolsmith ";
/// The longest message line read; a longer one ends the conversation.
pub const MAX_MESSAGE: usize = 16 * 1024 * 1024;
/// The message that says the program is done (its answer is written).
pub const DONE: &[u8] = b"done";

/// Both ends of one call's conversation, as the engine holds them.
#[derive(Debug)]
pub struct Talk {
    /// The program's messages, the mark taken off.
    pub from_program: mpsc::UnboundedSender<Vec<u8>>,
    /// Lines for its stdin (each ends with a newline when sent).
    pub to_program: Mutex<Option<mpsc::UnboundedReceiver<Vec<u8>>>>,
    /// Told the program's output when it says it is [`DONE`] (the listener's end), and the
    /// engine's end that waits for it.
    done: Mutex<Option<oneshot::Sender<Captured>>>,
    said_done: Mutex<Option<oneshot::Receiver<Captured>>>,
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
        let (done, said_done) = oneshot::channel();
        (
            Self {
                from_program,
                to_program: Mutex::new(Some(to_program)),
                done: Mutex::new(Some(done)),
                said_done: Mutex::new(Some(said_done)),
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

    /// The engine's wait for the program to say it is [`DONE`]: its output then. Taken once.
    pub(crate) fn said_done(&self) -> Option<oneshot::Receiver<Captured>> {
        self.said_done
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    /// Reads `stream` to its end: message lines go to the gateway, the rest is captured (at
    /// most `cap` bytes kept) until the program says it is [`DONE`] — the output is told to
    /// [`Self::said_done`]'s end then, and what follows is read and dropped.
    pub(crate) fn listen(
        &self,
        stream: impl AsyncRead + Unpin + Send + 'static,
        cap: usize,
    ) -> tokio::task::JoinHandle<Captured> {
        let from_program = self.from_program.clone();
        let done = self.done.lock().unwrap_or_else(|e| e.into_inner()).take();
        tokio::spawn(listen(from_program, done, stream, cap))
    }
}

async fn listen(
    from_program: mpsc::UnboundedSender<Vec<u8>>,
    mut done: Option<oneshot::Sender<Captured>>,
    mut stream: impl AsyncRead + Unpin,
    cap: usize,
) -> Captured {
    let mut heard = Heard {
        capture: Capture::new(cap),
        line: Vec::new(),
        finished: None,
    };
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if heard.finished.is_some() {
            continue;
        }
        for &byte in &buf[..n] {
            heard.line.push(byte);
            if byte == b'\n' {
                heard.take_line(&from_program);
            } else if heard.line.len() > MAX_MESSAGE {
                heard.capture.push(&heard.line);
                heard.line.clear();
            }
            if let Some(output) = &heard.finished {
                if let Some(done) = done.take() {
                    let _ = done.send(output.clone());
                }
                break;
            }
        }
    }
    if heard.finished.is_none() && !heard.line.is_empty() {
        heard.take_line(&from_program);
    }
    match heard.finished {
        Some(output) => output,
        None => heard.capture.finish(),
    }
}

/// What the listener has read so far.
struct Heard {
    capture: Capture,
    line: Vec<u8>,
    /// The output, once the program said it is done.
    finished: Option<Captured>,
}

impl Heard {
    /// A whole line: a message, or output.
    fn take_line(&mut self, from_program: &mpsc::UnboundedSender<Vec<u8>>) {
        match self.line.strip_prefix(MARK) {
            Some(message) => {
                let message = message.strip_suffix(b"\n").unwrap_or(message);
                if message == DONE {
                    let capture = std::mem::replace(&mut self.capture, Capture::new(0));
                    self.finished = Some(capture.finish());
                } else {
                    let _ = from_program.send(message.to_vec());
                }
            }
            None => self.capture.push(&self.line),
        }
        self.line.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn message_lines_are_taken_out_of_the_output() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let text = b"hello\n\x1etoolsmith {\"op\": 1}\nworld\n\x1etoolsmith {\"op\": 2}".as_slice();
        let out = listen(tx, None, text, 1024).await;
        assert_eq!(out.text, "hello\nworld\n");
        assert_eq!(rx.recv().await.as_deref(), Some(b"{\"op\": 1}".as_slice()));
        assert_eq!(rx.recv().await.as_deref(), Some(b"{\"op\": 2}".as_slice()));
    }

    #[tokio::test]
    async fn output_is_final_once_the_program_says_it_is_done() {
        let (talk, mut ends) = Talk::new();
        let said = talk.said_done().expect("the engine's end");
        assert!(talk.said_done().is_none(), "taken once");
        let text = b"answer\n\x1etoolsmith {\"op\": 1}\n\x1etoolsmith done\nlater\n\x1etoolsmith {\"op\": 2}\n";
        let out = talk.listen(text.as_slice(), 1024).await.expect("listener");
        assert_eq!(out.text, "answer\n");
        assert_eq!(said.await.expect("told").text, "answer\n");
        assert_eq!(
            ends.messages.recv().await.as_deref(),
            Some(b"{\"op\": 1}".as_slice())
        );
        // Nothing after `done` reaches the gateway.
        drop(talk);
        assert_eq!(ends.messages.recv().await, None);
    }
}
