//! What the sandbox reports of a policy (`meta.sandbox`): what this kernel enforces of it and
//! what is missing — for every call, plan, dry run, tool view and run log entry.

use serde_json::{Value, json};
use toolsmith_core::sandbox::{Network, Preset, Sandbox};

use super::Kernel;

/// What `kernel` enforces of `policy` (`enabled`: the server's sandbox is on), as
/// `meta.sandbox` shows it, and what is missing (empty when everything is enforced).
pub fn assess(kernel: Kernel, enabled: bool, policy: &Sandbox) -> (Value, Vec<String>) {
    if !enabled {
        return (json!({"policy": "off", "enforced": false}), Vec::new());
    }
    if policy.is_none() {
        return (json!({"policy": "none", "enforced": false}), Vec::new());
    }
    let k = kernel;
    let mut missing = Vec::new();
    let filesystem = match k.landlock_abi {
        0 => {
            missing.push("Landlock (the filesystem rules)".to_owned());
            "not enforced"
        }
        1 | 2 => {
            missing.push(format!(
                "Landlock ABI 3 (renames and truncation; this kernel has {})",
                k.landlock_abi
            ));
            "partial"
        }
        _ => "enforced",
    };
    let network = match &policy.network {
        Network::All => "unrestricted",
        Network::None if k.seccomp => "enforced",
        Network::None => {
            missing.push("seccomp (socket families)".into());
            "not enforced"
        }
        Network::Ports { .. } if k.seccomp && k.landlock_abi >= 4 => "enforced",
        Network::Ports { .. } => {
            missing.push("Landlock ABI 4 and seccomp (TCP port rules)".into());
            "not enforced"
        }
    };
    let signals = if k.landlock_abi >= 6 {
        "enforced"
    } else {
        missing.push("Landlock ABI 6 (signal and abstract socket scoping)".into());
        "not enforced"
    };
    if !k.seccomp {
        missing.push("seccomp (ptrace, io_uring)".into());
    }
    let mut report = json!({
        "policy": policy_name(policy),
        "filesystem": filesystem,
        "network": network,
        // Named Unix sockets: refused unless the policy names some; then all of them (the
        // kernel cannot filter a connection by its path).
        "unix_sockets": match (k.seccomp, policy.unix_sockets.is_empty()) {
            (false, _) => "not enforced",
            (true, true) => "denied",
            (true, false) => "allowed (any path)",
        },
        "signals": signals,
        "landlock_abi": k.landlock_abi,
        "seccomp": k.seccomp,
        "no_new_privs": true,
        "enforced": missing.is_empty(),
    });
    if k.capabilities {
        report["capabilities"] = json!("dropped");
    }
    if !missing.is_empty() {
        report["missing"] = json!(missing);
    }
    (report, missing)
}

/// Whether `tool` starts processes the sandbox applies to (command and script tools, and
/// `session_start`'s sessions).
pub fn starts_processes(tool: &toolsmith_core::Tool) -> bool {
    use toolsmith_core::model::Executor;
    match &tool.executor {
        Executor::Command(_) | Executor::Script(_) => true,
        Executor::Builtin(b) => b == "session_start",
        Executor::Mcp(_) | Executor::Http(_) => false,
    }
}

/// `meta.sandbox` for `tool` under the default configuration on this kernel (for commands
/// that run no engine: `show`, `call --dry-run`).
pub fn tool_report(tool: &toolsmith_core::Tool) -> Option<Value> {
    static KERNEL: std::sync::OnceLock<Kernel> = std::sync::OnceLock::new();
    let kernel = *KERNEL.get_or_init(Kernel::probe);
    let default = Sandbox::default();
    starts_processes(tool)
        .then(|| assess(kernel, true, tool.sandbox.as_ref().unwrap_or(&default)).0)
}

fn policy_name(p: &Sandbox) -> Value {
    let plain = p.read.is_empty() && p.write.is_empty() && p.network == Network::All;
    match (plain, p.preset) {
        (true, preset) => json!(preset.name()),
        (false, Preset::None) => json!("none"),
        (false, _) => p.to_value(),
    }
}
