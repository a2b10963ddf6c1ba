//! A tool's versions: the history, one version, restoring one, and the diff of two.

use super::tools::{ToolView, view};
use super::*;

/// Registers this file's handlers.
pub(super) fn routes(api: Api) -> Api {
    api.routes(routes!(versions))
        .routes(routes!(version))
        .routes(routes!(restore))
        .routes(routes!(diff))
}

/// One saved version of a tool.
#[derive(Serialize, ToSchema)]
struct VersionView {
    version: u64,
    created_at_ms: i64,
    /// The token name that made the change.
    author: String,
    summary: String,
    /// The definition at this version (secrets as `***`); only when one version is asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    definition: Option<Value>,
}

/// A tool's history, oldest first.
#[derive(Serialize, ToSchema)]
struct VersionList {
    versions: Vec<VersionView>,
}

fn version_view(
    v: &toolsmith_store::VersionRecord,
    with_definition: bool,
) -> ApiResult<VersionView> {
    let definition = match with_definition {
        true => Some(definition_to_tool(&v.definition)?.to_catalog_value(Secrets::Redact)),
        false => None,
    };
    Ok(VersionView {
        version: v.version,
        created_at_ms: v.created_at_ms,
        author: v.author.clone(),
        summary: v.summary.clone(),
        definition,
    })
}

/// Every version of a tool.
#[utoipa::path(get, path = "/v1/tools/{name}/versions", tag = "versions", params(("name" = String, Path, description = "The tool's name")),
    responses((status = 200, body = VersionList), (status = 404, body = ErrorBody)))]
async fn versions(State(s): Shared, Path(name): Path<String>) -> ApiResult<Json<VersionList>> {
    let list = s.store.history(&name).await?;
    Ok(Json(VersionList {
        versions: list
            .iter()
            .map(|v| version_view(v, false))
            .collect::<ApiResult<_>>()?,
    }))
}

/// One version of a tool, with its definition.
#[utoipa::path(get, path = "/v1/tools/{name}/versions/{version}", tag = "versions", params(("name" = String, Path, description = "The tool's name"), ("version" = u64, Path, description = "A version number")),
    responses((status = 200, body = VersionView), (status = 404, body = ErrorBody)))]
async fn version(
    State(s): Shared,
    Path((name, version)): Path<(String, u64)>,
) -> ApiResult<Json<VersionView>> {
    Ok(Json(version_view(
        &s.store.version(&name, version).await?,
        true,
    )?))
}

/// Makes an old version current again, as a new version.
#[utoipa::path(post, path = "/v1/tools/{name}/restore/{version}", tag = "versions", params(("name" = String, Path, description = "The tool's name"), ("version" = u64, Path, description = "A version number")),
    responses((status = 200, body = ToolView), (status = 404, body = ErrorBody)))]
async fn restore(
    State(s): Shared,
    Extension(caller): Extension<Caller>,
    Extension(v): Extension<Arc<toolsmith_gateway::view::View>>,
    Path((name, version)): Path<(String, u64)>,
) -> ApiResult<Json<ToolView>> {
    // The old definition becomes current: a limited caller may restore only what it could
    // have written.
    if !caller.toolsets.is_empty() {
        let old = definition_to_tool(&s.store.version(&name, version).await?.definition)?;
        super::tools::check_member(&v, &caller, &old)?;
    }
    Ok(Json(view(
        &s.store
            .restore(&name, version, super::documents::change(&caller, ""))
            .await?,
    )))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct DiffParams {
    /// The older version.
    from: u64,
    /// The newer version; the current one when absent.
    to: Option<u64>,
}

/// What changed between two versions.
#[derive(Serialize, ToSchema)]
struct DiffView {
    from: u64,
    to: u64,
    changes: Vec<Difference>,
}

/// The differences between two versions of a tool, path by path (secrets as `***`).
#[utoipa::path(get, path = "/v1/tools/{name}/diff", tag = "versions", params(("name" = String, Path, description = "The tool's name"), DiffParams),
    responses((status = 200, body = DiffView), (status = 404, body = ErrorBody)))]
async fn diff(
    State(s): Shared,
    Path(name): Path<String>,
    Query(p): Query<DiffParams>,
) -> ApiResult<Json<DiffView>> {
    let to = match p.to {
        Some(v) => v,
        None => s.store.get(&name).await?.version,
    };
    let (a, b) = (
        s.store.version(&name, p.from).await?,
        s.store.version(&name, to).await?,
    );
    let changes = toolsmith_store::diff_definitions(&a.definition, &b.definition)?;
    Ok(Json(DiffView {
        from: p.from,
        to,
        changes,
    }))
}
