//! One admitted call of an MCP client, run: who calls (for the engine), an upstream tool's
//! progress under the client's own token, its questions put to the client's user, its log
//! messages passed on, and the client's cancellation.

use std::sync::Arc;
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{GetExtensions, ProgressNotificationParam, ProtocolVersion, ServerRequest};
use rmcp::service::RequestContext;
use serde_json::Value;
use toolsmith_core::{CompiledTool, ErrorKind, ToolResult};
use toolsmith_gateway::CallOptions;
use toolsmith_gateway::upstream::Elicitor;

use super::McpServer;
use toolsmith_store::Store;

impl McpServer {
    /// Who calls, for the engine (sessions belong to it): over HTTP with a token, `mcp:`
    /// and the token's name (an admin token sees every session); otherwise this front
    /// door's name (`mcp`, `mcp-stdio`).
    pub(super) fn call_options(
        &self,
        confirmed: bool,
        ctx: &RequestContext<RoleServer>,
    ) -> CallOptions {
        let token = ctx
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|p| p.extensions.get::<toolsmith_gateway::Caller>())
            .filter(|c| c.auth_required);
        match token {
            Some(c) => CallOptions {
                admin: c.role == toolsmith_gateway::Role::Admin,
                principal: c.log_name(),
                ..CallOptions::new(
                    format!("{}:{}", self.options.caller, c.log_name()),
                    confirmed,
                )
            },
            None => CallOptions::new(self.options.caller.clone(), confirmed),
        }
    }

    pub(super) async fn run(
        &self,
        admitted: toolsmith_gateway::call::Admitted,
        tool: &Arc<CompiledTool>,
        arguments: Value,
        (confirmed, resume): (bool, Option<toolsmith_gateway::upstream::Resume>),
        ctx: &RequestContext<RoleServer>,
    ) -> ToolResult {
        let token = ctx.meta.get_progress_token();
        let mut options = self.call_options(confirmed, ctx);
        super::relay::prepare(&mut options.downstream, ctx, resume);
        // An upstream tool's own progress goes to the client under the client's token.
        let upstream = tool.tool.executor.upstream().is_some();
        let (progress_tx, mut progress) = tokio::sync::mpsc::unbounded_channel();
        if upstream && token.is_some() {
            options.downstream.progress = Some(progress_tx);
        }
        if upstream {
            askers(ctx, &mut options.downstream);
        }
        // An upstream tool's log messages, at the level this client asked for (looked up
        // only for those: a session's level is a registry read).
        let (log_tx, mut logs) = tokio::sync::mpsc::unbounded_channel();
        let log_level = match upstream {
            true => self.log_level(ctx).await,
            false => None,
        };
        if log_level.is_some() {
            options.downstream.log = Some(log_tx);
        }
        let pass_log = |message: Value| async move {
            if let Some(param) = log_param(message, log_level) {
                notify_log(&ctx.peer, param).await;
            }
        };
        let call = admitted.run(arguments, None, options);
        tokio::pin!(call);
        let mut ticks = tokio::time::interval_at(
            tokio::time::Instant::now() + Duration::from_secs(1),
            Duration::from_secs(1),
        );
        let started = std::time::Instant::now();
        let forward = |p: toolsmith_gateway::upstream::Progress| {
            let token = token.clone();
            async move {
                if let Some(token) = token {
                    let _ = ctx.peer.notify_progress(progress_param(&token, p)).await;
                }
            }
        };
        loop {
            tokio::select! {
                result = &mut call => {
                    // The upstream's last notes can arrive just before its result: they go
                    // out before it too.
                    while let Ok(p) = progress.try_recv() {
                        forward(p).await;
                    }
                    while let Ok(m) = logs.try_recv() {
                        pass_log(m).await;
                    }
                    return result;
                }
                // Dropping the call kills the tool's process group (and the call path logs it
                // as cancelled).
                _ = ctx.ct.cancelled() => {
                    return ToolResult::err(
                        ErrorKind::Cancelled,
                        format!("the call of `{}` was cancelled by the client", tool.tool.name),
                        Vec::new(),
                        tool.meta(Vec::new()),
                    );
                }
                Some(p) = progress.recv(), if upstream => forward(p).await,
                Some(m) = logs.recv(), if upstream => pass_log(m).await,
                _ = ticks.tick(), if token.is_some() && !upstream => {
                    if let Some(token) = &token {
                        let elapsed = started.elapsed().as_secs_f64();
                        let param = ProgressNotificationParam::new(token.clone(), elapsed.floor())
                            .with_message(format!("`{}` running for {elapsed:.0} s", tool.tool.name));
                        let _ = ctx.peer.notify_progress(param).await;
                    }
                }
            }
        }
    }
}

/// Who answers an upstream tool's question of one kind during a call: this client, asked
/// with the request `make` builds, when the client declares what `can` looks for and the
/// protocol lets a server ask during a call (before 2026-07-28; with it, the question
/// reaches the client in the upstream's relayed "input required", and over stateless HTTP it
/// is parked or declined).
fn asker(
    ctx: &RequestContext<RoleServer>,
    can: fn(&rmcp::model::ClientCapabilities) -> bool,
    make: fn(Value) -> Result<ServerRequest, serde_json::Error>,
) -> Option<Elicitor> {
    let modern = ctx
        .protocol_version()
        .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
    let declared = ctx.client_capabilities().is_some_and(|c| can(&c));
    (!modern && declared).then(|| ask_client(ctx, make))
}

/// An upstream's questions for the caller: its user's answers (`elicitation/create`), its
/// model's (`sampling/createMessage`), its client's roots (`roots/list`).
#[allow(deprecated)] // Sampling and roots are deprecated by 2026-07-28 (SEP-2577), still in use.
fn askers(
    ctx: &RequestContext<RoleServer>,
    downstream: &mut toolsmith_gateway::upstream::Downstream,
) {
    let shows_urls = ctx
        .client_capabilities()
        .and_then(|c| c.elicitation)
        .is_some_and(|e| e.url.is_some());
    downstream.elicit = asker(
        ctx,
        |c| c.elicitation.is_some(),
        |params| {
            Ok(ServerRequest::ElicitRequest(
                rmcp::model::ElicitRequest::new(serde_json::from_value(params)?),
            ))
        },
    )
    .map(|ask| url_mode_only_if(shows_urls, ask));
    downstream.sample = asker(
        ctx,
        |c| c.sampling.is_some(),
        |params| {
            Ok(ServerRequest::CreateMessageRequest(
                rmcp::model::CreateMessageRequest::new(serde_json::from_value(params)?),
            ))
        },
    );
    downstream.roots = asker(
        ctx,
        |c| c.roots.is_some(),
        |_| Ok(ServerRequest::ListRootsRequest(Default::default())),
    );
}

/// `ask`, but a URL-mode question (`mode: "url"`) declined without asking when the client
/// did not declare it can show one.
fn url_mode_only_if(shows_urls: bool, ask: Elicitor) -> Elicitor {
    Elicitor(Arc::new(move |params: Value| {
        if !shows_urls && params.get("mode").and_then(Value::as_str) == Some("url") {
            return Box::pin(async { Ok(serde_json::json!({"action": "decline"})) });
        }
        (ask.0)(params)
    }))
}

/// Asks this client with the request `make` builds from an upstream's params, on the stream
/// of the client's own call: the request carries the call's id, since the upstream's
/// question is passed on from another task (the upstream connection's, or the call's).
fn ask_client(
    ctx: &RequestContext<RoleServer>,
    make: fn(Value) -> Result<ServerRequest, serde_json::Error>,
) -> Elicitor {
    let (peer, origin) = (ctx.peer.clone(), ctx.id.clone());
    Elicitor(Arc::new(move |params: Value| {
        let (peer, origin) = (peer.clone(), origin.clone());
        Box::pin(async move {
            let mut request = make(params)?;
            request
                .extensions_mut()
                .insert(rmcp::service::OriginatingRequestId(origin));
            // Sent from a task of its own: rmcp would otherwise mark it with the request the
            // current task serves (an upstream's, on the upstream connection's task).
            let answer = tokio::spawn(async move { peer.send_request(request).await }).await??;
            Ok(serde_json::to_value(answer)?)
        })
    }))
}

/// An upstream's progress under this client's token.
pub(super) fn progress_param(
    token: &rmcp::model::ProgressToken,
    p: toolsmith_gateway::upstream::Progress,
) -> ProgressNotificationParam {
    let mut param = ProgressNotificationParam::new(token.clone(), p.progress);
    if let Some(total) = p.total {
        param = param.with_total(total);
    }
    if let Some(message) = p.message {
        param = param.with_message(message);
    }
    param
}

#[allow(deprecated)] // Logging is deprecated by 2026-07-28 (SEP-2577), still in use.
async fn notify_log(
    peer: &rmcp::Peer<RoleServer>,
    param: rmcp::model::LoggingMessageNotificationParam,
) {
    let _ = peer.notify_logging_message(param).await;
}

/// Where a 2026-07-28 request opts in to log messages, at or above a level (SEP-2575).
pub const LOG_LEVEL_META: &str = "io.modelcontextprotocol/logLevel";

/// The MCP log levels, least severe first.
const LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// A level's rank in [`LEVELS`].
pub(super) fn level_rank(level: &str) -> Option<usize> {
    LEVELS.iter().position(|l| *l == level)
}

/// An upstream's log message for this client, if its level is at least `least`.
#[allow(deprecated)] // Logging is deprecated by 2026-07-28 (SEP-2577), still in use.
fn log_param(
    message: Value,
    least: Option<usize>,
) -> Option<rmcp::model::LoggingMessageNotificationParam> {
    let rank = level_rank(message.get("level")?.as_str()?)?;
    (rank >= least?).then_some(())?;
    serde_json::from_value(message).ok()
}

impl McpServer {
    /// The least level of log message this request's client gets, or `None` for none: on
    /// protocol 2026-07-28 the request's [`LOG_LEVEL_META`] (none without it); before, what
    /// the client set with `logging/setLevel` — on this connection, or for a session what the
    /// registry keeps for it (set on any replica) — every message when it set nothing.
    async fn log_level(&self, ctx: &RequestContext<RoleServer>) -> Option<usize> {
        let modern = ctx
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        if modern {
            return ctx
                .meta
                .get(LOG_LEVEL_META)
                .and_then(Value::as_str)
                .and_then(level_rank);
        }
        // A session's level is the registry's (any replica may have been told it last);
        // a connection's (stdio, a stateless request) is its own.
        let here = *self.log_level.lock().unwrap_or_else(|e| e.into_inner());
        let Some(id) = session_id(ctx) else {
            return Some(here.unwrap_or(0));
        };
        let kept = match self.state.store.mcp_session_level(&id).await {
            Ok(level) => level.as_deref().and_then(level_rank),
            Err(e) => {
                tracing::warn!("reading MCP session {id}'s log level: {e}");
                here
            }
        };
        Some(kept.unwrap_or(0))
    }
}

/// The `Mcp-Session-Id` a request came with (a 2025-11-25 client's session on `/mcp`).
pub(super) fn session_id(ctx: &RequestContext<RoleServer>) -> Option<String> {
    ctx.extensions
        .get::<axum::http::request::Parts>()?
        .headers
        .get("mcp-session-id")?
        .to_str()
        .ok()
        .map(str::to_owned)
}
