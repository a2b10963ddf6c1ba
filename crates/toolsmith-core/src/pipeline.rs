//! The argument pipeline (SPEC §3.2): parse → coerce → defaults → validate.
//!
//! [`CompiledTool`] holds a tool with its JSON Schema compiled once (seed 002's cached schema);
//! [`CompiledTool::prepare`] runs the pipeline on what a model sent and returns either the
//! validated arguments with the coercions applied, or every problem with its JSON pointer.
//! [`ParamSet`] is the same machinery for any parameter list; the catalog loader uses it for
//! config values.

use jsonschema::Validator;
use jsonschema::error::{TypeKind, ValidationErrorKind};
use serde_json::{Map, Number, Value};

use crate::model::{ParamType, Parameter, Tool};
use crate::result::{ErrorKind, Meta, Problem, ToolResult};
use crate::schema;

/// Compiles a JSON Schema with the options the whole crate uses: draft 2020-12, formats
/// asserted, no remote references.
pub fn compile_schema(schema: &Value) -> Result<Validator, String> {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(schema)
        .map_err(|e| e.to_string())
}

/// A parameter list with its compiled schema.
pub struct ParamSet {
    validator: Validator,
    /// What the values are called in messages: `argument` or `config field`.
    noun: &'static str,
}

/// Arguments that passed the pipeline.
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared {
    pub arguments: Map<String, Value>,
    /// `path: from→to` for each value that was coerced.
    pub coerced: Vec<String>,
}

impl ParamSet {
    pub fn new(params: &[Parameter]) -> Result<Self, String> {
        let validator = compile_schema(&schema::object_schema(params, false))?;
        Ok(Self {
            validator,
            noun: "argument",
        })
    }

    /// Names the values `noun` in messages (`unknown config field "x"`).
    pub fn noun(self, noun: &'static str) -> Self {
        Self { noun, ..self }
    }

    /// Runs coerce → defaults → validate over an object. `lenient` turns coercion on.
    pub fn prepare(
        &self,
        params: &[Parameter],
        mut args: Map<String, Value>,
        lenient: bool,
    ) -> Result<Prepared, Vec<Problem>> {
        let mut walk = Walk {
            coerced: Vec::new(),
            problems: Vec::new(),
            lenient,
            noun: self.noun,
        };
        walk.object(params, &mut args, "", false);
        let value = Value::Object(args);
        let mut problems = walk.problems;
        for error in self.validator.iter_errors(&value) {
            problems.extend(describe(&error, self.noun));
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

/// A tool ready to be called: its definition, its version and its compiled schema.
pub struct CompiledTool {
    pub tool: Tool,
    pub version: u64,
    input_schema: Value,
    params: ParamSet,
}

impl std::fmt::Debug for CompiledTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledTool")
            .field("tool", &self.tool.name)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

impl CompiledTool {
    /// Compiles the tool's argument schema. Fails only for schemas the loader would refuse.
    pub fn new(tool: Tool, version: u64) -> Result<Self, String> {
        let input_schema = schema::object_schema(&tool.parameters, false);
        let params = ParamSet::new(&tool.parameters)?;
        Ok(Self {
            tool,
            version,
            input_schema,
            params,
        })
    }

    /// The canonical JSON Schema of the arguments.
    pub fn input_schema(&self) -> &Value {
        &self.input_schema
    }

    /// Parses, coerces, fills defaults and validates `raw` (a JSON object, or a JSON string
    /// holding one as OpenAI sends it; `null` counts as no arguments).
    pub fn prepare(&self, raw: Value) -> Result<Prepared, Vec<Problem>> {
        let (args, unwrapped) = parse_arguments(raw)?;
        let mut prepared =
            self.params
                .prepare(&self.tool.parameters, args, !self.tool.strict_arguments)?;
        if unwrapped {
            prepared
                .coerced
                .insert(0, "arguments: string→object".into());
        }
        Ok(prepared)
    }

    /// The `meta` of a result for this tool.
    pub fn meta(&self, coerced: Vec<String>) -> Meta {
        Meta {
            tool: self.tool.name.to_string(),
            version: self.version,
            coerced,
            ..Meta::default()
        }
    }

    /// The `invalid_arguments` result for `problems`, quoting the parameters so a model can
    /// retry.
    pub fn invalid_arguments(&self, problems: Vec<Problem>) -> ToolResult {
        let list = problems
            .iter()
            .map(Problem::to_string)
            .collect::<Vec<_>>()
            .join("; ");
        let message = format!(
            "invalid arguments for tool `{}`: {list}. {}",
            self.tool.name,
            parameter_summary(&self.tool)
        );
        ToolResult::err(
            ErrorKind::InvalidArguments,
            message,
            problems,
            self.meta(Vec::new()),
        )
    }
}

/// Step 1: the arguments as an object. A JSON text is parsed; a JSON text that holds a
/// string holding an object (arguments encoded twice, as some models send them) is unwrapped
/// once, and the second value says so.
fn parse_arguments(raw: Value) -> Result<(Map<String, Value>, bool), Vec<Problem>> {
    let parse = |text: &str| {
        serde_json::from_str::<Value>(text).map_err(|e| {
            vec![Problem::new(
                "",
                format!("arguments are not valid JSON: {e}"),
            )]
        })
    };
    let (value, unwrapped) = match raw {
        Value::Null => return Ok((Map::new(), false)),
        Value::String(text) => match parse(&text)? {
            Value::String(inner) => match serde_json::from_str::<Value>(&inner) {
                Ok(v @ Value::Object(_)) => (v, true),
                _ => (Value::String(inner), false),
            },
            v => (v, false),
        },
        other => (other, false),
    };
    match value {
        Value::Object(map) => Ok((map, unwrapped)),
        other => Err(vec![Problem::new(
            "",
            format!(
                "arguments must be a JSON object, got {}",
                type_phrase(&other)
            ),
        )]),
    }
}

/// `Parameters: path (string, required): The file. ...` for error messages.
pub fn parameter_summary(tool: &Tool) -> String {
    if tool.parameters.is_empty() {
        return "This tool takes no parameters.".into();
    }
    let parts: Vec<String> = tool
        .parameters
        .iter()
        .map(|p| {
            let need = if p.required {
                "required".to_string()
            } else if let Some(d) = &p.default {
                format!("optional, default {d}")
            } else {
                "optional".to_string()
            };
            match &p.description {
                Some(d) => format!(
                    "{} ({}, {need}): {}",
                    p.name,
                    p.type_summary(),
                    d.trim_end_matches('.')
                ),
                None => format!("{} ({}, {need})", p.name, p.type_summary()),
            }
        })
        .collect();
    format!("Parameters: {}", parts.join("; "))
}

/// Steps 2 and 3: coercion and defaults, in one walk guided by the parameter model.
struct Walk {
    coerced: Vec<String>,
    problems: Vec<Problem>,
    lenient: bool,
    noun: &'static str,
}

impl Walk {
    fn object(
        &mut self,
        params: &[Parameter],
        map: &mut Map<String, Value>,
        path: &str,
        additional: bool,
    ) {
        if !additional {
            // Unknown keys are reported here, with the keys that are known, rather than by
            // the validator, whose message for a closed object without properties is bare.
            for key in map.keys().filter(|k| !params.iter().any(|p| &p.name == *k)) {
                let what = if path.is_empty() {
                    self.noun
                } else {
                    "property"
                };
                let known = if params.is_empty() {
                    "this takes none".to_string()
                } else {
                    format!(
                        "known: {}",
                        params
                            .iter()
                            .map(|p| p.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                };
                let at = if path.is_empty() {
                    String::new()
                } else {
                    pointer_of(path)
                };
                self.problems.push(Problem::new(
                    format!("{at}/{}", escape_pointer(key)),
                    format!("unknown {what} {key:?} ({known})"),
                ));
            }
        }
        for p in params {
            let child = if path.is_empty() {
                p.name.clone()
            } else {
                format!("{path}.{}", p.name)
            };
            match map.get_mut(&p.name) {
                // OpenAI strict mode sends null for optional parameters it leaves out.
                Some(Value::Null) if self.lenient && !p.nullable && !p.required => {
                    map.remove(&p.name);
                    self.coerced.push(format!("{child}: null→omitted"));
                }
                Some(v) => {
                    self.value(p, v, &child);
                    continue;
                }
                None => {}
            }
            if let Some(d) = &p.default {
                map.insert(p.name.clone(), d.clone());
            }
        }
    }

    fn value(&mut self, p: &Parameter, v: &mut Value, path: &str) {
        if self.lenient
            && let Value::String(s) = v
            && let Some((new, to)) = coerce_string(p, s)
        {
            self.coerced.push(format!("{path}: string→{to}"));
            *v = new;
        }
        match v {
            Value::Number(n) if p.ty == ParamType::Integer || p.is_integer_enum() => {
                if let Some(f) = n.as_f64().filter(|_| !n.is_i64()) {
                    if f.fract() == 0.0 && f >= -(2f64.powi(63)) && f < 2f64.powi(63) {
                        // 2.0 and 2 are the same integer; keep the integer form.
                        *v = Value::from(f as i64);
                    } else if f.fract() == 0.0 {
                        self.problems.push(Problem::new(
                            pointer_of(path),
                            format!("{n} is out of range for a 64-bit integer"),
                        ));
                    }
                }
            }
            Value::Array(items) if p.ty == ParamType::Array => {
                if let Some(item) = &p.items {
                    for (i, x) in items.iter_mut().enumerate() {
                        self.value(item, x, &format!("{path}[{i}]"));
                    }
                }
            }
            Value::Object(map) if p.ty == ParamType::Object => {
                let additional = p.additional_properties.unwrap_or(p.properties.is_empty());
                self.object(&p.properties, map, path, additional)
            }
            _ => {}
        }
    }
}

/// The coercion rules of SPEC §3.2 for a string sent where `p` expects another type.
fn coerce_string(p: &Parameter, s: &str) -> Option<(Value, &'static str)> {
    let t = s.trim();
    match p.ty {
        ParamType::String => None,
        ParamType::Enum if !p.is_integer_enum() => None,
        ParamType::Integer | ParamType::Enum => {
            parse_integer(t).map(|i| (Value::from(i), "integer"))
        }
        ParamType::Number => t
            .parse::<f64>()
            .ok()
            .filter(|f| f.is_finite())
            .and_then(Number::from_f64)
            .map(|n| (Value::Number(n), "number")),
        ParamType::Boolean => {
            if t.eq_ignore_ascii_case("true") {
                Some((Value::Bool(true), "boolean"))
            } else if t.eq_ignore_ascii_case("false") {
                Some((Value::Bool(false), "boolean"))
            } else {
                None
            }
        }
        ParamType::Array => match serde_json::from_str::<Value>(t) {
            Ok(v @ Value::Array(_)) => Some((v, "array")),
            _ => None,
        },
        ParamType::Object => match serde_json::from_str::<Value>(t) {
            Ok(v @ Value::Object(_)) => Some((v, "object")),
            _ => None,
        },
    }
}

/// Integer syntax only: an optional sign and digits (`"2.5"`, `"12abc"`, `"1e3"` are not).
fn parse_integer(t: &str) -> Option<i64> {
    let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    t.parse::<i64>().ok()
}

fn pointer_of(path: &str) -> String {
    // `a.b[0]` → `/a/b/0`; parameter names cannot contain `/`, `[` or `]`, but may contain
    // `.`, so walk segments the same way they were built.
    let mut out = String::new();
    for seg in path.split('.') {
        let (name, rest) = seg.split_once('[').unwrap_or((seg, ""));
        out.push('/');
        out.push_str(&name.replace('~', "~0"));
        for idx in rest.split('[').filter(|s| !s.is_empty()) {
            out.push('/');
            out.push_str(idx.trim_end_matches(']'));
        }
    }
    out
}

/// Step 4's messages: plain, with the pointer of the offending value.
fn describe(error: &jsonschema::ValidationError<'_>, noun: &str) -> Vec<Problem> {
    let at = error.instance_path().as_str().to_string();
    let instance = error.instance();
    match error.kind() {
        ValidationErrorKind::Type { kind } => {
            let expected = match kind {
                TypeKind::Single(t) => article(&t.to_string()),
                TypeKind::Multiple(set) => set
                    .iter()
                    .map(|t| article(&t.to_string()))
                    .collect::<Vec<_>>()
                    .join(" or "),
            };
            vec![Problem::new(
                at,
                format!("{} is not {expected}", short(instance)),
            )]
        }
        ValidationErrorKind::Required { property } => {
            let name = property.as_str().unwrap_or_default();
            let what = if at.is_empty() { noun } else { "property" };
            vec![Problem::new(
                format!("{at}/{}", escape_pointer(name)),
                format!("missing required {what} {property}"),
            )]
        }
        // Reported by the walk, with the known keys.
        ValidationErrorKind::AdditionalProperties { .. } | ValidationErrorKind::FalseSchema => {
            Vec::new()
        }
        ValidationErrorKind::Enum { options } => {
            let list = options
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(Value::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default();
            vec![Problem::new(
                at,
                format!("{} is not one of {list}", short(instance)),
            )]
        }
        _ => vec![Problem::new(at, error.to_string())],
    }
}

fn escape_pointer(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

fn article(t: &str) -> String {
    match t {
        "integer" | "array" | "object" => format!("an {t}"),
        "null" => "null".into(),
        _ => format!("a {t}"),
    }
}

/// `an object`, `a string` … for messages about a whole value.
pub fn type_phrase(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A value quoted for a message, cut to a readable length.
fn short(v: &Value) -> String {
    let text = v.to_string();
    if text.chars().count() <= 60 {
        text
    } else {
        let cut: String = text.chars().take(57).collect();
        format!("{cut}...")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_from_paths() {
        assert_eq!(pointer_of("a"), "/a");
        assert_eq!(pointer_of("a.b[0][2].c"), "/a/b/0/2/c");
    }

    #[test]
    fn integer_syntax() {
        assert_eq!(parse_integer("2000"), Some(2000));
        assert_eq!(parse_integer("-7"), Some(-7));
        assert_eq!(parse_integer("+7"), Some(7));
        for bad in [
            "2.5",
            "12abc",
            "1e3",
            "",
            "-",
            "0x10",
            "99999999999999999999",
        ] {
            assert_eq!(parse_integer(bad), None, "{bad}");
        }
    }
}
