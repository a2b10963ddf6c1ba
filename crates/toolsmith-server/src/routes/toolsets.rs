//! Toolsets: list, create, show (with the members and why each is in), update, delete and
//! their versions. A caller limited to toolsets sees only those.

use toolsmith_core::toolset::Toolset;
use toolsmith_store::{ToolsetRecord, ToolsetStore};

use super::documents::{self, ChangeParams, base_version};
use super::*;

/// Registers this file's handlers.
pub(super) fn routes(api: Api) -> Api {
    api.routes(routes!(list_toolsets, create_toolset))
        .routes(routes!(show_toolset, update_toolset, remove_toolset))
        .routes(routes!(toolset_versions))
}

/// A toolset in a listing.
#[derive(Serialize, ToSchema)]
struct ToolsetSummary {
    name: String,
    description: String,
    version: u64,
    /// `all` or `search`.
    discovery: String,
    /// How many enabled tools are members now.
    members: usize,
}

/// A tool that is a member, and why.
#[derive(Serialize, ToSchema)]
struct Member {
    name: String,
    /// The selector that let it in (`tag support`, `include[1]: name gh_*`).
    why: String,
}

/// A toolset with its definition and members.
#[derive(Serialize, ToSchema)]
struct ToolsetView {
    name: String,
    version: u64,
    updated_at_ms: i64,
    updated_by: String,
    /// The definition in catalog form.
    #[schema(value_type = Object)]
    definition: Value,
    /// The enabled tools that are members now, by name.
    members: Vec<Member>,
}

#[derive(Serialize, ToSchema)]
struct ToolsetList {
    toolsets: Vec<ToolsetSummary>,
}

/// One kept version.
#[derive(Serialize, ToSchema)]
struct ToolsetVersionView {
    version: u64,
    #[schema(value_type = Object)]
    definition: Value,
    created_at_ms: i64,
    author: String,
    summary: String,
}

/// Whether `caller` may see toolset `name`.
fn visible(caller: &Caller, name: &str) -> bool {
    caller.toolsets.is_empty() || caller.toolsets.iter().any(|t| t == name)
}

fn not_found(name: &str) -> ApiError {
    toolsmith_store::StoreError::NotFound(format!("toolset {name:?}")).into()
}

/// The toolset `name`, as `caller` may see it.
async fn get(s: &Gateway, caller: &Caller, name: &str) -> ApiResult<ToolsetRecord> {
    if !visible(caller, name) {
        return Err(not_found(name));
    }
    Ok(s.store.get_toolset(name).await?)
}

/// Every enabled tool.
async fn all_tools(s: &Gateway) -> ApiResult<Vec<Tool>> {
    Ok(s.store
        .search_all(StoreQuery::default())
        .await?
        .into_iter()
        .map(|r| r.tool)
        .collect())
}

fn view_of(r: &ToolsetRecord, tools: &[Tool]) -> ToolsetView {
    ToolsetView {
        name: r.toolset.name.clone(),
        version: r.version,
        updated_at_ms: r.updated_at_ms,
        updated_by: r.updated_by.clone(),
        definition: r.toolset.to_catalog_value(),
        members: tools
            .iter()
            .filter_map(|t| {
                r.toolset.why(t).map(|why| Member {
                    name: t.name.to_string(),
                    why,
                })
            })
            .collect(),
    }
}

/// A definition from a request body; `name` is the path's, when given.
fn parse(mut body: Value, name: Option<&str>) -> ApiResult<Toolset> {
    if let Some(name) = name {
        documents::name_from_path("toolset", &mut body, name)?;
    }
    toolsmith_core::catalog::parse_toolset(&body).map_err(ApiError::from_catalog)
}

/// Every toolset the caller may see, with its member count.
#[utoipa::path(get, path = "/v1/toolsets", tag = "toolsets", responses((status = 200, body = ToolsetList)))]
async fn list_toolsets(
    State(s): Shared,
    Extension(caller): Extension<Caller>,
) -> ApiResult<Json<ToolsetList>> {
    let tools = all_tools(&s).await?;
    let toolsets = s
        .store
        .toolsets()
        .await?
        .into_iter()
        .filter(|r| visible(&caller, &r.toolset.name))
        .map(|r| ToolsetSummary {
            members: tools.iter().filter(|t| r.toolset.admits(t)).count(),
            name: r.toolset.name,
            description: r.toolset.description,
            version: r.version,
            discovery: r.toolset.discovery.as_str().into(),
        })
        .collect();
    Ok(Json(ToolsetList { toolsets }))
}

/// Creates a toolset at version 1.
#[utoipa::path(post, path = "/v1/toolsets", tag = "toolsets",
    request_body(content = Object, description = "A toolset in catalog form: name, description, include, exclude, discovery"),
    responses((status = 201, body = ToolsetView), (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn create_toolset(
    State(s): Shared,
    Extension(caller): Extension<Caller>,
    Body(body): Body<Value>,
) -> ApiResult<Response> {
    let set = parse(body, None)?;
    if !caller.toolsets.is_empty() {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            format!(
                "{:?} is limited to toolsets and cannot create others",
                caller.name
            ),
        ));
    }
    let r = documents::create(&s, &caller, &set, None).await?;
    let tools = all_tools(&s).await?;
    Ok((StatusCode::CREATED, Json(view_of(&r, &tools))).into_response())
}

/// A toolset's definition and its members now, each with why it is in.
#[utoipa::path(get, path = "/v1/toolsets/{name}", tag = "toolsets", params(("name" = String, Path, description = "The toolset's name")),
    responses((status = 200, body = ToolsetView), (status = 404, body = ErrorBody)))]
async fn show_toolset(
    State(s): Shared,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
) -> ApiResult<Json<ToolsetView>> {
    let r = get(&s, &caller, &name).await?;
    let tools = all_tools(&s).await?;
    Ok(Json(view_of(&r, &tools)))
}

/// Replaces a toolset's definition (a new version), based on the version named by
/// `If-Match` or `base_version`.
#[utoipa::path(put, path = "/v1/toolsets/{name}", tag = "toolsets",
    params(("name" = String, Path, description = "The toolset's name"), ChangeParams, ("If-Match" = Option<String>, Header, nullable = false, pattern = r#"^\s*"?[0-9]{1,18}"?\s*$"#, description = "The version the change is based on")),
    request_body(content = Object, description = "The whole definition in catalog form"),
    responses((status = 200, body = ToolsetView), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody),
        (status = 422, body = ErrorBody), (status = 428, body = ErrorBody)))]
async fn update_toolset(
    State(s): Shared,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
    Query(p): Query<ChangeParams>,
    headers: HeaderMap,
    Body(body): Body<Value>,
) -> ApiResult<Json<ToolsetView>> {
    let base = base_version(&headers, &p)?;
    get(&s, &caller, &name).await?;
    let set = parse(body, Some(&name))?;
    let r = documents::update(&s, &caller, &set, base, p.summary.as_deref()).await?;
    let tools = all_tools(&s).await?;
    Ok(Json(view_of(&r, &tools)))
}

/// Deletes a toolset (its versions are kept). Tokens limited to it then see nothing.
#[utoipa::path(delete, path = "/v1/toolsets/{name}", tag = "toolsets", params(("name" = String, Path, description = "The toolset's name")),
    responses((status = 204, description = "Deleted"), (status = 404, body = ErrorBody)))]
async fn remove_toolset(
    State(s): Shared,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
) -> ApiResult<StatusCode> {
    get(&s, &caller, &name).await?;
    documents::delete::<Toolset>(&s, &caller, &name).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Every version of a toolset, oldest first.
#[utoipa::path(get, path = "/v1/toolsets/{name}/versions", tag = "toolsets", params(("name" = String, Path, description = "The toolset's name")),
    responses((status = 200, body = Vec<ToolsetVersionView>), (status = 404, body = ErrorBody)))]
async fn toolset_versions(
    State(s): Shared,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
) -> ApiResult<Json<Vec<ToolsetVersionView>>> {
    if !visible(&caller, &name) {
        return Err(not_found(&name));
    }
    let history = s.store.toolset_history(&name).await?;
    Ok(Json(
        history
            .into_iter()
            .map(|v| ToolsetVersionView {
                version: v.version,
                definition: v.definition,
                created_at_ms: v.created_at_ms,
                author: v.author,
                summary: v.summary,
            })
            .collect(),
    ))
}
