//! The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) relayed from the upstreams
//! that offer it, statelessly. toolsmith declares the extension while one of its upstreams
//! does; a client that declared it too has its calls of that upstream's tools reach it with
//! the extension (its own capabilities go upstream), so the upstream may answer with a task.
//! The task goes to the client with its id sealed ([`toolsmith_store::secrets::seal_state`])
//! together with the server, the tool and the caller: ids of two upstreams cannot clash, a
//! client cannot make one up or reach another caller's task, and `tasks/get`, `tasks/update`
//! and `tasks/cancel` open it on whichever replica they reach (they share the registry's key)
//! and go to the owning upstream with its own id. Everything else passes as the upstream said
//! it (status, questions, the result inlined once done); a task id that does not open, or
//! opens for another caller, answers as an unknown one (-32602). rmcp refuses the methods to a
//! client that did not declare the extension (-32021).

use rmcp::model::{
    CallToolResponse, CreateTaskResult, ErrorCode, GetTaskResult, TASKS_EXTENSION_ID,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolsmith_core::{CompiledTool, ToolResult};
use toolsmith_gateway::upstream::{TaskRequest, UpstreamError};

use super::McpServer;

/// What a relayed task's id starts with.
pub const PREFIX: &str = "tsk1.";

/// What the sealed id holds.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Sealed {
    /// The upstream server that owns the task.
    server: String,
    /// The upstream's own task id.
    task: String,
    /// The tool whose call made it (its registry name).
    tool: String,
    /// The caller it was made for (as the run log names it).
    caller: String,
}

/// The upstream's task in `result` (an upstream tool's call made by a relaying client), its
/// id sealed for `caller`; `None` for any other result.
pub fn relayed(tool: &CompiledTool, result: &ToolResult, caller: &str) -> Option<CallToolResponse> {
    let target = tool.tool.executor.upstream()?;
    let data = result.data.as_ref().filter(|_| result.error.is_none())?;
    if data.get("resultType").and_then(Value::as_str) != Some("task") {
        return None;
    }
    let mut created: CreateTaskResult = serde_json::from_value(data.clone()).ok()?;
    created.task.task_id = seal(&Sealed {
        server: target.server.clone(),
        task: created.task.task_id.clone(),
        tool: tool.tool.name.to_string(),
        caller: caller.to_owned(),
    })?;
    Some(CallToolResponse::Task(created))
}

fn seal(sealed: &Sealed) -> Option<String> {
    let plain = serde_json::to_string(sealed).ok()?;
    Some(format!(
        "{PREFIX}{}",
        toolsmith_store::secrets::seal_state(&plain)
    ))
}

/// Opens task id `id` for `caller`: `None` for an id not sealed here (or by a replica), changed,
/// or another caller's.
fn open(id: &str, caller: &str) -> Option<Sealed> {
    id.strip_prefix(PREFIX)
        .and_then(toolsmith_store::secrets::open_state)
        .and_then(|plain| serde_json::from_str::<Sealed>(&plain).ok())
        .filter(|s| s.caller == caller)
}

/// The answer for a task id that names no task of this caller.
fn unknown(id: &str) -> ErrorData {
    ErrorData::invalid_params(format!("no task {id:?}"), None)
}

impl McpServer {
    /// `request` about the task `id` names, sent to its upstream for this request's caller:
    /// the upstream's answer as JSON.
    async fn task(
        &self,
        id: &str,
        request: TaskRequest,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<Value, ErrorData> {
        let door = self.door(ctx);
        let sealed = open(id, &door.log_name).ok_or_else(|| unknown(id))?;
        let method = request.method();
        let caps = ctx
            .client_capabilities()
            .and_then(|c| serde_json::to_value(c).ok());
        let answer = self
            .state
            .upstream_task(&sealed.server, &sealed.task, request, (caps, &door))
            .await;
        answer.map_err(|e| match e {
            // The upstream's own error (an unknown task is its -32602), in its words.
            UpstreamError::Rpc {
                code,
                message,
                data,
            } => ErrorData::new(ErrorCode(code), message, data),
            UpstreamError::Unknown(_) => unknown(id),
            other => ErrorData::internal_error(
                format!(
                    "{method} of a task of `{}` (MCP server `{}`) failed: {}",
                    sealed.tool,
                    sealed.server,
                    describe(&other)
                ),
                None,
            ),
        })
    }

    /// `tasks/get`: the upstream's `DetailedTask`, under the id the client knows.
    pub(super) async fn get_relayed_task(
        &self,
        id: String,
        ctx: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let answer = self.task(&id, TaskRequest::Get, &ctx).await?;
        let mut got: GetTaskResult = serde_json::from_value(answer).map_err(|e| {
            ErrorData::internal_error(
                format!("the upstream's tasks/get answer could not be read: {e}"),
                None,
            )
        })?;
        got.task.task.task_id = id;
        Ok(got)
    }

    /// `tasks/update` (answers by the upstream's keys) or `tasks/cancel`: the upstream's ack.
    pub(super) async fn ack_relayed_task(
        &self,
        id: String,
        request: TaskRequest,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.task(&id, request, &ctx).await.map(drop)
    }
}

/// Adds the tasks extension to `caps` (what toolsmith declares) when `on`.
pub fn declare(caps: &mut rmcp::model::ServerCapabilities, on: bool) {
    if on {
        caps.extensions
            .get_or_insert_with(Default::default)
            .insert(TASKS_EXTENSION_ID.into(), Default::default());
    }
}

fn describe(e: &UpstreamError) -> String {
    match e {
        UpstreamError::Unknown(s) => format!("no MCP server `{s}`"),
        UpstreamError::Down(why)
        | UpstreamError::Failed(why)
        | UpstreamError::NeedsAuthorization(why) => why.clone(),
        UpstreamError::Timeout(after) => format!("no answer within {} ms", after.as_millis()),
        UpstreamError::Rpc { code, message, .. } => format!("error {code}: {message}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issued() -> Sealed {
        Sealed {
            server: "jobs".into(),
            task: "up-7".into(),
            tool: "jobs_run".into(),
            caller: "mcp:ada".into(),
        }
    }

    #[test]
    fn a_task_id_opens_for_its_caller_only_and_not_once_changed() {
        let id = seal(&issued()).expect("sealed");
        assert!(id.starts_with(PREFIX));
        assert!(
            !id.contains("up-7"),
            "the upstream's id is not readable: {id}"
        );
        assert_eq!(open(&id, "mcp:ada"), Some(issued()));
        assert_eq!(open(&id, "mcp:bob"), None);
        for bad in [
            format!("{id}x"),
            id.replacen(PREFIX, "", 1),
            "up-7".to_owned(),
            format!("{PREFIX}AAAA"),
        ] {
            assert_eq!(open(&bad, "mcp:ada"), None, "{bad}");
        }
    }

    #[test]
    fn two_upstreams_tasks_of_the_same_id_get_different_ids() {
        let a = seal(&issued()).expect("sealed");
        let b = seal(&Sealed {
            server: "other".into(),
            ..issued()
        })
        .expect("sealed");
        assert_ne!(a, b);
        assert_eq!(open(&b, "mcp:ada").map(|s| s.server), Some("other".into()));
    }
}
