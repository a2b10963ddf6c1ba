//! Resources, resource templates, prompts and completions of the upstream servers, as MCP
//! serves them: lists paginated ([`PAGE_SIZE`] a page, the cursor an offset), reads and gets
//! routed by the gateway ([`toolsmith_gateway::offers`]) in the request's view. A resource or
//! prompt outside the view answers exactly as a missing one: `-32002` for a resource (which
//! rmcp turns into `-32602` for 2026-07-28 clients), `-32602` for a prompt.

use std::collections::HashMap;
use std::sync::Arc;

use rmcp::model::{
    CompleteRequestParams, CompleteResult, ErrorCode, GetPromptRequestParams, GetPromptResponse,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ResourceUpdatedNotificationParam,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use toolsmith_gateway::offers::OfferError;
use toolsmith_gateway::view::View;
use toolsmith_store::{decode_cursor, encode_cursor};

use super::{McpServer, PAGE_SIZE};

/// One page of `items` from `cursor`, as `{key: [...], nextCursor}`.
fn page(
    items: Vec<Value>,
    key: &str,
    request: Option<PaginatedRequestParams>,
) -> Result<Value, ErrorData> {
    let start = match request.and_then(|r| r.cursor) {
        None => 0,
        Some(cursor) => decode_cursor(&cursor)
            .ok()
            .and_then(|s| s.parse::<usize>().ok())
            .filter(|&n| n <= items.len())
            .ok_or_else(|| ErrorData::invalid_params(format!("invalid cursor {cursor:?}"), None))?,
    };
    let end = (start + PAGE_SIZE).min(items.len());
    let mut out = json!({ key: items[start..end] });
    if end < items.len() {
        out["nextCursor"] = Value::String(encode_cursor(&end.to_string()));
    }
    Ok(out)
}

/// An rmcp result from its JSON (what the upstream sent, passed on as it is), complete: a
/// 2026-07-28 client needs `resultType`, which an upstream of an older protocol does not
/// send (rmcp leaves it out again for older clients).
fn result<T: DeserializeOwned>(mut v: Value) -> Result<T, ErrorData> {
    if let Some(map) = v.as_object_mut() {
        map.entry("resultType")
            .or_insert_with(|| Value::String("complete".into()));
    }
    serde_json::from_value(v).map_err(|e| {
        ErrorData::internal_error(
            format!("the upstream's answer could not be read: {e}"),
            None,
        )
    })
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn error(e: OfferError) -> ErrorData {
    match e {
        OfferError::NotFound {
            what: "resource", ..
        } => ErrorData::resource_not_found(e.to_string(), None),
        OfferError::NotFound { .. } => ErrorData::invalid_params(e.to_string(), None),
        OfferError::Rpc { code, message } => ErrorData::new(ErrorCode(code), message, None),
        OfferError::Upstream(why) => ErrorData::internal_error(why, None),
    }
}

/// What a client following changes has seen: fingerprints of its tools, prompts and
/// resources (with templates).
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Seen {
    pub tools: u64,
    pub prompts: u64,
    pub resources: u64,
}

/// This connection's watches of upstream resources, by URI.
pub(super) type Watches =
    Arc<std::sync::Mutex<HashMap<String, toolsmith_gateway::watches::ResourceWatch>>>;

impl McpServer {
    /// Watches `uri` for this connection's client (`resources/subscribe`): the first watch
    /// starts one task that passes the owner's `notifications/resources/updated` on.
    pub(super) async fn watch(
        &self,
        uri: String,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let view = self.view(ctx).await?;
        let watch = self
            .state
            .watch_resource(&view, &uri)
            .await
            .map_err(error)?;
        lock(&self.watches).insert(uri, watch);
        if self.notifier.set(()).is_ok() {
            let (peer, mut updates) = (ctx.peer.clone(), self.state.resource_updates());
            // Weak: the watches end with the connection's handler, not with this task.
            let watches = Arc::downgrade(&self.watches);
            tokio::spawn(async move {
                while let Some((server, uri)) = updates.next().await {
                    let Some(watches) = watches.upgrade() else {
                        return;
                    };
                    let watched = lock(&watches).get(&uri).is_some_and(|w| w.server == server);
                    let param = ResourceUpdatedNotificationParam::new(uri);
                    if watched && peer.notify_resource_updated(param).await.is_err() {
                        return;
                    }
                }
            });
        }
        Ok(())
    }

    /// Ends this client's watch of `uri` (`resources/unsubscribe`).
    pub(super) fn unwatch(&self, uri: &str) {
        lock(&self.watches).remove(uri);
    }

    /// What `view` holds now, fingerprinted.
    pub(super) async fn seen(&self, view: &View) -> Result<Seen, ErrorData> {
        let tools = super::search::fingerprint(&*self.snapshot().await?, view);
        let (prompts, resources) = self.state.offer_fingerprints(view).await;
        Ok(Seen {
            tools,
            prompts,
            resources,
        })
    }

    pub(super) async fn resources_page(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let view = self.view(ctx).await?;
        result(page(
            self.state.resources(&view, None).await,
            "resources",
            request,
        )?)
    }

    pub(super) async fn templates_page(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let view = self.view(ctx).await?;
        let items = self.state.resource_templates(&view, None).await;
        result(page(items, "resourceTemplates", request)?)
    }

    pub(super) async fn prompts_page(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let view = self.view(ctx).await?;
        result(page(
            self.state.prompts(&view, None).await,
            "prompts",
            request,
        )?)
    }

    pub(super) async fn read(
        &self,
        request: ReadResourceRequestParams,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let view = self.view(ctx).await?;
        let answer = self
            .state
            .read_resource(&self.door(ctx), &view, &request.uri)
            .await
            .map_err(error)?;
        Ok(ReadResourceResponse::Complete(result(answer)?))
    }

    pub(super) async fn prompt(
        &self,
        request: GetPromptRequestParams,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let view = self.view(ctx).await?;
        let door = self.door(ctx);
        // A 2026-07-28 prompt's "input required" is relayed to the client as a tool's is
        // ([`super::relay`]), its state bound to the prompt and the caller.
        let key = format!("prompt:{}", request.name);
        let resume = super::relay::resume(
            &request.request_state,
            &request.input_responses,
            &key,
            &door.log_name,
        )?;
        let answer = self
            .state
            .get_prompt(
                &door,
                &view,
                &request.name,
                request.arguments.unwrap_or_default(),
                resume.map(|o| o.resume),
            )
            .await
            .map_err(error)?;
        if super::relay::relays(ctx)
            && let Some(asked) = super::relay::seal_asked(
                &answer,
                &key,
                &door.log_name,
                false,
                super::relay::now_ms(),
            )
        {
            return Ok(GetPromptResponse::InputRequired(asked));
        }
        Ok(GetPromptResponse::Complete(result(answer)?))
    }

    pub(super) async fn completion(
        &self,
        request: CompleteRequestParams,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let view = self.view(ctx).await?;
        let params = serde_json::to_value(&request)
            .map_err(|e| ErrorData::invalid_params(e.to_string(), None))?;
        result(self.state.complete(&view, params).await.map_err(error)?)
    }
}
