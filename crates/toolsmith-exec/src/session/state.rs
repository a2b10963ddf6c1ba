//! One session's behaviour: its output, completion and exit as they arrive, the waits on
//! them, and how they are shown.

use super::*;

impl Kind {
    pub(super) fn name(self) -> &'static str {
        match self {
            Self::Shell => "shell",
            Self::Process => "process",
            Self::Terminal => "terminal",
        }
    }
}

impl State {
    pub(super) fn ends(&self) -> Cursor {
        Cursor {
            out: self.out.end(),
            err: self.err.end(),
        }
    }

    pub(super) fn status(&self) -> &'static str {
        match (&self.exit, &self.running) {
            (Some(_), _) => "exited",
            (None, Some(_)) => "busy",
            (None, None) => "running",
        }
    }

    /// The output after `from` (up to `upto`), and the cursor it ends at remembered as
    /// where the next read without a cursor starts.
    pub(super) fn output(
        &mut self,
        from: Cursor,
        upto: Option<Cursor>,
        max: usize,
        tail: bool,
    ) -> (Slice, Slice) {
        let finished = self.exit.is_some();
        let upto = upto.unwrap_or(Cursor {
            out: u64::MAX,
            err: u64::MAX,
        });
        let out = self.out.read(from.out, upto.out, max, tail, finished);
        let err = self.err.read(from.err, upto.err, max, tail, finished);
        self.read = Cursor {
            out: out.next,
            err: err.next,
        };
        self.last_used = Instant::now();
        (out, err)
    }
}

impl Session {
    pub(super) fn bump(&self) {
        self.changed.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// Output arrived on stdout, or stderr when `err`.
    pub(crate) fn push(&self, err: bool, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        {
            let mut st = lock(&self.state);
            match err {
                false => st.out.push(bytes),
                true => st.err.push(bytes),
            }
            st.last_output = Some(Instant::now());
        }
        self.bump();
    }

    /// A completion record the shell wrote: `<nonce> <seq> <status> <folder>`.
    pub(crate) fn marker(&self, record: &str) {
        let mut parts = record.splitn(4, ' ');
        let (Some(nonce), Some(seq), Some(code), Some(cwd)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return;
        };
        if nonce != self.nonce {
            return;
        }
        let (Ok(seq), Ok(code)) = (seq.parse::<u64>(), code.parse::<i32>()) else {
            return;
        };
        {
            let mut st = lock(&self.state);
            if st.running.as_ref().is_some_and(|r| r.seq == seq) {
                st.running = None;
            }
            st.cwd = PathBuf::from(cwd);
            let upto = st.ends();
            st.done = Some(Done { seq, code, upto });
        }
        self.bump();
    }

    /// The leader exited and the output ended (or its grace passed).
    pub(crate) fn exited(&self, status: Option<std::process::ExitStatus>) {
        use std::os::unix::process::ExitStatusExt;
        {
            let mut st = lock(&self.state);
            st.exit = Some(Exit {
                code: status.and_then(|s| s.code()),
                signal: status.and_then(|s| s.signal()),
                at_ms: now_ms(),
            });
        }
        self.kill_all();
        self.bump();
    }

    /// Kills the session's process group and empties its cgroup.
    pub(crate) fn kill_all(&self) {
        kill_group(self.pid);
        if let Some(cg) = lock(&self.cgroup).take() {
            cg.release();
        }
        if let Some(l) = &self.ledger {
            l.remove(self.pid);
        }
    }

    pub(super) fn exit(&self) -> Option<Exit> {
        lock(&self.state).exit.clone()
    }

    /// Waits until `check` holds (it may also name a time to look again), or `deadline`.
    pub(super) async fn wait(
        &self,
        deadline: tokio::time::Instant,
        mut check: impl FnMut(&State) -> Check,
    ) -> bool {
        let mut rx = self.changed.subscribe();
        loop {
            let wake = match check(&lock(&self.state)) {
                Check::Done => return true,
                Check::Again(at) => at.map_or(deadline, |a| a.min(deadline)),
                Check::Pending => deadline,
            };
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::select! {
                r = rx.changed() => if r.is_err() { return false },
                _ = tokio::time::sleep_until(wake) => {}
            }
        }
    }

    /// Signals every process of the session but the shell (a shell's running command), or
    /// the whole group (any other session).
    pub(super) fn signal_job(&self, sig: rustix::process::Signal) {
        use rustix::process::{Pid, kill_process, kill_process_group};
        if self.kind == Kind::Shell {
            let cg = lock(&self.cgroup);
            for pid in spawn::members(cg.as_ref(), self.pid) {
                if let Some(p) = Pid::from_raw(pid) {
                    let _ = kill_process(p, sig);
                }
            }
        } else if let Some(p) = i32::try_from(self.pid).ok().and_then(Pid::from_raw) {
            let _ = kill_process_group(p, sig);
        }
    }

    pub(super) fn touch(&self) {
        lock(&self.state).last_used = Instant::now();
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // However the session goes (the engine dropped, its task dropped with the runtime),
        // its processes go too.
        if self.exit().is_none() {
            self.kill_all();
        }
    }
}

pub(super) fn exit_json(e: Option<&Exit>) -> (Value, Value) {
    (
        e.and_then(|e| e.code).map_or(Value::Null, Value::from),
        e.and_then(|e| e.signal).map_or(Value::Null, Value::from),
    )
}

/// Whether the output after `from` matches `re` (looking at most at the last 256 KiB).
pub(super) fn matched(st: &State, re: &Regex, from: Cursor) -> bool {
    const WINDOW: u64 = 256 * 1024;
    let look = |r: &Ring, from: u64| {
        let from = from.max(r.end().saturating_sub(WINDOW));
        r.end() > from && re.is_match(&r.read(from, u64::MAX, usize::MAX, false, true).text)
    };
    look(&st.out, from.out) || look(&st.err, from.err)
}

pub(super) fn put_output(v: &mut Value, kind: Kind, out: &Slice, err: &Slice) {
    let m = v.as_object_mut().expect("object");
    m.insert("stdout".into(), out.text.clone().into());
    if kind != Kind::Terminal {
        m.insert("stderr".into(), err.text.clone().into());
    }
    m.insert(
        "cursor".into(),
        Cursor {
            out: out.next,
            err: err.next,
        }
        .render()
        .into(),
    );
    m.insert("dropped_bytes".into(), (out.dropped + err.dropped).into());
    m.insert("more".into(), (out.more || err.more).into());
    if out.lossy || err.lossy {
        m.insert("lossy".into(), true.into());
    }
}

pub(super) fn put_exit(v: &mut Value, exit: Option<&Exit>) {
    if let Some(e) = exit {
        let (code, signal) = exit_json(Some(e));
        v["exit_code"] = code;
        v["signal"] = signal;
        v["exited_ms"] = e.at_ms.into();
    }
}

pub(super) fn describe_exit(e: Option<&Exit>) -> String {
    match e {
        Some(Exit { code: Some(c), .. }) => format!("exit status {c}"),
        Some(Exit {
            signal: Some(s), ..
        }) => format!("killed by signal {s}"),
        _ => "no exit status".into(),
    }
}
