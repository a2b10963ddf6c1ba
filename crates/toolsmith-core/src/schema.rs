//! Parameter model → JSON Schema 2020-12 (SPEC §3.1).
//!
//! There is one canonical schema per tool ([`tool_schema`]): the validator compiles it and
//! every renderer starts from it (and then applies its provider's rules). Keys are emitted in
//! a fixed order so rendered output is stable. A tool whose arguments are described by a
//! schema as given (an upstream MCP tool's) has that schema, verbatim.

use jsonschema::Validator;
use serde_json::{Map, Value, json};

use crate::model::{ParamType, Parameter, Tool};

/// The JSON Schema of a tool's arguments: its `input_schema` as given, else the one its
/// parameters make.
pub fn tool_schema(tool: &Tool) -> Value {
    match &tool.input_schema {
        Some(given) => given.clone(),
        None => object_schema(&tool.parameters, false),
    }
}

/// The object schema for a list of parameters (a tool's arguments, a config, an object's
/// properties). Unknown keys are refused unless `additional` is true.
pub fn object_schema(params: &[Parameter], additional: bool) -> Value {
    let mut node = Map::new();
    node.insert("type".into(), json!("object"));
    let mut props = Map::new();
    for p in params {
        props.insert(p.name.clone(), parameter_schema(p));
    }
    if !params.is_empty() {
        node.insert("properties".into(), Value::Object(props));
    }
    let required: Vec<Value> = params
        .iter()
        .filter(|p| p.required)
        .map(|p| Value::String(p.name.clone()))
        .collect();
    if !required.is_empty() {
        node.insert("required".into(), Value::Array(required));
    }
    node.insert("additionalProperties".into(), Value::Bool(additional));
    Value::Object(node)
}

/// The schema of one parameter.
pub fn parameter_schema(p: &Parameter) -> Value {
    let mut node = match p.ty {
        ParamType::Object => {
            let additional = p.additional_properties.unwrap_or(p.properties.is_empty());
            let Value::Object(map) = object_schema(&p.properties, additional) else {
                unreachable!("object_schema returns an object")
            };
            map
        }
        _ => {
            let mut map = Map::new();
            map.insert("type".into(), json!(json_type(p)));
            map
        }
    };
    if p.nullable {
        let ty = node.get("type").cloned().unwrap_or(Value::Null);
        node.insert("type".into(), json!([ty, "null"]));
    }
    // `description` goes right after `type` for readability; Map keeps insertion order, so
    // rebuild with it in second place.
    if let Some(d) = &p.description {
        let mut ordered = Map::new();
        if let Some(t) = node.remove("type") {
            ordered.insert("type".into(), t);
        }
        ordered.insert("description".into(), Value::String(d.clone()));
        ordered.append(&mut node);
        node = ordered;
    }
    if p.ty == ParamType::Enum {
        let mut values = p.values.clone();
        if p.nullable {
            values.push(Value::Null);
        }
        node.insert("enum".into(), Value::Array(values));
    }
    if let Some(items) = &p.items {
        node.insert("items".into(), parameter_schema(items));
    }
    let c = &p.constraints;
    let mut put = |key: &str, v: Option<Value>| {
        if let Some(v) = v {
            node.insert(key.into(), v);
        }
    };
    put("minLength", c.min_length.map(Value::from));
    put("maxLength", c.max_length.map(Value::from));
    put("pattern", c.pattern.clone().map(Value::String));
    put("format", c.format.clone().map(Value::String));
    put("minimum", c.minimum.clone().map(Value::Number));
    put("maximum", c.maximum.clone().map(Value::Number));
    put(
        "exclusiveMinimum",
        c.exclusive_minimum.clone().map(Value::Number),
    );
    put(
        "exclusiveMaximum",
        c.exclusive_maximum.clone().map(Value::Number),
    );
    put("multipleOf", c.multiple_of.clone().map(Value::Number));
    put("minItems", c.min_items.map(Value::from));
    put("maxItems", c.max_items.map(Value::from));
    put("uniqueItems", c.unique_items.then_some(Value::Bool(true)));
    put("default", p.default.clone());
    Value::Object(node)
}

/// The JSON Schema `type` keyword for a parameter type (enums are typed by their values).
pub fn json_type(p: &Parameter) -> &'static str {
    match p.ty {
        ParamType::String => "string",
        ParamType::Integer => "integer",
        ParamType::Number => "number",
        ParamType::Boolean => "boolean",
        ParamType::Enum if p.is_integer_enum() => "integer",
        ParamType::Enum => "string",
        ParamType::Array => "array",
        ParamType::Object => "object",
    }
}

/// Compiles a JSON Schema with the options the whole crate uses: draft 2020-12, formats
/// asserted, no remote references.
pub fn compile_schema(schema: &Value) -> Result<Validator, SchemaError> {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(schema)
        .map_err(SchemaError::from)
}

/// Compiles a JSON Schema as an upstream gave it: its own `$schema` draft (2020-12 when it
/// names none), formats asserted, no remote references.
pub fn compile_upstream_schema(schema: &Value) -> Result<Validator, SchemaError> {
    jsonschema::options()
        .should_validate_formats(true)
        .build(schema)
        .map_err(SchemaError::from)
}

/// A JSON Schema that does not compile: where in the schema, and why (as the validator
/// library says it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SchemaError {
    /// The JSON pointer of the part of the schema refused (empty: the whole).
    pub at: String,
    pub message: String,
}

impl From<jsonschema::ValidationError<'_>> for SchemaError {
    fn from(e: jsonschema::ValidationError<'_>) -> Self {
        Self {
            at: e.schema_path().as_str().to_owned(),
            message: e.to_string(),
        }
    }
}
