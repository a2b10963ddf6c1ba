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

use crate::model::{ParamType, Parameter, REDACTED, Tool};
use crate::result::{ErrorKind, Meta, Problem, ToolResult};
use crate::{json_text, schema};

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
        let (args, notes) = parse_arguments(raw)?;
        let mut prepared =
            self.params
                .prepare(&self.tool.parameters, args, !self.tool.strict_arguments)?;
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

/// What step 1 repaired, for `meta.coerced`.
type Notes = Vec<String>;

/// Step 1: the arguments as an object. `null` means none. Text (OpenAI's form, the CLI's
/// `--args`) is read exactly ([`json_text`]: duplicate keys and numbers that would change are
/// refused); empty text and `null` mean none; text wrapped in a markdown code fence is
/// unwrapped; a JSON text holding a string holding an object (arguments encoded twice) is
/// unwrapped once. Each of these repairs is returned as a note for `meta.coerced`.
fn parse_arguments(raw: Value) -> Result<(Map<String, Value>, Notes), Vec<Problem>> {
    let mut notes = Vec::new();
    let value = match raw {
        Value::Null => return Ok((Map::new(), notes)),
        Value::String(text) => match parse_text(&text, &mut notes)? {
            Some(v) => v,
            None => return Ok((Map::new(), notes)),
        },
        other => other,
    };
    match value {
        Value::Object(map) => Ok((map, notes)),
        other => Err(vec![Problem::new(
            "",
            format!(
                "arguments must be a JSON object, got {}",
                type_phrase(&other)
            ),
        )]),
    }
}

/// Arguments given as text; `None` when the text means "no arguments".
fn parse_text(text: &str, notes: &mut Vec<String>) -> Result<Option<Value>, Vec<Problem>> {
    let mut body = text.trim();
    if let Some(inner) = unfence(body) {
        notes.push("arguments: markdown code fence removed".into());
        body = inner.trim();
    }
    match body {
        "" => {
            notes.push("arguments: empty text→no arguments".into());
            return Ok(None);
        }
        "null" => {
            notes.push("arguments: null→no arguments".into());
            return Ok(None);
        }
        _ => {}
    }
    let problem = |e: json_text::TextError| match e {
        json_text::TextError::Syntax(m) => {
            vec![Problem::new(
                "",
                format!("arguments are not valid JSON: {m}"),
            )]
        }
        json_text::TextError::Value { pointer, message } => vec![Problem::new(pointer, message)],
    };
    match json_text::parse(body).map_err(problem)? {
        Value::String(inner) if inner.trim_start().starts_with('{') => {
            let v = json_text::parse(inner.trim()).map_err(problem)?;
            notes.push("arguments: string→object".into());
            Ok(Some(v))
        }
        Value::Null => {
            notes.push("arguments: null→no arguments".into());
            Ok(None)
        }
        v => Ok(Some(v)),
    }
}

/// The inside of a markdown code fence (```` ```json … ``` ````), when `text` is exactly one.
fn unfence(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("```")?;
    let (info, rest) = rest.split_once('\n')?;
    let info = info.trim();
    if !(info.is_empty() || info.eq_ignore_ascii_case("json")) {
        return None;
    }
    let inner = rest.trim_end().strip_suffix("```")?;
    (!inner.contains("```")).then_some(inner)
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
                    if f.fract() != 0.0 {
                        None // the validator says it is not an integer
                    } else if f.abs() <= MAX_EXACT_F64 {
                        // 2.0 and 2 are the same integer; keep the integer form.
                        *v = Value::from(f as i64);
                        None
                    } else if !(-(2f64.powi(63))..2f64.powi(63)).contains(&f) {
                        Some((
                            quote_text(format!("{f:.0}")),
                            "is out of range for a 64-bit integer",
                        ))
                    } else {
                        Some((
                            format!("{f:.0}"),
                            "cannot be taken as an exact integer: written with a fraction or exponent, \
                             only whole numbers up to 2^53 are exact; send it as a plain integer",
                        ))
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

/// Integers a 64-bit float holds exactly: up to 2^53.
const MAX_EXACT_F64: f64 = 9_007_199_254_740_992.0;

/// What to do with a string sent where another type is expected.
enum Coercion {
    Keep,
    To(Value, &'static str),
    /// A string enum value matched one allowed value except for case.
    EnumCase(String),
    /// The string was meant as that type but cannot be taken exactly: say why.
    Refuse(String),
}

/// The coercion rules of SPEC §3.2 for a string sent where `p` expects another type.
fn coerce_string(p: &Parameter, s: &str) -> Coercion {
    let t = s.trim();
    let quoted = || quote(&Value::String(s.to_owned()));
    match p.ty {
        ParamType::String => Coercion::Keep,
        ParamType::Enum if !p.is_integer_enum() => {
            if p.values.iter().any(|v| v.as_str() == Some(s)) {
                return Coercion::Keep;
            }
            let matches: Vec<&str> = p
                .values
                .iter()
                .filter_map(Value::as_str)
                .filter(|v| v.eq_ignore_ascii_case(t))
                .collect();
            match matches.as_slice() {
                [one] => Coercion::EnumCase((*one).to_owned()),
                _ => Coercion::Keep,
            }
        }
        ParamType::Integer | ParamType::Enum => match parse_integer(t) {
            Some(Ok(i)) => Coercion::To(Value::from(i), "integer"),
            Some(Err(())) => Coercion::Refuse(format!(
                "{} is out of range for a 64-bit integer (-9223372036854775808 to 9223372036854775807)",
                quoted()
            )),
            None => Coercion::Keep,
        },
        ParamType::Number => {
            if let Some(Ok(i)) = parse_integer(t) {
                return Coercion::To(Value::from(i), "number");
            }
            let Some(f) = t.parse::<f64>().ok().filter(|_| looks_numeric(t)) else {
                return Coercion::Keep;
            };
            if !f.is_finite() {
                return Coercion::Refuse(format!(
                    "{} is out of range for a number (a 64-bit floating-point number holds up to about 1.8e308)",
                    quoted()
                ));
            }
            if !json_text::Decimal::of(t).round_trips(f) {
                return Coercion::Refuse(format!(
                    "{} cannot be held exactly by a 64-bit floating-point number (it would become {f}); \
                     send a number with fewer digits",
                    quoted()
                ));
            }
            match Number::from_f64(f) {
                Some(n) => Coercion::To(Value::Number(n), "number"),
                None => Coercion::Keep,
            }
        }
        ParamType::Boolean => {
            if t.eq_ignore_ascii_case("true") {
                Coercion::To(Value::Bool(true), "boolean")
            } else if t.eq_ignore_ascii_case("false") {
                Coercion::To(Value::Bool(false), "boolean")
            } else {
                Coercion::Keep
            }
        }
        ParamType::Array | ParamType::Object => {
            let (open, noun) = match p.ty {
                ParamType::Array => ('[', "array"),
                _ => ('{', "object"),
            };
            if !t.starts_with(open) {
                return Coercion::Keep;
            }
            match json_text::parse(t) {
                Ok(v @ (Value::Array(_) | Value::Object(_)))
                    if v.is_array() == (p.ty == ParamType::Array) =>
                {
                    Coercion::To(v, noun)
                }
                Ok(_) => Coercion::Keep,
                Err(json_text::TextError::Syntax(m)) => Coercion::Refuse(format!(
                    "looks like a JSON {noun} sent as text, but it does not parse: {m}"
                )),
                Err(e @ json_text::TextError::Value { .. }) => {
                    Coercion::Refuse(format!("a JSON {noun} sent as text, refused: {e}"))
                }
            }
        }
    }
}

/// JSON number syntax (with an optional `+`): `t.parse::<f64>()` also takes `inf`, `NaN` and
/// `1.`, which are not what a model means by a number.
fn looks_numeric(t: &str) -> bool {
    let body = t.strip_prefix(['+', '-']).unwrap_or(t);
    let (mantissa, exp) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let (int, frac) = match mantissa.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (mantissa, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    digits(int)
        && frac.is_none_or(digits)
        && exp.is_none_or(|e| digits(e.strip_prefix(['+', '-']).unwrap_or(e)))
}

/// Integer syntax only: an optional sign and digits (`"2.5"`, `"12abc"`, `"1e3"` are not).
/// `Some(Err)` for integer syntax beyond 64 bits.
fn parse_integer(t: &str) -> Option<Result<i64, ()>> {
    let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(t.parse::<i64>().map_err(drop))
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

/// Step 4's messages: plain, with the pointer of the offending value. `hide`: the value is a
/// secret, shown as `***`.
fn describe(error: &jsonschema::ValidationError<'_>, noun: &str, hide: bool) -> Vec<Problem> {
    let at = error.instance_path().as_str().to_string();
    let instance = error.instance();
    let short = |v: &Value| match hide {
        true => REDACTED.to_string(),
        false => short(v),
    };
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
        _ => {
            let whole = instance.to_string();
            let shown = match hide {
                true => REDACTED.to_string(),
                false => quote_text(whole.clone()),
            };
            vec![Problem::new(
                at,
                error.to_string().replacen(&whole, &shown, 1),
            )]
        }
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

/// Longest quoted value a problem message carries, in characters of its JSON text.
pub const QUOTE_MAX: usize = 200;

/// A value quoted whole for a message, unless it is longer than [`QUOTE_MAX`]: then its head
/// and its size (`"1234…" (2097154 bytes)`), so a huge bad argument gives a short problem.
fn quote(v: &Value) -> String {
    quote_text(v.to_string())
}

fn quote_text(text: String) -> String {
    crate::result::cut(&text, QUOTE_MAX).unwrap_or(text)
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
