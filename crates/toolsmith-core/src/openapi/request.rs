//! The request side of one operation: its parameter names, its JSON request body (an
//! object's properties or one whole-body parameter) and its security schemes (credentials as
//! secret config fields).

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use super::Options;
use super::schema::{Reader, cut, required_set, valid_name};

/// A parameter name every provider accepts for `wire`, not yet taken.
pub(super) fn param_name(wire: &str, taken: &mut HashSet<String>) -> String {
    let mut name: String = wire
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if !name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        name.insert(0, '_');
    }
    name.truncate(60);
    let mut candidate = name.clone();
    let mut n = 1;
    while !taken.insert(candidate.clone()) {
        n += 1;
        candidate = format!("{name}_{n}");
    }
    debug_assert!(valid_name(&candidate));
    candidate
}

/// The request body: an object's properties as body parameters, or one `body` parameter
/// as the whole body; a body that is not JSON skips the operation when required.
pub(super) fn body(
    r: &mut Reader<'_>,
    op: &Value,
    method: &str,
    params: &mut Vec<Value>,
    taken: &mut HashSet<String>,
    http: &mut Map<String, Value>,
) -> Result<(), String> {
    let Some(rb) = op.get("requestBody") else {
        return Ok(());
    };
    let Some(rb) = r.deref(rb).cloned() else {
        return Err("the request body's `$ref` leads nowhere".into());
    };
    let required = rb["required"] == Value::Bool(true);
    let content = rb.get("content").and_then(Value::as_object);
    let json_media = content.and_then(|c| {
        c.iter().find(|(k, _)| {
            let k = k.split(';').next().unwrap_or("").trim();
            k == "application/json" || k.ends_with("+json")
        })
    });
    let Some((media, entry)) = json_media else {
        let kinds: Vec<&str> = content
            .map(|c| c.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let what = if kinds.is_empty() {
            "no media type".to_owned()
        } else {
            kinds.join(", ")
        };
        if required {
            return Err(format!(
                "its request body is {what}; toolsmith sends JSON bodies only"
            ));
        }
        r.notes.push(format!(
            "the optional request body ({what}) is not sent: toolsmith sends JSON bodies only"
        ));
        return Ok(());
    };
    if !crate::http::method_has_body(method) {
        r.notes
            .push(format!("a {method} request's body is not sent"));
        return Ok(());
    }
    let schema = entry.get("schema").cloned().unwrap_or(json!({}));
    let flat = r.flatten(&schema, 0);
    let props = flat.get("properties").and_then(Value::as_object).cloned();
    let is_object = flat.get("oneOf").is_none()
        && flat.get("anyOf").is_none()
        && matches!(flat.get("type"), None | Some(Value::String(_)))
        && flat.get("type").and_then(Value::as_str).unwrap_or("object") == "object";
    match props {
        Some(props) if is_object && !props.is_empty() => {
            let needed = required_set(&flat);
            for (wire, s) in &props {
                let Some(mut p) = r.property(wire, s, required && needed.contains(wire), "body", 0)
                else {
                    continue;
                };
                let pname = param_name(wire, taken);
                if pname != *wire {
                    p.insert("http_name".into(), json!(wire));
                }
                p.insert("name".into(), json!(pname));
                p.insert("inject_as".into(), json!("body"));
                params.push(Value::Object(p));
            }
            if flat
                .get("additionalProperties")
                .is_some_and(|a| a != &Value::Bool(false))
            {
                r.notes
                    .push("the body's additional properties are not offered".into());
            }
        }
        _ => {
            let mut p = Map::new();
            let pname = param_name("body", taken);
            p.insert("name".into(), json!(pname));
            p.append(&mut r.parameter(&schema, "body", 0));
            if p.get("description").is_none()
                && let Some(d) = rb.get("description").and_then(Value::as_str)
            {
                p.insert("description".into(), json!(cut(d.trim(), 300)));
            }
            p.insert("inject_as".into(), json!("body"));
            if required {
                p.remove("default");
            } else if !p.contains_key("default") {
                p.insert("required".into(), json!(false));
            }
            params.push(Value::Object(p));
            http.insert("body".into(), json!("whole"));
        }
    }
    if media != "application/json" {
        http.insert("headers".into(), json!({"Content-Type": media}));
    }
    Ok(())
}

/// The operation's security (its own, or the document's): the first alternative whose
/// schemes all have a credential configured becomes `auth`; none → a note.
pub(super) fn security(
    r: &mut Reader<'_>,
    opts: &Options,
    op: &Value,
    http: &mut Map<String, Value>,
    config_schema: &mut Vec<Value>,
    config: &mut Map<String, Value>,
) {
    let Some(alternatives) = op
        .get("security")
        .or_else(|| r.doc.get("security"))
        .and_then(Value::as_array)
    else {
        return;
    };
    if alternatives.is_empty() {
        return;
    }
    let optional = alternatives
        .iter()
        .any(|a| a.as_object().is_some_and(Map::is_empty));
    let schemes = r.doc.pointer("/components/securitySchemes").cloned();
    let mut wanted = Vec::new();
    for alt in alternatives {
        let Some(alt) = alt.as_object() else { continue };
        if alt.len() != 1 {
            continue;
        }
        let Some(scheme_name) = alt.keys().next() else {
            continue;
        };
        let scheme = schemes
            .as_ref()
            .and_then(|s| s.get(scheme_name))
            .and_then(|s| r.deref(s).cloned())
            .unwrap_or(Value::Null);
        let kind = describe_scheme(&scheme);
        wanted.push(format!("{scheme_name} ({kind})"));
        let Some(env) = opts.auth.get(scheme_name) else {
            continue;
        };
        let field = |n: &str| json!({"name": n, "secret": true, "description": format!("credential for the security scheme {scheme_name}")});
        let auth = match (
            scheme["type"].as_str(),
            scheme["scheme"]
                .as_str()
                .map(str::to_ascii_lowercase)
                .as_deref(),
            scheme["in"].as_str(),
        ) {
            (Some("http"), Some("bearer"), _) | (Some("oauth2" | "openIdConnect"), _, _) => {
                config_schema.push(field("token"));
                config.insert("token".into(), json!(format!("${{{env}}}")));
                json!({"bearer": "token"})
            }
            (Some("http"), Some("basic"), _) => {
                let (user, pass) = env.split_once(':').unwrap_or((env.as_str(), ""));
                config_schema.push(field("username"));
                config_schema.push(field("password"));
                config.insert("username".into(), json!(format!("${{{user}}}")));
                config.insert("password".into(), json!(format!("${{{pass}}}")));
                json!({"basic": ["username", "password"]})
            }
            (Some("apiKey"), _, Some(place @ ("header" | "query"))) => {
                let name = scheme["name"].as_str().unwrap_or("api_key");
                config_schema.push(field("api_key"));
                config.insert("api_key".into(), json!(format!("${{{env}}}")));
                json!({place: {"name": name, "value": "api_key"}})
            }
            _ => {
                r.notes.push(format!(
                    "security scheme {scheme_name} ({kind}) is not one toolsmith sends; calls go without it"
                ));
                continue;
            }
        };
        http.insert("auth".into(), auth);
        return;
    }
    if !optional && !wanted.is_empty() {
        r.notes.push(format!(
            "needs {}: no credential was configured for it (auth {}=ENV_VAR), so calls go without it",
            wanted.join(" or "),
            wanted[0].split(' ').next().unwrap_or("SCHEME")
        ));
    }
}

fn describe_scheme(s: &Value) -> String {
    match (s["type"].as_str(), s["scheme"].as_str(), s["in"].as_str()) {
        (Some("http"), Some(scheme), _) => format!("http {}", scheme.to_ascii_lowercase()),
        (Some("apiKey"), _, Some(place)) => format!("API key in the {place}"),
        (Some(t), _, _) => t.to_owned(),
        _ => "undeclared".into(),
    }
}
