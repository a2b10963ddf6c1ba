//! Catalog files (SPEC §2.1): YAML or JSON in, checked [`Tool`]s out.
//!
//! The loader reports every problem at once, each with its file, its path inside the file
//! (`tools[0].parameters[1].type`) and a plain reason. It does no IO itself: files and
//! environment variables come through a [`CatalogSource`], so the same code serves the CLI,
//! the registry and tests.

mod env;
mod fields;
mod param;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;

use serde_json::{Map, Value};

pub(crate) use fields::Errs;
use fields::{Fields, join};
pub use param::FORMATS;
pub(crate) use param::{Place, parse_list};

use crate::builtin;
use crate::model::{
    Annotations, Danger, EndOfOptions, Executor, Format, FormatOverride, InjectAs, Limits,
    NameRule, OutputMode, Parameter, Script, Tool, ToolName,
};
use crate::pipeline::{ParamSet, compile_schema};
use crate::render::portable_name;

/// The default timeout of a tool, in milliseconds (SPEC §2).
pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;
/// The longest timeout a tool may declare: one day.
pub const MAX_TIMEOUT_MS: u64 = 86_400_000;

/// Where the loader reads files and environment variables from.
pub trait CatalogSource {
    /// The text of a file. `path` is relative to the entry catalog's folder, uses `/`, and
    /// has no `..` or leading `/` (the loader refuses those before asking).
    fn read(&self, path: &str) -> Result<String, String>;
    /// An environment variable, for `config` values written as `"${NAME}"`.
    fn var(&self, name: &str) -> Option<String>;
}

/// One problem in a catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogError {
    pub file: String,
    /// Where in the file: `tools[0].parameters[1].type`; empty for the whole file.
    pub path: String,
    pub message: String,
}

impl fmt::Display for CatalogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}: {}: {}", self.file, self.path, self.message)
        }
    }
}

/// Every problem found in a catalog, in file order.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct CatalogErrors(pub Vec<CatalogError>);

impl fmt::Display for CatalogErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0.len();
        writeln!(
            f,
            "{n} problem{} in the catalog:",
            if n == 1 { "" } else { "s" }
        )?;
        for e in &self.0 {
            writeln!(f, "  {e}")?;
        }
        Ok(())
    }
}

/// A loaded catalog: its tools in file order (imports after the importing file's own tools).
#[derive(Debug, Clone, PartialEq)]
pub struct Catalog {
    pub tools: Vec<Tool>,
    /// Every file read, the entry first.
    pub files: Vec<String>,
}

impl Catalog {
    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|t| t.name.as_str() == name)
    }
}

/// Loads the catalog file `entry` and everything it imports.
pub fn load(entry: &str, src: &dyn CatalogSource) -> Result<Catalog, CatalogErrors> {
    let mut loader = Loader {
        src,
        errors: Vec::new(),
        tools: Vec::new(),
        names: Vec::new(),
        files: Vec::new(),
    };
    let entry = entry.replace('\\', "/");
    loader.file(&entry, &Defaults::default(), &mut Vec::new());
    loader.check_names();
    if loader.errors.is_empty() {
        Ok(Catalog {
            tools: loader.tools,
            files: loader.files,
        })
    } else {
        Err(CatalogErrors(loader.errors))
    }
}

/// Reads one tool definition given as a JSON value (the registry's and the REST API's way
/// in). Script tools must carry their `source` inline; imports do not apply.
pub fn parse_tool(value: &Value, src: &dyn CatalogSource) -> Result<Tool, CatalogErrors> {
    let mut e = Errs::new("tool");
    let mut loader = Loader {
        src,
        errors: Vec::new(),
        tools: Vec::new(),
        names: Vec::new(),
        files: Vec::new(),
    };
    let tool = loader.tool(value, "", "", &Defaults::default(), &mut e);
    match tool {
        Some(t) if e.list.is_empty() => Ok(t),
        _ => Err(CatalogErrors(e.list)),
    }
}

/// Per-file defaults; an imported file without its own inherits its importer's.
#[derive(Debug, Clone, Default)]
struct Defaults {
    timeout_ms: Option<u64>,
    limits: Limits,
    env_allowlist: Vec<String>,
    tool_names: NameRule,
}

struct Loader<'s> {
    src: &'s dyn CatalogSource,
    errors: Vec<CatalogError>,
    tools: Vec<Tool>,
    /// Every valid tool name with the file and path it was declared at, including tools with
    /// other problems, so duplicates are found in one pass.
    names: Vec<(String, String, String)>,
    files: Vec<String>,
}

const TOP_KEYS: &[&str] = &["tools", "defaults", "imports"];
const DEFAULT_KEYS: &[&str] = &["timeout_ms", "env_allowlist", "tool_names", "limits"];
const TOOL_KEYS: &[&str] = &[
    "name",
    "title",
    "description",
    "danger",
    "annotations",
    "timeout_ms",
    "tags",
    "enabled",
    "strict_arguments",
    "end_of_options",
    "env_allowlist",
    "parameters",
    "config_schema",
    "config",
    "output_schema",
    "formats",
    "command",
    "script",
    "builtin",
    "executor",
    "env",
    "working_dir",
    "max_concurrency",
    "limits",
    "output",
];
const EXECUTORS: [&str; 3] = ["command", "script", "builtin"];

impl Loader<'_> {
    fn file(&mut self, rel: &str, inherited: &Defaults, stack: &mut Vec<String>) {
        let mut e = Errs::new(rel);
        if stack.iter().any(|f| f == rel) {
            let cycle = [stack.as_slice(), &[rel.to_owned()]].concat().join(" → ");
            let importer = stack.last().cloned().unwrap_or_default();
            self.errors.push(CatalogError {
                file: importer,
                path: "imports".into(),
                message: format!("import cycle: {cycle}"),
            });
            return;
        }
        if self.files.iter().any(|f| f == rel) {
            return; // imported twice along different paths: its tools are already in
        }
        self.files.push(rel.to_owned());
        let text = match self.src.read(rel) {
            Ok(t) => t,
            Err(msg) => {
                e.push("", format!("cannot read the file: {msg}"));
                self.errors.append(&mut e.list);
                return;
            }
        };
        let doc = match parse_document(rel, &text) {
            Ok(v) => v,
            Err(msg) => {
                e.push("", msg);
                self.errors.append(&mut e.list);
                return;
            }
        };
        let Some(top) = Fields::new(&doc, "", TOP_KEYS, &mut e) else {
            self.errors.append(&mut e.list);
            return;
        };
        let defaults = match top.get("defaults") {
            Some(d) => read_defaults(d, inherited, &mut e),
            None => inherited.clone(),
        };
        match top.list("tools", &mut e) {
            Some(tools) => {
                for (i, t) in tools.iter().enumerate() {
                    let at = format!("tools[{i}]");
                    if let Some(tool) = self.tool(t, &at, rel, &defaults, &mut e) {
                        self.tools.push(tool);
                    }
                }
            }
            None if !top.has("tools") && !top.has("imports") => e.push(
                "",
                "a catalog needs `tools:` (a list of tools) or `imports:`",
            ),
            None => {}
        }
        let imports: Vec<(String, String)> = top
            .strings("imports", &mut e)
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .filter_map(|(i, p)| {
                let at = format!("imports[{i}]");
                match resolve_relative(rel, &p) {
                    Ok(path) => Some((path, at)),
                    Err(msg) => {
                        e.push(&at, msg);
                        None
                    }
                }
            })
            .collect();
        self.errors.append(&mut e.list);
        stack.push(rel.to_owned());
        for (path, _) in imports {
            self.file(&path, &defaults, stack);
        }
        stack.pop();
    }

    /// Duplicate names, and (for MCP-style names) names that collide once mapped for
    /// stricter providers.
    fn check_names(&mut self) {
        let mut seen: HashMap<&str, (&str, &str)> = HashMap::new();
        let mut mapped: HashMap<String, &str> = HashMap::new();
        for (name, file, at) in &self.names {
            let name = name.as_str();
            let mut report = |message: String| {
                self.errors.push(CatalogError {
                    file: file.clone(),
                    path: format!("{at}.name"),
                    message,
                });
            };
            if let Some((first_file, first_at)) = seen.insert(name, (file, at)) {
                report(format!(
                    "duplicate tool name {name:?} (first declared at {first_file}: {first_at})"
                ));
                continue;
            }
            let portable = portable_name(name);
            if let Some(other) = mapped.insert(portable.clone(), name) {
                report(format!(
                    "tool names {other:?} and {name:?} both become {portable:?} for providers that \
                     do not allow `.` or `-`; rename one"
                ));
            }
        }
    }

    fn tool(
        &mut self,
        v: &Value,
        at: &str,
        file: &str,
        defaults: &Defaults,
        e: &mut Errs,
    ) -> Option<Tool> {
        let f = Fields::new(v, at, TOOL_KEYS, e)?;
        let errors_before = e.list.len();

        let name = match f.string("name", e) {
            Some(n) => ToolName::new(&n, defaults.tool_names)
                .map_err(|m| e.push(&f.at("name"), m))
                .ok(),
            None => {
                if !f.has("name") {
                    e.push(&f.at("name"), "missing; every tool needs a name");
                }
                None
            }
        };
        if let Some(n) = &name {
            self.names
                .push((n.to_string(), file.to_owned(), at.to_owned()));
        }
        let executor = self.executor(&f, file, e);
        let spec = match &executor {
            Some(Executor::Builtin(b)) => builtin::spec(b),
            _ => None,
        };

        let description = match (f.string("description", e), spec) {
            (Some(d), _) if !d.trim().is_empty() => d,
            (None, Some(s)) if !f.has("description") => s.description.clone(),
            _ => {
                e.push(
                    &f.at("description"),
                    "missing or empty; describe what the tool does, for the model",
                );
                String::new()
            }
        };
        let danger = f
            .choice(
                "danger",
                "danger level",
                &["safe", "dangerous"],
                |s| match s {
                    "safe" => Some(Danger::Safe),
                    "dangerous" => Some(Danger::Dangerous),
                    _ => None,
                },
                e,
            )
            .or(spec.map(|s| s.danger))
            .unwrap_or_default();
        if let Some(s) = spec.filter(|s| s.danger == Danger::Dangerous && danger == Danger::Safe) {
            e.push(
                &f.at("danger"),
                format!(
                    "the built-in `{}` is dangerous and cannot be declared safe",
                    s.name
                ),
            );
        }
        let annotations = match f.get("annotations") {
            Some(a) => read_annotations(a, &f.at("annotations"), e),
            None => spec.map(|s| s.annotations).unwrap_or_default(),
        };
        let timeout_ms = f
            .uint("timeout_ms", e)
            .or(defaults.timeout_ms)
            .unwrap_or(DEFAULT_TIMEOUT_MS);
        if !(1..=MAX_TIMEOUT_MS).contains(&timeout_ms) {
            e.push(
                &f.at("timeout_ms"),
                format!("{timeout_ms} is outside 1..={MAX_TIMEOUT_MS} (one day)"),
            );
        }
        let tags = f.strings("tags", e).unwrap_or_default();
        for (i, t) in tags.iter().enumerate() {
            if t.trim().is_empty() || t.chars().any(char::is_whitespace) {
                e.push(
                    &format!("{}[{i}]", f.at("tags")),
                    format!("invalid tag {t:?}: tags are single words"),
                );
            }
        }
        let mut env_allowlist = defaults.env_allowlist.clone();
        for name in f.strings("env_allowlist", e).unwrap_or_default() {
            if !env_allowlist.contains(&name) {
                env_allowlist.push(name);
            }
        }

        // With no usable executor, read parameters as command parameters (the most permissive)
        // so one mistake does not cascade into many.
        let is_command = matches!(executor, Some(Executor::Command(_)) | None);
        let end_of_options = f.choice(
            "end_of_options",
            "end-of-options marker",
            &["--", "--end-of-options"],
            |s| match s {
                "--" => Some(EndOfOptions::DoubleDash),
                "--end-of-options" => Some(EndOfOptions::EndOfOptions),
                _ => None,
            },
            e,
        );
        if end_of_options.is_some() && executor.is_some() && !is_command {
            e.push(
                &f.at("end_of_options"),
                "`end_of_options` applies to command tools",
            );
        }

        let place = if is_command {
            Place::CommandArgument
        } else {
            Place::JsonArgument
        };
        let declared = f
            .get("parameters")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        let parameters = match (f.list("parameters", e), spec) {
            (Some(_), Some(s)) => {
                e.push(
                    &f.at("parameters"),
                    format!(
                        "the built-in `{}` defines its own parameters; remove `parameters`",
                        s.name
                    ),
                );
                Vec::new()
            }
            (Some(list), None) => parse_list(list, &f.at("parameters"), place, e),
            (None, Some(s)) => s.parameters.clone(),
            (None, None) => Vec::new(),
        };
        // Layout rules name parameters by index, which only holds when all of them parsed.
        if parameters.len() == declared {
            check_injection_layout(&parameters, end_of_options, &f, e);
        }
        if matches!(executor, Some(Executor::Script(_)))
            && let Some(i) = parameters.iter().position(|p| p.name == "config")
        {
            e.push(
                &format!("{}[{i}].name", f.at("parameters")),
                "script tools reserve `config` for their config values; rename the parameter",
            );
        }

        let config_schema = match (f.list("config_schema", e), spec) {
            (Some(_), Some(s)) => {
                e.push(
                    &f.at("config_schema"),
                    format!(
                        "the built-in `{}` defines its own config_schema; remove it",
                        s.name
                    ),
                );
                Vec::new()
            }
            (Some(list), None) => parse_list(list, &f.at("config_schema"), Place::Config, e),
            (None, Some(s)) => s.config_schema.clone(),
            (None, None) => Vec::new(),
        };
        let config = self.config(&f, &config_schema, e);

        let output_schema = f.get("output_schema").cloned();
        if let Some(schema) = &output_schema {
            if schema.get("type").and_then(Value::as_str) != Some("object") {
                e.push(
                    &f.at("output_schema"),
                    "an output schema describes a JSON object: it needs `type: object`",
                );
            } else if let Err(msg) = compile_schema(schema) {
                e.push(
                    &f.at("output_schema"),
                    format!("not a valid JSON Schema: {msg}"),
                );
            }
        }
        let formats = read_formats(&f, e);
        let process = matches!(
            executor,
            Some(Executor::Command(_) | Executor::Script(_)) | None
        );
        for key in ["env", "working_dir", "limits", "env_allowlist"] {
            if f.has(key) && !process {
                e.push(&f.at(key), format!("`{key}` applies to command and script tools; built-ins run inside toolsmith"));
            }
        }
        let env = read_env(&f, e);
        if parameters.len() == declared {
            env::check_targets(&parameters, &config_schema, &env, &env_allowlist, &f, e);
        }
        let working_dir = f.string("working_dir", e);
        if let Some(dir) = &working_dir
            && (dir.starts_with('/') || dir.split('/').any(|s| s == ".."))
        {
            e.push(
                &f.at("working_dir"),
                format!("{dir:?} must be relative to the workspace, without `..`"),
            );
        }
        let max_concurrency = f.uint("max_concurrency", e);
        if max_concurrency == Some(0) || max_concurrency.is_some_and(|m| m > u64::from(u32::MAX)) {
            e.push(&f.at("max_concurrency"), "must be at least 1");
        }
        let limits = match f.get("limits") {
            Some(v) => read_limits(v, &f.at("limits"), e),
            None => Limits::default(),
        }
        .or(defaults.limits);
        let output = f
            .choice(
                "output",
                "output mode",
                &["text", "json"],
                |s| match s {
                    "text" => Some(OutputMode::Text),
                    "json" => Some(OutputMode::Json),
                    _ => None,
                },
                e,
            )
            .unwrap_or_default();
        if f.has("output") && !matches!(executor, Some(Executor::Command(_)) | None) {
            e.push(
                &f.at("output"),
                "`output` applies to command tools (scripts always return JSON)",
            );
        }

        if e.list.len() != errors_before {
            return None;
        }
        Some(Tool {
            name: name?,
            title: f.string("title", e),
            description,
            danger,
            annotations,
            timeout_ms,
            tags,
            enabled: f.boolean("enabled", e).unwrap_or(true),
            strict_arguments: f.boolean("strict_arguments", e).unwrap_or(false),
            end_of_options,
            // Process settings from `defaults` do not attach to built-ins.
            env_allowlist: if process { env_allowlist } else { Vec::new() },
            env,
            working_dir,
            max_concurrency: max_concurrency.and_then(|m| u32::try_from(m).ok()),
            limits: if process { limits } else { Limits::default() },
            output,
            parameters,
            config_schema,
            config,
            output_schema,
            formats,
            executor: executor?,
        })
    }

    fn executor(&self, f: &Fields<'_>, file: &str, e: &mut Errs) -> Option<Executor> {
        let mut given: Vec<&str> = EXECUTORS.into_iter().filter(|k| f.has(k)).collect();
        let rich = f.get("executor");
        if rich.is_some() {
            given.push("executor");
        }
        match given.as_slice() {
            [] => {
                e.push(
                    &f.path,
                    "no executor: give exactly one of `command`, `script` or `builtin`",
                );
                return None;
            }
            [_] => {}
            many => {
                e.push(
                    &f.path,
                    format!(
                        "more than one executor ({}): give exactly one",
                        many.join(", ")
                    ),
                );
                return None;
            }
        }
        // The rich form `executor: {kind: command, ...}` names the same fields.
        let (fields, kind) = match rich {
            Some(v) => {
                let ef = Fields::new(
                    v,
                    &f.at("executor"),
                    &[
                        "kind",
                        "command",
                        "interpreter",
                        "source",
                        "path",
                        "warm",
                        "name",
                    ],
                    e,
                )?;
                let kind = ef.choice(
                    "kind",
                    "executor kind",
                    &EXECUTORS,
                    |s| EXECUTORS.contains(&s).then(|| s.to_owned()),
                    e,
                )?;
                (ef, kind)
            }
            None => {
                let kind = given[0].to_owned();
                let v = f.get(&kind)?;
                let wrapped = match kind.as_str() {
                    "script" => v.clone(),
                    _ => serde_json::json!({ kind.clone(): v }),
                };
                return self.executor_from(&kind, &wrapped, &f.at(&kind), file, e);
            }
        };
        let mut map = Map::new();
        for key in ["command", "interpreter", "source", "path", "warm"] {
            if let Some(v) = fields.get(key) {
                map.insert(key.into(), v.clone());
            }
        }
        if let Some(v) = fields.get("name") {
            map.insert("builtin".into(), v.clone());
        }
        self.executor_from(&kind, &Value::Object(map), &fields.path, file, e)
    }

    fn executor_from(
        &self,
        kind: &str,
        v: &Value,
        at: &str,
        file: &str,
        e: &mut Errs,
    ) -> Option<Executor> {
        match kind {
            "command" => {
                let list = v.get("command");
                let Some(Value::Array(items)) = list else {
                    e.push(at, "`command` is a list: the program, then fixed arguments, e.g. [git, status]");
                    return None;
                };
                if items.is_empty() {
                    e.push(at, "`command` is empty: name the program to run");
                    return None;
                }
                let mut argv = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    match item {
                        Value::String(s) if !s.is_empty() && !s.contains('\0') => {
                            argv.push(s.clone())
                        }
                        // YAML reads `[true]` or `[7z]`-like words as scalars; a command word is text.
                        Value::Number(_) | Value::Bool(_) => argv.push(item.to_string()),
                        other => e.push(
                            &format!("{at}[{i}]"),
                            format!("expected a non-empty string, got {other}"),
                        ),
                    }
                }
                (argv.len() == items.len()).then_some(Executor::Command(argv))
            }
            "script" => {
                let f = Fields::new(v, at, &["interpreter", "source", "path", "warm"], e)?;
                let interpreter = f
                    .string("interpreter", e)
                    .unwrap_or_else(|| "python3".into());
                if interpreter.trim().is_empty() {
                    e.push(&f.at("interpreter"), "empty interpreter");
                }
                let source = match (f.string("source", e), f.string("path", e)) {
                    (Some(_), Some(_)) => {
                        e.push(at, "give either `source` or `path`, not both");
                        None
                    }
                    (Some(s), None) => Some(s),
                    (None, Some(p)) => match resolve_relative(file, &p) {
                        Ok(path) => self
                            .src
                            .read(&path)
                            .map_err(|m| {
                                e.push(&f.at("path"), format!("cannot read script {path:?}: {m}"))
                            })
                            .ok(),
                        Err(m) => {
                            e.push(&f.at("path"), m);
                            None
                        }
                    },
                    (None, None) => {
                        e.push(at, "a script needs `source` (the code) or `path` (a file beside the catalog)");
                        None
                    }
                };
                let warm = match f.get("warm") {
                    None => None,
                    Some(Value::Bool(false)) => Some(false),
                    Some(Value::Bool(true)) => {
                        let base = interpreter.rsplit('/').next().unwrap_or_default();
                        if !base.starts_with("python") {
                            e.push(
                                &f.at("warm"),
                                format!(
                                    "a warm runtime is for Python scripts, not {interpreter:?}"
                                ),
                            );
                        }
                        Some(true)
                    }
                    Some(other) => {
                        e.push(
                            &f.at("warm"),
                            format!("expected true or false, got {other}"),
                        );
                        None
                    }
                };
                Some(Executor::Script(Script {
                    interpreter,
                    source: source?,
                    warm,
                }))
            }
            _ => {
                let name = match v.get("builtin") {
                    Some(Value::String(s)) => s.clone(),
                    _ => {
                        e.push(at, "`builtin` names a built-in tool");
                        return None;
                    }
                };
                if builtin::spec(&name).is_none() {
                    e.push(
                        at,
                        format!(
                            "unknown built-in {name:?} (expected one of {})",
                            builtin::names().join(", ")
                        ),
                    );
                    return None;
                }
                Some(Executor::Builtin(name))
            }
        }
    }

    /// Config values: `"${NAME}"` read from the environment, then coerced, defaulted and
    /// validated against the config schema.
    fn config(&self, f: &Fields<'_>, schema: &[Parameter], e: &mut Errs) -> Map<String, Value> {
        let at = f.at("config");
        let mut values = match f.get("config") {
            None => Map::new(),
            Some(Value::Object(m)) => m.clone(),
            Some(_) => {
                e.push(&at, "expected a mapping of config values");
                return Map::new();
            }
        };
        let errors_before = e.list.len();
        for (key, v) in values.iter_mut() {
            let Some(name) = v
                .as_str()
                .and_then(|s| s.strip_prefix("${"))
                .and_then(|s| s.strip_suffix('}'))
            else {
                continue;
            };
            match self.src.var(name) {
                Some(val) => *v = Value::String(val),
                None => e.push(
                    &join(&at, key),
                    format!("environment variable {name:?} is not set"),
                ),
            }
        }
        if e.list.len() != errors_before || (schema.is_empty() && values.is_empty()) {
            return values;
        }
        let set = match ParamSet::new(schema).map(|s| s.noun("config field")) {
            Ok(s) => s,
            Err(m) => {
                e.push(
                    &f.at("config_schema"),
                    format!("cannot build the config schema: {m}"),
                );
                return values;
            }
        };
        match set.prepare(schema, values, true) {
            Ok(p) => p.arguments,
            Err(problems) => {
                for p in problems {
                    e.push(&format!("{at}{}", p.pointer.replace('/', ".")), p.message);
                }
                Map::new()
            }
        }
    }
}

/// YAML, or JSON for `.json` files. Duplicate keys and non-finite numbers are errors (a JSON
/// value could not hold them without losing data); YAML's own limits on aliases and depth
/// apply.
fn parse_document(file: &str, text: &str) -> Result<Value, String> {
    let is_json = file.ends_with(".json");
    if is_json {
        // serde_json gives the exact position of JSON syntax errors…
        serde_json::from_str::<serde::de::IgnoredAny>(text)
            .map_err(|e| format!("invalid JSON: {e}"))?;
    }
    // …and the YAML reader (JSON is YAML) refuses duplicate keys, which JSON readers drop.
    let kind = if is_json { "JSON" } else { "YAML" };
    let yaml: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(text).map_err(|e| format!("invalid {kind}: {e}"))?;
    if let Some(at) = non_finite(&yaml, String::new()) {
        return Err(format!("{at}: infinite or NaN numbers are not allowed"));
    }
    let doc = serde_json::to_value(&yaml)
        .map_err(|e| format!("invalid {kind}: {e} (mapping keys must be text)"))?;
    if doc.is_null() {
        return Err("the file is empty; a catalog starts with `tools:`".into());
    }
    Ok(doc)
}

fn non_finite(v: &serde_yaml_ng::Value, at: String) -> Option<String> {
    use serde_yaml_ng::Value as Y;
    match v {
        Y::Number(n) if n.as_f64().is_some_and(|f| !f.is_finite()) => Some(at),
        Y::Sequence(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, x)| non_finite(x, format!("{at}[{i}]"))),
        Y::Mapping(map) => map.iter().find_map(|(k, x)| {
            let key = k.as_str().map_or_else(|| format!("{k:?}"), str::to_owned);
            non_finite(x, join(&at, &key))
        }),
        Y::Tagged(t) => non_finite(&t.value, at),
        _ => None,
    }
}

/// `rel` resolved against the folder of `from`; absolute paths and `..` are refused so
/// everything stays inside the entry catalog's folder.
fn resolve_relative(from: &str, rel: &str) -> Result<String, String> {
    if rel.starts_with('/') || rel.starts_with('\\') || rel.get(1..2) == Some(":") {
        return Err(format!(
            "{rel:?} is absolute; paths are relative to the catalog's folder"
        ));
    }
    let mut parts: Vec<&str> = match from.rfind('/') {
        Some(i) => from[..i]
            .split('/')
            .filter(|s| !s.is_empty() && *s != ".")
            .collect(),
        None => Vec::new(),
    };
    for seg in rel.split(['/', '\\']) {
        match seg {
            "" | "." => {}
            ".." => {
                return Err(format!(
                    "{rel:?} leaves the catalog's folder (`..` is not allowed)"
                ));
            }
            s => parts.push(s),
        }
    }
    if parts.is_empty() {
        return Err(format!("{rel:?} names no file"));
    }
    Ok(parts.join("/"))
}

fn read_defaults(v: &Value, inherited: &Defaults, e: &mut Errs) -> Defaults {
    let Some(f) = Fields::new(v, "defaults", DEFAULT_KEYS, e) else {
        return inherited.clone();
    };
    Defaults {
        timeout_ms: f.uint("timeout_ms", e).or(inherited.timeout_ms),
        env_allowlist: f
            .strings("env_allowlist", e)
            .unwrap_or_else(|| inherited.env_allowlist.clone()),
        tool_names: f
            .choice(
                "tool_names",
                "naming rule",
                &NameRule::ALL,
                NameRule::parse,
                e,
            )
            .unwrap_or(inherited.tool_names),
        limits: match f.get("limits") {
            Some(v) => read_limits(v, &f.at("limits"), e).or(inherited.limits),
            None => inherited.limits,
        },
    }
}

fn read_limits(v: &Value, at: &str, e: &mut Errs) -> Limits {
    let Some(f) = Fields::new(v, at, &Limits::KEYS, e) else {
        return Limits::default();
    };
    let mut read = |key: &str| {
        let n = f.uint(key, e);
        if n == Some(0) {
            e.push(&f.at(key), "a limit must be at least 1");
        }
        n
    };
    Limits {
        output_bytes: read("output_bytes"),
        memory_bytes: read("memory_bytes"),
        processes: read("processes"),
        file_size_bytes: read("file_size_bytes"),
        cpu_seconds: read("cpu_seconds"),
    }
}

fn read_env(f: &Fields<'_>, e: &mut Errs) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Some(v) = f.get("env") else { return out };
    let Value::Object(map) = v else {
        e.push(
            &f.at("env"),
            "expected a mapping of variable names to values",
        );
        return out;
    };
    for (name, value) in map {
        let at = join(&f.at("env"), name);
        if !fields::is_env_name(name) {
            e.push(&at, format!("invalid environment variable name {name:?}: use letters, digits and `_`, not starting with a digit"));
        }
        let text = match value {
            Value::String(s) => s.clone(),
            Value::Number(_) | Value::Bool(_) => value.to_string(),
            other => {
                e.push(
                    &at,
                    format!("expected text, got {}", crate::pipeline::type_phrase(other)),
                );
                continue;
            }
        };
        if text.contains('\0') {
            e.push(&at, "contains a NUL byte");
        }
        out.insert(name.clone(), text);
    }
    out
}

fn read_annotations(v: &Value, at: &str, e: &mut Errs) -> Annotations {
    let Some(f) = Fields::new(v, at, &["read_only", "idempotent", "open_world"], e) else {
        return Annotations::default();
    };
    Annotations {
        read_only: f.boolean("read_only", e),
        idempotent: f.boolean("idempotent", e),
        open_world: f.boolean("open_world", e),
    }
}

fn read_formats(f: &Fields<'_>, e: &mut Errs) -> BTreeMap<Format, FormatOverride> {
    let mut out = BTreeMap::new();
    let Some(v) = f.get("formats") else {
        return out;
    };
    let names: Vec<&str> = Format::ALL.iter().map(|x| x.as_str()).collect();
    let Some(ff) = Fields::new(v, &f.at("formats"), &names, e) else {
        return out;
    };
    for format in Format::ALL {
        let Some(o) = ff.get(format.as_str()) else {
            continue;
        };
        let Some(of) = Fields::new(o, &ff.at(format.as_str()), &["description", "append"], e)
        else {
            continue;
        };
        let over = FormatOverride {
            description: of.string("description", e),
            append: of.string("append", e),
        };
        if over
            .description
            .as_deref()
            .is_some_and(|d| d.trim().is_empty())
        {
            e.push(
                &of.at("description"),
                "an override description cannot be empty",
            );
        }
        out.insert(format, over);
    }
    out
}

/// Tool-level injection rules: one stdin parameter at most, unique env names, and with an
/// end-of-options marker all options declared before the first argument.
fn check_injection_layout(
    params: &[Parameter],
    eoo: Option<EndOfOptions>,
    f: &Fields<'_>,
    e: &mut Errs,
) {
    let at = |i: usize| format!("{}[{i}]", f.at("parameters"));
    let stdin: Vec<usize> = (0..params.len())
        .filter(|&i| params[i].injection.inject_as == InjectAs::Stdin)
        .collect();
    if stdin.len() > 1 {
        e.push(
            &format!("{}.inject_as", at(stdin[1])),
            format!(
                "a tool has one stdin; {:?} already uses it",
                params[stdin[0]].name
            ),
        );
    }
    let mut env_names = HashSet::new();
    for (i, p) in params
        .iter()
        .enumerate()
        .filter(|(_, p)| p.injection.inject_as == InjectAs::Env)
    {
        let name = p
            .injection
            .env_name
            .clone()
            .unwrap_or_else(|| crate::model::default_env_name(&p.name));
        if !env_names.insert(name.clone()) {
            e.push(
                &format!("{}.env_name", at(i)),
                format!("environment variable {name:?} is set by two parameters"),
            );
        }
    }
    if eoo.is_some() {
        let first_arg = params
            .iter()
            .position(|p| p.injection.inject_as == InjectAs::Argument);
        if let Some(first) = first_arg {
            for (i, p) in params.iter().enumerate().skip(first) {
                if p.injection.inject_as == InjectAs::Option {
                    e.push(&format!("{}.inject_as", at(i)), format!(
                        "with `end_of_options`, options come before arguments: move {:?} above {:?}",
                        p.name, params[first].name
                    ));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::resolve_relative;

    #[test]
    fn relative_paths_stay_inside() {
        assert_eq!(
            resolve_relative("catalog.yaml", "more/x.yaml").as_deref(),
            Ok("more/x.yaml")
        );
        assert_eq!(
            resolve_relative("sub/a.yaml", "./b.yaml").as_deref(),
            Ok("sub/b.yaml")
        );
        for bad in [
            "../x.yaml",
            "/etc/passwd",
            "a/../../x",
            "C:/x",
            "\\\\server\\x",
            "",
        ] {
            assert!(resolve_relative("catalog.yaml", bad).is_err(), "{bad}");
        }
    }
}
