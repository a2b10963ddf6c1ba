//! Traces (SPEC §15): the W3C trace context of a call, coming in and going out.
//!
//! Spans are made with `tracing` where the work is — the engine's call and its stages
//! (pipeline, queue, run), the server's requests — all under the target [`TARGET`], so that
//! one filter decides whether they exist at all: the binary enables them only when it
//! exports traces (`--otlp-endpoint`), turning them into OpenTelemetry spans; otherwise they
//! are disabled at their call sites and cost next to nothing. Span fields never carry
//! argument values or secrets. Here: continuing a trace from an incoming `traceparent`
//! ([`continue_trace`]) and passing the current one on ([`current`]) — to an upstream MCP
//! server as `_meta.traceparent`, to an `http` tool's service as the `traceparent` header.

use std::collections::HashMap;

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The target of every span toolsmith makes for traces.
pub const TARGET: &str = "toolsmith::trace";

/// Makes `span` a child of the remote span `traceparent` names (with its `tracestate`); a
/// malformed header is ignored (the span starts a trace of its own).
pub fn continue_trace(span: &tracing::Span, traceparent: &str, tracestate: Option<&str>) {
    let mut carrier = HashMap::new();
    carrier.insert("traceparent".to_owned(), traceparent.trim().to_owned());
    if let Some(state) = tracestate {
        carrier.insert("tracestate".to_owned(), state.trim().to_owned());
    }
    let cx = TraceContextPropagator::new().extract(&carrier);
    if cx.span().span_context().is_valid() {
        let _ = span.set_parent(cx);
    }
}

/// The current span's trace context, `traceparent` and `tracestate` (when not empty), if
/// it is being traced.
pub fn current() -> Option<(String, Option<String>)> {
    let cx = tracing::Span::current().context();
    if !cx.span().span_context().is_valid() {
        return None;
    }
    let mut carrier = HashMap::new();
    TraceContextPropagator::new().inject_context(&cx, &mut carrier);
    let parent = carrier.remove("traceparent")?;
    Some((
        parent,
        carrier.remove("tracestate").filter(|s| !s.is_empty()),
    ))
}
