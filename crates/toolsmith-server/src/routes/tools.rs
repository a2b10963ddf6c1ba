//! Tools: list, create, show, update, delete, enable and disable.

use super::documents::{self, ChangeParams, base_version};
use super::drafts::{Draft, parse_definition};
use super::*;

/// Registers this file's handlers.
pub(super) fn routes(api: Api) -> Api {
    api.routes(routes!(list, create))
        .routes(routes!(show, update, remove))
        .routes(routes!(enable))
        .routes(routes!(disable))
}

/// A tool with its whole definition (secret config values shown as `***`).
#[derive(Serialize, ToSchema)]
pub(super) struct ToolView {
    name: String,
    version: u64,
    updated_at_ms: i64,
    updated_by: String,
    /// The definition in catalog form (SPEC §2).
    #[schema(value_type = Object)]
    definition: Value,
    /// The JSON Schema (2020-12) of the tool's arguments.
    #[schema(value_type = Object)]
    input_schema: Value,
    /// For tools that start processes: the sandbox policy and what this server's kernel
    /// enforces of it (as `meta.sandbox` of a call reports it).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    sandbox: Option<Value>,
    /// What the guardrail scanner finds in the definition as a model sees it, most severe
    /// first (absent when nothing).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    findings: Vec<toolsmith_core::guard::Finding>,
}

/// A tool in a listing.
#[derive(Serialize, ToSchema)]
struct ToolSummary {
    name: String,
    title: Option<String>,
    description: String,
    version: u64,
    enabled: bool,
    /// `safe` or `dangerous`.
    danger: String,
    /// `command`, `script` or `builtin`.
    executor: String,
    tags: Vec<String>,
}

/// A page of tools; pass `next_cursor` back as `cursor` for the next one.
#[derive(Serialize, ToSchema)]
struct ToolList {
    tools: Vec<ToolSummary>,
    next_cursor: Option<String>,
}

pub(super) fn view(r: &ToolRecord) -> ToolView {
    ToolView {
        name: r.tool.name.to_string(),
        version: r.version,
        updated_at_ms: r.updated_at_ms,
        updated_by: r.updated_by.clone(),
        definition: r.tool.to_catalog_value(Secrets::Redact),
        input_schema: tool_schema(&r.tool),
        sandbox: None,
        findings: Vec::new(),
    }
}

/// [`view`] with the guardrail scanner's findings: shadowing is naming a tool that is not
/// of the same upstream server (every other tool, for a local one).
async fn scanned(s: &Gateway, r: &ToolRecord) -> ApiResult<ToolView> {
    let server = r.tool.executor.upstream().map(|t| t.server.as_str());
    let others = toolsmith_gateway::guardrails::foreign_names(&s.store, server).await?;
    let mut v = view(r);
    v.findings = toolsmith_core::guard::scan_tool(&r.tool, &others);
    Ok(v)
}

/// A page of the tools `view` admits: the matching tools read whole, kept when admitted, and
/// paged here by name (the same cursor form as the registry's).
async fn narrowed(
    s: &Gateway,
    view: &View,
    query: StoreQuery,
) -> ApiResult<toolsmith_store::Page<ToolRecord>> {
    let after = query
        .cursor
        .as_deref()
        .map(toolsmith_store::decode_cursor)
        .transpose()
        .map_err(query_error)?;
    let limit = query.limit;
    let mut items: Vec<ToolRecord> = s
        .store
        .search_all(query)
        .await?
        .into_iter()
        .filter(|r| after.as_deref().is_none_or(|a| r.tool.name.as_str() > a))
        .filter(|r| view.admits(&r.tool))
        .take(limit + 1)
        .collect();
    let next_cursor = (items.len() > limit).then(|| {
        items.truncate(limit);
        toolsmith_store::encode_cursor(items[limit - 1].tool.name.as_str())
    });
    Ok(toolsmith_store::Page { items, next_cursor })
}

/// A caller limited to toolsets edits only their members, and only within the default
/// containment: a definition that would leave the toolsets, or run its processes with more
/// reach than the default sandbox gives ([`toolsmith_core::sandbox::widenings`]), is refused —
/// otherwise a limited admin could define a `sandbox: none` tool, read the key and tokens
/// file with it, and be an unlimited admin.
pub(super) fn check_member(view: &View, caller: &Caller, tool: &Tool) -> ApiResult<()> {
    if caller.toolsets.is_empty() {
        return Ok(());
    }
    let forbidden = |message| Err(ApiError::new(StatusCode::FORBIDDEN, "forbidden", message));
    if !view.admits(tool) {
        return forbidden(format!(
            "{:?} may only edit members of the toolsets {}; this definition of `{}` is not one",
            caller.name,
            caller.toolsets.join(", "),
            tool.name
        ));
    }
    let wider = toolsmith_core::sandbox::widenings(tool.sandbox.as_ref(), &tool.env_allowlist);
    if !wider.is_empty() {
        return forbidden(format!(
            "{:?} is limited to the toolsets {}: only an unlimited admin may widen what a tool's processes reach; `{}` may not set {}",
            caller.name,
            caller.toolsets.join(", "),
            tool.name,
            wider.join(", ")
        ));
    }
    Ok(())
}

fn summary(r: &ToolRecord) -> ToolSummary {
    ToolSummary {
        name: r.tool.name.to_string(),
        title: r.tool.title.clone(),
        description: r.tool.description.clone(),
        version: r.version,
        enabled: r.tool.enabled,
        danger: serde_json::to_value(r.tool.danger)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default(),
        executor: r.tool.executor.kind().into(),
        tags: r.tool.tags.clone(),
    }
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct ListParams {
    /// Words that must all appear in the name, description or tags.
    q: Option<String>,
    /// Only tools with this tag.
    tag: Option<String>,
    /// Tools per page (50 when absent).
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<usize>,
    /// `next_cursor` from the previous page.
    cursor: Option<String>,
    /// Include disabled tools.
    #[serde(default)]
    include_disabled: bool,
    /// Only members of these toolsets (comma-separated; all of them), like the
    /// `X-Toolsmith-Toolset` header.
    #[allow(
        dead_code,
        reason = "read by the view layer (crate::view), documented here"
    )]
    toolset: Option<String>,
    /// Only tools matching one of these name globs (comma-separated), like the
    /// `X-Toolsmith-Tools` header.
    #[allow(
        dead_code,
        reason = "read by the view layer (crate::view), documented here"
    )]
    tools: Option<String>,
}

/// Lists or searches tools, by name, in pages.
#[utoipa::path(get, path = "/v1/tools", tag = "tools", params(ListParams),
    responses((status = 200, body = ToolList)))]
async fn list(
    State(s): Shared,
    Extension(view): Extension<Arc<View>>,
    Query(p): Query<ListParams>,
) -> ApiResult<Json<ToolList>> {
    let query = StoreQuery {
        text: p.q,
        tag: p.tag,
        include_disabled: p.include_disabled,
        limit: page_limit(p.limit)?,
        cursor: p.cursor,
    };
    let page = match view.is_everything() {
        true => s.store.search(&query).await.map_err(query_error)?,
        false => narrowed(&s, &view, query).await?,
    };
    Ok(Json(ToolList {
        tools: page.items.iter().map(summary).collect(),
        next_cursor: page.next_cursor,
    }))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct CreateParams {
    /// A one-line summary of the change for the history.
    summary: Option<String>,
}

/// Creates a tool at version 1.
#[utoipa::path(post, path = "/v1/tools", tag = "tools", params(CreateParams),
    request_body(content = Object, description = "A definition in catalog form (SPEC §2); scripts inline as `source`"),
    responses((status = 201, body = ToolView), (status = 409, description = "A tool of that name exists", body = ErrorBody),
        (status = 422, description = "The definition is invalid; `details` names each problem", body = ErrorBody)))]
async fn create(
    State(s): Shared,
    Extension(caller): Extension<Caller>,
    Extension(v): Extension<Arc<View>>,
    Query(p): Query<CreateParams>,
    Body(body): Body<Value>,
) -> ApiResult<Response> {
    let tool = parse_definition(body, None, None, Draft::Save)?;
    check_member(&v, &caller, &tool)?;
    let r = documents::create(&s, &caller, &tool, p.summary.as_deref()).await?;
    Ok((StatusCode::CREATED, Json(scanned(&s, &r).await?)).into_response())
}

/// A tool's current definition.
#[utoipa::path(get, path = "/v1/tools/{name}", tag = "tools", params(("name" = String, Path, description = "The tool's name")),
    responses((status = 200, body = ToolView), (status = 404, body = ErrorBody)))]
async fn show(State(s): Shared, Path(name): Path<String>) -> ApiResult<Json<ToolView>> {
    let r = s.store.get(&name).await?;
    let mut v = scanned(&s, &r).await?;
    v.sandbox = s.sandbox_report(&r.tool);
    Ok(Json(v))
}

/// Replaces a tool's definition, creating a new version. Name the version the change is
/// based on (`If-Match` or `base_version`); a stale one gets 409 and changes nothing.
#[utoipa::path(put, path = "/v1/tools/{name}", tag = "tools",
    params(("name" = String, Path, description = "The tool's name"), ChangeParams, ("If-Match" = Option<String>, Header, nullable = false, pattern = r#"^\s*"?[0-9]{1,18}"?\s*$"#, description = "The version the change is based on")),
    request_body(content = Object, description = "The whole definition in catalog form; `***` for a secret keeps its value"),
    responses((status = 200, body = ToolView), (status = 404, body = ErrorBody),
        (status = 409, description = "Stale base version; `current_version` says the current one", body = ErrorBody),
        (status = 422, body = ErrorBody), (status = 428, description = "No base version given", body = ErrorBody)))]
async fn update(
    State(s): Shared,
    Extension(caller): Extension<Caller>,
    Extension(v): Extension<Arc<View>>,
    Path(name): Path<String>,
    Query(p): Query<ChangeParams>,
    headers: HeaderMap,
    Body(body): Body<Value>,
) -> ApiResult<Json<ToolView>> {
    let base = base_version(&headers, &p)?;
    let current = s.store.get(&name).await?;
    let tool = parse_definition(body, Some(&name), Some(&current.tool), Draft::Save)?;
    check_member(&v, &caller, &tool)?;
    let r = documents::update(&s, &caller, &tool, base, p.summary.as_deref()).await?;
    Ok(Json(scanned(&s, &r).await?))
}

/// Deletes a tool (its history is kept).
#[utoipa::path(delete, path = "/v1/tools/{name}", tag = "tools", params(("name" = String, Path, description = "The tool's name")),
    responses((status = 204, description = "Deleted"), (status = 404, body = ErrorBody)))]
async fn remove(
    State(s): Shared,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
) -> ApiResult<StatusCode> {
    documents::delete::<Tool>(&s, &caller, &name).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Enables or disables a tool; the two routes differ only in the value.
async fn toggle(
    s: &Gateway,
    caller: &Caller,
    name: &str,
    enabled: bool,
) -> ApiResult<Json<ToolView>> {
    let change = documents::change(caller, "");
    Ok(Json(view(
        &s.store.set_enabled(name, enabled, change).await?,
    )))
}

/// Enables a tool (a new version).
#[utoipa::path(post, path = "/v1/tools/{name}/enable", tag = "tools", params(("name" = String, Path, description = "The tool's name")),
    responses((status = 200, body = ToolView), (status = 404, body = ErrorBody)))]
async fn enable(
    State(s): Shared,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
) -> ApiResult<Json<ToolView>> {
    toggle(&s, &caller, &name, true).await
}

/// Disables a tool (a new version): it is no longer listed, exported or callable.
#[utoipa::path(post, path = "/v1/tools/{name}/disable", tag = "tools", params(("name" = String, Path, description = "The tool's name")),
    responses((status = 200, body = ToolView), (status = 404, body = ErrorBody)))]
async fn disable(
    State(s): Shared,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
) -> ApiResult<Json<ToolView>> {
    toggle(&s, &caller, &name, false).await
}
