//! Resource limits and containment for tool processes (SPEC §5.5).
//!
//! Spawning stays on std's `posix_spawn` path (no `pre_exec` hook, which would force a
//! `fork` of the whole gateway — see bench/README.md for the measured cost). Limits are
//! applied to the child right after it starts:
//! - `prlimit` sets RLIMIT_AS, RLIMIT_FSIZE and RLIMIT_CPU; the window between spawn and
//!   `prlimit` is microseconds. RLIMIT_NPROC is not used: it counts every process of the
//!   user, not of the call, and root ignores it.
//! - A per-call cgroup with `pids.max` (cgroup v1 `pids` controller, or v2 where delegated)
//!   caps processes — the only cap that binds root — and lets cleanup find processes that
//!   escaped the process group with `setsid`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rustix::process::{Pid, Resource, Rlimit, Signal, kill_process, kill_process_group, prlimit};
use toolsmith_core::model::Limits;

/// The scheduling priority of tool processes (higher is nicer).
pub const TOOL_NICENESS: i32 = 10;

/// The engine's default limits; a tool's `limits` override each one.
pub fn defaults() -> Limits {
    Limits {
        output_bytes: Some(1024 * 1024),
        memory_bytes: Some(8 * 1024 * 1024 * 1024),
        processes: Some(256),
        file_size_bytes: Some(1024 * 1024 * 1024),
        cpu_seconds: None,
    }
}

/// Applies the rlimits to a started process. Failures are returned for the log; the call
/// still runs (the timeout and the group kill still hold).
pub fn apply_rlimits(pid: u32, limits: &Limits, niceness: i32) -> Result<(), LimitError> {
    let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
        return Err(LimitError::Pid(pid));
    };
    let set = |resource: Resource, value: Option<u64>| -> Result<(), LimitError> {
        if let Some(v) = value {
            prlimit(
                Some(pid),
                resource,
                Rlimit {
                    current: Some(v),
                    maximum: Some(v),
                },
            )
            .map(drop)
            .map_err(|e| LimitError::Call(format!("prlimit {resource:?}"), e))?;
        }
        Ok(())
    };
    // Tools yield the CPU to the gateway: a tool that saturates the machine (a contained fork
    // bomb, a busy loop) must not delay the gateway's timers and kills.
    if niceness != 0 {
        rustix::process::setpriority_process(Some(pid), niceness)
            .map_err(|e| LimitError::Call("setpriority".into(), e))?;
    }
    set(Resource::As, limits.memory_bytes)?;
    set(Resource::Fsize, limits.file_size_bytes)?;
    set(Resource::Cpu, limits.cpu_seconds)?;
    Ok(())
}

/// Kills every process of the group `pgid` (the call's process and what it started).
pub fn kill_group(pgid: u32) {
    if let Some(pid) = i32::try_from(pgid).ok().and_then(Pid::from_raw) {
        let _ = kill_process_group(pid, Signal::KILL);
    }
}

/// Makes this process non-dumpable: processes of the same user (the tools it runs) can no
/// longer read or write its memory or environment through `/proc`, ptrace or
/// `process_vm_*`, and it leaves no core dump. A process running as root with
/// CAP_SYS_PTRACE still can. Programs it executes start dumpable again (execve resets it).
pub fn not_dumpable() -> Result<(), LimitError> {
    set_dumpable(false)
}

/// Makes this process dumpable (`on`) or not: its own `/proc/self/mem` opens only while it
/// is, unless it runs as root.
pub fn set_dumpable(on: bool) -> Result<(), LimitError> {
    use rustix::process::DumpableBehavior;
    let behaviour = match on {
        true => DumpableBehavior::Dumpable,
        false => DumpableBehavior::NotDumpable,
    };
    rustix::process::set_dumpable_behavior(behaviour)
        .map_err(|error| LimitError::Dumpable { on, error })
}

/// A limit or process setting the kernel refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    #[error("invalid pid {0}")]
    Pid(u32),
    /// The system call (`prlimit AS`, `setpriority`) and its error.
    #[error("{0}: {1}")]
    Call(String, rustix::io::Errno),
    #[error("could not make this process {}dumpable: {error}", if *on { "" } else { "non-" })]
    Dumpable { on: bool, error: rustix::io::Errno },
}

/// A folder of per-call cgroups with a `pids` controller.
///
/// On cgroup v1 each cgroup of the pool has a resident thread of this process living in it:
/// a call borrows one, its process is spawned by that thread and so is born inside — no
/// window in which it could fork outside, and no cgroup membership written per call (such a
/// write sends the next `exec` on the machine through a slow path for an RCU grace period:
/// ~10 ms on a Python start, measured in bench/README.md). On cgroup v2, where threads cannot
/// be moved alone, a cgroup is made per call and the process moved in right after it starts.
#[derive(Debug)]
pub struct Cgroups {
    root: PathBuf,
    next: AtomicU64,
    per_thread: bool,
    idle: Arc<Mutex<Vec<Slot>>>,
    /// Set when the engine's cgroups are dropped: the last slot to go removes the root.
    closed: Arc<std::sync::atomic::AtomicBool>,
}

/// A pooled cgroup and the thread that lives in it. Dropping it ends the thread and removes
/// the cgroup (and the engine's folder, once the engine is gone and this was its last slot),
/// wherever that happens: in the pool, or when a zygote or a session let it go last.
#[derive(Debug)]
struct Slot {
    dir: PathBuf,
    /// What its `pids.max` holds: written only when a call needs another value.
    cap: String,
    jobs: Option<std::sync::mpsc::Sender<Job>>,
    thread: Option<std::thread::JoinHandle<()>>,
    closed: Arc<std::sync::atomic::AtomicBool>,
    /// The confinements its thread's sandbox helpers hold (each helper a task of the cgroup).
    helpers: crate::sandbox::SlotHelpers,
}

impl Drop for Slot {
    fn drop(&mut self) {
        drop(self.jobs.take());
        if let Some(t) = self.thread.take() {
            // Dropped by a job on its own thread, or on one of its sandbox helpers (which its
            // thread ends, so must not wait for it): it is still inside; the next sweep
            // removes the cgroup.
            if t.thread().id() == std::thread::current().id() || crate::sandbox::on_helper_thread()
            {
                return;
            }
            let _ = t.join();
        }
        // Fails (EBUSY) while a process is inside; the next engine's sweep takes it then.
        let _ = std::fs::remove_dir(&self.dir);
        if self.closed.load(Ordering::Acquire)
            && let Some(root) = self.dir.parent()
        {
            let _ = std::fs::remove_dir(root);
        }
    }
}

type Job = Box<dyn FnOnce() + Send>;

impl Cgroups {
    /// Finds a writable pids controller (v1, or v2 with `pids` enabled for children) and
    /// makes a folder for this engine under this process's own cgroup. `None` when there is
    /// none.
    pub fn detect() -> Option<Self> {
        let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let mut candidates: Vec<(PathBuf, bool)> = Vec::new();
        for line in own.lines() {
            let mut parts = line.splitn(3, ':');
            let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            let path = path.trim_start_matches('/');
            if controllers.split(',').any(|c| c == "pids") {
                candidates.push((Path::new("/sys/fs/cgroup/pids").join(path), true));
            } else if controllers.is_empty() {
                let base = Path::new("/sys/fs/cgroup").join(path);
                let enabled = std::fs::read_to_string(base.join("cgroup.subtree_control"))
                    .unwrap_or_default();
                if enabled.split_whitespace().any(|c| c == "pids") {
                    candidates.push((base, false));
                }
            }
        }
        for (base, per_thread) in candidates {
            sweep_dead(&base);
            // One folder per engine: several engines may live in one process.
            static ENGINES: AtomicU64 = AtomicU64::new(0);
            let n = ENGINES.fetch_add(1, Ordering::Relaxed);
            let root = base.join(format!("toolsmith-{}-{n}", std::process::id()));
            if std::fs::create_dir(&root).is_ok() && root.join("cgroup.procs").exists() {
                return Some(Self {
                    root,
                    next: AtomicU64::new(0),
                    per_thread,
                    idle: Arc::default(),
                    closed: Arc::default(),
                });
            }
        }
        None
    }

    /// Every process in this engine's cgroups but this one (whose spawner threads live
    /// there): what calls and sessions are running now.
    pub fn members(&self) -> Vec<i32> {
        let me = std::process::id() as i32;
        std::fs::read_dir(&self.root)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| std::fs::read_to_string(e.path().join("cgroup.procs")).ok())
            .flat_map(|procs| {
                procs
                    .lines()
                    .filter_map(|l| l.trim().parse::<i32>().ok())
                    .collect::<Vec<_>>()
            })
            .filter(|p| *p != me)
            .collect()
    }

    /// A cgroup for one call, allowing `max` processes.
    /// `key`: the identity of the confinement the call's process will be spawned under
    /// ([`crate::sandbox::Confinement::identity`]): a slot whose thread has no helper for it
    /// yet makes room for the one it will start.
    pub fn create(&self, max: Option<u64>, key: Option<&str>) -> Option<CallCgroup> {
        let mut slot = if self.per_thread {
            let pooled = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
            Some(match pooled {
                Some(s) => s,
                None => self.new_slot()?,
            })
        } else {
            None
        };
        let dir = match &slot {
            Some(s) => s.dir.clone(),
            None => {
                let dir = self.root.join(format!(
                    "call-{}",
                    self.next.fetch_add(1, Ordering::Relaxed)
                ));
                std::fs::create_dir(&dir).ok()?;
                dir
            }
        };
        // The resident thread is one of the cgroup's tasks, and so is each sandbox helper of
        // its (and the one it will start for this call).
        let extra = slot.as_ref().map_or(0, |s| 1 + s.helpers.tasks_with(key));
        let cap = max
            .map(|m| m + extra)
            .map_or_else(|| "max".to_string(), |m| m.to_string());
        if slot.as_ref().is_some_and(|s| s.cap == cap) {
            // The slot's cgroup already allows this many.
        } else if std::fs::write(dir.join("pids.max"), &cap).is_err() {
            if slot.is_none() {
                let _ = std::fs::remove_dir(&dir);
            }
            return None;
        } else if let Some(s) = &mut slot {
            s.cap = cap;
        }
        Some(CallCgroup {
            dir,
            slot,
            idle: self.idle.clone(),
            residents: Vec::new(),
            key: key.map(str::to_owned),
        })
    }

    /// A new pooled cgroup with its thread inside, or `None` if the thread cannot enter it.
    fn new_slot(&self) -> Option<Slot> {
        let dir = self.root.join(format!(
            "slot-{}",
            self.next.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir(&dir).ok()?;
        let (jobs, queue) = std::sync::mpsc::channel::<Job>();
        let (ready_tx, ready) = std::sync::mpsc::channel::<bool>();
        let tasks = dir.join("tasks");
        let helpers = crate::sandbox::SlotHelpers::default();
        let theirs = helpers.clone();
        let thread = std::thread::Builder::new()
            .name("toolsmith-spawner".into())
            .spawn(move || {
                let tid = rustix::thread::gettid().as_raw_nonzero().get().to_string();
                let entered = std::fs::write(&tasks, tid).is_ok();
                // One call at a time, pooled again only once its processes are gone.
                crate::sandbox::mark_exclusive_thread(theirs);
                crate::signals::clear_mask();
                let _ = ready_tx.send(entered);
                if entered {
                    for job in queue {
                        job();
                    }
                }
                // Its helpers live in its cgroup too: gone before the cgroup is removed.
                crate::sandbox::end_helpers();
            })
            .ok()?;
        if ready.recv().ok() != Some(true) {
            let _ = thread.join();
            let _ = std::fs::remove_dir(&dir);
            return None;
        }
        Some(Slot {
            dir,
            cap: String::new(),
            jobs: Some(jobs),
            thread: Some(thread),
            closed: self.closed.clone(),
            helpers,
        })
    }
}

/// Removes the folders of toolsmith processes that no longer exist (killed before they could
/// clean up), killing any tool process still inside: it outlived the call that started it.
fn sweep_dead(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix("toolsmith-")
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let root = entry.path();
        for call in std::fs::read_dir(&root)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.path().is_dir())
        {
            let procs =
                std::fs::read_to_string(call.path().join("cgroup.procs")).unwrap_or_default();
            for pid in procs
                .lines()
                .filter_map(|l| l.trim().parse().ok())
                .filter_map(Pid::from_raw)
            {
                let _ = kill_process(pid, Signal::KILL);
            }
            let _ = std::fs::remove_dir(call.path());
        }
        let _ = std::fs::remove_dir(&root);
    }
}

impl Drop for Cgroups {
    fn drop(&mut self) {
        self.closed.store(true, Ordering::Release);
        let slots = std::mem::take(&mut *self.idle.lock().unwrap_or_else(|e| e.into_inner()));
        drop(slots);
        // Slots still held (a zygote's, a session's) remove it when they go.
        let _ = std::fs::remove_dir(&self.root);
    }
}

/// One call's cgroup; releasing it kills every process inside, however it detached.
#[derive(Debug)]
pub struct CallCgroup {
    dir: PathBuf,
    slot: Option<Slot>,
    idle: Arc<Mutex<Vec<Slot>>>,
    /// Processes that live in the cgroup across calls (a warm runtime and its confined
    /// runtimes), spared by sweeps.
    residents: Vec<i32>,
    /// The identity of the confinement its process will be spawned under, if any.
    key: Option<String>,
}

impl CallCgroup {
    /// Runs `job` so that the process it spawns starts inside this cgroup: on the slot's
    /// resident thread, or here followed by moving the process in. The result comes back
    /// through `done`; if nobody waits for it any more, it is dropped there (and with it the
    /// call's guard, which kills what was started).
    pub fn spawn_inside<T: Send + 'static>(
        self,
        job: impl FnOnce(CallCgroup) -> T + Send + 'static,
        pid_of: impl Fn(&T) -> Option<u32>,
    ) -> tokio::sync::oneshot::Receiver<T> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        match self.slot.as_ref().and_then(|s| s.jobs.clone()) {
            Some(jobs) => {
                let handle = tokio::runtime::Handle::try_current().ok();
                let route = self
                    .key
                    .clone()
                    .zip(self.slot.as_ref().map(|s| s.helpers.clone()));
                let run: Job = Box::new(move || {
                    let _entered = handle.as_ref().map(|h| h.enter());
                    let _ = tx.send(job(self));
                });
                // Straight to the slot's sandbox helper holding the call's confinement when
                // it has one (no hand-over through the slot's thread), else the slot's thread.
                let run = match route {
                    Some((key, helpers)) => match helpers.route(&key, run) {
                        Ok(()) => return rx,
                        Err(run) => run,
                    },
                    None => run,
                };
                if let Err(std::sync::mpsc::SendError(run)) = jobs.send(run) {
                    run();
                }
            }
            None => {
                let procs = self.dir.join("cgroup.procs");
                let out = job(self);
                if let Some(pid) = pid_of(&out) {
                    let _ = std::fs::write(procs, pid.to_string());
                }
                let _ = tx.send(out);
            }
        }
        rx
    }

    /// Processes in the cgroup other than this one (whose spawner thread lives there) and
    /// the resident.
    fn pids(&self) -> Vec<i32> {
        let me = std::process::id() as i32;
        std::fs::read_to_string(self.dir.join("cgroup.procs"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .filter(|p| *p != me && !self.residents.contains(p))
            .collect()
    }

    /// Every process in the cgroup but the spawner thread's own process and the resident.
    pub fn members(&self) -> Vec<i32> {
        self.pids()
    }

    /// Makes `pid` the cgroup's resident (spared by [`Self::sweep`]); `None` ends that for
    /// every resident.
    pub fn set_resident(&mut self, pid: Option<u32>) {
        self.residents = pid
            .and_then(|p| i32::try_from(p).ok())
            .into_iter()
            .collect();
    }

    /// Adds `pid` to the residents (`true`), or takes it off (`false`).
    pub fn keep_resident(&mut self, pid: u32, resident: bool) {
        let Ok(pid) = i32::try_from(pid) else { return };
        self.residents.retain(|p| *p != pid);
        if resident {
            self.residents.push(pid);
        }
    }

    /// Allows `max` processes besides the spawner thread (and its sandbox helpers) and the
    /// resident.
    pub fn set_cap(&mut self, max: Option<u64>) {
        let extra = self
            .slot
            .as_ref()
            .map_or(0, |s| 1 + s.helpers.tasks_with(None))
            + self.residents.len() as u64;
        let cap = max
            .map(|m| m + extra)
            .map_or_else(|| "max".to_string(), |m| m.to_string());
        if self.slot.as_ref().is_some_and(|s| s.cap == cap) {
            return;
        }
        if std::fs::write(self.dir.join("pids.max"), &cap).is_ok()
            && let Some(s) = &mut self.slot
        {
            s.cap = cap;
        }
    }

    /// Kills every process in the cgroup but the residents; true when none is left.
    pub fn sweep(&self) -> bool {
        self.kill_all()
    }

    fn kill_all(&self) -> bool {
        for _ in 0..3 {
            let pids = self.pids();
            if pids.is_empty() {
                return true;
            }
            for pid in pids.into_iter().filter_map(Pid::from_raw) {
                let _ = kill_process(pid, Signal::KILL);
            }
        }
        self.pids().is_empty()
    }

    /// Kills what is left; the slot goes back to the pool once it is empty (a background
    /// thread waits for stragglers), a per-call cgroup is removed. True when it was emptied
    /// here, before returning.
    pub fn release(mut self) -> bool {
        if self.kill_all() {
            self.finish(true);
            return true;
        }
        std::thread::spawn(move || self.release_waiting());
        false
    }

    /// [`Self::release`], waiting here (up to a second) until what was killed is gone rather
    /// than in the background: for a holder whose processes go with it — a zygote's slot,
    /// where its spare child exits a moment after the zygote — dropped when the engine
    /// stops, when a background sweep would not outlive the process. Whether it emptied.
    pub fn release_waiting(mut self) -> bool {
        let mut empty = false;
        for _ in 0..200 {
            empty = self.kill_all();
            if empty {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        self.finish(empty);
        empty
    }

    /// Pools the slot again if it is `empty`, or removes a per-call cgroup.
    fn finish(&mut self, empty: bool) {
        match self.slot.take() {
            Some(slot) if empty => self
                .idle
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(slot),
            Some(slot) => drop(slot), // still busy: leave it out of the pool
            None => {
                let _ = std::fs::remove_dir(&self.dir);
            }
        }
    }
}

/// Starts `cmd` (a long-lived process: a session's, an upstream MCP server's) in a cgroup
/// slot of its own where `cgroups` has one, with `limits` and `niceness` applied right after
/// the spawn; returns the child and its slot.
pub(crate) async fn spawn_contained(
    cmd: tokio::process::Command,
    cgroups: Option<&Cgroups>,
    limits: Limits,
    niceness: i32,
    confinement: Option<crate::sandbox::Confinement>,
) -> Result<(std::io::Result<tokio::process::Child>, Option<CallCgroup>), String> {
    crate::signals::default_for_children();
    // What a cgroup slot needs to count the sandbox helper this spawn may start.
    let key = confinement
        .as_ref()
        .filter(|_| cgroups.is_some())
        .map(crate::sandbox::Confinement::identity);
    let launch = move |mut cmd: tokio::process::Command, cgroup: Option<CallCgroup>| {
        let child = crate::sandbox::run_confined(confinement, move || cmd.spawn())
            .map_err(|e| std::io::Error::other(format!("sandbox: {e}")))
            .and_then(|r| r);
        if let Ok(c) = &child {
            let _ = apply_rlimits(c.id().unwrap_or(0), &limits, niceness);
        }
        (child, cgroup)
    };
    match cgroups.and_then(|c| c.create(limits.processes, key.as_deref())) {
        Some(cg) => cg
            .spawn_inside(
                move |cg| launch(cmd, Some(cg)),
                |(c, _)| c.as_ref().ok().and_then(tokio::process::Child::id),
            )
            .await
            .map_err(|_| "the spawning thread went away".to_string()),
        None => Ok(launch(cmd, None)),
    }
}
