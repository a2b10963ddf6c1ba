//! The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) toward an upstream: which
//! upstreams declare it, and `tasks/get`, `tasks/update` and `tasks/cancel` of one of its
//! tasks by the upstream's own id, with the caller's client capabilities in the request's
//! `_meta` (an upstream serves its task methods only to a client that declared the
//! extension). A `tools/call` the upstream answers with a task is [`super::Upstreams::call`]'s.

use rmcp::model::{
    CancelTaskParams, CancelTaskRequest, ClientRequest, GetTaskParams, GetTaskRequest,
    TASKS_EXTENSION_ID, UpdateTaskParams, UpdateTaskRequest,
};
use rmcp::service::PeerRequestOptions;
use serde_json::{Map, Value, json};

use super::{CLIENT_CAPABILITIES_META, UpstreamError, Upstreams, lock};

/// A request about one upstream task.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskRequest {
    /// `tasks/get`: its state (`DetailedTask`).
    Get,
    /// `tasks/update`: answers to the questions it waits on, by the upstream's keys.
    Update(Map<String, Value>),
    /// `tasks/cancel`.
    Cancel,
}

impl TaskRequest {
    /// The method's name, for messages.
    pub fn method(&self) -> &'static str {
        match self {
            Self::Get => "tasks/get",
            Self::Update(_) => "tasks/update",
            Self::Cancel => "tasks/cancel",
        }
    }
}

impl Upstreams {
    /// Whether `server` declared the tasks extension when it was last connected.
    pub fn offers_tasks(&self, server: &str) -> bool {
        let Some(up) = self.get(server) else {
            return false;
        };
        let st = lock(&up.state);
        st.peer
            .as_ref()
            .and_then(|p| p.peer_info())
            .is_some_and(|info| info.capabilities.supports_tasks())
    }

    /// Whether any upstream declared the tasks extension.
    pub fn any_offers_tasks(&self) -> bool {
        self.names().iter().any(|name| self.offers_tasks(name))
    }

    /// `request` about task `task_id` (the upstream's id) at `server`, declaring
    /// `client_capabilities` (the caller's, JSON) for it: the upstream's answer as JSON (a
    /// `DetailedTask` for `tasks/get`, an empty ack for the others). A per-user server's
    /// task lives on the caller's own connection.
    pub async fn task(
        &self,
        server: &str,
        task_id: &str,
        request: TaskRequest,
        (client_capabilities, on): (Option<Value>, super::OnBehalf<'_>),
    ) -> Result<Value, UpstreamError> {
        let up = self.upstream(server)?;
        let id = task_id.to_owned();
        let request = match request {
            TaskRequest::Get => {
                ClientRequest::GetTaskRequest(GetTaskRequest::new(GetTaskParams::new(id)))
            }
            TaskRequest::Update(answers) => {
                let answers = serde_json::from_value(Value::Object(answers))
                    .map_err(|e| UpstreamError::Failed(format!("inputResponses: {e}")))?;
                ClientRequest::UpdateTaskRequest(UpdateTaskRequest::new(UpdateTaskParams::new(
                    id, answers,
                )))
            }
            TaskRequest::Cancel => {
                ClientRequest::CancelTaskRequest(CancelTaskRequest::new(CancelTaskParams::new(id)))
            }
        };
        // The upstream's task methods are served to a client that declared the extension:
        // the caller's capabilities, with it (the caller reached here only by declaring it).
        let mut caps = match client_capabilities {
            Some(Value::Object(caps)) => caps,
            _ => Map::new(),
        };
        caps.entry("extensions")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .map(|e| e.entry(TASKS_EXTENSION_ID).or_insert_with(|| json!({})));
        let timeout = std::time::Duration::from_millis(up.def.timeout_ms);
        let mut options = PeerRequestOptions::with_timeout(timeout);
        options.meta = serde_json::from_value(json!({ CLIENT_CAPABILITIES_META: caps })).ok();
        up.ask(on, |peer| async move {
            let handle = peer.send_request_with_option(request, options).await?;
            handle.await_response().await
        })
        .await
    }
}
