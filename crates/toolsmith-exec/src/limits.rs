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
pub fn apply_rlimits(pid: u32, limits: &Limits, niceness: i32) -> Result<(), String> {
    let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
        return Err(format!("invalid pid {pid}"));
    };
    let set = |resource: Resource, value: Option<u64>| -> Result<(), String> {
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
            .map_err(|e| format!("prlimit {resource:?}: {e}"))?;
        }
        Ok(())
    };
    // Tools yield the CPU to the gateway: a tool that saturates the machine (a contained fork
    // bomb, a busy loop) must not delay the gateway's timers and kills.
    if niceness != 0 {
        rustix::process::setpriority_process(Some(pid), niceness)
            .map_err(|e| format!("setpriority: {e}"))?;
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

/// A folder of per-call cgroups with a `pids` controller.
#[derive(Debug)]
pub struct Cgroups {
    /// This process's own cgroup, where spawning threads return to.
    home: PathBuf,
    root: PathBuf,
    next: AtomicU64,
    /// cgroup v1: single threads can be moved, so children are born inside their cgroup.
    per_thread: bool,
}

impl Cgroups {
    /// Finds a writable pids controller (v1, or v2 with `pids` enabled for children) and
    /// makes `toolsmith-<pid>` under this process's own cgroup. `None` when there is none.
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
            // One folder per engine: several engines may live in one process.
            static ENGINES: AtomicU64 = AtomicU64::new(0);
            let n = ENGINES.fetch_add(1, Ordering::Relaxed);
            let root = base.join(format!("toolsmith-{}-{n}", std::process::id()));
            if std::fs::create_dir(&root).is_ok() && root.join("cgroup.procs").exists() {
                return Some(Self {
                    home: base,
                    root,
                    next: AtomicU64::new(0),
                    per_thread,
                });
            }
        }
        None
    }

    /// A new cgroup for one call, allowing `max` processes.
    pub fn create(&self, max: Option<u64>) -> Option<CallCgroup> {
        let dir = self.root.join(format!(
            "call-{}",
            self.next.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir(&dir).ok()?;
        if let Some(max) = max
            && std::fs::write(dir.join("pids.max"), max.to_string()).is_err()
        {
            let _ = std::fs::remove_dir(&dir);
            return None;
        }
        Some(CallCgroup { dir })
    }

    /// Runs `spawn` on the current thread while that thread is inside `cg`, so the process
    /// it creates is born in the cgroup (no window in which it could fork outside). Where
    /// threads cannot be moved (cgroup v2), the process is moved right after it starts.
    pub fn spawn_inside<T>(
        &self,
        cg: &CallCgroup,
        spawn: impl FnOnce() -> std::io::Result<T>,
        pid_of: impl Fn(&T) -> Option<u32>,
    ) -> std::io::Result<T> {
        let tid = rustix::thread::gettid().as_raw_nonzero().get().to_string();
        let entered = self.per_thread && std::fs::write(cg.dir.join("tasks"), &tid).is_ok();
        let spawned = spawn();
        if entered {
            // Back home; a failure here would leave this thread counted in the call's cgroup.
            let _ = std::fs::write(self.home.join("tasks"), &tid);
        } else if let Some(pid) = spawned.as_ref().ok().and_then(&pid_of) {
            let _ = cg.add(pid);
        }
        spawned
    }
}

impl Drop for Cgroups {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.root);
    }
}

/// One call's cgroup; killing it kills every process inside, however it detached.
#[derive(Debug)]
pub struct CallCgroup {
    dir: PathBuf,
}

impl CallCgroup {
    fn add(&self, pid: u32) -> Result<(), String> {
        std::fs::write(self.dir.join("cgroup.procs"), pid.to_string())
            .map_err(|e| format!("cgroup {}: {e}", self.dir.display()))
    }

    fn pids(&self) -> Vec<i32> {
        std::fs::read_to_string(self.dir.join("cgroup.procs"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }

    /// Kills what is left and removes the cgroup; if processes take a moment to go, a
    /// background thread finishes the removal.
    pub fn kill_and_remove(self) {
        for _ in 0..3 {
            let pids = self.pids();
            if pids.is_empty() {
                break;
            }
            for pid in pids.into_iter().filter_map(Pid::from_raw) {
                let _ = kill_process(pid, Signal::KILL);
            }
        }
        if std::fs::remove_dir(&self.dir).is_ok() {
            return;
        }
        let dir = self.dir.clone();
        std::thread::spawn(move || {
            let cg = CallCgroup { dir };
            for _ in 0..200 {
                for pid in cg.pids().into_iter().filter_map(Pid::from_raw) {
                    let _ = kill_process(pid, Signal::KILL);
                }
                if std::fs::remove_dir(&cg.dir).is_ok() {
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        });
    }
}
