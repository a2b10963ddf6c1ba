//! The `defaults:` of a catalog file: timeout, environment allowlist, naming rule, limits and
//! the hosts its http tools may reach,
//! inherited by the files it imports.

use super::*;

pub(super) fn read_defaults(v: &Value, inherited: &Defaults, e: &mut Errs) -> Defaults {
    let Some(f) = Fields::new(v, "defaults", DEFAULT_KEYS, e) else {
        return inherited.clone();
    };
    Defaults {
        timeout_ms: f.uint("timeout_ms", e).or(inherited.timeout_ms),
        env_allowlist: f
            .strings("env_allowlist", e)
            .unwrap_or_else(|| inherited.env_allowlist.clone()),
        tool_names: f
            .choice(
                "tool_names",
                "naming rule",
                &NameRule::ALL,
                NameRule::parse,
                e,
            )
            .unwrap_or(inherited.tool_names),
        limits: match f.get("limits") {
            Some(v) => read_limits(v, &f.at("limits"), e).or(inherited.limits),
            None => inherited.limits,
        },
        http_allow_hosts: f
            .strings("http_allow_hosts", e)
            .unwrap_or_else(|| inherited.http_allow_hosts.clone()),
        sandbox: match f.get("sandbox") {
            Some(v) => crate::sandbox::read(v, &f.at("sandbox"), e),
            None => inherited.sandbox.clone(),
        },
    }
}

pub(super) fn read_limits(v: &Value, at: &str, e: &mut Errs) -> Limits {
    let Some(f) = Fields::new(v, at, &Limits::KEYS, e) else {
        return Limits::default();
    };
    let mut read = |key: &str| {
        let n = f.uint(key, e);
        if n == Some(0) {
            e.push(&f.at(key), "a limit must be at least 1");
        }
        n
    };
    Limits {
        output_bytes: read("output_bytes"),
        memory_bytes: read("memory_bytes"),
        processes: read("processes"),
        file_size_bytes: read("file_size_bytes"),
        cpu_seconds: read("cpu_seconds"),
    }
}
