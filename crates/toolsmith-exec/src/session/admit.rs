//! Limits and owners: who may start a session (per-caller and per-server caps, starts racing
//! each other counted), and whose session an id names — here, in a tombstone, or on another
//! replica, where the call is forwarded when that replica gave an address.

use super::*;

impl Drop for Admitted<'_> {
    fn drop(&mut self) {
        let mut starting = lock(self.starting);
        if let Some(n) = starting.get_mut(&self.owner) {
            *n -= 1;
            if *n == 0 {
                starting.remove(&self.owner);
            }
        }
    }
}

impl Sessions {
    /// Refuses a new session over the limits, naming the caller's sessions; otherwise holds
    /// its place (counted with the running ones) until the returned value is dropped —
    /// once the session is live, or failed to start.
    pub(super) fn admit(&self, ctx: &Ctx<'_>) -> Result<Admitted<'_>> {
        let live = lock(&self.inner.live);
        let mut starting = lock(&self.inner.starting);
        let running: Vec<&Arc<Session>> = live.values().filter(|s| s.exit().is_none()).collect();
        let mine: Vec<&&Arc<Session>> = running.iter().filter(|s| s.owner == ctx.caller).collect();
        let mine_starting = starting.get(ctx.caller).copied().unwrap_or(0);
        let all_starting: usize = starting.values().sum();
        let list = || {
            mine.iter()
                .map(|s| {
                    format!(
                        "{} ({}, idle {} s)",
                        s.id,
                        s.command.join(" "),
                        lock(&s.state).last_used.elapsed().as_secs()
                    )
                })
                .collect::<Vec<_>>()
                .join("; ")
        };
        let limits = self.inner.limits;
        if mine.len() + mine_starting >= limits.max_per_caller {
            return Err(SessionError::session(
                "session_limit",
                format!(
                    "you have {} sessions running, the most one caller may have; end one with session_end first: {}",
                    mine.len() + mine_starting,
                    list()
                ),
            ));
        }
        if running.len() + all_starting >= limits.max_total {
            return Err(SessionError::session(
                "session_limit",
                format!(
                    "this server runs {} sessions, its limit; none is ended to make room. Your sessions: {}",
                    running.len() + all_starting,
                    if mine.is_empty() {
                        "none".to_string()
                    } else {
                        list()
                    }
                ),
            ));
        }
        *starting.entry(ctx.caller.to_owned()).or_default() += 1;
        Ok(Admitted {
            starting: &self.inner.starting,
            owner: ctx.caller.to_owned(),
        })
    }

    /// A call for a session another replica holds, sent to that replica when it gave an
    /// address and answered as it answers; `None` when this replica holds the session or the
    /// call cannot be sent (then [`Self::find`] says where the session is, or that it is lost).
    pub(super) async fn forward(
        &self,
        name: &str,
        args: &Map<String, Value>,
        ctx: &Ctx<'_>,
    ) -> Option<Result<Value>> {
        if ctx.forwarded {
            return None;
        }
        let id = str_arg(args, "session_id")?.trim();
        let replica = replica_of(id)?;
        if replica == self.inner.replica || lock(&self.inner.live).contains_key(id) {
            return None;
        }
        let directory = lock(&self.inner.directory).clone()?;
        // Its replica records a new session off the call path: a call that follows the
        // start at once, through another replica, may look before the record is written.
        let mut at = directory.locate(id).await;
        for _ in 0..RECORD_WAITS {
            if at.is_some() {
                break;
            }
            tokio::time::sleep(RECORD_WAIT).await;
            at = directory.locate(id).await;
        }
        // Another caller's session is not forwarded (the holder would refuse it) and tells
        // them nothing: [`Self::find`] answers as for a session that does not exist.
        let at = at.filter(|at| ctx.admin || at.owner == ctx.caller)?;
        let url = at
            .url
            .as_deref()
            .filter(|_| at.alive && at.status == "running")?;
        let call = Forward {
            tool: name,
            arguments: args,
            caller: ctx.caller,
            admin: ctx.admin,
        };
        Some(match directory.forward(url, call).await {
            Ok(answer) => Err(SessionError::Answered(Box::new(answer), at.replica)),
            Err(why) => Err(SessionError::session(
                "session_lost",
                format!(
                    "session {id} lives on replica {}, which did not answer at {url} ({why}); if it is gone, its processes went with it — start a new session",
                    at.replica
                ),
            )),
        })
    }

    /// The caller's session `id`, or why it cannot be had.
    pub(super) async fn find(&self, args: &Map<String, Value>, ctx: &Ctx<'_>) -> Result<Found> {
        let id = str_arg(args, "session_id").unwrap_or_default().trim();
        let visible = |owner: &str| ctx.admin || owner == ctx.caller;
        if let Some(s) = lock(&self.inner.live).get(id).filter(|s| visible(&s.owner)) {
            s.touch();
            return Ok(Found::Live(s.clone()));
        }
        if let Some(t) = lock(&self.inner.tombs)
            .iter()
            .find(|t| t.id == id && visible(&t.owner))
        {
            return Ok(Found::Tomb(t.clone()));
        }
        let replica = replica_of(id);
        let directory = lock(&self.inner.directory).clone();
        if let (Some(r), Some(d)) = (replica, directory)
            && r != self.inner.replica
            && let Some(at) = d.locate(id).await
            && visible(&at.owner)
        {
            return Err(match at.alive {
                _ if at.status != "running" => SessionError::session(
                    "session_ended",
                    format!(
                        "session {id} lived on replica {} and has {} (this is replica {}); start a new one",
                        at.replica, at.status, self.inner.replica
                    ),
                ),
                true => SessionError::session(
                    "session_elsewhere",
                    format!(
                        "session {id} lives on replica {} (this is replica {}); its calls must reach that server — route by the replica in the id",
                        at.replica, self.inner.replica
                    ),
                ),
                false => SessionError::session(
                    "session_lost",
                    format!(
                        "session {id} lived on replica {}, which stopped reporting it (last seen {} s ago, status {}); its processes ended with it — start a new session",
                        at.replica,
                        now_ms().saturating_sub(at.last_seen_ms) / 1000,
                        at.status
                    ),
                ),
            });
        }
        let mine: Vec<String> = lock(&self.inner.live)
            .values()
            .filter(|s| visible(&s.owner))
            .map(|s| s.id.clone())
            .collect();
        Err(SessionError::session(
            "session_unknown",
            format!(
                "no session {id:?} here (ids come from session_start on this server and end with it); your sessions: {}",
                if mine.is_empty() {
                    "none".into()
                } else {
                    mine.join(", ")
                }
            ),
        ))
    }
}

/// How often, and how long apart, a replica looks again for another's new session.
const RECORD_WAITS: usize = 20;
const RECORD_WAIT: std::time::Duration = std::time::Duration::from_millis(50);

/// The replica a session id names (`s-<replica>-<random>`).
fn replica_of(id: &str) -> Option<&str> {
    id.strip_prefix("s-").and_then(|r| r.split('-').next())
}
