//! `/mcp`'s two ways of serving ([`McpService`], [`dispatch`]): an `initialize` or a request
//! carrying `Mcp-Session-Id` goes to Streamable HTTP sessions (clients before protocol
//! 2026-07-28: a question an upstream asks during a call needs the client's session to reach
//! it); anything else is served statelessly — a 2026-07-28 request, and an older client's
//! request sent without a session (a one-off `curl`, a client that ignores the session id),
//! as `/mcp` always served them.
//!
//! Sessions are kept in the registry (rmcp's `SessionStore`): what a client said at
//! `initialize`, so a replica that did not open a session takes it up when one of its
//! requests arrives there — no sticky routing needed behind a load balancer. A call's
//! questions to its client travel on that call's own response stream, so they stay with the
//! replica running the call. Sessions are forgotten [`KEEP_MS`] after they were opened, or
//! when their client ends them.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::session::{
    SessionState, SessionStore, SessionStoreError,
};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use toolsmith_gateway::Gateway;
use toolsmith_store::{Registry, Store, now_ms};

use crate::mcp::McpServer;

/// `/mcp`'s services: with sessions, and stateless.
#[derive(Clone)]
pub struct McpService {
    sessions: StreamableHttpService<McpServer, LocalSessionManager>,
    stateless: StreamableHttpService<McpServer, NeverSessionManager>,
}

impl McpService {
    /// Both services over `handler` (one handler per session or request:
    /// [`McpServer::for_connection`]), with `config`'s checks.
    pub fn new(
        state: &Arc<Gateway>,
        handler: McpServer,
        config: StreamableHttpServerConfig,
    ) -> Self {
        let mut with_sessions = config.clone().with_legacy_session_mode(true);
        with_sessions.session_store = Some(Arc::new(RegistrySessions(state.store.clone())));
        let other = handler.clone();
        Self {
            sessions: StreamableHttpService::new(
                move || Ok(handler.for_connection()),
                Arc::new(LocalSessionManager::default()),
                with_sessions,
            ),
            stateless: StreamableHttpService::new(
                move || Ok(other.for_connection()),
                Arc::new(NeverSessionManager::default()),
                config.with_legacy_session_mode(false),
            ),
        }
    }
}

/// Sends a request to the sessions (an `initialize`, or one naming its session) or to the
/// stateless service (everything else).
pub async fn dispatch(State(service): State<McpService>, request: Request) -> Response {
    if request.headers().contains_key("mcp-session-id") {
        return service.sessions.handle(request).await.into_response();
    }
    if request.method() != axum::http::Method::POST {
        return service.stateless.handle(request).await.into_response();
    }
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, crate::BODY_LIMIT).await {
        Ok(b) => b,
        Err(_) => {
            return crate::error::ApiError::new(
                axum::http::StatusCode::PAYLOAD_TOO_LARGE,
                "too_large",
                format!("the request body is over {} bytes", crate::BODY_LIMIT),
            )
            .into_response();
        }
    };
    let initialize = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .is_some_and(|v| v.get("method").and_then(serde_json::Value::as_str) == Some("initialize"));
    let request = Request::from_parts(parts, Body::from(bytes));
    match initialize {
        true => service.sessions.handle(request).await.into_response(),
        false => service.stateless.handle(request).await.into_response(),
    }
}

/// How long the registry keeps a session a client opened.
pub const KEEP_MS: i64 = 24 * 60 * 60 * 1000;

/// The registry as rmcp's session store.
pub struct RegistrySessions(pub Registry);

#[async_trait::async_trait]
impl SessionStore for RegistrySessions {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let Some(text) = self.0.mcp_session(session_id, now_ms() - KEEP_MS).await? else {
            return Ok(None);
        };
        Ok(Some(serde_json::from_str(&text)?))
    }

    async fn store(&self, session_id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        let text = serde_json::to_string(state)?;
        self.0
            .put_mcp_session(session_id, &text, now_ms(), KEEP_MS)
            .await?;
        Ok(())
    }

    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        self.0.drop_mcp_session(session_id).await?;
        Ok(())
    }
}
