//! Provider rules applied to the canonical JSON Schema.
//!
//! Keywords a provider does not accept are not dropped silently: they are moved into the
//! description as plain words (`default: 5; at most 200 characters`), so the model still
//! sees them and the validator still enforces them when the call comes back.

use serde_json::{Map, Value, json};

/// String formats OpenAI's strict mode accepts.
const STRICT_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Keywords Gemini's OpenAPI subset accepts on a schema node.
const GEMINI_KEYS: &[&str] = &[
    "type",
    "format",
    "description",
    "nullable",
    "enum",
    "items",
    "properties",
    "required",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
];

/// OpenAI strict mode: every object closed (`additionalProperties: false`) with every
/// property required; optional properties become nullable (`null` added to the type and to
/// any enum). Free-form objects, which strict mode cannot express, become strings holding
/// JSON, which the argument pipeline parses back.
pub fn openai_strict(mut node: Value) -> Value {
    strict_node(&mut node);
    node
}

fn strict_node(node: &mut Value) {
    let Value::Object(map) = node else { return };
    let mut notes = Vec::new();
    for key in ["default", "minLength", "maxLength", "uniqueItems"] {
        if let Some(v) = map.remove(key) {
            notes.push(note(key, &v));
        }
    }
    if let Some(f) = map.get("format").and_then(Value::as_str)
        && !STRICT_FORMATS.contains(&f)
    {
        let v = map.remove("format").unwrap_or_default();
        notes.push(note("format", &v));
    }
    if is_type(map, "object") {
        let free_form = !map.contains_key("properties")
            && map.get("additionalProperties") != Some(&json!(false));
        if free_form {
            let nullable = is_type(map, "null");
            map.clear();
            map.insert(
                "type".into(),
                if nullable {
                    json!(["string", "null"])
                } else {
                    json!("string")
                },
            );
            notes.push("a JSON object, written as a string".into());
        } else {
            let required: Vec<String> = names(map.get("required"));
            // Strict mode wants `properties` and `required` present even when empty.
            map.entry("properties").or_insert_with(|| json!({}));
            if let Some(Value::Object(props)) = map.get_mut("properties") {
                for (name, prop) in props.iter_mut() {
                    strict_node(prop);
                    if !required.contains(name) {
                        make_nullable(prop);
                    }
                }
                let all: Vec<Value> = props.keys().map(|k| json!(k)).collect();
                map.insert("required".into(), Value::Array(all));
            }
            map.insert("additionalProperties".into(), json!(false));
        }
    }
    if let Some(items) = map.get_mut("items") {
        strict_node(items);
    }
    add_notes(map, notes);
}

fn make_nullable(node: &mut Value) {
    let Value::Object(map) = node else { return };
    match map.get("type").cloned() {
        Some(Value::String(t)) if t != "null" => {
            map.insert("type".into(), json!([t, "null"]));
        }
        Some(Value::Array(mut ts)) if !ts.contains(&json!("null")) => {
            ts.push(json!("null"));
            map.insert("type".into(), Value::Array(ts));
        }
        _ => {}
    }
    if let Some(Value::Array(values)) = map.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
}

/// A schema as given (an upstream's) with every local `$ref` replaced by what it points to and
/// `$defs`/`definitions`/`$schema` dropped: what providers without references need. Fails on
/// a recursive reference (a tree would be infinite), naming it.
pub fn inline_refs(schema: &Value) -> Result<Value, GivenSchemaError> {
    fn go(node: &Value, root: &Value, stack: &mut Vec<String>) -> Result<Value, GivenSchemaError> {
        match node {
            Value::Object(map) => {
                if let Some(r) = map.get("$ref").and_then(Value::as_str) {
                    let Some(target) = r.strip_prefix('#').and_then(|p| root.pointer(p)) else {
                        return Err(GivenSchemaError::Unfollowable(r.to_owned()));
                    };
                    if stack.iter().any(|s| s == r) {
                        return Err(GivenSchemaError::Recursive(r.to_owned()));
                    }
                    stack.push(r.to_owned());
                    let mut resolved = go(target, root, stack)?;
                    stack.pop();
                    // Keywords beside the `$ref` (a description) apply too.
                    if let Value::Object(out) = &mut resolved {
                        for (k, v) in map.iter().filter(|(k, _)| *k != "$ref") {
                            out.insert(k.clone(), go(v, root, stack)?);
                        }
                    }
                    return Ok(resolved);
                }
                let mut out = Map::new();
                for (k, v) in map {
                    if matches!(k.as_str(), "$defs" | "definitions" | "$schema" | "$id") {
                        continue;
                    }
                    out.insert(k.clone(), go(v, root, stack)?);
                }
                Ok(Value::Object(out))
            }
            Value::Array(items) => items
                .iter()
                .map(|i| go(i, root, stack))
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array),
            other => Ok(other.clone()),
        }
    }
    go(schema, schema, &mut Vec::new())
}

/// `anyOf`/`oneOf` of one schema and `null` folded into that schema with `null` added to its
/// type, on every node: the form strict OpenAI and Gemini understand.
pub fn fold_nullable_unions(node: &mut Value) {
    let Value::Object(map) = node else {
        if let Value::Array(items) = node {
            items.iter_mut().for_each(fold_nullable_unions);
        }
        return;
    };
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(branches)) = map.get(key) else {
            continue;
        };
        let is_null = |b: &Value| b.get("type").and_then(Value::as_str) == Some("null");
        let non_null: Vec<&Value> = branches.iter().filter(|b| !is_null(b)).collect();
        if non_null.len() == 1 && branches.len() == 2 {
            let mut one = non_null[0].clone();
            make_nullable(&mut one);
            map.remove(key);
            if let Value::Object(inner) = one {
                for (k, v) in inner {
                    map.entry(k).or_insert(v);
                }
            }
        }
    }
    for v in map.values_mut() {
        fold_nullable_unions(v);
    }
}

/// OpenAI strict mode for a schema as given: references inlined, nullable unions folded,
/// then [`openai_strict`]. Fails, saying why, where strict mode cannot describe it (a
/// recursive reference, or a union of several types).
pub fn openai_strict_given(schema: &Value) -> Result<Value, GivenSchemaError> {
    let mut node = inline_refs(schema)?;
    fold_nullable_unions(&mut node);
    if let Some(key) = union_left(&node) {
        return Err(GivenSchemaError::Union(key));
    }
    Ok(openai_strict(node))
}

/// What a provider's form cannot take of a schema as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GivenSchemaError {
    #[error("a reference toolsmith cannot follow: {0}")]
    Unfollowable(String),
    #[error("a recursive reference: {0}")]
    Recursive(String),
    /// A union of several schemas (the keyword) that strict mode cannot describe.
    #[error("it uses `{0}` with several schemas")]
    Union(&'static str),
}

/// The keyword of a union strict mode cannot take, if any is left.
fn union_left(node: &Value) -> Option<&'static str> {
    match node {
        Value::Object(map) => {
            for key in ["anyOf", "oneOf", "allOf"] {
                if map.contains_key(key) {
                    return Some(key);
                }
            }
            map.values().find_map(union_left)
        }
        Value::Array(items) => items.iter().find_map(union_left),
        _ => None,
    }
}

/// Gemini's form of a schema as given: references inlined (a recursive one leaves a
/// free-form object), nullable unions folded, then [`gemini`].
pub fn gemini_given(schema: &Value) -> Value {
    let mut node = inline_refs(schema).unwrap_or_else(|_| json!({"type": "object"}));
    fold_nullable_unions(&mut node);
    gemini(node)
}

/// Gemini's OpenAPI subset: upper-case types on every node, `nullable` instead of type
/// unions, enums as strings, no `additionalProperties`; other keywords go to the description.
pub fn gemini(mut node: Value) -> Value {
    gemini_node(&mut node);
    node
}

fn gemini_node(node: &mut Value) {
    let Value::Object(map) = node else { return };
    let nullable = is_type(map, "null");
    let base = match map.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("string")
            .to_owned(),
        _ => "string".to_owned(),
    };
    let mut notes = Vec::new();
    map.remove("additionalProperties");
    let mut ty = base.to_uppercase();
    if let Some(Value::Array(values)) = map.get_mut("enum") {
        values.retain(|v| !v.is_null());
        for v in values.iter_mut() {
            if !v.is_string() {
                *v = json!(crate::plan::text(v));
            }
        }
        ty = "STRING".into();
        map.insert("format".into(), json!("enum"));
    }
    if base == "object" && !map.contains_key("properties") {
        // An object with no declared properties cannot be described to Gemini.
        map.clear();
        ty = "STRING".into();
        notes.push("a JSON object, written as a string".into());
    }
    if let Some(f) = map.get("format").and_then(Value::as_str) {
        let ok = match ty.as_str() {
            "STRING" => f == "enum" || f == "date-time",
            _ => false,
        };
        if !ok {
            let v = map.remove("format").unwrap_or_default();
            notes.push(note("format", &v));
        }
    }
    let extra: Vec<String> = map
        .keys()
        .filter(|k| !GEMINI_KEYS.contains(&k.as_str()))
        .cloned()
        .collect();
    for key in extra {
        if let Some(v) = map.remove(&key) {
            notes.push(note(&key, &v));
        }
    }
    map.insert("type".into(), json!(ty));
    if nullable {
        map.insert("nullable".into(), json!(true));
    }
    if let Some(Value::Object(props)) = map.get_mut("properties") {
        for prop in props.values_mut() {
            gemini_node(prop);
        }
    }
    if let Some(items) = map.get_mut("items") {
        gemini_node(items);
    }
    add_notes(map, notes);
    // Keep `type` first for readability.
    let mut ordered = Map::new();
    if let Some(t) = map.remove("type") {
        ordered.insert("type".into(), t);
    }
    ordered.append(map);
    *map = ordered;
}

fn is_type(map: &Map<String, Value>, t: &str) -> bool {
    match map.get("type") {
        Some(Value::String(s)) => s == t,
        Some(Value::Array(ts)) => ts.iter().any(|x| x == t),
        _ => false,
    }
}

fn names(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// A keyword as plain words.
fn note(key: &str, v: &Value) -> String {
    let plain = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    match key {
        "default" => format!("default: {v}"),
        "minLength" => format!("at least {plain} character{}", plural(v)),
        "maxLength" => format!("at most {plain} character{}", plural(v)),
        "uniqueItems" => "items must be unique".into(),
        "format" => format!("format: {plain}"),
        "exclusiveMinimum" => format!("greater than {plain}"),
        "exclusiveMaximum" => format!("less than {plain}"),
        "multipleOf" => format!("a multiple of {plain}"),
        other => format!("{other}: {v}"),
    }
}

fn plural(v: &Value) -> &'static str {
    if v.as_u64() == Some(1) { "" } else { "s" }
}

fn add_notes(map: &mut Map<String, Value>, notes: Vec<String>) {
    if notes.is_empty() {
        return;
    }
    let joined = notes.join("; ");
    let text = match map.get("description").and_then(Value::as_str) {
        Some(d) if !d.is_empty() => format!("{d} ({joined})"),
        _ => joined,
    };
    map.insert("description".into(), json!(text));
}
