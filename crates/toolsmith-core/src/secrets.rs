//! Secret config values seen from outside: the `***` placeholder of drafts, and scrubbing
//! stored values out of text.
//!
//! A caller never sees a stored secret, so a definition it sends back carries `***`
//! ([`REDACTED`]) where a secret was. That placeholder means "keep what is stored" and nothing
//! else, under two rules that hold whatever the draft says:
//! - the stored value is put back only when a definition is **saved**, and only into a field
//!   that is secret in the stored tool *and* in the draft, so the saved tool shows it as `***`
//!   like before;
//! - a draft that is only **checked or previewed** never receives the stored value: its
//!   schema is the caller's to shape, and could otherwise quote the value in a problem, show
//!   it in a plan, or test it against a pattern one request at a time.
//!
//! [`scrub`] is the second line: text bound for a caller has every stored secret value of the
//! tools involved replaced by `***`, whichever definition's flags produced the text.

use serde_json::Value;

use crate::builtin;
use crate::model::{REDACTED, Tool};

/// What the `***` values of a draft's `config` stand for.
#[derive(Debug, Default, PartialEq)]
pub struct Placeholders {
    /// Config fields whose stored secret value the draft keeps.
    pub kept: Vec<String>,
    /// `(path, message)` for each `***` that cannot be kept, as the catalog reports problems.
    pub problems: Vec<(String, String)>,
}

/// Reads the `***` values of `draft` (a definition in catalog form) against `stored`, the tool
/// as it is saved now (`None` for a new tool).
pub fn placeholders(draft: &Value, stored: Option<&Tool>) -> Placeholders {
    let mut out = Placeholders::default();
    let Some(config) = draft.get("config").and_then(Value::as_object) else {
        return out;
    };
    let secret_in_draft = declared_secret_fields(draft);
    for (name, value) in config {
        if value.as_str() != Some(REDACTED) {
            continue;
        }
        let path = format!("config.{name}");
        let secret_now = secret_in_draft.iter().any(|s| s == name);
        let stored_secret = stored.is_some_and(|t| {
            t.config.contains_key(name)
                && t.config_schema.iter().any(|p| p.secret && p.name == *name)
        });
        match (stored_secret, secret_now) {
            // Not a secret on either side: `***` is an ordinary value.
            (false, false) => {}
            (true, true) => out.kept.push(name.clone()),
            (true, false) => out.problems.push((
                path,
                format!(
                    "`***` keeps the stored secret only in a field marked secret; mark config field {name:?} `secret: true` or send a new value"
                ),
            )),
            (false, true) => {
                let whose = match stored {
                    Some(t) => format!("tool {} has no stored secret {name:?} to keep", t.name),
                    None => "a new tool has no stored secret to keep".to_owned(),
                };
                out.problems.push((
                    path,
                    format!(
                        "`***` stands for a stored secret value, and {whose}; send the value itself"
                    ),
                ));
            }
        }
    }
    out
}

/// Puts the stored values of `kept` (from [`placeholders`]) into `draft`'s config. Only for
/// a definition about to be saved.
pub fn restore(draft: &mut Value, stored: &Tool, kept: &[String]) {
    let Some(config) = draft.get_mut("config").and_then(Value::as_object_mut) else {
        return;
    };
    for name in kept {
        if let Some(v) = stored.config.get(name) {
            config.insert(name.clone(), v.clone());
        }
    }
}

/// Takes the fields of `kept` out of a draft that is only checked or previewed: their values
/// leave its config and they become optional in its `config_schema`, so the draft is checked
/// without the stored values; the caller then shows each as `***`.
pub fn leave_out(draft: &mut Value, kept: &[String]) {
    if kept.is_empty() {
        return;
    }
    if let Some(config) = draft.get_mut("config").and_then(Value::as_object_mut) {
        config.retain(|k, _| !kept.contains(k));
    }
    let fields = draft.get_mut("config_schema").and_then(Value::as_array_mut);
    for field in fields.into_iter().flatten() {
        let named = field.get("name").and_then(Value::as_str);
        if named.is_some_and(|n| kept.iter().any(|k| k == n))
            && let Some(map) = field.as_object_mut()
        {
            map.insert("required".into(), Value::Bool(false));
        }
    }
}

/// The names of the config fields `definition` (catalog form) marks secret: its own
/// `config_schema`, or its built-in's.
pub fn declared_secret_fields(definition: &Value) -> Vec<String> {
    if let Some(spec) = definition
        .get("builtin")
        .and_then(Value::as_str)
        .and_then(builtin::spec)
    {
        return spec
            .config_schema
            .iter()
            .filter(|p| p.secret)
            .map(|p| p.name.clone())
            .collect();
    }
    definition
        .get("config_schema")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|f| f.get("secret") == Some(&Value::Bool(true)))
        .filter_map(|f| f.get("name").and_then(Value::as_str).map(str::to_owned))
        .collect()
}

/// Every text a secret config value of `tool` holds (each string, and each number or the
/// JSON text of each array or object), for [`scrub`].
pub fn values(tool: &Tool) -> Vec<String> {
    let mut out = Vec::new();
    for p in tool.config_schema.iter().filter(|p| p.secret) {
        if let Some(v) = tool.config.get(&p.name) {
            leaves(v, &mut out);
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

fn leaves(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Number(n) => out.push(n.to_string()),
        Value::Array(items) => items.iter().for_each(|i| leaves(i, out)),
        Value::Object(map) => map.values().for_each(|i| leaves(i, out)),
        Value::Bool(_) | Value::Null => {}
    }
}

/// Shortest value [`scrub`] replaces: shorter ones (a one-digit secret) would mangle every
/// text they occur in, and are kept out by the views' own redaction.
pub const SCRUB_MIN: usize = 4;

/// `text` with every occurrence of each of `values` (and its JSON-escaped form) replaced by
/// `***`. Longer values first, so one secret containing another is replaced whole.
pub fn scrub(text: &str, values: &[String]) -> String {
    let mut sorted: Vec<&String> = values.iter().filter(|v| v.len() >= SCRUB_MIN).collect();
    sorted.sort_by_key(|v| std::cmp::Reverse(v.len()));
    let mut out = text.to_owned();
    for v in sorted {
        if out.contains(v.as_str()) {
            out = out.replace(v.as_str(), REDACTED);
        }
        let escaped = Value::String(v.clone()).to_string();
        let escaped = &escaped[1..escaped.len() - 1];
        if escaped != v && out.contains(escaped) {
            out = out.replace(escaped, REDACTED);
        }
    }
    out
}

/// [`scrub`] applied to every string of a JSON value; answers how many strings changed.
pub fn scrub_value(value: &mut Value, values: &[String]) -> u32 {
    if values.is_empty() {
        return 0;
    }
    match value {
        Value::String(s) => {
            let scrubbed = scrub(s, values);
            let changed = scrubbed != *s;
            *s = scrubbed;
            u32::from(changed)
        }
        Value::Array(items) => items.iter_mut().map(|i| scrub_value(i, values)).sum(),
        Value::Object(map) => map.values_mut().map(|i| scrub_value(i, values)).sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scrub_replaces_longest_first_and_escaped_forms() {
        let values = vec![
            "abcd".to_owned(),
            "abcdef".to_owned(),
            "a\"quote".to_owned(),
        ];
        assert_eq!(scrub("x abcdef y abcd", &values), "x *** y ***");
        assert_eq!(scrub(r#"got "a\"quote""#, &values), r#"got "***""#);
        assert_eq!(scrub("ab", &["ab".to_owned()]), "ab", "too short to scrub");
    }

    #[test]
    fn scrub_value_walks_nested_strings() {
        let mut v = json!({"a": ["has sekret inside", 1], "b": {"c": "sekret"}});
        scrub_value(&mut v, &["sekret".to_owned()]);
        assert_eq!(v, json!({"a": ["has *** inside", 1], "b": {"c": "***"}}));
    }

    #[test]
    fn declared_secret_fields_reads_the_draft() {
        let d = json!({"config_schema": [{"name": "a", "secret": true}, {"name": "b"},
            {"name": "c", "secret": "yes"}, 7]});
        assert_eq!(declared_secret_fields(&d), ["a"]);
    }
}
