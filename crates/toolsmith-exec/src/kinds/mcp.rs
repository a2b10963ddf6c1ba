//! MCP tools: a call of an upstream server's tool, on the upstream's shared connection. The
//! upstream's `CallToolResult` is the result's `data`, unchanged (content blocks,
//! `structuredContent`), so every front door can pass it through; `isError` is the failure
//! kind `tool_error` with the upstream's text; a server that is down, a JSON-RPC error or a
//! broken connection is `upstream`, naming the server.

use serde_json::{Map, Value};
use toolsmith_core::model::McpTarget;

use super::*;
use crate::upstream::{CLIENT_ERROR, MISSING_CLIENT_CAPABILITY, UpstreamError};

impl Engine {
    pub(crate) async fn run_mcp(
        &self,
        t: &Tool,
        target: &McpTarget,
        arguments: Map<String, Value>,
        opts: &CallOptions,
        meta: Meta,
    ) -> ToolResult {
        let answer = self
            .upstreams
            .call(&target.server, &target.tool, arguments, &opts.downstream)
            .await;
        match answer {
            Ok(result) if result.get("isError") == Some(&Value::Bool(true)) => {
                let text = text_of(&result);
                ToolResult::err(
                    ErrorKind::ToolError,
                    format!(
                        "tool `{}` of MCP server `{}` reported an error: {}",
                        target.tool,
                        target.server,
                        if text.is_empty() { "(no text)" } else { &text }
                    ),
                    Vec::new(),
                    meta,
                )
                .with_output(result)
            }
            Ok(result) => ToolResult::ok(result, meta),
            Err(UpstreamError::Timeout(after)) => ToolResult::err(
                ErrorKind::Timeout,
                format!(
                    "tool `{}` of MCP server `{}` did not answer within {} ms; the call was cancelled upstream",
                    target.tool,
                    target.server,
                    after.as_millis()
                ),
                Vec::new(),
                meta,
            ),
            Err(UpstreamError::Unknown(server)) => ToolResult::err(
                ErrorKind::Upstream,
                format!(
                    "no MCP server `{server}` is configured here (tool `{}`)",
                    t.name
                ),
                Vec::new(),
                meta,
            ),
            Err(UpstreamError::Down(why) | UpstreamError::Failed(why)) => {
                ToolResult::err(ErrorKind::Upstream, why, Vec::new(), meta)
            }
            Err(UpstreamError::NeedsAuthorization(why)) => {
                ToolResult::err(ErrorKind::NeedsAuthorization, why, Vec::new(), meta)
            }
            Err(UpstreamError::Rpc {
                code,
                message,
                data,
            }) => {
                let result = ToolResult::err(
                    ErrorKind::Upstream,
                    format!(
                        "MCP server `{}` answered tools/call of `{}` with error {code}: {message}",
                        target.server, target.tool
                    ),
                    Vec::new(),
                    meta,
                );
                // The caller's own fault (it did not declare what the tool needs): the error
                // as the upstream gave it, for an MCP client to be told in the same words.
                match code == MISSING_CLIENT_CAPABILITY {
                    true => result.with_output(serde_json::json!({
                        CLIENT_ERROR: {"code": code, "message": message, "data": data}
                    })),
                    false => result,
                }
            }
        }
    }
}

/// The text blocks of a `CallToolResult`, joined.
fn text_of(result: &Value) -> String {
    result
        .get("content")
        .and_then(Value::as_array)
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// The answer for a disabled upstream tool that its server no longer lists: `upstream`,
/// saying so (a plain `disabled` would send a model looking for an operator's reason).
/// `None` for any other disabled tool.
pub(crate) fn withdrawn(engine: &Engine, tool: &CompiledTool) -> Option<ToolResult> {
    let Executor::Mcp(target) = &tool.tool.executor else {
        return None;
    };
    let listed = engine.upstreams.tools_of(&target.server)?;
    let offered = listed
        .iter()
        .any(|t| t.get("name").and_then(Value::as_str) == Some(target.tool.as_str()));
    (!offered).then(|| {
        ToolResult::err(
            ErrorKind::Upstream,
            format!(
                "tool `{}` is no longer offered by MCP server `{}`: `{}` is disabled until the \
                 server offers it again",
                target.tool, target.server, tool.tool.name
            ),
            Vec::new(),
            tool.meta(Vec::new()),
        )
    })
}
