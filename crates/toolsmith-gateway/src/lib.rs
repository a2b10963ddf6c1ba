//! toolsmith-gateway: the running gateway, between the engine and the registry below and the
//! front doors above (REST, MCP over HTTP and stdio, the web UI, `chat`). It knows no wire
//! format: a door reads its request into a caller, a view and a call, asks the gateway, and
//! writes the answer back in its own format.
//!
//! One [`Gateway`] per process composes the services:
//! - who is calling ([`identity`], [`jwt`]) and what they may see ([`view`]);
//! - **the one call path** ([`call`]): admit under the caller's rate limit, run in the engine,
//!   count in the metrics, write the run log — and log `cancelled` when a door drops a call;
//! - the registry's tools compiled once per version, and the generation every follower
//!   (MCP snapshots, list_changed notifications) watches ([`Gateway::changed`]);
//! - upstream MCP servers behind the registry ([`federation`], [`problems`]);
//! - sessions across replicas ([`sessions`]), shared rate-limit buckets ([`rates`]);
//! - the run-log writer ([`runlog`]) and the metrics registry ([`metrics`]);
//! - starting the background work ([`start`]).
//!
//! The engine's call-facing types a door needs are re-exported here ([`CallOptions`],
//! [`upstream`], [`trace`]), so a door reaches the engine only through the gateway.

pub mod call;
pub mod caller;
pub mod code;
pub mod connections;
pub mod engine;
pub mod federation;
pub mod fetch;
pub mod guardrails;
pub mod identity;
pub mod jwt;
pub mod metrics;
pub mod offer_pins;
pub mod offers;
mod pending;
pub mod problems;
pub mod rates;
pub mod runlog;
pub mod sessions;
pub mod start;
pub mod view;
pub mod watches;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use toolsmith_core::CompiledTool;
use toolsmith_store::Registry;

pub use identity::{Caller, LocalToken, Role, Token};
pub use toolsmith_exec::{
    CallOptions, Engine, EngineConfig, sandbox::propose_writes, session::random_hex, trace,
    upstream,
};

/// Entries the execution log keeps by default.
pub const DEFAULT_RUN_RETENTION: usize = 100_000;

/// Compiled tools kept at most.
const COMPILED_CACHE: usize = 4096;

/// Name, version, enabled, dangerous.
type CompiledKey = (String, u64, bool, bool);

/// The running gateway: what every front door shares.
pub struct Gateway {
    pub store: Registry,
    pub engine: Arc<Engine>,
    /// Who is calling: tokens, the JWT issuer, the local admin's secret.
    pub auth: identity::Authenticator,
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
    /// The upstreams' offers as served (prompts and templates approved), read at one
    /// registry generation: a read or a get does not read the pins (see `offers::offers`).
    served_offers: Mutex<Option<(u64, Vec<toolsmith_exec::upstream::ServerOffer>)>>,
    /// The enabled tools, read at one registry generation, by code mode's module and
    /// function names: programs find their tools here instead of reading the registry (see
    /// [`Self::code_namespace`]).
    namespace: Mutex<Option<(u64, Arc<code::Namespace>)>>,
    /// `run_code` compiled, by its limits (the server's, or a request's shorter time).
    code_tools: Mutex<HashMap<code::CodeLimits, Arc<CompiledTool>>>,
    /// Counts registry changes; MCP snapshots and list_changed notifications follow it.
    changes: tokio::sync::watch::Sender<u64>,
    /// What could not be served of each upstream's tools (name collisions, refused
    /// definitions).
    pub federation_problems: problems::Problems,
    /// Prometheus metrics ([`metrics`]).
    pub metrics: metrics::Metrics,
    /// How clients reach this server and the default rate limit, when configured
    /// ([`Self::set_identity_with`]).
    settings: OnceLock<Settings>,
    /// The toolsets as read at one registry generation ([`Self::toolsets`]).
    toolsets: Mutex<Option<(u64, view::Toolsets)>>,
    /// Where this replica's sessions are recorded, and how calls for another's are sent on.
    directory: Arc<sessions::RegistryDirectory>,
    /// Clients' subscriptions to upstream resources ([`watches`]).
    watchers: watches::Watchers,
    /// What a code-mode program may use here ([`Self::code_limits`]).
    code_limits: OnceLock<code::CodeLimits>,
    /// OAuth authorizations begun here, waiting for their callback ([`connections`]).
    authorizations: connections::Authorizations,
}

/// What the gateway could not do for a door.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    #[error(transparent)]
    Store(#[from] toolsmith_store::StoreError),
    /// A stored definition that does not compile (a registry written by a newer version).
    #[error("tool {0:?}: {1}")]
    Compile(String, toolsmith_core::schema::SchemaError),
    /// A forwarded call of a tool that is not a session call.
    #[error("{0:?} is not a session call a replica forwards")]
    NotForwarded(String),
}

/// Set once, at start.
struct Settings {
    public_url: Option<String>,
    /// Callers' rate limit when their token gives none.
    rate_limit: Option<toolsmith_core::rate::RateLimit>,
}

impl Gateway {
    pub fn new(store: Registry, engine: Arc<Engine>, tokens: Vec<Token>) -> Arc<Self> {
        Self::with_retention(store, engine, tokens, DEFAULT_RUN_RETENTION)
    }

    /// The same, keeping `run_retention` entries (at least 1) in the execution log. Starts
    /// the run-log and session-directory writers (inside a Tokio runtime).
    pub fn with_retention(
        store: Registry,
        engine: Arc<Engine>,
        tokens: Vec<Token>,
        run_retention: usize,
    ) -> Arc<Self> {
        let directory = sessions::RegistryDirectory::start(store.clone());
        engine.sessions().set_directory(directory.clone());
        engine
            .upstreams()
            .set_token_store(Arc::new(connections::RegistryTokens::new(store.clone())));
        Arc::new(Self {
            runs: runlog::RunLog::start(store.clone(), run_retention.max(1)),
            store,
            engine,
            auth: identity::Authenticator::new(tokens),
            run_retention: run_retention.max(1),
            compiled: Mutex::default(),
            current: Mutex::default(),
            served_offers: Mutex::default(),
            namespace: Mutex::default(),
            code_tools: Mutex::default(),
            changes: tokio::sync::watch::Sender::new(0),
            federation_problems: problems::Problems::default(),
            metrics: metrics::Metrics::new(),
            toolsets: Mutex::default(),
            settings: OnceLock::new(),
            directory,
            watchers: Default::default(),
            code_limits: OnceLock::new(),
            authorizations: Default::default(),
        })
    }

    /// What a code-mode program may use on this server (`serve --code-*`); the defaults
    /// until set. Set once, at start.
    pub fn set_code_limits(&self, limits: code::CodeLimits) {
        let _ = self.code_limits.set(limits);
    }

    pub fn code_limits(&self) -> code::CodeLimits {
        self.code_limits.get().copied().unwrap_or_default()
    }

    /// With no tokens and no JWT issuer, asks every request for `token` (kept in a file only
    /// this user can read, out of every sandboxed process's reach): a process the gateway
    /// starts, which can reach its port, is then never the local admin. Set once, at start.
    pub fn set_local_token(&self, token: LocalToken) {
        self.auth.set_local_token(token);
    }

    /// The local admin's secret, when set.
    pub fn local_token(&self) -> Option<&LocalToken> {
        self.auth.local_token()
    }

    /// The static tokens.
    pub fn tokens(&self) -> &[Token] {
        self.auth.tokens()
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

    /// How many changes have been seen.
    pub fn generation(&self) -> u64 {
        *self.changes.borrow()
    }

    /// Wakes on every change.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// The current version of `name` if it was read since the last change this process saw
    /// (its own writes at once; other processes' within [`start::FOLLOW_INTERVAL`]).
    pub fn current(&self, name: &str) -> Option<Arc<CompiledTool>> {
        let current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        (current.0 == self.generation())
            .then(|| current.1.get(name).cloned())
            .flatten()
    }

    /// Remembers `tool` as current, read from the registry at `generation` (taken before
    /// the read, so a change that raced with it makes the entry stale, never the reverse).
    pub fn remember_current(&self, generation: u64, tool: Arc<CompiledTool>) {
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
        if let Some(jwt) = jwt {
            self.auth.set_jwt(jwt);
        }
        let _ = self.settings.set(Settings {
            public_url,
            rate_limit,
        });
    }

    pub fn jwt(&self) -> Option<&Arc<jwt::JwtVerifier>> {
        self.auth.jwt()
    }

    pub fn public_url(&self) -> Option<&str> {
        self.settings.get().and_then(|s| s.public_url.as_deref())
    }

    /// The rate limit of callers whose token gives none.
    pub fn default_rate_limit(&self) -> Option<toolsmith_core::rate::RateLimit> {
        self.settings.get().and_then(|s| s.rate_limit)
    }

    /// Every live toolset, read again only after the registry changed.
    pub async fn toolsets(&self) -> toolsmith_store::Result<view::Toolsets> {
        let generation = self.generation();
        if let Some((g, sets)) = &*self.toolsets.lock().unwrap_or_else(|e| e.into_inner())
            && *g == generation
        {
            return Ok(sets.clone());
        }
        let sets = view::read_toolsets(&self.store).await?;
        *self.toolsets.lock().unwrap_or_else(|e| e.into_inner()) = Some((generation, sets.clone()));
        Ok(sets)
    }

    /// The view of `caller` asking for `ask` ([`view::resolve`]).
    pub async fn view(
        &self,
        caller: &Caller,
        ask: &view::Ask,
    ) -> Result<view::View, view::ViewError> {
        if caller.toolsets.is_empty() && ask.is_empty() {
            return Ok(view::View::everything());
        }
        view::resolve(&self.toolsets().await?, caller, ask)
    }

    /// The enabled tools `view` admits, compiled at their current version, in name order.
    pub async fn enabled_tools(
        &self,
        view: &view::View,
    ) -> Result<Vec<Arc<CompiledTool>>, GatewayError> {
        use toolsmith_store::StoreExt;
        let records = self
            .store
            .search_all(toolsmith_store::Query::default())
            .await?;
        records
            .into_iter()
            .filter(|r| view.admits(&r.tool))
            .map(|r| self.compiled(&r.tool, r.version))
            .collect()
    }

    /// Every enabled tool, as of the registry's generation now, by code mode's names (kept
    /// until the generation changes; the generation taken before the read, so a change that
    /// raced with it makes the kept index stale, never the reverse).
    pub async fn code_namespace(&self) -> Result<Arc<code::Namespace>, GatewayError> {
        use toolsmith_store::StoreExt;
        let generation = self.generation();
        if let Some((at, kept)) = &*self.namespace.lock().unwrap_or_else(|e| e.into_inner())
            && *at == generation
        {
            return Ok(kept.clone());
        }
        let tools: Vec<toolsmith_core::Tool> = self
            .store
            .search_all(toolsmith_store::Query::default())
            .await?
            .into_iter()
            .map(|r| r.tool)
            .filter(|t| t.enabled)
            .collect();
        let namespace = Arc::new(code::Namespace::new(tools));
        let mut kept = self.namespace.lock().unwrap_or_else(|e| e.into_inner());
        if kept.as_ref().is_none_or(|(at, _)| *at <= generation) {
            *kept = Some((generation, namespace.clone()));
        }
        Ok(namespace)
    }

    /// The metrics as text, with what is sampled at scrape time.
    pub fn metrics_text(&self) -> String {
        self.metrics.encode(&self.engine, self.generation())
    }

    /// The compiled form of `tool` at `version`, compiled once. The cache is bounded: when
    /// full it starts again (recompiling takes microseconds per tool).
    pub fn compiled(
        &self,
        tool: &toolsmith_core::Tool,
        version: u64,
    ) -> Result<Arc<CompiledTool>, GatewayError> {
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
        let c = Arc::new(
            CompiledTool::new(tool.clone(), version)
                .map_err(|e| GatewayError::Compile(tool.name.to_string(), e))?,
        );
        if cache.len() >= COMPILED_CACHE {
            cache.clear();
        }
        cache.insert(key, c.clone());
        Ok(c)
    }
}
