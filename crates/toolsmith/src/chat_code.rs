//! `chat --code-mode`: the model is offered code mode's two tools instead of the tools
//! themselves — `search_tools`, answered as MCP's code mode answers it (the matches as typed
//! Python functions, `toolsmith_server::mcp::search`), and `run_code`, a program run through
//! the gateway ([`toolsmith_gateway::code`]) in the chat's view, its calls logged under
//! `chat`.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use toolsmith_agent::driver::BoxFuture;
use toolsmith_agent::{Asker, CodeMode};
use toolsmith_core::{CompiledTool, ErrorKind, ToolResult};
use toolsmith_exec::upstream::Elicitor;
use toolsmith_gateway::Gateway;
use toolsmith_gateway::call::Door;
use toolsmith_gateway::code::{CodeLimits, CodeRequest};
use toolsmith_gateway::view::View;
use toolsmith_server::mcp::{McpOptions, McpServer, search};

/// What answers a chat's code-mode tools.
pub struct ChatCode {
    gateway: Arc<Gateway>,
    view: Arc<View>,
    /// MCP's handler, for its snapshot of the tools (what `search_tools` ranks).
    mcp: McpServer,
}

impl ChatCode {
    pub fn new(gateway: Arc<Gateway>, mut view: View) -> Self {
        let mcp = McpServer::new(gateway.clone(), McpOptions::default());
        view.code = true;
        Self {
            gateway,
            view: Arc::new(view),
            mcp,
        }
    }

    /// The two tools, compiled as the model is offered them (from MCP's code-mode listing).
    pub fn tools(&self) -> anyhow::Result<Vec<Arc<CompiledTool>>> {
        search::code_tools(self.gateway.code_limits().timeout_ms)
            .into_iter()
            .map(|t| {
                let schema = serde_json::to_value(t.input_schema.as_ref())?;
                let required: Vec<&str> = schema["required"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                let parameters: Vec<Value> = schema["properties"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(name, p)| {
                        let mut p = p.clone();
                        p["name"] = json!(name);
                        p["required"] = json!(required.contains(&name.as_str()));
                        p
                    })
                    .collect();
                // Answered here, never run as a script: the executor only makes it a tool.
                let definition = json!({
                    "name": t.name,
                    "description": t.description,
                    "parameters": parameters,
                    "danger": "safe",
                    "script": {"interpreter": "python3", "source": "raise SystemExit(1)"},
                });
                let tool = toolsmith_store::definition_to_tool(&definition)?;
                Ok(Arc::new(CompiledTool::new(tool, 1)?))
            })
            .collect()
    }
}

impl CodeMode for ChatCode {
    fn search(&self, arguments: Value) -> BoxFuture<'_, ToolResult> {
        Box::pin(async move {
            let snapshot = match self.mcp.snapshot().await {
                Ok(s) => s,
                Err(e) => return failed(ErrorKind::Internal, e.message.to_string()),
            };
            let arguments: Map<String, Value> = match arguments {
                Value::Object(m) => m,
                _ => Map::new(),
            };
            let answer = search::search(&snapshot, &self.view, &arguments);
            let text = answer
                .content
                .iter()
                .filter_map(|c| c.as_text().map(|t| t.text.clone()))
                .collect::<Vec<_>>()
                .join("\n");
            match answer.is_error {
                Some(true) => failed(ErrorKind::InvalidArguments, text),
                _ => ToolResult::ok(Value::String(text), Default::default()),
            }
        })
    }

    fn run(
        &self,
        arguments: Value,
        confirmed: bool,
        ask: Option<Asker>,
    ) -> BoxFuture<'_, ToolResult> {
        Box::pin(async move {
            let Some(code) = arguments.get("code").and_then(Value::as_str) else {
                return failed(
                    ErrorKind::InvalidArguments,
                    "run_code needs `code`: the program, a string".into(),
                );
            };
            let mut limits = CodeLimits::default();
            if let Some(ms) = arguments.get("timeout_ms").and_then(Value::as_u64) {
                limits.timeout_ms = ms.clamp(1, limits.timeout_ms);
            }
            let door = Door {
                label: "chat".into(),
                caller: None,
                log_name: "chat".into(),
            };
            // The gateway's question (an elicitation form) put to the user in words.
            let ask = ask.map(|ask| {
                Elicitor(Arc::new(move |question: Value| {
                    let ask = ask.clone();
                    Box::pin(async move {
                        let text = question["message"].as_str().unwrap_or_default().to_owned();
                        let yes = ask(text).await;
                        Ok(json!({"action": "accept", "content": {"confirm": yes}}))
                    })
                }))
            });
            let request = CodeRequest {
                code: code.to_owned(),
                confirm_all: confirmed,
                ask,
                ..CodeRequest::default()
            };
            match self
                .gateway
                .run_code(door, self.view.clone(), request, &limits)
                .await
            {
                Ok(ran) => ran.result,
                Err(e) => failed(
                    ErrorKind::Internal,
                    format!("the program could not start: {e}"),
                ),
            }
        })
    }
}

fn failed(kind: ErrorKind, message: String) -> ToolResult {
    ToolResult::err(kind, message, Vec::new(), Default::default())
}
