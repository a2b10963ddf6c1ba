//! Code mode's `run_code` over MCP: the program runs through the gateway
//! ([`toolsmith_gateway::code`]) as this client's caller, in this request's view; the model
//! gets only what the program printed (cut, with a note, past its cap), the value of its last
//! expression and, when it failed, its traceback — `isError` then. The run's tool calls are in
//! `structuredContent`, with the rest. A dangerous tool inside the program runs only when the
//! server's operator allowed dangerous tools for everyone (`--allow-dangerous`); otherwise it
//! raises `needs_confirmation` in the program and does not run.

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{CallToolResult, ContentBlock};
use rmcp::service::RequestContext;
use serde_json::{Map, Value, json};
use toolsmith_gateway::code::{CodeLimits, CodeRequest};
use toolsmith_gateway::view::View;

use super::McpServer;

impl McpServer {
    /// Answers `run_code` with `arguments` (`code`, maybe `timeout_ms`).
    pub(super) async fn run_program(
        &self,
        arguments: Map<String, Value>,
        view: Arc<View>,
        ctx: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let Some(code) = arguments.get("code").and_then(Value::as_str) else {
            return CallToolResult::error(vec![ContentBlock::text(
                "invalid_arguments: `code` (the program, a string) is required",
            )]);
        };
        let mut limits = CodeLimits::default();
        if let Some(ms) = arguments.get("timeout_ms").and_then(Value::as_u64) {
            limits.timeout_ms = ms.clamp(1, limits.timeout_ms);
        }
        let request = CodeRequest {
            code: code.to_owned(),
            confirm_all: self.options.allow_dangerous,
            ..CodeRequest::default()
        };
        let ran = match self
            .state
            .run_code(self.door(ctx), view, request, &limits)
            .await
        {
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
}
