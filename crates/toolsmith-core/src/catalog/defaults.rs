//! The `defaults:` of a catalog file: timeout, environment allowlist, naming rule, limits and
//! the hosts its http tools may reach, sandbox, rate limit and result guardrails,
//! inherited by the files it imports.

use super::*;

pub(super) fn read_defaults(v: &Value, inherited: &Defaults, e: &mut Errs) -> Defaults {
    let Some(f) = Fields::new(v, "defaults", DEFAULT_KEYS, e) else {
        return inherited.clone();
    };
    Defaults {
        timeout_ms: f.uint("timeout_ms", e).or(inherited.timeout_ms),
        env_allowlist: super::env::read_allowlist(&f, e)
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
        rate_limit: match f.get("rate_limit") {
            Some(v) => read_rate_limit(v, &f.at("rate_limit"), e),
            None => inherited.rate_limit,
        },
        results: read_results(&f, e).or(&inherited.results),
    }
}

/// `max_result_bytes:` (at least 1024) and `scrub: {off: [SHAPE|all], add: [{name,
/// pattern}]}` of a tool, a server or `defaults:`.
pub(super) fn read_results(f: &Fields<'_>, e: &mut Errs) -> crate::guard::result::ResultPolicy {
    use crate::guard::result::{ResultPolicy, Scrub};
    let max_result_bytes = f.uint("max_result_bytes", e);
    if max_result_bytes.is_some_and(|n| n < 1024) {
        e.push(&f.at("max_result_bytes"), "at least 1024 (bytes of JSON)");
    }
    let scrub = match f.get("scrub") {
        None => Scrub::default(),
        Some(v) => match serde_json::from_value::<Scrub>(v.clone()) {
            Ok(scrub) => {
                for (key, problem) in scrub.problems() {
                    e.push(&join(&f.at("scrub"), &key), problem);
                }
                scrub
            }
            Err(why) => {
                e.push(
                    &f.at("scrub"),
                    format!("{why}; write `scrub: {{off: [SHAPE, …], add: [{{name, pattern}}]}}`"),
                );
                Scrub::default()
            }
        },
    };
    ResultPolicy {
        max_result_bytes,
        scrub,
    }
}

/// `rate_limit:` — `{calls: N, per: 1s|1m|1h, burst: M}`, or the text `N/PER[,burst=M]`.
pub(super) fn read_rate_limit(v: &Value, at: &str, e: &mut Errs) -> Option<crate::rate::RateLimit> {
    use crate::rate::RateLimit;
    if let Value::String(text) = v {
        return RateLimit::parse(text)
            .map_err(|m| e.push(at, m.to_string()))
            .ok();
    }
    let f = Fields::new(v, at, &["calls", "per", "burst"], e)?;
    let calls = f.uint("calls", e);
    if calls.is_none() && !f.has("calls") {
        e.push(&f.at("calls"), "missing; how many calls per period");
    }
    let per = f.string("per", e).unwrap_or_else(|| "1s".into());
    let burst = f.uint("burst", e);
    let calls = u32::try_from(calls?)
        .map_err(|_| e.push(&f.at("calls"), "too large"))
        .ok()?;
    let burst = burst.map(|b| u32::try_from(b).unwrap_or(u32::MAX));
    if burst == Some(0) {
        e.push(&f.at("burst"), "must be at least 1");
        return None;
    }
    RateLimit::new(calls, &per, burst)
        .map_err(|m| e.push(at, m.to_string()))
        .ok()
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
