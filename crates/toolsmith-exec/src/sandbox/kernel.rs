//! What this kernel offers the sandbox, probed once per engine: the Landlock ABI (capped by
//! [`ABI_VARIABLE`] to try what an older kernel gives), seccomp, and whether the gateway
//! holds capabilities a sandboxed process must drop.

use landlock::{ABI, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr};

/// The newest Landlock ABI toolsmith uses (the one it is tested on).
const NEWEST: ABI = ABI::V7;

/// The environment variable that caps the Landlock ABI used (0: as if the kernel had none) —
/// for trying what an older kernel gives.
pub const ABI_VARIABLE: &str = "TOOLSMITH_SANDBOX_LANDLOCK_ABI";

/// What this kernel offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kernel {
    /// 0 when Landlock is missing (or capped by [`ABI_VARIABLE`]).
    pub landlock_abi: u8,
    pub seccomp: bool,
    /// The gateway holds capabilities (root, usually): a sandboxed process drops them.
    pub capabilities: bool,
}

impl Kernel {
    /// Asks the kernel (a Landlock ruleset made as a hard requirement for each ABI, newest
    /// first; `PR_GET_SECCOMP`; `capget`).
    pub fn probe() -> Self {
        let cap = std::env::var(ABI_VARIABLE)
            .ok()
            .and_then(|v| v.trim().parse::<u8>().ok())
            .unwrap_or(NEWEST as u8);
        let landlock_abi = (1..=(NEWEST as u8).min(cap))
            .rev()
            .find(|n| {
                Ruleset::default()
                    .set_compatibility(CompatLevel::HardRequirement)
                    .handle_access(AccessFs::from_all(ABI::from(i32::from(*n))))
                    .and_then(|r| r.create())
                    .is_ok()
            })
            .unwrap_or(0);
        let capabilities = rustix::thread::capabilities(None)
            .is_ok_and(|c| !c.permitted.is_empty() || !c.effective.is_empty());
        Self {
            landlock_abi,
            seccomp: super::seccomp::available(),
            capabilities,
        }
    }

    pub(super) fn abi(self) -> ABI {
        ABI::from(i32::from(self.landlock_abi))
    }

    /// One line for the server's start.
    pub fn describe(self) -> String {
        let landlock = match self.landlock_abi {
            0 => "no Landlock (files and ports not enforced)".to_owned(),
            n if n < 4 => format!("Landlock ABI {n} (files; no TCP port rules, no signal scoping)"),
            n if n < 6 => format!("Landlock ABI {n} (files, TCP ports; no signal scoping)"),
            n => format!("Landlock ABI {n} (files, TCP ports, signals, abstract sockets)"),
        };
        let seccomp = if self.seccomp {
            "seccomp"
        } else {
            "no seccomp"
        };
        format!("sandbox: {landlock}, {seccomp}")
    }
}
