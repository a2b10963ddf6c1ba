//! Who answers an upstream's questions during a call: the routes from a call in flight (by
//! its request id) to its caller's askers — its user for elicitation, its model for
//! sampling ([`super::Downstream`]) — and the answers to a 2026-07-28 upstream's "input
//! required" when toolsmith answers them itself.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use rmcp::model::{ElicitResult, ElicitationAction, InputRequest, RequestId};
use rmcp::service::{InboundStreamOrigin, RequestContext, RoleClient};
use serde_json::Value;

use super::lock;

/// Who answers the questions of each call in flight, by the call's request id; told when a
/// call's askers are added (a question may arrive before they are).
#[derive(Clone, Default)]
pub(crate) struct ElicitRoutes(Arc<Mutex<HashMap<RequestId, Askers>>>, Arc<Notify>);

/// How long a question naming a call waits for that call's askers to be added: the call is
/// sent before its id is known, so a quick upstream may ask before they are.
const ADDED_WITHIN: std::time::Duration = std::time::Duration::from_secs(5);

/// Who answers one call's questions: its user (elicitation), its model (sampling), its
/// client (roots).
#[derive(Clone, Default)]
pub(crate) struct Askers {
    pub elicit: Option<super::Elicitor>,
    pub sample: Option<super::Elicitor>,
    pub roots: Option<super::Elicitor>,
}

impl Askers {
    /// The caller's, when it answers anything.
    pub(crate) fn of(downstream: &super::Downstream) -> Option<Self> {
        let askers = Self {
            elicit: downstream.elicit.clone(),
            sample: downstream.sample.clone(),
            roots: downstream.roots.clone(),
        };
        (askers.elicit.is_some() || askers.sample.is_some() || askers.roots.is_some())
            .then_some(askers)
    }
}

/// Removes a call's elicitor when dropped.
pub(crate) struct Asks {
    routes: ElicitRoutes,
    id: RequestId,
}

impl Drop for Asks {
    fn drop(&mut self) {
        lock(&self.routes.0).remove(&self.id);
    }
}

impl ElicitRoutes {
    pub(crate) fn add(&self, id: RequestId, e: Askers) -> Asks {
        lock(&self.0).insert(id.clone(), e);
        self.1.notify_waiters();
        Asks {
            routes: self.clone(),
            id,
        }
    }

    /// The askers of the call a question belongs to: the one the HTTP transport says it came
    /// with (waited for a moment when not added yet), else the only call in flight with
    /// some (over stdio a question names no call); `None` when that cannot be told — the
    /// question is declined.
    pub(crate) async fn of(&self, context: &RequestContext<RoleClient>) -> Option<Askers> {
        let Some(InboundStreamOrigin::OutboundRequest(id)) =
            context.extensions.get::<InboundStreamOrigin>()
        else {
            let routes = lock(&self.0);
            return (routes.len() == 1)
                .then(|| routes.values().next().cloned())
                .flatten();
        };
        let deadline = tokio::time::Instant::now() + ADDED_WITHIN;
        loop {
            let added = self.1.notified();
            if let Some(askers) = lock(&self.0).get(id).cloned() {
                return Some(askers);
            }
            if tokio::time::timeout_at(deadline, added).await.is_err() {
                return None;
            }
        }
    }
}

pub(crate) fn declined() -> ElicitResult {
    ElicitResult::new(ElicitationAction::Decline)
}

/// Asks `elicit` (or declines) one question; the answer as rmcp's type.
pub(crate) async fn ask(elicit: Option<&super::Elicitor>, params: Value) -> ElicitResult {
    let Some(elicit) = elicit else {
        return declined();
    };
    match (elicit.0)(params).await {
        Ok(answer) => serde_json::from_value(answer).unwrap_or_else(|e| {
            tracing::warn!("an elicitation answer toolsmith could not read: {e}");
            declined()
        }),
        Err(e) => {
            tracing::info!("an upstream's question could not be asked: {e}");
            declined()
        }
    }
}

/// The caller's roots (its client's `ListRootsResult` as JSON), or none when it has no
/// client that lists them or its client did not answer.
pub(crate) async fn roots(asker: Option<&super::Elicitor>) -> Value {
    let none = serde_json::json!({"roots": []});
    let Some(asker) = asker else {
        return none;
    };
    match (asker.0)(Value::Null).await {
        Ok(answer) if answer["roots"].is_array() => answer,
        Ok(other) => {
            tracing::info!("a client answered roots/list with something else: {other}");
            none
        }
        Err(e) => {
            tracing::info!("an upstream's roots/list could not be passed on: {e}");
            none
        }
    }
}

/// The answers to an "input required" result's requests: questions asked through
/// `elicit` (or declined), sampling requests through `sample` (none without it: the
/// upstream asks again or gives up), roots through `roots` (an empty list without it).
pub(crate) async fn answer_inputs(
    requests: Option<rmcp::model::InputRequests>,
    downstream: &super::Downstream,
) -> rmcp::model::InputResponses {
    let mut out = rmcp::model::InputResponses::new();
    for (key, request) in requests.into_iter().flatten() {
        let answer = match request {
            InputRequest::Elicitation(r) => serde_json::to_value(
                ask(
                    downstream.elicit.as_ref(),
                    serde_json::to_value(&r.params).unwrap_or_default(),
                )
                .await,
            ),
            InputRequest::CreateMessage(r) => match &downstream.sample {
                Some(sample) => {
                    match (sample.0)(serde_json::to_value(&r.params).unwrap_or_default()).await {
                        Ok(v) => Ok(v),
                        Err(e) => {
                            tracing::info!("a sampling request could not be passed on: {e}");
                            continue;
                        }
                    }
                }
                None => continue,
            },
            InputRequest::ListRoots(_) => Ok(roots(downstream.roots.as_ref()).await),
            _ => continue,
        };
        if let Ok(v) = answer {
            out.insert(key, v);
        }
    }
    out
}
