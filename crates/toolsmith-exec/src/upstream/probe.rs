//! A server definition tried apart from the served upstreams (`POST /v1/check/server`):
//! started with its own event channel, so nothing is recorded or served, until its first
//! listing or a timeout, then stopped.

use std::time::Duration;

use serde_json::Value;
use tokio::sync::broadcast;
use toolsmith_core::upstream::McpServer;

use super::{Control, Status, Upstreams, lock, supervise};

impl Upstreams {
    /// Starts `def` apart from the served upstreams (nothing is recorded or served), waits
    /// for its first listing at most `timeout`, and stops it: its MCP `Tool` objects, or why
    /// it did not list them — with the end of its stderr either way (secrets as `***`).
    pub async fn probe(
        &self,
        def: McpServer,
        timeout: Duration,
    ) -> (Result<Vec<Value>, ProbeError>, String) {
        let secrets = def.secret_values();
        // Its own event channel: the registry side never hears of it.
        let up = supervise::spawn(def, self.inner.spawning.clone(), broadcast::channel(16).0);
        let mut changed = up.changed.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        let outcome = loop {
            {
                let st = lock(&up.state);
                match (&st.status, &st.tools) {
                    (Status::Ready, Some(tools)) => break Ok(tools.clone()),
                    (Status::Failed, _) => {
                        break Err(ProbeError::Failed(
                            st.last_error.clone().unwrap_or_else(|| "it failed".into()),
                        ));
                    }
                    (Status::Stopped, _) => break Err(ProbeError::Disabled),
                    _ => {}
                }
            }
            if tokio::time::timeout_at(deadline, changed.changed())
                .await
                .is_err()
            {
                break Err(ProbeError::Timeout(timeout.as_secs()));
            }
        };
        let _ = up.control.send(Control::Stop);
        // Its stderr so far, once it has had a moment to say why it stopped.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let bytes: Vec<u8> = lock(&up.stderr).iter().copied().collect();
        let scrub = |text: &str| toolsmith_core::secrets::scrub(text, &secrets);
        // A failure's reason may quote what the server printed: no secret value in it either.
        (
            outcome.map_err(|why| match why {
                ProbeError::Failed(why) => ProbeError::Failed(scrub(&why)),
                other => other,
            }),
            scrub(&String::from_utf8_lossy(&bytes)),
        )
    }
}

/// Why a server tried apart did not list its tools.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProbeError {
    /// It failed to start or to answer; its last error (secret values as `***`).
    #[error("{0}")]
    Failed(String),
    #[error("it is disabled (enabled: false)")]
    Disabled,
    #[error("no tools listed within {0} s")]
    Timeout(u64),
}
