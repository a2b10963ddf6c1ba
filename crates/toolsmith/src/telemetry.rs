//! Logs and traces of `serve`, `mcp` and `chat` (SPEC §15).
//!
//! Logs go to stderr as text lines or JSON objects, filtered by `RUST_LOG`. Traces are off
//! unless an OTLP endpoint is given (`--otlp-endpoint`, or the standard
//! `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`); then the spans the
//! engine and the server make under [`toolsmith_exec::trace::TARGET`] become OpenTelemetry
//! spans (tracing-opentelemetry), batched and exported over OTLP/HTTP with protobuf bodies
//! from a thread of the SDK's own, through ureq. The other `OTEL_*` variables are honoured
//! where the SDK reads them: `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`,
//! `OTEL_TRACES_SAMPLER[_ARG]`, `OTEL_EXPORTER_OTLP[_TRACES]_HEADERS` and `_TIMEOUT`, the
//! batch processor's `OTEL_BSP_*`. Only `http/protobuf` is spoken.

use anyhow::{Context, Result, bail};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Diagnostics go to stderr (stdout may be an MCP transport); `RUST_LOG` sets the level.
/// rmcp logs every protocol error it answers (an unknown tool, say) as a warning; those are
/// the client's mistakes, not the server's, so only its errors show by default.
/// Logs on stderr: human-readable lines, or (`--log-format json`) one JSON object per line —
/// the command's own notes included ([`crate::output::say`]).
/// Logs as `format` and traces when asked (kept until the returned guard drops).
pub(crate) fn init_logging(format: LogFormat, traces: &TraceArgs) -> Result<Telemetry> {
    let default = match format {
        LogFormat::Text => "warn,rmcp::service=error",
        LogFormat::Json => "warn,toolsmith=info,rmcp::service=error",
    };
    init(format, default, traces)
}

/// How `serve` and `mcp` write their logs.
#[derive(Debug, Clone, Copy, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// Where traces go, from the command line.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TraceArgs {
    /// Export traces over OTLP/HTTP (protobuf) to this collector, e.g. http://127.0.0.1:4318
    /// (/v1/traces is added unless given) [default: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
    /// OTEL_EXPORTER_OTLP_ENDPOINT; no traces without either]. One span per call with its
    /// stages; an incoming W3C traceparent (REST header, MCP _meta) continues its trace.
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
}

/// Flushes and stops the trace exporter when dropped.
#[must_use = "traces are flushed when this is dropped"]
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Some(p) = self.provider.take()
            && let Err(e) = p.shutdown()
        {
            eprintln!("toolsmith: traces not all exported at exit: {e}");
        }
    }
}

/// Starts logging as `format` (`default_filter` when `RUST_LOG` is unset) and, when an
/// endpoint is set, trace export for `service`.
pub fn init(format: LogFormat, default_filter: &str, traces: &TraceArgs) -> Result<Telemetry> {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter));
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false);
    let logs = match format {
        LogFormat::Text => fmt.with_filter(filter).boxed(),
        LogFormat::Json => {
            crate::output::notes_as_json();
            fmt.json().flatten_event(true).with_filter(filter).boxed()
        }
    };
    let provider = provider(traces)?;
    let spans = provider.as_ref().map(|p| {
        // Only the attributes the spans name: no source locations, threads, levels, targets
        // or busy/idle timings, and no OpenTelemetry context made current on every enter
        // (nothing here reads it) — each costs every call something.
        tracing_opentelemetry::layer()
            .with_tracer(p.tracer("toolsmith"))
            .with_location(false)
            .with_threads(false)
            .with_level(false)
            .with_target(false)
            .with_tracked_inactivity(false)
            .with_context_activation(false)
            .with_filter(
                Targets::new()
                    .with_target(toolsmith_exec::trace::TARGET, LevelFilter::INFO)
                    .with_default(LevelFilter::OFF),
            )
    });
    let _ = tracing_subscriber::registry()
        .with(logs)
        .with(spans)
        .try_init();
    Ok(Telemetry { provider })
}

/// The tracer provider exporting to the configured endpoint, if one is.
fn provider(traces: &TraceArgs) -> Result<Option<SdkTracerProvider>> {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let endpoint = match &traces.otlp_endpoint {
        Some(url) => Some(traces_url(url)?),
        None if env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some()
            || env("OTEL_EXPORTER_OTLP_ENDPOINT").is_some() =>
        {
            None
        }
        None => return Ok(None),
    };
    for var in [
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    ] {
        if let Some(p) = env(var)
            && p != "http/protobuf"
        {
            bail!("{var}={p}: toolsmith exports traces over http/protobuf only");
        }
    }
    let mut builder = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_http_client(Ureq::new());
    if let Some(url) = endpoint {
        builder = builder.with_endpoint(url);
    }
    let exporter = builder.build().context("the OTLP trace exporter")?;
    let mut resource = opentelemetry_sdk::Resource::builder();
    if env("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name("toolsmith");
    }
    let resource = resource
        .with_attribute(opentelemetry::KeyValue::new(
            "service.version",
            env!("CARGO_PKG_VERSION"),
        ))
        .build();
    Ok(Some(
        SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource)
            .build(),
    ))
}

/// `--otlp-endpoint`: a collector's base URL (`/v1/traces` added) or the traces URL itself.
fn traces_url(url: &str) -> Result<String> {
    let url = url.trim().trim_end_matches('/');
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        bail!(
            "--otlp-endpoint {url:?}: give an http:// or https:// URL (OTLP/HTTP, port 4318 by convention)"
        );
    }
    Ok(if url.ends_with("/v1/traces") {
        url.to_owned()
    } else {
        format!("{url}/v1/traces")
    })
}

/// The exporter's HTTP client: ureq (blocking), run on the batch processor's own thread.
#[derive(Debug)]
struct Ureq(ureq::Agent);

impl Ureq {
    fn new() -> Self {
        Self(
            ureq::Agent::config_builder()
                .http_status_as_error(false)
                .timeout_global(Some(std::time::Duration::from_secs(10)))
                .build()
                .into(),
        )
    }
}

impl HttpClient for Ureq {
    fn send_bytes<'a, 'b>(
        &'a self,
        request: Request<Bytes>,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Response<Bytes>, HttpError>> + Send + 'b>,
    >
    where
        'a: 'b,
        Self: 'b,
    {
        Box::pin(async move {
            let mut answer = self.0.run(request.map(|body| body.to_vec()))?;
            let status = answer.status();
            let body = answer.body_mut().read_to_vec()?;
            let mut response = Response::new(Bytes::from(body));
            *response.status_mut() = status;
            Ok(response)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_is_a_base_or_the_traces_url() {
        assert_eq!(
            traces_url("http://127.0.0.1:4318").expect("url"),
            "http://127.0.0.1:4318/v1/traces"
        );
        assert_eq!(
            traces_url("http://c:4318/v1/traces/").expect("url"),
            "http://c:4318/v1/traces"
        );
        let e = traces_url("127.0.0.1:4317").expect_err("no scheme");
        assert!(e.to_string().contains("http://"), "{e}");
    }
}
