//! Injection planning (SPEC §5.2): validated arguments → the exact argv, stdin and environment
//! of a command, or the JSON stdin of a script.
//!
//! One fixed rule per type and injection, applied in declaration order; absent optional
//! parameters (and nulls) inject nothing. Values that a program could misread as options, NUL
//! bytes and arguments over the kernel's per-argument limit are refused here, before anything
//! runs.

use serde_json::{Map, Value, json};

use crate::model::{
    ArrayStyle, BooleanStyle, Executor, InjectAs, OptionStyle, Parameter, REDACTED, Tool,
    default_env_name,
};
use crate::pipeline::CompiledTool;
use crate::result::{Problem, ToolResult};

/// Linux's `MAX_ARG_STRLEN` (128 KiB): the most one argument or one `NAME=value` environment
/// string may take, its terminating NUL included.
pub const MAX_ARG_BYTES: usize = 128 * 1024;

/// What a call will run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    /// Program then arguments; empty for built-ins.
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
    /// The dry-run view: `{"argv", "stdin", "env"}` with secret values redacted.
    pub fn to_json(&self) -> Value {
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
        Executor::Command(base) => plan_command(tool, base, args),
        Executor::Script(script) => {
            let with_config = |config: Map<String, Value>| {
                let mut input = args.clone();
                if !config.is_empty() {
                    input.insert("config".into(), Value::Object(config));
                }
                Value::Object(input).to_string()
            };
            let stdin = with_config(tool.config.clone());
            let secrets = tool.config_schema.iter().any(|p| p.secret);
            let stdin_shown = secrets.then(|| {
                let mut shown = tool.config.clone();
                for p in tool.config_schema.iter().filter(|p| p.secret) {
                    if let Some(v) = shown.get_mut(&p.name) {
                        *v = json!(REDACTED);
                    }
                }
                with_config(shown)
            });
            Ok(Invocation {
                argv: vec![script.interpreter.clone(), SCRIPT_FILE.into()],
                stdin: Some(stdin),
                env: Vec::new(),
                stdin_shown,
            })
        }
        Executor::Builtin(_) => Ok(Invocation {
            argv: Vec::new(),
            stdin: None,
            env: Vec::new(),
            stdin_shown: None,
        }),
    }
}

/// Runs the pipeline and the plan without running anything (a disabled tool answers
/// `disabled`, as its call would): the `--dry-run` result, whose
/// `data` is `{"arguments", "argv", "stdin", "env"}` (plus `"builtin"` for built-ins).
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
    if let Executor::Builtin(name) = &compiled.tool.executor {
        data.insert("builtin".into(), Value::String(name.clone()));
    }
    ToolResult::ok(Value::Object(data), compiled.meta(prepared.coerced))
}

/// The name a script's source is written to in the call's working directory.
pub const SCRIPT_FILE: &str = "tool_script";

fn plan_command(
    tool: &Tool,
    base: &[String],
    args: &Map<String, Value>,
) -> Result<Invocation, Vec<Problem>> {
    let mut argv = base.to_vec();
    let mut stdin = None;
    let mut env = config_env(tool);
    let mut problems = Vec::new();
    let mut positional_started = false;

    for v in &env {
        check_os_string(
            &v.value,
            v.name.len() + 1,
            "",
            &format!("config field for {}", v.name),
            &mut problems,
        );
    }
    for p in &tool.parameters {
        let Some(value) = args.get(&p.name).filter(|v| !v.is_null()) else {
            continue;
        };
        let at = format!("/{}", p.name);
        let first_new_arg = argv.len();
        let inj = &p.injection;
        match inj.inject_as {
            InjectAs::Argument => {
                let values = match value {
                    Value::Array(items) => match inj.array_style {
                        Some(ArrayStyle::Join) => vec![join(items, inj.separator.as_deref())],
                        _ => items.iter().map(text).collect(),
                    },
                    v => vec![text(v)],
                };
                for v in values {
                    if v.starts_with('-') {
                        match tool.end_of_options {
                            Some(_) => {}
                            None => {
                                problems.push(Problem::new(&at, format!(
                                    "{v:?} starts with `-` and would be read as an option; this tool does not set `end_of_options`"
                                )));
                                continue;
                            }
                        }
                    }
                    if !positional_started {
                        positional_started = true;
                        if let Some(marker) = tool.end_of_options {
                            argv.push(marker.as_str().into());
                        }
                    }
                    argv.push(v);
                }
            }
            InjectAs::Option => {
                let Some(name) = inj.option_name.as_deref() else {
                    continue;
                };
                let with = |v: &str| match inj.option_style {
                    OptionStyle::Separate => vec![name.to_owned(), v.to_owned()],
                    OptionStyle::Equals => vec![format!("{name}={v}")],
                };
                match value {
                    Value::Bool(b) if inj.boolean_style != Some(BooleanStyle::Value) => {
                        if *b {
                            argv.push(name.to_owned());
                        }
                    }
                    Value::Array(items) if items.is_empty() => {}
                    Value::Array(items) => match inj.array_style.unwrap_or(ArrayStyle::Repeat) {
                        ArrayStyle::Repeat => {
                            for item in items {
                                argv.extend(with(&text(item)));
                            }
                        }
                        ArrayStyle::Separate => {
                            argv.push(name.to_owned());
                            for item in items.iter().map(text) {
                                if item.starts_with('-') {
                                    problems.push(Problem::new(&at, format!(
                                        "{item:?} starts with `-` and would be read as an option after {name}"
                                    )));
                                } else {
                                    argv.push(item);
                                }
                            }
                        }
                        ArrayStyle::Join => {
                            argv.extend(with(&join(items, inj.separator.as_deref())))
                        }
                    },
                    v => argv.extend(with(&text(v))),
                }
            }
            InjectAs::Stdin => {
                stdin = Some(match (value, inj.array_style) {
                    (Value::Array(items), Some(ArrayStyle::Join)) => {
                        join(items, inj.separator.as_deref())
                    }
                    (v, _) => text(v),
                });
            }
            InjectAs::Env => {
                let name = inj
                    .env_name
                    .clone()
                    .unwrap_or_else(|| default_env_name(&p.name));
                let value = match value {
                    Value::Array(items) => join(items, inj.separator.as_deref()),
                    v => text(v),
                };
                check_os_string(
                    &value,
                    name.len() + 1,
                    &at,
                    &format!("environment variable {name}"),
                    &mut problems,
                );
                env.retain(|e: &EnvVar| e.name != name);
                env.push(EnvVar {
                    name,
                    value,
                    secret: false,
                });
            }
        }
        for a in &argv[first_new_arg..] {
            check_os_string(a, 0, &at, "the value", &mut problems);
        }
    }
    if problems.is_empty() {
        Ok(Invocation {
            argv,
            stdin,
            env,
            stdin_shown: None,
        })
    } else {
        Err(problems)
    }
}

/// Config fields reach a command as environment variables.
fn config_env(tool: &Tool) -> Vec<EnvVar> {
    tool.config_schema
        .iter()
        .filter_map(|p: &Parameter| {
            let value = tool.config.get(&p.name).filter(|v| !v.is_null())?;
            Some(EnvVar {
                name: p
                    .injection
                    .env_name
                    .clone()
                    .unwrap_or_else(|| default_env_name(&p.name)),
                value: match value {
                    Value::Array(items) => join(items, p.injection.separator.as_deref()),
                    v => text(v),
                },
                secret: p.secret,
            })
        })
        .collect()
}

/// What the operating system refuses or cuts, refused here with the parameter named.
/// `prefix`: bytes the kernel counts before the value (`NAME=` of a variable).
fn check_os_string(s: &str, prefix: usize, at: &str, what: &str, problems: &mut Vec<Problem>) {
    if s.contains('\0') {
        problems.push(Problem::new(
            at,
            format!("{what} contains a NUL byte, which no program can receive"),
        ));
    }
    // The kernel counts the terminating NUL too.
    let most = MAX_ARG_BYTES - 1 - prefix;
    if s.len() > most {
        problems.push(Problem::new(at, format!(
            "{what} is {} bytes, over the {most}-byte limit the kernel sets for one argument or variable; pass large values on stdin (`inject_as: stdin`)",
            s.len()
        )));
    }
}

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

fn join(items: &[Value], separator: Option<&str>) -> String {
    items
        .iter()
        .map(text)
        .collect::<Vec<_>>()
        .join(separator.unwrap_or(","))
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
