//! The differences between two definitions, path by path, secrets shown as `***` (a secret
//! array or object is one change).

use serde::Serialize;
use serde_json::{Map, Value};

use crate::{Result, definition_to_tool};

/// One difference between two definitions: the path (`parameters[1].type`) and the value on
/// each side (`null` where absent).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Difference {
    pub path: String,
    pub from: Value,
    pub to: Value,
}

/// The differences from `a` to `b`, walking objects by key and arrays by index (knowing
/// nothing of secrets: use [`diff_definitions`] for definitions).
pub fn diff(a: &Value, b: &Value) -> Vec<Difference> {
    fn walk(a: &Value, b: &Value, path: String, out: &mut Vec<Difference>) {
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                let mut keys: Vec<&String> = x.keys().collect();
                keys.extend(y.keys().filter(|k| !x.contains_key(*k)));
                for k in keys {
                    let child = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    walk(
                        x.get(k).unwrap_or(&Value::Null),
                        y.get(k).unwrap_or(&Value::Null),
                        child,
                        out,
                    );
                }
            }
            (Value::Array(x), Value::Array(y)) => {
                for i in 0..x.len().max(y.len()) {
                    walk(
                        x.get(i).unwrap_or(&Value::Null),
                        y.get(i).unwrap_or(&Value::Null),
                        format!("{path}[{i}]"),
                        out,
                    );
                }
            }
            _ if a != b => out.push(Difference {
                path,
                from: a.clone(),
                to: b.clone(),
            }),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(a, b, String::new(), &mut out);
    out
}

/// `diff` of two stored definitions, with secret values shown as `***`: a secret config
/// value — a string, or a whole array or object — is compared as one value and reported as
/// one change at `config.<name>`, so nothing inside it reaches the output.
pub fn diff_definitions(a: &Value, b: &Value) -> Result<Vec<Difference>> {
    let (ta, tb) = (definition_to_tool(a)?, definition_to_tool(b)?);
    let mut secrets: Vec<&str> = ta
        .config_schema
        .iter()
        .chain(&tb.config_schema)
        .filter(|p| p.secret)
        .map(|p| p.name.as_str())
        .collect();
    secrets.sort_unstable();
    secrets.dedup();
    let (mut a, mut b) = (a.clone(), b.clone());
    let mut out = Vec::new();
    for name in secrets {
        let take = |v: &mut Value| {
            v.get_mut("config")
                .and_then(Value::as_object_mut)
                .and_then(|c| c.remove(name))
        };
        let (from, to) = (take(&mut a), take(&mut b));
        if from != to {
            let shown = |v: Option<Value>| {
                v.map_or(Value::Null, |_| {
                    Value::String(toolsmith_core::model::REDACTED.into())
                })
            };
            out.push(Difference {
                path: format!("config.{name}"),
                from: shown(from),
                to: shown(to),
            });
        }
    }
    for v in [&mut a, &mut b] {
        if let Some(map) = v.as_object_mut()
            && map
                .get("config")
                .is_some_and(|c| c.as_object().is_some_and(Map::is_empty))
        {
            map.remove("config");
        }
    }
    let mut all = diff(&a, &b);
    all.extend(out);
    Ok(all)
}
