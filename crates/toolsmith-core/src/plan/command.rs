//! Command tools: each parameter injected by its fixed rule (argument, option, stdin or
//! environment variable), config values as variables, and what a program could misread
//! refused before anything runs.

use super::*;
use crate::command::{BooleanStyle, Command, InjectAs, OptionStyle};

pub(super) fn plan(
    tool: &Tool,
    command: &Command,
    args: &Map<String, Value>,
) -> Result<Process, Vec<Problem>> {
    let mut argv = command.argv.clone();
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
        let inj = command.place(&p.name);
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
        Ok(Process {
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
                    .env_name
                    .clone()
                    .unwrap_or_else(|| default_env_name(&p.name)),
                value: match value {
                    Value::Array(items) => join(items, None),
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
