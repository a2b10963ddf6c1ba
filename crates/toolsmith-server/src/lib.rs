//! toolsmith-server: the REST API under `/v1` (SPEC §7), served by `toolsmith serve`. The
//! only crate that knows HTTP.
//!
//! [`app`] builds the router from an [`AppState`] (tests drive it on port 0); [`serve`] runs
//! it on a listener until a shutdown signal, letting running requests finish. Every failure
//! has one JSON shape ([`error::ApiError`]); secret config values never appear in a response.

pub mod auth;
pub mod error;
pub mod openapi;
mod routes;

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

/// What every request shares.
pub struct AppState {
    pub store: Registry,
    pub engine: Arc<Engine>,
    pub tokens: Vec<Token>,
    /// Entries kept in the execution log.
    pub run_retention: usize,
    /// Compiled tools by name and version: a version never changes, so neither does its entry.
    compiled: Mutex<HashMap<(String, u64), Arc<CompiledTool>>>,
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
        Arc::new(Self {
            store,
            engine,
            tokens,
            run_retention: run_retention.max(1),
            compiled: Mutex::default(),
        })
    }

    /// The compiled form of `tool` at `version`, compiled once.
    pub(crate) fn compiled(
        &self,
        tool: &toolsmith_core::Tool,
        version: u64,
    ) -> Result<Arc<CompiledTool>, String> {
        let key = (tool.name.to_string(), version);
        let mut cache = self.compiled.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = cache.get(&key) {
            return Ok(c.clone());
        }
        let c = Arc::new(CompiledTool::new(tool.clone(), version)?);
        cache.insert(key, c.clone());
        Ok(c)
    }
}

/// The router: `/v1/...`, with authentication, a body limit and JSON 404s.
pub fn app(state: Arc<AppState>) -> Router {
    routes::router()
        .0
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::require,
        ))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(axum::middleware::from_fn(error::json_errors))
        .with_state(state)
}

/// The OpenAPI 3.1 document the server serves at [`openapi::PATH`].
pub fn openapi_document() -> serde_json::Value {
    routes::router().1.as_ref().clone()
}

/// Refuses to listen beyond the loopback interface without a token.
pub fn check_bind(addr: SocketAddr, tokens: &[Token]) -> Result<(), String> {
    if !addr.ip().is_loopback() && tokens.is_empty() {
        return Err(format!(
            "refusing to listen on {addr} without a token: anyone who can reach it could run tools. \
             Add --token NAME=SECRET (or set TOOLSMITH_TOKEN), or listen on 127.0.0.1"
        ));
    }
    Ok(())
}

/// Serves `app` on `listener` until `shutdown` resolves, then waits up to `grace` for running
/// requests (tool calls included) to finish.
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
    grace: Duration,
) -> std::io::Result<()> {
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let server = axum::serve(listener, app).with_graceful_shutdown(async move {
        shutdown.await;
        let _ = tx.send(());
    });
    let server = async move { server.await };
    tokio::select! {
        r = server => r,
        _ = async move {
            let _ = rx.await;
            tokio::time::sleep(grace).await;
        } => {
            eprintln!("toolsmith: requests still running after {} s; stopping anyway", grace.as_secs());
            Ok(())
        }
    }
}
