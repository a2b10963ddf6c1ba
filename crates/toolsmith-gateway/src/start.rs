//! Starting and stopping the gateway, the same for every long-running command (`serve`,
//! `mcp`, `chat`): who may call ([`Startup`]), then the background work — following the
//! registry's changes made by other processes, the upstream MCP servers, warm Python
//! runtimes for the registry's tools — and, at the end, sessions and upstreams ended and the
//! run log flushed ([`Gateway::stop`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use toolsmith_exec::Engine;
use toolsmith_store::Registry;

use crate::Gateway;
use crate::identity::{LocalToken, Token};
use crate::jwt::JwtVerifier;

/// How a gateway starts.
#[derive(Default)]
pub struct Startup {
    /// Static bearer tokens.
    pub tokens: Vec<Token>,
    /// Entries kept in the execution log (0: [`crate::DEFAULT_RUN_RETENTION`]).
    pub run_retention: usize,
    /// The local admin's secret, asked of every request when there are no tokens and no JWT
    /// issuer.
    pub local_token: Option<LocalToken>,
    /// JWTs accepted besides the tokens.
    pub jwt: Option<Arc<JwtVerifier>>,
    /// How clients reach this server (the protected resource metadata).
    pub public_url: Option<String>,
    /// The rate limit of callers whose token gives none.
    pub rate_limit: Option<toolsmith_core::rate::RateLimit>,
    /// Where other replicas reach this one for its sessions.
    pub advertise: Option<String>,
    /// What a code-mode program may use (the defaults when absent).
    pub code_limits: Option<crate::code::CodeLimits>,
}

impl Gateway {
    /// The gateway over `store` and `engine`, started: rate limits shared when the registry
    /// is (PostgreSQL), the registry followed, the upstream MCP servers started in the
    /// background, warm runtimes started for the registry's Python tools. Inside a Tokio
    /// runtime.
    pub fn start(store: Registry, engine: Arc<Engine>, startup: Startup) -> Arc<Self> {
        let retention = match startup.run_retention {
            0 => crate::DEFAULT_RUN_RETENTION,
            n => n,
        };
        let gateway = Self::with_retention(store, engine, startup.tokens, retention);
        if let Some(token) = startup.local_token {
            gateway.set_local_token(token);
        }
        gateway.set_identity_with(startup.jwt, startup.public_url, startup.rate_limit);
        gateway.share_rate_limits();
        if let Some(url) = &startup.advertise {
            gateway.advertise(url);
        }
        if let Some(limits) = startup.code_limits {
            gateway.set_code_limits(limits);
        }
        follow_registry(&gateway, FOLLOW_INTERVAL);
        crate::federation::start(&gateway);
        prewarm_registry(&gateway);
        gateway
    }

    /// Stops what the gateway started: sessions get `grace` to exit after TERM, upstream
    /// servers likewise, and every call answered is written to the execution log.
    pub async fn stop(&self, grace: Duration) {
        self.engine.sessions().shutdown(grace).await;
        self.engine.upstreams().shutdown(grace).await;
        self.runs.flush().await;
    }
}

/// How often [`follow_registry`] looks at the registry's generation.
pub const FOLLOW_INTERVAL: Duration = Duration::from_millis(250);

/// Follows changes made by other processes sharing the registry (a second `serve` on the same
/// PostgreSQL, `toolsmith import` on the same SQLite file): polls the store's generation
/// every `every` and, when it moved, tells this process's followers (MCP snapshots and
/// list_changed notifications). Runs until the state is dropped.
pub fn follow_registry(gateway: &Arc<Gateway>, every: Duration) -> tokio::task::JoinHandle<()> {
    use toolsmith_store::Store;
    let weak = Arc::downgrade(gateway);
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
pub fn prewarm_registry(gateway: &Arc<Gateway>) -> tokio::task::JoinHandle<usize> {
    use toolsmith_store::Store;
    let state = gateway.clone();
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
