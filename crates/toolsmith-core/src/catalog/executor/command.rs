//! Command tools: the argv, and the layout of injected parameters.

use super::*;
use crate::command::{Command, CommandPlace, InjectAs};
use crate::form::param::Placement;

pub(super) const RULES: Rules = Rules {
    name: "command",
    place: Place::CommandArgument,
    process: true,
    command_keys: true,
    reserved_parameter: None,
    raw_schema: false,
};

/// `{command: [program, fixed args...]}`: a non-empty list of non-empty words (numbers and
/// booleans YAML read as scalars are taken as their text).
pub(crate) fn read(v: &Value, at: &str, e: &mut Errs) -> Option<Executor> {
    let list = v.get("command");
    let Some(Value::Array(items)) = list else {
        e.push(
            at,
            "`command` is a list: the program, then fixed arguments, e.g. [git, status]",
        );
        return None;
    };
    if items.is_empty() {
        e.push(at, "`command` is empty: name the program to run");
        return None;
    }
    let mut argv = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        match item {
            Value::String(s) if !s.is_empty() && !s.contains('\0') => argv.push(s.clone()),
            // YAML reads `[true]` or `[7z]`-like words as scalars; a command word is text.
            Value::Number(_) | Value::Bool(_) => argv.push(item.to_string()),
            other => e.push(
                &format!("{at}[{i}]"),
                format!("expected a non-empty string, got {other}"),
            ),
        }
    }
    (argv.len() == items.len()).then(|| Executor::Command(Command::new(argv)))
}

/// Each parameter's place on the command line, as its entry declares it (the default, a
/// positional argument, is left out).
pub(crate) fn places(
    params: &[Parameter],
    placements: &[Placement],
) -> BTreeMap<String, CommandPlace> {
    params
        .iter()
        .zip(placements)
        .filter_map(|(p, placement)| match placement {
            Placement::Command(place) if *place != CommandPlace::default() => {
                Some((p.name.clone(), place.clone()))
            }
            _ => None,
        })
        .collect()
}

/// Tool-level injection rules: one stdin parameter at most, unique env names, and with an
/// end-of-options marker all options declared before the first argument.
pub(crate) fn check_injection_layout(
    params: &[Parameter],
    command: &Command,
    eoo: Option<EndOfOptions>,
    f: &Fields<'_>,
    e: &mut Errs,
) {
    let at = |i: usize| format!("{}[{i}]", f.at("parameters"));
    let place = |p: &Parameter| command.place(&p.name);
    let stdin: Vec<usize> = (0..params.len())
        .filter(|&i| place(&params[i]).inject_as == InjectAs::Stdin)
        .collect();
    if stdin.len() > 1 {
        e.push(
            &format!("{}.inject_as", at(stdin[1])),
            format!(
                "a tool has one stdin; {:?} already uses it",
                params[stdin[0]].name
            ),
        );
    }
    let mut env_names = HashSet::new();
    for (i, p) in params
        .iter()
        .enumerate()
        .filter(|(_, p)| place(p).inject_as == InjectAs::Env)
    {
        let name = place(p)
            .env_name
            .clone()
            .unwrap_or_else(|| crate::model::default_env_name(&p.name));
        if !env_names.insert(name.clone()) {
            e.push(
                &format!("{}.env_name", at(i)),
                format!("environment variable {name:?} is set by two parameters"),
            );
        }
    }
    if eoo.is_some() {
        let first_arg = params
            .iter()
            .position(|p| place(p).inject_as == InjectAs::Argument);
        if let Some(first) = first_arg {
            for (i, p) in params.iter().enumerate().skip(first) {
                if place(p).inject_as == InjectAs::Option {
                    e.push(&format!("{}.inject_as", at(i)), format!(
                        "with `end_of_options`, options come before arguments: move {:?} above {:?}",
                        p.name, params[first].name
                    ));
                }
            }
        }
    }
}
