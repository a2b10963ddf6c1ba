//! Upstream MCP servers (SPEC §11): list them with their live status, create, read, update
//! (naming the version the change is based on, as tools do) and delete them; refresh one's
//! tool list; read its pending changes with a field-level diff, approve or reject them; read
//! the end of its stderr. Writes need the admin role. Secret config values are `***`.

use toolsmith_core::upstream::McpServer;
use toolsmith_store::{ServerRecord, UpstreamStore};

use super::documents::{self, ChangeParams, base_version};
use super::*;
use toolsmith_gateway::federation;

/// Registers this file's handlers.
pub(super) fn routes(api: Api) -> Api {
    api.routes(routes!(list_servers, create_server))
        .routes(routes!(show_server, update_server, delete_server))
        .routes(routes!(refresh_server))
        .routes(routes!(restart_server))
        .routes(routes!(server_changes))
        .routes(routes!(approve_changes))
        .routes(routes!(reject_changes))
        .routes(routes!(server_log))
        .routes(routes!(connect_server, disconnect_server))
}

/// A server: its definition, its version and how it is doing now.
#[derive(Serialize, ToSchema)]
struct ServerView {
    name: String,
    /// `stdio` or `http`.
    kind: String,
    version: u64,
    updated_at_ms: i64,
    updated_by: String,
    /// The definition in catalog form (secrets as `***`).
    #[schema(value_type = Object)]
    definition: Value,
    /// `starting`, `ready`, `failed` or `stopped`, with pid, restarts, last error, tool count
    /// and the time of its last listing; absent where no upstream runs (a CLI reading the
    /// registry).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    status: Option<Value>,
    /// Changes waiting for a decision.
    pending: usize,
    /// What of its tools could not be served (name collisions, refused definitions).
    problems: Vec<String>,
    /// The registry tools of this server (only when one server is asked for).
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<Vec<String>>,
    /// A server that authorizes with OAuth (`auth: oauth`, or found so: its 401 named its
    /// authorization metadata): whether its shared connection is made.
    #[serde(skip_serializing_if = "Option::is_none")]
    oauth: Option<OAuthView>,
}

/// The OAuth connection of a server (never its tokens).
#[derive(Serialize, ToSchema)]
struct OAuthView {
    /// Whether the shared connection has tokens (`POST .../connect` makes it).
    connected: bool,
    /// When it was connected or its tokens last refreshed (ms since the epoch).
    #[serde(skip_serializing_if = "Option::is_none")]
    at_ms: Option<i64>,
    /// `connection: per_user`: each caller connects its own account (the shared connection
    /// only lists what the server offers).
    per_user: bool,
    /// How many users connected their own account (`GET /v1/connections?all=true` names
    /// them, for admins).
    users: usize,
}

#[derive(Serialize, ToSchema)]
struct ServerList {
    servers: Vec<ServerView>,
}

async fn server_view(s: &Gateway, r: &ServerRecord, with_tools: bool) -> ApiResult<ServerView> {
    let name = r.server.name.clone();
    let pending = s
        .store
        .changes(Some(&name))
        .await?
        .iter()
        .filter(|c| c.status == "pending")
        .count();
    let tools = match with_tools {
        true => Some(
            s.store
                .search_all(StoreQuery {
                    include_disabled: true,
                    ..StoreQuery::default()
                })
                .await?
                .into_iter()
                .filter(|t| t.tool.executor.upstream().is_some_and(|m| m.server == name))
                .map(|t| t.tool.name.to_string())
                .collect(),
        ),
        false => None,
    };
    // The shared connection, if made (it lists; it never opens the tokens); a server is
    // asked whether it uses OAuth only when neither its definition nor that says so.
    let (shared, users): (Vec<_>, Vec<_>) = s
        .connections(Some(&name))
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?
        .into_iter()
        .partition(|c| c.subject.is_empty());
    let shared = shared.into_iter().next();
    let oauth = match r.server.resolved_oauth().is_some()
        || shared.is_some()
        || s.uses_oauth(&name).await
    {
        true => Some(OAuthView {
            connected: shared.is_some(),
            at_ms: shared.map(|c| c.at_ms),
            per_user: r.server.resolved_oauth().is_some_and(|o| o.per_user),
            users: users.len(),
        }),
        false => None,
    };
    Ok(ServerView {
        oauth,
        kind: r.server.transport.kind().to_owned(),
        version: r.version,
        updated_at_ms: r.updated_at_ms,
        updated_by: r.updated_by.clone(),
        definition: r.server.to_catalog_value(Secrets::Redact),
        status: s
            .upstream_status(&name)
            .and_then(|st| serde_json::to_value(st).ok()),
        pending,
        problems: s.federation_problems.of(&name),
        tools,
        name,
    })
}

/// Every upstream MCP server, by name, with its status.
#[utoipa::path(get, path = "/v1/servers", tag = "servers", responses((status = 200, body = ServerList)))]
async fn list_servers(State(s): Shared) -> ApiResult<Json<ServerList>> {
    let mut servers = Vec::new();
    for r in s.store.servers().await? {
        servers.push(server_view(&s, &r, false).await?);
    }
    Ok(Json(ServerList { servers }))
}

/// A server definition from a request: `***` for a secret keeps the stored value only where
/// the field is secret in both.
pub(super) fn parse_server(mut value: Value, current: Option<&McpServer>) -> ApiResult<McpServer> {
    if let Some(current) = current {
        let stored = json!({
            "config_schema": current.config_schema,
            "config": current.config,
        });
        let draft_secret = secrets::declared_secret_fields(&value);
        if let (Some(config), Some(old)) = (
            value.get_mut("config").and_then(Value::as_object_mut),
            stored["config"].as_object(),
        ) {
            for p in current.config_schema.iter().filter(|p| p.secret) {
                if config.get(&p.name).and_then(Value::as_str) == Some(REDACTED)
                    && draft_secret.contains(&p.name)
                    && let Some(v) = old.get(&p.name)
                {
                    config.insert(p.name.clone(), v.clone());
                }
            }
        }
    }
    catalog::parse_server(&value, &super::drafts::Closed).map_err(|e| {
        let stored = current.map(McpServer::secret_values).unwrap_or_default();
        let details: Vec<Value> =
            e.0.iter()
                .map(|e| json!({"path": e.path, "message": secrets::scrub(&e.message, &stored)}))
                .collect();
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid",
            format!("the server definition has {} problem(s)", details.len()),
        )
        .with_details(details)
    })
}

/// Creates an upstream server at version 1; it starts in the background and its first
/// listing is approved.
#[utoipa::path(post, path = "/v1/servers", tag = "servers",
    request_body(content = Object, description = "A server in catalog form (an `mcp_servers` entry)"),
    responses((status = 201, body = ServerView), (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn create_server(
    State(s): Shared,
    Extension(caller): Extension<Caller>,
    Body(body): Body<Value>,
) -> ApiResult<Response> {
    let server = parse_server(body, None)?;
    let r = documents::create(&s, &caller, &server, None).await?;
    s.changed();
    Ok((StatusCode::CREATED, Json(server_view(&s, &r, false).await?)).into_response())
}

/// One server: its definition, status, pending changes and tools.
#[utoipa::path(get, path = "/v1/servers/{name}", tag = "servers", params(("name" = String, Path, description = "The server's name")),
    responses((status = 200, body = ServerView), (status = 404, body = ErrorBody)))]
async fn show_server(State(s): Shared, Path(name): Path<String>) -> ApiResult<Json<ServerView>> {
    let r = s.store.get_server(&name).await?;
    Ok(Json(server_view(&s, &r, true).await?))
}

/// Replaces a server's definition (a new version; the upstream restarts). Name the version
/// the change is based on (`If-Match` or `base_version`).
#[utoipa::path(put, path = "/v1/servers/{name}", tag = "servers",
    params(("name" = String, Path, description = "The server's name"), ChangeParams),
    request_body(content = Object, description = "The whole server in catalog form; `***` for a secret keeps it"),
    responses((status = 200, body = ServerView), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody),
        (status = 422, body = ErrorBody), (status = 428, body = ErrorBody)))]
async fn update_server(
    State(s): Shared,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
    Query(p): Query<ChangeParams>,
    headers: HeaderMap,
    Body(mut body): Body<Value>,
) -> ApiResult<Json<ServerView>> {
    let base = base_version(&headers, &p)?;
    let current = s.store.get_server(&name).await?;
    documents::name_from_path("server", &mut body, &name)?;
    let server = parse_server(body, Some(&current.server))?;
    let r = documents::update(&s, &caller, &server, base, p.summary.as_deref()).await?;
    s.changed();
    Ok(Json(server_view(&s, &r, false).await?))
}

/// Deletes a server: its process stops and its tools leave the registry.
#[utoipa::path(delete, path = "/v1/servers/{name}", tag = "servers", params(("name" = String, Path, description = "The server's name")),
    responses((status = 204, description = "Deleted"), (status = 404, body = ErrorBody)))]
async fn delete_server(
    State(s): Shared,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
) -> ApiResult<StatusCode> {
    documents::delete::<McpServer>(&s, &caller, &name).await?;
    s.changed();
    Ok(StatusCode::NO_CONTENT)
}

/// What a refresh did.
#[derive(Serialize, ToSchema)]
struct Refreshed {
    /// Whether this server runs the upstream (a refresh was asked of it).
    asked: bool,
}

/// Asks the upstream to list its tools again; what changed shows among its changes (or,
/// with `on_change: accept`, as new versions) a moment later.
#[utoipa::path(post, path = "/v1/servers/{name}/refresh", tag = "servers", params(("name" = String, Path, description = "The server's name")),
    responses((status = 200, body = Refreshed), (status = 404, body = ErrorBody)))]
async fn refresh_server(State(s): Shared, Path(name): Path<String>) -> ApiResult<Json<Refreshed>> {
    s.store.get_server(&name).await?;
    Ok(Json(Refreshed {
        asked: s.refresh_upstream(&name),
    }))
}

/// Whether the server was restarted.
#[derive(Serialize, ToSchema)]
struct Restarted {
    /// False when no upstream of that name runs here (a server just added starts within a
    /// moment).
    restarted: bool,
}

/// Stops the upstream (with what it spawned) and starts it again; its tools stay listed, and
/// calls during the restart wait for it. Admin only.
#[utoipa::path(post, path = "/v1/servers/{name}/restart", tag = "servers", params(("name" = String, Path, description = "The server's name")),
    responses((status = 200, body = Restarted), (status = 404, body = ErrorBody)))]
async fn restart_server(State(s): Shared, Path(name): Path<String>) -> ApiResult<Json<Restarted>> {
    s.store.get_server(&name).await?;
    let restarted = s.restart_upstream(&name);
    Ok(Json(Restarted { restarted }))
}

/// One change an upstream made to a tool, waiting for a decision.
#[derive(Serialize, ToSchema)]
pub(super) struct ChangeView {
    /// The upstream's name of the tool.
    pub(super) tool: String,
    /// `added`, `changed` or `removed`.
    pub(super) kind: String,
    /// `pending`, or `rejected` (kept out until the upstream changes again).
    pub(super) status: String,
    pub(super) detected_at_ms: i64,
    /// What differs from the approved definition, path by path (`description`,
    /// `inputSchema.properties.q.type`, …); a whole tool for `added` and `removed`.
    pub(super) diff: Vec<Difference>,
    /// The approved definition, served now (absent for an added tool).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub(super) before: Option<Value>,
    /// What the upstream says now (absent when it removed the tool).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub(super) now: Option<Value>,
    /// What the guardrail scanner finds in what the upstream says now, most severe first: a
    /// `hold` finding keeps it out of service until approved with `allow`.
    pub(super) findings: Vec<toolsmith_core::guard::Finding>,
}

#[derive(Serialize, ToSchema)]
pub(super) struct ChangeList {
    pub(super) changes: Vec<ChangeView>,
}

/// The changes of a server waiting for a decision (and those rejected), with their diffs.
#[utoipa::path(get, path = "/v1/servers/{name}/changes", tag = "servers", params(("name" = String, Path, description = "The server's name")),
    responses((status = 200, body = ChangeList), (status = 404, body = ErrorBody)))]
async fn server_changes(State(s): Shared, Path(name): Path<String>) -> ApiResult<Json<ChangeList>> {
    s.store.get_server(&name).await?;
    let others = toolsmith_gateway::guardrails::foreign_names(&s.store, Some(&name)).await?;
    let pins: std::collections::BTreeMap<String, Value> = s
        .store
        .pins(&name)
        .await?
        .into_iter()
        .map(|p| (p.tool, p.pinned))
        .collect();
    let changes = s
        .store
        .changes(Some(&name))
        .await?
        .into_iter()
        .map(|c| {
            let before = pins.get(&c.tool).cloned().unwrap_or(Value::Null);
            let after = c.pinned.clone().unwrap_or(Value::Null);
            ChangeView {
                findings: toolsmith_gateway::guardrails::scan_key(
                    &c.tool,
                    c.pinned.as_ref(),
                    &others,
                ),
                diff: toolsmith_store::diff(&before, &after),
                before: (!before.is_null()).then(|| before.clone()),
                tool: c.tool,
                kind: c.kind,
                status: c.status,
                detected_at_ms: c.detected_at_ms,
                now: c.pinned,
            }
        })
        .collect();
    Ok(Json(ChangeList { changes }))
}

/// Which pending changes a decision is about.
#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct Decision {
    /// The upstream tool names; absent or empty: every pending change of the server.
    #[serde(default)]
    pub(super) tools: Vec<String>,
    /// Approve definitions the guardrail scanner holds too (recorded with who allowed
    /// them); without it, approving one is refused naming its findings' rules.
    #[serde(default)]
    pub(super) allow: bool,
}

/// The decision's body: empty (every pending change) or `{"tools": [...]}`.
pub(super) fn decision(body: &[u8]) -> ApiResult<Decision> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Decision::default());
    }
    serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(format!(
            "the body is {{\"tools\": [upstream tool names], \"allow\": false}} (or empty for all): {e}"
        ))
    })
}

/// What a decision applied to.
#[derive(Serialize, ToSchema)]
pub(super) struct Decided {
    /// The upstream tool names whose changes were approved or rejected.
    pub(super) tools: Vec<String>,
}

/// Approves pending changes: the upstream's definitions become new versions of the tools
/// (authored `upstream:<server>`), and are served from now on.
#[utoipa::path(post, path = "/v1/servers/{name}/approve", tag = "servers", params(("name" = String, Path, description = "The server's name")),
    request_body(content = Decision, description = "Which changes (all when empty)"),
    responses((status = 200, body = Decided), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn approve_changes(
    State(s): Shared,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
    body: axum::body::Bytes,
) -> ApiResult<Json<Decided>> {
    s.store.get_server(&name).await?;
    let decision = decision(&body)?;
    let tools = federation::approve(
        &s.store,
        &name,
        &decision.tools,
        &caller.name,
        decision.allow,
    )
    .await
    .map_err(|e| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid", e.to_string()))?;
    s.changed();
    Ok(Json(Decided { tools }))
}

/// Rejects pending changes: the approved definitions stay served, and these changes stay
/// out until the upstream changes the tool again.
#[utoipa::path(post, path = "/v1/servers/{name}/reject", tag = "servers", params(("name" = String, Path, description = "The server's name")),
    request_body(content = Decision, description = "Which changes (all when empty)"),
    responses((status = 200, body = Decided), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn reject_changes(
    State(s): Shared,
    Path(name): Path<String>,
    body: axum::body::Bytes,
) -> ApiResult<Json<Decided>> {
    s.store.get_server(&name).await?;
    let tools = decision(&body)?.tools;
    let tools = federation::reject(&s.store, &name, &tools)
        .await
        .map_err(|e| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid", e.to_string()))?;
    s.changed();
    Ok(Json(Decided { tools }))
}

/// The end of a stdio server's stderr.
#[derive(Serialize, ToSchema)]
struct ServerLog {
    /// Its last 64 KiB (secret config values as `***`); empty for HTTP servers.
    log: String,
}

/// The end of a server's stderr.
#[utoipa::path(get, path = "/v1/servers/{name}/log", tag = "servers", params(("name" = String, Path, description = "The server's name")),
    responses((status = 200, body = ServerLog), (status = 404, body = ErrorBody)))]
async fn server_log(State(s): Shared, Path(name): Path<String>) -> ApiResult<Json<ServerLog>> {
    s.store.get_server(&name).await?;
    Ok(Json(ServerLog {
        log: s.upstream_log(&name).unwrap_or_default(),
    }))
}

/// Begins the OAuth authorization of a server's shared connection (`auth: oauth`): open
/// `authorization_url` in a browser and consent; the authorization server sends the browser
/// back to this server's `/oauth/callback`, the tokens are kept (sealed) and the server
/// connects with them. Admin only.
#[utoipa::path(post, path = "/v1/servers/{name}/connect", tag = "servers", params(("name" = String, Path, description = "The server's name")),
    responses((status = 200, body = toolsmith_gateway::connections::Started),
        (status = 404, body = ErrorBody), (status = 409, body = ErrorBody, description = "The server does not use OAuth"),
        (status = 502, body = ErrorBody, description = "Its authorization server could not be found or refused to register toolsmith")))]
async fn connect_server(
    State(s): Shared,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Json<toolsmith_gateway::connections::Started>> {
    s.store.get_server(&name).await?;
    let base = crate::auth::public_base_of(&s, &headers);
    s.connect(&name, "", &base)
        .await
        .map(Json)
        .map_err(connect_error)
}

/// What a connection's failure answers.
pub(crate) fn connect_error(e: toolsmith_gateway::connections::ConnectError) -> ApiError {
    use toolsmith_gateway::connections::ConnectError as E;
    let (status, code) = match &e {
        E::Unknown(_) => (StatusCode::NOT_FOUND, "not_found"),
        E::NotOAuth(_) => (StatusCode::CONFLICT, "not_oauth"),
        E::Shared(_) => (StatusCode::CONFLICT, "shared_connection"),
        E::Exchanging(_) => (StatusCode::CONFLICT, "exchanging"),
        E::NoSuchAuthorization => (StatusCode::BAD_REQUEST, "no_such_authorization"),
        E::Failed(_) => (StatusCode::BAD_GATEWAY, "authorization_failed"),
    };
    ApiError::new(status, code, e.to_string())
}

/// Whether there were tokens to forget (a server's shared ones, or the caller's own).
#[derive(Serialize, ToSchema)]
pub(super) struct Disconnected {
    pub(super) disconnected: bool,
}

/// Forgets the tokens of a server's shared OAuth connection; the server needs authorization
/// again. Admin only.
#[utoipa::path(delete, path = "/v1/servers/{name}/connect", tag = "servers", params(("name" = String, Path, description = "The server's name")),
    responses((status = 200, body = Disconnected), (status = 404, body = ErrorBody)))]
async fn disconnect_server(
    State(s): Shared,
    Path(name): Path<String>,
) -> ApiResult<Json<Disconnected>> {
    s.store.get_server(&name).await?;
    let disconnected = s.disconnect(&name, "").await.map_err(connect_error)?;
    Ok(Json(Disconnected { disconnected }))
}
