//! MCP tools: a tool of an upstream MCP server (SPEC §11), usually discovered and written by
//! toolsmith itself, with the upstream's JSON Schema kept verbatim as `input_schema`.

use super::*;

pub(super) const RULES: Rules = Rules {
    name: "mcp",
    place: Place::JsonArgument,
    // The upstream runs it; toolsmith starts the upstream, not the call.
    process: false,
    command_keys: false,
    reserved_parameter: None,
    raw_schema: true,
};

/// `{mcp: {server, tool}}`.
pub(super) fn read(v: &Value, at: &str, e: &mut Errs) -> Option<Executor> {
    let f = Fields::new(v.get("mcp")?, at, &["server", "tool"], e)?;
    let server = f.string("server", e);
    let tool = f.string("tool", e);
    if !f.has("server") {
        e.push(&f.at("server"), "missing: the upstream server's name");
    }
    if !f.has("tool") {
        e.push(&f.at("tool"), "missing: the tool's name on the upstream");
    }
    if let Some(s) = &server
        && !crate::catalog::servers::valid_server_name(s)
    {
        e.push(
            &f.at("server"),
            format!("invalid server name {s:?}: 1 to 64 letters, digits, `_` or `-`"),
        );
    }
    Some(Executor::Mcp(McpTarget {
        server: server?,
        tool: tool.filter(|t| !t.is_empty())?,
    }))
}
