//! An `http` tool's parameter injection keys (`inject_as` path/query/header/body, `http_name`,
//! `array_style`, `separator`).

use super::*;
use crate::http::RequestPart;

/// An `http` tool's parameter: where it goes in the request (`inject_as` path, query, header
/// or body; not given: decided by the tool's method once the tool is read), its name there,
/// and for arrays in a query or header, repeated or joined.
pub(super) fn parse_http_injection(f: &Fields<'_>, p: &Parameter, e: &mut Errs) -> Placement {
    for key in [
        "option_name",
        "option_style",
        "boolean_style",
        "env_name",
        "allow_dangerous_env",
    ] {
        if f.has(key) {
            e.push(
                &f.at(key),
                format!("`{key}` applies to command tools; an http tool's parameters go into the request (`inject_as`: path, query, header or body)"),
            );
        }
    }
    let mut inj = HttpPlace::default();
    let mut given = false;
    if let Some(place) = f.choice(
        "inject_as",
        "place in the request",
        &["path", "query", "header", "body"],
        |s| match s {
            "path" => Some(RequestPart::Path),
            "query" => Some(RequestPart::Query),
            "header" => Some(RequestPart::Header),
            "body" => Some(RequestPart::Body),
            _ => None,
        },
        e,
    ) {
        inj.inject_as = place;
        given = true;
    }
    inj.http_name = f.string("http_name", e);
    if let Some(name) = &inj.http_name
        && (name.is_empty() || name.chars().any(char::is_control))
    {
        e.push(
            &f.at("http_name"),
            format!("invalid name {name:?}: not empty, no control characters"),
        );
    }
    if let Some(style) = f.choice(
        "array_style",
        "array style",
        &["repeat", "join"],
        |s| match s {
            "repeat" => Some(ArrayStyle::Repeat),
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
        }
        inj.array_style = Some(style);
    }
    inj.separator = f.string("separator", e);
    if inj.separator.is_some() && inj.array_style != Some(ArrayStyle::Join) {
        e.push(
            &f.at("separator"),
            "`separator` applies with `array_style: join`",
        );
    }
    Placement::Http { place: inj, given }
}
