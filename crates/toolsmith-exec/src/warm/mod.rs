//! The warm Python runtime: resident interpreters ("zygotes", `zygote.py`) that fork one child
//! per call of a `script: {warm: true}` tool, so a call costs a fork instead of an
//! interpreter start and the imports.
//!
//! Each zygote is born inside a cgroup slot of its own (spawned by the slot's resident thread,
//! like every tool process), so the children it forks are born there too: the pids cap and
//! the sweep that kills what a call left behind work as for a cold process, sparing only the
//! zygote. A zygote serves one call at a time. Per call the gateway makes the three stdio
//! pipes, sends a JSON header and the pipes' far ends (SCM_RIGHTS over a SOCK_SEQPACKET
//! socketpair) and reads two answers: the child's pid, then its wait status. Completion is
//! that status, never EOF on stdout (a grandchild may hold the pipe); then the group is killed
//! and the slot swept, as for a cold call, and output drained with the same grace.
//!
//! A zygote that misbehaves (dies, answers out of turn, starts a thread) is killed with its
//! slot and replaced on a later call; a zygote is retired after [`MAX_CALLS`] calls or
//! [`MAX_AGE`], and when its runtime changes (its interpreter or a folder on its `sys.path`
//! has another modification time or inode than when it started).
//!
//! A call that finds no idle zygote of its interpreter starts one in the background (when the
//! pool has room) and takes whichever comes first, that one or a busy one coming back. With
//! no room it waits for zygotes still starting, then for one to come back; it runs cold only
//! when none of its interpreter's zygotes has come back for about what a cold start costs (the
//! interpreter's last zygote start, within [`PATIENCE_MIN`]..[`PATIENCE_MAX`]) — they are busy
//! with long calls — or when it has waited four such times in all. A burst of short calls
//! larger than the pool so queues for warm zygotes instead of paying many cold starts at once
//! on a busy machine.

use std::collections::{BTreeMap, HashMap};
use std::io::IoSlice;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustix::net::{
    AddressFamily, SendAncillaryBuffer, SendAncillaryMessage, SendFlags, SocketFlags, SocketType,
};
use serde_json::{Value, json};
use std::os::unix::process::CommandExt;

use tokio::io::AsyncWriteExt;
use tokio::net::UnixDatagram;
use toolsmith_core::model::Limits;

mod confined;
mod socket;
mod spare;
mod zygote;

use crate::capture::{Captured, read_capped, read_capped_until};
use crate::limits::{self, CallCgroup, Cgroups};
use crate::process::{Finished, SpawnError, join_capture};
use crate::sandbox::Base;

/// Zygotes alive at once, at most (each holds a cgroup slot and 6–25 MiB).
pub const MAX_ZYGOTES: usize = 8;
/// Calls a zygote serves before it is replaced.
pub const MAX_CALLS: u32 = 1000;
/// How long a zygote serves before it is replaced.
pub const MAX_AGE: Duration = Duration::from_secs(3600);
/// How long a zygote waits for a call before it exits, by default.
pub const IDLE: Duration = Duration::from_secs(300);
/// How often idle zygotes that exited on their own are looked for.
const REAP_EVERY: Duration = Duration::from_secs(5);
/// How often an idle zygote's runtime is looked at for changes.
const RUNTIME_CHECK: Duration = Duration::from_secs(1);
/// How long a call waits for what it left running to leave the zygote's cgroup once killed.
const SWEEP_WAIT: Duration = Duration::from_millis(250);
/// How long a zygote may take to start (imports included).
const START_TIMEOUT: Duration = Duration::from_secs(20);
/// Bounds of how long a call waits for a busy zygote when the pool is full.
pub const PATIENCE_MIN: Duration = Duration::from_millis(20);
pub const PATIENCE_MAX: Duration = Duration::from_secs(1);
/// A call waits for a busy zygote at most this many times its patience in all.
const QUEUED_MAX: u32 = 4;
/// Landlock rulesets a zygote keeps built (one per confinement its children had; a working
/// folder is part of one); at this many, it lets go of them all before building another.
const MAX_RULESETS: usize = 64;
/// How long a zygote may take to fork a child, or to report a killed one.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(5);

const ZYGOTE: &str = include_str!("zygote.py");

/// The zygotes of an engine.
#[derive(Debug)]
pub struct Warm {
    source: PathBuf,
    /// The seccomp programs (hex) a zygote loads at its start, by its [`Base`]'s rule
    /// ([`crate::sandbox::Sandboxes::zygote_filters`]).
    filters: Vec<Option<String>>,
    /// How long a zygote waits for a call before it exits.
    idle_after: Duration,
    /// Whether its runtimes fork each call's child ahead of it ([`Spare`]).
    spares: bool,
    idle: Mutex<Vec<Zygote>>,
    alive: Arc<AtomicUsize>,
    /// Calls that ran in a zygote, since the engine started.
    served: AtomicU64,
    /// Zygotes started, since the engine started.
    starts: AtomicU64,
    /// Told whenever a zygote becomes idle.
    returned: tokio::sync::Notify,
    /// What the pool knows of each kind's zygotes.
    interpreters: Mutex<HashMap<Kind, Interpreter>>,
    /// Whether the task that reaps zygotes exited while idle has started.
    reaping: std::sync::atomic::AtomicBool,
}

/// Which zygotes may serve a call: its interpreter, and what the zygote applied to itself at
/// its start for every child ([`Base`]: its seccomp filter, capabilities dropped).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Kind {
    pub interpreter: PathBuf,
    pub base: Base,
}

/// What the pool knows of one kind's zygotes.
#[derive(Debug, Default, Clone, Copy)]
struct Interpreter {
    /// Zygotes starting now.
    starting: usize,
    /// How long its last zygote took to start (about what a cold run costs).
    last_start: Option<Duration>,
    /// When one of its zygotes last became idle.
    back: Option<tokio::time::Instant>,
    /// Calls waiting for one of its zygotes.
    waiting: usize,
}

/// One resident interpreter, its socket and its cgroup slot. Dropping it kills it and
/// everything in its slot.
#[derive(Debug)]
struct Zygote {
    kind: Kind,
    /// A SOCK_SEQPACKET socket, driven through tokio's datagram type: recv and send are the
    /// same calls, and a packet socket also reports the zygote's end (a read of 0 bytes).
    sock: UnixDatagram,
    child: Child,
    cgroup: Option<CallCgroup>,
    calls: u32,
    born: Instant,
    /// When it last finished a call (or started).
    last: Instant,
    /// What its imports came from: the interpreter and the folders on its `sys.path`…
    runtime_paths: Vec<PathBuf>,
    /// …as they were when it started, and when that was last compared.
    runtime: Vec<Option<FileStamp>>,
    checked: Instant,
    alive: Arc<AtomicUsize>,
    /// The Landlock rulesets it holds, by the confinement's identity: the number each was
    /// given (numbers are never reused, so a stale one is never mistaken for another).
    rulesets: HashMap<String, u64>,
    next_ruleset: u64,
    /// Its confined runtimes ([`confined`]), and how many calls each ruleset has had.
    confined: Vec<confined::Confined>,
    uses: HashMap<u64, u32>,
    /// When the zygote itself last had a message.
    pinged: Instant,
    /// The child it forked ahead of its next call ([`Spare`]), and whether it is asked for
    /// one.
    spare: Spare,
    spares: bool,
    /// How long it (and each confined runtime) waits for a call before it exits.
    idle_after: Duration,
}

/// A child a runtime (a zygote or a confined runtime) forked ahead of its next call, asked for
/// once a call's cleanup is done (`zygote.py`'s spare): the next call skips the fork, the
/// costliest part of a warm call. A resident of the slot, spared by sweeps, until a call takes
/// it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum Spare {
    #[default]
    None,
    /// Asked for; the runtime's answer not read yet.
    Asked,
    /// Forked, waiting: its pid.
    Ready(u32),
}

/// A file's modification time and inode: what changes when a runtime is set up again or a
/// package is installed into one of its folders.
type FileStamp = (i64, i64, u64);

/// What a warm call runs.
pub struct Call<'a> {
    pub interpreter: &'a Path,
    /// What its zygote must have applied to itself ([`crate::sandbox::Sandboxes::base`]).
    pub base: Base,
    pub script: &'a Path,
    pub stdin: Option<&'a str>,
    pub env: &'a BTreeMap<String, String>,
    pub cwd: &'a Path,
    pub timeout: Duration,
    pub limits: Limits,
    pub niceness: i32,
    /// The confinement the child applies to itself before any user code (its Landlock
    /// ruleset built by the zygote, once per confinement); `None`: none.
    pub sandbox: Option<&'a crate::sandbox::Confinement>,
    /// A conversation with the program over its stdin and stdout ([`crate::talk`]).
    pub talk: Option<&'a crate::talk::Talk>,
}

impl Warm {
    /// Writes the zygote's source into `dir` (next to the scripts). Zygotes exit after
    /// `idle_after` without a call.
    pub fn new(
        dir: &Path,
        idle_after: Duration,
        filters: Vec<Option<String>>,
        spares: bool,
    ) -> Result<Self, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let source = dir.join("toolsmith-zygote.py");
        if std::fs::read_to_string(&source).ok().as_deref() != Some(ZYGOTE) {
            let tmp = dir.join(format!(".toolsmith-zygote.{}", std::process::id()));
            std::fs::write(&tmp, ZYGOTE)
                .and_then(|()| std::fs::rename(&tmp, &source))
                .map_err(|e| format!("{}: {e}", source.display()))?;
        }
        Ok(Self {
            source,
            filters,
            idle_after,
            spares,
            idle: Mutex::default(),
            alive: Arc::default(),
            served: AtomicU64::new(0),
            starts: AtomicU64::new(0),
            returned: tokio::sync::Notify::new(),
            interpreters: Mutex::default(),
            reaping: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Starts (once) the task that lets go of idle zygotes that exited on their own after
    /// `idle_after` without a call: waited for (no `<defunct>` process left behind while the
    /// server stops calling), their cgroup slots given back. It ends with the pool.
    fn reap_exited(self: &Arc<Self>) {
        if self.reaping.swap(true, Ordering::Relaxed) {
            return;
        }
        let pool = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(REAP_EVERY).await;
                let Some(pool) = pool.upgrade() else { return };
                let mut gone = Vec::new();
                {
                    let mut idle = pool.idle.lock().unwrap_or_else(|e| e.into_inner());
                    let mut i = 0;
                    while i < idle.len() {
                        // `try_wait` reaps one that exited.
                        match idle[i].child.try_wait() {
                            Ok(None) => i += 1,
                            _ => gone.push(idle.swap_remove(i)),
                        }
                    }
                }
                // Dropped outside the lock: each gives back its cgroup slot.
                drop(gone);
            }
        });
    }

    /// Zygotes alive now.
    pub fn alive(&self) -> usize {
        self.alive.load(Ordering::Relaxed)
    }

    /// Zygotes started and waiting for a call.
    pub fn ready(&self) -> usize {
        self.idle.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Calls that ran in a zygote so far.
    pub fn served(&self) -> u64 {
        self.served.load(Ordering::Relaxed)
    }

    /// Zygotes started so far.
    pub fn starts(&self) -> u64 {
        self.starts.load(Ordering::Relaxed)
    }

    /// Runs `call` in a zygote. `None`: no zygote could take it (all busy for longer than a
    /// cold start, or none would start) — run it cold.
    pub async fn run(
        self: &Arc<Self>,
        call: &Call<'_>,
        cgroups: Option<&Arc<Cgroups>>,
    ) -> Option<Result<Finished, SpawnError>> {
        self.reap_exited();
        let kind = Kind {
            interpreter: call.interpreter.to_path_buf(),
            base: call.base,
        };
        // A zygote found dead when the call is handed over is replaced once.
        for _ in 0..2 {
            let mut z = self.take(&kind, cgroups).await?;
            match z.run(call).await {
                Attempt::Done(finished, healthy) => {
                    self.served.fetch_add(1, Ordering::Relaxed);
                    if healthy {
                        self.give_back(z);
                    }
                    return Some(Ok(finished));
                }
                Attempt::Answered(mut finished, via) => {
                    self.served.fetch_add(1, Ordering::Relaxed);
                    // The answer goes now; the zygote comes back once its slot is clean (its
                    // folder too: `settled` says whether the call is contained).
                    let (contained, settled) = tokio::sync::oneshot::channel();
                    finished.settled = Some(settled);
                    let warm = self.clone();
                    tokio::spawn(async move {
                        let (was_contained, healthy) = z.settle(via).await;
                        let _ = contained.send(was_contained);
                        if healthy {
                            warm.give_back(z);
                        }
                    });
                    return Some(Ok(finished));
                }
                Attempt::NotStarted(why) => {
                    tracing::warn!("warm runtime: {why}; replacing it");
                    drop(z);
                }
                Attempt::Cold(why) => {
                    tracing::debug!("warm runtime: {why}; this call runs cold");
                    self.give_back(z);
                    return None;
                }
            }
        }
        None
    }

    /// An idle zygote for `interpreter`: one already idle, else one started for it or
    /// given back by another call, whichever comes first (see the module's docs).
    async fn take(self: &Arc<Self>, kind: &Kind, cgroups: Option<&Arc<Cgroups>>) -> Option<Zygote> {
        let mut starting = None;
        let mut waiting_since = tokio::time::Instant::now();
        // When it began to wait for a busy zygote (starts not counted).
        let mut queued: Option<tokio::time::Instant> = None;
        let mut waiting = None;
        loop {
            // Listening before looking, so a zygote given back in between is not missed.
            let returned = self.returned.notified();
            tokio::pin!(returned);
            returned.as_mut().enable();
            if let Some(z) = self.take_idle(kind) {
                return Some(z);
            }
            // Counted as waiting, so that calls of other interpreters leave its idle
            // zygotes alone while it does.
            waiting.get_or_insert_with(|| self.count(kind, |s| &mut s.waiting));
            if starting.is_none() {
                starting = self.start_in_background(kind, cgroups);
            }
            match starting.as_mut() {
                Some(started) => tokio::select! {
                    () = &mut returned => {}
                    ok = started => {
                        if ok != Ok(true) {
                            return None;
                        }
                        // It is idle now, unless another waiting call took it first.
                        starting = None;
                        waiting_since = tokio::time::Instant::now();
                    }
                },
                // Zygotes of this interpreter still starting (a burst's first calls): wait
                // for them, then for one to come back.
                None if self.stats(kind).starting > 0 => {
                    returned.await;
                    waiting_since = tokio::time::Instant::now();
                }
                // Otherwise wait while its zygotes keep coming back (another call may take
                // the one that does, but then the queue moves); run cold when none has for
                // about a cold start's time (they are busy with long calls), or after
                // [`QUEUED_MAX`] such times in all (calls keep arriving faster than the
                // zygotes answer them).
                None => {
                    let patience = self.patience(kind);
                    let queued = *queued.get_or_insert_with(tokio::time::Instant::now);
                    let back = self.stats(kind).back;
                    let since = back.map_or(waiting_since, |b| b.max(waiting_since));
                    let deadline = (since + patience).min(queued + patience * QUEUED_MAX);
                    if tokio::time::timeout_at(deadline, returned).await.is_err() {
                        return self.take_idle(kind);
                    }
                }
            }
        }
    }

    /// The most recently used idle zygote for `interpreter` (of those whose spares are
    /// forked, when there are: [`Zygote::spares_ready`]), after letting go of those
    /// retired, gone or about to go idle. With none and the pool full, an idle one of
    /// another interpreter that no call is waiting for is retired to make room.
    fn take_idle(&self, kind: &Kind) -> Option<Zygote> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        // A margin for one about to exit on its own: a second, or a quarter of a short idle
        // time (so a short one still leaves time to be taken).
        let idle_after = self
            .idle_after
            .saturating_sub(Duration::from_secs(1).min(self.idle_after / 4));
        idle.retain_mut(|z| {
            z.calls < MAX_CALLS
                && z.born.elapsed() < MAX_AGE
                && z.last.elapsed() < idle_after
                && matches!(z.child.try_wait(), Ok(None))
                && !z.runtime_changed()
        });
        // The most recently used one whose spares are forked, else the most recently used.
        let ready = (0..idle.len())
            .rev()
            .find(|&i| idle[i].kind == *kind && idle[i].spares_ready());
        if let Some(i) = ready.or_else(|| idle.iter().rposition(|z| z.kind == *kind)) {
            return Some(idle.swap_remove(i));
        }
        if self.alive() >= MAX_ZYGOTES
            && let Some(i) = idle.iter().position(|z| self.stats(&z.kind).waiting == 0)
        {
            idle.remove(i);
        }
        None
    }

    /// Starts a zygote that joins the idle ones when ready, if the pool has room; the
    /// receiver learns whether it started.
    fn start_in_background(
        self: &Arc<Self>,
        kind: &Kind,
        cgroups: Option<&Arc<Cgroups>>,
    ) -> Option<tokio::sync::oneshot::Receiver<bool>> {
        if !self.reserve() {
            return None;
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        let starting = self.starting(kind);
        let (warm, kind, cgroups) = (self.clone(), kind.clone(), cgroups.cloned());
        tokio::spawn(async move {
            let started = warm.start(&kind, cgroups.as_ref()).await;
            let ok = started.is_ok();
            match started {
                Ok(z) => warm.give_back(z),
                Err(e) => tracing::warn!("warm runtime {}: {e}", kind.interpreter.display()),
            }
            drop(starting);
            let _ = tx.send(ok);
        });
        Some(rx)
    }

    /// Counts one more zygote alive, if the pool has room.
    fn reserve(&self) -> bool {
        if self.alive.fetch_add(1, Ordering::Relaxed) >= MAX_ZYGOTES {
            self.alive.fetch_sub(1, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// How long a call waits for a busy zygote when no other can start: about a cold
    /// start's cost, as the interpreter's last zygote start measured it.
    fn patience(&self, kind: &Kind) -> Duration {
        self.stats(kind)
            .last_start
            .unwrap_or(PATIENCE_MAX / 4)
            .clamp(PATIENCE_MIN, PATIENCE_MAX)
    }

    /// A copy of what the pool knows of `interpreter`.
    fn stats(&self, kind: &Kind) -> Interpreter {
        let all = self.interpreters.lock().unwrap_or_else(|e| e.into_inner());
        all.get(kind).copied().unwrap_or_default()
    }

    /// Notes a start of `interpreter` begun; the guard notes it ended (and wakes the calls
    /// waiting for it, whether it started or not).
    fn starting(self: &Arc<Self>, kind: &Kind) -> impl Drop + use<> {
        let count = self.count(kind, |s| &mut s.starting);
        let warm = self.clone();
        scopeguard(move || {
            drop(count);
            warm.returned.notify_waiters();
        })
    }

    /// Adds one to a count of `interpreter`'s; the guard takes it off.
    fn count(
        self: &Arc<Self>,
        kind: &Kind,
        field: fn(&mut Interpreter) -> &mut usize,
    ) -> impl Drop + use<> {
        let mut starts = self.interpreters.lock().unwrap_or_else(|e| e.into_inner());
        *field(starts.entry(kind.clone()).or_default()) += 1;
        drop(starts);
        let (warm, kind) = (self.clone(), kind.clone());
        scopeguard(move || {
            let mut starts = warm.interpreters.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(s) = starts.get_mut(&kind) {
                *field(s) -= 1;
            }
        })
    }

    /// Starts a zygote for `interpreter` and keeps it idle, unless one is idle already or
    /// the pool is full.
    pub async fn prewarm(self: &Arc<Self>, kind: &Kind, cgroups: Option<&Arc<Cgroups>>) {
        {
            let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
            if idle.iter().any(|z| z.kind == *kind) {
                return;
            }
        }
        if let Some(started) = self.start_in_background(kind, cgroups) {
            let _ = started.await;
        }
    }

    fn give_back(&self, mut z: Zygote) {
        z.last = Instant::now();
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        // Those that exited while idle are let go here too, so a server that stops calling
        // gets its memory back and holds no slot for them.
        idle.retain_mut(|z| matches!(z.child.try_wait(), Ok(None)));
        let kind = z.kind.clone();
        idle.push(z);
        drop(idle);
        self.interpreters
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(kind)
            .or_default()
            .back = Some(tokio::time::Instant::now());
        self.returned.notify_waiters();
    }
}

/// Runs `f` when dropped, unless forgotten.
fn scopeguard(f: impl FnOnce()) -> impl Drop {
    struct Guard<F: FnOnce()>(Option<F>);
    impl<F: FnOnce()> Drop for Guard<F> {
        fn drop(&mut self) {
            if let Some(f) = self.0.take() {
                f();
            }
        }
    }
    Guard(Some(f))
}

enum Attempt {
    /// The call ran; `bool`: the zygote is fit for another.
    Done(Finished, bool),
    /// The call answered before its process ended (a talking program said it was done):
    /// the zygote settles it ([`Zygote::settle`]) before another call; `via`: the runtime
    /// that ran it.
    Answered(Finished, Option<usize>),
    /// The zygote could not start the call (nothing of it ran).
    NotStarted(String),
    /// The zygote declined the call (its script does not compile there, or it must
    /// restart): nothing of it ran, and it runs cold, where the interpreter reports
    /// whatever is wrong exactly as it always does.
    Cold(String),
}
