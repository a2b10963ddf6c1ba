//! toolsmith-exec: runs tools (SPEC §5). The only crate that spawns processes or touches the
//! workspace.
//!
//! [`Engine::call`] takes a compiled tool and what a model sent, and returns a
//! [`ToolResult`]: the argument pipeline and injection plan from `toolsmith-core`, then
//! - `command` tools: the planned argv run directly (no shell), stdin written and closed, an
//!   environment built only from the allowlist, the tool's `env` and its parameters/config;
//! - `script` tools: the interpreter (resolved once) running the script with the arguments
//!   as JSON on stdin, one JSON value expected back;
//! - `builtin` tools: file tools confined to the workspace, HTTP, and sessions — processes
//!   that outlive a call ([`session`]).
//!
//! Every process runs in its own process group, in a fresh temporary folder (unless the tool
//! names one), with rlimits, a pids cgroup where available, bounded output, and a deadline;
//! the group is killed when the process exits, times out, or the caller stops waiting.
//! Calls queue for a global and a per-tool slot, for a bounded time.

mod builtin;
mod capture;
mod folders;
pub mod http;
mod kinds;
mod limits;
mod process;
mod programs;
pub mod rate;
pub mod runtime;
pub mod sandbox;
mod script;
pub mod session;
mod signals;
pub mod talk;
pub mod trace;
pub mod upstream;
mod warm;
mod workspace;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use toolsmith_core::CompiledTool;
use toolsmith_core::model::{Executor, Limits, OutputMode, Tool};
use toolsmith_core::plan::{self, Invocation, Process};
use toolsmith_core::result::{ErrorKind, Meta, ToolResult};
use tracing::Instrument;

pub use capture::{Capture, Captured};

/// The error of a service the engine is given (shared rate buckets, the replicas' session
/// directory): whatever its implementation fails with.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
pub use limits::{not_dumpable, set_dumpable};
pub use workspace::Workspace;

/// How an engine runs tools.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// The folder file built-ins are confined to, and relative `working_dir`s start from.
    pub workspace: PathBuf,
    /// Calls running at once, across all tools.
    pub max_concurrent: usize,
    /// How long a call waits for a free slot before it fails.
    pub queue_timeout: Duration,
    /// Limits for tools that do not set their own.
    pub default_limits: Limits,
    /// Where script files are written (once per distinct script).
    pub script_dir: PathBuf,
    /// The Python of `toolsmith runtime setup`, used by python3/python script tools.
    pub runtime_python: Option<PathBuf>,
    /// The nice level of tool processes: above 0 they yield the CPU to the gateway.
    pub tool_niceness: i32,
    /// Put each call in its own pids cgroup when the machine allows it.
    pub use_cgroups: bool,
    /// Python script tools that do not say `warm:` run in the warm runtime (the default);
    /// off, only those saying `warm: true` do.
    pub warm_python: bool,
    /// Keep warm runtimes at all: off for a process that makes one call (a zygote's start
    /// costs more than one cold run), where every script runs cold.
    pub warm_runtime: bool,
    /// A warm runtime forks each call's child ahead of it, between calls (the default); off,
    /// when the call comes (the benches' baseline).
    pub warm_spares: bool,
    /// A zygote that has served no call for this long exits (its memory goes back).
    pub warm_idle: Duration,
    /// Why session built-ins cannot run here (a process that makes one call and exits),
    /// or `None` where they can.
    pub sessions_unavailable: Option<String>,
    /// How many sessions may run at once.
    pub session_limits: session::SessionLimits,
    /// The kernel sandbox of every process the engine starts (SPEC §13).
    pub sandbox: sandbox::SandboxConfig,
}

impl EngineConfig {
    /// Defaults: 1024 calls at once, 30 s queue, the limits of SPEC §5.5, the runtime if it
    /// was set up.
    pub fn new(workspace: impl Into<PathBuf>) -> Self {
        Self {
            workspace: workspace.into(),
            max_concurrent: 1024,
            queue_timeout: Duration::from_secs(30),
            default_limits: limits::defaults(),
            script_dir: std::env::temp_dir().join(format!(
                "toolsmith-scripts-{}",
                rustix::process::getuid().as_raw()
            )),
            runtime_python: runtime::Runtime::default_location()
                .python()
                .filter(|p| p.exists()),
            tool_niceness: limits::TOOL_NICENESS,
            use_cgroups: true,
            warm_python: true,
            warm_runtime: true,
            warm_spares: true,
            warm_idle: warm::IDLE,
            sessions_unavailable: None,
            session_limits: session::SessionLimits::default(),
            sandbox: sandbox::SandboxConfig::default(),
        }
    }
}

/// What the caller says about one call.
#[derive(Debug, Clone, Default)]
pub struct CallOptions {
    /// The user confirmed a dangerous tool.
    pub confirmed: bool,
    /// Who calls (a token's name, `mcp`, `mcp-stdio`, `chat`…): sessions belong to it.
    /// Empty means `local`.
    pub caller: String,
    /// The caller may see and use every caller's sessions.
    pub admin: bool,
    /// Whose rate-limit bucket the call takes from: the token's holder whatever the front
    /// door (empty: `caller`).
    pub principal: String,
    /// What an MCP client calling an upstream tool offers the upstream: its progress token,
    /// a user to ask, answers to earlier questions.
    pub downstream: upstream::Downstream,
    /// Another replica forwarded this session call here (it holds the session): it is
    /// answered here and never forwarded again.
    pub forwarded: bool,
    /// A conversation with the program a script tool runs (code mode): its stdin stays open
    /// for the gateway's answers, and its message lines go to the gateway ([`talk`]).
    pub talk: Option<Arc<talk::Talk>>,
    /// The call's id, decided by its caller (a code-mode program's, which its calls name
    /// before it ends); none: a new one.
    pub call_id: Option<String>,
    /// The run that made this call (a code-mode program's call id).
    pub parent_call_id: Option<String>,
}

impl CallOptions {
    /// A call by `caller`, confirmed or not.
    pub fn new(caller: impl Into<String>, confirmed: bool) -> Self {
        Self {
            confirmed,
            caller: caller.into(),
            admin: false,
            principal: String::new(),
            downstream: upstream::Downstream::default(),
            forwarded: false,
            talk: None,
            call_id: None,
            parent_call_id: None,
        }
    }
}

/// Runs tools. Cheap to share behind an `Arc`; every call is independent.
#[derive(Debug)]
pub struct Engine {
    config: EngineConfig,
    workspace: Workspace,
    global: Arc<Semaphore>,
    /// Each tool's own limit and its semaphore.
    per_tool: Mutex<HashMap<String, (u32, Arc<Semaphore>)>>,
    scripts: script::Scripts,
    cgroups: Option<Arc<limits::Cgroups>>,
    folders: Arc<folders::Folders>,
    /// The warm Python runtime, when its source could be written.
    warm: Option<Arc<warm::Warm>>,
    sessions: session::Sessions,
    upstreams: upstream::Upstreams,
    /// The one HTTP client of `http` tools and the `http_request` built-in.
    http: http::HttpClient,
    /// The kernel sandbox: what the kernel offers, the protected paths, the filters.
    sandbox: Arc<sandbox::Sandboxes>,
    /// Tools' rate limits, per caller; also the server's limits of callers.
    rates: rate::RateLimiter,
    /// Calls waiting for a free slot now.
    queued: std::sync::atomic::AtomicUsize,
}

/// Counts a queued call out when dropped (however its wait ended).
struct QueuedGuard<'a>(&'a std::sync::atomic::AtomicUsize);

impl Drop for QueuedGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

fn scopeguard(counter: &std::sync::atomic::AtomicUsize) -> QueuedGuard<'_> {
    QueuedGuard(counter)
}

/// Why an engine could not start.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The workspace folder is missing or cannot be opened.
    #[error(transparent)]
    Workspace(#[from] workspace::WorkspaceError),
    /// The HTTP client `http` tools and upstreams use could not start.
    #[error(transparent)]
    HttpClient(#[from] http::ClientError),
}

impl Engine {
    /// Fails when the workspace does not exist. Raises this process's open-file limit to its
    /// maximum: each running call holds three pipes.
    pub fn new(config: EngineConfig) -> Result<Self, EngineError> {
        let workspace = Workspace::new(&config.workspace).map_err(EngineError::Workspace)?;
        raise_nofile();
        let cgroups = match config.use_cgroups {
            true => limits::Cgroups::detect().map(Arc::new),
            false => None,
        };
        let folders = Arc::new(folders::Folders::new());
        // No sandboxed process reaches another call's folder or the sessions ledger.
        let own: Vec<PathBuf> = folders
            .root()
            .map(Path::to_path_buf)
            .into_iter()
            .chain([session::ledger_dir()])
            .collect();
        let runtime_env = config.runtime_python.as_deref().and_then(sandbox::venv_of);
        let sandbox = Arc::new(sandbox::Sandboxes::new(
            config.sandbox.clone(),
            workspace.root(),
            runtime_env,
            &own,
        ));
        // Upstream processes are born in cgroup slots like every other process.
        let upstreams = upstream::Upstreams::new(upstream::Spawning {
            cgroups: cgroups.clone(),
            workspace: workspace.root().to_path_buf(),
            limits: config.default_limits,
            niceness: config.tool_niceness,
            sandbox: sandbox.clone(),
            tokens: Arc::default(),
        });
        Ok(Self {
            global: Arc::new(Semaphore::new(config.max_concurrent)),
            per_tool: Mutex::default(),
            scripts: script::Scripts::new(config.script_dir.clone(), config.runtime_python.clone()),
            cgroups,
            folders,
            warm: config
                .warm_runtime
                .then(|| {
                    warm::Warm::new(
                        &config.script_dir,
                        config.warm_idle,
                        sandbox.zygote_filters(),
                        config.warm_spares,
                    )
                    .map(Arc::new)
                    .inspect_err(|e| tracing::warn!("no warm Python runtime: {e}"))
                    .ok()
                })
                .flatten(),
            sessions: session::Sessions::new(
                config.session_limits,
                config.sessions_unavailable.clone(),
            ),
            upstreams,
            http: http::HttpClient::new().map_err(EngineError::HttpClient)?,
            sandbox,
            rates: rate::RateLimiter::default(),
            queued: std::sync::atomic::AtomicUsize::new(0),
            workspace,
            config,
        })
    }

    /// Calls waiting for a free slot now (the global limit or their tool's).
    pub fn queued(&self) -> usize {
        self.queued.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The rate limits of this process (tools' per caller, and callers' own).
    pub fn rates(&self) -> &rate::RateLimiter {
        &self.rates
    }

    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// The kernel sandbox of this engine's processes (SPEC §13).
    pub fn sandbox(&self) -> &sandbox::Sandboxes {
        &self.sandbox
    }

    /// The upstream MCP servers of this engine (SPEC §11).
    pub fn upstreams(&self) -> &upstream::Upstreams {
        &self.upstreams
    }

    /// The sessions of this engine (SPEC §5.4).
    pub fn sessions(&self) -> &session::Sessions {
        &self.sessions
    }

    /// Warm Python runtimes (zygotes) alive now.
    pub fn warm_runtimes(&self) -> usize {
        self.warm.as_deref().map_or(0, warm::Warm::alive)
    }

    /// Starts, in the background, one warm runtime for each Python interpreter (and sandbox
    /// base, [`sandbox::Sandboxes::base`]) that `tools` would run warm, so their first call does not wait for a zygote's start (imports
    /// included, 0.1–0.3 s). Returns how many it is starting. Needs a tokio runtime.
    pub fn prewarm<'t>(&self, tools: impl IntoIterator<Item = &'t Tool>) -> usize {
        let Some(warm) = &self.warm else { return 0 };
        let mut kinds: Vec<warm::Kind> = Vec::new();
        for t in tools {
            let Executor::Script(s) = &t.executor else {
                continue;
            };
            if !t.enabled || !self.runs_warm(t) {
                continue;
            }
            let Ok(interpreter) = self.scripts.interpreter(&s.interpreter) else {
                continue;
            };
            let kind = warm::Kind {
                interpreter,
                base: self.sandbox.base(self.sandbox.policy(t.sandbox.as_ref())),
            };
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
        }
        for kind in &kinds {
            let (warm, cgroups, kind) = (warm.clone(), self.cgroups.clone(), kind.clone());
            tokio::spawn(async move { warm.prewarm(&kind, cgroups.as_ref()).await });
        }
        kinds.len()
    }

    /// Whether `t` is a Python script that runs in the warm runtime here: its own `warm:`, else
    /// the engine's default; never with a `PYTHON*` variable of its own or let through (they
    /// change how Python starts, which a zygote started without them cannot honour).
    pub fn runs_warm(&self, t: &Tool) -> bool {
        let Executor::Script(s) = &t.executor else {
            return false;
        };
        let python = Path::new(&s.interpreter)
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("python"));
        let python_vars = t
            .env
            .keys()
            .chain(&t.env_allowlist)
            .any(|k| k.starts_with("PYTHON"));
        python && !python_vars && s.warm.unwrap_or(self.config.warm_python)
    }

    /// Warm Python runtimes started and waiting for a call.
    pub fn warm_ready(&self) -> usize {
        self.warm.as_deref().map_or(0, warm::Warm::ready)
    }

    /// Calls that ran in a warm Python runtime since the engine started (the others of a
    /// warm tool ran cold: every zygote was busy, or none would start).
    pub fn warm_calls(&self) -> u64 {
        self.warm.as_deref().map_or(0, warm::Warm::served)
    }

    /// Warm Python runtimes started since the engine started (replacements included).
    pub fn warm_starts(&self) -> u64 {
        self.warm.as_deref().map_or(0, warm::Warm::starts)
    }

    /// The processes in this engine's cgroups now (none without cgroups).
    pub fn contained_processes(&self) -> Vec<i32> {
        self.cgroups.as_ref().map_or_else(Vec::new, |c| c.members())
    }

    /// Whether per-call pids cgroups are in use (fork bombs contained, `setsid` escapes
    /// cleaned up).
    pub fn has_cgroups(&self) -> bool {
        self.cgroups.is_some()
    }

    /// The engine's one HTTP client (link-local and metadata addresses refused), for the
    /// server's own fetches on an admin's behalf (an OpenAPI document by URL).
    pub fn http(&self) -> &http::HttpClient {
        &self.http
    }

    /// Runs one call from start to result. Dropping the future kills the call's processes.
    pub async fn call(&self, tool: &CompiledTool, raw: Value, opts: CallOptions) -> ToolResult {
        let started = Instant::now();
        // One span per call (SPEC §15): what was called and by whom, never the arguments.
        let span = tracing::info_span!(
            target: trace::TARGET,
            "call",
            otel.name = %format_args!("call {}", tool.tool.name),
            tool = %tool.tool.name,
            tool.version = tool.version as i64,
            tool.kind = tool.tool.executor.kind(),
            caller = %opts.caller,
            outcome = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
        );
        let ids = (opts.call_id.clone(), opts.parent_call_id.clone());
        let mut result = self
            .call_inner(tool, raw, opts)
            .instrument(span.clone())
            .await;
        result.meta.duration_ms = Some(started.elapsed().as_secs_f64() * 1000.0);
        result.meta.call_id = Some(ids.0.unwrap_or_else(|| session::random_hex(8)));
        result.meta.parent_call_id = ids.1;
        tool.scrub(&mut result);
        if !span.is_disabled() {
            let outcome = match &result.error {
                None => Value::from("ok"),
                Some(e) => serde_json::to_value(e.kind).unwrap_or_default(),
            };
            span.record("outcome", outcome.as_str().unwrap_or("error"));
            if result.error.is_some() {
                span.record("otel.status_code", "ERROR");
            }
        }
        result
    }

    async fn call_inner(&self, tool: &CompiledTool, raw: Value, opts: CallOptions) -> ToolResult {
        let t = &tool.tool;
        if !t.enabled {
            return kinds::mcp::withdrawn(self, tool).unwrap_or_else(|| tool.disabled());
        }
        // The pipeline and the plan: no await inside, so the span is entered.
        let pipeline = tracing::info_span!(target: trace::TARGET, "pipeline").entered();
        let prepared = match tool.prepare(raw) {
            Ok(p) => p,
            Err(problems) => return tool.invalid_arguments(problems),
        };
        let meta = tool.meta(prepared.coerced.clone());
        if t.is_dangerous() && !opts.confirmed {
            return ToolResult::err(
                ErrorKind::NeedsConfirmation,
                format!(
                    "tool `{}` is dangerous: it runs only after the user confirms this call",
                    t.name
                ),
                Vec::new(),
                meta,
            );
        }
        let invocation = match plan::plan(t, &prepared.arguments) {
            Ok(i) => i,
            Err(problems) => return tool.invalid_arguments(problems),
        };
        let problems = self.workspace_paths(t, &prepared.arguments);
        if !problems.is_empty() {
            return tool.invalid_arguments(problems);
        }
        drop(pipeline);
        if let Some(limit) = t.rate_limit
            && let Err(wait) = self
                .rates
                .take(
                    t.name.as_str(),
                    limit,
                    match opts.principal.as_str() {
                        "" => &opts.caller,
                        p => p,
                    },
                )
                .instrument(tracing::info_span!(
                    target: trace::TARGET,
                    "queue",
                    reason = "rate_limit"
                ))
                .await
        {
            let mut meta = meta;
            meta.retry_after_ms = Some(wait.as_millis() as u64 + 1);
            return ToolResult::err(
                ErrorKind::RateLimited,
                format!(
                    "`{}` allows {} for each caller; try again in {:.1} s",
                    t.name,
                    limit.text(),
                    wait.as_secs_f64()
                ),
                Vec::new(),
                meta,
            );
        }
        let _permits = match self.acquire(t).await {
            Ok(p) => p,
            Err(message) => return ToolResult::err(ErrorKind::Timeout, message, Vec::new(), meta),
        };
        let run = tracing::info_span!(
            target: trace::TARGET,
            "run",
            tool.kind = t.executor.kind(),
            runtime = tracing::field::Empty,
        );
        self.execute(t, &prepared.arguments, invocation, &opts, meta)
            .instrument(run)
            .await
    }

    /// Runs a prepared, planned and admitted call on its executor.
    async fn execute(
        &self,
        t: &Tool,
        arguments: &serde_json::Map<String, Value>,
        invocation: Invocation,
        opts: &CallOptions,
        meta: Meta,
    ) -> ToolResult {
        let prepared_arguments = arguments;
        match &t.executor {
            Executor::Builtin(name) if toolsmith_core::builtin::is_session(name) => {
                self.session(t, name, prepared_arguments, opts, meta).await
            }
            Executor::Builtin(name) => {
                self.builtin(t, name, prepared_arguments.clone(), meta)
                    .await
            }
            Executor::Mcp(target) => {
                self.run_mcp(t, target, prepared_arguments.clone(), opts, meta)
                    .await
            }
            Executor::Command(_) | Executor::Script(_) | Executor::Http(_) => {
                match (&t.executor, invocation) {
                    (Executor::Command(_), Invocation::Process(p)) => {
                        self.run_command(t, p, meta).await
                    }
                    (Executor::Script(s), Invocation::Process(p)) => {
                        self.run_script(t, s, p, meta, opts.talk.clone()).await
                    }
                    (Executor::Http(call), Invocation::Http(req)) => {
                        self.run_http(t, call, req, meta).await
                    }
                    _ => ToolResult::err(
                        ErrorKind::Internal,
                        format!("tool `{}`: its plan is not of its kind", t.name),
                        Vec::new(),
                        meta,
                    ),
                }
            }
        }
    }

    /// Parameters marked `workspace_path` (and array items so marked) must not leave the
    /// workspace through a symlink either; the pipeline has already refused absolute paths
    /// and `..`.
    fn workspace_paths(
        &self,
        t: &Tool,
        args: &serde_json::Map<String, Value>,
    ) -> Vec<toolsmith_core::result::Problem> {
        let mut problems = Vec::new();
        let mut check = |pointer: String, v: &Value| {
            if let Some(path) = v.as_str()
                && let Err(message) = self.workspace.check_path(path)
            {
                problems.push(toolsmith_core::result::Problem::new(
                    pointer,
                    message.to_string(),
                ));
            }
        };
        for p in &t.parameters {
            let Some(v) = args.get(&p.name) else { continue };
            if p.workspace_path {
                check(format!("/{}", p.name), v);
            } else if p.items.as_ref().is_some_and(|i| i.workspace_path)
                && let Some(items) = v.as_array()
            {
                for (i, item) in items.iter().enumerate() {
                    check(format!("/{}/{i}", p.name), item);
                }
            }
        }
        problems
    }

    /// A global slot, then the tool's own, waiting at most `queue_timeout` in all.
    async fn acquire(&self, t: &Tool) -> Result<Vec<OwnedSemaphorePermit>, String> {
        let wait = self.config.queue_timeout;
        let tool_sem = t.max_concurrency.map(|n| {
            let mut map = self.per_tool.lock().unwrap_or_else(|e| e.into_inner());
            let entry = map
                .entry(t.name.to_string())
                .or_insert_with(|| (n, Arc::new(Semaphore::new(n as usize))));
            // An edited limit takes effect at once; calls already running keep the permits
            // of the old one until they end.
            if entry.0 != n {
                *entry = (n, Arc::new(Semaphore::new(n as usize)));
            }
            entry.1.clone()
        });
        // Free slots are taken at once; a call that must wait counts as queued meanwhile.
        let mut permits = Vec::with_capacity(2);
        let tool_sem = match tool_sem.map(|s| (s.clone().try_acquire_owned(), s)) {
            Some((Ok(p), _)) => {
                permits.push(p);
                None
            }
            Some((Err(_), s)) => Some(s),
            None => None,
        };
        if tool_sem.is_none()
            && let Ok(p) = self.global.clone().try_acquire_owned()
        {
            permits.push(p);
            return Ok(permits);
        }
        self.queued
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let _queued = scopeguard(&self.queued);
        let acquire = async {
            if let Some(s) = tool_sem {
                permits.push(s.acquire_owned().await.map_err(|e| e.to_string())?);
            }
            permits.push(
                self.global
                    .clone()
                    .acquire_owned()
                    .await
                    .map_err(|e| e.to_string())?,
            );
            Ok::<_, String>(permits)
        };
        // A span only for a call that waits: most take a free slot at once.
        let queue = tracing::info_span!(target: trace::TARGET, "queue", reason = "slot");
        match tokio::time::timeout(wait, acquire).instrument(queue).await {
            Ok(r) => r,
            Err(_) => Err(format!(
                "tool `{}` waited {} ms for a free slot (at most {} calls at once{}); try again later",
                t.name,
                wait.as_millis(),
                self.config.max_concurrent,
                t.max_concurrency
                    .map(|n| format!(", {n} of this tool"))
                    .unwrap_or_default()
            )),
        }
    }
}

fn raise_nofile() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let current = getrlimit(Resource::Nofile);
    if current.maximum != current.current {
        let _ = setrlimit(
            Resource::Nofile,
            rustix::process::Rlimit {
                current: current.maximum,
                maximum: current.maximum,
            },
        );
    }
}

/// The last `max` characters of `s`.
fn tail(s: &str, max: usize) -> String {
    let s = s.trim_end();
    let n = s.chars().count();
    if n <= max {
        s.to_owned()
    } else {
        format!("…{}", s.chars().skip(n - max).collect::<String>())
    }
}
