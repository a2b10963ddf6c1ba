//! Catalog files (SPEC §2.1): YAML or JSON in, checked [`Tool`]s out.
//!
//! The loader reports every problem at once, each with its file, its path inside the file
//! (`tools[0].parameters[1].type`) and a plain reason. It does no IO itself: files and
//! environment variables come through a [`CatalogSource`], so the same code serves the CLI,
//! the registry and tests.

mod config;
mod defaults;
mod env;
mod executor;
mod files;
mod openapi;
mod sandbox;
mod servers;
mod settings;
mod toolsets;
mod variables;

use defaults::read_limits;
use executor::check_injection_layout;
use settings::{read_annotations, read_env, read_formats};

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::{Map, Value};

pub use crate::form::param::FORMATS;
use crate::form::param::{Place, Placement, parse_list, parse_list_placed};
pub use crate::form::{CatalogError, CatalogErrors};
use crate::form::{Errs, Fields, join};
pub use servers::{parse_server, parse_stored_server};
pub use toolsets::parse_toolset;

use crate::builtin;
use crate::model::{
    Annotations, Danger, EndOfOptions, Executor, Format, FormatOverride, Limits, McpTarget,
    NameRule, OutputMode, Parameter, Script, Tool, ToolName,
};
use crate::pipeline::ParamSet;
use crate::render::portable_name;
use crate::schema::{compile_schema, compile_upstream_schema};
use crate::upstream::{
    McpServer, OAuth, OnChange, OnSuspicious, TokenExchange, ToolOverride, Transport,
};

/// The default timeout of a tool, in milliseconds (SPEC §2).
pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;
/// The longest timeout a tool may declare: one day.
pub const MAX_TIMEOUT_MS: u64 = 86_400_000;

/// Where the loader reads files and environment variables from.
pub trait CatalogSource {
    /// The text of a file. `path` is relative to the entry catalog's folder, uses `/`, and
    /// has no `..` or leading `/` (the loader refuses those before asking).
    fn read(&self, path: &str) -> Result<String, ReadError>;
    /// An environment variable, for `config` values written as `"${NAME}"`.
    fn var(&self, name: &str) -> Option<String>;
}

/// Why a [`CatalogSource`] did not give a file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// The source reads no files: a definition sent to the API, a stored one, an imported
    /// document. `why` says what such a definition does instead.
    #[error("{path}: {why}")]
    NoFiles { path: String, why: &'static str },
    /// A file whose real path (its symlinks followed) leaves the catalog's folder.
    #[error("{path} resolves to {real}, outside the catalog's folder {root}")]
    Outside {
        path: String,
        real: String,
        root: String,
    },
    #[error("{path}: {error}")]
    Io { path: String, error: String },
}

/// A catalog given as text (benches, tests, a definition made in memory): every file the
/// loader reads gives this text, and no environment variable is set.
pub struct TextSource(pub String);

impl CatalogSource for TextSource {
    fn read(&self, _: &str) -> Result<String, ReadError> {
        Ok(self.0.clone())
    }
    fn var(&self, _: &str) -> Option<String> {
        None
    }
}

/// A loaded catalog: its tools in file order (imports after the importing file's own tools).
#[derive(Debug, Clone, PartialEq)]
pub struct Catalog {
    pub tools: Vec<Tool>,
    /// Every file read, the entry first.
    pub files: Vec<String>,
    /// Upstream MCP servers (`mcp_servers:`), in file order.
    pub servers: Vec<McpServer>,
    /// What loading left out or simplified without it being an error: operations of an
    /// `openapi:` entry skipped, and their simplifications, each with its reason.
    pub notes: Vec<String>,
    /// `openapi:` entries with `on_change: hold`: each source (`openapi:<name>`) and the
    /// names of its tools, whose changes a re-import holds for approval.
    pub holds: Vec<(String, Vec<String>)>,
    /// Every `openapi:` entry: its source (`openapi:<name>`) and the names of its tools. An
    /// import never lets one take over a tool another source made.
    pub documents: Vec<(String, Vec<String>)>,
    /// Toolsets (`toolsets:`), in file order.
    pub toolsets: Vec<crate::toolset::Toolset>,
}

impl Catalog {
    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|t| t.name.as_str() == name)
    }
}

/// Loads the catalog file `entry` and everything it imports.
pub fn load(entry: &str, src: &dyn CatalogSource) -> Result<Catalog, CatalogErrors> {
    let mut loader = Loader::new(src);
    let entry = entry.replace('\\', "/");
    loader.file(&entry, &Defaults::default(), &mut Vec::new());
    loader.check_names();
    loader.check_server_names();
    if loader.errors.is_empty() {
        Ok(Catalog {
            tools: loader.tools,
            files: loader.files,
            servers: loader.servers,
            notes: loader.notes,
            holds: loader.holds,
            documents: loader.documents,
            toolsets: loader.toolsets.into_iter().map(|(s, ..)| s).collect(),
        })
    } else {
        Err(CatalogErrors(loader.errors))
    }
}

/// Reads one tool definition given as a JSON value (the registry's and the REST API's way
/// in). Script tools must carry their `source` inline; imports do not apply.
pub fn parse_tool(value: &Value, src: &dyn CatalogSource) -> Result<Tool, CatalogErrors> {
    read_one("tool", |e| {
        Loader::new(src).tool(value, "", "", &Defaults::default(), e)
    })
}

/// One definition read alone (from the registry or a request): what `read` gives, or every
/// problem it noted (paths relative to the definition, the file named `what`).
fn read_one<T>(what: &str, read: impl FnOnce(&mut Errs) -> Option<T>) -> Result<T, CatalogErrors> {
    let mut e = Errs::new(what);
    match read(&mut e) {
        Some(t) if e.list.is_empty() => Ok(t),
        _ => Err(CatalogErrors(e.list)),
    }
}

/// A `danger:` key: `safe` or `dangerous`.
fn danger(f: &Fields<'_>, e: &mut Errs) -> Option<Danger> {
    f.choice(
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
}

/// Per-file defaults; an imported file without its own inherits its importer's.
#[derive(Debug, Clone, Default)]
struct Defaults {
    timeout_ms: Option<u64>,
    limits: Limits,
    env_allowlist: Vec<String>,
    tool_names: NameRule,
    /// `allow_hosts` of the file's http tools that do not give their own.
    http_allow_hosts: Vec<String>,
    /// `sandbox` of the file's process tools, `session_start` and stdio servers that do not
    /// give their own.
    sandbox: Option<crate::sandbox::Sandbox>,
    /// `rate_limit` of the file's tools that do not give their own.
    rate_limit: Option<crate::rate::RateLimit>,
    /// `max_result_bytes` and `scrub` of the file's tools and servers that do not give
    /// their own.
    results: crate::guard::result::ResultPolicy,
}

struct Loader<'s> {
    src: &'s dyn CatalogSource,
    errors: Vec<CatalogError>,
    tools: Vec<Tool>,
    /// Every valid tool name with the file and path it was declared at, including tools with
    /// other problems, so duplicates are found in one pass.
    names: Vec<(String, String, String)>,
    files: Vec<String>,
    servers: Vec<McpServer>,
    /// Every server name with the file and path it was declared at.
    server_names: Vec<(String, String, String)>,
    notes: Vec<String>,
    holds: Vec<(String, Vec<String>)>,
    documents: Vec<(String, Vec<String>)>,
    /// Toolsets with the file and path each was declared at.
    toolsets: Vec<(crate::toolset::Toolset, String, String)>,
    /// Lift a server's `${NAME}`s into config fields (not for a definition the registry
    /// stored, which was read when it was written).
    lift_variables: bool,
}

impl<'s> Loader<'s> {
    fn new(src: &'s dyn CatalogSource) -> Self {
        Self {
            src,
            errors: Vec::new(),
            tools: Vec::new(),
            names: Vec::new(),
            files: Vec::new(),
            servers: Vec::new(),
            server_names: Vec::new(),
            notes: Vec::new(),
            holds: Vec::new(),
            documents: Vec::new(),
            toolsets: Vec::new(),
            lift_variables: true,
        }
    }
}

const TOP_KEYS: &[&str] = &[
    "tools",
    "defaults",
    "imports",
    "mcp_servers",
    "openapi",
    "toolsets",
];
const DEFAULT_KEYS: &[&str] = &[
    "timeout_ms",
    "env_allowlist",
    "tool_names",
    "limits",
    "http_allow_hosts",
    "sandbox",
    "rate_limit",
    "max_result_bytes",
    "scrub",
];
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
    "mcp",
    "http",
    "executor",
    "input_schema",
    "env",
    "working_dir",
    "max_concurrency",
    "limits",
    "sandbox",
    "rate_limit",
    "output",
    "max_result_bytes",
    "scrub",
];
const EXECUTORS: [&str; 5] = ["command", "script", "builtin", "mcp", "http"];

impl Loader<'_> {
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
        let mut executor = self.executor(&f, file, e);
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
        let danger = danger(&f, e).or(spec.map(|s| s.danger)).unwrap_or_default();
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
        for name in env::read_allowlist(&f, e).unwrap_or_default() {
            if !env_allowlist.contains(&name) {
                env_allowlist.push(name);
            }
        }

        // With no usable executor, read parameters as command parameters (the most permissive)
        // so one mistake does not cascade into many.
        let kind = executor::declared_rules(executor.as_ref(), &f);
        let is_command = kind.command_keys;
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

        let place = kind.place;
        let declared = f
            .get("parameters")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        let (parameters, placements): (Vec<Parameter>, Vec<Placement>) =
            match (f.list("parameters", e), spec) {
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
                (Some(list), None) => parse_list_placed(list, &f.at("parameters"), place, e),
                (None, Some(s)) => s
                    .parameters
                    .iter()
                    .map(|p| (p.clone(), Placement::None))
                    .collect(),
                (None, None) => Vec::new(),
            }
            .into_iter()
            .unzip();
        // Where each parameter goes belongs to the executor. Layout rules name parameters by
        // index, which only holds when all of them parsed.
        if let Some(Executor::Command(command)) = &mut executor {
            command.places = executor::command_places(&parameters, &placements);
            if parameters.len() == declared {
                check_injection_layout(&parameters, command, end_of_options, &f, e);
            }
        }
        if let Some(reserved) = kind.reserved_parameter
            && let Some(i) = parameters.iter().position(|p| p.name == reserved)
        {
            e.push(
                &format!("{}[{i}].name", f.at("parameters")),
                format!(
                    "{} tools reserve `{reserved}` for their config values; rename the parameter",
                    kind.name
                ),
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
        if let Some(Executor::Http(call)) = &mut executor {
            call.places = executor::http_places(call, &parameters, &placements);
            if parameters.len() == declared {
                executor::settle_http(call, &parameters, &config_schema, &f, e);
            }
        }

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
        let input_schema = f.get("input_schema").cloned();
        if let Some(schema) = &input_schema {
            if !kind.raw_schema {
                e.push(
                    &f.at("input_schema"),
                    format!(
                        "`input_schema` applies to mcp tools; {} tools declare `parameters`",
                        kind.name
                    ),
                );
            } else if f.has("parameters") {
                e.push(
                    &f.at("input_schema"),
                    "give either `parameters` or `input_schema`, not both",
                );
            } else if schema.get("type").and_then(Value::as_str) != Some("object") {
                e.push(
                    &f.at("input_schema"),
                    "an input schema describes the arguments object: it needs `type: object`",
                );
            } else if let Err(msg) = compile_upstream_schema(schema) {
                e.push(
                    &f.at("input_schema"),
                    format!("not a valid JSON Schema: {msg}"),
                );
            }
        }
        let formats = read_formats(&f, e);
        let process = kind.process;
        for key in ["env", "working_dir", "limits", "env_allowlist"] {
            if f.has(key) && !process {
                e.push(&f.at(key), format!("`{key}` applies to command and script tools; built-ins run inside toolsmith"));
            }
        }
        let env = read_env(&f, e);
        if parameters.len() == declared
            && let Some(Executor::Command(command)) = &executor
        {
            env::check_targets(
                &parameters,
                command,
                &config_schema,
                &env,
                &env_allowlist,
                &f,
                e,
            );
        }
        let working_dir = settings::read_working_dir(&f, e);
        let max_concurrency = f.uint("max_concurrency", e);
        if max_concurrency == Some(0) || max_concurrency.is_some_and(|m| m > u64::from(u32::MAX)) {
            e.push(&f.at("max_concurrency"), "must be at least 1");
        }
        let limits = match f.get("limits") {
            Some(v) => read_limits(v, &f.at("limits"), e),
            None => Limits::default(),
        }
        .or(defaults.limits);
        let sandbox = sandbox::read_tool(&f, defaults, process, executor.as_ref(), e);
        let rate_limit = match f.get("rate_limit") {
            Some(v) => defaults::read_rate_limit(v, &f.at("rate_limit"), e),
            None => defaults.rate_limit,
        };
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
        if f.has("output") && !is_command {
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
            sandbox,
            rate_limit,
            results: defaults::read_results(&f, e).or(&defaults.results),
            output,
            parameters,
            config_schema,
            config,
            input_schema,
            output_schema,
            formats,
            executor: match executor? {
                Executor::Http(mut call) if call.allow_hosts.is_empty() => {
                    call.allow_hosts = defaults.http_allow_hosts.clone();
                    Executor::Http(call)
                }
                other => other,
            },
        })
    }
}
