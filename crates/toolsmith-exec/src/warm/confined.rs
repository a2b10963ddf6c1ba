//! A zygote's confined runtimes: for a confinement whose calls come again, the zygote forks
//! a copy of itself that restricts itself to that confinement's Landlock ruleset once
//! (`zygote.py`'s `start_confined`), and the gateway sends that confinement's calls to it.
//! Their children are born inside the domain, as a cold call's children are born of a helper
//! thread holding it, instead of each making a domain of its own (what a sandboxed warm call
//! cost: bench/README.md). A confined runtime lives in its zygote's cgroup slot (a resident
//! there, spared by sweeps), never runs user code, holds nothing of any call, and ends when
//! the gateway lets go of its socket, with its zygote's slot, or after the zygote's idle
//! time.

use super::socket::{send_on, socket_pair};
use super::*;

/// Confined runtimes a zygote keeps at most (the least recently used goes first).
const MAX_CONFINED: usize = 4;

/// One confined runtime: the ruleset it holds, its socket, its process.
#[derive(Debug)]
pub(super) struct Confined {
    ruleset: u64,
    pub(super) sock: UnixDatagram,
    pid: u32,
    last: Instant,
    /// The child it forked ahead of its next call.
    pub(super) spare: Spare,
}

impl Zygote {
    /// The confined runtime for ruleset `id` (its index in `self.confined`): the one kept,
    /// else one started now when the zygote has served this confinement before. `None`: the
    /// call goes to the zygote itself (a first call of a confinement, or no runtime could
    /// start; its child then restricts itself).
    pub(super) async fn confined_for(&mut self, id: u64) -> Option<usize> {
        // One idle for about as long as a zygote waits may have exited on its own (an idle
        // time of zero: they never do).
        let stale = self
            .idle_after
            .saturating_sub(Duration::from_secs(1).min(self.idle_after / 4));
        let gone: Vec<usize> = (0..self.confined.len())
            .filter(|i| !self.idle_after.is_zero() && self.confined[*i].last.elapsed() >= stale)
            .collect();
        for i in gone.into_iter().rev() {
            self.let_go(i);
        }
        if let Some(i) = self.confined.iter().position(|c| c.ruleset == id) {
            self.confined[i].last = Instant::now();
            return Some(i);
        }
        let uses = self.uses.entry(id).or_default();
        *uses += 1;
        if *uses < 2 {
            return None;
        }
        if self.confined.len() >= MAX_CONFINED
            && let Some(oldest) = (0..self.confined.len()).min_by_key(|i| self.confined[*i].last)
        {
            self.let_go(oldest);
        }
        // The last call's process limit counted the residents of its time; the spares since
        // forked may leave no room for one more. Nothing runs in the slot between calls: the
        // limit is lifted for the start, and the call sets its own right after.
        if let Some(cg) = &mut self.cgroup {
            cg.set_cap(None);
        }
        match self.start_confined(id).await {
            Ok(c) => {
                if let Some(cg) = &mut self.cgroup {
                    cg.keep_resident(c.pid, true);
                }
                self.confined.push(c);
                Some(self.confined.len() - 1)
            }
            Err(e) => {
                tracing::debug!("warm runtime: no confined runtime for ruleset {id}: {e}");
                None
            }
        }
    }

    /// Asks the zygote for a confined runtime of ruleset `id` (which it holds), over a
    /// socketpair whose far end it hands over.
    async fn start_confined(&mut self, id: u64) -> Result<Confined, String> {
        let (sock, theirs) = socket_pair()?;
        let request = json!({"confine": true, "ruleset": id}).to_string();
        send_on(&self.sock, request.as_bytes(), &[&theirs])?;
        drop(theirs);
        let answer = tokio::time::timeout(ANSWER_TIMEOUT, self.recv())
            .await
            .map_err(|_| "no answer within 5 s".to_string())??;
        let Some(pid) = answer["confined"]
            .as_u64()
            .and_then(|p| u32::try_from(p).ok())
        else {
            return Err(format!("answered {answer}"));
        };
        let confined = Confined {
            ruleset: id,
            sock,
            pid,
            last: Instant::now(),
            spare: Spare::None,
        };
        // Ready once it has restricted itself (it exits if it cannot).
        match tokio::time::timeout(ANSWER_TIMEOUT, super::socket::message(&confined.sock)).await {
            Ok(Ok(ready)) if ready["ready"] == true => Ok(confined),
            Ok(Ok(other)) => Err(format!("its first message was {other}")),
            Ok(Err(e)) => Err(e),
            Err(_) => Err("not ready within 5 s".into()),
        }
    }

    /// Lets go of confined runtime `i`: its socket closed, so it exits (it waits for a call
    /// there: calls of a zygote never overlap), and no longer a resident of the slot. (Not
    /// killed by its pid: its zygote reaps it, and the pid may be another process's by then.)
    pub(super) fn let_go(&mut self, i: usize) {
        let c = self.confined.swap_remove(i);
        if let Some(cg) = &mut self.cgroup {
            cg.keep_resident(c.pid, false);
            // Its spare exits with it (its socket to the runtime closes).
            if let Spare::Ready(pid) = c.spare {
                cg.keep_resident(pid, false);
            }
        }
    }
}
