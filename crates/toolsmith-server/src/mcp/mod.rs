//! MCP (SPEC §7): every enabled registry tool as an MCP tool, over stdio (`toolsmith mcp`) or
//! Streamable HTTP at `/mcp` (`toolsmith serve`), with the official Rust SDK (rmcp).
//!
//! The handler is written by hand, not with rmcp's `#[tool]` macros: tools live in the
//! registry and change at run time. `tools/list` and `tools/call` read an in-memory
//! [`Snapshot`] of the enabled tools ([`crate::mcp::snapshot`]), rebuilt when the registry's
//! change counter moves; which tools a request sees is [`crate::mcp::view`]'s. Calls go through
//! the whole argument pipeline and the execution engine; argument and execution failures are
//! results with `isError: true` whose text names each problem and the tool's parameters, so a
//! model can retry. An unknown or disabled tool is a protocol error (-32602).
//!
//! The folder is the protocol, one file a concern: this handler (initialize, tools, the
//! subscription that sends `list_changed`), [`params`] (repairing `tools/call` params before
//! rmcp reads them), [`snapshot`] (the tools as MCP serves them), [`view`] (which of them a
//! request sees), [`search`] (search mode), [`ask`] (questions an upstream asks a 2026-07-28
//! client on an older upstream's behalf), [`relay`] (a 2026-07-28 upstream's "input required"
//! handed to a 2026-07-28 client, its state sealed), [`confirm`] (confirmation of dangerous
//! tools), [`result`] (a result in MCP's form), [`offers`] (the upstreams' resources,
//! prompts and completions), [`call`] (a `tools/call` answered), [`tasks`] (an upstream's tasks
//! relayed, their ids sealed). Logging will be a file of its own here.

mod ask;
mod call;
mod code;
mod confirm;
mod offers;
pub mod params;
mod relay;
mod result;
mod run;
pub mod search;
mod snapshot;
mod tasks;
mod view;

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CompleteRequestParams,
    CompleteResult, GetPromptRequestParams, GetPromptResponse, GetTaskParams, GetTaskResult,
    Implementation, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams,
    ReadResourceResponse, ServerCapabilities, ServerConfig, SubscriptionFilter, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;
use tokio::sync::Mutex;
use toolsmith_core::{CompiledTool, ErrorKind, ToolResult};
use toolsmith_store::{Store, decode_cursor, encode_cursor};

pub use result::to_mcp;
pub use snapshot::Snapshot;
use toolsmith_gateway::Gateway;
use toolsmith_gateway::view::View;

use ask::{Next, Parking};

/// Tools per `tools/list` page.
pub const PAGE_SIZE: usize = 200;

/// How an MCP front door behaves.
#[derive(Debug, Clone, Default)]
pub struct McpOptions {
    /// Run dangerous tools without asking (the server's operator has agreed for everyone).
    pub allow_dangerous: bool,
    /// Send `notifications/tools/list_changed` to the client when the registry changes (a
    /// connection that lasts: stdio).
    pub notify_changes: bool,
    /// Recorded as the caller in the execution log.
    pub caller: String,
    /// Serve only this toolset's members (`toolsmith mcp --toolset`); over HTTP the request
    /// says (`/mcp/{toolset}`, headers), see [`crate::view`].
    pub toolset: Option<String>,
}

/// The MCP server handler; cheap to clone (one per HTTP request or stdio connection).
#[derive(Clone)]
pub struct McpServer {
    pub(crate) state: Arc<Gateway>,
    pub(crate) options: Arc<McpOptions>,
    snapshot: Arc<Mutex<Option<Arc<Snapshot>>>>,
    /// Upstream calls waiting for this server's clients to answer a question.
    parking: Parking,
    /// The least log level this connection's client asked for (`logging/setLevel`), as a
    /// rank of the MCP levels.
    log_level: Arc<std::sync::Mutex<Option<usize>>>,
    /// The upstream resources this connection's client subscribed to (`resources/subscribe`),
    /// and whether their updates are being passed on.
    watches: offers::Watches,
    notifier: Arc<std::sync::OnceLock<()>>,
    /// The registry's change signal as it was when each `subscriptions/listen` was
    /// acknowledged (rmcp acknowledges before [`ServerHandler::listen`] runs).
    acknowledged: Arc<std::sync::Mutex<Vec<tokio::sync::watch::Receiver<u64>>>>,
}

impl McpServer {
    pub fn new(state: Arc<Gateway>, options: McpOptions) -> Self {
        Self {
            state,
            options: Arc::new(options),
            snapshot: Arc::default(),
            parking: Parking::default(),
            log_level: Arc::default(),
            watches: Arc::default(),
            notifier: Arc::default(),
            acknowledged: Arc::default(),
        }
    }

    /// A handler for one more connection (a Streamable HTTP session, or one stateless
    /// request): the snapshot and the parked calls shared, what belongs to a connection —
    /// its log level, watched resources, notifier, acknowledged subscriptions — its own.
    pub fn for_connection(&self) -> Self {
        Self {
            state: self.state.clone(),
            options: self.options.clone(),
            snapshot: self.snapshot.clone(),
            parking: self.parking.clone(),
            log_level: Arc::default(),
            watches: Arc::default(),
            notifier: Arc::default(),
            acknowledged: Arc::default(),
        }
    }

    /// The current snapshot, rebuilt first when the registry changed since it was taken.
    pub async fn snapshot(&self) -> Result<Arc<Snapshot>, ErrorData> {
        let mut guard = self.snapshot.lock().await;
        let generation = self.state.generation();
        if let Some(s) = guard.as_ref().filter(|s| s.generation == generation) {
            return Ok(s.clone());
        }
        let s = Arc::new(
            Snapshot::build(&self.state, generation)
                .await
                .map_err(|e| {
                    tracing::error!("reading the registry for MCP: {e}");
                    ErrorData::internal_error("the registry could not be read", None)
                })?,
        );
        *guard = Some(s.clone());
        Ok(s)
    }
}

/// Whether an upstream's questions go to this client as "input required": a client on the
/// 2026-07-28 protocol that can show a form.
fn asks_back(ctx: &RequestContext<RoleServer>) -> bool {
    ctx.protocol_version()
        .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28)
        && ctx
            .client_capabilities()
            .is_some_and(|c| c.elicitation.is_some())
}

/// Reads every enabled tool and renders it for MCP.
impl ServerHandler for McpServer {
    #[allow(deprecated)] // Logging is deprecated by 2026-07-28 (SEP-2577), still served.
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_resources()
                .enable_resources_list_changed()
                .enable_resources_subscribe()
                .enable_prompts()
                .enable_prompts_list_changed()
                .enable_completions()
                .enable_logging()
                .build(),
        );
        tasks::declare(&mut info.capabilities, self.state.upstreams_offer_tasks());
        info.server_info = Implementation::new("toolsmith", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(
            "Tools from a toolsmith registry. Arguments are checked against each tool's input \
             schema; a failed call says what to fix."
                .into(),
        );
        info
    }

    /// A tool's served definition, for the transport's check of the `Mcp-Param-*` headers a
    /// 2026-07-28 client mirrors its `x-mcp-header` arguments into (SEP-2243: a header that
    /// disagrees with the body is refused with -32020 before the call runs). Read from the
    /// snapshot as it stands (a call that finds it being rebuilt is not held up: its headers
    /// go unchecked, and the upstream checks its own).
    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        let guard = self.snapshot.try_lock().ok()?;
        guard.as_ref()?.definition(name).cloned()
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let view = self.view(&ctx).await?;
        if view.code {
            return Ok(ListToolsResult::with_all_items(search::code_tools(
                self.state.code_limits().timeout_ms,
            )));
        }
        if view.search {
            return Ok(ListToolsResult::with_all_items(search::tools()));
        }
        let snapshot = self.snapshot().await?;
        let tools = search::visible(&snapshot, &view);
        let start = match request.and_then(|r| r.cursor) {
            None => 0,
            Some(cursor) => {
                // The registry's own cursor form: the last name of the previous page.
                let after = decode_cursor(&cursor).map_err(|_| {
                    ErrorData::invalid_params(format!("invalid cursor {cursor:?}"), None)
                })?;
                tools.partition_point(|t| t.name.as_ref() <= after.as_str())
            }
        };
        let end = (start + PAGE_SIZE).min(tools.len());
        let page = tools[start..end].iter().map(|t| (*t).clone()).collect();
        let mut result = ListToolsResult::with_all_items(page);
        if end < tools.len() {
            result.next_cursor = Some(encode_cursor(&tools[end - 1].name));
        }
        Ok(result)
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.get_relayed_task(request.task_id, ctx).await
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let answers = serde_json::to_value(request.input_responses)
            .ok()
            .and_then(|v| v.as_object().cloned())
            .unwrap_or_default();
        let update = toolsmith_gateway::upstream::TaskRequest::Update(answers);
        self.ack_relayed_task(request.task_id, update, ctx).await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let cancel = toolsmith_gateway::upstream::TaskRequest::Cancel;
        self.ack_relayed_task(request.task_id, cancel, ctx).await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let span = crate::traces::mcp_request("tools/call", request.name.as_ref(), &ctx);
        tracing::Instrument::instrument(self.answer_call(request, ctx), span).await
    }

    /// The least level of the upstreams' log messages this connection's client gets during
    /// its calls (see `run`).
    #[allow(deprecated)] // Logging is deprecated by 2026-07-28 (SEP-2577), still in use.
    async fn set_level(
        &self,
        r: rmcp::model::SetLevelRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let level = serde_json::to_value(r.level).unwrap_or_default();
        let rank = level.as_str().and_then(run::level_rank);
        *self.log_level.lock().unwrap_or_else(|e| e.into_inner()) = rank;
        // A session's level is kept with it, for the replicas that take it up.
        if let (Some(id), Some(level)) = (run::session_id(&ctx), level.as_str())
            && let Err(e) = self.state.store.set_mcp_session_level(&id, level).await
        {
            tracing::warn!("keeping MCP session {id}'s log level: {e}");
        }
        Ok(())
    }

    /// A subscription lasts while the connection does (stdio): over stateless HTTP it ends
    /// with its request, and 2026-07-28 clients name resources in `subscriptions/listen`.
    #[allow(deprecated)] // resources/subscribe is the protocol before 2026-07-28's listen.
    async fn subscribe(
        &self,
        r: rmcp::model::SubscribeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.watch(r.uri, &ctx).await
    }
    #[allow(deprecated)] // resources/unsubscribe is the protocol before 2026-07-28's listen.
    async fn unsubscribe(
        &self,
        r: rmcp::model::UnsubscribeRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.unwatch(&r.uri);
        Ok(())
    }

    // Resources, prompts and completions of the upstreams: `offers`.
    async fn list_resources(
        &self,
        r: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.resources_page(r, &ctx).await
    }
    async fn list_resource_templates(
        &self,
        r: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.templates_page(r, &ctx).await
    }
    async fn read_resource(
        &self,
        r: ReadResourceRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let span = crate::traces::mcp_request("resources/read", &r.uri, &ctx);
        tracing::Instrument::instrument(self.read(r, &ctx), span).await
    }
    async fn list_prompts(
        &self,
        r: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.prompts_page(r, &ctx).await
    }
    async fn get_prompt(
        &self,
        r: GetPromptRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let span = crate::traces::mcp_request("prompts/get", &r.name, &ctx);
        tracing::Instrument::instrument(self.prompt(r, &ctx), span).await
    }
    async fn complete(
        &self,
        r: CompleteRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        self.completion(r, &ctx).await
    }

    /// Protocol 2026-07-28 clients follow changes with `subscriptions/listen`.
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let mut accepted = SubscriptionFilter::new();
        accepted.tools_list_changed = requested.tools_list_changed;
        accepted.prompts_list_changed = requested.prompts_list_changed;
        accepted.resources_list_changed = requested.resources_list_changed;
        accepted.resource_subscriptions = requested.resource_subscriptions.clone();
        self.acknowledged
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(self.state.subscribe());
        Some(accepted)
    }

    /// Only changes of what this client sees are sent: a tool joining or leaving its view,
    /// or a new version of one in it; its prompts, resources or templates changing.
    /// A change between the acknowledgment and the first look at what the client sees
    /// may be in that look already: it is told once, as a change of everything it follows.
    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let early = self
            .acknowledged
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop();
        let mut changes = early.unwrap_or_else(|| self.state.subscribe());
        let view = self.current_view(context.request_context()).await?;
        let mut seen = self.seen(&view).await?;
        let wants = context.accepted().clone();
        let on = |f: Option<bool>| f == Some(true);
        if changes.has_changed().unwrap_or(false) {
            changes.borrow_and_update();
            let sink = context.sink();
            let told = async {
                if on(wants.tools_list_changed) {
                    sink.notify_tool_list_changed().await?;
                }
                if on(wants.prompts_list_changed) {
                    sink.notify_prompt_list_changed().await?;
                }
                if on(wants.resources_list_changed) {
                    sink.notify_resource_list_changed().await?;
                }
                Ok::<(), rmcp::service::SubscriptionSendError>(())
            };
            if told.await.is_err() {
                return Ok(());
            }
        }
        // The resources it names, watched while it listens (one outside its view, never).
        let mut watches = Vec::new();
        for uri in wants.resource_subscriptions.iter().flatten() {
            if let Ok(w) = self.state.watch_resource(&view, uri).await {
                watches.push(w);
            }
        }
        let mut updates = self.state.resource_updates();
        loop {
            tokio::select! {
                _ = context.cancelled() => return Ok(()),
                Some((server, uri)) = updates.next(), if !watches.is_empty() => {
                    let watched = watches.iter().any(|w| w.server == server && w.uri == uri);
                    if watched && context.sink().notify_resource_updated(uri).await.is_err() {
                        return Ok(());
                    }
                }
                changed = changes.changed() => {
                    if changed.is_err() {
                        return Ok(());
                    }
                    let view = self.current_view(context.request_context()).await?;
                    let now = self.seen(&view).await?;
                    let sink = context.sink();
                    let sent = async {
                        if on(wants.tools_list_changed) && now.tools != seen.tools {
                            sink.notify_tool_list_changed().await?;
                        }
                        if on(wants.prompts_list_changed) && now.prompts != seen.prompts {
                            sink.notify_prompt_list_changed().await?;
                        }
                        if on(wants.resources_list_changed) && now.resources != seen.resources {
                            sink.notify_resource_list_changed().await?;
                        }
                        Ok::<(), rmcp::service::SubscriptionSendError>(())
                    };
                    if sent.await.is_err() {
                        return Ok(());
                    }
                    seen = now;
                }
            }
        }
    }

    /// Older clients on a lasting connection — stdio, or a session on `/mcp` (whose
    /// notifications go on its GET stream) — get plain notifications, in the view they
    /// initialized in (resolved again at each change, so an edited toolset is followed).
    async fn on_initialized(&self, ctx: NotificationContext<RoleServer>) {
        let parts = ctx.extensions.get::<axum::http::request::Parts>();
        let session = parts.is_some_and(|p| p.headers.contains_key("mcp-session-id"));
        if !self.options.notify_changes && !session {
            return;
        }
        let asked = parts
            .and_then(|p| p.extensions.get::<Arc<toolsmith_gateway::view::Asked>>())
            .cloned();
        let mut changes = self.state.subscribe();
        let peer = ctx.peer.clone();
        let this = self.clone();
        tokio::spawn(async move {
            let fingerprint = async || {
                let view = match &asked {
                    Some(a) => this
                        .state
                        .view(&a.caller, &a.ask)
                        .await
                        .map(Arc::new)
                        .ok()?,
                    None => this
                        .view_of_options()
                        .await
                        .unwrap_or_else(|_| Arc::new(View::everything())),
                };
                this.seen(&view).await.ok()
            };
            let mut seen = fingerprint().await.unwrap_or_default();
            while changes.changed().await.is_ok() {
                let Some(now) = fingerprint().await else {
                    continue;
                };
                let sent = async {
                    if now.tools != seen.tools {
                        peer.notify_tool_list_changed().await?;
                    }
                    if now.prompts != seen.prompts {
                        peer.notify_prompt_list_changed().await?;
                    }
                    if now.resources != seen.resources {
                        peer.notify_resource_list_changed().await?;
                    }
                    Ok::<(), rmcp::service::ServiceError>(())
                };
                if sent.await.is_err() {
                    break;
                }
                seen = now;
            }
        });
    }
}

impl McpServer {
    /// A finished call (counted and logged by the call path, [`toolsmith_gateway::call`]): a refused
    /// dangerous call says what to do, and the result is put in MCP's form.
    fn finish(
        &self,
        tool: &CompiledTool,
        mut result: ToolResult,
        declined: bool,
    ) -> CallToolResponse {
        if let Some(e) = result
            .error
            .as_mut()
            .filter(|e| e.kind == ErrorKind::NeedsConfirmation)
        {
            e.message.push_str(match declined {
                true => "; the user declined to run it",
                false => {
                    "; this client cannot ask the user to confirm, and this server runs dangerous \
                          tools without asking only when started with --allow-dangerous. Tell the \
                          user what you wanted to run instead"
                }
            });
        }
        to_mcp(tool, &result).into()
    }

    /// This client's door into the call path: the caller (over HTTP, where callers are
    /// known: its rate limit applies), the name the log knows it by.
    pub(super) fn door(&self, ctx: &RequestContext<RoleServer>) -> toolsmith_gateway::call::Door {
        toolsmith_gateway::call::Door {
            label: self.options.caller.clone(),
            caller: ctx
                .extensions
                .get::<axum::http::request::Parts>()
                .and_then(|p| p.extensions.get::<toolsmith_gateway::Caller>())
                .cloned(),
            log_name: self.call_options(false, ctx).caller,
        }
    }

    /// An upstream tool's call whose questions come back here ([`Parking`]), run until its
    /// result or its first question; its progress goes to the client meanwhile.
    async fn parked_run(
        &self,
        admitted: toolsmith_gateway::call::Admitted,
        arguments: Value,
        (confirmed, resume): (bool, Option<toolsmith_gateway::upstream::Resume>),
        ctx: &RequestContext<RoleServer>,
    ) -> Next {
        let mut options = self.call_options(confirmed, ctx);
        relay::prepare(&mut options.downstream, ctx, resume);
        if let Some(token) = ctx.meta.get_progress_token() {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
            options.downstream.progress = Some(tx);
            let peer = ctx.peer.clone();
            tokio::spawn(async move {
                while let Some(p) = rx.recv().await {
                    let _ = peer.notify_progress(run::progress_param(&token, p)).await;
                }
            });
        }
        // The upstream's sampling requests are passed on only to a client that can sample.
        let can_sample = ctx
            .client_capabilities()
            .is_some_and(|c| c.sampling.is_some());
        self.parking
            .start(move |askers| {
                options.downstream.elicit = Some(askers.elicit);
                options.downstream.sample = can_sample.then_some(askers.sample);
                async move { admitted.run(arguments, None, options).await }
            })
            .await
    }
}
