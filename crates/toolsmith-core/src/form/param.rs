//! Reading one parameter (and, recursively, its items and properties) with every rule of
//! SPEC §2.1 and §3.1 checked.

use std::collections::HashSet;

use serde_json::{Number, Value};

use super::{Errs, Fields};
use crate::command::{BooleanStyle, CommandPlace, InjectAs, OptionStyle};
use crate::http::HttpPlace;
use crate::model::{ArrayStyle, Constraints, ParamType, Parameter};
use crate::schema;
use crate::schema::compile_schema;

const KEYS: &[&str] = &[
    "name",
    "type",
    "description",
    "required",
    "default",
    "nullable",
    "values",
    "items",
    "properties",
    "additional_properties",
    "min_length",
    "max_length",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusive_minimum",
    "exclusive_maximum",
    "multiple_of",
    "min_items",
    "max_items",
    "unique_items",
    "inject_as",
    "option_name",
    "option_style",
    "boolean_style",
    "array_style",
    "separator",
    "env_name",
    "allow_dangerous_env",
    "secret",
    "workspace_path",
    "http_name",
];

const INJECTION_KEYS: &[&str] = &[
    "inject_as",
    "option_name",
    "option_style",
    "boolean_style",
    "array_style",
    "separator",
    "allow_dangerous_env",
    "http_name",
];

/// String formats the validator asserts; anything else would silently pass, so it is refused.
pub const FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uri-template",
    "uuid",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Where a parameter sits, which decides the keys it may use.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// A top-level argument of a command tool: injection keys allowed.
    CommandArgument,
    /// A top-level argument of a script or built-in tool (arrives as JSON).
    JsonArgument,
    /// A top-level argument of an `http` tool: path, query, header or body.
    HttpArgument,
    /// A field of `config_schema`: `secret` and `env_name` allowed.
    Config,
    /// An array's items or an object's property.
    Nested,
    /// An array's items: no name.
    Items,
}

/// Where a top-level parameter goes, as its entry says: the tool's reader hands it to the
/// executor, which owns the places (see [`crate::command`], [`crate::http`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Placement {
    /// A script's, built-in's or upstream tool's parameter, a config field, a nested one.
    None,
    Command(CommandPlace),
    /// `given`: the entry says `inject_as`; otherwise the tool's method decides.
    Http {
        place: HttpPlace,
        given: bool,
    },
}

/// Reads a list of parameters, checking names are unique.
pub(crate) fn parse_list(list: &[Value], path: &str, place: Place, e: &mut Errs) -> Vec<Parameter> {
    parse_list_placed(list, path, place, e)
        .into_iter()
        .map(|(p, _)| p)
        .collect()
}

/// [`parse_list`], each parameter with where it goes.
pub(crate) fn parse_list_placed(
    list: &[Value],
    path: &str,
    place: Place,
    e: &mut Errs,
) -> Vec<(Parameter, Placement)> {
    let mut out = Vec::with_capacity(list.len());
    let mut seen = HashSet::new();
    for (i, v) in list.iter().enumerate() {
        let at = format!("{path}[{i}]");
        if let Some((p, placement)) = parse_placed(v, &at, place, e) {
            if !seen.insert(p.name.clone()) {
                e.push(
                    &format!("{at}.name"),
                    format!("duplicate parameter name {:?}", p.name),
                );
            }
            out.push((p, placement));
        }
    }
    out
}

/// Whether `name` is a parameter name: a JSON property name every provider accepts.
pub(crate) fn is_parameter_name(name: &str) -> bool {
    name.len() <= 64
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn check_name(name: &str) -> Result<(), String> {
    if is_parameter_name(name) {
        Ok(())
    } else {
        Err(format!(
            "invalid parameter name {name:?}: use a letter or `_`, then up to 63 letters, digits, `_` or `-`"
        ))
    }
}

pub(crate) fn parse(v: &Value, path: &str, place: Place, e: &mut Errs) -> Option<Parameter> {
    parse_placed(v, path, place, e).map(|(p, _)| p)
}

fn parse_placed(
    v: &Value,
    path: &str,
    place: Place,
    e: &mut Errs,
) -> Option<(Parameter, Placement)> {
    // `items: string` is shorthand for `items: {type: string}`.
    let expanded;
    let v = match (place, v) {
        (Place::Items, Value::String(s)) => {
            expanded = serde_json::json!({ "type": s });
            &expanded
        }
        _ => v,
    };
    let f = Fields::new(v, path, KEYS, e)?;
    let errors_before = e.list.len();
    let mut p = Parameter::default();

    match (place, f.string("name", e)) {
        (Place::Items, Some(_)) => e.push(&f.at("name"), "array items have no name; remove `name`"),
        (Place::Items, None) => {}
        (_, None) if !f.has("name") => {
            e.push(&f.at("name"), "missing; every parameter needs a name")
        }
        (_, None) => {}
        (_, Some(name)) => {
            if let Err(msg) = check_name(&name) {
                e.push(&f.at("name"), msg);
            }
            p.name = name;
        }
    }
    if let Some(ty) = f.choice("type", "type", &ParamType::NAMES, ParamType::parse, e) {
        p.ty = ty;
    } else if f.has("type") {
        return None;
    }
    p.description = f.string("description", e);
    p.nullable = f.boolean("nullable", e).unwrap_or(false);
    p.default = f.get("default").cloned();
    if place == Place::Items && (f.has("required") || p.default.is_some()) {
        e.push(path, "array items cannot be required or have a default");
    }
    let explicit_required = f.boolean("required", e);
    p.required = explicit_required.unwrap_or(p.default.is_none());
    if explicit_required == Some(true) && p.default.is_some() {
        e.push(
            &f.at("required"),
            "a required parameter's default is never used; remove one of them",
        );
    }

    parse_type_specific(&f, &mut p, e);
    parse_constraints(&f, &mut p, e);
    let placement = parse_injection(&f, &mut p, place, e);

    if let Some(w) = f.boolean("workspace_path", e) {
        if p.ty != ParamType::String {
            e.push(
                &f.at("workspace_path"),
                format!(
                    "`workspace_path` applies to string parameters (for a list of paths, set it on `items`), not {}",
                    p.ty.as_str()
                ),
            );
        }
        p.workspace_path = w;
    }
    if place == Place::Config {
        p.secret = f.boolean("secret", e).unwrap_or(false);
    } else if f.has("secret") {
        e.push(
            &f.at("secret"),
            "`secret` applies to config_schema fields only",
        );
    }

    // Only a parameter that is otherwise sound gets its default checked against its schema.
    if e.list.len() == errors_before
        && let Some(default) = &p.default
    {
        match compile_schema(&schema::parameter_schema(&p)) {
            Ok(validator) => {
                for err in validator.iter_errors(default) {
                    let at = err.instance_path().as_str();
                    e.push(
                        &f.at("default"),
                        format!(
                            "default {default} fails its own schema: {at}{}{err}",
                            if at.is_empty() { "" } else { ": " }
                        ),
                    );
                }
            }
            Err(msg) => e.push(
                path,
                format!("cannot build a schema for this parameter: {msg}"),
            ),
        }
    }
    Some((p, placement))
}

fn parse_type_specific(f: &Fields<'_>, p: &mut Parameter, e: &mut Errs) {
    match (p.ty, f.list("values", e)) {
        (ParamType::Enum, None) => e.push(
            &f.at("values"),
            "an enum needs `values`: a list of strings or of integers",
        ),
        (ParamType::Enum, Some(values)) => {
            let all_strings = values.iter().all(Value::is_string);
            let all_integers = values.iter().all(Value::is_i64);
            if values.is_empty() {
                e.push(&f.at("values"), "an enum needs at least one value");
            } else if !all_strings && !all_integers {
                e.push(
                    &f.at("values"),
                    "enum values must be all strings or all integers",
                );
            }
            let mut seen = HashSet::new();
            for v in values {
                if !seen.insert(v.to_string()) {
                    e.push(&f.at("values"), format!("duplicate enum value {v}"));
                }
            }
            p.values = values.clone();
        }
        (_, Some(_)) => e.push(
            &f.at("values"),
            format!("`values` applies to enum parameters, not {}", p.ty.as_str()),
        ),
        (_, None) => {}
    }
    match (p.ty, f.get("items")) {
        (ParamType::Array, Some(items)) => {
            p.items = parse(items, &f.at("items"), Place::Items, e).map(Box::new);
        }
        (ParamType::Array, None) => e.push(
            &f.at("items"),
            "an array needs `items`, for example `items: {type: string}`",
        ),
        (_, Some(_)) => e.push(
            &f.at("items"),
            format!("`items` applies to array parameters, not {}", p.ty.as_str()),
        ),
        (_, None) => {}
    }
    let props = f.list("properties", e);
    if p.ty == ParamType::Object {
        if let Some(list) = props {
            p.properties = parse_list(list, &f.at("properties"), Place::Nested, e);
        }
        p.additional_properties = f.boolean("additional_properties", e);
    } else {
        for key in ["properties", "additional_properties"] {
            if f.has(key) {
                e.push(
                    &f.at(key),
                    format!(
                        "`{key}` applies to object parameters, not {}",
                        p.ty.as_str()
                    ),
                );
            }
        }
    }
}

fn parse_constraints(f: &Fields<'_>, p: &mut Parameter, e: &mut Errs) {
    let ty = p.ty;
    let applies = |key: &str, types: &[ParamType], e: &mut Errs| -> bool {
        if !f.has(key) {
            return false;
        }
        if types.contains(&ty) {
            return true;
        }
        let names: Vec<&str> = types.iter().map(|t| t.as_str()).collect();
        e.push(
            &f.at(key),
            format!(
                "`{key}` applies to {} parameters, not {}",
                names.join(" and "),
                ty.as_str()
            ),
        );
        false
    };
    let strings = [ParamType::String];
    let numbers = [ParamType::Integer, ParamType::Number];
    let arrays = [ParamType::Array];
    let mut c = Constraints::default();
    if applies("min_length", &strings, e) {
        c.min_length = f.uint("min_length", e);
    }
    if applies("max_length", &strings, e) {
        c.max_length = f.uint("max_length", e);
    }
    if applies("pattern", &strings, e) {
        c.pattern = f.string("pattern", e);
        if let Some(pattern) = &c.pattern
            && let Err(msg) = compile_schema(&serde_json::json!({ "pattern": pattern }))
        {
            e.push(
                &f.at("pattern"),
                format!("invalid regular expression {pattern:?}: {msg}"),
            );
        }
    }
    if applies("format", &strings, e) {
        c.format = f.choice(
            "format",
            "format",
            FORMATS,
            |s| FORMATS.contains(&s).then(|| s.to_owned()),
            e,
        );
    }
    let num = |key: &str, e: &mut Errs| -> Option<Number> {
        if !applies(key, &numbers, e) {
            return None;
        }
        let n = f.number(key, e)?;
        if ty == ParamType::Integer && !(n.is_i64() || n.is_u64()) {
            e.push(
                &f.at(key),
                format!("{n} is not an integer, but the parameter is"),
            );
        }
        Some(n)
    };
    c.minimum = num("minimum", e);
    c.maximum = num("maximum", e);
    c.exclusive_minimum = num("exclusive_minimum", e);
    c.exclusive_maximum = num("exclusive_maximum", e);
    c.multiple_of = num("multiple_of", e);
    if applies("min_items", &arrays, e) {
        c.min_items = f.uint("min_items", e);
    }
    if applies("max_items", &arrays, e) {
        c.max_items = f.uint("max_items", e);
    }
    if applies("unique_items", &arrays, e) {
        c.unique_items = f.boolean("unique_items", e).unwrap_or(false);
    }

    let over = |lo: Option<f64>, hi: Option<f64>, strict: bool| match (lo, hi) {
        (Some(lo), Some(hi)) => {
            if strict {
                lo >= hi
            } else {
                lo > hi
            }
        }
        _ => false,
    };
    let as_f = |n: &Option<Number>| n.as_ref().and_then(Number::as_f64);
    let as_u = |n: Option<u64>| n.map(|x| x as f64);
    if over(as_u(c.min_length), as_u(c.max_length), false) {
        e.push(
            &f.at("min_length"),
            format!(
                "min_length {} is above max_length {}",
                c.min_length.unwrap_or(0),
                c.max_length.unwrap_or(0)
            ),
        );
    }
    if over(as_u(c.min_items), as_u(c.max_items), false) {
        e.push(
            &f.at("min_items"),
            format!(
                "min_items {} is above max_items {}",
                c.min_items.unwrap_or(0),
                c.max_items.unwrap_or(0)
            ),
        );
    }
    let lower = [
        ("minimum", &c.minimum, false),
        ("exclusive_minimum", &c.exclusive_minimum, true),
    ];
    let upper = [
        ("maximum", &c.maximum, false),
        ("exclusive_maximum", &c.exclusive_maximum, true),
    ];
    for (lo_key, lo, lo_strict) in lower {
        for (hi_key, hi, hi_strict) in upper {
            if over(as_f(lo), as_f(hi), lo_strict || hi_strict) {
                let (Some(l), Some(h)) = (lo, hi) else {
                    continue;
                };
                let relation = if lo_strict || hi_strict {
                    "leaves no value allowed with"
                } else {
                    "is above"
                };
                e.push(
                    &f.at(lo_key),
                    format!("{lo_key} {l} {relation} {hi_key} {h}"),
                );
            }
        }
    }
    if as_f(&c.multiple_of).is_some_and(|m| m <= 0.0) {
        e.push(&f.at("multiple_of"), "multiple_of must be greater than 0");
    }
    p.constraints = c;
}

mod http;

/// Reads where the parameter goes (a command's or an http tool's top-level parameter), a
/// config field's `env_name`, and refuses injection keys anywhere else.
fn parse_injection(f: &Fields<'_>, p: &mut Parameter, place: Place, e: &mut Errs) -> Placement {
    if place == Place::HttpArgument {
        return http::parse_http_injection(f, p, e);
    }
    if place != Place::CommandArgument {
        let why = match place {
            Place::JsonArgument => "script and built-in tools receive their arguments as JSON",
            Place::Config => {
                "config fields reach the command as environment variables (`env_name`)"
            }
            _ => "only top-level parameters are injected",
        };
        for key in INJECTION_KEYS {
            if f.has(key) {
                let message = match *key {
                    "http_name" => {
                        "`http_name` applies to top-level parameters of http tools".into()
                    }
                    _ => format!("`{key}` applies to top-level parameters of command tools; {why}"),
                };
                e.push(&f.at(key), message);
            }
        }
        if f.has("env_name") && place != Place::Config {
            e.push(
                &f.at("env_name"),
                format!("`env_name` applies to command parameters and config fields; {why}"),
            );
        }
        if place == Place::Config {
            p.env_name = env_name(f, e);
        }
        return Placement::None;
    }
    if f.has("http_name") {
        e.push(
            &f.at("http_name"),
            "`http_name` applies to parameters of http tools",
        );
    }
    let mut inj = CommandPlace::default();
    let names = ["argument", "option", "stdin", "env"];
    inj.inject_as = f
        .choice(
            "inject_as",
            "injection",
            &names,
            |s| match s {
                "argument" => Some(InjectAs::Argument),
                "option" => Some(InjectAs::Option),
                "stdin" => Some(InjectAs::Stdin),
                "env" => Some(InjectAs::Env),
                _ => None,
            },
            e,
        )
        .unwrap_or_default();
    let is_option = inj.inject_as == InjectAs::Option;

    inj.option_name = f.string("option_name", e);
    match (&inj.option_name, is_option) {
        (None, true) if !f.has("option_name") => e.push(
            &f.at("option_name"),
            "`inject_as: option` needs `option_name`, for example `--limit`",
        ),
        (Some(_), false) => e.push(
            &f.at("option_name"),
            "`option_name` applies with `inject_as: option`",
        ),
        (Some(name), true) => {
            let ok = name.starts_with('-')
                && !name.trim_start_matches('-').is_empty()
                && !name
                    .chars()
                    .any(|c| c.is_whitespace() || c == '=' || c == '\0');
            if !ok {
                e.push(
                    &f.at("option_name"),
                    format!(
                        "invalid option name {name:?}: it starts with `-` and has no spaces or `=`"
                    ),
                );
            }
        }
        _ => {}
    }

    if let Some(style) = f.choice(
        "option_style",
        "option style",
        &["separate", "equals"],
        |s| match s {
            "separate" => Some(OptionStyle::Separate),
            "equals" => Some(OptionStyle::Equals),
            _ => None,
        },
        e,
    ) {
        if !is_option {
            e.push(
                &f.at("option_style"),
                "`option_style` applies with `inject_as: option`",
            );
        }
        inj.option_style = style;
    }

    if let Some(style) = f.choice(
        "boolean_style",
        "boolean style",
        &["flag", "value"],
        |s| match s {
            "flag" => Some(BooleanStyle::Flag),
            "value" => Some(BooleanStyle::Value),
            _ => None,
        },
        e,
    ) {
        if p.ty != ParamType::Boolean {
            e.push(
                &f.at("boolean_style"),
                format!(
                    "`boolean_style` applies to boolean parameters, not {}",
                    p.ty.as_str()
                ),
            );
        } else if style == BooleanStyle::Flag && !is_option {
            e.push(
                &f.at("boolean_style"),
                "`boolean_style: flag` needs `inject_as: option` (a flag is an option)",
            );
        }
        inj.boolean_style = Some(style);
    }

    if let Some(style) = f.choice(
        "array_style",
        "array style",
        &["repeat", "separate", "join"],
        |s| match s {
            "repeat" => Some(ArrayStyle::Repeat),
            "separate" => Some(ArrayStyle::Separate),
            "join" => Some(ArrayStyle::Join),
            _ => None,
        },
        e,
    ) {
        if p.ty != ParamType::Array {
            e.push(
                &f.at("array_style"),
                format!(
                    "`array_style` applies to array parameters, not {}",
                    p.ty.as_str()
                ),
            );
        } else {
            match (style, inj.inject_as) {
                (ArrayStyle::Repeat, InjectAs::Option) | (ArrayStyle::Join, _) => {}
                (ArrayStyle::Separate, InjectAs::Argument) => {}
                (ArrayStyle::Separate, InjectAs::Option) if inj.option_style == OptionStyle::Separate => {}
                (ArrayStyle::Separate, InjectAs::Option) => e.push(&f.at("array_style"), "`array_style: separate` cannot be combined with `option_style: equals`"),
                (ArrayStyle::Repeat, _) => e.push(&f.at("array_style"), "`array_style: repeat` needs `inject_as: option` (it repeats the option name)"),
                (ArrayStyle::Separate, _) => e.push(&f.at("array_style"), "`array_style: separate` applies to arguments and options; use `join` for stdin and env"),
            }
        }
        inj.array_style = Some(style);
    }
    inj.separator = f.string("separator", e);
    if inj.separator.is_some() {
        let joins = inj.array_style == Some(ArrayStyle::Join)
            || (inj.array_style.is_none()
                && matches!(inj.inject_as, InjectAs::Env | InjectAs::Stdin));
        if p.ty != ParamType::Array || !joins {
            e.push(
                &f.at("separator"),
                "`separator` applies to arrays injected with `array_style: join`",
            );
        }
    }
    inj.env_name = env_name(f, e);
    if inj.env_name.is_some() && inj.inject_as != InjectAs::Env {
        e.push(
            &f.at("env_name"),
            "`env_name` applies with `inject_as: env`",
        );
    }
    inj.allow_dangerous_env = f.boolean("allow_dangerous_env", e).unwrap_or(false);
    if f.has("allow_dangerous_env") && inj.inject_as != InjectAs::Env {
        e.push(
            &f.at("allow_dangerous_env"),
            "`allow_dangerous_env` applies with `inject_as: env`",
        );
    }
    Placement::Command(inj)
}

fn env_name(f: &Fields<'_>, e: &mut Errs) -> Option<String> {
    let name = f.string("env_name", e)?;
    if !super::is_env_name(&name) {
        e.push(&f.at("env_name"), format!("invalid environment variable name {name:?}: use letters, digits and `_`, not starting with a digit"));
    }
    Some(name)
}
