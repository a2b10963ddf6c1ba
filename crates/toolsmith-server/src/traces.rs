//! Request spans (SPEC §15): each HTTP request is a server span named after its route
//! template (`POST /v1/tools/{name}/call`), continuing the trace of an incoming W3C
//! `traceparent` header; an MCP `tools/call`, `resources/read` or `prompts/get` is a span of
//! its own continuing the trace its `_meta.traceparent` names (or the HTTP header's, over
//! HTTP). The engine's call spans are
//! their children. Without trace export these spans are disabled at their call sites
//! ([`toolsmith_gateway::trace`]).

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use rmcp::RoleServer;
use rmcp::service::RequestContext;
use serde_json::Value;
use toolsmith_gateway::trace::{TARGET, continue_trace};
use tracing::Instrument;

/// Wraps a request in its span.
pub async fn request(req: Request, next: Next) -> Response {
    // Without trace export nothing is built: no route text copied per request.
    if !tracing::enabled!(target: TARGET, tracing::Level::INFO) {
        return next.run(req).await;
    }
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", MatchedPath::as_str)
        .to_owned();
    let method = req.method().clone();
    let span = tracing::info_span!(
        target: TARGET,
        "request",
        otel.name = %format_args!("{method} {route}"),
        otel.kind = "server",
        http.request.method = %method,
        http.route = %route,
        http.response.status_code = tracing::field::Empty,
    );
    if let Some(parent) = header(&req, "traceparent") {
        continue_trace(&span, parent, header(&req, "tracestate"));
    }
    let response = next.run(req).instrument(span.clone()).await;
    span.record(
        "http.response.status_code",
        i64::from(response.status().as_u16()),
    );
    response
}

fn header<'a>(req: &'a Request, name: &str) -> Option<&'a str> {
    req.headers().get(name).and_then(|v| v.to_str().ok())
}

/// The span of an MCP request — `tools/call` of a tool, `resources/read` of a URI,
/// `prompts/get` of a prompt — named by its method and what it names.
pub fn mcp_request(
    method: &'static str,
    what: &str,
    ctx: &RequestContext<RoleServer>,
) -> tracing::Span {
    let span = tracing::info_span!(
        target: TARGET,
        "mcp request",
        otel.name = %format_args!("{method} {what}"),
        otel.kind = "server",
        rpc.method = method,
    );
    if span.is_disabled() {
        return span;
    }
    let meta = |key: &str| ctx.meta.get(key).and_then(Value::as_str).map(str::to_owned);
    let http = ctx.extensions.get::<axum::http::request::Parts>();
    let from_http = |key: &str| {
        http.and_then(|p| p.headers.get(key))
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let context = match meta("traceparent") {
        Some(parent) => Some((parent, meta("tracestate"))),
        None => from_http("traceparent").map(|p| (p, from_http("tracestate"))),
    };
    if let Some((parent, state)) = context {
        continue_trace(&span, &parent, state.as_deref());
    }
    span
}
