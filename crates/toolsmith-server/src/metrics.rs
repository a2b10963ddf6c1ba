//! `GET /metrics` (SPEC §15): the gateway's metrics ([`toolsmith_gateway::metrics`]) served
//! in the OpenMetrics text format, and each request counted by its route template.

use toolsmith_gateway::Gateway;

/// Counts each request by its route template (`/v1/tools/{name}`, never the raw path) and
/// status.
pub async fn track(
    axum::extract::State(state): axum::extract::State<std::sync::Arc<Gateway>>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let route = req
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map_or("unmatched", |m| m.as_str())
        .to_owned();
    let method = req.method().as_str().to_owned();
    let response = next.run(req).await;
    state
        .metrics
        .request(&route, &method, response.status().as_u16());
    response
}

/// `GET /metrics`.
pub async fn serve(
    axum::extract::State(state): axum::extract::State<std::sync::Arc<Gateway>>,
    caller: Option<axum::Extension<toolsmith_gateway::Caller>>,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    // Every tool's and server's name and counts: not for a caller limited to some toolsets.
    if let Some(axum::Extension(caller)) = caller.filter(|c| !c.toolsets.is_empty()) {
        return crate::error::ApiError::new(
            axum::http::StatusCode::FORBIDDEN,
            "forbidden",
            format!(
                "{:?} is limited to the toolsets {}: /metrics names every tool and server, so it is for callers that are not",
                caller.name,
                caller.toolsets.join(", ")
            ),
        )
        .into_response();
    }
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        state.metrics_text(),
    )
        .into_response()
}

/// A router serving only `/metrics` (for `serve --metrics-addr`), behind the same
/// authentication as the main one.
pub fn app(state: std::sync::Arc<Gateway>) -> axum::Router {
    axum::Router::new()
        .route(PATH, axum::routing::get(serve))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::auth::require,
        ))
        .layer(axum::middleware::from_fn(crate::error::json_errors))
        .with_state(state)
}

/// Where the metrics are served.
pub const PATH: &str = "/metrics";
