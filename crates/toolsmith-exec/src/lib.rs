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
mod limits;
mod process;
pub mod runtime;
mod script;
pub mod session;
mod warm;
mod workspace;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use toolsmith_core::CompiledTool;
use toolsmith_core::model::{Executor, Limits, OutputMode, Tool};
use toolsmith_core::plan::{self, Invocation};
use toolsmith_core::result::{ErrorKind, Meta, ToolResult};

pub use capture::{Capture, Captured};
pub use limits::not_dumpable;
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
    /// A zygote that has served no call for this long exits (its memory goes back).
    pub warm_idle: Duration,
    /// Why session built-ins cannot run here (a process that makes one call and exits),
    /// or `None` where they can.
    pub sessions_unavailable: Option<String>,
    /// How many sessions may run at once.
    pub session_limits: session::SessionLimits,
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
            warm_idle: warm::IDLE,
            sessions_unavailable: None,
            session_limits: session::SessionLimits::default(),
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
}

impl CallOptions {
    /// A call by `caller`, confirmed or not.
    pub fn new(caller: impl Into<String>, confirmed: bool) -> Self {
        Self {
            confirmed,
            caller: caller.into(),
            admin: false,
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
    folders: folders::Folders,
    /// The warm Python runtime, when its source could be written.
    warm: Option<Arc<warm::Warm>>,
    sessions: session::Sessions,
}

impl Engine {
    /// Fails when the workspace does not exist. Raises this process's open-file limit to its
    /// maximum: each running call holds three pipes.
    pub fn new(config: EngineConfig) -> Result<Self, String> {
        let workspace = Workspace::new(&config.workspace)?;
        raise_nofile();
        Ok(Self {
            global: Arc::new(Semaphore::new(config.max_concurrent)),
            per_tool: Mutex::default(),
            scripts: script::Scripts::new(config.script_dir.clone(), config.runtime_python.clone()),
            cgroups: if config.use_cgroups {
                limits::Cgroups::detect().map(Arc::new)
            } else {
                None
            },
            folders: folders::Folders::default(),
            warm: config
                .warm_runtime
                .then(|| {
                    warm::Warm::new(&config.script_dir, config.warm_idle)
                        .map(Arc::new)
                        .inspect_err(|e| tracing::warn!("no warm Python runtime: {e}"))
                        .ok()
                })
                .flatten(),
            sessions: session::Sessions::new(
                config.session_limits,
                config.sessions_unavailable.clone(),
            ),
            workspace,
            config,
        })
    }

    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// The sessions of this engine (SPEC §5.4).
    pub fn sessions(&self) -> &session::Sessions {
        &self.sessions
    }

    /// Warm Python runtimes (zygotes) alive now.
    pub fn warm_runtimes(&self) -> usize {
        self.warm.as_deref().map_or(0, warm::Warm::alive)
    }

    /// Starts, in the background, one warm runtime for each Python interpreter that `tools`
    /// would run warm, so their first call does not wait for a zygote's start (imports
    /// included, 0.1–0.3 s). Returns how many it is starting. Needs a tokio runtime.
    pub fn prewarm<'t>(&self, tools: impl IntoIterator<Item = &'t Tool>) -> usize {
        let Some(warm) = &self.warm else { return 0 };
        let mut interpreters: Vec<PathBuf> = tools
            .into_iter()
            .filter(|t| t.enabled && self.runs_warm(t))
            .filter_map(|t| match &t.executor {
                Executor::Script(s) => self.scripts.interpreter(&s.interpreter).ok(),
                _ => None,
            })
            .collect();
        interpreters.sort();
        interpreters.dedup();
        for interpreter in &interpreters {
            let (warm, cgroups, interpreter) =
                (warm.clone(), self.cgroups.clone(), interpreter.clone());
            tokio::spawn(async move { warm.prewarm(&interpreter, cgroups.as_ref()).await });
        }
        interpreters.len()
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

    /// Runs one call from start to result. Dropping the future kills the call's processes.
    pub async fn call(&self, tool: &CompiledTool, raw: Value, opts: CallOptions) -> ToolResult {
        let started = Instant::now();
        let mut result = self.call_inner(tool, raw, opts).await;
        result.meta.duration_ms = Some(started.elapsed().as_secs_f64() * 1000.0);
        result
    }

    async fn call_inner(&self, tool: &CompiledTool, raw: Value, opts: CallOptions) -> ToolResult {
        let t = &tool.tool;
        if !t.enabled {
            return tool.disabled();
        }
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
        let _permits = match self.acquire(t).await {
            Ok(p) => p,
            Err(message) => return ToolResult::err(ErrorKind::Timeout, message, Vec::new(), meta),
        };
        match &t.executor {
            Executor::Builtin(name) if toolsmith_core::builtin::is_session(name) => {
                self.session(t, name, &prepared.arguments, &opts, meta)
                    .await
            }
            Executor::Builtin(name) => self.builtin(t, name, prepared.arguments, meta).await,
            Executor::Command(_) | Executor::Script(_) => self.process(t, invocation, meta).await,
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
                problems.push(toolsmith_core::result::Problem::new(pointer, message));
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
        let acquire = async {
            let mut permits = Vec::with_capacity(2);
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
        match tokio::time::timeout(wait, acquire).await {
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

    async fn builtin(
        &self,
        t: &Tool,
        name: &str,
        args: serde_json::Map<String, Value>,
        meta: Meta,
    ) -> ToolResult {
        let ws = self.workspace.clone();
        let config = t.config.clone();
        let name_owned = name.to_owned();
        let stop = builtin::Stop::default();
        // Raised when this future ends, however it ends: at the deadline, or dropped by a
        // caller that went away.
        let _raise = RaiseOnDrop(stop.clone());
        let task = tokio::task::spawn_blocking(move || {
            builtin::run(&name_owned, &args, &config, &ws, &stop)
        });
        match tokio::time::timeout(Duration::from_millis(t.timeout_ms), task).await {
            Ok(Ok(Ok(data))) => ToolResult::ok(data, meta),
            Ok(Ok(Err(e))) => ToolResult::err(
                ErrorKind::InvalidArguments,
                format!("{name}: {}", e.message),
                Vec::new(),
                meta,
            ),
            Ok(Err(e)) => ToolResult::err(
                ErrorKind::Internal,
                format!("{name} failed: {e}"),
                Vec::new(),
                meta,
            ),
            Err(_) => ToolResult::err(
                ErrorKind::Timeout,
                format!("{name} did not finish within {} ms", t.timeout_ms),
                Vec::new(),
                meta,
            ),
        }
    }

    /// A session built-in: it waits on its session at most the tool's timeout (and 30 s),
    /// and going away stops only the wait, never the session.
    async fn session(
        &self,
        t: &Tool,
        name: &str,
        args: &serde_json::Map<String, Value>,
        opts: &CallOptions,
        meta: Meta,
    ) -> ToolResult {
        let ctx = session::Ctx {
            caller: if opts.caller.is_empty() {
                "local"
            } else {
                &opts.caller
            },
            admin: opts.admin,
            workspace: &self.workspace,
            tool: t,
            limits: t.limits.or(self.config.default_limits),
            niceness: self.config.tool_niceness,
            cgroups: self.cgroups.as_ref(),
        };
        match self.sessions.call(name, args, ctx).await {
            Ok(data) => ToolResult::ok(data, meta),
            Err(session::SessionError::Invalid(m)) => ToolResult::err(
                ErrorKind::InvalidArguments,
                format!("{name}: {m}"),
                Vec::new(),
                meta,
            ),
            Err(session::SessionError::Session(code, m)) => {
                ToolResult::err(ErrorKind::Session, format!("{code}: {m}"), Vec::new(), meta)
            }
        }
    }

    async fn process(&self, t: &Tool, invocation: Invocation, meta: Meta) -> ToolResult {
        let mut argv = invocation.argv;
        // A Python script's interpreter and file, and whether it asked to run warm.
        let mut python: Option<(PathBuf, PathBuf, bool)> = None;
        if let Executor::Script(s) = &t.executor {
            let interpreter = match self.scripts.interpreter(&s.interpreter) {
                Ok(p) => p,
                Err(e) => return ToolResult::err(ErrorKind::SpawnFailed, e, Vec::new(), meta),
            };
            let file = match self.scripts.file(&s.source, &s.interpreter) {
                Ok(p) => p,
                Err(e) => {
                    return ToolResult::err(
                        ErrorKind::Internal,
                        format!("writing the script: {e}"),
                        Vec::new(),
                        meta,
                    );
                }
            };
            argv = vec![
                interpreter.to_string_lossy().into_owned(),
                file.to_string_lossy().into_owned(),
            ];
            let base = Path::new(&s.interpreter)
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            if base.starts_with("python") {
                python = Some((interpreter, file, self.runs_warm(t)));
            }
        }
        // Only allowlisted variables of the server's environment, then the tool's own.
        let mut env: BTreeMap<String, String> = t
            .env_allowlist
            .iter()
            .filter_map(|name| std::env::var(name).ok().map(|v| (name.clone(), v)))
            .collect();
        env.extend(t.env.clone());
        // The program is looked up in the operator's PATH, before parameters are injected
        // (the catalog refuses a parameter named PATH too; this holds whatever it allows).
        let searched = env
            .get("PATH")
            .cloned()
            .unwrap_or_else(|| process::DEFAULT_PATH.to_owned());
        env.extend(invocation.env.into_iter().map(|v| (v.name, v.value)));

        let (cwd, temp) = match &t.working_dir {
            Some(dir) => match self.workspace.resolve(dir, true) {
                Ok(p) => (p, None),
                Err(e) => {
                    return ToolResult::err(
                        ErrorKind::SpawnFailed,
                        format!("working_dir: {e}"),
                        Vec::new(),
                        meta,
                    );
                }
            },
            None => match self.folders.take() {
                Ok(d) => (d.path().to_path_buf(), Some(d)),
                Err(e) => {
                    return ToolResult::err(
                        ErrorKind::Internal,
                        format!("creating a working folder: {e}"),
                        Vec::new(),
                        meta,
                    );
                }
            },
        };
        let limits = t.limits.or(self.config.default_limits);
        // `PYTHON*` variables of the tool's own change how Python starts: those tools run
        // cold and without -I, which would ignore them.
        let python = python.filter(|_| !env.keys().any(|k| k.starts_with("PYTHON")));
        if let Some((interpreter, file, true)) = &python
            && let Some(warm) = &self.warm
        {
            let call = warm::Call {
                interpreter,
                script: file,
                stdin: invocation.stdin.as_deref(),
                env: &env,
                cwd: &cwd,
                timeout: Duration::from_millis(t.timeout_ms),
                limits,
                niceness: self.config.tool_niceness,
            };
            if let Some(done) = warm.run(&call, self.cgroups.as_ref()).await {
                return self.finished(t, done, temp, meta, limits, &searched);
            }
        }
        if python.is_some() {
            // Isolated mode, as the warm runtime runs: no PYTHON* variables, no user site.
            argv.insert(1, "-I".into());
        }
        let spec = process::Spec {
            argv: &argv,
            search_path: &searched,
            stdin: invocation.stdin.as_deref(),
            env,
            cwd,
            timeout: Duration::from_millis(t.timeout_ms),
            limits,
            niceness: self.config.tool_niceness,
        };
        let done = process::run(spec, self.cgroups.as_ref()).await;
        self.finished(t, done, temp, meta, limits, &searched)
    }

    /// The result of a process run: the folder given back, the meta filled in, the output
    /// read by the executor's contract.
    fn finished(
        &self,
        t: &Tool,
        done: Result<process::Finished, process::SpawnError>,
        temp: Option<folders::Folder>,
        mut meta: Meta,
        limits: Limits,
        searched: &str,
    ) -> ToolResult {
        let done = match done {
            Ok(d) => d,
            Err(process::SpawnError::NotFound(program)) => {
                let place = match program.contains('/') {
                    true => String::new(),
                    false => format!(" in the tool's PATH={searched}"),
                };
                return ToolResult::err(
                    ErrorKind::SpawnFailed,
                    format!(
                        "cannot run `{}`: program {program:?} not found{place}",
                        t.name
                    ),
                    Vec::new(),
                    meta,
                );
            }
            Err(process::SpawnError::Other(e)) => {
                return ToolResult::err(
                    ErrorKind::SpawnFailed,
                    format!("cannot run `{}`: {e}", t.name),
                    Vec::new(),
                    meta,
                );
            }
        };
        if let Some(folder) = temp {
            self.folders.give_back(folder, done.contained);
        }
        meta.exit_code = done.exit_code;
        meta.stdout_bytes = Some(done.stdout.total);
        meta.stderr_bytes = Some(done.stderr.total);
        meta.truncated = Some(done.stdout.truncated || done.stderr.truncated);
        meta.lossy = (done.stdout.lossy || done.stderr.lossy).then_some(true);
        finish(t, done, meta, limits)
    }
}

/// Raises a built-in's [`builtin::Stop`] when dropped.
struct RaiseOnDrop(builtin::Stop);

impl Drop for RaiseOnDrop {
    fn drop(&mut self) {
        self.0.raise();
    }
}

/// The result of a process run, by the executor's contract.
fn finish(t: &Tool, done: process::Finished, meta: Meta, limits: Limits) -> ToolResult {
    let output = json!({"stdout": done.stdout.text, "stderr": done.stderr.text});
    if done.timed_out {
        return ToolResult::err(
            ErrorKind::Timeout,
            format!(
                "tool `{}` did not finish within {} ms; its processes were killed",
                t.name, t.timeout_ms
            ),
            Vec::new(),
            meta,
        )
        .with_output(output);
    }
    let status = match (done.exit_code, done.signal) {
        (Some(0), _) => None,
        (Some(code), _) => Some(format!("exited with status {code}")),
        (None, Some(sig)) => Some(format!("was killed by signal {sig}{}", signal_hint(sig))),
        (None, None) => Some("ended without a status".to_string()),
    };
    let json_output = matches!(t.executor, Executor::Script(_)) || t.output == OutputMode::Json;
    if let Some(status) = status {
        let tail = tail(&done.stderr.text, 2000);
        let message = if tail.is_empty() {
            format!("tool `{}` {status}", t.name)
        } else {
            format!("tool `{}` {status}; stderr: {tail}", t.name)
        };
        return ToolResult::err(ErrorKind::ExitStatus, message, Vec::new(), meta)
            .with_output(output);
    }
    if !json_output {
        let data = json!({"stdout": done.stdout.text, "stderr": done.stderr.text, "exit_code": done.exit_code});
        return ToolResult::ok(data, meta);
    }
    if done.stdout.truncated {
        return ToolResult::err(
            ErrorKind::OutputLimit,
            format!(
                "tool `{}` wrote {} bytes of JSON, over its output limit of {} bytes",
                t.name,
                done.stdout.total,
                limits.output_bytes.unwrap_or(0)
            ),
            Vec::new(),
            meta,
        )
        .with_output(output);
    }
    match serde_json::from_str::<Value>(done.stdout.text.trim()) {
        Ok(data) => ToolResult::ok(data, meta),
        Err(e) => {
            let head: String = done.stdout.text.chars().take(200).collect();
            ToolResult::err(
                ErrorKind::BadOutput,
                format!(
                    "tool `{}` did not print one JSON value on stdout ({e}); it printed: {head:?}",
                    t.name
                ),
                Vec::new(),
                meta,
            )
            .with_output(output)
        }
    }
}

fn signal_hint(sig: i32) -> &'static str {
    match sig {
        9 => " (killed: a limit was reached, or the call was cancelled)",
        11 => " (segmentation fault)",
        24 => " (CPU time limit)",
        25 => " (file size limit)",
        _ => "",
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
