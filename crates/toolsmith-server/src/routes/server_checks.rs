//! Trying an upstream MCP server before saving it (the web UI's "Add server"): start a
//! definition apart from the served ones and list what it would add (`POST
//! /v1/check/server`), and read a client's configuration file — Claude Desktop's
//! `claude_desktop_config.json`, Claude Code's `.mcp.json`, VS Code's `mcp.json` — into the
//! definitions its entries become (`POST /v1/check/mcp-config`). Nothing is recorded by
//! either; both need the admin role (the first starts a process).

use std::time::Duration;

use toolsmith_core::upstream::from_mcp_config;

use super::*;

/// Registers this file's handlers.
pub(super) fn routes(api: Api) -> Api {
    api.routes(routes!(check_server))
        .routes(routes!(read_mcp_config))
}

/// How long a server under test gets to start and list its tools.
const PROBE_TIMEOUT: Duration = Duration::from_secs(20);

/// A tool a server under test would add.
#[derive(Serialize, ToSchema)]
struct ProbedTool {
    /// Its name here (after the prefix and any override).
    name: String,
    /// Its name on the upstream.
    upstream: String,
    description: String,
    /// `safe` or `dangerous`, as derived from its annotations and the overrides.
    danger: String,
    /// Left out by the server's `include`/`exclude`.
    excluded: bool,
    /// Why it could not be served as it is (a name that is not valid here, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    problem: Option<String>,
}

/// What starting a server definition showed.
#[derive(Serialize, ToSchema)]
struct Probe {
    /// It started and listed its tools.
    ok: bool,
    /// Why not, when it did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    tools: Vec<ProbedTool>,
    /// The end of its stderr (secret config values as `***`).
    log: String,
}

/// Starts a server definition (catalog form) without saving it, waits up to 20 s for its
/// tools, stops it, and lists what it would add. A definition that does not start is still
/// a 200: `ok` false with the reason and its stderr.
#[utoipa::path(post, path = "/v1/check/server", tag = "servers",
    request_body(content = Object, description = "A server in catalog form (an `mcp_servers` entry)"),
    responses((status = 200, body = Probe), (status = 422, body = ErrorBody)))]
async fn check_server(State(s): Shared, Body(body): Body<Value>) -> ApiResult<Json<Probe>> {
    let server = super::servers::parse_server(body, None)?;
    let (listed, log) = s.probe_upstream(server.clone(), PROBE_TIMEOUT).await;
    let (ok, error, tools) = match listed {
        Ok(tools) => (true, None, tools),
        Err(why) => (false, Some(why.to_string()), Vec::new()),
    };
    let tools = tools
        .iter()
        .map(|t| {
            let upstream = t["name"].as_str().unwrap_or_default().to_owned();
            let made = server.tool_from(t);
            ProbedTool {
                name: made
                    .as_ref()
                    .map(|tool| tool.name.to_string())
                    .unwrap_or_else(|_| upstream.clone()),
                description: t["description"].as_str().unwrap_or_default().to_owned(),
                danger: match &made {
                    Ok(tool) if tool.is_dangerous() => "dangerous".into(),
                    Ok(_) => "safe".into(),
                    Err(_) => "unknown".into(),
                },
                excluded: !server.serves(&upstream),
                problem: made.err().map(|e| e.to_string()),
                upstream,
            }
        })
        .collect();
    Ok(Json(Probe {
        ok,
        error,
        tools,
        log,
    }))
}

/// One entry of a client configuration file, as it would be added.
#[derive(Serialize, ToSchema)]
struct ConfigEntry {
    /// Its name in the file.
    entry: String,
    /// The server definition it becomes (catalog form; a secret it read from an environment
    /// variable is written `${NAME}`: put the value in before adding it).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    server: Option<Value>,
    /// Why it cannot be added.
    #[serde(skip_serializing_if = "Option::is_none")]
    skipped: Option<String>,
}

#[derive(Serialize, ToSchema)]
struct ConfigRead {
    entries: Vec<ConfigEntry>,
}

/// Reads a client configuration file (`{"mcpServers": {...}}` or VS Code's `{"servers":
/// {...}}`) into the server definitions its entries become; nothing is saved. Names that are
/// not valid here are mapped (`my.server` → `my-server`); secrets (variables and headers
/// whose names speak of one) become secret config fields.
#[utoipa::path(post, path = "/v1/check/mcp-config", tag = "servers",
    request_body(content = Object, description = "The configuration file's JSON"),
    responses((status = 200, body = ConfigRead), (status = 422, body = ErrorBody)))]
async fn read_mcp_config(Body(body): Body<Value>) -> ApiResult<Json<ConfigRead>> {
    // A secret stays a reference to the variable it names: the server's own environment is
    // never read for a browser.
    let mut imported = from_mcp_config(&body, &|name: &str| Some(format!("${{{name}}}")))
        .map_err(|e| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid", e.to_string()))?;
    // Folders a server is started to work in become writable in its sandbox.
    for server in &mut imported.servers {
        toolsmith_gateway::propose_writes(server);
    }
    let entry_of = |name: &str| {
        imported
            .renamed
            .iter()
            .find(|(_, n)| n == name)
            .map_or(name.to_owned(), |(entry, _)| entry.clone())
    };
    let mut entries: Vec<ConfigEntry> = imported
        .servers
        .iter()
        .map(|server| ConfigEntry {
            entry: entry_of(&server.name),
            server: Some(server.to_catalog_value(Secrets::Keep)),
            skipped: None,
        })
        .collect();
    entries.extend(imported.skipped.iter().map(|(entry, why)| ConfigEntry {
        entry: entry.clone(),
        server: None,
        skipped: Some(why.clone()),
    }));
    Ok(Json(ConfigRead { entries }))
}
