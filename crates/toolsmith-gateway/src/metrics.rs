//! Prometheus metrics (SPEC §15), in the OpenMetrics text format Prometheus scrapes, encoded
//! by `prometheus-client` (no hand-written exposition); a front door serves them (`GET
//! /metrics`).
//!
//! Calls are counted where every front door records them ([`Metrics::call`], beside the run
//! log): by tool, executor kind, door and outcome, with a duration histogram per tool and
//! kind. Requests are counted by route template (never the raw path) and status. What the
//! engine and the registry know — warm runtimes, sessions, upstream servers, the registry's
//! generation — is read at scrape time.
//!
//! **Cardinality is bounded**: the first [`TOOL_LABELS`] tool names seen get a series of
//! their own; calls of any other tool are counted under `tool="_other"`. Arguments, callers
//! and error messages are never labels. So a registry of 100,000 tools produces at most
//! 500 tools × (outcomes × doors) call series and 500 × kinds histograms.

use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use toolsmith_core::{Tool, ToolResult};

/// Tools that get series of their own; the rest share `tool="_other"`.
pub const TOOL_LABELS: usize = 500;
/// The label of every tool past [`TOOL_LABELS`].
pub const OTHER: &str = "_other";

/// Call durations, in seconds: 0.1 ms to 60 s.
const BUCKETS: [f64; 18] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0, 30.0, 60.0,
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    tool: String,
    kind: String,
    door: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolKind {
    tool: String,
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabel {
    tool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HttpLabels {
    route: String,
    method: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ServerLabels {
    server: String,
    status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ServerLabel {
    server: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OfferLabels {
    server: String,
    method: String,
    door: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FindingLabels {
    server: String,
    rule: String,
    severity: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GuardLabels {
    tool: String,
    action: String,
    rule: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MethodLabel {
    method: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VersionLabel {
    version: String,
}

type Durations = Family<ToolKind, Histogram, fn() -> Histogram>;

fn histogram() -> Histogram {
    Histogram::new(BUCKETS)
}

/// The gateway's metrics; one per [`crate::Gateway`].
pub struct Metrics {
    registry: Registry,
    calls: Family<CallLabels, Counter>,
    durations: Durations,
    in_flight: Gauge,
    queued: Gauge,
    upstream_durations: Family<ServerLabel, Histogram, fn() -> Histogram>,
    coercions: Family<ToolLabel, Counter>,
    invalid: Family<ToolLabel, Counter>,
    rate_limited: Family<ToolLabel, Counter>,
    http: Family<HttpLabels, Counter>,
    warm_live: Gauge,
    warm_ready: Gauge,
    warm_starts: Counter,
    warm_calls: Counter,
    sessions: Family<KindLabel, Gauge>,
    upstream_status: Family<ServerLabels, Gauge>,
    upstream_restarts: Family<ServerLabel, Counter>,
    offers: Family<OfferLabels, Counter>,
    offer_durations: Family<MethodLabel, Histogram, fn() -> Histogram>,
    findings: Family<FindingLabels, Counter>,
    result_guards: Family<GuardLabels, Counter>,
    generation: Gauge,
    poll_age: Gauge<f64, AtomicU64>,
    /// Milliseconds since `started` of the last successful registry poll.
    last_poll_ms: AtomicU64,
    started: Instant,
    /// Calls of script tools since start (the Overview's warm/cold split).
    pub script_calls: AtomicU64,
    /// Tool names with series of their own.
    tools: Mutex<HashSet<String>>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("toolsmith");
        let m = Self {
            calls: Family::default(),
            durations: Durations::new_with_constructor(histogram),
            in_flight: Gauge::default(),
            queued: Gauge::default(),
            upstream_durations: Family::new_with_constructor(histogram),
            coercions: Family::default(),
            invalid: Family::default(),
            rate_limited: Family::default(),
            http: Family::default(),
            warm_live: Gauge::default(),
            warm_ready: Gauge::default(),
            warm_starts: Counter::default(),
            warm_calls: Counter::default(),
            sessions: Family::default(),
            upstream_status: Family::default(),
            upstream_restarts: Family::default(),
            offers: Family::default(),
            offer_durations: Family::new_with_constructor(histogram),
            findings: Family::default(),
            result_guards: Family::default(),
            generation: Gauge::default(),
            poll_age: Gauge::default(),
            last_poll_ms: AtomicU64::new(0),
            started: Instant::now(),
            script_calls: AtomicU64::new(0),
            tools: Mutex::default(),
            registry: Registry::default(),
        };
        registry.register(
            "calls",
            "Tool calls by tool, executor kind, front door and outcome (ok or the error kind)",
            m.calls.clone(),
        );
        registry.register(
            "upstream_requests",
            "Resource reads and prompt gets of upstream MCP servers by server (none when not found), method, front door and outcome",
            m.offers.clone(),
        );
        registry.register(
            "upstream_request_duration_seconds",
            "Durations of resource reads and prompt gets by method",
            m.offer_durations.clone(),
        );
        registry.register(
            "guardrail_findings",
            "Guardrail findings in upstream definitions (tools, prompts, templates) as they were listed, by server, rule and severity",
            m.findings.clone(),
        );
        registry.register(
            "result_guardrails",
            "Results changed by their guardrails, by tool, action (scrubbed, cut) and rule (the credential shape; cut: max_result_bytes)",
            m.result_guards.clone(),
        );
        registry.register(
            "call_duration_seconds",
            "Tool call durations by tool and executor kind",
            m.durations.clone(),
        );
        registry.register(
            "calls_in_flight",
            "Tool calls running now",
            m.in_flight.clone(),
        );
        registry.register(
            "calls_queued",
            "Tool calls waiting for a free slot (the server's limit or their tool's max_concurrency)",
            m.queued.clone(),
        );
        registry.register(
            "upstream_call_duration_seconds",
            "Calls of upstream MCP servers' tools, by server",
            m.upstream_durations.clone(),
        );
        registry.register(
            "argument_coercions",
            "Arguments repaired by the pipeline (a string to a number, ...), by tool",
            m.coercions.clone(),
        );
        registry.register(
            "argument_validation_failures",
            "Calls refused for invalid arguments, by tool",
            m.invalid.clone(),
        );
        registry.register(
            "rate_limited",
            "Calls refused by a rate limit, by tool",
            m.rate_limited.clone(),
        );
        registry.register(
            "http_requests",
            "HTTP requests by route template, method and status",
            m.http.clone(),
        );
        registry.register(
            "warm_runtimes",
            "Warm Python runtimes (zygotes) alive",
            m.warm_live.clone(),
        );
        registry.register(
            "warm_runtimes_ready",
            "Warm Python runtimes waiting for a call",
            m.warm_ready.clone(),
        );
        registry.register(
            "warm_runtime_starts",
            "Warm Python runtimes started (replacements included)",
            m.warm_starts.clone(),
        );
        registry.register(
            "warm_calls",
            "Script calls that ran in a warm runtime (the rest of a warm tool's ran cold)",
            m.warm_calls.clone(),
        );
        registry.register(
            "sessions",
            "Sessions live, by kind (shell, process, terminal)",
            m.sessions.clone(),
        );
        registry.register(
            "upstream_status",
            "Upstream MCP servers: 1 for each server's current status",
            m.upstream_status.clone(),
        );
        registry.register(
            "upstream_restarts",
            "Restarts of each upstream MCP server",
            m.upstream_restarts.clone(),
        );
        registry.register(
            "registry_generation",
            "Changes this server has seen of the registry",
            m.generation.clone(),
        );
        registry.register(
            "registry_poll_age_seconds",
            "Seconds since the registry was last read for changes by other processes",
            m.poll_age.clone(),
        );
        let info: Family<VersionLabel, Gauge> = Family::default();
        info.get_or_create(&VersionLabel {
            version: env!("CARGO_PKG_VERSION").into(),
        })
        .set(1);
        registry.register(
            "build_info",
            "The toolsmith version serving (always 1)",
            info,
        );
        Self { registry, ..m }
    }

    /// The label of `tool`: its name while fewer than [`TOOL_LABELS`] names have series.
    fn tool_label(&self, tool: &str) -> String {
        let mut seen = self.tools.lock().unwrap_or_else(|e| e.into_inner());
        if seen.contains(tool) {
            return tool.to_owned();
        }
        if seen.len() < TOOL_LABELS {
            seen.insert(tool.to_owned());
            return tool.to_owned();
        }
        OTHER.to_owned()
    }

    /// The findings of one upstream definition as `server` listed it.
    pub fn findings(&self, server: &str, findings: &[toolsmith_core::guard::Finding]) {
        for f in findings {
            self.findings
                .get_or_create(&FindingLabels {
                    server: server.to_owned(),
                    rule: f.rule.to_owned(),
                    severity: f.severity.as_str().to_owned(),
                })
                .inc();
        }
    }

    /// A finished call of `tool` through `door` (`rest`, `mcp`, `mcp-stdio`).
    pub fn call(&self, tool: &Tool, result: &ToolResult, door: &str) {
        let label = self.tool_label(tool.name.as_str());
        if let Some(g) = &result.meta.guardrails {
            let actions = g
                .scrubbed
                .iter()
                .map(|(rule, n)| ("scrubbed", rule.as_str(), u64::from(*n)))
                .chain(g.cut.as_ref().map(|_| ("cut", "max_result_bytes", 1)));
            for (action, rule, n) in actions {
                self.result_guards
                    .get_or_create(&GuardLabels {
                        tool: label.clone(),
                        action: action.to_owned(),
                        rule: rule.to_owned(),
                    })
                    .inc_by(n);
            }
        }
        let kind = tool.executor.kind().to_owned();
        if kind == "script" {
            self.script_calls.fetch_add(1, Ordering::Relaxed);
        }
        let outcome = match &result.error {
            None => "ok".to_owned(),
            Some(e) => serde_json::to_value(e.kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_else(|| "error".into()),
        };
        if outcome == "invalid_arguments" {
            self.invalid
                .get_or_create(&ToolLabel {
                    tool: label.clone(),
                })
                .inc();
        }
        if outcome == "rate_limited" {
            self.rate_limited
                .get_or_create(&ToolLabel {
                    tool: label.clone(),
                })
                .inc();
        }
        if !result.meta.coerced.is_empty() {
            self.coercions
                .get_or_create(&ToolLabel {
                    tool: label.clone(),
                })
                .inc_by(result.meta.coerced.len() as u64);
        }
        if let (Some(ms), Some(target)) = (result.meta.duration_ms, tool.executor.upstream()) {
            self.upstream_durations
                .get_or_create(&ServerLabel {
                    server: target.server.clone(),
                })
                .observe(ms / 1000.0);
        }
        if let Some(ms) = result.meta.duration_ms {
            self.durations
                .get_or_create(&ToolKind {
                    tool: label.clone(),
                    kind: kind.clone(),
                })
                .observe(ms / 1000.0);
        }
        self.calls
            .get_or_create(&CallLabels {
                tool: label,
                kind,
                door: door.to_owned(),
                outcome,
            })
            .inc();
    }

    /// A finished `resources/read` or `prompts/get` (`method`) of `server` (none when nothing
    /// owned what it named) through `door`.
    pub fn offer(
        &self,
        server: Option<&str>,
        method: &str,
        door: &str,
        outcome: &str,
        seconds: f64,
    ) {
        self.offers
            .get_or_create(&OfferLabels {
                server: server.unwrap_or("none").to_owned(),
                method: method.to_owned(),
                door: door.to_owned(),
                outcome: outcome.to_owned(),
            })
            .inc();
        self.offer_durations
            .get_or_create(&MethodLabel {
                method: method.to_owned(),
            })
            .observe(seconds);
    }

    /// A call started; it counts as in flight until the guard is dropped.
    pub fn in_flight(&self) -> InFlight<'_> {
        self.in_flight.inc();
        InFlight(&self.in_flight)
    }

    /// An HTTP request answered.
    pub fn request(&self, route: &str, method: &str, status: u16) {
        self.http
            .get_or_create(&HttpLabels {
                route: route.to_owned(),
                method: method.to_owned(),
                status,
            })
            .inc();
    }

    /// The registry was read for changes just now.
    pub fn polled(&self) {
        self.last_poll_ms
            .store(self.started.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    /// The metrics as text, after reading what is sampled at scrape time from `engine`;
    /// `generation` is the registry's as this process saw it last.
    pub fn encode(&self, engine: &toolsmith_exec::Engine, generation: u64) -> String {
        self.queued.set(engine.queued() as i64);
        self.warm_live.set(engine.warm_runtimes() as i64);
        self.warm_ready.set(engine.warm_ready() as i64);
        self.warm_starts
            .inner()
            .store(engine.warm_starts(), Ordering::Relaxed);
        self.warm_calls
            .inner()
            .store(engine.warm_calls(), Ordering::Relaxed);
        for (kind, n) in engine.sessions().count_by_kind() {
            self.sessions
                .get_or_create(&KindLabel { kind: kind.into() })
                .set(n as i64);
        }
        self.upstream_status.clear();
        for s in engine.upstreams().status() {
            self.upstream_status
                .get_or_create(&ServerLabels {
                    server: s.name.clone(),
                    status: serde_json::to_value(s.status)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default(),
                })
                .set(1);
            self.upstream_restarts
                .get_or_create(&ServerLabel {
                    server: s.name.clone(),
                })
                .inner()
                .store(u64::from(s.restarts), Ordering::Relaxed);
        }
        self.generation.set(generation as i64);
        let last = Duration::from_millis(self.last_poll_ms.load(Ordering::Relaxed));
        self.poll_age
            .set(self.started.elapsed().saturating_sub(last).as_secs_f64());
        let mut out = String::new();
        if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &self.registry) {
            tracing::error!("encoding the metrics: {e}");
        }
        out
    }
}

/// A call in flight; dropping it (however the call ended) counts it out.
pub struct InFlight<'m>(&'m Gauge);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.dec();
    }
}
