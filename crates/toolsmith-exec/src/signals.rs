//! Default signal dispositions for every process toolsmith starts. A non-interactive shell
//! starts a background command with SIGINT and SIGQUIT ignored (POSIX), `nohup` ignores
//! SIGHUP — and an ignored signal stays ignored across `fork` and `exec`, so `toolsmith serve
//! &` in a script or a container would hand that on to every tool, session and upstream: a
//! session's Ctrl-C would interrupt nothing. A blocked signal is inherited the same way, from
//! the spawning thread's mask.
//!
//! No spawn path can say "default dispositions" without forking the gateway (`posix_spawn`'s
//! `SETSIGDEF` is not reachable through `std::process`), so the gateway stops ignoring them
//! itself: the first time it spawns, each of these signals it ignores gets a handler that
//! does nothing — the gateway goes on ignoring it in effect, and a handler, unlike an
//! ignored disposition, is reset to the default by `exec`. Job control's signals (SIGTSTP,
//! SIGTTIN, SIGTTOU) are left as they are: catching them would change how a background
//! gateway writes to its terminal. And every thread that spawns — the cgroup slots' and the
//! sandbox's helpers from their start, any other at its first spawn — clears its own signal
//! mask, which its children inherit.

use std::sync::OnceLock;

use tokio::signal::unix::{Signal, SignalKind, signal};

/// The signals reset for children when the gateway ignores them.
const RESET: &[i32] = &[
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGTERM,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGALRM,
];

/// The handlers installed (kept, so they stay).
static HANDLERS: OnceLock<Vec<Signal>> = OnceLock::new();

thread_local! {
    /// Whether this thread's signal mask was cleared.
    static CLEARED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Clears the calling thread's signal mask (once), so that what it spawns blocks nothing.
pub(crate) fn clear_mask() {
    use nix::sys::signal::{SigSet, SigmaskHow, pthread_sigmask};
    if CLEARED.with(std::cell::Cell::get) {
        return;
    }
    if pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None).is_ok() {
        CLEARED.with(|c| c.set(true));
    }
}

/// Makes sure the processes spawned from now on, by this thread or any other, start with
/// default dispositions for [`RESET`] and an empty mask (see the module's docs). The
/// dispositions need a tokio runtime with its signal driver; without one they wait for the
/// next time.
pub(crate) fn default_for_children() {
    clear_mask();
    if HANDLERS.get().is_some() || tokio::runtime::Handle::try_current().is_err() {
        return;
    }
    let _ = HANDLERS.get_or_init(|| {
        let ignored = ignored();
        RESET
            .iter()
            .filter(|n| ignored & (1u64 << (**n - 1)) != 0)
            .filter_map(|n| signal(SignalKind::from_raw(*n)).ok())
            .collect()
    });
}

/// This process's ignored signals (`SigIgn` of /proc/self/status: bit N-1 for signal N).
fn ignored() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("SigIgn:"))
                .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        })
        .unwrap_or(0)
}
