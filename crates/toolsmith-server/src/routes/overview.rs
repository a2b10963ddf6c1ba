//! `/v1/overview`: how the tools behave, from the server's own data — the run log of the
//! last hour or day aggregated (calls per bucket by outcome, the busiest tools' latencies,
//! the tools with the most errors), warm and cold Python calls since this server started,
//! and the upstream servers' status. The web UI's Overview charts it.

use super::*;

/// Registers this file's handlers.
pub(super) fn routes(api: Api) -> Api {
    api.routes(routes!(overview))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct OverviewParams {
    /// `1h` (the default: one-minute buckets) or `24h` (half-hour buckets).
    #[param(inline)]
    window: Option<Window>,
}

/// The span an overview covers.
#[derive(Deserialize, ToSchema, Clone, Copy)]
enum Window {
    #[serde(rename = "1h")]
    Hour,
    #[serde(rename = "24h")]
    Day,
}

/// Calls of one outcome, per bucket.
#[derive(Serialize, ToSchema)]
struct Series {
    /// `ok`, or an error kind.
    outcome: String,
    counts: Vec<u64>,
}

/// A tool's calls and latency in the window.
#[derive(Serialize, ToSchema)]
struct ToolStats {
    tool: String,
    calls: u64,
    errors: u64,
    p50_ms: f64,
    p95_ms: f64,
}

/// Python script calls since this server started.
#[derive(Serialize, ToSchema)]
struct WarmCold {
    warm: u64,
    cold: u64,
}

/// An upstream MCP server's status now.
#[derive(Serialize, ToSchema)]
struct UpstreamNow {
    name: String,
    status: String,
    tools: usize,
}

#[derive(Serialize, ToSchema)]
struct Overview {
    window_ms: i64,
    bucket_ms: i64,
    /// The start of each bucket (milliseconds since the epoch), oldest first.
    buckets: Vec<i64>,
    /// Calls per bucket by outcome, `ok` first.
    series: Vec<Series>,
    total: u64,
    errors: u64,
    /// The most called tools (at most 8), with p50 and p95 latency.
    busiest: Vec<ToolStats>,
    /// The tools with the most failed calls (at most 8).
    failing: Vec<ToolStats>,
    warm_cold: WarmCold,
    upstreams: Vec<UpstreamNow>,
    /// More calls than are read (`MAX_READ`) fell in the window: the oldest were left out.
    truncated: bool,
}

/// The most log entries one overview reads.
const MAX_READ: usize = 50_000;

/// The overview of the last hour (or day) of calls, of the tools in the caller's view.
#[utoipa::path(get, path = "/v1/overview", tag = "calls", params(OverviewParams),
    responses((status = 200, body = Overview), (status = 400, body = ErrorBody)))]
async fn overview(
    State(s): Shared,
    Extension(view): Extension<Arc<View>>,
    Query(p): Query<OverviewParams>,
) -> ApiResult<Json<Overview>> {
    let (window_ms, bucket_ms) = match p.window.unwrap_or(Window::Hour) {
        Window::Hour => (3_600_000_i64, 60_000_i64),
        Window::Day => (86_400_000, 1_800_000),
    };
    s.runs.flush().await;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let first = (now - window_ms) / bucket_ms * bucket_ms + bucket_ms;
    let n = ((now - first) / bucket_ms + 1) as usize;
    let visible = match view.is_everything() {
        true => None,
        false => Some(visible_names(&s, &view).await?),
    };
    // Newest first, a page at a time, until the window's start.
    let mut q = RunQuery {
        limit: 1000,
        ..RunQuery::default()
    };
    let mut series: std::collections::BTreeMap<String, Vec<u64>> = Default::default();
    let mut per_tool: std::collections::HashMap<String, (Vec<f64>, u64)> = Default::default();
    let (mut read, mut truncated) = (0usize, false);
    'pages: loop {
        let page = s.store.runs(&q).await.map_err(query_error)?;
        for r in page.items {
            if r.started_at_ms < first {
                break 'pages;
            }
            read += 1;
            if read > MAX_READ {
                truncated = true;
                break 'pages;
            }
            if visible.as_ref().is_some_and(|v| !v.contains(&r.tool)) {
                continue;
            }
            let i = (((r.started_at_ms - first) / bucket_ms) as usize).min(n - 1);
            series.entry(r.kind.clone()).or_insert_with(|| vec![0; n])[i] += 1;
            let entry = per_tool.entry(r.tool).or_default();
            entry.0.push(r.duration_ms);
            entry.1 += u64::from(r.kind != "ok");
        }
        match page.next_cursor {
            Some(c) => q.cursor = Some(c),
            None => break,
        }
    }
    let stats: Vec<ToolStats> = per_tool
        .into_iter()
        .map(|(tool, (mut d, errors))| {
            d.sort_by(f64::total_cmp);
            let at = |q: f64| d[((d.len() as f64 * q) as usize).min(d.len() - 1)];
            ToolStats {
                calls: d.len() as u64,
                p50_ms: at(0.5),
                p95_ms: at(0.95),
                errors,
                tool,
            }
        })
        .collect();
    let top = |key: fn(&ToolStats) -> u64| {
        let mut v: Vec<&ToolStats> = stats.iter().filter(|t| key(t) > 0).collect();
        v.sort_by(|a, b| key(b).cmp(&key(a)).then(a.tool.cmp(&b.tool)));
        v.into_iter()
            .take(8)
            .map(|t| ToolStats {
                tool: t.tool.clone(),
                ..*t
            })
            .collect::<Vec<_>>()
    };
    let busiest = top(|t| t.calls);
    let failing = top(|t| t.errors);
    let total = stats.iter().map(|t| t.calls).sum();
    let errors = stats.iter().map(|t| t.errors).sum();
    let mut series: Vec<Series> = series
        .into_iter()
        .map(|(outcome, counts)| Series { outcome, counts })
        .collect();
    series.sort_by_key(|s| s.outcome != "ok");
    let warm = s.warm_calls();
    let scripts = s
        .metrics
        .script_calls
        .load(std::sync::atomic::Ordering::Relaxed);
    let upstreams = match view.is_everything() {
        true => s
            .upstream_statuses()
            .into_iter()
            .map(|u| UpstreamNow {
                status: serde_json::to_value(u.status)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
                tools: u.tools,
                name: u.name,
            })
            .collect(),
        false => Vec::new(),
    };
    Ok(Json(Overview {
        window_ms,
        bucket_ms,
        buckets: (0..n as i64).map(|i| first + i * bucket_ms).collect(),
        series,
        total,
        errors,
        busiest,
        failing,
        warm_cold: WarmCold {
            warm,
            cold: scripts.saturating_sub(warm),
        },
        upstreams,
        truncated,
    }))
}
