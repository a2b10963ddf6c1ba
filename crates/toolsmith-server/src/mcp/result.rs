//! A tool's result in MCP's form: the output as text, JSON output also as
//! `structuredContent`, failures as `isError` with everything a model needs to retry; an
//! upstream tool's result passed through as the upstream sent it.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::Value;
use toolsmith_core::model::{Executor, OutputMode};
use toolsmith_core::{CompiledTool, ErrorKind, ToolResult};

/// The MCP form of a result: the output as text, JSON output also as `structuredContent`,
/// failures as `isError` with everything a model needs to retry.
pub fn to_mcp(tool: &CompiledTool, result: &ToolResult) -> CallToolResult {
    // An upstream tool's result is the upstream's own: passed through unchanged (content
    // blocks, images and resources included, `structuredContent`, `isError`).
    if tool.tool.executor.upstream().is_some() {
        let given = match &result.error {
            None => result.data.as_ref(),
            Some(e) if e.kind == ErrorKind::ToolError => e.output.as_ref(),
            Some(_) => None,
        };
        if let Some(mut r) =
            given.and_then(|v| serde_json::from_value::<CallToolResult>(v.clone()).ok())
        {
            // An upstream on an older protocol sends no `resultType`; this server speaks
            // the newer one to clients that negotiated it (and strips it for older ones).
            r.result_type = Some(rmcp::model::ResultType::COMPLETE);
            return r;
        }
    }
    match (&result.error, &result.data) {
        (None, data) => {
            let data = data.clone().unwrap_or(Value::Null);
            // A session tool's result is all state the model needs (id, status, cursor):
            // always the whole object, never just its output.
            let session = matches!(&tool.tool.executor, Executor::Builtin(b) if toolsmith_core::builtin::is_session(b));
            let structured = session
                || tool.tool.output == OutputMode::Json
                || tool.tool.output_schema.is_some();
            let text = match (&data, structured) {
                (Value::Object(m), false) if m.contains_key("stdout") => {
                    let mut text = m["stdout"].as_str().unwrap_or_default().to_owned();
                    if let Some(err) = m
                        .get("stderr")
                        .and_then(Value::as_str)
                        .filter(|s| !s.is_empty())
                    {
                        text.push_str(&format!("\n[stderr]\n{err}"));
                    }
                    text
                }
                (Value::String(s), _) => s.clone(),
                (v, _) => serde_json::to_string_pretty(v).unwrap_or_default(),
            };
            let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
            if structured || matches!(data, Value::Object(_)) && !is_process_output(&data) {
                r.structured_content = Some(data);
            }
            r
        }
        (Some(e), _) => {
            // An argument error's message already names each problem and the parameters.
            let mut text = format!("{}: {}", kind_name(e.kind), e.message);
            if e.kind != ErrorKind::InvalidArguments {
                for d in &e.details {
                    text.push_str(&format!("\n- {}: {}", d.pointer, d.message));
                }
            }
            if let Some(output) = &e.output {
                for stream in ["stdout", "stderr"] {
                    if let Some(s) = output
                        .get(stream)
                        .and_then(Value::as_str)
                        .filter(|s| !s.is_empty())
                    {
                        text.push_str(&format!("\n[{stream}]\n{s}"));
                    }
                }
            }
            CallToolResult::error(vec![ContentBlock::text(text)])
        }
    }
}

/// `{"stdout", "stderr", "exit_code"}`: a text-mode process result, shown as text only.
fn is_process_output(v: &Value) -> bool {
    v.get("stdout").is_some() && v.get("exit_code").is_some()
}

fn kind_name(kind: ErrorKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| "error".into())
}
