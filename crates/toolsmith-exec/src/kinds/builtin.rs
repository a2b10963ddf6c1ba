//! Built-in tools: run inside toolsmith on a blocking thread, stopping at the deadline
//! (file built-ins over the workspace's descriptors), or served by the engine's sessions.

use super::*;

impl Engine {
    pub(crate) async fn builtin(
        &self,
        t: &Tool,
        name: &str,
        args: serde_json::Map<String, Value>,
        meta: Meta,
    ) -> ToolResult {
        if name == "http_request" {
            return self.http_request(t, &args, meta).await;
        }
        let ws = self.workspace.clone();
        let config = t.config.clone();
        let name_owned = name.to_owned();
        let stop = crate::builtin::Stop::default();
        // Raised when this future ends, however it ends: at the deadline, or dropped by a
        // caller that went away.
        let _raise = RaiseOnDrop(stop.clone());
        let task = tokio::task::spawn_blocking(move || {
            crate::builtin::run(&name_owned, &args, &config, &ws, &stop)
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

    /// `http_request`: on the engine's HTTP client, not a blocking thread.
    async fn http_request(
        &self,
        t: &Tool,
        args: &serde_json::Map<String, Value>,
        meta: Meta,
    ) -> ToolResult {
        let deadline = Duration::from_millis(t.timeout_ms);
        let sent = tokio::time::timeout(
            deadline,
            crate::builtin::http::request(&self.http, args, &t.config),
        );
        match sent.await {
            Ok(Ok(data)) => ToolResult::ok(data, meta),
            Ok(Err(e)) => ToolResult::err(
                e.kind,
                format!("http_request: {}", e.message),
                Vec::new(),
                meta,
            ),
            Err(_) => ToolResult::err(
                ErrorKind::Timeout,
                format!("http_request did not finish within {} ms", t.timeout_ms),
                Vec::new(),
                meta,
            ),
        }
    }

    /// A session built-in: it waits on its session at most the tool's timeout (and 30 s),
    /// and going away stops only the wait, never the session.
    pub(crate) async fn session(
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
            sandbox: &self.sandbox,
            forwarded: opts.forwarded,
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
            // The replica holding the session answered: its answer, saying it came from there.
            Err(session::SessionError::Answered(answer, replica)) => {
                let mut answer = *answer;
                answer.meta.forwarded_to = Some(replica);
                answer
            }
        }
    }
}

/// Raises a built-in's [`crate::builtin::Stop`] when dropped.
struct RaiseOnDrop(crate::builtin::Stop);

impl Drop for RaiseOnDrop {
    fn drop(&mut self) {
        self.0.raise();
    }
}
