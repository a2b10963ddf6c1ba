//! The subcommands and their flags (clap), and what each one does.

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
use toolsmith_server::Token;
use toolsmith_store::Registry;
use toolsmith_store::{Change, RunQuery, Store, StoreExt};

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
    /// Import a catalog into the registry: new tools are created, changed ones get a new
    /// version, unchanged ones keep theirs.
    Import {
        /// The catalog file.
        file: PathBuf,
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
    /// A bearer token: NAME=SECRET (admin) or NAME:ROLE=SECRET with ROLE read, call or admin.
    /// Repeatable; TOOLSMITH_TOKEN adds an admin token named "env".
    #[arg(long = "token", value_name = "NAME[:ROLE]=SECRET")]
    pub tokens: Vec<String>,
    /// A file of tokens, one NAME[:ROLE]=SECRET per line (# starts a comment). Keep it
    /// readable by the server's user only.
    #[arg(long, value_name = "FILE")]
    pub tokens_file: Option<PathBuf>,
    #[command(flatten)]
    pub db: DbArg,
    /// The folder file built-ins are confined to.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub workspace: PathBuf,
    #[command(flatten)]
    pub run: RunArgs,
    /// How many calls the execution log keeps (the oldest go first).
    #[arg(long, value_name = "N", default_value_t = toolsmith_server::DEFAULT_RUN_RETENTION, value_parser = clap::value_parser!(usize))]
    pub run_retention: usize,
    /// MCP clients may run dangerous tools without the user being asked (REST calls still
    /// need "confirm": true).
    #[arg(long)]
    pub allow_dangerous: bool,
    /// Connections open at once; more are closed as they arrive. Idle connections and
    /// clients slow to send their request's headers are closed after 15 s.
    #[arg(long, value_name = "N", default_value_t = 4096)]
    pub max_connections: usize,
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
    #[command(flatten)]
    pub run: RunArgs,
}

/// How a long-running command (serve, mcp, chat) runs tool processes.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Do not put each call in its own pids cgroup.
    #[arg(long)]
    pub no_cgroups: bool,
    /// Start a fresh interpreter for every call of a Python script tool, except tools that
    /// say `warm: true`. By default those that do not say `warm: false` are forked from a
    /// resident interpreter (the warm runtime: a few ms instead of tens).
    #[arg(long)]
    pub cold_python: bool,
}

impl RunArgs {
    /// The engine's configuration for tools confined to `workspace`.
    pub fn engine_config(&self, workspace: &std::path::Path) -> EngineConfig {
        let mut config = EngineConfig::new(workspace);
        config.use_cgroups = !self.no_cgroups;
        config.warm_python = !self.cold_python;
        config
    }
}

#[derive(Debug, Args)]
pub struct DbArg {
    /// The registry: an SQLite file, or postgres://user:pass@host/db
    /// [default: $TOOLSMITH_DB, else ~/.local/share/toolsmith/registry.db].
    #[arg(long, value_name = "FILE|URL")]
    pub db: Option<String>,
    /// Recorded as the author of the change [default: $USER].
    #[arg(long)]
    pub author: Option<String>,
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
        let address = self.address();
        Registry::open(&address)
            .await
            .with_context(|| format!("opening the registry {}", redact_url(&address)))
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
        Command::Check { file, json } => {
            let catalog = load_catalog(&file)?;
            output::check_summary(&file, &catalog, json);
            Ok(ExitCode::SUCCESS)
        }
        Command::List { catalog, json } => {
            let catalog = load_catalog(&catalog.catalog)?;
            output::list(&catalog, json);
            Ok(ExitCode::SUCCESS)
        }
        Command::Show {
            name,
            catalog,
            json,
        } => {
            let catalog = load_catalog(&catalog.catalog)?;
            let Some(tool) = catalog.get(&name) else {
                bail!("{}", unknown_tool(&catalog, &name))
            };
            output::show(tool, json);
            Ok(ExitCode::SUCCESS)
        }
        Command::Export {
            catalog,
            format,
            strict,
            tags,
        } => {
            let catalog = load_catalog(&catalog.catalog)?;
            let selected = catalog
                .tools
                .iter()
                .filter(|t| tags.is_empty() || t.tags.iter().any(|tag| tags.contains(tag)));
            out!(
                "{}",
                render(selected, format, RenderOptions { strict }).to_text()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Call(args) => call(args),
        Command::Chat(args) => crate::chat::run(args),
        Command::Runtime { command } => runtime(command),
        Command::Serve(args) => serve(args),
        Command::Mcp(args) => mcp(args),
        Command::Import {
            file,
            db,
            prune,
            json,
        } => registry(&db, |store, author| async move {
            let catalog = load_catalog(&file)?;
            let report = store.import(&catalog.tools, prune, &author).await?;
            output::import_report(&file, &report, json);
            Ok(ExitCode::SUCCESS)
        }),
        Command::History { name, db, json } => registry(&db, |store, _| async move {
            output::history(&store.history(&name).await?, json);
            Ok(ExitCode::SUCCESS)
        }),
        Command::Restore { name, version, db } => registry(&db, |store, author| async move {
            let r = store
                .restore(
                    &name,
                    version,
                    Change {
                        author: &author,
                        summary: "",
                    },
                )
                .await?;
            outln!(
                "{name}: version {version} restored as version {}",
                r.version
            );
            Ok(ExitCode::SUCCESS)
        }),
        Command::Runs {
            db,
            tool,
            kind,
            limit,
            json,
        } => registry(&db, |store, _| async move {
            let page = store
                .runs(&RunQuery {
                    tool,
                    kind,
                    limit,
                    ..RunQuery::default()
                })
                .await?;
            output::runs(&page.items, json);
            Ok(ExitCode::SUCCESS)
        }),
        Command::Diff {
            name,
            from,
            to,
            db,
            json,
        } => registry(&db, |store, _| async move {
            let to = match to {
                Some(v) => v,
                None => store.get(&name).await?.version,
            };
            let (a, b) = (
                store.version(&name, from).await?,
                store.version(&name, to).await?,
            );
            let changes = toolsmith_store::diff_definitions(&a.definition, &b.definition)?;
            if json {
                outln!(
                    "{}",
                    serde_json::json!({"from": from, "to": to, "changes": changes})
                );
            } else if changes.is_empty() {
                outln!("{name}: versions {from} and {to} are the same");
            } else {
                outln!("{name}: version {from} → {to}");
                for c in changes {
                    outln!("  {}: {} → {}", c.path, c.from, c.to);
                }
            }
            Ok(ExitCode::SUCCESS)
        }),
        Command::Enable { name, db } => set_enabled(name, db, true),
        Command::Disable { name, db } => set_enabled(name, db, false),
    }
}

fn serve(args: ServeArgs) -> Result<ExitCode> {
    init_logging();
    let mut tokens = args
        .tokens
        .iter()
        .map(|t| Token::parse(t))
        .collect::<Result<Vec<_>, _>>()
        .map_err(anyhow::Error::msg)?;
    if let Some(file) = &args.tokens_file {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("--tokens-file {}", file.display()))?;
        let more = toolsmith_server::auth::parse_tokens_file(&text)
            .map_err(|e| anyhow::anyhow!("--tokens-file {}: {e}", file.display()))?;
        tokens.extend(more);
    }
    if let Ok(secret) = std::env::var("TOOLSMITH_TOKEN") {
        tokens.push(
            Token::parse(&format!("env={secret}"))
                .map_err(|e| anyhow::anyhow!("TOOLSMITH_TOKEN: {e}"))?,
        );
    }
    toolsmith_server::check_bind(args.addr, &tokens).map_err(anyhow::Error::msg)?;
    let catalog = match (&args.catalog, args.no_catalog) {
        (_, true) => None,
        (Some(file), _) => Some(file.clone()),
        (None, false) => Some(PathBuf::from("examples/catalog.yaml")).filter(|p| p.exists()),
    };
    let catalog = catalog
        .map(|file| load_catalog(&file).map(|c| (file, c)))
        .transpose()?;
    let config = args.run.engine_config(&args.workspace);
    let engine = Arc::new(Engine::new(config).map_err(|e| anyhow::anyhow!("--workspace: {e}"))?);
    let author = args.db.author("serve");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    rt.block_on(async move {
        let store = args.db.open().await?;
        if let Some((file, catalog)) = catalog {
            let r = store.import(&catalog.tools, args.prune, &author).await?;
            eprintln!(
                "toolsmith: imported {}: {} created, {} updated, {} unchanged, {} deleted",
                file.display(),
                r.created.len(),
                r.updated.len(),
                r.unchanged.len(),
                r.deleted.len()
            );
        }
        let listener = tokio::net::TcpListener::bind(args.addr)
            .await
            .with_context(|| format!("listening on {}", args.addr))?;
        let local = listener.local_addr()?;
        let no_token = tokens.is_empty();
        eprintln!(
            "toolsmith: registry {} ({}); REST API on http://{local}/v1 and MCP on http://{local}/mcp ({})",
            redact_url(&args.db.address()),
            store.backend(),
            if no_token {
                "no token: loopback only".to_string()
            } else {
                format!("{} token(s)", tokens.len())
            }
        );
        if no_token {
            eprintln!(
                "toolsmith: no token, so only this machine can connect — but every user of this machine \
                 can; on a shared machine start with --token NAME=SECRET"
            );
        }
        let sessions = engine.sessions().clone();
        let state =
            toolsmith_server::AppState::with_retention(store, engine, tokens, args.run_retention);
        toolsmith_server::follow_registry(&state, toolsmith_server::FOLLOW_INTERVAL);
        // The registry's Python script tools find a warm runtime started at their first call.
        toolsmith_server::prewarm_registry(&state);
        let log = state.runs.clone();
        let app = toolsmith_server::app_with(
            state,
            toolsmith_server::HttpOptions {
                allow_dangerous: args.allow_dangerous,
                allowed_hosts: args.allow_hosts,
                allowed_origins: args.allow_origins,
                listen: Some(local),
            },
        );
        toolsmith_server::serve_with(
            listener,
            app,
            shutdown_signal(),
            std::time::Duration::from_secs(30),
            toolsmith_server::ConnectionLimits {
                max_connections: args.max_connections.max(1),
                ..Default::default()
            },
        )
        .await?;
        // No session outlives the server; every call answered is in the execution log
        // before the process ends.
        sessions.shutdown(SESSION_GRACE).await;
        log.flush().await;
        eprintln!("toolsmith: stopped");
        Ok(ExitCode::SUCCESS)
    })
}

/// How long sessions get to exit after TERM when the server stops.
const SESSION_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

fn mcp(args: McpArgs) -> Result<ExitCode> {
    init_logging();
    let catalog = args
        .catalog
        .as_ref()
        .map(|file| load_catalog(file).map(|c| (file.clone(), c)))
        .transpose()?;
    let config = args.run.engine_config(&args.workspace);
    let engine = Arc::new(Engine::new(config).map_err(|e| anyhow::anyhow!("--workspace: {e}"))?);
    let author = args.db.author("mcp");
    // A catalog alone is served from a registry of its own that lives as long as the server.
    let private = match (&catalog, &args.db.db) {
        (Some(_), None) => Some(tempfile::tempdir().context("creating a temporary registry")?),
        _ => None,
    };
    let address = match &private {
        Some(dir) => dir.path().join("registry.db").display().to_string(),
        None => args.db.address(),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    rt.block_on(async move {
        let store = Registry::open(&address)
            .await
            .with_context(|| format!("opening the registry {}", redact_url(&address)))?;
        if let Some((file, catalog)) = &catalog {
            let r = store.import(&catalog.tools, false, &author).await?;
            tracing::info!(
                "imported {}: {} created, {} updated, {} unchanged",
                file.display(),
                r.created.len(),
                r.updated.len(),
                r.unchanged.len()
            );
        }
        let sessions = engine.sessions().clone();
        let state = toolsmith_server::AppState::new(store, engine, Vec::new());
        toolsmith_server::follow_registry(&state, toolsmith_server::FOLLOW_INTERVAL);
        toolsmith_server::prewarm_registry(&state);
        let log = state.runs.clone();
        let handler = toolsmith_server::mcp::McpServer::new(
            state,
            toolsmith_server::mcp::McpOptions {
                allow_dangerous: args.allow_dangerous,
                notify_changes: true,
                caller: "mcp-stdio".into(),
            },
        );
        let service = rmcp::ServiceExt::serve(handler, rmcp::transport::stdio())
            .await
            .context("starting MCP on stdio")?;
        tokio::select! {
            r = service.waiting() => { r.context("MCP on stdio")?; }
            _ = shutdown_signal() => {}
        }
        sessions.shutdown(SESSION_GRACE).await;
        log.flush().await;
        drop(private);
        Ok(ExitCode::SUCCESS)
    })
}

/// Diagnostics go to stderr (stdout may be an MCP transport); `RUST_LOG` sets the level.
/// rmcp logs every protocol error it answers (an unknown tool, say) as a warning; those are
/// the client's mistakes, not the server's, so only its errors show by default.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,rmcp::service=error"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
}

/// Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
}

fn set_enabled(name: String, db: DbArg, enabled: bool) -> Result<ExitCode> {
    registry(&db, |store, author| async move {
        let r = store
            .set_enabled(
                &name,
                enabled,
                Change {
                    author: &author,
                    summary: "",
                },
            )
            .await?;
        outln!(
            "{name}: {} (version {})",
            if enabled { "enabled" } else { "disabled" },
            r.version
        );
        Ok(ExitCode::SUCCESS)
    })
}

/// Opens the registry and runs `f` with it and the author's name.
fn registry<F, Fut>(db: &DbArg, f: F) -> Result<ExitCode>
where
    F: FnOnce(Registry, String) -> Fut,
    Fut: std::future::Future<Output = Result<ExitCode>>,
{
    let author = db.author("cli");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    rt.block_on(async move { f(db.open().await?, author).await })
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

/// A registry address fit for logs: the password of a URL replaced by `***`.
fn redact_url(address: &str) -> String {
    match (address.find("://"), address.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &address[scheme + 3..at];
            match userinfo.split_once(':') {
                Some((user, _)) => {
                    format!("{}{user}:***{}", &address[..scheme + 3], &address[at..])
                }
                None => address.to_owned(),
            }
        }
        _ => address.to_owned(),
    }
}

fn unknown_tool(catalog: &toolsmith_core::Catalog, name: &str) -> String {
    let names: Vec<&str> = catalog.tools.iter().map(|t| t.name.as_str()).collect();
    format!(
        "no tool named {name:?} in the catalog (tools: {})",
        names.join(", ")
    )
}

/// Why `toolsmith call` refuses the session built-ins.
const SESSIONS_NEED_A_SERVER: &str = "sessions outlive a call, and `toolsmith call` runs one call \
     per process: use them through `toolsmith serve` (REST or MCP over HTTP), `toolsmith mcp` \
     or `toolsmith chat`";

fn call(args: CallArgs) -> Result<ExitCode> {
    let catalog = load_catalog(&args.catalog.catalog)?;
    let Some(tool) = catalog.get(&args.name) else {
        bail!("{}", unknown_tool(&catalog, &args.name))
    };
    let raw = call_arguments(&args, tool)?;
    let compiled = CompiledTool::new(tool.clone(), 1).map_err(anyhow::Error::msg)?;
    let result = if args.dry_run {
        plan::dry_run(&compiled, raw)
    } else if matches!(&tool.executor, toolsmith_core::model::Executor::Builtin(b) if toolsmith_core::builtin::is_session(b))
    {
        ToolResult::err(
            ErrorKind::Session,
            format!("sessions_unavailable: {SESSIONS_NEED_A_SERVER}"),
            Vec::new(),
            compiled.meta(Vec::new()),
        )
    } else {
        let confirmed = args.yes || (compiled.tool.is_dangerous() && confirm(&compiled.tool)?);
        let mut config = EngineConfig::new(&args.workspace);
        config.use_cgroups = !args.no_cgroups;
        // One call: a warm runtime would cost its start and save nothing.
        config.warm_runtime = false;
        config.sessions_unavailable = Some(SESSIONS_NEED_A_SERVER.into());
        let engine = Engine::new(config).map_err(|e| anyhow::anyhow!("--workspace: {e}"))?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .context("starting the runtime")?;
        rt.block_on(async {
            tokio::select! {
                r = engine.call(&compiled, raw, CallOptions::new("cli", confirmed)) => r,
                // Dropping the call kills its process group.
                _ = tokio::signal::ctrl_c() => ToolResult::err(
                    ErrorKind::Cancelled, "cancelled by Ctrl-C; the tool's processes were killed", Vec::new(), compiled.meta(Vec::new())),
            }
        })
    };
    output::call_result(&result, args.json);
    Ok(if result.success {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Asks on the terminal whether to run a dangerous tool. Without a terminal the answer is no,
/// and the result says `needs_confirmation` (use `--yes`).
fn confirm(tool: &toolsmith_core::Tool) -> Result<bool> {
    use std::io::{IsTerminal, Write};
    if !std::io::stdin().is_terminal() {
        return Ok(false);
    }
    eprint!(
        "`{}` is dangerous: {}\nRun it? [y/N] ",
        tool.name,
        tool.description.lines().next().unwrap_or_default()
    );
    std::io::stderr().flush().ok();
    let mut answer = String::new();
    std::io::stdin()
        .read_line(&mut answer)
        .context("reading the answer")?;
    Ok(matches!(
        answer.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}

fn runtime(command: RuntimeCommand) -> Result<ExitCode> {
    let at = |dir: Option<PathBuf>| {
        dir.map(|dir| Runtime { dir })
            .unwrap_or_else(Runtime::default_location)
    };
    match command {
        RuntimeCommand::Setup { with, python, dir } => {
            let rt = at(dir);
            rt.setup(&python, &with, &mut |line| eprintln!("runtime: {line}"))
                .map_err(anyhow::Error::msg)?;
            outln!("runtime ready: {}", rt.dir.display());
            Ok(ExitCode::SUCCESS)
        }
        RuntimeCommand::Status { dir, json } => {
            let rt = at(dir);
            let packages = rt.packages();
            if json {
                let list: Vec<Value> = packages
                    .as_ref()
                    .map(|p| {
                        p.iter()
                            .map(|(n, v)| serde_json::json!({"name": n, "version": v}))
                            .collect()
                    })
                    .unwrap_or_default();
                outln!(
                    "{}",
                    serde_json::json!({"dir": rt.dir, "exists": rt.exists(), "packages": list})
                );
                return Ok(ExitCode::SUCCESS);
            }
            match packages {
                Ok(list) => {
                    outln!(
                        "runtime: {} (used by python3 script tools)",
                        rt.dir.display()
                    );
                    for (name, version) in list {
                        outln!("  {name} {version}");
                    }
                }
                Err(e) => outln!("runtime: not set up — {e}"),
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `--args JSON`, `--args -` or `-a key=value ...` as one JSON value.
fn call_arguments(args: &CallArgs, tool: &toolsmith_core::Tool) -> Result<Value> {
    if let Some(text) = &args.args {
        let text = if text == "-" {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .context("reading --args from stdin")?;
            s
        } else {
            text.clone()
        };
        // Handed to the pipeline as text so a JSON error is reported like a model's would be.
        return Ok(Value::String(text));
    }
    let mut map = Map::new();
    for pair in &args.arg {
        let (key, value) = if let Some((k, v)) = pair.split_once(":=") {
            let parsed = serde_json::from_str(v)
                .with_context(|| format!("-a {pair}: the value after := is not JSON"))?;
            (k, parsed)
        } else if let Some((k, v)) = pair.split_once('=') {
            (k, Value::String(v.to_owned()))
        } else {
            bail!("-a {pair}: expected key=value or key:=json");
        };
        if key.is_empty() {
            bail!("-a {pair}: the key is empty");
        }
        let is_array = tool
            .parameters
            .iter()
            .any(|p| p.name == key && p.ty == toolsmith_core::model::ParamType::Array);
        match map.get_mut(key) {
            // For an array parameter, each -a adds one item (a `:=` JSON array is taken whole).
            None if is_array && !value.is_array() => {
                map.insert(key.to_owned(), Value::Array(vec![value]));
            }
            Some(Value::Array(list)) => list.push(value),
            Some(first) => *first = Value::Array(vec![first.take(), value]),
            None => {
                map.insert(key.to_owned(), value);
            }
        }
    }
    Ok(Value::Object(map))
}
