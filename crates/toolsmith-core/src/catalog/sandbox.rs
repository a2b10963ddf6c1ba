//! A tool's `sandbox:` in the catalog: where it applies (command and script tools, and the
//! `session_start` built-in, whose sessions it confines) and the file's `defaults.sandbox`.

use super::*;
use crate::sandbox::{self, Sandbox};

/// The built-in whose processes (sessions) a `sandbox:` confines.
pub(crate) const SESSION_START: &str = "session_start";

/// The tool's policy: its own `sandbox:`, else the file's default where it applies.
pub(super) fn read_tool(
    f: &Fields,
    defaults: &Defaults,
    process: bool,
    executor: Option<&Executor>,
    e: &mut Errs,
) -> Option<Sandbox> {
    let sessions = matches!(executor, Some(Executor::Builtin(name)) if name == SESSION_START);
    let applies = process || sessions;
    match f.get("sandbox") {
        Some(v) if applies => sandbox::read(v, &f.at("sandbox"), e),
        Some(_) => {
            e.push(
                &f.at("sandbox"),
                "`sandbox` applies to command and script tools and to `session_start` (its sessions); other tools start no process",
            );
            None
        }
        None if applies => defaults.sandbox.clone(),
        None => None,
    }
}
