//! The argument pipeline (SPEC §3.2): parse → coerce → defaults → validate.
//!
//! [`CompiledTool`] holds a tool with its JSON Schema compiled once (seed 002's cached schema);
//! [`CompiledTool::prepare`] runs the pipeline on what a model sent and returns either the
//! validated arguments with the coercions applied, or every problem with its JSON pointer.
//! [`ParamSet`] is the same machinery for any parameter list; the catalog loader uses it for
//! config values. Here the walk (coerce, defaults, unknown keys) and validation; `parse` is
//! step 1, `coerce` the coercion rules, `report` how problems read.

use jsonschema::Validator;
use jsonschema::error::{TypeKind, ValidationErrorKind};
use serde_json::{Map, Number, Value};

use crate::model::{ParamType, Parameter, REDACTED, Tool};
use crate::result::{ErrorKind, Meta, Problem, ToolResult};
use crate::schema::SchemaError;
use crate::{json_text, schema};

mod coerce;
mod parse;
mod raw;
mod report;

use coerce::{Coercion, MAX_EXACT_F64, coerce_string};

/// An integer argument that arrived as a float (a JSON parser gives one for a number written
/// with a fraction or an exponent, or beyond 64 bits): the same integer when the float is
/// one exactly (`2.0` → 2), `None` when it is not whole (the validator says so), else the
/// number as shown and why it is refused — never a different number passed on.
fn float_integer(f: f64) -> Result<Option<i64>, (String, &'static str)> {
    if f.fract() != 0.0 {
        Ok(None)
    } else if f.abs() <= MAX_EXACT_F64 {
        Ok(Some(f as i64))
    } else if !(-(2f64.powi(63))..2f64.powi(63)).contains(&f) {
        Err((
            quote_text(format!("{f:.0}")),
            "is out of range for a 64-bit integer",
        ))
    } else {
        Err((
            format!("{f:.0}"),
            "cannot be taken as an exact integer: written with a fraction or exponent, \
             only whole numbers up to 2^53 are exact; send it as a plain integer",
        ))
    }
}
use parse::parse_arguments;
pub use report::QUOTE_MAX;
use report::{describe, escape_pointer, pointer_of, quote, quote_text};

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
    pub fn new(params: &[Parameter]) -> Result<Self, SchemaError> {
        let validator = schema::compile_schema(&schema::object_schema(params, false))?;
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
            reported: Vec::new(),
            hiding: false,
            lenient,
            noun: self.noun,
        };
        walk.object(params, &mut args, "", false);
        let value = Value::Object(args);
        let mut problems = walk.problems;
        for error in self.validator.iter_errors(&value) {
            if walk
                .reported
                .iter()
                .any(|r| r.as_str() == error.instance_path().as_str())
            {
                continue;
            }
            let hide = error
                .instance_path()
                .as_str()
                .split('/')
                .nth(1)
                .is_some_and(|top| params.iter().any(|p| p.secret && p.name == top));
            problems.extend(describe(&error, self.noun, hide));
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
    checker: Checker,
    /// The tool's stored secret values, replaced by `***` in every result ([`Self::scrub`]).
    secret_values: Vec<String>,
    /// Its result guardrails: credential shapes scrubbed, the cap.
    guard: crate::guard::result::ResultGuard,
}

/// What checks a tool's arguments: its parameter model, or its schema as given.
enum Checker {
    Params(ParamSet),
    Raw(raw::RawSchema),
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
    pub fn new(tool: Tool, version: u64) -> Result<Self, SchemaError> {
        let input_schema = schema::tool_schema(&tool);
        let checker = match &tool.input_schema {
            Some(given) => Checker::Raw(raw::RawSchema::new(given.clone())?),
            None => Checker::Params(ParamSet::new(&tool.parameters)?),
        };
        Ok(Self {
            secret_values: crate::secrets::values(&tool),
            guard: tool.results.guard(),
            tool,
            version,
            input_schema,
            checker,
        })
    }

    /// `result` with every stored secret value of the tool replaced by `***` wherever it
    /// holds text — `data` (a command's stdout, an HTTP body), the error's message and the
    /// `stdout`/`stderr` of a failed process — so a tool that prints its key (`curl -v`, a
    /// traceback quoting the config) does not hand it to the caller (exact values only: an
    /// encoded or reversed copy is not recognised); then its result guardrails: credential
    /// shapes scrubbed and the result cut to its cap ([`crate::guard::result`]), all of it
    /// said in `meta.guardrails`.
    pub fn scrub(&self, result: &mut crate::ToolResult) {
        if !self.secret_values.is_empty() {
            let values = &self.secret_values;
            let mut changed = 0;
            if let Some(data) = &mut result.data {
                changed += crate::secrets::scrub_value(data, values);
            }
            if let Some(e) = &mut result.error {
                let message = crate::secrets::scrub(&e.message, values);
                changed += u32::from(message != e.message);
                e.message = message;
                if let Some(output) = &mut e.output {
                    changed += crate::secrets::scrub_value(output, values);
                }
            }
            if changed > 0 {
                result
                    .meta
                    .guardrails
                    .get_or_insert_with(Default::default)
                    .scrubbed
                    .insert("tool_secret".into(), changed);
            }
        }
        self.guard.apply(result);
    }

    /// The canonical JSON Schema of the arguments.
    pub fn input_schema(&self) -> &Value {
        &self.input_schema
    }

    /// Parses, coerces, fills defaults and validates `raw` (a JSON object, or a JSON string
    /// holding one as OpenAI sends it; `null` counts as no arguments).
    pub fn prepare(&self, raw: Value) -> Result<Prepared, Vec<Problem>> {
        let (args, notes) = parse_arguments(raw)?;
        let lenient = !self.tool.strict_arguments;
        let mut prepared = match &self.checker {
            Checker::Params(params) => params.prepare(&self.tool.parameters, args, lenient)?,
            Checker::Raw(given) => given.prepare(args, lenient)?,
        };
        prepared.coerced.splice(0..0, notes);
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

    /// The `disabled` result: a disabled tool runs nothing, whatever it is sent.
    pub fn disabled(&self) -> ToolResult {
        ToolResult::err(
            ErrorKind::Disabled,
            format!("tool `{}` is disabled", self.tool.name),
            Vec::new(),
            self.meta(Vec::new()),
        )
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

/// `Parameters: path (string, required): The file. ...` for error messages.
pub fn parameter_summary(tool: &Tool) -> String {
    if let Some(given) = &tool.input_schema {
        return schema_summary(given);
    }
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

/// [`parameter_summary`] of a schema as given: its top-level properties, their types and
/// whether each is required.
fn schema_summary(given: &Value) -> String {
    let Some(props) = given.get("properties").and_then(Value::as_object) else {
        return "This tool takes no parameters.".into();
    };
    if props.is_empty() {
        return "This tool takes no parameters.".into();
    }
    let required: Vec<&str> = given
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let parts: Vec<String> = props
        .iter()
        .map(|(name, p)| {
            let ty = match p.get("type") {
                Some(Value::String(t)) => t.clone(),
                Some(Value::Array(ts)) => ts
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(" | "),
                _ if p.get("enum").is_some() => "enum".into(),
                _ => "any".into(),
            };
            let need = match required.contains(&name.as_str()) {
                true => "required",
                false => "optional",
            };
            match p.get("description").and_then(Value::as_str) {
                Some(d) => format!("{name} ({ty}, {need}): {}", d.trim_end_matches('.')),
                None => format!("{name} ({ty}, {need})"),
            }
        })
        .collect();
    format!("Parameters: {}", parts.join("; "))
}

/// Steps 2 and 3: coercion and defaults, in one walk guided by the parameter model.
struct Walk {
    coerced: Vec<String>,
    problems: Vec<Problem>,
    /// Pointers the walk already reported a problem at.
    reported: Vec<String>,
    /// Inside a secret config field: messages show `***`, never the value.
    hiding: bool,
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
            if path.is_empty() {
                self.hiding = p.secret;
            }
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
        {
            match coerce_string(p, s) {
                Coercion::Keep => {}
                Coercion::To(new, to) => {
                    self.coerced.push(format!("{path}: string→{to}"));
                    *v = new;
                }
                Coercion::EnumCase(new) => {
                    self.coerced.push(format!(
                        "{path}: {} → {new} (enum case)",
                        Value::String(s.clone())
                    ));
                    *v = Value::String(new);
                }
                Coercion::Refuse(message) => {
                    let message = self.hide(message, &quote(&Value::String(s.clone())));
                    self.refuse(path, message);
                    return;
                }
            }
        }
        match v {
            Value::String(text) if p.workspace_path => {
                if let Some(why) = outside_workspace(text) {
                    let message = format!("{} refused: {why}", quote(&Value::String(text.clone())));
                    self.refuse(path, message);
                }
            }
            Value::Number(n) if p.ty == ParamType::Integer || p.is_integer_enum() => {
                let problem = if let Some(f) = n.as_f64().filter(|_| !n.is_i64() && !n.is_u64()) {
                    match float_integer(f) {
                        Ok(Some(i)) => {
                            *v = Value::from(i);
                            None
                        }
                        Ok(None) => None,
                        Err(problem) => Some(problem),
                    }
                } else if n.is_u64() && !n.is_i64() {
                    Some((
                        n.to_string(),
                        "is out of range for a 64-bit integer (at most 9223372036854775807)",
                    ))
                } else {
                    None
                };
                if let Some((shown, why)) = problem {
                    let message = self.hide(format!("{shown} {why}"), &shown);
                    self.refuse(path, message);
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

    /// `message` with the value it quotes (`shown`) replaced by `***` inside a secret field.
    fn hide(&self, message: String, shown: &str) -> String {
        match self.hiding {
            true => message.replacen(shown, "***", 1),
            false => message,
        }
    }

    /// A problem found by the walk; the validator's own report at the same place (a bare
    /// "is not an integer") is then left out.
    fn refuse(&mut self, path: &str, message: String) {
        let at = pointer_of(path);
        self.reported.push(at.clone());
        self.problems.push(Problem::new(at, message));
    }
}

/// Why `path` cannot name a place inside the workspace, by its text alone (symlinks are the
/// engine's to check): absolute paths and `..` components are refused.
pub fn outside_workspace(path: &str) -> Option<&'static str> {
    if path.starts_with('/') {
        Some("paths are relative to the workspace (rule: no absolute paths)")
    } else if path.split('/').any(|c| c == "..") {
        Some("`..` is not allowed in paths (rule: no parent references)")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::coerce::{looks_numeric, parse_integer};
    use super::parse::unfence;
    use super::*;

    #[test]
    fn pointers_from_paths() {
        assert_eq!(pointer_of("a"), "/a");
        assert_eq!(pointer_of("a.b[0][2].c"), "/a/b/0/2/c");
    }

    #[test]
    fn integer_syntax() {
        assert_eq!(parse_integer("2000"), Some(Ok(2000)));
        assert_eq!(parse_integer("-7"), Some(Ok(-7)));
        assert_eq!(parse_integer("+7"), Some(Ok(7)));
        assert_eq!(parse_integer("99999999999999999999"), Some(Err(())));
        for bad in ["2.5", "12abc", "1e3", "", "-", "0x10"] {
            assert_eq!(parse_integer(bad), None, "{bad}");
        }
    }

    #[test]
    fn numeric_syntax() {
        for ok in ["1", "-1.5", "+2e10", "3.0E-2"] {
            assert!(looks_numeric(ok), "{ok}");
        }
        for bad in ["inf", "NaN", "1.", ".5", "1e", "0x1", ""] {
            assert!(!looks_numeric(bad), "{bad}");
        }
    }

    #[test]
    fn fences() {
        assert_eq!(unfence("```json\n{\"a\": 1}\n```"), Some("{\"a\": 1}\n"));
        assert_eq!(unfence("```\n{}\n```"), Some("{}\n"));
        assert_eq!(unfence("```python\n{}\n```"), None);
        assert_eq!(unfence("```json\n{}\n```\n```json\n{}\n```"), None);
    }
}
