//! The tool and parameter model (SPEC §2, §3.1).
//!
//! A [`Tool`] is what a catalog entry becomes once it has been loaded and checked: every value
//! here has passed the loader's rules, so the rest of the crate can rely on them (a
//! [`ToolName`] is valid, a [`Parameter`] of type `enum` has values, an `option` parameter has
//! an option name). The types serialize back to the catalog form, so `load(serialize(tool))`
//! gives the same tool; that form is also what the registry stores.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

/// A tool name that passed the catalog's naming rule (see [`NameRule`]).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct ToolName(String);

impl ToolName {
    /// Checks `name` against `rule`; the error says which rule and why.
    pub fn new(name: &str, rule: NameRule) -> Result<Self, NameError> {
        rule.check(name)?;
        Ok(Self(name.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Which characters a catalog allows in tool names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NameRule {
    /// `^[A-Za-z][A-Za-z0-9_]{0,63}$`: accepted unchanged by every provider.
    #[default]
    Portable,
    /// `^[A-Za-z0-9_.-]{1,128}$`: the MCP set; renderers map names for stricter providers.
    Mcp,
}

impl NameRule {
    pub const ALL: [&'static str; 2] = ["portable", "mcp"];

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "portable" => Some(Self::Portable),
            "mcp" => Some(Self::Mcp),
            _ => None,
        }
    }

    pub fn check(self, name: &str) -> Result<(), NameError> {
        let ok = match self {
            Self::Portable => {
                name.len() <= 64
                    && name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            }
            Self::Mcp => {
                !name.is_empty()
                    && name.len() <= 128
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
            }
        };
        match (ok, self) {
            (true, _) => Ok(()),
            (false, Self::Portable) => Err(NameError::Portable(name.to_owned())),
            (false, Self::Mcp) => Err(NameError::Mcp(name.to_owned())),
        }
    }
}

/// A tool name its rule refuses, by rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error(
        "invalid tool name {0:?}: use a letter, then up to 63 letters, digits or underscores (set `defaults.tool_names: mcp` to allow `.` and `-`)"
    )]
    Portable(String),
    #[error("invalid tool name {0:?}: use 1 to 128 letters, digits, `_`, `.` or `-`")]
    Mcp(String),
}

/// A tool as loaded from a catalog or the registry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tool {
    pub name: ToolName,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub description: String,
    pub danger: Danger,
    #[serde(skip_serializing_if = "Annotations::is_empty")]
    pub annotations: Annotations,
    pub timeout_ms: u64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    pub enabled: bool,
    #[serde(skip_serializing_if = "is_false")]
    pub strict_arguments: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_of_options: Option<EndOfOptions>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub env_allowlist: Vec<String>,
    /// Fixed environment variables for command and script tools.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Where the process runs; relative to the workspace. `None`: a fresh temporary folder.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub working_dir: Option<String>,
    /// At most this many calls of the tool run at once; more wait in the queue.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_concurrency: Option<u32>,
    #[serde(skip_serializing_if = "Limits::is_empty")]
    pub limits: Limits,
    /// The kernel sandbox its processes run in (command and script tools, and the sessions
    /// `session_start` starts); `None`: the server's default (`workspace`, best effort).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<crate::sandbox::Sandbox>,
    /// How often each caller may call it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<crate::rate::RateLimit>,
    /// `max_result_bytes` and `scrub`: what its results are cut to and scrubbed of.
    #[serde(flatten)]
    pub results: crate::guard::result::ResultPolicy,
    /// How a command tool's stdout becomes `data`.
    #[serde(skip_serializing_if = "OutputMode::is_text")]
    pub output: OutputMode,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parameters: Vec<Parameter>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub config_schema: Vec<Parameter>,
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub config: Map<String, Value>,
    /// The arguments' JSON Schema as given, for tools whose schema the parameter model does
    /// not describe (an upstream MCP tool's `inputSchema`, kept verbatim); `parameters` is
    /// then empty. See [`crate::schema::tool_schema`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub formats: BTreeMap<Format, FormatOverride>,
    #[serde(flatten)]
    pub executor: Executor,
}

/// Writes each parameter's place (its executor's) into its catalog form, where the catalog
/// declares it: after the parameter's own keys, before `secret` and `workspace_path`.
fn write_places<P: Serialize>(tool: &mut Value, places: &BTreeMap<String, P>) {
    let Some(Value::Array(params)) = tool.get_mut("parameters") else {
        return;
    };
    for param in params {
        let Value::Object(map) = param else { continue };
        let place = map
            .get("name")
            .and_then(Value::as_str)
            .and_then(|name| places.get(name))
            .and_then(|place| serde_json::to_value(place).ok());
        let Some(Value::Object(place)) = place else {
            continue;
        };
        let old = std::mem::take(map);
        let mut place = Some(place);
        for (key, v) in old {
            if matches!(key.as_str(), "secret" | "workspace_path")
                && let Some(place) = place.take()
            {
                map.extend(place);
            }
            map.insert(key, v);
        }
        map.extend(place.into_iter().flatten());
    }
}

/// The placeholder every secret value is replaced with when shown.
pub const REDACTED: &str = "***";

impl Tool {
    /// The catalog form of this tool as JSON; secret config values are replaced by `"***"`
    /// unless `secrets` is [`Secrets::Keep`].
    pub fn to_catalog_value(&self, secrets: Secrets) -> Value {
        let mut value = serde_json::to_value(self).unwrap_or(Value::Null);
        // Where each parameter goes is the executor's; the catalog writes it on the parameter.
        match &self.executor {
            Executor::Command(c) => write_places(&mut value, &c.places),
            Executor::Http(h) => write_places(&mut value, &h.places),
            _ => {}
        }
        if let (Executor::Builtin(_), Value::Object(map)) = (&self.executor, &mut value) {
            // A built-in's interface is toolsmith's own, not part of the definition.
            map.remove("parameters");
            map.remove("config_schema");
        }
        if secrets == Secrets::Redact
            && let Some(config) = value.get_mut("config").and_then(Value::as_object_mut)
        {
            for p in self.config_schema.iter().filter(|p| p.secret) {
                if let Some(v) = config.get_mut(&p.name) {
                    *v = Value::String(REDACTED.into());
                }
            }
        }
        value
    }

    /// The description a given format shows: the tool's own, replaced or extended by the
    /// tool's override for that format.
    pub fn description_for(&self, format: Format) -> String {
        let over = self.formats.get(&format).or_else(|| {
            (format == Format::OpenaiResponses)
                .then(|| self.formats.get(&Format::Openai))
                .flatten()
        });
        let mut text = over
            .and_then(|o| o.description.clone())
            .unwrap_or_else(|| self.description.clone());
        if let Some(extra) = over.and_then(|o| o.append.as_deref()) {
            if !text.is_empty() {
                text.push_str("\n\n");
            }
            text.push_str(extra);
        }
        text
    }

    pub fn is_dangerous(&self) -> bool {
        self.danger == Danger::Dangerous
    }
}

/// Resource limits for the processes of a tool; `None` takes the engine's default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Limits {
    /// Bytes kept of each of stdout and stderr (head and tail).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_bytes: Option<u64>,
    /// Address space of each process (RLIMIT_AS).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    /// Processes the call may have at once (pids cgroup where available, else RLIMIT_NPROC).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub processes: Option<u64>,
    /// Largest file a process may write (RLIMIT_FSIZE).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_size_bytes: Option<u64>,
    /// CPU time of each process (RLIMIT_CPU).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_seconds: Option<u64>,
}

impl Limits {
    pub const KEYS: [&'static str; 5] = [
        "output_bytes",
        "memory_bytes",
        "processes",
        "file_size_bytes",
        "cpu_seconds",
    ];

    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// `self`, with each limit it leaves open taken from `fallback`.
    pub fn or(self, fallback: Limits) -> Limits {
        Limits {
            output_bytes: self.output_bytes.or(fallback.output_bytes),
            memory_bytes: self.memory_bytes.or(fallback.memory_bytes),
            processes: self.processes.or(fallback.processes),
            file_size_bytes: self.file_size_bytes.or(fallback.file_size_bytes),
            cpu_seconds: self.cpu_seconds.or(fallback.cpu_seconds),
        }
    }
}

/// How a command tool's stdout is returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputMode {
    /// `{"stdout", "stderr", "exit_code"}`.
    #[default]
    Text,
    /// stdout parsed as one JSON value.
    Json,
}

impl OutputMode {
    fn is_text(&self) -> bool {
        *self == Self::Text
    }
}

/// Whether secret values are kept or replaced by [`REDACTED`] when a tool is serialized.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Secrets {
    Redact,
    Keep,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_true(b: &bool) -> bool {
    *b
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Danger {
    #[default]
    Safe,
    Dangerous,
}

/// Behaviour hints shown to clients (MCP tool annotations).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Annotations {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_world: Option<bool>,
}

impl Annotations {
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// The marker inserted before the first positional value of a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum EndOfOptions {
    #[serde(rename = "--")]
    DoubleDash,
    #[serde(rename = "--end-of-options")]
    EndOfOptions,
}

impl EndOfOptions {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::DoubleDash => "--",
            Self::EndOfOptions => "--end-of-options",
        }
    }
}

/// How a tool runs (SPEC §5). Exactly one per tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Executor {
    /// `command: [exe, fixed args...]`, run directly, never through a shell.
    Command(crate::command::Command),
    /// A script run by an interpreter with the arguments as JSON on stdin.
    Script(Script),
    /// A tool implemented inside toolsmith (see [`crate::builtin`]).
    Builtin(String),
    /// A tool of an upstream MCP server, called through toolsmith (SPEC §11).
    Mcp(McpTarget),
    /// One HTTP request built from the arguments (SPEC §12).
    Http(crate::http::HttpCall),
}

impl Executor {
    /// The program a process of it starts, as written: a command's first word, a script's
    /// interpreter (its first word); `None` for the kinds that start no process.
    pub fn program(&self) -> Option<&str> {
        match self {
            Self::Command(c) => c.argv.first().map(String::as_str),
            Self::Script(s) => s.interpreter.split_whitespace().next(),
            _ => None,
        }
    }

    /// The upstream tool an `mcp` tool calls; `None` for the other kinds. What federation
    /// needs to know of a tool outside the kind's own modules.
    pub fn upstream(&self) -> Option<&McpTarget> {
        match self {
            Self::Mcp(target) => Some(target),
            _ => None,
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Self::Command(_) => "command",
            Self::Script(_) => "script",
            Self::Builtin(_) => "builtin",
            Self::Mcp(_) => "mcp",
            Self::Http(_) => "http",
        }
    }
}

/// Which upstream tool an `mcp` tool calls.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct McpTarget {
    /// The upstream server's name (`mcp_servers[].name`).
    pub server: String,
    /// The tool's name as the upstream lists it.
    pub tool: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Script {
    /// `python3` unless the catalog names another (`node`, `bash`, a path).
    pub interpreter: String,
    /// The script's text; a `path:` in the catalog is read at load time.
    pub source: String,
    /// Run in the warm Python runtime (a resident interpreter forked per call) instead of a
    /// fresh interpreter: `Some(true)` always, `Some(false)` never, `None` (not said) as the
    /// engine's default — warm for Python scripts. `true` is for Python scripts only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warm: Option<bool>,
}

/// The output formats a tool can be rendered in (SPEC §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum Format {
    #[serde(rename = "openai")]
    Openai,
    #[serde(rename = "openai-responses")]
    OpenaiResponses,
    #[serde(rename = "anthropic")]
    Anthropic,
    #[serde(rename = "gemini")]
    Gemini,
    #[serde(rename = "mcp")]
    Mcp,
    #[serde(rename = "xml")]
    Xml,
}

impl Format {
    pub const ALL: [Format; 6] = [
        Self::Openai,
        Self::OpenaiResponses,
        Self::Anthropic,
        Self::Gemini,
        Self::Mcp,
        Self::Xml,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Openai => "openai",
            Self::OpenaiResponses => "openai-responses",
            Self::Anthropic => "anthropic",
            Self::Gemini => "gemini",
            Self::Mcp => "mcp",
            Self::Xml => "xml",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.as_str() == s)
    }

    pub fn names() -> String {
        Self::ALL.map(Self::as_str).join(", ")
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A per-format change to how a tool is presented (seed 002's custom formatter).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct FormatOverride {
    /// Replaces the description for this format.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Appended to the description (after a blank line) for this format.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub append: Option<String>,
}

/// A parameter's type (SPEC §3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ParamType {
    #[default]
    String,
    Integer,
    Number,
    Boolean,
    Enum,
    Array,
    Object,
}

impl ParamType {
    pub const NAMES: [&'static str; 7] = [
        "string", "integer", "number", "boolean", "enum", "array", "object",
    ];

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "string" => Self::String,
            "integer" => Self::Integer,
            "number" => Self::Number,
            "boolean" => Self::Boolean,
            "enum" => Self::Enum,
            "array" => Self::Array,
            "object" => Self::Object,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// One parameter of a tool, an array's items, an object's property, or a config field.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Parameter {
    /// Empty for an array's `items`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(rename = "type")]
    pub ty: ParamType,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "is_true")]
    pub required: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    #[serde(skip_serializing_if = "is_false")]
    pub nullable: bool,
    /// The allowed values of an `enum`: all strings or all integers.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub items: Option<Box<Parameter>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub properties: Vec<Parameter>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub additional_properties: Option<bool>,
    #[serde(flatten)]
    pub constraints: Constraints,
    /// A config field's environment variable (the upper-cased name when not given): how
    /// its value reaches a command, a script or a stdio server. Where a tool's parameter
    /// goes is its executor's (`Command::places`, `HttpCall::places`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env_name: Option<String>,
    #[serde(skip_serializing_if = "is_false")]
    pub secret: bool,
    /// A string naming a path inside the workspace: relative, without `..`, and (checked by
    /// the engine before a command runs) not leaving the workspace through a symlink.
    #[serde(skip_serializing_if = "is_false")]
    pub workspace_path: bool,
}

impl Parameter {
    /// The enum's values are integers (rather than strings).
    pub fn is_integer_enum(&self) -> bool {
        self.ty == ParamType::Enum && self.values.first().is_some_and(Value::is_i64)
    }

    /// A short human/model-readable type: `integer`, `array of string`, `"a" | "b"`.
    pub fn type_summary(&self) -> String {
        let base = match self.ty {
            ParamType::Array => match &self.items {
                Some(items) => format!("array of {}", items.type_summary()),
                None => "array".into(),
            },
            ParamType::Enum => self
                .values
                .iter()
                .map(Value::to_string)
                .collect::<Vec<_>>()
                .join(" | "),
            other => other.as_str().into(),
        };
        if self.nullable {
            format!("{base} or null")
        } else {
            base
        }
    }
}

/// Value constraints; each applies to the types named in its doc.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Constraints {
    /// string
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u64>,
    /// string
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u64>,
    /// string (ECMA-262 regular expression)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// string (date-time, date, time, email, uri, uuid, ipv4, ipv6, hostname, ...)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// integer, number
    #[serde(skip_serializing_if = "Option::is_none")]
    pub minimum: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maximum: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exclusive_minimum: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exclusive_maximum: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub multiple_of: Option<Number>,
    /// array
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    #[serde(skip_serializing_if = "is_false")]
    pub unique_items: bool,
}

pub use crate::place::ArrayStyle;

/// Upper-cases a parameter name into an environment variable name.
pub fn default_env_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
}
