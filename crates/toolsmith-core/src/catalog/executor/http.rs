//! HTTP tools (SPEC §12): `http: {method, url, headers, auth, body, max_response_bytes,
//! allow_hosts}`, and the rules that tie it to the parameters (every `{name}` of the URL is a
//! `path` parameter and back, one parameter for `body: whole`, auth naming config fields).

use crate::form::param::Placement;
use crate::http::{
    BodyMode, HttpAuth, HttpCall, HttpPlace, METHODS, RESERVED_HEADERS, RequestPart,
    is_header_name, is_header_value, method_has_body, placeholders,
};
use crate::model::ParamType;

use super::*;

pub(super) const RULES: Rules = Rules {
    name: "http",
    place: Place::HttpArgument,
    // toolsmith sends the request itself; no process runs.
    process: false,
    command_keys: false,
    reserved_parameter: None,
    raw_schema: false,
};

const KEYS: [&str; 7] = [
    "method",
    "url",
    "headers",
    "auth",
    "body",
    "max_response_bytes",
    "allow_hosts",
];

/// `{http: {...}}`.
pub(super) fn read(v: &Value, at: &str, e: &mut Errs) -> Option<Executor> {
    let f = Fields::new(v.get("http")?, at, &KEYS, e)?;
    let errors_before = e.list.len();
    let method = match f.string("method", e) {
        None if f.has("method") => None,
        None => Some("GET".to_owned()),
        Some(m) => {
            let upper = m.to_ascii_uppercase();
            if METHODS.contains(&upper.as_str()) {
                Some(upper)
            } else {
                e.push(
                    &f.at("method"),
                    format!("unknown method {m:?}: one of {}", METHODS.join(", ")),
                );
                None
            }
        }
    };
    let url = f.string("url", e);
    match &url {
        None if !f.has("url") => e.push(
            &f.at("url"),
            "missing: the URL, e.g. https://api.example.com/items/{id}",
        ),
        None => {}
        Some(u) => check_url(u, &f.at("url"), e),
    }
    let mut headers = BTreeMap::new();
    if let Some(v) = f.get("headers") {
        match v {
            Value::Object(map) => {
                for (name, value) in map {
                    let here = join(&f.at("headers"), name);
                    let text = match value {
                        Value::String(s) => s.clone(),
                        Value::Number(_) | Value::Bool(_) => value.to_string(),
                        _ => {
                            e.push(&here, "expected the header's value as text");
                            continue;
                        }
                    };
                    check_header(name, &text, &here, e);
                    headers.insert(name.clone(), text);
                }
            }
            _ => e.push(
                &f.at("headers"),
                "expected a mapping of header names to values",
            ),
        }
    }
    let auth = f.get("auth").and_then(|v| read_auth(v, &f.at("auth"), e));
    let body = match f.string("body", e) {
        None => None,
        Some(b) if b == "whole" => Some(BodyMode::Whole),
        Some(b) => {
            e.push(
                &f.at("body"),
                format!("unknown body mode {b:?}: `whole` (one parameter is the entire body), or leave it out (the body parameters form a JSON object)"),
            );
            None
        }
    };
    let max_response_bytes = f.uint("max_response_bytes", e);
    if max_response_bytes == Some(0) {
        e.push(&f.at("max_response_bytes"), "must be at least 1");
    }
    let allow_hosts = f.strings("allow_hosts", e).unwrap_or_default();
    for (i, h) in allow_hosts.iter().enumerate() {
        if h.is_empty() || h.contains(['/', ':', ' ']) && !h.starts_with('[') {
            e.push(
                &format!("{}[{i}]", f.at("allow_hosts")),
                format!(
                    "{h:?} is not a host: a name (`api.example.com`, `*.example.com`) or an address"
                ),
            );
        }
    }
    if e.list.len() != errors_before {
        return None;
    }
    Some(Executor::Http(HttpCall {
        method: method?,
        url: url?,
        headers,
        auth,
        body,
        max_response_bytes,
        allow_hosts,
        places: BTreeMap::new(),
    }))
}

/// An absolute http(s) URL with placeholders only in its path, no fragment and no
/// credentials.
fn check_url(url: &str, at: &str, e: &mut Errs) {
    let names = match placeholders(url) {
        Ok(n) => n,
        Err(m) => return e.push(at, m),
    };
    // Each placeholder stands for one segment; a plain word parses in its place.
    let mut sample = url.to_owned();
    for n in &names {
        sample = sample.replacen(&format!("{{{n}}}"), "x", 1);
    }
    let parsed = match url::Url::parse(&sample) {
        Ok(u) => u,
        Err(err) => return e.push(at, format!("not a URL ({err}): {url:?}")),
    };
    if !matches!(parsed.scheme(), "http" | "https") {
        e.push(at, format!("{url:?}: only http and https URLs are allowed"));
    }
    if parsed.fragment().is_some() {
        e.push(
            at,
            format!("{url:?}: a URL sent to a server has no `#fragment`"),
        );
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        e.push(
            at,
            format!("{url:?}: credentials in a URL would be stored and shown; use `auth` with a secret config field"),
        );
    }
    let path_start = url.find("://").map_or(0, |i| i + 3);
    let authority_end = url[path_start..]
        .find(['/', '?'])
        .map_or(url.len(), |i| path_start + i);
    let query_start = url.find('?').unwrap_or(url.len());
    if let Some(first) = url.find('{')
        && (first < authority_end || first > query_start)
    {
        e.push(
            at,
            format!("{url:?}: placeholders belong in the path; the host and the query are fixed (query parameters are declared with `inject_as: query`)"),
        );
    }
}

fn check_header(name: &str, value: &str, at: &str, e: &mut Errs) {
    if !is_header_name(name) {
        e.push(at, format!("{name:?} is not a header name"));
    } else if RESERVED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
        e.push(
            at,
            format!("`{name}` is set by the HTTP client, not the tool"),
        );
    }
    if !is_header_value(value) {
        e.push(
            at,
            "a header value cannot hold line breaks or control characters",
        );
    }
}

/// `{bearer: field}`, `{basic: [user, password]}`, `{header: {name, value}}` or
/// `{query: {name, value}}`: the values name config fields.
fn read_auth(v: &Value, at: &str, e: &mut Errs) -> Option<HttpAuth> {
    let f = Fields::new(v, at, &["bearer", "basic", "header", "query"], e)?;
    let given: Vec<&str> = ["bearer", "basic", "header", "query"]
        .into_iter()
        .filter(|k| f.has(k))
        .collect();
    if given.len() != 1 {
        e.push(
            at,
            "give exactly one of `bearer: FIELD`, `basic: [USER_FIELD, PASSWORD_FIELD]`, `header: {name, value: FIELD}` or `query: {name, value: FIELD}`",
        );
        return None;
    }
    let named = |key: &str, e: &mut Errs| -> Option<(String, String)> {
        let g = Fields::new(f.get(key)?, &f.at(key), &["name", "value"], e)?;
        let name = g.string("name", e);
        let value = g.string("value", e);
        if name.is_none() || value.is_none() {
            e.push(
                &f.at(key),
                "needs `name` (in the request) and `value` (a config field)",
            );
        }
        Some((name?, value?))
    };
    match given[0] {
        "bearer" => f.string("bearer", e).map(HttpAuth::Bearer),
        "basic" => match f.strings("basic", e).as_deref() {
            Some([user, password]) => Some(HttpAuth::Basic(user.clone(), password.clone())),
            _ => {
                e.push(&f.at("basic"), "expected [USER_FIELD, PASSWORD_FIELD]");
                None
            }
        },
        "header" => {
            let (name, value) = named("header", e)?;
            check_header(&name, "", &f.at("header"), e);
            Some(HttpAuth::Header { name, value })
        }
        _ => named("query", e).map(|(name, value)| HttpAuth::Query { name, value }),
    }
}

/// Each parameter's place in the request: as its entry declares it, or (no `inject_as`) the
/// query for GET, HEAD and OPTIONS and the body for the other methods. Every parameter has
/// one, so the catalog form says where each goes.
pub(in crate::catalog) fn places(
    call: &HttpCall,
    params: &[Parameter],
    placements: &[Placement],
) -> BTreeMap<String, HttpPlace> {
    params
        .iter()
        .zip(placements)
        .map(|(p, placement)| {
            let place = match placement {
                Placement::Http { place, given: true } => place.clone(),
                Placement::Http {
                    place,
                    given: false,
                } => HttpPlace {
                    inject_as: call.default_part(),
                    ..place.clone()
                },
                _ => call.place(&p.name),
            };
            (p.name.clone(), place)
        })
        .collect()
}

/// The rules between the request and the parameters, once both are read.
pub(in crate::catalog) fn settle(
    call: &HttpCall,
    params: &[Parameter],
    config_schema: &[Parameter],
    f: &Fields<'_>,
    e: &mut Errs,
) {
    let at = |i: usize, key: &str| format!("{}[{i}].{key}", f.at("parameters"));
    let in_path = placeholders(&call.url).unwrap_or_default();
    let mut wire_seen: HashSet<(RequestPart, String)> = HashSet::new();
    let mut body = Vec::new();
    for (i, p) in params.iter().enumerate() {
        let place = call.place(&p.name).inject_as;
        let wire = call.wire_name(&p.name).to_owned();
        let key = match place {
            RequestPart::Header => wire.to_ascii_lowercase(),
            _ => wire.clone(),
        };
        if !wire_seen.insert((place, key)) {
            e.push(
                &at(i, "name"),
                format!("two parameters send {wire:?} in the {}", place.noun()),
            );
        }
        let scalar = !matches!(p.ty, ParamType::Array | ParamType::Object);
        match place {
            RequestPart::Path => {
                if !in_path.contains(&wire) {
                    e.push(
                        &at(i, "inject_as"),
                        format!("the URL has no `{{{wire}}}` for this path parameter"),
                    );
                }
                if !scalar {
                    e.push(
                        &at(i, "type"),
                        format!("a path parameter is one segment: a string, number, boolean or enum, not {}", p.ty.as_str()),
                    );
                }
                if !p.required && p.default.is_none() {
                    e.push(
                        &at(i, "required"),
                        "a path parameter cannot be left out: make it required or give a default",
                    );
                }
            }
            RequestPart::Query | RequestPart::Header => {
                if p.ty == ParamType::Object {
                    e.push(
                        &at(i, "type"),
                        format!(
                            "an object cannot go in the {}; send it in the body",
                            place.noun()
                        ),
                    );
                }
                if place == RequestPart::Header {
                    check_header(&wire, "", &at(i, "http_name"), e);
                }
            }
            RequestPart::Body => body.push(i),
        }
    }
    for name in &in_path {
        let declared = params.iter().any(|p| {
            call.place(&p.name).inject_as == RequestPart::Path && call.wire_name(&p.name) == name
        });
        if !declared {
            e.push(
                &f.at("http"),
                format!(
                    "the URL's `{{{name}}}` has no parameter: declare one with `inject_as: path`"
                ),
            );
        }
    }
    if !body.is_empty() && !method_has_body(&call.method) {
        e.push(
            &at(body[0], "inject_as"),
            format!(
                "a {} request has no body: use `inject_as: query`",
                call.method
            ),
        );
    }
    if call.body == Some(BodyMode::Whole) && body.len() != 1 {
        e.push(
            &join(&f.at("http"), "body"),
            format!(
                "`body: whole` sends one parameter as the entire body; {} parameters have `inject_as: body`",
                body.len()
            ),
        );
    }
    if let Some(auth) = &call.auth {
        for field in auth.fields() {
            match config_schema.iter().find(|c| c.name == field) {
                None => e.push(
                    &join(&f.at("http"), "auth"),
                    format!("no config field {field:?}: declare it in `config_schema` (with `secret: true`)"),
                ),
                Some(c) if c.ty != ParamType::String => e.push(
                    &join(&f.at("http"), "auth"),
                    format!("config field {field:?} is {}; credentials are strings", c.ty.as_str()),
                ),
                Some(_) => {}
            }
        }
    }
}
