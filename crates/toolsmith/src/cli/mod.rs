//! The subcommands and their flags (clap), and the dispatcher; each group's work is in a
//! file of its own: [`serve`] (serve, mcp), [`catalog`], [`registry`], [`call`], [`runtime`],
//! [`servers`] (upstream MCP servers, and `import --mcp-config`), [`openapi`] (`import --openapi`),
//! [`toolsets`].

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand};
use serde_json::{Map, Value};
use std::sync::Arc;
use toolsmith_core::model::Format;
use toolsmith_core::render::{RenderOptions, render};
use toolsmith_core::result::ErrorKind;
use toolsmith_core::{CompiledTool, ToolResult, plan};
use toolsmith_exec::runtime::Runtime;
use toolsmith_exec::{CallOptions, Engine, EngineConfig};
use toolsmith_gateway::Token;
use toolsmith_store::Registry;
use toolsmith_store::{Change, RunQuery, Store, StoreExt};

mod call;
mod catalog;
mod connections;
mod openapi;
mod registry;
mod runtime;
mod secrets;
pub(crate) mod serve;
mod servers;
mod toolsets;

use crate::options::RunArgs;
use crate::output;
use crate::source::load_catalog;

/// toolsmith: declare tools once, check them, render them for every LLM provider, and call
/// them with the arguments models send.
#[derive(Debug, Parser)]
#[command(name = "toolsmith", version, about, long_about = None, after_help = EXIT_CODES)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

const EXIT_CODES: &str =
    "Exit codes: 0 success, 1 the tool call returned an error result, 2 usage or catalog error.";

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the registry over HTTP: the REST API under /v1 and MCP (Streamable HTTP) at
    /// /mcp, on 127.0.0.1:7700 by default.
    Serve(ServeArgs),
    /// Serve tools over MCP on stdin/stdout, for Claude Desktop, Claude Code and other MCP
    /// clients. Logs go to stderr only.
    Mcp(McpArgs),
    /// Check a catalog file and everything it imports; print every problem at once.
    Check {
        /// The catalog file (YAML, or JSON when it ends in .json).
        file: PathBuf,
        /// Print the summary as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List the tools of a catalog.
    List {
        #[command(flatten)]
        catalog: CatalogArg,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Show one tool: its parameters, executor and settings (secrets shown as ***).
    Show {
        /// The tool's name.
        name: String,
        #[command(flatten)]
        catalog: CatalogArg,
        /// Print the definition and its JSON Schema as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Render the enabled tools for a provider: the value of its `tools` field, or an XML block.
    Export {
        #[command(flatten)]
        catalog: CatalogArg,
        /// openai, openai-responses, anthropic, gemini, mcp or xml.
        #[arg(long, short, value_parser = parse_format)]
        format: Format,
        /// OpenAI strict mode (openai and openai-responses).
        #[arg(long)]
        strict: bool,
        /// Only tools with this tag (repeat for any of several).
        #[arg(long = "tag", value_name = "TAG")]
        tags: Vec<String>,
    },
    /// Call a tool: run the arguments through the pipeline, run the tool, print the result.
    Call(CallArgs),
    /// Import a catalog (or an MCP client's configuration, or an OpenAPI document) into the
    /// registry: new tools are created, changed ones get a new version, unchanged ones keep
    /// theirs.
    Import {
        /// The catalog file (its tools and its `mcp_servers`).
        #[arg(required_unless_present_any = ["mcp_config", "openapi"])]
        file: Option<PathBuf>,
        /// Instead of a catalog, the MCP servers of an MCP client's configuration: Claude
        /// Desktop's claude_desktop_config.json, a .mcp.json (Claude Code, Cursor) or VS Code's
        /// mcp.json. Secret-looking values become secret config fields.
        #[arg(long, value_name = "FILE", conflicts_with_all = ["file", "prune", "openapi"])]
        mcp_config: Option<PathBuf>,
        /// Instead of a catalog, an OpenAPI 3.0/3.1 document (JSON or YAML; a file or an
        /// http(s) URL): each operation becomes an `http` tool. What is not imported is
        /// listed with its reason.
        #[arg(long, value_name = "SPEC", conflicts_with_all = ["file", "prune"])]
        openapi: Option<String>,
        #[command(flatten)]
        openapi_args: openapi::OpenapiArgs,
        /// With --mcp-config or --openapi: print the equivalent catalog YAML instead of
        /// importing (secrets as `${VAR}` references; with --openapi the report goes to stderr).
        #[arg(long)]
        print: bool,
        #[command(flatten)]
        db: DbArg,
        /// Also delete (softly) registry tools the catalog does not have.
        #[arg(long)]
        prune: bool,
        #[arg(long)]
        json: bool,
    },
    /// List the versions of a registry tool, oldest first.
    History {
        name: String,
        #[command(flatten)]
        db: DbArg,
        #[arg(long)]
        json: bool,
    },
    /// The execution log of the registry's calls, newest first.
    Runs {
        #[command(flatten)]
        db: DbArg,
        /// Only calls of this tool.
        #[arg(long)]
        tool: Option<String>,
        /// Only calls with this outcome: ok, or an error kind such as timeout.
        #[arg(long)]
        kind: Option<String>,
        /// Only the call with this id (a result's meta.call_id; a result cut by
        /// max_result_bytes names it).
        #[arg(long)]
        call_id: Option<String>,
        #[arg(long, default_value_t = 50)]
        limit: usize,
        #[arg(long)]
        json: bool,
    },
    /// What changed between two versions of a registry tool.
    Diff {
        name: String,
        from: u64,
        /// The current version when not given.
        to: Option<u64>,
        #[command(flatten)]
        db: DbArg,
        #[arg(long)]
        json: bool,
    },
    /// Save an old version of a registry tool as its newest version.
    Restore {
        name: String,
        version: u64,
        #[command(flatten)]
        db: DbArg,
    },
    /// Enable a registry tool (a new version).
    Enable {
        name: String,
        #[command(flatten)]
        db: DbArg,
    },
    /// Disable a registry tool: it is no longer listed to models or callable (a new version).
    Disable {
        name: String,
        #[command(flatten)]
        db: DbArg,
    },
    /// Talk to a model that can use the tools: streamed answers, tool calls run through the
    /// engine, dangerous ones only with your approval. Works with any OpenAI-compatible
    /// server (OpenAI, vLLM, llama.cpp, Ollama's /v1) and Anthropic.
    Chat(crate::chat::ChatArgs),
    /// The Python runtime script tools use: a virtual environment with requests, httpx and
    /// jsonschema.
    Runtime {
        #[command(subcommand)]
        command: RuntimeCommand,
    },
    /// Upstream MCP servers in the registry: list them, show one, see and decide the changes
    /// they made to their tools, refresh one (through a running server).
    Servers {
        #[command(subcommand)]
        command: Option<servers::ServersCommand>,
        /// (Without a command: `list`.)
        #[command(flatten)]
        args: servers::ServersArgs,
    },
    /// Your own OAuth connections to the servers that connect each user's account
    /// (`connection: per_user`), through a running server: list, connect, disconnect.
    Connections {
        #[command(subcommand)]
        command: Option<connections::ConnectionsCommand>,
        /// (Without a command: `list`.)
        #[command(flatten)]
        args: connections::ConnectionsArgs,
    },
    /// Toolsets: named subsets of the registry (by names, tags, kinds, servers, danger),
    /// served at /mcp/{toolset}. List them, or show one with its members and why each is in.
    Toolsets {
        #[command(subcommand)]
        command: Option<toolsets::ToolsetsCommand>,
        /// (Without a command: `list`.)
        #[command(flatten)]
        args: toolsets::ToolsetsArgs,
    },
    /// The registry's secret key: secret config values are stored sealed with it
    /// (XChaCha20-Poly1305); `rotate-key` re-seals them with a new one.
    Secrets {
        #[command(subcommand)]
        command: secrets::SecretsCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum RuntimeCommand {
    /// Create (or re-create) the runtime and install its packages.
    Setup {
        /// Extra packages, comma-separated (for example pandas,numpy).
        #[arg(long, value_delimiter = ',', value_name = "PACKAGES")]
        with: Vec<String>,
        /// The Python that creates the virtual environment.
        #[arg(long, default_value = "python3")]
        python: String,
        /// Where the runtime lives [default: $TOOLSMITH_RUNTIME or ~/.local/share/toolsmith/runtime].
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Say whether the runtime exists and what is installed in it.
    Status {
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Where to listen. Anything but a loopback address needs a token.
    #[arg(long, default_value = "127.0.0.1:7700")]
    pub addr: std::net::SocketAddr,
    /// Import this catalog at start [default: examples/catalog.yaml when it exists].
    #[arg(long, value_name = "FILE")]
    pub catalog: Option<PathBuf>,
    /// Start without importing any catalog.
    #[arg(long, conflicts_with = "catalog")]
    pub no_catalog: bool,
    /// With --catalog: delete registry tools the catalog does not have.
    #[arg(long)]
    pub prune: bool,
    /// A bearer token: NAME=SECRET (admin), NAME:ROLE=SECRET with ROLE read, call or admin,
    /// and @TOOLSET[,TOOLSET...] before the `=` to limit it to those toolsets' members.
    /// Repeatable; TOOLSMITH_TOKEN adds an admin token named "env". Prefer --tokens-file
    /// or TOOLSMITH_TOKEN: a command line is readable by every process of the machine (serve
    /// overwrites these values once started, and warns). With no token at all, serve asks
    /// for the local admin token (in toolsmith's data folder) and prints the web UI's
    /// address with it.
    #[arg(long = "token", value_name = "NAME[:ROLE][@TOOLSETS]=SECRET")]
    pub tokens: Vec<String>,
    /// A file of tokens, one NAME[:ROLE][@TOOLSET,...]=SECRET per line (# starts a comment).
    /// Keep it readable by the server's user only.
    #[arg(long, value_name = "FILE")]
    pub tokens_file: Option<PathBuf>,
    #[command(flatten)]
    pub jwt: crate::options::JwtArgs,
    #[command(flatten)]
    pub db: DbArg,
    /// The folder file built-ins are confined to.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub workspace: PathBuf,
    #[command(flatten)]
    pub run: RunArgs,
    /// How many calls the execution log keeps (the oldest go first).
    #[arg(long, value_name = "N", default_value_t = toolsmith_gateway::DEFAULT_RUN_RETENTION, value_parser = clap::value_parser!(usize))]
    pub run_retention: usize,
    /// MCP clients may run dangerous tools without the user being asked (REST calls still
    /// need "confirm": true).
    #[arg(long)]
    pub allow_dangerous: bool,
    #[command(flatten)]
    pub code: CodeArgs,
    /// Connections open at once; more are closed as they arrive. Idle connections and
    /// clients slow to send their request's headers are closed after 15 s.
    #[arg(long, value_name = "N", default_value_t = 4096)]
    pub max_connections: usize,
    /// How often each caller may call tools when its token gives no `rate_limit`: N/PER
    /// with PER s, m or h (100/1m, 5/1s,burst=10). Over it, REST answers 429 with
    /// Retry-After and MCP a `rate_limited` result. Kept in the process with SQLite, shared
    /// by the replicas of a PostgreSQL registry.
    #[arg(long, value_name = "N/PER", value_parser = |s: &str| toolsmith_core::rate::RateLimit::parse(s))]
    pub rate_limit: Option<toolsmith_core::rate::RateLimit>,
    /// Prometheus metrics at /metrics (role `read` when tokens are on): on or off.
    #[arg(long, value_name = "on|off", default_value = "on", value_parser = ["on", "off"])]
    pub metrics: String,
    /// Serve /metrics on this address instead of the main one (for a scraper on another
    /// network); the same tokens apply.
    #[arg(long, value_name = "ADDR")]
    pub metrics_addr: Option<std::net::SocketAddr>,
    /// Logs on stderr as text lines, or one JSON object per line (start-up notes included).
    #[arg(long, value_enum, default_value = "text")]
    pub log_format: crate::telemetry::LogFormat,
    #[command(flatten)]
    pub traces: crate::telemetry::TraceArgs,
    /// Where the other replicas of this registry reach this one (http://HOST:PORT), to
    /// forward the calls for its sessions that a load balancer sends them [default: the
    /// --addr listened on, unless it is 0.0.0.0 or [::]]. Its host is added to --allow-host.
    #[arg(long, value_name = "URL", value_parser = parse_advertise_url)]
    pub advertise_url: Option<String>,
    /// Accept an http:// --advertise-url (or --addr) on a host other than loopback:
    /// forwarded session calls then cross the network in clear (each is signed for that one
    /// request, but anyone on the path reads its input and output). Without it, such a
    /// replica is not advertised; put a TLS proxy in front and advertise https:// instead.
    #[arg(long)]
    pub plain_http_peers: bool,
    /// A Host header the server answers besides localhost, 127.0.0.1 and [::1] (and the
    /// --addr it listens on): NAME (any port) or NAME:PORT; repeatable. Anything else is
    /// refused with 403, which protects against DNS rebinding. '*' turns the check off (only
    /// behind a proxy that checks Host itself).
    #[arg(
        long = "allow-host",
        visible_alias = "mcp-allow-host",
        value_name = "HOST"
    )]
    pub allow_hosts: Vec<String>,
    /// A browser origin that may change things (POST, PUT, DELETE) besides the server's own
    /// pages, and gets CORS headers; repeatable, e.g. http://localhost:5173. /mcp also accepts
    /// http://localhost, http://127.0.0.1 and http://[::1] on any port.
    #[arg(
        long = "allow-origin",
        visible_alias = "mcp-allow-origin",
        value_name = "ORIGIN"
    )]
    pub allow_origins: Vec<String>,
}

#[derive(Debug, Args)]
pub struct McpArgs {
    /// Serve the tools of this catalog file. With --db, import it into that registry first;
    /// alone, serve it from a private temporary registry.
    #[arg(long, short, value_name = "FILE")]
    pub catalog: Option<PathBuf>,
    #[command(flatten)]
    pub db: DbArg,
    /// The folder file built-ins are confined to.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub workspace: PathBuf,
    /// Run dangerous tools without asking. Without it, the user is asked through the client
    /// (elicitation) when it can; otherwise the call is refused with a result that tells the
    /// model to ask the user.
    #[arg(long)]
    pub allow_dangerous: bool,
    /// Serve only this toolset's members (`toolsets:` in the catalog or the registry).
    #[arg(long, value_name = "NAME")]
    pub toolset: Option<String>,
    #[command(flatten)]
    pub code: CodeArgs,
    /// Logs on stderr as text lines, or one JSON object per line.
    #[arg(long, value_enum, default_value = "text")]
    pub log_format: crate::telemetry::LogFormat,
    #[command(flatten)]
    pub traces: crate::telemetry::TraceArgs,
    #[command(flatten)]
    pub run: RunArgs,
}

/// What a code-mode program (`run_code`) may use; a request may ask for a shorter time.
#[derive(Debug, Clone, Args)]
pub struct CodeArgs {
    /// Code mode: a program's wall time, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub code_timeout: u64,
    /// Code mode: a program's CPU time, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub code_cpu: u64,
    /// Code mode: a program's address space, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = 1024, value_parser = clap::value_parser!(u64).range(64..=65536))]
    pub code_memory: u64,
    /// Code mode: processes a program may have at once (its own included).
    #[arg(long, value_name = "N", default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub code_processes: u64,
    /// Code mode: characters of a program's printed output kept (the rest cut, with a note).
    #[arg(long, value_name = "CHARS", default_value_t = 65536, value_parser = clap::value_parser!(u64).range(1..=16_777_216))]
    pub code_output: u64,
}

impl CodeArgs {
    pub fn limits(&self) -> toolsmith_gateway::code::CodeLimits {
        toolsmith_gateway::code::CodeLimits {
            timeout_ms: self.code_timeout * 1000,
            memory_bytes: self.code_memory * 1024 * 1024,
            cpu_seconds: self.code_cpu,
            processes: self.code_processes,
            output_chars: self.code_output as usize,
        }
    }
}

#[derive(Debug, Args, Default)]
pub struct DbArg {
    /// The registry: an SQLite file, or postgres://user:pass@host/db
    /// [default: $TOOLSMITH_DB, else ~/.local/share/toolsmith/registry.db].
    #[arg(long, value_name = "FILE|URL")]
    pub db: Option<String>,
    /// Recorded as the author of the change [default: $USER].
    #[arg(long)]
    pub author: Option<String>,
    /// The key the registry's secrets are sealed with (64 hex digits) [default:
    /// $TOOLSMITH_SECRET_KEY, else ~/.local/share/toolsmith/secret.key, made on first use].
    #[arg(long, value_name = "FILE")]
    pub secret_key_file: Option<PathBuf>,
}

impl DbArg {
    /// The registry's address: `--db`, else `$TOOLSMITH_DB`, else the default file.
    fn address(&self) -> String {
        self.db.clone().unwrap_or_else(default_db)
    }

    /// Who changes are recorded under: `--author`, else `$USER`, else `fallback`.
    fn author(&self, fallback: &str) -> String {
        self.author
            .clone()
            .or_else(|| std::env::var("USER").ok())
            .unwrap_or_else(|| fallback.into())
    }

    async fn open(&self) -> Result<Registry> {
        crate::secret_key::open_registry(&self.address(), self.secret_key_file.as_deref()).await
    }
}

#[derive(Debug, Args)]
pub struct CatalogArg {
    /// The catalog file.
    #[arg(
        long,
        short,
        value_name = "FILE",
        default_value = "examples/catalog.yaml"
    )]
    pub catalog: PathBuf,
}

#[derive(Debug, Args)]
pub struct CallArgs {
    /// The tool's name.
    pub name: String,
    #[command(flatten)]
    pub catalog: CatalogArg,
    /// The arguments as a JSON object (or a JSON string holding one); `-` reads stdin.
    #[arg(long, value_name = "JSON", conflicts_with = "arg")]
    pub args: Option<String>,
    /// One argument: `key=text` (coerced like a model's string), or `key:=json` for a raw
    /// JSON value. Repeating a key collects the values into a list.
    #[arg(short = 'a', long = "arg", value_name = "KEY=VALUE")]
    pub arg: Vec<String>,
    /// Print what would run (argv, stdin, environment) without running it.
    #[arg(long)]
    pub dry_run: bool,
    /// Run a dangerous tool without asking (required when stdin is not a terminal).
    #[arg(long, short)]
    pub yes: bool,
    /// The folder file built-ins are confined to and `working_dir`s are relative to.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub workspace: PathBuf,
    /// Do not put each call in its own pids cgroup (faster for long-lived tools such as
    /// Python scripts; fork bombs are then only stopped by the timeout).
    #[arg(long)]
    pub no_cgroups: bool,
    /// Print the ToolResult as JSON.
    #[arg(long)]
    pub json: bool,
}

fn parse_format(s: &str) -> Result<Format, String> {
    Format::parse(s)
        .ok_or_else(|| format!("unknown format {s:?} (expected one of {})", Format::names()))
}

pub fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Check { file, json } => catalog::check(&file, json),
        Command::List { catalog, json } => catalog::list(&catalog, json),
        Command::Show {
            name,
            catalog,
            json,
        } => catalog::show(&name, &catalog, json),
        Command::Export {
            catalog,
            format,
            strict,
            tags,
        } => catalog::export(&catalog, format, strict, &tags),
        Command::Call(args) => call::call(args),
        Command::Chat(args) => crate::chat::run(args),
        Command::Runtime { command } => runtime::runtime(command),
        Command::Serve(args) => serve::serve(args),
        Command::Mcp(args) => serve::mcp(args),
        Command::Import {
            file,
            mcp_config,
            openapi,
            openapi_args,
            print,
            db,
            prune,
            json,
        } => match (file, mcp_config, openapi) {
            (_, Some(config), _) => servers::import_config(&config, print, &db, json),
            (_, None, Some(spec)) => openapi::import(&spec, &openapi_args, print, &db, json),
            (Some(_), None, None) if print => {
                bail!("--print applies to --mcp-config and --openapi (a catalog is already YAML)")
            }
            (Some(file), None, None) => registry::import(file, &db, prune, json),
            (None, None, None) => bail!("name a catalog file, --mcp-config FILE or --openapi SPEC"),
        },
        Command::Servers { command, args } => servers::run(command, args),
        Command::Connections { command, args } => connections::run(command, args),
        Command::Secrets { command } => secrets::run(command),
        Command::Toolsets { command, args } => toolsets::run(command, args),
        Command::History { name, db, json } => registry::history(name, &db, json),
        Command::Restore { name, version, db } => registry::restore(name, version, &db),
        Command::Runs {
            db,
            tool,
            kind,
            call_id,
            limit,
            json,
        } => registry::runs(&db, tool, kind, call_id, limit, json),
        Command::Diff {
            name,
            from,
            to,
            db,
            json,
        } => registry::diff(name, from, to, &db, json),
        Command::Enable { name, db } => registry::set_enabled(name, db, true),
        Command::Disable { name, db } => registry::set_enabled(name, db, false),
    }
}

/// `$TOOLSMITH_DB`, else `$XDG_DATA_HOME/toolsmith/registry.db`, else
/// `~/.local/share/toolsmith/registry.db`.
pub fn default_db() -> String {
    if let Ok(p) = std::env::var("TOOLSMITH_DB") {
        return p;
    }
    toolsmith_exec::runtime::data_dir()
        .join("registry.db")
        .display()
        .to_string()
}

/// Whether an advertised URL sends forwarded calls in clear over a network: `http://` to a
/// host other than localhost or a loopback address.
pub fn plain_http_off_loopback(url: &str) -> bool {
    let Some(rest) = url.strip_prefix("http://") else {
        return false;
    };
    let host = rest.trim_end_matches('/');
    let host = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => host.rsplit_once(':').map_or(host, |(h, _)| h),
    };
    !(host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback()))
}

/// An `--advertise-url`: http or https, a host, no path beyond `/`.
fn parse_advertise_url(text: &str) -> Result<String, String> {
    let rest = text
        .strip_prefix("http://")
        .or_else(|| text.strip_prefix("https://"))
        .ok_or_else(|| format!("{text:?} is not an http:// or https:// URL"))?;
    let host = rest.trim_end_matches('/');
    if host.is_empty() || host.contains(['/', '?', '#', '@', ' ']) {
        return Err(format!(
            "{text:?}: give only a scheme, a host and a port (http://10.0.0.5:7700)"
        ));
    }
    Ok(text.trim_end_matches('/').to_owned())
}

#[cfg(test)]
mod tests {
    use super::plain_http_off_loopback;

    #[test]
    fn only_http_to_another_host_is_plain_over_a_network() {
        for clear in [
            "http://10.0.0.5:7700",
            "http://replica-a:7700",
            "http://[fd00::5]:7700/",
        ] {
            assert!(plain_http_off_loopback(clear), "{clear}");
        }
        for local in [
            "http://127.0.0.1:7700",
            "http://127.0.0.2:7700",
            "http://localhost:7700",
            "http://[::1]:7700",
            "https://10.0.0.5:7700",
        ] {
            assert!(!plain_http_off_loopback(local), "{local}");
        }
    }
}
