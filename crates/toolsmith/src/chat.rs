//! `toolsmith chat`: the agent on the terminal (a REPL with line editing and history, or one
//! PROMPT run to completion), or as a machine-readable JSON-lines transcript with `--json`.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;
use serde_json::{Value, json};
use toolsmith_agent::driver::Interrupt;
use toolsmith_agent::transcript::{Header, Transcript};
use toolsmith_agent::{Agent, Answer, Approval, CodeMode, Kind, Outcome, Provider, Tools, Ui};
use toolsmith_core::agent::history::ToolCall;
use toolsmith_core::agent::machine::{Effect, Machine};
use toolsmith_core::agent::stream::{Delta, Usage};
use toolsmith_core::{CompiledTool, ToolResult};
use toolsmith_gateway::start::Startup;
use toolsmith_gateway::upstream::START_TIMEOUT;
use toolsmith_gateway::view::{Ask, ViewError};
use toolsmith_gateway::{Caller, Engine, Gateway};
use toolsmith_store::Registry;

use crate::source::load_catalog;

#[derive(Debug, Args)]
pub struct ChatArgs {
    /// The tools: this catalog file [default: examples/catalog.yaml].
    #[arg(long, short, value_name = "FILE", conflicts_with = "db")]
    pub catalog: Option<PathBuf>,
    /// The tools: the enabled tools of this registry (an SQLite file or postgres://…).
    #[arg(long, value_name = "FILE|URL")]
    pub db: Option<String>,
    /// The key the registry's secrets are sealed with [default: $TOOLSMITH_SECRET_KEY, else
    /// ~/.local/share/toolsmith/secret.key].
    #[arg(long, value_name = "FILE", requires = "db")]
    pub secret_key_file: Option<PathBuf>,
    /// Offer the model only this toolset's members (from the catalog's `toolsets:` or the
    /// registry's).
    #[arg(long, value_name = "NAME")]
    pub toolset: Option<String>,
    /// Code mode: offer the model `search_tools` (the tools as typed Python functions) and
    /// `run_code` (a Python program calling them, run in the kernel sandbox, each call through
    /// the gateway) instead of the tools themselves. Dangerous tools inside a program run
    /// only under `--approval auto`.
    #[arg(long)]
    pub code_mode: bool,
    #[command(flatten)]
    pub traces: crate::telemetry::TraceArgs,
    /// openai (any OpenAI-compatible Chat Completions server) or anthropic.
    #[arg(long, default_value = "openai", value_parser = ["openai", "anthropic"])]
    pub provider: String,
    /// The model [default: gpt-4o-mini for openai, claude-sonnet-4-5 for anthropic].
    #[arg(long)]
    pub model: Option<String>,
    /// The API's base URL [default: https://api.openai.com/v1, https://api.anthropic.com;
    /// for example http://127.0.0.1:11434/v1 for Ollama].
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// The environment variable holding the API key [default: OPENAI_API_KEY or
    /// ANTHROPIC_API_KEY]. The key is never written anywhere.
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// A system prompt.
    #[arg(long, value_name = "TEXT")]
    pub system: Option<String>,
    /// ask: safe tools run, dangerous ones ask; auto: everything runs; never: dangerous
    /// tools are declined; read-only: only tools annotated read_only run [default: ask on a
    /// terminal, never without one].
    #[arg(long, value_parser = ["ask", "auto", "never", "read-only"])]
    pub approval: Option<String>,
    /// The most model requests one message may lead to.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub max_turns: u32,
    /// The folder file built-ins are confined to and working_dirs are relative to.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub workspace: PathBuf,
    /// One JSON object per line on stdout for every transition, text delta, tool call,
    /// approval, tool result and usage report.
    #[arg(long)]
    pub json: bool,
    /// Continue a saved conversation: its id, or `last`.
    #[arg(long, value_name = "ID|last")]
    pub resume: Option<String>,
    #[command(flatten)]
    pub run: crate::options::RunArgs,
    /// One message: answered (tools and all), printed, and the program exits. Without it, on
    /// a terminal, a conversation (/reset, /tools, /exit).
    #[arg(value_name = "PROMPT", trailing_var_arg = true)]
    pub prompt: Vec<String>,
}

/// Where conversations are saved.
pub fn chats_dir() -> PathBuf {
    toolsmith_exec::runtime::data_dir().join("chats")
}

pub fn run(args: ChatArgs) -> Result<std::process::ExitCode> {
    let kind = Kind::parse(&args.provider).context("--provider")?;
    let interactive = std::io::stdin().is_terminal();
    let approval = match &args.approval {
        Some(a) => Approval::parse(a).context("--approval")?,
        None if interactive => Approval::Ask,
        None => Approval::Never,
    };
    let _telemetry = if args.traces.otlp_endpoint.is_some()
        || std::env::var_os("OTEL_EXPORTER_OTLP_ENDPOINT").is_some()
        || std::env::var_os("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some()
    {
        // Logs stay off the conversation: errors only.
        Some(crate::telemetry::init(
            crate::telemetry::LogFormat::Text,
            "error",
            &args.traces,
        )?)
    } else {
        None
    };
    let prompt = (!args.prompt.is_empty()).then(|| args.prompt.join(" "));
    if prompt.is_none() && !interactive {
        bail!("give a PROMPT (or run `toolsmith chat` on a terminal for a conversation)");
    }
    let base_url = args
        .base_url
        .clone()
        .unwrap_or_else(|| kind.default_base_url().to_owned());
    let key_env = args
        .api_key_env
        .clone()
        .unwrap_or_else(|| kind.default_key_env().to_owned());
    let key = std::env::var(&key_env)
        .ok()
        .filter(|k| !k.trim().is_empty());
    if key.is_none() && args.base_url.is_none() {
        bail!(
            "set {key_env} to your API key (or name another variable with --api-key-env; a local server given with --base-url may need none)"
        );
    }
    let model = args
        .model
        .clone()
        .unwrap_or_else(|| kind.default_model().to_owned());
    let provider = Provider::new(kind, &base_url, &model, key).map_err(anyhow::Error::msg)?;

    let mut protected = vec![chats_dir()];
    if let Some(db) = &args.db {
        protected.extend(crate::options::registry_files(db));
    }
    protected.extend(args.secret_key_file.iter().cloned());
    let config = args.run.engine_config(&args.workspace, protected);
    let engine = Arc::new(Engine::new(config).map_err(|e| anyhow::anyhow!("--workspace: {e}"))?);
    crate::options::say_sandbox(&engine);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    rt.block_on(async move {
        // The gateway every door calls through; its start warms the Python runtimes the
        // tools need and starts their MCP servers.
        let (store, private) = open_tools(&args).await?;
        let gateway = Gateway::start(store, engine, Startup::default());
        if private.is_some() {
            // A catalog's servers: their first listing is taken, as `serve` does.
            for (name, why) in gateway.settle_upstreams(START_TIMEOUT).await {
                eprintln!("toolsmith: MCP server {name} left out: {why}");
            }
        }
        let (tools, code) = match offered(&gateway, args.toolset.as_deref(), args.code_mode).await {
            Ok((tools, code)) => (Tools::new(tools, kind.format()), code),
            Err(e) => {
                gateway.stop(Duration::from_secs(2)).await;
                return Err(e);
            }
        };
        let header = Header {
            id: String::new(),
            provider: kind.as_str().into(),
            model: model.clone(),
            base_url: base_url.clone(),
        };
        let (transcript, machine) = match &args.resume {
            Some(which) => {
                let (t, _, items) =
                    Transcript::resume(&chats_dir(), which).map_err(anyhow::Error::msg)?;
                (t, Machine::resume(items, args.max_turns))
            }
            None => (
                Transcript::create(&chats_dir(), &header).map_err(anyhow::Error::msg)?,
                Machine::new(args.max_turns),
            ),
        };
        let ui: Box<dyn Ui> = if args.json {
            Box::new(JsonUi)
        } else {
            Box::new(TermUi::default())
        };
        let interrupt = Arc::new(Interrupt::default());
        watch_ctrl_c(interrupt.clone(), args.json);
        let mut agent = Agent {
            machine,
            provider,
            tools,
            gateway: gateway.clone(),
            approval,
            system: args.system.clone(),
            ui,
            transcript: None,
            interrupt,
            code,
        };
        let id = transcript.id.clone();
        agent.transcript = Some(transcript);
        if args.json {
            line(&json!({"type": "session", "id": id, "provider": kind.as_str(), "model": model,
                "base_url": base_url, "approval": approval.as_str(), "tools": agent.tools.compiled.len()}));
        } else if approval == Approval::Auto {
            eprintln!("toolsmith: --approval auto: every tool runs without asking, dangerous ones too");
        }
        let done = match prompt {
            Some(p) => {
                let outcome = traced_turn(&mut agent, p).await;
                Ok(finish(&outcome, args.json))
            }
            None => repl(&mut agent, &id).await,
        };
        // The MCP servers this chat started end with it; its calls are in the run log.
        gateway.stop(Duration::from_secs(2)).await;
        drop(private);
        done
    })
}

/// The registry the tools come from: `--db`'s, or a private one holding the catalog (kept
/// while the folder lives).
async fn open_tools(args: &ChatArgs) -> Result<(Registry, Option<tempfile::TempDir>)> {
    let key = args.secret_key_file.as_deref();
    if let Some(db) = &args.db {
        return Ok((crate::secret_key::open_registry(db, key).await?, None));
    }
    let file = args
        .catalog
        .clone()
        .unwrap_or_else(|| PathBuf::from("examples/catalog.yaml"));
    let catalog = load_catalog(&file)?;
    let (store, dir) = crate::seed::private_registry(&file, &catalog, key, "chat").await?;
    Ok((store, Some(dir)))
}

/// The tools the model may call: the registry's enabled tools in the view of toolset `name`
/// (every one without a name), as the gateway compiled them — in code mode, `search_tools`
/// and `run_code` instead, and what answers them; an unknown name is an error naming the
/// known ones.
async fn offered(
    gateway: &Arc<Gateway>,
    name: Option<&str>,
    code_mode: bool,
) -> Result<(Vec<Arc<CompiledTool>>, Option<Arc<dyn CodeMode>>)> {
    let ask = Ask {
        endpoint: name.map(str::to_owned),
        ..Ask::default()
    };
    let view = match gateway.view(&Caller::local(), &ask).await {
        Ok(view) => view,
        Err(ViewError::UnknownEndpoint { name, known }) => {
            bail!("--toolset {name}: no such toolset; the toolsets are: {known}")
        }
        Err(e) => return Err(e.into()),
    };
    if !code_mode {
        return Ok((gateway.enabled_tools(&view).await?, None));
    }
    let code = crate::chat_code::ChatCode::new(gateway.clone(), view);
    Ok((code.tools()?, Some(Arc::new(code))))
}

/// Ctrl-C stops what is in progress; a second one within a second exits.
fn watch_ctrl_c(interrupt: Arc<Interrupt>, json: bool) {
    tokio::spawn(async move {
        let mut last: Option<Instant> = None;
        while tokio::signal::ctrl_c().await.is_ok() {
            if last.is_some_and(|t| t.elapsed() < Duration::from_secs(1)) {
                if !json {
                    eprintln!("\ntoolsmith: bye");
                }
                std::process::exit(130);
            }
            last = Some(Instant::now());
            interrupt.raise();
            if !json {
                eprintln!("\ntoolsmith: interrupted (Ctrl-C again within a second exits)");
            }
        }
    });
}

fn finish(outcome: &Outcome, json: bool) -> std::process::ExitCode {
    let (text, code) = match outcome {
        Outcome::Answered(t) => (Some(t.clone()), 0),
        Outcome::Stopped(why) => (Some(why.clone()), 0),
        Outcome::Interrupted => (None, 130),
        Outcome::Failed(m) => (Some(m.clone()), 1),
    };
    if json {
        let kind = match outcome {
            Outcome::Answered(_) => "answered",
            Outcome::Stopped(_) => "stopped",
            Outcome::Interrupted => "interrupted",
            Outcome::Failed(_) => "error",
        };
        line(&json!({"type": "end", "outcome": kind, "text": text}));
    } else {
        match outcome {
            Outcome::Answered(_) => outln!(""),
            Outcome::Failed(m) => eprintln!("error: {m}"),
            Outcome::Stopped(m) => eprintln!("toolsmith: {m}"),
            Outcome::Interrupted => {}
        }
    }
    std::process::ExitCode::from(code)
}

async fn repl(agent: &mut Agent, id: &str) -> Result<std::process::ExitCode> {
    let mut editor = rustyline::DefaultEditor::new().context("starting the line editor")?;
    let history = toolsmith_exec::runtime::data_dir().join("chat_history");
    let _ = editor.load_history(&history);
    eprintln!(
        "toolsmith chat — {} tools, {} {}; conversation {id} (resume with --resume {id}). /tools, /reset, /exit; Ctrl-C stops an answer or a tool.",
        agent.tools.compiled.len(),
        agent.provider.kind.as_str(),
        agent.provider.model
    );
    let mut last_ctrl_c: Option<Instant> = None;
    loop {
        let line = tokio::task::block_in_place(|| editor.readline("you> "));
        let text = match line {
            Ok(l) => l,
            Err(rustyline::error::ReadlineError::Interrupted) => {
                if last_ctrl_c.is_some_and(|t| t.elapsed() < Duration::from_secs(1)) {
                    break;
                }
                last_ctrl_c = Some(Instant::now());
                eprintln!("(Ctrl-C again within a second, Ctrl-D or /exit leaves)");
                continue;
            }
            Err(rustyline::error::ReadlineError::Eof) => break,
            Err(e) => bail!("reading input: {e}"),
        };
        let text = text.trim().to_owned();
        if text.is_empty() {
            continue;
        }
        let _ = editor.add_history_entry(&text);
        match text.as_str() {
            "/exit" | "/quit" => break,
            "/reset" => {
                agent.machine = Machine::new(agent.machine.max_turns);
                eprintln!("(a new conversation: the model forgets what was said)");
                continue;
            }
            "/tools" => {
                for c in &agent.tools.compiled {
                    eprintln!(
                        "  {:<24} {:<9} {}",
                        c.tool.name.as_str(),
                        if c.tool.is_dangerous() {
                            "dangerous"
                        } else {
                            "safe"
                        },
                        c.tool.description.lines().next().unwrap_or_default()
                    );
                }
                continue;
            }
            _ => {}
        }
        let outcome = traced_turn(agent, text).await;
        match &outcome {
            Outcome::Answered(_) => outln!(""),
            Outcome::Failed(m) => {
                eprintln!("error: {m}\n(the conversation goes on; /reset starts over)")
            }
            Outcome::Stopped(m) => eprintln!("toolsmith: {m}"),
            Outcome::Interrupted => {}
        }
    }
    if let Some(parent) = history.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    let _ = editor.save_history(&history);
    Ok(std::process::ExitCode::SUCCESS)
}

fn line(v: &Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{v}");
    let _ = out.flush();
}

/// Reads the answer to "run this?" from stdin: y, n [reason], a, s.
fn read_answer(prompt_again: impl Fn()) -> Answer {
    let stdin = std::io::stdin();
    loop {
        let mut l = String::new();
        match stdin.lock().read_line(&mut l) {
            Ok(0) | Err(_) => return Answer::Stop,
            Ok(_) => {}
        }
        let t = l.trim();
        let (word, rest) = t.split_once([' ', ':']).unwrap_or((t, ""));
        let rest = rest.trim();
        match word.to_ascii_lowercase().as_str() {
            "y" | "yes" => return Answer::Yes,
            "a" | "always" => return Answer::Always,
            "s" | "stop" => return Answer::Stop,
            "n" | "no" => return Answer::No((!rest.is_empty()).then(|| rest.to_owned())),
            _ => prompt_again(),
        }
    }
}

fn shown_argv(plan: &ToolResult) -> String {
    let data = plan.data.as_ref();
    if let Some(b) = data.and_then(|d| d["builtin"].as_str()) {
        let args = data.map(|d| d["arguments"].to_string()).unwrap_or_default();
        return format!("built-in {b} {args}");
    }
    data.and_then(|d| d["argv"].as_array())
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(|s| {
                    if s.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c))
                        && !s.is_empty()
                    {
                        s.to_owned()
                    } else {
                        format!("'{}'", s.replace('\'', "'\\''"))
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

/// The terminal: the answer streamed to stdout, tools and questions on stderr.
#[derive(Default)]
struct TermUi {
    /// The answer's text is mid-line.
    open_line: bool,
}

impl TermUi {
    fn end_line(&mut self) {
        if self.open_line {
            outln!("");
            self.open_line = false;
        }
    }
}

impl Ui for TermUi {
    fn delta(&mut self, d: &Delta) {
        if let Delta::Text(t) = d {
            out!("{t}");
            let _ = std::io::stdout().flush();
            self.open_line = !t.ends_with('\n');
        }
    }

    fn effect(&mut self, e: &Effect) {
        if let Effect::Notice(n) = e
            && n != "interrupted"
            && !n.starts_with("stopped after")
            && !n.starts_with("the turn stopped")
        {
            self.end_line();
            eprintln!("toolsmith: {n}");
        }
    }

    fn call(&mut self, call: &ToolCall, plan: &ToolResult) {
        self.end_line();
        let args = plan
            .data
            .as_ref()
            .map(|d| d["arguments"].to_string())
            .unwrap_or_else(|| call.arguments.clone());
        eprintln!("→ {} {args}", call.name);
        if !plan.meta.coerced.is_empty() {
            eprintln!("  repaired: {}", plan.meta.coerced.join(", "));
        }
    }

    fn ask(&mut self, call: &ToolCall, plan: &ToolResult) -> Answer {
        let q = format!(
            "Run {}: {}? [y]es / [n]o (a reason may follow) / [a]lways this tool / [s]top ",
            call.name,
            shown_argv(plan)
        );
        eprint!("{q}");
        let _ = std::io::stderr().flush();
        read_answer(|| {
            eprint!("{q}");
            let _ = std::io::stderr().flush();
        })
    }

    fn ask_program(&mut self, call: &ToolCall, question: &str) -> Answer {
        let q = format!("{} asks: {question}\n[y]es / [n]o ", call.name);
        eprint!("{q}");
        let _ = std::io::stderr().flush();
        read_answer(|| {
            eprint!("[y]es / [n]o ");
            let _ = std::io::stderr().flush();
        })
    }

    fn decision(&mut self, call: &ToolCall, decision: &str) {
        if decision.contains("--approval") {
            eprintln!("  {}: {decision}", call.name);
        }
    }

    fn result(&mut self, call: &ToolCall, r: &ToolResult) {
        let took = r
            .meta
            .duration_ms
            .map(|d| format!(" in {d:.0} ms"))
            .unwrap_or_default();
        match &r.error {
            None => {
                eprintln!("  ✓ {}{took}", call.name);
                let text = match &r.data {
                    Some(d) if d["stdout"].is_string() => {
                        d["stdout"].as_str().unwrap_or_default().to_owned()
                    }
                    Some(d) => d.to_string(),
                    None => String::new(),
                };
                for l in text.lines().take(4) {
                    let shown: String = l.chars().take(150).collect();
                    let more = if l.chars().count() > 150 { "…" } else { "" };
                    eprintln!("    {shown}{more}");
                }
                if text.lines().count() > 4 {
                    eprintln!("    …");
                }
            }
            Some(e) => {
                let first = e.message.lines().next().unwrap_or_default();
                eprintln!(
                    "  ✗ {} ({}){took}: {first}",
                    call.name,
                    serde_json::to_value(e.kind)
                        .unwrap_or_default()
                        .as_str()
                        .unwrap_or("")
                );
            }
        }
    }

    fn usage(&mut self, _: &Usage) {}

    fn retrying(&mut self, why: &str, wait: Duration) {
        self.end_line();
        eprintln!("toolsmith: {why}; retrying in {:.1} s", wait.as_secs_f64());
    }
}

/// `--json`: one object per line on stdout.
struct JsonUi;

impl Ui for JsonUi {
    fn delta(&mut self, d: &Delta) {
        match d {
            Delta::Text(t) => line(&json!({"type": "text", "text": t})),
            Delta::Reasoning(t) => line(&json!({"type": "reasoning", "text": t})),
        }
    }

    fn effect(&mut self, e: &Effect) {
        match e {
            Effect::Transition { from, event, to } => line(&json!({"type": "transition",
                "from": from.as_str(), "event": event.as_str(), "to": to.as_str()})),
            Effect::Notice(n) => line(&json!({"type": "notice", "message": n})),
            _ => {}
        }
    }

    fn call(&mut self, call: &ToolCall, plan: &ToolResult) {
        let data = plan.data.clone().unwrap_or(Value::Null);
        line(
            &json!({"type": "tool_call", "id": call.id, "name": call.name,
            "arguments_sent": call.arguments, "arguments": data["arguments"],
            "coerced": plan.meta.coerced, "argv": data["argv"],
            "problem": plan.error.as_ref().map(|e| e.message.clone())}),
        );
    }

    fn ask(&mut self, call: &ToolCall, plan: &ToolResult) -> Answer {
        line(
            &json!({"type": "question", "id": call.id, "name": call.name, "argv": plan.data.as_ref().map(|d| d["argv"].clone()),
            "answers": "y, n [reason], a, s — one line on stdin"}),
        );
        read_answer(|| line(&json!({"type": "question", "id": call.id, "again": true})))
    }

    fn ask_program(&mut self, call: &ToolCall, question: &str) -> Answer {
        line(
            &json!({"type": "question", "id": call.id, "name": call.name, "program_asks": question,
            "answers": "y or n — one line on stdin"}),
        );
        read_answer(|| line(&json!({"type": "question", "id": call.id, "again": true})))
    }

    fn decision(&mut self, call: &ToolCall, decision: &str) {
        line(&json!({"type": "approval", "id": call.id, "name": call.name, "decision": decision}));
    }

    fn result(&mut self, call: &ToolCall, r: &ToolResult) {
        line(&json!({"type": "tool_result", "id": call.id, "name": call.name, "result": r}));
    }

    fn usage(&mut self, u: &Usage) {
        line(
            &json!({"type": "usage", "input_tokens": u.input_tokens, "output_tokens": u.output_tokens}),
        );
    }

    fn retrying(&mut self, why: &str, wait: Duration) {
        line(&json!({"type": "retry", "reason": why, "wait_ms": wait.as_millis() as u64}));
    }
}

/// One user turn, a trace of its own when traces are exported (SPEC §15): the model's
/// answers and the tool calls are its children.
async fn traced_turn(agent: &mut Agent, text: String) -> Outcome {
    use tracing::Instrument;
    let span = tracing::info_span!(
        target: toolsmith_exec::trace::TARGET,
        parent: None,
        "chat turn",
        otel.name = "chat turn",
        outcome = tracing::field::Empty,
    );
    let outcome = agent.turn(text).instrument(span.clone()).await;
    span.record(
        "outcome",
        match &outcome {
            Outcome::Answered(_) => "answered",
            Outcome::Failed(_) => "failed",
            Outcome::Stopped(_) => "stopped",
            Outcome::Interrupted => "interrupted",
        },
    );
    outcome
}
