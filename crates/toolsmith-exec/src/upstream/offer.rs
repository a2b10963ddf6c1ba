//! What an upstream offers besides tools (SPEC §11): its resources, resource templates and
//! prompts — listed with its tools when its capabilities declare them (and again on its
//! `list_changed`), kept as the MCP objects it sent — and the requests that reach them:
//! `resources/read`, `prompts/get` and `completion/complete`, each on the shared connection
//! within the server's timeout.
//!
//! A listing that fails leaves that part empty and is logged: the tools still serve.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CompleteRequestParams, GetPromptRequestParams, GetPromptResponse, ReadResourceRequestParams,
};
use rmcp::service::{RoleClient, ServiceError};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::{START_TIMEOUT, Upstream, UpstreamError, Upstreams, lock};

/// An upstream's resources, resource templates and prompts as it listed them (MCP
/// `Resource`, `ResourceTemplate` and `Prompt` objects).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Offer {
    pub resources: Vec<Value>,
    pub templates: Vec<Value>,
    pub prompts: Vec<Value>,
}

/// One upstream's offer, with what the gateway names its prompts by.
#[derive(Debug, Clone)]
pub struct ServerOffer {
    pub server: String,
    /// The server's prefix for the names it serves (empty for none).
    pub prefix: String,
    pub offer: Arc<Offer>,
}

/// Lists what `peer` offers, as far as its capabilities say it has any.
pub(crate) async fn list(server: &str, peer: &rmcp::Peer<RoleClient>) -> Offer {
    let caps = peer.peer_info().map(|info| info.capabilities.clone());
    let (has_resources, has_prompts) = caps.as_ref().map_or((false, false), |c| {
        (c.resources.is_some(), c.prompts.is_some())
    });
    let mut offer = Offer::default();
    if has_resources {
        offer.resources = listed(server, "resources/list", peer.list_all_resources()).await;
        offer.templates = listed(
            server,
            "resources/templates/list",
            peer.list_all_resource_templates(),
        )
        .await;
    }
    if has_prompts {
        offer.prompts = listed(server, "prompts/list", peer.list_all_prompts()).await;
    }
    offer
}

/// Every item of one listing as JSON, or none (logged) when it fails.
async fn listed<T: serde::Serialize>(
    server: &str,
    what: &str,
    listing: impl Future<Output = Result<Vec<T>, ServiceError>>,
) -> Vec<Value> {
    match tokio::time::timeout(START_TIMEOUT, listing).await {
        Ok(Ok(items)) => items
            .iter()
            .filter_map(|i| serde_json::to_value(i).ok())
            .collect(),
        Ok(Err(e)) => {
            tracing::warn!(server, "{what} failed: {e}");
            Vec::new()
        }
        Err(_) => {
            tracing::warn!(
                server,
                "no answer to {what} within {} s",
                START_TIMEOUT.as_secs()
            );
            Vec::new()
        }
    }
}

/// Request params from JSON (rmcp's params types are built by serde, so a field added in a
/// `params` with the caller's trace in `_meta` (SPEC §15), passed on as a tool call's is.
fn traced(mut params: Value) -> Value {
    if let Some((parent, state)) = crate::trace::current() {
        params["_meta"] = json!({ "traceparent": parent });
        if let Some(state) = state {
            params["_meta"]["tracestate"] = Value::from(state);
        }
    }
    params
}

/// later version needs nothing here).
fn params<T: DeserializeOwned>(v: Value) -> Result<T, UpstreamError> {
    serde_json::from_value(v).map_err(|e| UpstreamError::Failed(format!("bad request: {e}")))
}

impl Upstreams {
    /// What each upstream offers besides tools, by server name.
    pub fn offers(&self) -> Vec<ServerOffer> {
        lock(&self.inner.servers)
            .iter()
            .map(|(name, up)| ServerOffer {
                server: name.clone(),
                prefix: up.def.prefix().to_owned(),
                offer: lock(&up.state).offer.clone(),
            })
            .collect()
    }

    /// `resources/read` of `uri` at `server` on behalf of `on` (the caller, whose own
    /// connection a per-user server reads it on): its `ReadResourceResult` as JSON.
    pub async fn read_resource(
        &self,
        server: &str,
        uri: &str,
        on: super::OnBehalf<'_>,
    ) -> Result<Value, UpstreamError> {
        let up = self.upstream(server)?;
        let request: ReadResourceRequestParams = params(traced(json!({ "uri": uri })))?;
        up.ask(on, |peer| async move { peer.read_resource(request).await })
            .await
    }

    /// `prompts/get` of `name` (the upstream's name) at `server` with `arguments` — and the
    /// answers to its "input required", when this is the request sent again. A 2026-07-28
    /// upstream's "input required" is the answer as it came (`resultType: input_required`).
    /// A per-user server answers on the caller's own connection.
    pub async fn get_prompt(
        &self,
        server: &str,
        name: &str,
        arguments: serde_json::Map<String, Value>,
        resume: Option<super::Resume>,
        on: super::OnBehalf<'_>,
    ) -> Result<Value, UpstreamError> {
        let up = self.upstream(server)?;
        let mut request: GetPromptRequestParams =
            params(traced(json!({ "name": name, "arguments": arguments })))?;
        if let Some(resume) = resume {
            request.input_responses = serde_json::from_value(Value::Object(resume.input_responses))
                .map_err(|e| UpstreamError::Failed(format!("inputResponses: {e}")))?;
            request.request_state = resume.request_state;
        }
        // (rmcp's two answers as the one JSON value they are on the wire.)
        up.ask(on, |peer| async move {
            peer.get_prompt_once(request).await.map(|r| match r {
                GetPromptResponse::Complete(done) => serde_json::to_value(done).unwrap_or_default(),
                GetPromptResponse::InputRequired(asked) => {
                    serde_json::to_value(asked).unwrap_or_default()
                }
                _ => Value::Null,
            })
        })
        .await
    }

    /// `completion/complete` at `server`, its params as the client sent them (the reference
    /// already in the upstream's names).
    pub async fn complete(&self, server: &str, request: Value) -> Result<Value, UpstreamError> {
        let up = self.upstream(server)?;
        let request: CompleteRequestParams = params(request)?;
        up.ask(Default::default(), |peer| async move {
            peer.complete(request).await
        })
        .await
    }

    /// `resources/subscribe` of `uri` at `server` (its updates arrive as
    /// [`super::Event::ResourceUpdated`]).
    #[allow(deprecated)] // resources/subscribe is the protocol before 2026-07-28's listen.
    pub async fn subscribe_resource(&self, server: &str, uri: &str) -> Result<(), UpstreamError> {
        let up = self.upstream(server)?;
        if up.watch(uri, true).await? {
            return Ok(());
        }
        let request: rmcp::model::SubscribeRequestParams = params(json!({ "uri": uri }))?;
        up.ask(Default::default(), |peer| async move {
            peer.subscribe(request).await
        })
        .await
        .map(drop)
    }

    /// `resources/unsubscribe` of `uri` at `server`.
    #[allow(deprecated)] // resources/unsubscribe is the protocol before 2026-07-28's listen.
    pub async fn unsubscribe_resource(&self, server: &str, uri: &str) -> Result<(), UpstreamError> {
        let up = self.upstream(server)?;
        if up.watch(uri, false).await? {
            return Ok(());
        }
        let request: rmcp::model::UnsubscribeRequestParams = params(json!({ "uri": uri }))?;
        up.ask(Default::default(), |peer| async move {
            peer.unsubscribe(request).await
        })
        .await
        .map(drop)
    }

    pub(super) fn upstream(&self, server: &str) -> Result<Arc<Upstream>, UpstreamError> {
        self.get(server)
            .ok_or_else(|| UpstreamError::Unknown(server.to_owned()))
    }
}

impl Upstream {
    /// On a 2026-07-28 upstream, adds `uri` to (or takes it from) the resources its
    /// subscription watches, and says so (`true`); an older upstream is told with
    /// `resources/subscribe` instead (`false`).
    async fn watch(&self, uri: &str, on: bool) -> Result<bool, UpstreamError> {
        let peer = self
            .ready_peer(Duration::from_millis(self.def.timeout_ms))
            .await?;
        if !super::listen::modern(&peer) {
            return Ok(false);
        }
        let changed = {
            let mut watched = super::lock(&self.watched);
            if on {
                watched.insert(uri.to_owned())
            } else {
                watched.remove(uri)
            }
        };
        if changed {
            let _ = self.control.send(super::Control::Rewatch);
        }
        Ok(true)
    }

    /// One request on the ready connection (the caller's own on a per-user or exchanging
    /// server; else the shared one), within the server's timeout; its result as JSON.
    pub(super) async fn ask<T, F>(
        self: &Arc<Self>,
        on: super::OnBehalf<'_>,
        send: impl FnOnce(rmcp::Peer<RoleClient>) -> F,
    ) -> Result<Value, UpstreamError>
    where
        T: serde::Serialize,
        F: Future<Output = Result<T, ServiceError>>,
    {
        let timeout = Duration::from_millis(self.def.timeout_ms);
        let link = self.link(timeout, on).await?;
        match tokio::time::timeout(timeout, send(link.peer.clone())).await {
            Ok(Ok(result)) => {
                serde_json::to_value(result).map_err(|e| UpstreamError::Failed(e.to_string()))
            }
            Ok(Err(e)) => Err(self.failure(&link, e)),
            Err(_) => Err(UpstreamError::Timeout(timeout)),
        }
    }
}
