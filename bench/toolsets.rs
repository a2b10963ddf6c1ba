//! Toolsets and search mode (SPEC §14) on the real `toolsmith serve`, with a registry of
//! `BENCH_TOOLS` (1000) tools shaped like real ones (a sentence of description, three
//! parameters). Measures, side by side in one run:
//! - what `tools/list` costs a client — every page, in bytes and in tokens at 4 bytes a
//!   token — in full, for a 10-tool toolset and in search mode;
//! - the cost of a view: `tools/call` of a `true` tool through `/mcp`, `/mcp/{toolset}`,
//!   `/mcp` with an `X-Toolsmith-Tools` glob and with a token limited to a toolset,
//!   interleaved call by call (p50, p99);
//! - `search_tools` over every tool (p50, p99).
//!
//! Run with `cargo bench -p toolsmith --bench toolsets` (`BENCH_N` calls of each).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

#[path = "common.rs"]
mod common;

use common::{Killed, env, free_port, ms, pct};

const WORDS: [&str; 12] = [
    "invoice",
    "weather",
    "ticket",
    "deploy",
    "customer",
    "report",
    "calendar",
    "payment",
    "shipment",
    "forecast",
    "inventory",
    "refund",
];

fn catalog(tools: usize) -> String {
    let mut text = String::from(
        "toolsets:\n  - {name: ten, include: {tags: [ten]}}\n  - {name: all_search, include: {}, discovery: search}\ntools:\n  - {name: yes, description: Succeeds., tags: [ten], command: [\"true\"]}\n",
    );
    for i in 0..tools.saturating_sub(1) {
        let (a, b) = (WORDS[i % 12], WORDS[(i / 12) % 12]);
        let tag = if i < 9 { "ten" } else { a };
        text.push_str(&format!(
            "  - name: {a}_{b}_{i:04}\n    description: Looks up the {a} records of a {b} by its identifier and returns them as JSON, newest first.\n    tags: [{tag}]\n    command: [\"true\"]\n    parameters:\n      - {{name: id, type: string, description: The {b} identifier.}}\n      - {{name: limit, type: integer, required: false, default: 20, minimum: 1, maximum: 100, description: How many records.}}\n      - {{name: since, type: string, required: false, description: Only records after this ISO date.}}\n"
        ));
    }
    text
}

/// A front door: its name, URL and headers.
type Door<'a> = (&'a str, String, Vec<(&'a str, &'a str)>);

struct Client {
    agent: ureq::Agent,
}

impl Client {
    fn post(&self, url: &str, body: &Value, headers: &[(&str, &str)]) -> Value {
        let mut req = ureq::http::Request::builder()
            .method("POST")
            .uri(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18");
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let mut resp = self
            .agent
            .run(req.body(body.to_string().into_bytes()).expect("request"))
            .expect("send");
        let text = resp.body_mut().read_to_string().expect("body");
        serde_json::from_str(&text).expect("json")
    }

    /// Every page of tools/list: (tools, bytes of the results).
    fn list(&self, url: &str, headers: &[(&str, &str)]) -> (usize, usize) {
        let (mut n, mut bytes, mut cursor) = (0, 0, None::<String>);
        loop {
            let params = cursor.map_or(json!({}), |c| json!({"cursor": c}));
            let v = self.post(
                url,
                &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params}),
                headers,
            );
            bytes += v["result"].to_string().len();
            n += v["result"]["tools"].as_array().map_or(0, Vec::len);
            match v["result"]["nextCursor"].as_str() {
                Some(c) => cursor = Some(c.to_owned()),
                None => return (n, bytes),
            }
        }
    }
}

fn main() {
    let calls = env("BENCH_N", 1000) as usize;
    let tools = env("BENCH_TOOLS", 1000) as usize;
    let bin = env!("CARGO_BIN_EXE_toolsmith");
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("catalog.yaml");
    std::fs::write(&file, catalog(tools)).expect("catalog");
    let db = dir.path().join("registry.db");
    let port = free_port();
    let origin = format!("http://127.0.0.1:{port}");
    let _server = Killed(
        Command::new(bin)
            .args([
                "serve",
                "--no-cgroups",
                "--addr",
                &format!("127.0.0.1:{port}"),
            ])
            .arg("--catalog")
            .arg(&file)
            .arg("--db")
            .arg(&db)
            .arg("--workspace")
            .arg(dir.path())
            .args([
                "--token",
                "root=root-secret-1",
                "--token",
                "ten:call@ten=ten-secret-1",
            ])
            .stderr(Stdio::null())
            .spawn()
            .expect("serve"),
    );
    let client = Client {
        agent: ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into(),
    };
    let started = Instant::now();
    while client
        .agent
        .get(format!("{origin}/v1/health"))
        .call()
        .is_err()
    {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "serve did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let root = [("authorization", "Bearer root-secret-1")];

    println!("tools/list of a {tools}-tool registry (every page):");
    for (what, path) in [
        ("in full (/mcp)", "/mcp"),
        ("a 10-tool toolset (/mcp/ten)", "/mcp/ten"),
        ("search mode (/mcp/all_search)", "/mcp/all_search"),
    ] {
        let (n, bytes) = client.list(&format!("{origin}{path}"), &root);
        println!(
            "  {what:<32} {n:>5} tools  {bytes:>8} bytes  ≈{:>6} tokens",
            bytes / 4
        );
    }

    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "yes", "arguments": {}}});
    let doors: [Door; 4] = [
        ("/mcp (every tool)", format!("{origin}/mcp"), root.to_vec()),
        (
            "/mcp/ten (a toolset)",
            format!("{origin}/mcp/ten"),
            root.to_vec(),
        ),
        (
            "/mcp + X-Toolsmith-Tools: y*",
            format!("{origin}/mcp"),
            vec![root[0], ("x-toolsmith-tools", "y*")],
        ),
        (
            "/mcp, token limited to ten",
            format!("{origin}/mcp"),
            vec![("authorization", "Bearer ten-secret-1")],
        ),
    ];
    let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(calls); doors.len()];
    for _ in 0..50 {
        for (_, url, headers) in &doors {
            client.post(url, &call, headers);
        }
    }
    for _ in 0..calls {
        for (i, (_, url, headers)) in doors.iter().enumerate() {
            let t = Instant::now();
            let v = client.post(url, &call, headers);
            times[i].push(t.elapsed());
            assert_eq!(v["result"]["isError"], false, "{v}");
        }
    }
    println!("tools/call of a `true` tool, {calls} each, interleaved:");
    let base = pct(&mut times[0], 0.5);
    for (i, (what, ..)) in doors.iter().enumerate() {
        let p50 = pct(&mut times[i], 0.5);
        let p99 = pct(&mut times[i], 0.99);
        println!(
            "  {what:<32} p50 {}  p99 {}  ({:+.3} ms at p50)",
            ms(p50),
            ms(p99),
            (p50.as_secs_f64() - base.as_secs_f64()) * 1e3
        );
    }

    let search = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search_tools", "arguments": {"query": "weather forecast of a shipment"}}});
    let url = format!("{origin}/mcp/all_search");
    let mut t_search = Vec::with_capacity(calls);
    for _ in 0..calls.min(500) {
        let t = Instant::now();
        let v = client.post(&url, &search, &root);
        t_search.push(t.elapsed());
        assert!(
            v["result"]["structuredContent"]["tools"]
                .as_array()
                .is_some_and(|a| !a.is_empty()),
            "{v}"
        );
    }
    println!(
        "search_tools over {tools} tools: p50 {}  p99 {}",
        ms(pct(&mut t_search, 0.5)),
        ms(pct(&mut t_search, 0.99))
    );
}
