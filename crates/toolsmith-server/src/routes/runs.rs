//! `/v1/runs`: the execution log, newest first.

use super::*;

/// Registers this file's handlers.
pub(super) fn routes(api: Api) -> Api {
    api.routes(routes!(runs))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct RunParams {
    /// Only calls of this tool.
    tool: Option<String>,
    /// Only calls with this outcome: `ok` or an error kind.
    kind: Option<String>,
    /// Only calls by this token name.
    caller: Option<String>,
    /// Entries per page (50 when absent).
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<usize>,
    /// `next_cursor` from the previous page.
    cursor: Option<String>,
}

/// A page of the execution log, newest first.
#[derive(Serialize, ToSchema)]
struct RunList {
    runs: Vec<RunRecord>,
    next_cursor: Option<String>,
}

/// The execution log, newest first.
#[utoipa::path(get, path = "/v1/runs", tag = "calls", params(RunParams),
    responses((status = 200, body = RunList)))]
async fn runs(State(s): Shared, Query(p): Query<RunParams>) -> ApiResult<Json<RunList>> {
    // Read your writes: the calls answered so far are in the log before it is read.
    s.runs.flush().await;
    let q = RunQuery {
        tool: p.tool,
        kind: p.kind,
        caller: p.caller,
        limit: page_limit(p.limit)?,
        cursor: p.cursor,
    };
    let page = s.store.runs(&q).await.map_err(query_error)?;
    Ok(Json(RunList {
        runs: page.items,
        next_cursor: page.next_cursor,
    }))
}
