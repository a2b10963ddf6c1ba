//! Applying a [`Confinement`]: on a fresh thread of the gateway, which confines itself and
//! then spawns — the process inherits the thread's Landlock domain, seccomp filter,
//! `no_new_privs` and (empty) capabilities; the thread ends right after. Nothing of it
//! touches the gateway's other threads: all four are per-thread in Linux.

use rustix::thread::{self as th, CapabilitiesSecureBits, CapabilitySet, CapabilitySets};

use super::{Confinement, ruleset};

/// Runs `spawn` confined by `c` (on a thread of its own), or here when `c` is `None`.
pub fn run_confined<T: Send>(
    c: Option<&Confinement>,
    spawn: impl FnOnce() -> T + Send,
) -> Result<T, String> {
    let Some(c) = c else {
        return Ok(spawn());
    };
    // The thread spawns a child that tokio reaps: it needs the runtime's context.
    let handle = tokio::runtime::Handle::try_current().ok();
    std::thread::scope(|s| {
        s.spawn(move || {
            let _entered = handle.as_ref().map(|h| h.enter());
            confine_this_thread(c)?;
            Ok(spawn())
        })
        .join()
        .unwrap_or_else(|_| Err("the sandbox thread panicked".into()))
    })
}

/// Confines the calling thread for good: capabilities, `no_new_privs`, Landlock, seccomp.
fn confine_this_thread(c: &Confinement) -> Result<(), String> {
    if c.drop_caps {
        drop_capabilities()?;
    }
    th::set_no_new_privs(true).map_err(|e| format!("no_new_privs: {e}"))?;
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
    if let Some(filter) = &c.seccomp {
        seccompiler::apply_filter(&filter.program).map_err(|e| format!("seccomp: {e}"))?;
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
