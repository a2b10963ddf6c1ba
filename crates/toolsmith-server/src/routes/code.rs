//! `/v1/code/stubs`: typed Python stubs of the tools in the caller's view (code mode;
//! `toolsmith_core::render::python_stubs`) — a module per server prefix — for people and
//! editors, and for the programs code mode runs.

use toolsmith_core::render::{PythonModule, python_stubs};

use super::*;

/// Registers this file's handlers.
pub(super) fn routes(api: Api) -> Api {
    api.routes(routes!(stubs))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct StubParams {
    /// Only this module (`tools.github`), as Python source (`text/x-python`).
    module: Option<String>,
    /// Only members of these toolsets (comma-separated; all of them), like the
    /// `X-Toolsmith-Toolset` header.
    #[allow(
        dead_code,
        reason = "read by the view layer (crate::view), documented here"
    )]
    toolset: Option<String>,
}

/// The generated modules.
#[derive(Serialize, ToSchema)]
struct StubList {
    #[schema(value_type = Vec<Object>)]
    modules: Vec<PythonModule>,
}

/// Typed Python stubs of the enabled tools in the caller's view: `{"modules": [{"module",
/// "path", "source"}]}`, or one module's source with `module`.
#[utoipa::path(get, path = "/v1/code/stubs", tag = "tools", params(StubParams),
    responses((status = 200, description = "The modules, or one module's source", body = StubList,
        content((StubList = "application/json"), (String = "text/x-python"))),
        (status = 400, description = "An unknown toolset", body = ErrorBody),
        (status = 404, description = "No such module among them", body = ErrorBody)))]
async fn stubs(
    State(s): Shared,
    Extension(view): Extension<Arc<View>>,
    Query(p): Query<StubParams>,
) -> ApiResult<Response> {
    let tools: Vec<Tool> = s
        .store
        .search_all(StoreQuery::default())
        .await?
        .into_iter()
        .map(|r| r.tool)
        .filter(|t| view.admits(t))
        .collect();
    let modules = python_stubs(&tools);
    match p.module {
        None => Ok(Json(StubList { modules }).into_response()),
        Some(name) => match modules.into_iter().find(|m| m.module == name) {
            Some(m) => Ok((
                [(header::CONTENT_TYPE, "text/x-python; charset=utf-8")],
                m.source,
            )
                .into_response()),
            None => Err(ApiError::not_found(format!(
                "no module {name:?} among the stubs of the tools you may see"
            ))),
        },
    }
}
