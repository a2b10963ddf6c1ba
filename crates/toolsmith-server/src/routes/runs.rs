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
    /// Only the call with this id (a result's `meta.call_id`; a result cut by
    /// `max_result_bytes` names it).
    call_id: Option<String>,
    /// Only the calls a code-mode program made: the program's run's `call_id`.
    parent: Option<String>,
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
async fn runs(
    State(s): Shared,
    Extension(caller): Extension<Caller>,
    Extension(view): Extension<Arc<View>>,
    Query(p): Query<RunParams>,
) -> ApiResult<Json<RunList>> {
    // Read your writes: the calls answered so far are in the log before it is read.
    s.runs.flush().await;
    let mut q = RunQuery {
        tool: p.tool,
        kind: p.kind,
        caller: p.caller,
        call_id: p.call_id,
        parent_call_id: p.parent,
        limit: page_limit(p.limit)?,
        cursor: p.cursor,
    };
    if view.is_everything() {
        let page = s.store.runs(&q).await.map_err(query_error)?;
        return Ok(Json(RunList {
            runs: page.items,
            next_cursor: page.next_cursor,
        }));
    }
    // Only runs of tools in the caller's view (disabled ones included) and the caller's own
    // code-mode programs (no registry tool), read a page at a time until the page is full; a
    // short page with a cursor is a page like any other.
    let visible = visible_names(&s, &view).await?;
    let own = caller.log_name();
    let shown = |r: &RunRecord| {
        visible.contains(&r.tool)
            || (r.tool == toolsmith_gateway::code::RUN_CODE && r.caller == own)
    };
    let limit = q.limit;
    let mut runs = Vec::new();
    let mut next_cursor = None;
    for _ in 0..NARROWED_READS {
        q.limit = limit - runs.len();
        let page = s.store.runs(&q).await.map_err(query_error)?;
        runs.extend(page.items.into_iter().filter(|r| shown(r)));
        next_cursor = page.next_cursor;
        match &next_cursor {
            Some(c) if runs.len() < limit => q.cursor = Some(c.clone()),
            _ => break,
        }
    }
    Ok(Json(RunList { runs, next_cursor }))
}

/// Pages of the log read at most for one narrowed page.
const NARROWED_READS: usize = 20;
