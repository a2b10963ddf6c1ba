//! Bounded output of one session stream, addressed by absolute byte offsets.
//!
//! A session's output is drained into a ring as it arrives, so a chatty process never blocks
//! on a full pipe; the ring keeps the last `cap` bytes. Offsets count every byte the stream
//! ever carried, so a cursor stays meaningful after the ring dropped what it pointed at: a
//! read from there starts at the oldest byte still kept and says how many were dropped.

use std::collections::VecDeque;

/// The last `cap` bytes of a stream.
#[derive(Debug)]
pub struct Ring {
    buf: VecDeque<u8>,
    cap: usize,
    /// The offset of `buf[0]`: bytes before it were dropped.
    start: u64,
}

/// What a read got.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Slice {
    pub text: String,
    /// The offset just after the returned bytes.
    pub next: u64,
    /// Bytes between the requested offset and the oldest byte kept, lost to the ring.
    pub dropped: u64,
    /// More bytes follow `next` already.
    pub more: bool,
    /// The bytes were not all valid UTF-8.
    pub lossy: bool,
}

impl Ring {
    pub fn new(cap: usize) -> Self {
        Self {
            buf: VecDeque::new(),
            cap: cap.max(1),
            start: 0,
        }
    }

    pub fn push(&mut self, bytes: &[u8]) {
        if bytes.len() >= self.cap {
            let skip = bytes.len() - self.cap;
            self.start += (self.buf.len() + skip) as u64;
            self.buf.clear();
            self.buf.extend(&bytes[skip..]);
            return;
        }
        self.buf.extend(bytes);
        let excess = self.buf.len().saturating_sub(self.cap);
        if excess > 0 {
            self.buf.drain(..excess);
            self.start += excess as u64;
        }
    }

    /// The offset after the last byte written.
    pub fn end(&self) -> u64 {
        self.start + self.buf.len() as u64
    }

    /// Bytes kept now.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Up to `max` bytes from `from` to `until` (the first ones, or the last ones with
    /// `tail`), cut at UTF-8 character boundaries. An incomplete character at the end is
    /// left for the next read unless the stream is `finished`.
    pub fn read(&self, from: u64, until: u64, max: usize, tail: bool, finished: bool) -> Slice {
        let until = until.min(self.end());
        let begin = from.max(self.start).min(until);
        let dropped = self.start.saturating_sub(from);
        let mut lo = begin;
        let mut hi = until;
        if (hi - lo) as usize > max {
            if tail {
                lo = hi - max as u64;
            } else {
                hi = lo + max as u64;
            }
        }
        let at = |o: u64| self.buf[(o - self.start) as usize];
        // Start on a character: skip continuation bytes where the start was cut.
        let mut n = 0;
        while lo < hi && n < 3 && at(lo) & 0xC0 == 0x80 {
            lo += 1;
            n += 1;
        }
        // End on a character: keep back a character whose bytes are not all here yet.
        if hi < self.end() || !finished {
            let mut back = 0u64;
            while back < 3 && hi - back > lo {
                let b = at(hi - back - 1);
                if b & 0xC0 == 0x80 {
                    back += 1;
                    continue;
                }
                let need = match b {
                    0xC0..=0xDF => 2,
                    0xE0..=0xEF => 3,
                    0xF0..=0xF7 => 4,
                    _ => 1,
                };
                if need > back + 1 {
                    hi -= back + 1;
                }
                break;
            }
        }
        let (a, b) = ((lo - self.start) as usize, (hi - self.start) as usize);
        let bytes: Vec<u8> = self.buf.range(a..b).copied().collect();
        let lossy = std::str::from_utf8(&bytes).is_err();
        Slice {
            text: String::from_utf8_lossy(&bytes).into_owned(),
            next: if tail { until.max(hi) } else { hi },
            dropped: dropped + if tail { lo - begin } else { 0 },
            more: !tail && hi < until,
            lossy,
        }
    }
}

/// Where a reader is in a session's output: one offset per stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cursor {
    pub out: u64,
    pub err: u64,
}

/// A cursor no session tool returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "cursor {0:?} is not one a session tool returned (they look like \"o1024.e0\"); copy it verbatim, or omit it to read what came since the last call"
)]
pub struct BadCursor(pub String);

impl Cursor {
    /// The opaque text form models copy verbatim: `o<stdout offset>.e<stderr offset>`.
    pub fn render(self) -> String {
        format!("o{}.e{}", self.out, self.err)
    }

    pub fn parse(text: &str) -> Result<Self, BadCursor> {
        let bad = || BadCursor(text.to_owned());
        let (o, e) = text.trim().split_once('.').ok_or_else(bad)?;
        Ok(Self {
            out: o
                .strip_prefix('o')
                .and_then(|n| n.parse().ok())
                .ok_or_else(bad)?,
            err: e
                .strip_prefix('e')
                .and_then(|n| n.parse().ok())
                .ok_or_else(bad)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_bytes_and_counts_what_it_dropped() {
        let mut r = Ring::new(8);
        r.push(b"hello ");
        r.push(b"world!");
        assert_eq!((r.end(), r.len()), (12, 8));
        let s = r.read(0, u64::MAX, 100, false, true);
        assert_eq!((s.text.as_str(), s.dropped, s.next), ("o world!", 4, 12));
        let s = r.read(6, u64::MAX, 3, false, true);
        assert_eq!((s.text.as_str(), s.next, s.more), ("wor", 9, true));
        let s = r.read(6, u64::MAX, 3, true, true);
        assert_eq!((s.text.as_str(), s.next, s.dropped), ("ld!", 12, 3));
        r.push(&[b'x'; 20]);
        assert_eq!(r.end(), 32);
        assert_eq!(r.read(12, u64::MAX, 100, false, true).dropped, 12);
    }

    #[test]
    fn cuts_at_character_boundaries() {
        let mut r = Ring::new(64);
        r.push("aé".as_bytes()); // 61 c3 a9
        r.push(&"€".as_bytes()[..2]); // the first two of e2 82 ac
        let s = r.read(0, u64::MAX, 100, false, false);
        assert_eq!((s.text.as_str(), s.next), ("aé", 3));
        r.push(&"€".as_bytes()[2..]);
        let s = r.read(s.next, u64::MAX, 100, false, false);
        assert_eq!((s.text.as_str(), s.next, s.lossy), ("€", 6, false));
        // A read starting inside a character skips its rest.
        let s = r.read(2, u64::MAX, 100, false, false);
        assert_eq!(s.text, "€");
    }

    #[test]
    fn cursors_round_trip_and_bad_ones_are_explained() {
        let c = Cursor { out: 90210, err: 7 };
        assert_eq!(Cursor::parse(&c.render()), Ok(c));
        let e = Cursor::parse("90210").expect_err("bad");
        assert!(e.to_string().contains("o1024.e0"), "{e}");
    }
}
