//! Applying a [`Confinement`]: a process inherits its confinement from the thread that
//! spawns it (Landlock domain, seccomp filter, `no_new_privs` and capabilities are all per
//! thread in Linux, and a thread's children — threads and processes — inherit them), so
//! nothing of it touches the gateway's other threads.
//!
//! What is the same for many calls is done once. Each thread that spawns keeps **helper**
//! threads, born of it (so in its cgroup), confined for good:
//! - on a cgroup slot's resident thread, which serves one call at a time and is pooled again
//!   only once everything the call started is gone, a helper per whole confinement — its
//!   Landlock rules included, which name the call's working folder (by path and inode) and
//!   program — spawns the call's process itself: a call whose confinement was seen before on
//!   that slot (the same tool, in a working folder handed out again) hands its spawn over
//!   and nothing is applied at all. Two calls never share a domain at the same time, since a
//!   slot and a working folder are each one call's until it is over;
//! - anywhere else (no cgroups, or cgroup v2), a helper per kind of filter has dropped its
//!   capabilities, set `no_new_privs` and loaded the seccomp filter; each call starts a fresh
//!   thread of it, which adds the call's Landlock rules, spawns, and ends.

use std::cell::RefCell;
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::{Arc, Mutex, mpsc};

use rustix::thread::{self as th, CapabilitiesSecureBits, CapabilitySet, CapabilitySets};

use super::{Confinement, ruleset};

/// Work for a helper thread.
pub(crate) type Job = Box<dyn FnOnce() + Send>;

/// A helper: what to send it work on, and its thread. Dropped with its thread's locals,
/// which ends it; [`end_helpers`] also waits for that.
struct Helper {
    jobs: mpsc::Sender<Job>,
    thread: std::thread::JoinHandle<()>,
}

impl Helper {
    /// A helper born of this thread, confined for good by `confine` — or why it could not be.
    fn start(
        domain: Option<String>,
        confine: impl FnOnce() -> Result<(), String> + Send + 'static,
    ) -> Result<Self, String> {
        let (jobs, queue) = mpsc::channel::<Job>();
        let (ready, started) = mpsc::sync_channel(1);
        let thread = std::thread::Builder::new()
            .name("toolsmith-sandbox".into())
            .spawn(move || {
                // What it spawns inherits its mask: none blocked.
                crate::signals::clear_mask();
                ON_HELPER.with(|h| h.set(true));
                let confined = confine();
                let ok = confined.is_ok();
                if ok {
                    CONFINED_AS.with(|c| *c.borrow_mut() = domain);
                }
                let _ = ready.send(confined);
                if ok {
                    for job in queue {
                        job();
                    }
                }
            })
            .map_err(|e| format!("starting the sandbox's helper thread: {e}"))?;
        started
            .recv()
            .unwrap_or_else(|_| Err("the sandbox's helper thread went away".into()))?;
        Ok(Self { jobs, thread })
    }

    /// Ends it and waits until its thread is gone.
    fn end(self) {
        drop(self.jobs);
        let _ = self.thread.join();
    }
}

/// Ends this thread's helpers and waits until their threads are gone: a cgroup slot's
/// thread does before its cgroup is removed (a thread still in it would keep it).
pub(crate) fn end_helpers() {
    // The slot's routes hold senders to its helpers: dropped first, or a helper would wait
    // for work for ever.
    if let Some(slot) = SLOT.with(|s| s.borrow().clone()) {
        slot.list().clear();
    }
    let helpers: Vec<Helper> = HELPERS.with(|h| h.borrow_mut().drain().map(|(_, h)| h).collect());
    let domains: Vec<Helper> = DOMAINS.with(|d| d.borrow_mut().drain(..).map(|(_, h)| h).collect());
    for helper in helpers.into_iter().chain(domains) {
        helper.end();
    }
}

thread_local! {
    /// This thread's helpers, by seccomp program and whether capabilities are dropped.
    static HELPERS: RefCell<HashMap<(usize, bool), Helper>> = RefCell::default();
    /// This thread's helpers holding a whole confinement, most recently used last.
    static DOMAINS: RefCell<Vec<(String, Helper)>> = const { RefCell::new(Vec::new()) };
    /// Set on a thread that serves one call at a time (a cgroup slot's): what its helpers
    /// hold, shared with the slot, which counts them among its cgroup's tasks.
    static SLOT: RefCell<Option<SlotHelpers>> = const { RefCell::new(None) };
    /// On a helper holding a whole confinement: its identity. A spawn under that very
    /// confinement routed straight here ([`SlotHelpers::route`]) runs as it is.
    static CONFINED_AS: RefCell<Option<String>> = const { RefCell::new(None) };
    /// Whether this thread is a sandbox helper.
    static ON_HELPER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the calling thread is a sandbox helper (which must never wait for its slot's
/// thread: that thread ends its helpers, this one included).
pub(crate) fn on_helper_thread() -> bool {
    ON_HELPER.with(std::cell::Cell::get)
}

/// How many whole-confinement helpers a thread keeps (the least recently used goes).
const DOMAINS_KEPT: usize = 8;

/// The confinements a slot thread's helpers hold — each helper's identity and where to send
/// it work, least recently used first: each helper is a task of the slot's cgroup, so the
/// slot counts them when it caps the tasks a call may make, and a spawn under a confinement
/// one of them holds is sent to it straight ([`SlotHelpers::route`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct SlotHelpers(Arc<Mutex<Vec<Route>>>);

/// A helper holding a whole confinement: its identity, and where to send it work.
type Route = (String, mpsc::Sender<Job>);

impl SlotHelpers {
    fn list(&self) -> std::sync::MutexGuard<'_, Vec<Route>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The helper threads alive, and one more when `key` would need a new one.
    pub(crate) fn tasks_with(&self, key: Option<&str>) -> u64 {
        let list = self.list();
        let new = key.is_some_and(|k| !list.iter().any(|(h, _)| h == k));
        list.len() as u64 + u64::from(new)
    }

    /// Sends `job` to the helper holding confinement `key`, if there is one: the spawn it
    /// makes needs no hand-over through the slot's thread. `Err` gives the job back.
    pub(crate) fn route(&self, key: &str, job: Job) -> Result<(), Job> {
        let mut list = self.list();
        let Some(i) = list.iter().position(|(k, _)| k == key) else {
            return Err(job);
        };
        let entry = list.remove(i);
        match entry.1.send(job) {
            Ok(()) => {
                list.push(entry);
                Ok(())
            }
            // Its thread is gone: the slot's thread starts another.
            Err(mpsc::SendError(job)) => Err(job),
        }
    }

    fn forget(&self, key: &str) {
        self.list().retain(|(k, _)| k != key);
    }

    /// The least recently used of `held`.
    fn oldest(&self, held: &[(String, Helper)]) -> Option<String> {
        self.list()
            .iter()
            .map(|(k, _)| k)
            .find(|k| held.iter().any(|(h, _)| h == *k))
            .cloned()
    }
}

/// Says that the calling thread serves one call at a time, and is reused only once what that
/// call started is gone (a cgroup slot's resident thread): it may keep whole confinements,
/// and says which in `helpers`.
pub(crate) fn mark_exclusive_thread(helpers: SlotHelpers) {
    SLOT.with(|s| *s.borrow_mut() = Some(helpers));
}

/// Runs `spawn` confined by `c` (see the module's docs), or here when `c` is `None`.
pub fn run_confined<T: Send + 'static>(
    c: Option<Confinement>,
    spawn: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    let Some(c) = c else {
        return Ok(spawn());
    };
    // Routed to the helper that holds this very confinement.
    if CONFINED_AS.with(|k| k.borrow().as_deref() == Some(c.identity().as_str())) {
        return Ok(spawn());
    }
    if let Some(slot) = SLOT.with(|s| s.borrow().clone()) {
        return run_in_domain(&slot, c, spawn);
    }
    // The thread spawns a child that tokio reaps: it needs the runtime's context.
    let handle = tokio::runtime::Handle::try_current().ok();
    let (done, answer) = mpsc::sync_channel(1);
    let key = (c.net_rule.index(), c.drop_caps);
    let filter = c.seccomp.clone();
    let job: Job = Box::new(move || {
        let result = std::thread::Builder::new()
            .name("toolsmith-spawn".into())
            .spawn(move || {
                let _entered = handle.as_ref().map(|h| h.enter());
                restrict(&c)?;
                Ok(spawn())
            })
            .map_err(|e| format!("starting the sandbox thread: {e}"))
            .and_then(|t| {
                t.join()
                    .unwrap_or_else(|_| Err("the sandbox thread panicked".into()))
            });
        let _ = done.send(result);
    });
    HELPERS.with(|helpers| {
        let mut helpers = helpers.borrow_mut();
        // A helper gone (its thread ended) is replaced once.
        let mut job = Some(job);
        for _ in 0..2 {
            let helper = match helpers.entry(key) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(v) => {
                    let filter = filter.clone();
                    v.insert(Helper::start(None, move || {
                        base(key.1, filter.as_ref().map(|f| &f.program))
                    })?)
                }
            };
            match helper.jobs.send(job.take().expect("a job")) {
                Ok(()) => return Ok(()),
                Err(mpsc::SendError(back)) => {
                    job = Some(back);
                    helpers.remove(&key);
                }
            }
        }
        Err("the sandbox's helper thread keeps going away".to_string())
    })?;
    answer
        .recv()
        .unwrap_or_else(|_| Err("the sandbox's helper thread went away".into()))
}

/// [`run_confined`] on an exclusive thread: `spawn` runs on this thread's helper holding
/// `c` whole (whose identity is `key`), started if there is none.
fn run_in_domain<T: Send + 'static>(
    slot: &SlotHelpers,
    c: Confinement,
    spawn: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    let key = c.identity();
    let handle = tokio::runtime::Handle::try_current().ok();
    let (done, answer) = mpsc::sync_channel(1);
    let job: Job = Box::new(move || {
        let _entered = handle.as_ref().map(|h| h.enter());
        let _ = done.send(spawn());
    });
    DOMAINS.with(|domains| {
        let mut domains = domains.borrow_mut();
        let helper = match domains.iter().position(|(k, _)| *k == key) {
            Some(i) => domains.remove(i).1,
            None => {
                if domains.len() >= DOMAINS_KEPT
                    && let Some(old) = slot.oldest(&domains)
                    && let Some(i) = domains.iter().position(|(k, _)| *k == old)
                {
                    slot.forget(&old);
                    domains.remove(i).1.end();
                }
                let helper = Helper::start(Some(key.clone()), move || {
                    base(c.drop_caps, c.seccomp.as_ref().map(|f| &f.program))?;
                    restrict(&c)
                })?;
                slot.list().push((key.clone(), helper.jobs.clone()));
                helper
            }
        };
        slot.forget(&key);
        if let Err(mpsc::SendError(_)) = helper.jobs.send(job) {
            return Err("the sandbox's helper thread went away".to_string());
        }
        slot.list().push((key.clone(), helper.jobs.clone()));
        domains.push((key, helper));
        Ok::<_, String>(())
    })?;
    answer
        .recv()
        .map_err(|_| "the sandbox's helper thread went away".to_string())
}

/// Confines the calling thread for good with what every call of a helper shares:
/// capabilities, `no_new_privs`, the seccomp filter.
fn base(drop_caps: bool, filter: Option<&seccompiler::BpfProgram>) -> Result<(), String> {
    if drop_caps {
        drop_capabilities()?;
    }
    th::set_no_new_privs(true).map_err(|e| format!("no_new_privs: {e}"))?;
    if let Some(filter) = filter {
        seccompiler::apply_filter(filter).map_err(|e| format!("seccomp: {e}"))?;
    }
    Ok(())
}

/// Restricts the calling thread with `c`'s Landlock rules.
fn restrict(c: &Confinement) -> Result<(), String> {
    if let Some(rs) = ruleset(c)? {
        let status = rs.restrict_self().map_err(|e| format!("Landlock: {e}"))?;
        // The rules were made for the ABI the kernel answered: anything less than full
        // enforcement means the kernel changed its mind, and the process must not run.
        if status.ruleset != landlock::RulesetStatus::FullyEnforced {
            return Err(format!(
                "Landlock enforced the rules only as {:?}",
                status.ruleset
            ));
        }
    }
    Ok(())
}

/// Gives up every capability in every set, so that what the thread executes starts with
/// none either — even as root (`SECBIT_NOROOT`: executing a program does not grant root
/// its capabilities back).
fn drop_capabilities() -> Result<(), String> {
    let bits = CapabilitiesSecureBits::NO_ROOT
        | CapabilitiesSecureBits::NO_ROOT_LOCKED
        | CapabilitiesSecureBits::NO_SETUID_FIXUP
        | CapabilitiesSecureBits::NO_SETUID_FIXUP_LOCKED
        | CapabilitiesSecureBits::KEEP_CAPS_LOCKED
        | CapabilitiesSecureBits::NO_CAP_AMBIENT_RAISE
        | CapabilitiesSecureBits::NO_CAP_AMBIENT_RAISE_LOCKED;
    th::set_capabilities_secure_bits(bits).map_err(|e| format!("securebits: {e}"))?;
    for n in 0..64u32 {
        let cap = CapabilitySet::from_bits_retain(1u64 << n);
        match th::remove_capability_from_bounding_set(cap) {
            Ok(()) => {}
            Err(rustix::io::Errno::INVAL) => break, // past the last capability
            Err(e) => {
                return Err(format!(
                    "dropping capability {n} from the bounding set: {e}"
                ));
            }
        }
    }
    th::clear_ambient_capability_set().map_err(|e| format!("ambient capabilities: {e}"))?;
    th::set_capabilities(
        None,
        CapabilitySets {
            effective: CapabilitySet::empty(),
            permitted: CapabilitySet::empty(),
            inheritable: CapabilitySet::empty(),
        },
    )
    .map_err(|e| format!("capabilities: {e}"))
}
