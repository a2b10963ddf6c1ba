//! Injection planning (SPEC §5.2): validated arguments → the exact argv, stdin and environment
//! of a command, the JSON stdin of a script, or the request of an `http` tool.
//!
//! One fixed rule per type and injection, applied in declaration order; absent optional
//! parameters (and nulls) inject nothing. Values that a program could misread as options, NUL
//! bytes and arguments over the kernel's per-argument limit are refused here, before anything
//! runs.

use serde_json::{Map, Value, json};

use crate::model::{ArrayStyle, Executor, Parameter, REDACTED, Tool, default_env_name};
use crate::pipeline::CompiledTool;
use crate::result::{Problem, ToolResult};

mod command;
mod http;
mod script;

pub use http::{Header, HttpRequest};

/// Linux's `MAX_ARG_STRLEN` (128 KiB): the most one argument or one `NAME=value` environment
/// string may take, its terminating NUL included.
pub const MAX_ARG_BYTES: usize = 128 * 1024;

/// What a call will run, by executor kind: each kind's plan is its own type, so a process's
/// argv never sits beside a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invocation {
    /// Command and script tools: one process.
    Process(Process),
    /// `http` tools: one request.
    Http(HttpRequest),
    /// Built-ins and upstream tools: they receive the arguments as they are.
    Direct,
}

/// A process to start.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Process {
    /// Program then arguments.
    pub argv: Vec<String>,
    /// Written to the process's stdin, which is then closed. `None`: stdin is empty.
    pub stdin: Option<String>,
    /// Variables set from parameters and config, on top of the tool's allowlist.
    pub env: Vec<EnvVar>,
    /// What views show as stdin when it holds secrets (a script's `config`): the same with
    /// secret values as `***`.
    pub stdin_shown: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvVar {
    pub name: String,
    pub value: String,
    /// From a secret config field: shown as `***`.
    pub secret: bool,
}

impl Invocation {
    /// The dry-run view: `{"argv", "stdin", "env"}` with secret values redacted (empty for a
    /// built-in or upstream tool; for an `http` tool `{"http": {"method", "url", "headers",
    /// "body"}}`).
    pub fn to_json(&self) -> Value {
        match self {
            Self::Process(p) => p.to_json(),
            Self::Http(request) => json!({ "http": request.to_json() }),
            Self::Direct => Process::default().to_json(),
        }
    }
}

impl Process {
    fn to_json(&self) -> Value {
        let env: Map<String, Value> = self
            .env
            .iter()
            .map(|v| {
                (
                    v.name.clone(),
                    json!(if v.secret { REDACTED } else { v.value.as_str() }),
                )
            })
            .collect();
        let stdin = self.stdin_shown.as_ref().or(self.stdin.as_ref());
        json!({ "argv": self.argv, "stdin": stdin, "env": env })
    }
}

/// Plans any tool: commands by their injection rules; scripts as `interpreter script` with
/// the arguments (and `config`) as JSON on stdin; built-ins receive the arguments directly.
pub fn plan(tool: &Tool, args: &Map<String, Value>) -> Result<Invocation, Vec<Problem>> {
    match &tool.executor {
        Executor::Command(command) => command::plan(tool, command, args).map(Invocation::Process),
        Executor::Script(script) => Ok(Invocation::Process(script::plan(tool, script, args))),
        Executor::Http(call) => http::plan(tool, call, args).map(Invocation::Http),
        // Built-ins and upstream tools receive the arguments as they are.
        Executor::Builtin(_) | Executor::Mcp(_) => Ok(Invocation::Direct),
    }
}

/// Runs the pipeline and the plan without running anything (a disabled tool answers
/// `disabled`, as its call would): the `--dry-run` result, whose
/// `data` is `{"arguments", "argv", "stdin", "env"}` (plus `"builtin"` for built-ins and
/// `"mcp": {"server", "tool"}` for upstream tools).
pub fn dry_run(compiled: &CompiledTool, raw: Value) -> ToolResult {
    if !compiled.tool.enabled {
        return compiled.disabled();
    }
    let prepared = match compiled.prepare(raw) {
        Ok(p) => p,
        Err(problems) => return compiled.invalid_arguments(problems),
    };
    let invocation = match plan(&compiled.tool, &prepared.arguments) {
        Ok(i) => i,
        Err(problems) => return compiled.invalid_arguments(problems),
    };
    let mut data = Map::new();
    data.insert("arguments".into(), Value::Object(prepared.arguments));
    if let Value::Object(mut view) = invocation.to_json() {
        data.append(&mut view);
    }
    match &compiled.tool.executor {
        Executor::Builtin(name) => {
            data.insert("builtin".into(), Value::String(name.clone()));
        }
        Executor::Mcp(target) => {
            data.insert(
                "mcp".into(),
                json!({"server": target.server, "tool": target.tool}),
            );
        }
        _ => {}
    }
    ToolResult::ok(Value::Object(data), compiled.meta(prepared.coerced))
}

/// The name a script's source is written to in the call's working directory.
pub const SCRIPT_FILE: &str = "tool_script";

/// The text of one value: strings as they are, numbers as plain decimals (`2000`, `2.5`),
/// booleans as `true`/`false`, arrays and objects as compact JSON.
pub fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => number_text(n),
        Value::Bool(b) => b.to_string(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Array items as text, joined by `separator` (`,` when not given).
fn join(items: &[Value], separator: Option<&str>) -> String {
    items
        .iter()
        .map(text)
        .collect::<Vec<_>>()
        .join(separator.unwrap_or(","))
}

fn number_text(n: &serde_json::Number) -> String {
    if n.is_i64() || n.is_u64() {
        return n.to_string();
    }
    let f = n.as_f64().unwrap_or(0.0);
    if f.fract() == 0.0 && f.abs() < 1e15 {
        format!("{}", f as i64)
    } else {
        // Rust's `Display` for f64 is the shortest round-trip form, never in exponent notation.
        format!("{f}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_plain_decimals() {
        let n = |v: Value| text(&v);
        assert_eq!(n(json!(2000)), "2000");
        assert_eq!(n(json!(2000.0)), "2000");
        assert_eq!(n(json!(2.5)), "2.5");
        assert_eq!(n(json!(-0.125)), "-0.125");
        assert_eq!(n(json!(1e20)), "100000000000000000000");
        assert_eq!(n(json!(u64::MAX)), "18446744073709551615");
        assert_eq!(n(json!({"a": [1, "x"]})), r#"{"a":[1,"x"]}"#);
    }
}
