//! Operations against a real `serve`: Prometheus metrics (what is counted, under which
//! labels, the cap on tool labels, who may read them, off and on another address) and JSON
//! logs (every line on stderr one JSON object, start-up notes included).

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use common::{BIN, repo, request_as, serve};

/// The metrics text at `url` (with `token`), or its status when refused.
fn scrape(url: &str, token: Option<&str>) -> Result<String, u16> {
    let (status, body) = request_as("GET", url, None, token);
    match (status, body) {
        (200, Value::String(text)) => Ok(text),
        (status, _) => Err(status),
    }
}

/// The value of the sample `name{labels}` (labels as written, in order).
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}

#[test]
fn metrics_count_calls_requests_and_the_runtime_with_bounded_labels() {
    let dir = tempfile::tempdir().expect("tempdir");
    let registry = tempfile::tempdir().expect("tempdir");
    let db = registry.path().join("r.db").display().to_string();
    // 510 tools: more than get labels of their own.
    let mut catalog = String::from("tools:\n");
    for i in 0..510 {
        catalog.push_str(&format!(
            "  - {{name: t{i:03}, description: d, command: [\"true\"], parameters: [{{name: n, type: integer, required: false}}]}}\n"
        ));
    }
    let file = dir.path().join("many.yaml");
    std::fs::write(&file, catalog).expect("catalog");
    let (_serve, base, _) = serve(
        &db,
        dir.path(),
        &[
            "--catalog",
            file.to_str().expect("path"),
            "--token",
            "root=root-secret-1",
            "--token",
            "viewer:read=read-secret-1",
        ],
    );
    let origin = base.trim_end_matches("/v1");
    let root = Some("root-secret-1");
    assert_eq!(
        scrape(&format!("{origin}/metrics"), None),
        Err(401),
        "metrics need a token when tokens are on"
    );
    let before = scrape(&format!("{origin}/metrics"), Some("read-secret-1"))
        .expect("a read token reads them");
    assert!(
        before.contains("toolsmith_build_info{version=\""),
        "{before}"
    );

    // Calls: ok with a repaired argument, invalid arguments, and one of every tool.
    for (args, expect_ok) in [(json!({"n": "7"}), true), (json!({"n": "seven"}), false)] {
        let (status, r) = request_as(
            "POST",
            &format!("{base}/tools/t000/call"),
            Some(json!({"arguments": args})),
            root,
        );
        assert_eq!(
            (status, r["success"].as_bool()),
            (200, Some(expect_ok)),
            "{r}"
        );
    }
    for i in 0..510 {
        request_as(
            "POST",
            &format!("{base}/tools/t{i:03}/call"),
            Some(json!({"arguments": {}})),
            root,
        );
    }
    let text = scrape(&format!("{origin}/metrics"), root).expect("metrics");
    assert_eq!(
        sample(
            &text,
            "toolsmith_calls_total{tool=\"t000\",kind=\"command\",door=\"rest\",outcome=\"ok\"}"
        ),
        Some(2.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            "toolsmith_calls_total{tool=\"t000\",kind=\"command\",door=\"rest\",outcome=\"invalid_arguments\"}"
        ),
        Some(1.0)
    );
    assert_eq!(
        sample(&text, "toolsmith_argument_coercions_total{tool=\"t000\"}"),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &text,
            "toolsmith_argument_validation_failures_total{tool=\"t000\"}"
        ),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &text,
            "toolsmith_call_duration_seconds_count{tool=\"t000\",kind=\"command\"}"
        ),
        Some(3.0)
    );
    assert!(
        sample(
            &text,
            "toolsmith_call_duration_seconds_bucket{le=\"60.0\",tool=\"t000\",kind=\"command\"}"
        )
        .is_some()
            || sample(
                &text,
                "toolsmith_call_duration_seconds_bucket{tool=\"t000\",kind=\"command\",le=\"60.0\"}"
            )
            .is_some(),
        "a bucket at 60 s"
    );
    assert_eq!(sample(&text, "toolsmith_calls_in_flight"), Some(0.0));
    // 500 tools have labels of their own; the other ten share `_other`.
    let tools: std::collections::BTreeSet<&str> = text
        .lines()
        .filter(|l| l.starts_with("toolsmith_calls_total{"))
        .filter_map(|l| l.split("tool=\"").nth(1)?.split('"').next())
        .collect();
    assert_eq!(tools.len(), 501, "500 tools and _other");
    assert_eq!(
        sample(
            &text,
            "toolsmith_calls_total{tool=\"_other\",kind=\"command\",door=\"rest\",outcome=\"ok\"}"
        ),
        Some(10.0)
    );
    // Requests by route template, never by raw path.
    assert!(
        sample(&text, "toolsmith_http_requests_total{route=\"/v1/tools/{name}/call\",method=\"POST\",status=\"200\"}")
            .is_some_and(|n| n >= 512.0),
        "{}",
        text.lines().filter(|l| l.contains("http_requests_total")).collect::<Vec<_>>().join("\n")
    );
    assert!(
        !text.contains("route=\"/v1/tools/t000"),
        "raw paths are not labels"
    );
    assert!(
        sample(&text, "toolsmith_registry_poll_age_seconds").is_some_and(|s| s < 5.0),
        "the registry is followed"
    );
    assert!(text.contains("toolsmith_warm_runtimes "), "{text}");
    for kind in ["shell", "process", "terminal"] {
        assert_eq!(
            sample(&text, &format!("toolsmith_sessions{{kind=\"{kind}\"}}")),
            Some(0.0),
            "{text}"
        );
    }
}

#[test]
fn ten_thousand_tools_called_make_a_bounded_number_of_series() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("r.db").display().to_string();
    let mut catalog = String::from("tools:\n");
    for i in 0..10_000 {
        catalog.push_str(&format!("  - {{name: b{i:05}, builtin: list_dir}}\n"));
    }
    let file = dir.path().join("many.yaml");
    std::fs::write(&file, catalog).expect("catalog");
    let (_serve, base, _) = serve(
        &db,
        dir.path(),
        &["--catalog", file.to_str().expect("path")],
    );
    // Every tool called once, from four clients.
    let clients: Vec<_> = (0..4)
        .map(|c| {
            let base = base.clone();
            std::thread::spawn(move || {
                for i in (c..10_000).step_by(4) {
                    let (status, _) = request_as(
                        "POST",
                        &format!("{base}/tools/b{i:05}/call"),
                        Some(json!({"arguments": {}})),
                        None,
                    );
                    assert_eq!(status, 200);
                }
            })
        })
        .collect();
    for c in clients {
        c.join().expect("client");
    }
    let text = scrape(&format!("{}/metrics", base.trim_end_matches("/v1")), None).expect("metrics");
    let series = |prefix: &str| text.lines().filter(|l| l.starts_with(prefix)).count();
    // One series of calls per labelled tool (all calls ok over REST), 500 tools and `_other`;
    // histograms the same tools × 19 buckets + sum + count.
    assert_eq!(series("toolsmith_calls_total{"), 501);
    assert_eq!(
        sample(
            &text,
            "toolsmith_calls_total{tool=\"_other\",kind=\"builtin\",door=\"rest\",outcome=\"ok\"}"
        ),
        Some(9_500.0)
    );
    assert!(series("toolsmith_call_duration_seconds_bucket{") <= 501 * 19);
    assert!(
        text.lines().count() < 20_000,
        "{} lines",
        text.lines().count()
    );
}

#[test]
fn metrics_can_be_off_or_on_their_own_address() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("r.db").display().to_string();
    let catalog = repo().join("examples/catalog.yaml");
    let (_a, base, _) = serve(
        &db,
        dir.path(),
        &[
            "--catalog",
            catalog.to_str().expect("path"),
            "--metrics",
            "off",
        ],
    );
    assert_eq!(
        scrape(&format!("{}/metrics", base.trim_end_matches("/v1")), None),
        Err(404)
    );
    drop(_a);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let addr = format!("127.0.0.1:{port}");
    let (_b, base, _) = serve(&db, dir.path(), &["--no-catalog", "--metrics-addr", &addr]);
    assert_eq!(
        scrape(&format!("{}/metrics", base.trim_end_matches("/v1")), None),
        Err(404),
        "not on the main listener"
    );
    // The metrics listener asks for the same token as the server (here its local admin's).
    let token = common::local_token(&base).expect("a server without tokens has a local one");
    assert_eq!(
        scrape(&format!("http://{addr}/metrics"), None),
        Err(401),
        "not without the token"
    );
    let mut text = Err(0);
    for _ in 0..50 {
        text = scrape(&format!("http://{addr}/metrics"), Some(&token));
        if text.is_ok() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(text.is_ok_and(|t| t.contains("toolsmith_build_info")));
}

#[test]
fn json_logs_make_every_stderr_line_one_object() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("r.db").display().to_string();
    let mut child = Command::new(BIN)
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--no-cgroups",
            "--log-format",
            "json",
            "--db",
            &db,
        ])
        .arg("--catalog")
        .arg(repo().join("examples/catalog.yaml"))
        .arg("--workspace")
        .arg(dir.path())
        .stderr(Stdio::piped())
        .spawn()
        .expect("serve");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.expect("line");
        let v: Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert!(v["timestamp"].is_string() && v["level"].is_string(), "{v}");
        let message = v["message"].as_str().unwrap_or_default().to_owned();
        let done = message.contains("REST API on");
        seen.push(message);
        if done {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(seen.iter().any(|m| m.starts_with("imported ")), "{seen:?}");
    assert!(seen.iter().any(|m| m.starts_with("sandbox: ")), "{seen:?}");
}

/// One REST call; status, `Retry-After`, body.
fn call_with(base: &str, tool: &str, token: &str) -> (u16, Option<u64>, Value) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let req = ureq::http::Request::builder()
        .method("POST")
        .uri(format!("{base}/tools/{tool}/call"))
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {token}"))
        .body(br#"{"arguments": {}}"#.to_vec())
        .expect("request");
    let mut resp = agent.run(req).expect("send");
    let retry = resp
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok());
    let status = resp.status().as_u16();
    let body = resp.body_mut().read_to_string().unwrap_or_default();
    (
        status,
        retry,
        serde_json::from_str(&body).unwrap_or(Value::String(body)),
    )
}

#[test]
fn rate_limits_hold_per_tool_per_caller_and_per_token() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("r.db").display().to_string();
    let catalog = dir.path().join("limits.yaml");
    std::fs::write(
        &catalog,
        "defaults:\n  rate_limit: {calls: 100, per: 1h}\ntools:\n  - {name: scarce, description: d, command: [\"true\"], rate_limit: {calls: 2, per: 1h}}\n  - {name: plenty, description: d, command: [\"true\"]}\n  - {name: free, description: d, command: [\"true\"], rate_limit: 1000/1s}\n",
    )
    .expect("catalog");
    let (_serve, base, mcp) = serve(
        &db,
        dir.path(),
        &[
            "--catalog",
            catalog.to_str().expect("path"),
            "--rate-limit",
            "6/1h",
            "--token",
            "a:call=a-secret-1",
            "--token",
            "b:call=b-secret-1",
            "--token",
            "slow:call=slow-secret-1 rate_limit=1/1h",
        ],
    );
    // The tool's limit, for each caller apart.
    for _ in 0..2 {
        assert_eq!(call_with(&base, "scarce", "a-secret-1").0, 200);
    }
    let (status, retry, body) = call_with(&base, "scarce", "a-secret-1");
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (429, Some("rate_limited")),
        "{body}"
    );
    assert!(
        retry.is_some_and(|s| s > 60 && s <= 1800),
        "Retry-After {retry:?}"
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("2/1h")),
        "{body}"
    );
    assert_eq!(
        call_with(&base, "scarce", "b-secret-1").0,
        200,
        "b has its own bucket"
    );
    // Over MCP: the same bucket (b's second call passes, its third does not), and an
    // isError result of kind rate_limited with the wait.
    let mcp_call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "scarce", "arguments": {}}});
    let (_, answer) = common::post_mcp(&mcp, mcp_call, Some("b-secret-1"));
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    let (status, answer) = common::post_mcp(
        &mcp,
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "scarce", "arguments": {}}}),
        Some("b-secret-1"),
    );
    assert_eq!(status, 200);
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.starts_with("rate_limited: ") && text.contains("try again in"),
        "{text}"
    );
    // The token's own limit, across tools.
    assert_eq!(call_with(&base, "plenty", "slow-secret-1").0, 200);
    let (status, retry, _) = call_with(&base, "free", "slow-secret-1");
    assert_eq!(status, 429, "the token's 1/1h holds across tools");
    assert!(retry.is_some_and(|s| s > 3000), "{retry:?}");
    // The server's default for tokens without one: a has made 3 calls; 3 more pass.
    for _ in 0..3 {
        assert_eq!(call_with(&base, "free", "a-secret-1").0, 200);
    }
    let (status, _, body) = call_with(&base, "free", "a-secret-1");
    assert_eq!(status, 429, "--rate-limit 6/1h: {body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("6/1h")),
        "{body}"
    );
    // Refusals are in the run log and the metrics.
    let (_, runs) = request_as(
        "GET",
        &format!("{base}/runs?kind=rate_limited"),
        None,
        Some("a-secret-1"),
    );
    assert!(
        runs["runs"].as_array().is_some_and(|r| r.len() >= 3),
        "{runs}"
    );
    let text = scrape(
        &format!("{}/metrics", base.trim_end_matches("/v1")),
        Some("a-secret-1"),
    )
    .expect("metrics");
    assert_eq!(
        sample(&text, "toolsmith_rate_limited_total{tool=\"scarce\"}"),
        Some(2.0),
        "{text}"
    );
}

#[test]
fn metrics_show_calls_waiting_for_a_slot() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("r.db").display().to_string();
    let catalog = dir.path().join("slow.yaml");
    std::fs::write(
        &catalog,
        "tools:\n  - {name: slow, description: d, command: [sleep, \"1.5\"], max_concurrency: 1}\n",
    )
    .expect("catalog");
    let (_serve, base, _) = serve(
        &db,
        dir.path(),
        &["--catalog", catalog.to_str().expect("path")],
    );
    let calls: Vec<_> = (0..2)
        .map(|_| {
            let base = base.clone();
            std::thread::spawn(move || {
                request_as(
                    "POST",
                    &format!("{base}/tools/slow/call"),
                    Some(json!({"arguments": {}})),
                    None,
                )
                .0
            })
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(700));
    let text = scrape(&format!("{}/metrics", base.trim_end_matches("/v1")), None).expect("metrics");
    assert_eq!(
        sample(&text, "toolsmith_calls_in_flight"),
        Some(2.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, "toolsmith_calls_queued"),
        Some(1.0),
        "one call waits for the tool's only slot"
    );
    for c in calls {
        assert_eq!(c.join().expect("call"), 200);
    }
    let text = scrape(&format!("{}/metrics", base.trim_end_matches("/v1")), None).expect("metrics");
    assert_eq!(sample(&text, "toolsmith_calls_queued"), Some(0.0));
}

#[test]
#[ignore = "needs PostgreSQL (TOOLSMITH_TEST_POSTGRES)"]
fn rate_limits_hold_across_replicas_on_postgresql() {
    // A schema of its own, created and migrated first; both replicas use it.
    let db = common::postgres_registry("ts_rates");
    let dir = tempfile::tempdir().expect("tempdir");
    let catalog = dir.path().join("limits.yaml");
    std::fs::write(
        &catalog,
        "tools:\n  - {name: scarce, description: d, command: [\"true\"], rate_limit: 3/1h}\n  - {name: plenty, description: d, command: [\"true\"]}\n",
    )
    .expect("catalog");
    let args = [
        "--catalog",
        catalog.to_str().expect("path"),
        "--rate-limit",
        "5/1h",
        "--token",
        "a:call=a-secret-1",
    ];
    let (_a, base_a, _) = serve(&db, dir.path(), &args);
    let (_b, base_b, _) = serve(&db, dir.path(), &args);
    // The tool's 3/1h: calls alternate between the replicas; the fourth is refused on either.
    for base in [&base_a, &base_b, &base_a] {
        assert_eq!(call_with(base, "scarce", "a-secret-1").0, 200);
    }
    let (status, retry, body) = call_with(&base_b, "scarce", "a-secret-1");
    assert_eq!(status, 429, "{body}");
    assert!(retry.is_some_and(|s| s > 600), "{retry:?}");
    assert_eq!(call_with(&base_a, "scarce", "a-secret-1").0, 429);
    // The caller's 5/1h across tools and replicas: 5 taken above (4 passed the caller's
    // bucket, the refused ones too), so the next call is refused wherever it lands.
    let (status, _, body) = call_with(&base_b, "plenty", "a-secret-1");
    assert_eq!(status, 429, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("5/1h")),
        "{body}"
    );
}

#[test]
fn metrics_count_live_sessions_by_kind() {
    let dir = tempfile::tempdir().expect("tempdir");
    let registry = tempfile::tempdir().expect("tempdir");
    let db = registry.path().join("r.db").display().to_string();
    let catalog = repo().join("examples/sessions.yaml");
    let (_serve, base, _) = serve(
        &db,
        dir.path(),
        &[
            "--catalog",
            catalog.to_str().expect("path"),
            "--allow-dangerous",
        ],
    );
    let start = |args: Value| {
        let (status, r) = request_as(
            "POST",
            &format!("{base}/tools/session_start/call"),
            Some(json!({"arguments": args, "confirm": true})),
            None,
        );
        assert_eq!((status, r["success"].as_bool()), (200, Some(true)), "{r}");
        r["data"]["session_id"]
            .as_str()
            .or(r["data"]["id"].as_str())
            .unwrap_or_default()
            .to_owned()
    };
    start(json!({}));
    start(json!({"command": ["sleep", "300"]}));
    start(json!({"command": ["sleep", "300"]}));
    let text = scrape(&format!("{}/metrics", base.trim_end_matches("/v1")), None).expect("metrics");
    assert_eq!(
        sample(&text, "toolsmith_sessions{kind=\"shell\"}"),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, "toolsmith_sessions{kind=\"process\"}"),
        Some(2.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, "toolsmith_sessions{kind=\"terminal\"}"),
        Some(0.0),
        "{text}"
    );
}
