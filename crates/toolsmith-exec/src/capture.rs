//! Bounded capture of a process's output: the first and last bytes are kept, the middle is
//! counted and dropped, so a tool that writes a gigabyte costs the gateway at most its cap.

use std::collections::VecDeque;

use std::future::Future;

use tokio::io::{AsyncRead, AsyncReadExt};

/// What was kept of one stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Captured {
    /// The text, with a marker where bytes were dropped; invalid UTF-8 replaced.
    pub text: String,
    /// Every byte the stream carried, kept or not.
    pub total: u64,
    pub truncated: bool,
    /// The bytes were not valid UTF-8.
    pub lossy: bool,
}

/// Keeps up to `cap` bytes: the first half and the last half.
#[derive(Debug)]
pub struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_cap: usize,
    tail_cap: usize,
    total: u64,
}

impl Capture {
    pub fn new(cap: usize) -> Self {
        let head_cap = cap - cap / 2;
        Self {
            head: Vec::new(),
            tail: VecDeque::new(),
            head_cap,
            tail_cap: cap / 2,
            total: 0,
        }
    }

    pub fn push(&mut self, mut chunk: &[u8]) {
        self.total += chunk.len() as u64;
        let room = self.head_cap - self.head.len();
        if room > 0 {
            let n = room.min(chunk.len());
            self.head.extend_from_slice(&chunk[..n]);
            chunk = &chunk[n..];
        }
        if chunk.is_empty() || self.tail_cap == 0 {
            return;
        }
        if chunk.len() >= self.tail_cap {
            self.tail.clear();
            self.tail.extend(&chunk[chunk.len() - self.tail_cap..]);
        } else {
            self.tail.extend(chunk);
            let excess = self.tail.len().saturating_sub(self.tail_cap);
            self.tail.drain(..excess);
        }
    }

    pub fn finish(self) -> Captured {
        let kept = self.head.len() as u64 + self.tail.len() as u64;
        let truncated = self.total > kept;
        let tail: Vec<u8> = self.tail.into_iter().collect();
        let lossy = std::str::from_utf8(&self.head).is_err() || std::str::from_utf8(&tail).is_err();
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        if truncated {
            text.push_str(&format!("\n…[{} bytes omitted]…\n", self.total - kept));
        }
        text.push_str(&String::from_utf8_lossy(&tail));
        Captured {
            text,
            total: self.total,
            truncated,
            lossy,
        }
    }
}

/// Reads `stream` to its end into a capture of `cap` bytes.
pub async fn read_capped(stream: impl AsyncRead + Unpin, cap: usize) -> Captured {
    read_capped_until(stream, cap, std::future::pending()).await
}

/// [`read_capped`], until `stop` is done: then only what the stream holds already is read.
pub async fn read_capped_until(
    mut stream: impl AsyncRead + Unpin,
    cap: usize,
    stop: impl Future<Output = ()>,
) -> Captured {
    let mut capture = Capture::new(cap);
    let mut buf = vec![0u8; 64 * 1024];
    let mut stop = std::pin::pin!(stop);
    let mut stopping = false;
    loop {
        let read = if stopping {
            // One poll: what is there now, else the end (no timer: its tick is a millisecond).
            let mut once = std::pin::pin!(stream.read(&mut buf));
            match std::future::poll_fn(|cx| std::task::Poll::Ready(once.as_mut().poll(cx))).await {
                std::task::Poll::Ready(r) => r,
                std::task::Poll::Pending => break,
            }
        } else {
            tokio::select! {
                biased;
                r = stream.read(&mut buf) => r,
                _ = &mut stop => {
                    stopping = true;
                    continue;
                }
            }
        };
        match read {
            Ok(0) | Err(_) => break,
            Ok(n) => capture.push(&buf[..n]),
        }
    }
    capture.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_head_and_tail_and_counts_everything() {
        let mut c = Capture::new(10);
        for chunk in [b"abc".as_slice(), b"defgh", b"ijklmnop", b"qrstuvwxyz"] {
            c.push(chunk);
        }
        let out = c.finish();
        assert_eq!(out.total, 26);
        assert!(out.truncated);
        assert_eq!(out.text, "abcde\n…[16 bytes omitted]…\nvwxyz");
        let mut small = Capture::new(10);
        small.push(b"hello");
        assert_eq!(
            small.finish(),
            Captured {
                text: "hello".into(),
                total: 5,
                truncated: false,
                lossy: false
            }
        );
        let mut bin = Capture::new(10);
        bin.push(&[0xff, 0xfe, b'a']);
        let out = bin.finish();
        assert!(out.lossy && !out.truncated);
        assert_eq!(out.text, "\u{FFFD}\u{FFFD}a");
    }
}
