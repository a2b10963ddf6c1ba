//! toolsmith-server: the REST API under `/v1` (SPEC §7), served by `toolsmith serve`. The
//! only crate that knows HTTP.
//!
//! [`app`] builds the router from an [`AppState`] (tests drive it on port 0); [`serve`] runs
//! it on a listener until a shutdown signal, letting running requests finish. Every failure
//! has one JSON shape ([`error::ApiError`]); secret config values never appear in a response.

pub mod auth;
pub mod error;
pub mod federation;
pub mod gateway;
pub mod guard;
pub mod jwt;
pub mod mcp;
pub mod mcp_ask;
pub mod mcp_params;
mod mcp_result;
pub mod mcp_search;
mod mcp_snapshot;
mod mcp_view;
pub mod metrics;
pub mod openapi;
mod routes;
pub mod runlog;
pub mod sessions;
mod traces;
pub mod ui;
pub mod view;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use toolsmith_core::CompiledTool;
use toolsmith_exec::Engine;
use toolsmith_store::Registry;

pub use auth::{Role, Token};

/// Entries the execution log keeps by default.
pub const DEFAULT_RUN_RETENTION: usize = 100_000;

/// The largest request body accepted.
pub const BODY_LIMIT: usize = 4 * 1024 * 1024;

/// Compiled tools kept at most.
const COMPILED_CACHE: usize = 4096;

/// Name, version, enabled, dangerous.
type CompiledKey = (String, u64, bool, bool);

/// What every request shares.
pub struct AppState {
    pub store: Registry,
    pub engine: Arc<Engine>,
    pub tokens: Vec<Token>,
    /// Entries kept in the execution log.
    pub run_retention: usize,
    /// The execution log's writer (batched, in the background).
    pub runs: runlog::RunLog,
    /// Compiled tools by name, version, and the current state a pinned version runs under
    /// (enabled, dangerous): a version never changes, so neither does its entry.
    compiled: Mutex<HashMap<CompiledKey, Arc<CompiledTool>>>,
    /// The current version of the tools called lately, as read at one registry generation:
    /// a call finds its tool here instead of reading the registry (see [`Self::current`]).
    current: Mutex<(u64, HashMap<String, Arc<CompiledTool>>)>,
    /// Counts registry changes; MCP snapshots and list_changed notifications follow it.
    changes: tokio::sync::watch::Sender<u64>,
    /// What could not be served of each upstream's tools (name collisions, refused
    /// definitions).
    pub federation_problems: federation::Problems,
    /// Prometheus metrics ([`metrics`]).
    pub metrics: metrics::Metrics,
    /// JWT verification and how clients reach this server, when configured ([`Self::set_identity`]).
    identity: std::sync::OnceLock<Identity>,
    /// The toolsets as read at one registry generation ([`Self::toolsets`]).
    toolsets: Mutex<Option<(u64, view::Toolsets)>>,
    /// Where this replica's sessions are recorded, and how calls for another's are sent on.
    directory: Arc<sessions::RegistryDirectory>,
    /// A server with no tokens and no JWT issuer asks every request for this secret and
    /// makes its bearer the local admin ([`Self::set_local_token`]); unset, every request is.
    local_token: std::sync::OnceLock<LocalToken>,
}

/// The local admin's secret and the file it is kept in (named in refusals).
#[derive(Debug, Clone)]
pub struct LocalToken {
    pub secret: String,
    pub file: std::path::PathBuf,
}

impl AppState {
    pub fn new(store: Registry, engine: Arc<Engine>, tokens: Vec<Token>) -> Arc<Self> {
        Self::with_retention(store, engine, tokens, DEFAULT_RUN_RETENTION)
    }

    /// The same, keeping `run_retention` entries (at least 1) in the execution log.
    pub fn with_retention(
        store: Registry,
        engine: Arc<Engine>,
        tokens: Vec<Token>,
        run_retention: usize,
    ) -> Arc<Self> {
        let directory = sessions::RegistryDirectory::start(store.clone());
        engine.sessions().set_directory(directory.clone());
        Arc::new(Self {
            runs: runlog::RunLog::start(store.clone(), run_retention.max(1)),
            store,
            engine,
            tokens,
            run_retention: run_retention.max(1),
            compiled: Mutex::default(),
            current: Mutex::default(),
            changes: tokio::sync::watch::Sender::new(0),
            federation_problems: federation::Problems::default(),
            metrics: metrics::Metrics::new(),
            toolsets: Mutex::default(),
            identity: std::sync::OnceLock::new(),
            directory,
            local_token: std::sync::OnceLock::new(),
        })
    }

    /// With no tokens and no JWT issuer, asks every request for `token` (kept in a file only
    /// this user can read, out of every sandboxed process's reach): a process the gateway
    /// starts, which can reach its port, is then never the local admin. Set once, at start.
    pub fn set_local_token(&self, token: LocalToken) {
        let _ = self.local_token.set(token);
    }

    /// The local admin's secret, when set.
    pub fn local_token(&self) -> Option<&LocalToken> {
        self.local_token.get()
    }

    /// Says where this replica can be reached: replicas sharing its registry forward calls
    /// for its sessions there ([`sessions`]).
    pub fn advertise(&self, url: &str) {
        self.directory.advertise(url);
    }

    /// Says the registry changed (a write here, or one a replica announced).
    pub fn changed(&self) {
        self.changes.send_modify(|g| *g += 1);
    }

    /// The current version of `name` if it was read since the last change this process saw
    /// (its own writes at once; other processes' within [`FOLLOW_INTERVAL`]).
    pub(crate) fn current(&self, name: &str) -> Option<Arc<CompiledTool>> {
        let current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        (current.0 == self.generation())
            .then(|| current.1.get(name).cloned())
            .flatten()
    }

    /// Remembers `tool` as current, read from the registry at `generation` (taken before
    /// the read, so a change that raced with it makes the entry stale, never the reverse).
    pub(crate) fn remember_current(&self, generation: u64, tool: Arc<CompiledTool>) {
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        if current.0 != generation {
            if generation < current.0 {
                return;
            }
            *current = (generation, HashMap::new());
        }
        if current.1.len() >= COMPILED_CACHE {
            current.1.clear();
        }
        current.1.insert(tool.tool.name.to_string(), tool);
    }

    /// Accepts JWTs from `jwt`'s issuer (besides the static tokens); `public_url` is how
    /// clients reach this server, for the protected resource metadata. Set once, at start.
    pub fn set_identity(&self, jwt: Option<Arc<jwt::JwtVerifier>>, public_url: Option<String>) {
        self.set_identity_with(jwt, public_url, None);
    }

    /// [`Self::set_identity`] with the rate limit of callers whose token gives none
    /// (`serve --rate-limit`).
    pub fn set_identity_with(
        &self,
        jwt: Option<Arc<jwt::JwtVerifier>>,
        public_url: Option<String>,
        rate_limit: Option<toolsmith_core::rate::RateLimit>,
    ) {
        let _ = self.identity.set(Identity {
            jwt,
            public_url,
            rate_limit,
        });
    }

    /// Whether `caller` may call `tool` now under its own rate limit (its token's, else the
    /// server's): `None`, or the refusal (kind `rate_limited`, `meta.retry_after_ms`).
    pub async fn admit(
        &self,
        caller: &auth::Caller,
        tool: &CompiledTool,
    ) -> Option<toolsmith_core::ToolResult> {
        let limit = caller
            .rate_limit
            .or_else(|| self.identity.get().and_then(|i| i.rate_limit));
        let limit = limit?;
        let who = caller.log_name();
        self.engine
            .rates()
            // One scope per distinct limit: callers with different limits never reset
            // each other's buckets.
            .take(&format!("caller {}", limit.text()), limit, &who)
            .await
            .err()
            .map(|wait| {
                let mut meta = tool.meta(Vec::new());
                meta.retry_after_ms = Some(wait.as_millis() as u64 + 1);
                toolsmith_core::ToolResult::err(
                    toolsmith_core::ErrorKind::RateLimited,
                    format!(
                        "{who:?} may make {} calls; try again in {:.1} s",
                        limit.text(),
                        wait.as_secs_f64()
                    ),
                    Vec::new(),
                    meta,
                )
            })
    }

    pub fn jwt(&self) -> Option<&Arc<jwt::JwtVerifier>> {
        self.identity.get().and_then(|i| i.jwt.as_ref())
    }

    pub fn public_url(&self) -> Option<&str> {
        self.identity.get().and_then(|i| i.public_url.as_deref())
    }

    /// Keeps rate-limit buckets in the registry when it is shared by replicas (PostgreSQL),
    /// so a limit holds across them; with SQLite they stay in this process.
    pub fn share_rate_limits(&self) {
        if matches!(self.store, Registry::Postgres(_)) {
            self.engine
                .rates()
                .share(Arc::new(RegistryBuckets(self.store.clone())));
        }
    }

    /// Every live toolset, read again only after the registry changed.
    pub async fn toolsets(&self) -> toolsmith_store::Result<view::Toolsets> {
        let generation = self.generation();
        if let Some((g, sets)) = &*self.toolsets.lock().unwrap_or_else(|e| e.into_inner())
            && *g == generation
        {
            return Ok(sets.clone());
        }
        let sets = view::read_toolsets(self).await?;
        *self.toolsets.lock().unwrap_or_else(|e| e.into_inner()) = Some((generation, sets.clone()));
        Ok(sets)
    }

    /// How many changes have been seen.
    pub fn generation(&self) -> u64 {
        *self.changes.borrow()
    }

    /// Wakes on every change.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// The compiled form of `tool` at `version`, compiled once. The cache is bounded: when
    /// full it starts again (recompiling takes microseconds per tool).
    pub(crate) fn compiled(
        &self,
        tool: &toolsmith_core::Tool,
        version: u64,
    ) -> Result<Arc<CompiledTool>, String> {
        let key = (
            tool.name.to_string(),
            version,
            tool.enabled,
            tool.is_dangerous(),
        );
        let mut cache = self.compiled.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = cache.get(&key) {
            return Ok(c.clone());
        }
        let c = Arc::new(CompiledTool::new(tool.clone(), version)?);
        if cache.len() >= COMPILED_CACHE {
            cache.clear();
        }
        cache.insert(key, c.clone());
        Ok(c)
    }
}

/// Rate-limit buckets in the registry ([`Registry::take_rate`]).
struct RegistryBuckets(Registry);

impl toolsmith_exec::rate::SharedBuckets for RegistryBuckets {
    fn take<'a>(
        &'a self,
        scope: &'a str,
        limit: toolsmith_core::rate::RateLimit,
        key: &'a str,
    ) -> std::pin::Pin<Box<dyn Future<Output = Result<Option<Duration>, String>> + Send + 'a>> {
        Box::pin(async move {
            match self.0.take_rate(scope, key, limit).await {
                Some(Ok(wait)) => Ok(wait.map(Duration::from_millis)),
                Some(Err(e)) => Err(e.to_string()),
                None => Err("this registry keeps no rate limits".into()),
            }
        })
    }
}

/// Who may call besides the static tokens.
struct Identity {
    jwt: Option<Arc<jwt::JwtVerifier>>,
    public_url: Option<String>,
    /// Callers' rate limit when their token gives none.
    rate_limit: Option<toolsmith_core::rate::RateLimit>,
}

/// How the HTTP server behaves towards browsers and MCP clients.
#[derive(Debug, Clone, Default)]
pub struct HttpOptions {
    /// MCP clients may run dangerous tools without asking.
    pub allow_dangerous: bool,
    /// `Host` values accepted besides localhost, 127.0.0.1 and [::1] (DNS-rebinding
    /// defence): `name` (any port) or `name:port`; `*` accepts any.
    pub allowed_hosts: Vec<String>,
    /// Browser origins that may change state besides the server's own (and, for `/mcp`,
    /// http://localhost, http://127.0.0.1 and http://[::1] on any port); they also get CORS
    /// headers.
    pub allowed_origins: Vec<String>,
    /// The address the server listens on: a specific non-loopback one is an allowed `Host`.
    pub listen: Option<SocketAddr>,
    /// Leave `/metrics` out of this router (`--metrics off`, or served on `--metrics-addr`).
    pub no_metrics: bool,
}

/// The router with the default options (loopback hosts, the server's own origin).
pub fn app(state: Arc<AppState>) -> Router {
    app_with(state, HttpOptions::default())
}

/// The router: `/v1/...` and `/mcp` (Streamable HTTP, stateless), behind the browser guard
/// ([`guard`]), with authentication, a body limit and JSON errors.
pub fn app_with(state: Arc<AppState>, options: HttpOptions) -> Router {
    let policy = Arc::new(guard::Policy::new(
        &options.allowed_hosts,
        &options.allowed_origins,
        options.listen,
    ));
    let handler = mcp::McpServer::new(
        state.clone(),
        mcp::McpOptions {
            allow_dangerous: options.allow_dangerous,
            notify_changes: false,
            caller: "mcp".into(),
            toolset: None,
        },
    );
    // rmcp checks Host and Origin on /mcp too; the guard in front has already applied the
    // same lists, so these are a second line.
    let hosts = ["localhost", "127.0.0.1", "::1", "[::1]"]
        .into_iter()
        .map(String::from)
        .chain(policy.extra_hosts().iter().cloned());
    let origins = ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"]
        .into_iter()
        .map(String::from)
        .chain(policy.extra_origins().iter().cloned());
    let mut config = rmcp::transport::streamable_http_server::StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins)
        .with_max_request_body_bytes(BODY_LIMIT);
    if policy.any_host() {
        config = config.disable_allowed_hosts();
    }
    let service = rmcp::transport::streamable_http_server::StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(
            rmcp::transport::streamable_http_server::session::never::NeverSessionManager::default(),
        ),
        config,
    );
    let mut router = routes::router();
    if !options.no_metrics {
        router = router.route(metrics::PATH, axum::routing::get(metrics::serve));
    }
    router
        .merge(ui::routes())
        .route(
            "/.well-known/oauth-protected-resource",
            axum::routing::get(auth::resource_metadata),
        )
        .route(
            "/.well-known/oauth-protected-resource/{*resource}",
            axum::routing::get(auth::resource_metadata),
        )
        .route_service("/mcp/{toolset}", service.clone())
        .route_service("/mcp", service)
        .layer(axum::middleware::from_fn(mcp_params::repair_http))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            note_changes,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            view::attach,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::require,
        ))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(axum::middleware::from_fn(error::refuse_nul))
        .layer(axum::middleware::from_fn(error::json_errors))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            metrics::track,
        ))
        .layer(axum::middleware::from_fn(traces::request))
        .layer(axum::middleware::from_fn_with_state(policy, guard::check))
        .with_state(state)
}

/// How often [`follow_registry`] looks at the registry's generation.
pub const FOLLOW_INTERVAL: Duration = Duration::from_millis(250);

/// Follows changes made by other processes sharing the registry (a second `serve` on the same
/// PostgreSQL, `toolsmith import` on the same SQLite file): polls the store's generation
/// every `every` and, when it moved, tells this process's followers (MCP snapshots and
/// list_changed notifications). Runs until the state is dropped.
pub fn follow_registry(state: &Arc<AppState>, every: Duration) -> tokio::task::JoinHandle<()> {
    use toolsmith_store::Store;
    let weak = Arc::downgrade(state);
    tokio::spawn(async move {
        let mut last = None;
        let mut ticks = tokio::time::interval(every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            let Some(state) = weak.upgrade() else { return };
            match state.store.generation().await {
                Ok(g) => {
                    state.metrics.polled();
                    if last.is_some_and(|l| l != g) {
                        state.changed();
                    }
                    last = Some(g);
                }
                Err(e) => tracing::warn!("reading the registry's generation: {e}"),
            }
        }
    })
}

/// Starts, in the background, a warm runtime for each Python interpreter the registry's
/// enabled tools run warm ([`Engine::prewarm`]), so their first call does not wait for one.
/// Reads the registry a page at a time and keeps one tool per interpreter, so a registry of
/// 100 000 tools costs no more memory than a page. The task answers how many it started.
pub fn prewarm_registry(state: &Arc<AppState>) -> tokio::task::JoinHandle<usize> {
    use toolsmith_store::Store;
    let state = state.clone();
    tokio::spawn(async move {
        let mut keep: HashMap<String, toolsmith_core::Tool> = HashMap::new();
        let mut query = toolsmith_store::Query {
            limit: 1000,
            ..Default::default()
        };
        loop {
            let page = match state.store.search(&query).await {
                Ok(page) => page,
                Err(e) => {
                    tracing::warn!("reading the registry to start warm runtimes: {e}");
                    break;
                }
            };
            for record in page.items {
                if let toolsmith_core::model::Executor::Script(s) = &record.tool.executor
                    && state.engine.runs_warm(&record.tool)
                    && !keep.contains_key(&s.interpreter)
                {
                    keep.insert(s.interpreter.clone(), record.tool);
                }
            }
            match page.next_cursor {
                Some(cursor) => query.cursor = Some(cursor),
                None => break,
            }
        }
        state.engine.prewarm(keep.values())
    })
}

/// After a successful write to the registry (any method but GET on `/v1/tools...`, except
/// calls and validations), tells whoever follows the registry (MCP) that it changed. One
/// place for every write route, so a new one cannot forget.
async fn note_changes(
    axum::extract::State(state): axum::extract::State<Arc<AppState>>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let path = req.uri().path();
    let writes = path.starts_with("/v1/tools") && auth::needed(req.method(), path) == Role::Admin;
    let response = next.run(req).await;
    if writes && response.status().is_success() {
        state.changed();
    }
    response
}

/// Refuses to listen beyond the loopback interface without a token (or a JWT issuer: `jwt`).
pub fn check_bind(addr: SocketAddr, tokens: &[Token], jwt: bool) -> Result<(), String> {
    if !addr.ip().is_loopback() && tokens.is_empty() && !jwt {
        return Err(format!(
            "refusing to listen on {addr} without a token: anyone who can reach it could run tools. \
             Add --token NAME=SECRET (or set TOOLSMITH_TOKEN), or listen on 127.0.0.1"
        ));
    }
    Ok(())
}

/// How the HTTP server treats connections.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// Connections open at once; more are closed as they arrive.
    pub max_connections: usize,
    /// Time a client has to send a request's headers, and how long an idle keep-alive
    /// connection waits for the next request, before it is closed.
    pub header_timeout: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            max_connections: 4096,
            header_timeout: Duration::from_secs(15),
        }
    }
}

/// Serves `app` on `listener` until `shutdown` resolves, then waits up to `grace` for running
/// requests (tool calls included) to finish. Connections are capped and idle or slow ones are
/// closed ([`ConnectionLimits`]): thousands of idle sockets cannot exhaust file handles.
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
    grace: Duration,
) -> std::io::Result<()> {
    serve_with(listener, app, shutdown, grace, ConnectionLimits::default()).await
}

/// [`serve`] with chosen [`ConnectionLimits`].
pub async fn serve_with(
    listener: tokio::net::TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
    grace: Duration,
    limits: ConnectionLimits,
) -> std::io::Result<()> {
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.max_connections));
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut shutdown = std::pin::pin!(shutdown);
    let mut refused_logged = false;
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(c) => c,
                Err(e) => {
                    // Out of file handles, say: wait a little rather than spin.
                    tracing::warn!("accepting a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            if !refused_logged {
                tracing::warn!(
                    "{} connections are open, the most allowed; closing new ones until some end",
                    limits.max_connections
                );
                refused_logged = true;
            }
            drop(stream);
            continue;
        };
        refused_logged = false;
        let _ = stream.set_nodelay(true);
        let service = hyper_util::service::TowerToHyperService::new(app.clone());
        let mut stop = stop_rx.clone();
        let header_timeout = limits.header_timeout;
        tokio::spawn(async move {
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(header_timeout)
                .keep_alive(true);
            let conn = builder
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .with_upgrades();
            let mut conn = std::pin::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                () = async move { let _ = stop.wait_for(|s| *s).await.map(drop); } => {
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                }
            }
            drop(slot);
        });
    }
    drop(listener);
    let _ = stop_tx.send(true);
    let all = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
    tokio::select! {
        _ = slots.acquire_many(all) => {}
        () = tokio::time::sleep(grace) => {
            eprintln!("toolsmith: requests still running after {} s; stopping anyway", grace.as_secs());
        }
    }
    Ok(())
}
