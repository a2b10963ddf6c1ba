//! Built-in tools: the name of one of toolsmith's own (their interfaces are in
//! [`crate::builtin`]).

use super::*;

pub(super) const RULES: Rules = Rules {
    name: "built-in",
    place: Place::JsonArgument,
    // Built-ins run inside toolsmith.
    process: false,
    command_keys: false,
    reserved_parameter: None,
    raw_schema: false,
};

/// `{builtin: name}`: a known built-in.
pub(super) fn read(v: &Value, at: &str, e: &mut Errs) -> Option<Executor> {
    let name = match v.get("builtin") {
        Some(Value::String(s)) => s.clone(),
        _ => {
            e.push(at, "`builtin` names a built-in tool");
            return None;
        }
    };
    if crate::builtin::spec(&name).is_none() {
        e.push(
            at,
            format!(
                "unknown built-in {name:?} (expected one of {})",
                crate::builtin::names().join(", ")
            ),
        );
        return None;
    }
    Some(Executor::Builtin(name))
}
