//! One JSON Schema of an OpenAPI document → one parameter in the catalog form.
//!
//! `$ref`s are resolved inside the document, `allOf` merged, the nullable forms of 3.0
//! (`nullable: true`) and 3.1 (`type: [T, "null"]`, `anyOf: [T, {type: null}]`) read as
//! `nullable`. What the parameter model cannot say is simplified and each simplification
//! is written down as a note: a `oneOf` of different shapes keeps its first, a property
//! whose name no provider accepts is left out, a schema nested deeper than [`MAX_DEPTH`]
//! becomes a free-form object.

use serde_json::{Map, Value, json};

use crate::form::param::FORMATS;

/// Object nesting followed before a schema is taken as a free-form object.
pub const MAX_DEPTH: usize = 8;

/// Characters of a description kept.
const DESCRIPTION_MAX: usize = 300;

/// Reads schemas of one document, collecting notes about one operation.
pub(super) struct Reader<'d> {
    pub doc: &'d Value,
    pub notes: Vec<String>,
}

impl<'d> Reader<'d> {
    /// Follows `$ref` (local, `#/...`) until a schema that is not one; `None` for a ref that
    /// leads nowhere (noted).
    pub fn deref<'a>(&mut self, mut schema: &'a Value) -> Option<&'a Value>
    where
        'd: 'a,
    {
        for _ in 0..32 {
            let Some(r) = schema.get("$ref").and_then(Value::as_str) else {
                return Some(schema);
            };
            let target = r
                .strip_prefix('#')
                .and_then(|pointer| self.doc.pointer(pointer));
            match target {
                Some(t) => schema = t,
                None => {
                    self.notes
                        .push(format!("`$ref` {r:?} leads nowhere in the document"));
                    return None;
                }
            }
        }
        self.notes.push("a `$ref` chain loops".into());
        None
    }

    /// `schema` with its `$ref`s followed and its `allOf` merged into one schema: properties
    /// and required joined, the first value of every other key kept.
    pub fn flatten(&mut self, schema: &Value, depth: usize) -> Value {
        let Some(s) = self.deref(schema) else {
            return json!({});
        };
        let Some(map) = s.as_object() else {
            return json!({});
        };
        let Some(all) = map.get("allOf").and_then(Value::as_array) else {
            return s.clone();
        };
        let mut merged: Map<String, Value> = map
            .iter()
            .filter(|(k, _)| k.as_str() != "allOf")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if depth > MAX_DEPTH {
            return Value::Object(merged);
        }
        for part in all {
            let part = self.flatten(part, depth + 1);
            let Some(part) = part.as_object() else {
                continue;
            };
            for (k, v) in part {
                match (k.as_str(), merged.get_mut(k)) {
                    ("properties", Some(Value::Object(have))) => {
                        if let Some(more) = v.as_object() {
                            for (pk, pv) in more {
                                have.entry(pk.clone()).or_insert_with(|| pv.clone());
                            }
                        }
                    }
                    ("required", Some(Value::Array(have))) => {
                        for r in v.as_array().into_iter().flatten() {
                            if !have.contains(r) {
                                have.push(r.clone());
                            }
                        }
                    }
                    (_, Some(_)) => {}
                    (_, None) => {
                        merged.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        Value::Object(merged)
    }

    /// The parameter (catalog form, without `name`, `required`, injection) that `schema`
    /// describes; `what` names it in notes.
    pub fn parameter(&mut self, schema: &Value, what: &str, depth: usize) -> Map<String, Value> {
        let s = self.flatten(schema, depth);
        let mut out = Map::new();
        let (ty, nullable, s) = self.shape(&s, what, depth);
        if nullable {
            out.insert("nullable".into(), json!(true));
        }
        if let Some(d) = s.get("description").and_then(Value::as_str) {
            let d = cut(d.trim(), DESCRIPTION_MAX);
            if !d.is_empty() {
                out.insert("description".into(), json!(d));
            }
        }
        match ty.as_str() {
            "enum" => {
                out.insert("type".into(), json!("enum"));
                let values: Vec<Value> = s["enum"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|v| !v.is_null())
                    .cloned()
                    .collect();
                let mut unique: Vec<Value> = Vec::new();
                for v in values {
                    if !unique.contains(&v) {
                        unique.push(v);
                    }
                }
                out.insert("values".into(), Value::Array(unique));
            }
            "string" => {
                out.insert("type".into(), json!("string"));
                copy_uint(&s, "minLength", "min_length", &mut out);
                copy_uint(&s, "maxLength", "max_length", &mut out);
                if let Some(p) = s.get("pattern").and_then(Value::as_str) {
                    if crate::schema::compile_schema(&json!({"pattern": p})).is_ok() {
                        out.insert("pattern".into(), json!(p));
                    } else {
                        self.notes.push(format!(
                            "{what}: pattern {p:?} is not a regular expression toolsmith can check; left out"
                        ));
                    }
                }
                if let Some(f) = s.get("format").and_then(Value::as_str)
                    && FORMATS.contains(&f)
                {
                    out.insert("format".into(), json!(f));
                }
            }
            "integer" | "number" => {
                out.insert("type".into(), json!(ty));
                for (from, to) in [
                    ("minimum", "minimum"),
                    ("maximum", "maximum"),
                    ("multipleOf", "multiple_of"),
                ] {
                    if let Some(n) = s.get(from).filter(|v| v.is_number()) {
                        if ty == "integer" && !(n.is_i64() || n.is_u64()) {
                            continue;
                        }
                        out.insert(to.into(), n.clone());
                    }
                }
                // 3.0: a boolean beside minimum/maximum; 3.1: a number of its own.
                for (from, plain, to) in [
                    ("exclusiveMinimum", "minimum", "exclusive_minimum"),
                    ("exclusiveMaximum", "maximum", "exclusive_maximum"),
                ] {
                    match s.get(from) {
                        Some(Value::Bool(true)) => {
                            if let Some(v) = out.remove(plain) {
                                out.insert(to.into(), v);
                            }
                        }
                        Some(n)
                            if n.is_number() && (ty == "number" || n.is_i64() || n.is_u64()) =>
                        {
                            out.insert(to.into(), n.clone());
                        }
                        _ => {}
                    }
                }
                if out
                    .get("multiple_of")
                    .and_then(Value::as_f64)
                    .is_some_and(|m| m <= 0.0)
                {
                    out.remove("multiple_of");
                }
            }
            "boolean" => {
                out.insert("type".into(), json!("boolean"));
            }
            "array" => {
                out.insert("type".into(), json!("array"));
                let items = match s.get("items") {
                    Some(items) if depth < MAX_DEPTH => {
                        let mut p = self.parameter(items, &format!("{what}[]"), depth + 1);
                        p.remove("description");
                        Value::Object(p)
                    }
                    Some(_) => json!({"type": "object", "additional_properties": true}),
                    None => {
                        self.notes.push(format!(
                            "{what}: an array without `items`: offered as a list of strings"
                        ));
                        json!({"type": "string"})
                    }
                };
                out.insert("items".into(), items);
                copy_uint(&s, "minItems", "min_items", &mut out);
                copy_uint(&s, "maxItems", "max_items", &mut out);
                if s.get("uniqueItems") == Some(&Value::Bool(true)) {
                    out.insert("unique_items".into(), json!(true));
                }
            }
            _ => {
                out.insert("type".into(), json!("object"));
                let props = s.get("properties").and_then(Value::as_object);
                match props {
                    Some(props) if depth < MAX_DEPTH && !props.is_empty() => {
                        let required = required_set(&s);
                        let mut list = Vec::new();
                        for (name, schema) in props {
                            if let Some(p) =
                                self.property(name, schema, required.contains(name), what, depth)
                            {
                                list.push(Value::Object(p));
                            }
                        }
                        out.insert("properties".into(), Value::Array(list));
                        let additional = match s.get("additionalProperties") {
                            Some(Value::Bool(false)) => Some(false),
                            Some(Value::Bool(true) | Value::Object(_)) => Some(true),
                            _ => None,
                        };
                        if let Some(a) = additional {
                            out.insert("additional_properties".into(), json!(a));
                        }
                    }
                    Some(props) if !props.is_empty() => {
                        self.notes.push(format!(
                            "{what}: nested deeper than {MAX_DEPTH} levels: offered as a free-form object"
                        ));
                        out.insert("additional_properties".into(), json!(true));
                    }
                    _ => {
                        out.insert("additional_properties".into(), json!(true));
                    }
                }
            }
        }
        if let Some(d) = s.get("default")
            && !d.is_null()
        {
            out.insert("default".into(), d.clone());
        }
        out
    }

    /// A property of an object (or of a request body): `None` when it is read-only (a
    /// response's field) or its name cannot be a parameter name (noted).
    pub fn property(
        &mut self,
        name: &str,
        schema: &Value,
        required: bool,
        what: &str,
        depth: usize,
    ) -> Option<Map<String, Value>> {
        let resolved = self.flatten(schema, depth + 1);
        if resolved.get("readOnly") == Some(&Value::Bool(true)) {
            return None;
        }
        if !valid_name(name) {
            self.notes.push(format!(
                "{what}.{name}: a property name no provider accepts as a parameter; left out"
            ));
            return None;
        }
        let mut p = Map::new();
        p.insert("name".into(), json!(name));
        p.append(&mut self.parameter(&resolved, &format!("{what}.{name}"), depth + 1));
        if required {
            p.remove("default");
        } else if !p.contains_key("default") {
            p.insert("required".into(), json!(false));
        }
        Some(p)
    }

    /// The type a schema has once `oneOf`/`anyOf`, `enum`, type lists and nullability are
    /// read: (type, nullable, the schema to read the rest from).
    fn shape(&mut self, s: &Value, what: &str, depth: usize) -> (String, bool, Value) {
        let mut nullable = s.get("nullable") == Some(&Value::Bool(true));
        let alternatives = s
            .get("oneOf")
            .or_else(|| s.get("anyOf"))
            .and_then(Value::as_array);
        if let Some(alts) = alternatives
            && s.get("type").is_none()
        {
            let resolved: Vec<Value> = alts.iter().map(|a| self.flatten(a, depth + 1)).collect();
            let (nulls, others): (Vec<&Value>, Vec<&Value>) = resolved
                .iter()
                .partition(|a| a.get("type").and_then(Value::as_str) == Some("null"));
            nullable |= !nulls.is_empty();
            let mut base = s.clone();
            if let Some(m) = base.as_object_mut() {
                m.remove("oneOf");
                m.remove("anyOf");
            }
            let merged = match others.as_slice() {
                [] => json!({}),
                [one] => merge_into(base, one),
                many if many.iter().all(|a| type_of(a).as_deref() == Some("object")) => {
                    // Objects of several shapes: every property offered, none required.
                    let mut props = Map::new();
                    for a in many {
                        for (k, v) in a
                            .get("properties")
                            .and_then(Value::as_object)
                            .into_iter()
                            .flatten()
                        {
                            props.entry(k.clone()).or_insert_with(|| v.clone());
                        }
                    }
                    self.notes.push(format!(
                        "{what}: one of {} object shapes: their properties offered together, none required",
                        many.len()
                    ));
                    merge_into(base, &json!({"type": "object", "properties": props}))
                }
                many => {
                    self.notes.push(format!(
                        "{what}: one of {} forms; only the first ({}) is offered",
                        many.len(),
                        type_of(many[0]).unwrap_or_else(|| "any".into())
                    ));
                    merge_into(base, many[0])
                }
            };
            let (ty, n, rest) = self.shape(&merged, what, depth + 1);
            return (ty, nullable || n, rest);
        }
        let types: Vec<String> = match s.get("type") {
            Some(Value::String(t)) => vec![t.clone()],
            Some(Value::Array(ts)) => ts
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        };
        nullable |= types.iter().any(|t| t == "null");
        let mut types: Vec<String> = types.into_iter().filter(|t| t != "null").collect();
        if let Some(values) = s.get("enum").and_then(Value::as_array) {
            nullable |= values.iter().any(Value::is_null);
            let non_null: Vec<&Value> = values.iter().filter(|v| !v.is_null()).collect();
            let strings = non_null.iter().all(|v| v.is_string());
            let integers = non_null.iter().all(|v| v.is_i64());
            if !non_null.is_empty() && (strings || integers) {
                return ("enum".into(), nullable, s.clone());
            }
            if !non_null.is_empty() {
                self.notes.push(format!(
                    "{what}: an enum of mixed values is offered without its list of values"
                ));
            }
        }
        if types.len() > 1 {
            self.notes.push(format!(
                "{what}: one of the types {}; only {} is offered",
                types.join(", "),
                types[0]
            ));
        }
        if types.is_empty() {
            let guessed = if s.get("properties").is_some() {
                "object"
            } else if s.get("items").is_some() {
                "array"
            } else {
                "object"
            };
            types.push(guessed.into());
        }
        let ty = match types[0].as_str() {
            t @ ("string" | "integer" | "number" | "boolean" | "array" | "object") => t.to_owned(),
            other => {
                self.notes
                    .push(format!("{what}: type {other:?} is offered as a string"));
                "string".into()
            }
        };
        (ty, nullable, s.clone())
    }
}

/// `base`'s keys, then `other`'s where `base` has none.
fn merge_into(base: Value, other: &Value) -> Value {
    let mut out = base.as_object().cloned().unwrap_or_default();
    for (k, v) in other.as_object().into_iter().flatten() {
        out.entry(k.clone()).or_insert_with(|| v.clone());
    }
    Value::Object(out)
}

fn type_of(s: &Value) -> Option<String> {
    match s.get("type") {
        Some(Value::String(t)) => Some(t.clone()),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .map(str::to_owned),
        _ if s.get("properties").is_some() => Some("object".into()),
        _ => None,
    }
}

pub(super) fn required_set(s: &Value) -> Vec<String> {
    s.get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

fn copy_uint(s: &Value, from: &str, to: &str, out: &mut Map<String, Value>) {
    if let Some(n) = s.get(from).and_then(Value::as_u64) {
        out.insert(to.into(), json!(n));
    }
}

/// A parameter name every provider accepts (the catalog's rule).
pub(super) use crate::form::param::is_parameter_name as valid_name;

/// `text` cut to at most `max` characters, at a sentence or word end when there is one.
pub(super) fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let head: String = text.chars().take(max).collect();
    let at = head
        .rfind(". ")
        .map(|i| i + 1)
        .filter(|&i| i > max / 2)
        .or_else(|| head.rfind(' ').filter(|&i| i > max / 2));
    match at {
        Some(i) => format!("{}…", head[..i].trim_end()),
        None => format!("{head}…"),
    }
}
