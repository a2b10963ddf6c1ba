//! Code mode's `run_code` over MCP: the program runs through the gateway
//! ([`toolsmith_gateway::code`]) as this client's caller, in this request's view; the model
//! gets only what the program printed (cut, with a note, past its cap), the value of its last
//! expression and, when it failed, its traceback — `isError` then. The run's tool calls are in
//! `structuredContent`, with the rest. A dangerous tool inside the program runs when the
//! server's operator allowed dangerous tools for everyone (`--allow-dangerous`) or the user
//! says yes when asked: a client that can show a form is asked during the program — with a
//! request of its own before 2026-07-28 (stdio, sessions), with "input required" on it (the
//! program is parked meanwhile, [`super::ask`], and goes on when the answer comes with the
//! call sent again to this server). Otherwise it raises `needs_confirmation` in the program.

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock, ProtocolVersion};
use rmcp::service::RequestContext;
use serde_json::{Map, Value, json};
use toolsmith_core::ToolResult;
use toolsmith_gateway::code::{CodeRequest, CodeRun};
use toolsmith_gateway::upstream::{BoxFuture, Elicitor};
use toolsmith_gateway::view::View;

use super::McpServer;
use super::ask::{Next, Parking, QUESTION_KEY};

impl McpServer {
    /// Answers `run_code` with `arguments` (`code`, maybe `timeout_ms`) — or, when the call
    /// brings the answer to a question its parked program asked, goes on with it.
    pub(super) async fn run_program(
        &self,
        arguments: Map<String, Value>,
        view: Arc<View>,
        (state, answers): (Option<&str>, Option<Value>),
        ctx: &RequestContext<RoleServer>,
    ) -> CallToolResponse {
        if let Some(state) = state.filter(|s| Parking::names_a_question(Some(s))) {
            let answer = answers
                .and_then(|a| a.get(QUESTION_KEY).cloned())
                .unwrap_or_else(|| json!({"action": "cancel"}));
            return match self.parking.resume(state, answer).await {
                Some(next) => finished(next),
                None => CallToolResult::error(vec![ContentBlock::text(
                    "the question this answers is no longer waiting (it waits 10 minutes, on the \
                     server that asked it); run the program again",
                )])
                .into(),
            };
        }
        let Some(code) = arguments.get("code").and_then(Value::as_str) else {
            return CallToolResult::error(vec![ContentBlock::text(
                "invalid_arguments: `code` (the program, a string) is required",
            )])
            .into();
        };
        let mut limits = self.state.code_limits();
        if let Some(ms) = arguments.get("timeout_ms").and_then(Value::as_u64) {
            limits.timeout_ms = ms.clamp(1, limits.timeout_ms);
        }
        let mut request = CodeRequest {
            code: code.to_owned(),
            confirm_all: self.options.allow_dangerous,
            ..CodeRequest::default()
        };
        let can_ask = !self.options.allow_dangerous
            && ctx
                .client_capabilities()
                .is_some_and(|c| c.elicitation.is_some());
        let modern = ctx
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        let (state, door) = (self.state.clone(), self.door(ctx));
        if can_ask && modern {
            // Parked while it asks: the client gets "input required".
            let next = self
                .parking
                .start(move |askers| async move {
                    request.ask = Some(askers.elicit);
                    let answer = answer_of(state.run_code(door, view, request, &limits).await);
                    ToolResult::ok(
                        serde_json::to_value(answer).unwrap_or_default(),
                        Default::default(),
                    )
                })
                .await;
            return finished(next);
        }
        if can_ask {
            request.ask = Some(ask_peer(ctx.peer.clone()));
        }
        answer_of(state.run_code(door, view, request, &limits).await).into()
    }
}

/// Asks the client's user during the call (an `elicitation/create` request of its own).
fn ask_peer(peer: rmcp::Peer<RoleServer>) -> Elicitor {
    Elicitor(Arc::new(move |params: Value| -> BoxFuture<_> {
        let peer = peer.clone();
        Box::pin(async move {
            let params = serde_json::from_value(params)?;
            let answer = peer.create_elicitation(params).await?;
            Ok(serde_json::to_value(answer)?)
        })
    }))
}

/// A parked program's next step, as the client gets it.
fn finished(next: Next) -> CallToolResponse {
    match next {
        Next::Ask(asked) => CallToolResponse::InputRequired(asked),
        Next::Done(result) => result
            .data
            .and_then(|d| serde_json::from_value::<CallToolResult>(d).ok())
            .unwrap_or_else(|| {
                CallToolResult::error(vec![ContentBlock::text(
                    "internal: the program's answer could not be read",
                )])
            })
            .into(),
    }
}

/// A program's run as the model gets it.
fn answer_of(ran: Result<CodeRun, toolsmith_gateway::GatewayError>) -> CallToolResult {
    let ran = match ran {
        Ok(ran) => ran,
        Err(e) => {
            return CallToolResult::error(vec![ContentBlock::text(format!(
                "internal: the program could not start: {e}"
            ))]);
        }
    };
    let calls = serde_json::to_value(&ran.calls).unwrap_or_default();
    let Some(data) = ran.result.data.as_ref().filter(|_| ran.result.success) else {
        let message = ran
            .result
            .error
            .as_ref()
            .map(|e| e.message.clone())
            .unwrap_or_default();
        let mut result = CallToolResult::error(vec![ContentBlock::text(message.clone())]);
        result.structured_content = Some(json!({"error": message, "calls": calls}));
        return result;
    };
    let mut text = data["output"].as_str().unwrap_or_default().to_owned();
    if !data["value"].is_null() {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        let value = match &data["value"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        text.push_str(&value);
    }
    let error = data["error"].as_str().filter(|e| !e.is_empty());
    if let Some(error) = error {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(error);
    }
    if text.is_empty() {
        text = "(the program printed nothing and its last line has no value)".to_owned();
    }
    let mut result = match error {
        Some(_) => CallToolResult::error(vec![ContentBlock::text(text)]),
        None => CallToolResult::success(vec![ContentBlock::text(text)]),
    };
    let mut structured = data.clone();
    structured["calls"] = calls;
    result.structured_content = Some(structured);
    result
}
