//! The pipeline over a JSON Schema as given (an upstream MCP tool's `inputSchema`, kept
//! verbatim): the same repairs as over the parameter model, wherever the schema's type is
//! unambiguous, then validation with every problem and its pointer.
//!
//! The walk follows the value through the schema: local `$ref`s (`#/$defs/…`,
//! `#/definitions/…`), `anyOf`/`oneOf` with one branch besides `null`, `type` lists with
//! `null`, `properties`, `additionalProperties`, `items`. Where it finds one type, a string
//! is coerced by §3.2's rules (`"5"` → 5 for an integer), an integral float becomes an integer,
//! and `null` sent for an optional property that does not allow it is dropped; each repair is
//! noted for `meta.coerced`. Defaults are the upstream's to apply. Unknown keys of a closed
//! object are reported with the known ones.

use jsonschema::Validator;

use super::*;

/// How deep the walk follows nested schemas and references (a recursive schema stops here;
/// the validator still checks the whole value).
const MAX_DEPTH: usize = 64;

/// A tool's arguments described by a schema as given.
pub(super) struct RawSchema {
    pub(super) schema: Value,
    validator: Validator,
}

impl RawSchema {
    pub(super) fn new(schema: Value) -> Result<Self, crate::schema::SchemaError> {
        let validator = crate::schema::compile_upstream_schema(&schema)?;
        Ok(Self { schema, validator })
    }

    pub(super) fn prepare(
        &self,
        args: Map<String, Value>,
        lenient: bool,
    ) -> Result<Prepared, Vec<Problem>> {
        let mut walk = RawWalk {
            root: &self.schema,
            coerced: Vec::new(),
            problems: Vec::new(),
            reported: Vec::new(),
            lenient,
        };
        let mut value = Value::Object(args);
        walk.value(&self.schema, &mut value, "", 0);
        let mut problems = walk.problems;
        for error in self.validator.iter_errors(&value) {
            let at = error.instance_path().as_str().to_owned();
            if walk.reported.contains(&at) {
                continue;
            }
            match error.kind() {
                jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected } => {
                    for key in unexpected {
                        let what = if at.is_empty() {
                            "argument"
                        } else {
                            "property"
                        };
                        problems.push(Problem::new(
                            format!("{at}/{}", escape_pointer(key)),
                            format!("unknown {what} {key:?}"),
                        ));
                    }
                }
                _ => {
                    let described = describe(&error, "argument", false);
                    if described.is_empty() {
                        problems.push(Problem::new(at, quote_text(error.to_string())));
                    } else {
                        problems.extend(described);
                    }
                }
            }
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        let Value::Object(arguments) = value else {
            unreachable!("built as an object")
        };
        Ok(Prepared {
            arguments,
            coerced: walk.coerced,
        })
    }
}

struct RawWalk<'s> {
    root: &'s Value,
    coerced: Vec<String>,
    problems: Vec<Problem>,
    /// Pointers already reported by the walk: the validator's report there is left out.
    reported: Vec<String>,
    lenient: bool,
}

/// The one type a schema allows besides `null`, if it names exactly one.
fn single_type(schema: &Value) -> Option<&str> {
    match schema.get("type")? {
        Value::String(t) => Some(t.as_str()),
        Value::Array(ts) => {
            let mut others = ts.iter().filter_map(Value::as_str).filter(|t| *t != "null");
            let one = others.next()?;
            others.next().is_none().then_some(one)
        }
        _ => None,
    }
}

/// Whether `schema` lets `null` through (a `null` type, a `null` branch, or a null enum).
fn allows_null(schema: &Value) -> bool {
    let types = match schema.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "null"),
        _ => false,
    };
    let branches = ["anyOf", "oneOf"].iter().any(|k| {
        schema
            .get(*k)
            .and_then(Value::as_array)
            .is_some_and(|bs| bs.iter().any(allows_null))
    });
    let enumerated = schema
        .get("enum")
        .and_then(Value::as_array)
        .is_some_and(|vs| vs.iter().any(Value::is_null));
    types || branches || enumerated || schema.as_object().is_some_and(|m| m.is_empty())
}

impl<'s> RawWalk<'s> {
    /// `schema` with its local `$ref` followed, and a lone non-null `anyOf`/`oneOf` branch
    /// taken.
    fn resolve(&self, mut schema: &'s Value, depth: usize) -> &'s Value {
        for _ in depth..MAX_DEPTH {
            if let Some(r) = schema.get("$ref").and_then(Value::as_str)
                && let Some(pointer) = r.strip_prefix('#')
                && let Some(target) = self.root.pointer(pointer)
            {
                schema = target;
                continue;
            }
            let branches = ["anyOf", "oneOf"]
                .iter()
                .find_map(|k| schema.get(*k).and_then(Value::as_array));
            if let Some(branches) = branches {
                let mut non_null = branches
                    .iter()
                    .filter(|b| b.get("type").and_then(Value::as_str) != Some("null"));
                if let (Some(one), None) = (non_null.next(), non_null.next()) {
                    schema = one;
                    continue;
                }
            }
            break;
        }
        schema
    }

    fn value(&mut self, schema: &'s Value, v: &mut Value, path: &str, depth: usize) {
        if depth >= MAX_DEPTH {
            return;
        }
        let schema = self.resolve(schema, depth);
        match v {
            Value::String(s) if self.lenient => {
                let Some(p) = coercion_target(schema) else {
                    return;
                };
                match coerce_string(&p, s) {
                    Coercion::Keep => {}
                    Coercion::To(new, to) => {
                        self.coerced.push(format!("{}: string→{to}", shown(path)));
                        *v = new;
                        // A JSON object or array sent as text: walk what it became.
                        if matches!(v, Value::Object(_) | Value::Array(_)) {
                            self.value(schema, v, path, depth + 1);
                        }
                    }
                    Coercion::EnumCase(new) => {
                        self.coerced.push(format!(
                            "{}: {} → {new} (enum case)",
                            shown(path),
                            Value::String(s.clone())
                        ));
                        *v = Value::String(new);
                    }
                    Coercion::Refuse(message) => {
                        let at = pointer(path);
                        self.reported.push(at.clone());
                        self.problems.push(Problem::new(at, message));
                    }
                }
            }
            Value::Number(n) if single_type(schema) == Some("integer") => {
                if let Some(f) = n.as_f64().filter(|_| !n.is_i64() && !n.is_u64()) {
                    match float_integer(f) {
                        Ok(Some(i)) => *v = Value::from(i),
                        Ok(None) => {}
                        // The upstream would get another number (1e+20): refused, as a
                        // local tool refuses it.
                        Err((shown, why)) => {
                            let at = pointer(path);
                            self.reported.push(at.clone());
                            self.problems
                                .push(Problem::new(at, format!("{shown} {why}")));
                        }
                    }
                }
            }
            Value::Object(map) => {
                let props = schema.get("properties").and_then(Value::as_object);
                let required: Vec<&str> = schema
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let extra = schema.get("additionalProperties");
                let keys: Vec<String> = map.keys().cloned().collect();
                for key in keys {
                    let child = join_path(path, &key);
                    match props.and_then(|p| p.get(&key)) {
                        Some(sub) => {
                            let sub_resolved = self.resolve(sub, depth + 1);
                            if self.lenient
                                && map.get(&key).is_some_and(Value::is_null)
                                && !required.contains(&key.as_str())
                                && !allows_null(sub)
                                && !allows_null(sub_resolved)
                            {
                                map.remove(&key);
                                self.coerced
                                    .push(format!("{}: null→omitted", shown(&child)));
                                continue;
                            }
                            if let Some(item) = map.get_mut(&key) {
                                self.value(sub, item, &child, depth + 1);
                            }
                        }
                        None => match extra {
                            Some(Value::Bool(false)) => {
                                let at = format!("{}/{}", pointer(path), escape_pointer(&key));
                                let known: Vec<&str> = props
                                    .map(|p| p.keys().map(String::as_str).collect())
                                    .unwrap_or_default();
                                let what = if path.is_empty() {
                                    "argument"
                                } else {
                                    "property"
                                };
                                self.problems.push(Problem::new(
                                    at,
                                    format!(
                                        "unknown {what} {key:?} ({})",
                                        match known.is_empty() {
                                            true => "it takes none".to_owned(),
                                            false => format!("known: {}", known.join(", ")),
                                        }
                                    ),
                                ));
                                self.reported.push(pointer(path));
                            }
                            Some(sub @ Value::Object(_)) => {
                                if let Some(item) = map.get_mut(&key) {
                                    self.value(sub, item, &child, depth + 1);
                                }
                            }
                            _ => {}
                        },
                    }
                }
            }
            Value::Array(items) => {
                if let Some(sub @ Value::Object(_)) = schema.get("items") {
                    for (i, item) in items.iter_mut().enumerate() {
                        self.value(sub, item, &format!("{path}[{i}]"), depth + 1);
                    }
                }
            }
            _ => {}
        }
    }
}

/// The parameter-model stand-in a string is coerced toward, when `schema` names one type
/// (strings themselves need nothing, but a string enum may need its case fixed).
fn coercion_target(schema: &Value) -> Option<Parameter> {
    let values: Vec<Value> = schema
        .get("enum")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let ty = match single_type(schema) {
        Some("integer") => ParamType::Integer,
        Some("number") => ParamType::Number,
        Some("boolean") => ParamType::Boolean,
        Some("array") => ParamType::Array,
        Some("object") => ParamType::Object,
        Some("string") | None if !values.is_empty() && values.iter().all(Value::is_string) => {
            ParamType::Enum
        }
        _ => return None,
    };
    Some(Parameter {
        ty,
        values,
        ..Parameter::default()
    })
}

fn join_path(path: &str, key: &str) -> String {
    match path {
        "" => key.to_owned(),
        p => format!("{p}.{key}"),
    }
}

/// A walk path as a JSON pointer (`a.b[0]` → `/a/b/0`); keys holding `.`, `[` or `]` are
/// not told apart, which only affects the pointer of a problem, never a value.
fn pointer(path: &str) -> String {
    match path {
        "" => String::new(),
        p => pointer_of(p),
    }
}

fn shown(path: &str) -> &str {
    match path {
        "" => "(arguments)",
        p => p,
    }
}
