//! toolsmith-server: the front doors' wire formats — the REST API under `/v1` (SPEC §7), MCP
//! over Streamable HTTP and stdio, the web UI's assets — over the running gateway
//! ([`toolsmith_gateway::Gateway`]), which every door calls for who is calling, what they
//! may see and the one call path. The only crate that knows HTTP.
//!
//! [`app`] builds the router from a [`Gateway`] (tests drive it on port 0); [`serve`] runs
//! it on a listener until a shutdown signal, letting running requests finish. Every failure
//! has one JSON shape ([`error::ApiError`]); secret config values never appear in a response.

pub mod auth;
mod drain;
pub mod error;
pub mod guard;
pub mod mcp;
mod mcp_sessions;
pub mod metrics;
mod oauth;
pub mod openapi;
mod routes;
mod traces;
pub mod ui;
pub mod view;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use toolsmith_gateway::{Gateway, Role, Token};

/// The largest request body accepted.
pub const BODY_LIMIT: usize = 4 * 1024 * 1024;

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
pub fn app(state: Arc<Gateway>) -> Router {
    app_with(state, HttpOptions::default())
}

/// The router: `/v1/...` and `/mcp` (Streamable HTTP, stateless), behind the browser guard
/// ([`guard`]), with authentication, a body limit and JSON errors.
pub fn app_with(state: Arc<Gateway>, options: HttpOptions) -> Router {
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
    let service = mcp_sessions::McpService::new(&state, handler, config);
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
        .route(
            toolsmith_gateway::connections::CALLBACK_PATH,
            axum::routing::get(oauth::callback),
        )
        .route(
            toolsmith_gateway::connections::CLIENT_METADATA_PATH,
            axum::routing::get(oauth::client_metadata),
        )
        .route(
            "/mcp/{toolset}",
            axum::routing::any(mcp_sessions::dispatch).with_state(service.clone()),
        )
        .route(
            "/mcp",
            axum::routing::any(mcp_sessions::dispatch).with_state(service),
        )
        .layer(axum::middleware::from_fn(mcp::params::repair_http))
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
        .layer(axum::middleware::from_fn(drain::layer))
        .with_state(state)
}

/// After a successful write to the registry (any method but GET on `/v1/tools...`, except
/// calls and validations), tells whoever follows the registry (MCP) that it changed. One
/// place for every write route, so a new one cannot forget.
async fn note_changes(
    axum::extract::State(state): axum::extract::State<Arc<Gateway>>,
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

/// An address the server refuses to listen on.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "refusing to listen on {0} without a token: anyone who can reach it could run tools. \
     Add --token NAME=SECRET (or set TOOLSMITH_TOKEN), or listen on 127.0.0.1"
)]
pub struct OpenToAll(pub SocketAddr);

/// Refuses to listen beyond the loopback interface without a token (or a JWT issuer: `jwt`).
pub fn check_bind(addr: SocketAddr, tokens: &[Token], jwt: bool) -> Result<(), OpenToAll> {
    if !addr.ip().is_loopback() && tokens.is_empty() && !jwt {
        return Err(OpenToAll(addr));
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
