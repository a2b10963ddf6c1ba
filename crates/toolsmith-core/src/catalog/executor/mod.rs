//! Which executor a tool has — `command`, `script`, `builtin`, `mcp` or `http`, in the short or the rich
//! (`executor: {kind: ...}`) form — and the rules of each kind, one module per kind.

mod builtin;
mod command;
mod http;
mod mcp;
mod script;

pub(super) use command::{check_injection_layout, places as command_places, read as read_command};
pub(super) use http::{places as http_places, settle as settle_http};

use super::*;

/// What a tool's kind decides about the rest of its definition.
pub(super) struct Rules {
    /// The kind's name in messages.
    pub name: &'static str,
    /// How its parameters are read (injected into a command, or sent as JSON).
    pub place: Place,
    /// `env`, `env_allowlist`, `working_dir` and `limits` apply: it runs as a process.
    pub process: bool,
    /// `end_of_options` and `output` apply: it is a command line.
    pub command_keys: bool,
    /// A parameter name the kind keeps for itself.
    pub reserved_parameter: Option<&'static str>,
    /// Its arguments may be described by a JSON Schema as given (`input_schema`).
    pub raw_schema: bool,
}

/// The rules of `executor`'s kind; with none (an executor that did not parse), a command's,
/// the most permissive, so one mistake does not cascade into many.
pub(super) fn rules(executor: Option<&Executor>) -> Rules {
    match executor {
        Some(Executor::Command(_)) | None => command::RULES,
        Some(Executor::Script(_)) => script::RULES,
        Some(Executor::Builtin(_)) => builtin::RULES,
        Some(Executor::Mcp(_)) => mcp::RULES,
        Some(Executor::Http(_)) => http::RULES,
    }
}

/// The rules of the kind a tool declares, even when its executor did not parse (so an
/// `http` tool with a bad URL still has its parameters read as an http tool's).
pub(super) fn declared_rules(executor: Option<&Executor>, f: &Fields<'_>) -> Rules {
    match executor {
        None if f.has("http") => http::RULES,
        None if f.has("mcp") => mcp::RULES,
        _ => rules(executor),
    }
}

impl Loader<'_> {
    pub(super) fn executor(&self, f: &Fields<'_>, file: &str, e: &mut Errs) -> Option<Executor> {
        let mut given: Vec<&str> = EXECUTORS.into_iter().filter(|k| f.has(k)).collect();
        let rich = f.get("executor");
        if rich.is_some() {
            given.push("executor");
        }
        match given.as_slice() {
            [] => {
                e.push(
                    &f.path,
                    "no executor: give exactly one of `command`, `script`, `builtin` or `http`",
                );
                return None;
            }
            [_] => {}
            many => {
                e.push(
                    &f.path,
                    format!(
                        "more than one executor ({}): give exactly one",
                        many.join(", ")
                    ),
                );
                return None;
            }
        }
        // The rich form `executor: {kind: command, ...}` names the same fields.
        let (fields, kind) = match rich {
            Some(v) => {
                let ef = Fields::new(
                    v,
                    &f.at("executor"),
                    &[
                        "kind",
                        "command",
                        "interpreter",
                        "source",
                        "path",
                        "warm",
                        "name",
                        "server",
                        "tool",
                    ],
                    e,
                )?;
                let kind = ef.choice(
                    "kind",
                    "executor kind",
                    &EXECUTORS,
                    |s| EXECUTORS.contains(&s).then(|| s.to_owned()),
                    e,
                )?;
                if kind == "http" {
                    e.push(
                        &ef.at("kind"),
                        "an http tool is written `http: {method, url, ...}`, not in the `executor:` form",
                    );
                    return None;
                }
                (ef, kind)
            }
            None => {
                let kind = given[0].to_owned();
                let v = f.get(&kind)?;
                let wrapped = match kind.as_str() {
                    "script" => v.clone(),
                    _ => serde_json::json!({ kind.clone(): v }),
                };
                return self.executor_from(&kind, &wrapped, &f.at(&kind), file, e);
            }
        };
        let mut map = Map::new();
        for key in ["command", "interpreter", "source", "path", "warm"] {
            if let Some(v) = fields.get(key) {
                map.insert(key.into(), v.clone());
            }
        }
        if let Some(v) = fields.get("name") {
            map.insert("builtin".into(), v.clone());
        }
        if kind == "mcp" {
            let target: Map<String, Value> = ["server", "tool"]
                .into_iter()
                .filter_map(|k| fields.get(k).map(|v| (k.to_owned(), v.clone())))
                .collect();
            map.insert("mcp".into(), Value::Object(target));
        }
        self.executor_from(&kind, &Value::Object(map), &fields.path, file, e)
    }

    /// Reads the executor of `kind` from `v` (`{command: [...]}`, the script mapping, or
    /// `{builtin: name}`): one module per kind, one line each here.
    fn executor_from(
        &self,
        kind: &str,
        v: &Value,
        at: &str,
        file: &str,
        e: &mut Errs,
    ) -> Option<Executor> {
        match kind {
            "command" => command::read(v, at, e),
            "script" => script::read(v, at, file, self.src, e),
            "mcp" => mcp::read(v, at, e),
            "http" => http::read(v, at, e),
            _ => builtin::read(v, at, e),
        }
    }
}
