//! The Streamable HTTP sessions of MCP clients before protocol 2026-07-28, kept in the
//! registry (rmcp's `SessionStore`): what a client said at `initialize`, so a replica that
//! did not open a session takes it up when one of its requests arrives there — no sticky
//! routing needed behind a load balancer. A call's questions to its client travel on that
//! call's own response stream, so they stay with the replica running the call. Sessions are
//! forgotten [`KEEP_MS`] after they were opened, or when their client ends them.

use rmcp::transport::streamable_http_server::session::{
    SessionState, SessionStore, SessionStoreError,
};
use toolsmith_store::{Registry, Store};

/// How long the registry keeps a session a client opened.
pub const KEEP_MS: i64 = 24 * 60 * 60 * 1000;

/// The registry as rmcp's session store.
pub struct RegistrySessions(pub Registry);

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

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
