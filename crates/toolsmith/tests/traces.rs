//! Traces (SPEC §15) through the real binary to a real OTLP/HTTP receiver
//! (`otlp_receiver.py`, decoding with the OpenTelemetry project's protobuf classes): a REST
//! call and an MCP call that carry a W3C `traceparent` continue that trace, one span per call
//! with its stages under it (a queue span only for a call that waited for a slot), no argument
//! value in any span; the trace goes on to an `http`
//! tool's service (the `traceparent` header) and to an upstream MCP server
//! (`_meta.traceparent`); a code-mode program's calls are spans under the program's; spans
//! still queued are exported when the server stops.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::{otlp_receiver as receiver, read_spans as spans, repo, request_as, serve};
use serde_json::{Value, json};

fn named<'a>(spans: &'a [Value], name: &str, trace: &str) -> Vec<&'a Value> {
    spans
        .iter()
        .filter(|s| s["name"] == name && s["trace_id"] == trace)
        .collect()
}

/// The one span of `trace` named `name` whose parent is `parent`.
fn child<'a>(spans: &'a [Value], name: &str, trace: &str, parent: &str) -> &'a Value {
    let found: Vec<_> = named(spans, name, trace)
        .into_iter()
        .filter(|s| s["parent_span_id"] == parent)
        .collect();
    assert_eq!(found.len(), 1, "{name} under {parent} in {spans:#?}");
    found[0]
}

const TRACE_REST: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const TRACE_HTTP: &str = "5bf92f3577b34da6a3ce929d0e0e4737";
const TRACE_QUEUE: &str = "6bf92f3577b34da6a3ce929d0e0e4738";
const TRACE_MCP: &str = "0af7651916cd43dd8448eb211c80319c";
const TRACE_READ: &str = "1af7651916cd43dd8448eb211c80319d";
const TRACE_PROMPT: &str = "2af7651916cd43dd8448eb211c80319e";
const TRACE_CODE: &str = "7bf92f3577b34da6a3ce929d0e0e4739";
const PARENT: &str = "00f067aa0ba902b7";

#[test]
#[ignore = "needs the Python OTLP receiver (TOOLSMITH_TEST_PYTHON with opentelemetry-proto)"]
fn calls_continue_the_callers_trace_and_pass_it_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let r = receiver(dir.path());
    let tiny = repo().join("crates/toolsmith/tests/upstream/tiny_server.py");
    let catalog = dir.path().join("catalog.yaml");
    std::fs::write(
        &catalog,
        format!(
            "tools:
  - name: zone
    description: The time in a zone.
    command: [date]
    parameters: [{{name: zone, inject_as: env, env_name: TZ}}]
  - name: one_at_a_time
    description: Waits a moment, one call at a time.
    command: [sleep, '0.3']
    max_concurrency: 1
  - name: echo_trace
    description: Asks a service what trace context it was sent.
    http: {{url: '{}/echo', allow_hosts: [127.0.0.1]}}
mcp_servers:
  - name: tiny
    command: [python3, {}]
    env_allowlist: [PATH]
    env: {{TS_ECHO_META: '1'}}
",
            r.url,
            tiny.display()
        ),
    )
    .expect("catalog");
    let db = dir.path().join("r.db");
    let (mut server, base, mcp) = serve(
        db.to_str().expect("utf-8"),
        dir.path(),
        &[
            "--catalog",
            catalog.to_str().expect("utf-8"),
            "--otlp-endpoint",
            &r.url,
        ],
    );
    let traced = |trace: &str| format!("00-{trace}-{PARENT}-01");

    // REST, with a traceparent header and an argument value no span may carry.
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut answer = agent
        .post(format!("{base}/tools/zone/call"))
        .header("content-type", "application/json")
        .header("authorization", common::bearer(&base))
        .header("traceparent", traced(TRACE_REST))
        .send(json!({"arguments": {"zone": "Secret/ArgumentValue"}}).to_string())
        .expect("call");
    assert_eq!(answer.status().as_u16(), 200);
    let body: Value =
        serde_json::from_str(&answer.body_mut().read_to_string().expect("body")).expect("json");
    assert_eq!(body["success"], true, "{body}");
    // A code-mode program: its span, and each call it makes under it.
    let mut answer = agent
        .post(format!("{base}/code/run"))
        .header("content-type", "application/json")
        .header("authorization", common::bearer(&base))
        .header("traceparent", traced(TRACE_CODE))
        .send(
            json!({"code": "from tools import zone\nzone(zone='UTC')\nzone(zone='UTC')\n2"})
                .to_string(),
        )
        .expect("run");
    let body: Value =
        serde_json::from_str(&answer.body_mut().read_to_string().expect("body")).expect("json");
    assert_eq!(body["result"]["data"]["value"], 2, "{body}");
    // The http tool's service is sent the trace going on.
    let mut answer = agent
        .post(format!("{base}/tools/echo_trace/call"))
        .header("content-type", "application/json")
        .header("authorization", common::bearer(&base))
        .header("traceparent", traced(TRACE_HTTP))
        .send("{}")
        .expect("call");
    let body: Value =
        serde_json::from_str(&answer.body_mut().read_to_string().expect("body")).expect("json");
    let sent = body["data"]["traceparent"].as_str().unwrap_or_default();
    assert!(sent.starts_with(&format!("00-{TRACE_HTTP}-")), "{body}");
    assert!(
        !sent.contains(PARENT),
        "the service got our caller's span, not ours: {sent}"
    );

    // Two calls of a tool that runs one at a time: one waits for the other.
    let both: Vec<_> = (0..2)
        .map(|_| {
            let (base, parent) = (base.clone(), traced(TRACE_QUEUE));
            std::thread::spawn(move || {
                ureq::post(format!("{base}/tools/one_at_a_time/call"))
                    .header("content-type", "application/json")
                    .header("authorization", common::bearer(&base))
                    .header("traceparent", parent)
                    .send("{}")
                    .expect("call")
                    .status()
                    .as_u16()
            })
        })
        .collect();
    for call in both {
        assert_eq!(call.join().expect("call"), 200);
    }

    // MCP, with _meta.traceparent, calling the upstream tool (once it is discovered).
    let started = Instant::now();
    while request_as("GET", &format!("{base}/tools/tiny__ping"), None, None).0 != 200 {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "tiny never came up"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let (status, reply) = common::post_mcp(
        &mcp,
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "tiny__ping", "arguments": {}, "_meta": {"traceparent": traced(TRACE_MCP)}}}),
        None,
    );
    assert_eq!(status, 200, "{reply}");
    let echoed: Value = serde_json::from_str(
        reply["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default(),
    )
    .unwrap_or_else(|e| panic!("{e}: {reply}"));
    let upstream = echoed["traceparent"].as_str().unwrap_or_default();
    assert!(upstream.starts_with(&format!("00-{TRACE_MCP}-")), "{reply}");

    // resources/read and prompts/get too: each a span continuing its _meta trace, the trace
    // passed on to the upstream (which answers with the _meta it got).
    let mut sent_on = Vec::new();
    for (method, params, trace, text_at) in [
        (
            "resources/read",
            json!({"uri": "tiny://meta"}),
            TRACE_READ,
            "/result/contents/0/text",
        ),
        (
            "prompts/get",
            json!({"name": "tiny__meta"}),
            TRACE_PROMPT,
            "/result/messages/0/content/text",
        ),
    ] {
        let mut params = params;
        params["_meta"] = json!({"traceparent": traced(trace)});
        let (status, reply) = common::post_mcp(
            &mcp,
            json!({"jsonrpc": "2.0", "id": 2, "method": method, "params": params}),
            None,
        );
        assert_eq!(status, 200, "{reply}");
        let echoed: Value = serde_json::from_str(
            reply
                .pointer(text_at)
                .and_then(Value::as_str)
                .unwrap_or_default(),
        )
        .unwrap_or_else(|e| panic!("{method}: {e}: {reply}"));
        let upstream = echoed["traceparent"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(
            upstream.starts_with(&format!("00-{trace}-")),
            "{method}: {reply}"
        );
        sent_on.push(upstream);
    }

    // Stopped: what is still queued is exported before the process ends.
    let stopped = Command::new("kill")
        .args(["-TERM", &server.0.id().to_string()])
        .status()
        .expect("kill");
    assert!(stopped.success());
    server.0.wait().expect("serve stopped");
    let all = spans(&r.spans);

    // REST: request (child of the caller's span) → call → pipeline, queue, run, and log.
    let request = child(&all, "POST /v1/tools/{name}/call", TRACE_REST, PARENT);
    assert_eq!(
        request["attributes"]["http.route"], "/v1/tools/{name}/call",
        "{request}"
    );
    assert_eq!(request["attributes"]["http.response.status_code"], 200);
    assert_eq!(request["service"], "toolsmith");
    // The program: request → run_code → its own run, and its two calls beside it.
    let code_request = child(&all, "POST /v1/code/run", TRACE_CODE, PARENT);
    let program = child(
        &all,
        "run_code",
        TRACE_CODE,
        code_request["span_id"].as_str().expect("id"),
    );
    let pid = program["span_id"].as_str().expect("id");
    child(&all, "call run_code", TRACE_CODE, pid);
    let inner: Vec<_> = named(&all, "call zone", TRACE_CODE)
        .into_iter()
        .filter(|s| s["parent_span_id"] == pid)
        .collect();
    assert_eq!(inner.len(), 2, "{all:#?}");
    assert_eq!(
        inner[0]["attributes"]["caller"], program["attributes"]["caller"],
        "{inner:#?}"
    );
    let rid = request["span_id"].as_str().expect("id");
    let call = child(&all, "call zone", TRACE_REST, rid);
    let attributes = &call["attributes"];
    assert_eq!(
        (
            &attributes["tool"],
            &attributes["tool.kind"],
            &attributes["tool.version"],
            &attributes["outcome"],
            &attributes["caller"]
        ),
        (
            &json!("zone"),
            &json!("command"),
            &json!(1),
            &json!("ok"),
            &json!("local")
        ),
        "{call}"
    );
    let cid = call["span_id"].as_str().expect("id");
    for stage in ["pipeline", "run"] {
        child(&all, stage, TRACE_REST, cid);
    }
    // A call that took a free slot at once has no queue span; one that waited has.
    assert!(named(&all, "queue", TRACE_REST).is_empty(), "{all:#?}");
    let waited: Vec<_> = named(&all, "call one_at_a_time", TRACE_QUEUE)
        .into_iter()
        .filter(|c| {
            named(&all, "queue", TRACE_QUEUE)
                .iter()
                .any(|q| q["parent_span_id"] == c["span_id"])
        })
        .collect();
    assert_eq!(waited.len(), 1, "{all:#?}");
    // The http tool's span is the parent the service was sent.
    let http_call = named(&all, "call echo_trace", TRACE_HTTP);
    let run = child(
        &all,
        "run",
        TRACE_HTTP,
        http_call[0]["span_id"].as_str().expect("id"),
    );
    assert_eq!(
        sent,
        format!(
            "00-{TRACE_HTTP}-{}-01",
            run["span_id"].as_str().expect("id")
        )
    );

    // MCP: its tools/call span continues the _meta trace; the call of the upstream tool
    // under it passed its own span on.
    let mcp_span = child(&all, "tools/call tiny__ping", TRACE_MCP, PARENT);
    let call = child(
        &all,
        "call tiny__ping",
        TRACE_MCP,
        mcp_span["span_id"].as_str().expect("id"),
    );
    assert_eq!(call["attributes"]["tool.kind"], "mcp");
    assert_eq!(call["attributes"]["caller"], "mcp");
    // The read's and the get's spans, under the callers' own; each passed itself on.
    for (name, trace, upstream) in [
        ("resources/read tiny://meta", TRACE_READ, &sent_on[0]),
        ("prompts/get tiny__meta", TRACE_PROMPT, &sent_on[1]),
    ] {
        let span = child(&all, name, trace, PARENT);
        assert_eq!(
            upstream,
            &format!("00-{trace}-{}-01", span["span_id"].as_str().expect("id")),
            "{name}"
        );
    }

    // No span carries an argument value.
    let text = std::fs::read_to_string(&r.spans).expect("spans");
    assert!(!text.contains("Secret/ArgumentValue"));
}

#[test]
fn a_bad_otlp_endpoint_is_refused_at_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = Command::new(common::BIN)
        .args([
            "serve",
            "--no-catalog",
            "--otlp-endpoint",
            "127.0.0.1:4318",
            "--db",
        ])
        .arg(dir.path().join("r.db"))
        .output()
        .expect("serve");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("--otlp-endpoint") && err.contains("http://"),
        "{err}"
    );
}
