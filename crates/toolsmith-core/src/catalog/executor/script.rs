//! Script tools: the interpreter, the code inline (`source`) or beside the catalog (`path`),
//! and whether it runs in the warm Python runtime.

use super::*;
use crate::catalog::files::resolve_relative;

pub(super) const RULES: Rules = Rules {
    name: "script",
    place: Place::JsonArgument,
    process: true,
    command_keys: false,
    // The config values reach the script beside the arguments, as `config`.
    reserved_parameter: Some("config"),
    raw_schema: false,
};

/// The script mapping `{interpreter, source | path, warm}`; `file` is the catalog file a
/// `path` is relative to.
pub(super) fn read(
    v: &Value,
    at: &str,
    file: &str,
    src: &dyn CatalogSource,
    e: &mut Errs,
) -> Option<Executor> {
    let f = Fields::new(v, at, &["interpreter", "source", "path", "warm"], e)?;
    let interpreter = f
        .string("interpreter", e)
        .unwrap_or_else(|| "python3".into());
    if interpreter.trim().is_empty() {
        e.push(&f.at("interpreter"), "empty interpreter");
    }
    let source = match (f.string("source", e), f.string("path", e)) {
        (Some(_), Some(_)) => {
            e.push(at, "give either `source` or `path`, not both");
            None
        }
        (Some(s), None) => Some(s),
        (None, Some(p)) => match resolve_relative(file, &p) {
            Ok(path) => src
                .read(&path)
                .map_err(|m| e.push(&f.at("path"), format!("cannot read script {path:?}: {m}")))
                .ok(),
            Err(m) => {
                e.push(&f.at("path"), m);
                None
            }
        },
        (None, None) => {
            e.push(
                at,
                "a script needs `source` (the code) or `path` (a file beside the catalog)",
            );
            None
        }
    };
    let warm = match f.get("warm") {
        None => None,
        Some(Value::Bool(false)) => Some(false),
        Some(Value::Bool(true)) => {
            let base = interpreter.rsplit('/').next().unwrap_or_default();
            if !base.starts_with("python") {
                e.push(
                    &f.at("warm"),
                    format!("a warm runtime is for Python scripts, not {interpreter:?}"),
                );
            }
            Some(true)
        }
        Some(other) => {
            e.push(
                &f.at("warm"),
                format!("expected true or false, got {other}"),
            );
            None
        }
    };
    Some(Executor::Script(Script {
        interpreter,
        source: source?,
        warm,
    }))
}
