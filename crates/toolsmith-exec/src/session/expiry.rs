//! Reads, ends, expiry and tombstones: `session_read`, `session_end` and `session_list`,
//! the reaper that ends idle and old sessions, and what answers for a session once it ended.

use super::state::{describe_exit, exit_json, matched, put_exit, put_output};
use super::*;

impl Tomb {
    pub(super) fn gone(&self) -> SessionError {
        let code = match self.how {
            "expired" => "session_expired",
            _ => "session_ended",
        };
        SessionError::session(
            code,
            format!(
                "session {} {} at {} ms since the epoch ({}); start a new one. Its output ended with: {}",
                self.id,
                self.how,
                self.at_ms,
                describe_exit(self.exit.as_ref()),
                crate::tail(&self.stdout_tail, 500)
            ),
        )
    }

    pub(super) fn json(&self) -> Value {
        let mut v = json!({
            "session_id": self.id,
            "kind": self.kind.name(),
            "command": self.command,
            "status": self.how,
            "ended_ms": self.at_ms,
            "stdout_tail": self.stdout_tail,
            "cursor": self.cursor.render(),
            "message": format!("session {} {} at {} ms since the epoch ({})", self.id, self.how, self.at_ms, describe_exit(self.exit.as_ref())),
        });
        if self.kind != Kind::Terminal {
            v["stderr_tail"] = self.stderr_tail.clone().into();
        }
        let (code, signal) = exit_json(self.exit.as_ref());
        v["exit_code"] = code;
        v["signal"] = signal;
        v
    }
}

impl Inner {
    /// Ends `s`: `sig` to its group, KILL after `grace`, its output drained; it becomes a
    /// tombstone. Whoever ends it first decides `how`.
    pub(super) async fn end(
        &self,
        s: &Arc<Session>,
        sig: rustix::process::Signal,
        grace: Duration,
        how: &'static str,
    ) -> Tomb {
        let how = {
            let mut st = lock(&s.state);
            *st.ending.get_or_insert(how)
        };
        if s.exit().is_none() {
            if let Some(p) = i32::try_from(s.pid)
                .ok()
                .and_then(rustix::process::Pid::from_raw)
            {
                let _ = rustix::process::kill_process_group(p, sig);
            }
            let deadline = tokio::time::Instant::now() + grace;
            if !s
                .wait(deadline, |st| {
                    if st.exit.is_some() {
                        Check::Done
                    } else {
                        Check::Pending
                    }
                })
                .await
            {
                s.kill_all();
                // The pump reports the exit once the output is drained (at most its grace).
                let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
                s.wait(deadline, |st| {
                    if st.exit.is_some() {
                        Check::Done
                    } else {
                        Check::Pending
                    }
                })
                .await;
            }
        }
        s.kill_all();
        self.bury(s, how)
    }

    /// Moves `s` from the live sessions to the tombstones.
    pub(super) fn bury(&self, s: &Arc<Session>, how: &'static str) -> Tomb {
        let st = lock(&s.state);
        let tail = |r: &Ring| r.read(0, u64::MAX, TOMB_TAIL, true, true).text;
        let tomb = Tomb {
            id: s.id.clone(),
            owner: s.owner.clone(),
            kind: s.kind,
            command: s.command.clone(),
            how,
            at_ms: now_ms(),
            at: Instant::now(),
            exit: st.exit.clone(),
            stdout_tail: tail(&st.out),
            stderr_tail: tail(&st.err),
            cursor: st.ends(),
        };
        drop(st);
        let removed = lock(&self.live).remove(&s.id).is_some();
        if removed {
            let mut tombs = lock(&self.tombs);
            tombs.push_back(tomb.clone());
            while tombs.len() > self.limits.max_tombstones {
                tombs.pop_front();
            }
            drop(tombs);
            if let Some(d) = lock(&self.directory).clone() {
                d.note(DirectoryEvent::Ended {
                    id: s.id.clone(),
                    status: how.into(),
                });
            }
            tracing::info!(session = %s.id, how, "session ended");
        }
        tomb
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        for s in lock(&self.live).values() {
            s.kill_all();
        }
    }
}

/// Ends idle and old sessions, forgets old tombstones, and reports the live sessions to the
/// directory; stops when the engine is gone.
pub(super) async fn reap(inner: Weak<Inner>) {
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_beat = Instant::now();
    loop {
        tick.tick().await;
        let Some(inner) = inner.upgrade() else { return };
        let all: Vec<Arc<Session>> = lock(&inner.live).values().cloned().collect();
        for s in &all {
            let (idle, ending) = {
                let st = lock(&s.state);
                (st.last_used.elapsed(), st.ending.is_some())
            };
            if !ending && (idle >= s.idle_timeout || s.started.elapsed() >= s.lifetime) {
                lock(&s.state).ending.get_or_insert("expired");
                let inner = inner.clone();
                let s = s.clone();
                tokio::spawn(async move {
                    inner
                        .end(
                            &s,
                            rustix::process::Signal::TERM,
                            Duration::from_secs(1),
                            "expired",
                        )
                        .await;
                });
            }
        }
        let keep = inner.limits.tombstone_for;
        lock(&inner.tombs).retain(|t| t.at.elapsed() < keep);
        if last_beat.elapsed() >= HEARTBEAT {
            last_beat = Instant::now();
            if let Some(d) = lock(&inner.directory).clone() {
                d.note(DirectoryEvent::Alive {
                    replica: inner.replica.clone(),
                    ids: all.iter().map(|s| s.id.clone()).collect(),
                });
            }
        }
    }
}

impl Sessions {
    pub(super) async fn read(
        &self,
        args: &Map<String, Value>,
        ctx: &Ctx<'_>,
        max_wait: Duration,
    ) -> Result<Value> {
        let s = match self.find(args, ctx).await? {
            Found::Live(s) => s,
            Found::Tomb(t) => return Ok(t.json()),
        };
        let until = until_arg(args)?;
        let from = match str_arg(args, "cursor") {
            Some(c) => Cursor::parse(c).map_err(|e| SessionError::Invalid(e.to_string()))?,
            None => lock(&s.state).read,
        };
        let tail = args.get("tail").and_then(Value::as_bool).unwrap_or(false);
        let max_bytes = u64_arg(args, "max_bytes", 65536) as usize;
        let wait = Duration::from_millis(u64_arg(args, "timeout_ms", 0)).min(max_wait);
        if !wait.is_zero() {
            let deadline = tokio::time::Instant::now() + wait;
            s.wait(deadline, |st| match &until {
                _ if st.exit.is_some() => Check::Done,
                Some(re) if matched(st, re, from) => Check::Done,
                Some(_) => Check::Pending,
                None if st.ends().out > from.out || st.ends().err > from.err => Check::Done,
                None => Check::Pending,
            })
            .await;
        }
        let mut st = lock(&s.state);
        let (out, err) = st.output(from, None, max_bytes, tail);
        let mut v = json!({"session_id": s.id, "status": st.status()});
        if let Some(r) = &st.running {
            v["running_command"] = r.command.clone().into();
        }
        put_output(&mut v, s.kind, &out, &err);
        put_exit(&mut v, st.exit.as_ref());
        Ok(v)
    }

    pub(super) async fn end(&self, args: &Map<String, Value>, ctx: &Ctx<'_>) -> Result<Value> {
        let s = match self.find(args, ctx).await? {
            Found::Live(s) => s,
            Found::Tomb(t) => {
                let mut v = t.json();
                v["already_ended"] = true.into();
                return Ok(v);
            }
        };
        let sig = match str_arg(args, "signal").unwrap_or("TERM") {
            "INT" => rustix::process::Signal::INT,
            "HUP" => rustix::process::Signal::HUP,
            "KILL" => rustix::process::Signal::KILL,
            _ => rustix::process::Signal::TERM,
        };
        let grace = Duration::from_millis(u64_arg(args, "grace_ms", 2000)).min(MAX_WAIT);
        Ok(self.inner.end(&s, sig, grace, "ended").await.json())
    }

    pub(super) fn list(&self, ctx: &Ctx<'_>) -> Value {
        let live: Vec<Arc<Session>> = lock(&self.inner.live)
            .values()
            .filter(|s| ctx.admin || s.owner == ctx.caller)
            .cloned()
            .collect();
        let mut rows: Vec<Value> = live
            .iter()
            .map(|s| {
                let st = lock(&s.state);
                let mut v = json!({
                    "session_id": s.id,
                    "kind": s.kind.name(),
                    "command": s.command,
                    "cwd": st.cwd.to_string_lossy(),
                    "pid": s.pid,
                    "status": st.status(),
                    "started_ms": s.started_ms,
                    "idle_ms": st.last_used.elapsed().as_millis() as u64,
                    "buffered_bytes": st.out.len() + st.err.len(),
                    "cursor": st.ends().render(),
                });
                if ctx.admin {
                    v["owner"] = s.owner.clone().into();
                }
                if let Some(r) = &st.running {
                    v["running_command"] = r.command.clone().into();
                }
                put_exit(&mut v, st.exit.as_ref());
                v
            })
            .collect();
        rows.sort_by_key(|r| r["started_ms"].as_u64());
        let limits = self.inner.limits;
        json!({
            "sessions": rows,
            "limits": {"per_caller": limits.max_per_caller, "per_server": limits.max_total},
            "replica": self.inner.replica,
        })
    }
}

impl Sessions {
    pub(super) fn start_reaper(&self) {
        self.inner.reaper.call_once(|| {
            let weak = Arc::downgrade(&self.inner);
            tokio::spawn(reap(weak));
        });
    }
}
