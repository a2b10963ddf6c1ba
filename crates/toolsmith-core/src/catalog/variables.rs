//! `${NAME}` written wherever a server definition gives a value — its `headers`, its `url`,
//! its `env`, its OAuth `client_id` and `client_secret` — as `.mcp.json`, Claude Desktop and VS Code files mean it (`${env:NAME}` too):
//! lifted into a secret config field before the definition is read, so the value is read from
//! the environment when the catalog is read (`config`'s `"${NAME}"`), checked like any config
//! value (an unset variable is an error naming it), shown `***` and sealed at rest — never kept
//! as text in the definition, never passed on literally. A header or URL gets the field's
//! `{field}` placeholder; an `env` entry that is the variable alone becomes the field itself
//! (its `env_name` the entry's name), one with other text around it the placeholder. VS
//! Code's `${input:…}` (a prompt when the server starts) is refused with what to write instead.

use super::*;

/// One variable lifted: the config field's name, the variable it is read from, and the
/// environment variable name the field is passed to a stdio server under (if not the
/// field's default).
struct Lifted {
    field: String,
    var: String,
    env_name: Option<String>,
    /// Where it is written.
    at: String,
}

/// `v` with its `${NAME}`s lifted into config fields, or `None` when it has none. A variable
/// `src` does not have is an error at the place it is written (and no config value).
pub(super) fn lift(v: &Value, at: &str, src: &dyn CatalogSource, e: &mut Errs) -> Option<Value> {
    let map = v.as_object()?;
    let mut out = map.clone();
    let mut lifted = Vec::new();
    if let Some(Value::Object(headers)) = out.get_mut("headers") {
        for (name, value) in headers.iter_mut() {
            rewrite(value, &format!("{at}.headers.{name}"), &mut lifted, e);
        }
    }
    if let Some(url) = out.get_mut("url") {
        rewrite(url, &format!("{at}.url"), &mut lifted, e);
    }
    if let Some(Value::Object(auth)) = out.get_mut("auth") {
        for key in ["client_id", "client_secret"] {
            if let Some(value) = auth.get_mut(key) {
                rewrite(value, &format!("{at}.auth.{key}"), &mut lifted, e);
            }
        }
    }
    if let Some(Value::Object(env)) = out.get_mut("env") {
        let mut whole = Vec::new();
        for (name, value) in env.iter_mut() {
            match value.as_str().and_then(alone) {
                Some(var) => whole.push((name.clone(), var.to_owned())),
                None => rewrite(value, &format!("{at}.env.{name}"), &mut lifted, e),
            }
        }
        for (name, var) in whole {
            env.remove(&name);
            lifted.push(Lifted {
                field: crate::upstream::field_name(&name),
                var,
                env_name: Some(name.clone()),
                at: format!("{at}.env.{name}"),
            });
        }
    }
    if lifted.is_empty() {
        return None;
    }
    let mut schema = match out.remove("config_schema") {
        Some(Value::Array(list)) => list,
        None => Vec::new(),
        Some(other) => {
            out.insert("config_schema".into(), other);
            return Some(Value::Object(out));
        }
    };
    let mut config = match out.remove("config") {
        Some(Value::Object(m)) => m,
        None => Map::new(),
        Some(other) => {
            out.insert("config".into(), other);
            out.insert("config_schema".into(), Value::Array(schema));
            return Some(Value::Object(out));
        }
    };
    for l in lifted {
        let set = src.var(&l.var).is_some();
        let declared = schema
            .iter()
            .any(|p| p.get("name").and_then(Value::as_str) == Some(&l.field));
        if !declared {
            let mut field = serde_json::json!({"name": l.field, "type": "string", "secret": true});
            if let Some(env_name) = &l.env_name {
                field["env_name"] = Value::String(env_name.clone());
            }
            if !set {
                // Said once, where the variable is written (not again as a missing field).
                field["required"] = Value::Bool(false);
            }
            schema.push(field);
        }
        if config.contains_key(&l.field) {
            continue;
        }
        match set {
            true => {
                config.insert(l.field, Value::String(format!("${{{}}}", l.var)));
            }
            false => e.push(
                &l.at,
                format!(
                    "environment variable {:?} is not set (`${{{}}}` is read from the environment when the catalog is read)",
                    l.var, l.var
                ),
            ),
        }
    }
    out.insert("config_schema".into(), Value::Array(schema));
    out.insert("config".into(), Value::Object(config));
    Some(Value::Object(out))
}

/// The variable a text names when it is `${NAME}` (or `${env:NAME}`) and nothing else.
fn alone(text: &str) -> Option<&str> {
    let inner = text.strip_prefix("${")?.strip_suffix('}')?;
    let name = inner.strip_prefix("env:").unwrap_or(inner);
    valid_var(name).then_some(name)
}

fn valid_var(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Each `${NAME}` in the text `value` replaced by its field's `{field}`, the variable noted
/// in `lifted`; a `${input:…}` refused at `at`. Anything else (`$`, `${` unclosed, a name
/// that is not a variable's) is left as text.
fn rewrite(value: &mut Value, at: &str, lifted: &mut Vec<Lifted>, e: &mut Errs) {
    let Some(text) = value.as_str() else { return };
    if !text.contains("${") {
        return;
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find("${") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let Some(close) = after.find('}') else {
            out.push_str(&rest[open..]);
            rest = "";
            break;
        };
        let inner = &after[..close];
        if let Some(prompt) = inner.strip_prefix("input:") {
            e.push(
                at,
                format!(
                    "`${{input:{prompt}}}` asks VS Code's user for a value when the server starts, which toolsmith cannot; write `${{NAME}}` for an environment variable, or declare a config field"
                ),
            );
            return;
        }
        let name = inner.strip_prefix("env:").unwrap_or(inner);
        if valid_var(name) {
            let field = crate::upstream::field_name(name);
            out.push('{');
            out.push_str(&field);
            out.push('}');
            lifted.push(Lifted {
                field,
                var: name.to_owned(),
                env_name: None,
                at: at.to_owned(),
            });
        } else {
            out.push_str(&rest[open..open + 3 + close]);
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    *value = Value::String(out);
}
