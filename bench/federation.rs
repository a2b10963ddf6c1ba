//! Federation (SPEC §11, issue 22): what toolsmith adds in front of an upstream MCP server,
//! measured side by side in one run against calling the upstream directly from the same
//! client, and against FastMCP's proxy (`create_proxy`) in front of the same upstream.
//!
//! 1. A proxied `tools/call` of a trivial tool (`ping` of a stdio upstream that answers
//!    inline), interleaved call by call: directly over stdio, through `toolsmith mcp` (stdio)
//!    and `toolsmith serve` (HTTP), through FastMCP's proxy (stdio). p50, p99 and what each
//!    adds to the direct call's p50; beside them, an MCP `ping` to each toolsmith (the
//!    round trip to it, without an upstream).
//! 2. 64 concurrent calls of `nap` (200 ms on a thread of its own upstream) through one
//!    upstream: all answered, and the wall time beside the same 64 sent directly.
//! 3. `tools/list` of 3 upstreams × 300 tools against 900 local tools, every page followed.
//! 4. `resources/read` and `prompts/get` of the same upstream, directly and through each
//!    toolsmith, interleaved as in 1.
//!
//! `cargo bench -p toolsmith --bench federation`. `FASTMCP_PYTHON` names a Python with
//! `fastmcp` (see bench/README.md) for the FastMCP rows; `BENCH_CALLS` (default 1000) calls
//! per series.

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

#[path = "common.rs"]
mod common;
#[path = "rpc.rs"]
mod rpc;

use common::{Killed, env, free_port, ms, pct};
use rpc::{Http, StdioRpc, Transport, wait_http};

const UPSTREAM: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../bench/federation/upstream.py"
);
const PROXY: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../bench/federation/fastmcp_proxy.py"
);
const BIN: &str = env!("CARGO_BIN_EXE_toolsmith");

fn call(name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
}

fn answered(v: &Value, want: &str) {
    let text = v["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(text, want, "unexpected answer: {v}");
}

/// Every tool's name, following cursors.
fn names(t: &dyn Transport) -> Vec<String> {
    let (mut cursor, mut out) = (None::<String>, Vec::new());
    loop {
        let params = cursor.map_or(json!({}), |c| json!({"cursor": c}));
        let v = t
            .request(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params}));
        for tool in v["result"]["tools"].as_array().into_iter().flatten() {
            out.push(tool["name"].as_str().unwrap_or_default().to_owned());
        }
        match v["result"]["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return out,
        }
    }
}

/// Waits until `t` lists `count` tools (its upstreams discovered).
fn discovered(t: &dyn Transport, count: usize) {
    let started = Instant::now();
    while names(t).len() < count {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the upstream tools never appeared"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `toolsmith mcp` on `catalog` over stdio.
fn toolsmith_stdio(catalog: &std::path::Path, dir: &std::path::Path) -> (Killed, Arc<StdioRpc>) {
    let mut child = Command::new(BIN)
        .args(["mcp", "--no-cgroups", "--catalog"])
        .arg(catalog)
        .arg("--workspace")
        .arg(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("toolsmith mcp");
    let rpc = StdioRpc::start(&mut child);
    (Killed(child), rpc)
}

/// `toolsmith serve` on `catalog` (its own registry in `dir`), with its MCP URL.
fn toolsmith_http(catalog: &std::path::Path, dir: &std::path::Path, db: &str) -> (Killed, Http) {
    let port = free_port();
    let child = Command::new(BIN)
        .args([
            "serve",
            "--no-cgroups",
            "--addr",
            &format!("127.0.0.1:{port}"),
        ])
        .arg("--catalog")
        .arg(catalog)
        .arg("--db")
        .arg(dir.join(db))
        .arg("--workspace")
        .arg(dir)
        .stderr(Stdio::null())
        .spawn()
        .expect("serve");
    let url = format!("http://127.0.0.1:{port}/mcp");
    wait_http(&url);
    (Killed(child), Http::new(url))
}

fn upstream(extra: usize) -> (Killed, Arc<StdioRpc>) {
    let mut child = Command::new("python3")
        .arg(UPSTREAM)
        .env("TS_EXTRA", extra.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3 upstream");
    let rpc = StdioRpc::start(&mut child);
    (Killed(child), rpc)
}

/// 64 `nap`s of 200 ms at once through `t`: the wall time, every answer checked.
fn naps(t: &dyn Transport, tool: &str) -> Duration {
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..64 {
            s.spawn(|| answered(&t.request(&call(tool, json!({"ms": 200}))), "slept"));
        }
    });
    started.elapsed()
}

/// The p50 of 30 walks of every page of `tools/list`.
fn list_p50(t: &dyn Transport, count: usize) -> Duration {
    let mut walks = Vec::new();
    for _ in 0..30 {
        let s = Instant::now();
        assert_eq!(names(t).len(), count);
        walks.push(s.elapsed());
    }
    pct(&mut walks, 0.5)
}

fn main() {
    let calls = env("BENCH_CALLS", 1000) as usize;
    let dir = tempfile::tempdir().expect("tempdir");
    let catalog = dir.path().join("one.yaml");
    std::fs::write(
        &catalog,
        format!("mcp_servers:\n  - name: up\n    command: [python3, {UPSTREAM}]\n"),
    )
    .expect("catalog");

    // 1. One call at a time, interleaved.
    let (_direct_child, direct) = upstream(0);
    let (_stdio_child, stdio) = toolsmith_stdio(&catalog, dir.path());
    let (_http_child, http) = toolsmith_http(&catalog, dir.path(), "one.db");
    discovered(stdio.as_ref(), 2);
    discovered(&http, 2);
    let fastmcp = std::env::var("FASTMCP_PYTHON").ok().map(|py| {
        let mut child = Command::new(py)
            .args([PROXY, "python3", UPSTREAM])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("FastMCP proxy");
        let rpc = StdioRpc::start(&mut child);
        (Killed(child), rpc)
    });
    let mut series: Vec<(&str, &dyn Transport, &str, Vec<Duration>)> = vec![
        (
            "direct to the upstream (stdio)",
            direct.as_ref(),
            "ping",
            Vec::new(),
        ),
        (
            "through toolsmith mcp (stdio)",
            stdio.as_ref(),
            "up__ping",
            Vec::new(),
        ),
        (
            "through toolsmith serve (HTTP)",
            &http,
            "up__ping",
            Vec::new(),
        ),
        // A tool name of "" is the MCP `ping` request: the round trip to toolsmith alone.
        (
            "(toolsmith mcp: an MCP `ping`, no upstream)",
            stdio.as_ref(),
            "",
            Vec::new(),
        ),
        (
            "(toolsmith serve: an MCP `ping`, no upstream)",
            &http,
            "",
            Vec::new(),
        ),
    ];
    if let Some((_, proxy)) = &fastmcp {
        series.push((
            "through FastMCP 4.1.6 create_proxy (stdio)",
            proxy.as_ref(),
            "ping",
            Vec::new(),
        ));
    }
    for round in 0..calls + 100 {
        for (_, t, tool, lat) in series.iter_mut() {
            let s = Instant::now();
            if tool.is_empty() {
                let v = t.request(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}));
                assert_eq!(v["result"], json!({}), "{v}");
            } else {
                answered(&t.request(&call(tool, json!({}))), "pong");
            }
            if round >= 100 {
                lat.push(s.elapsed());
            }
        }
    }
    println!("{calls} calls of `ping` per series, interleaved call by call\n");
    println!(
        "| path | p50 | p99 | added to the direct p50 | ÷ direct p50 |\n|---|---|---|---|---|"
    );
    let direct_p50 = pct(&mut series[0].3.clone(), 0.5);
    for (what, _, _, lat) in series.iter_mut() {
        let (p50, p99) = (pct(lat, 0.5), pct(lat, 0.99));
        println!(
            "| {what} | {} | {} | +{} | {:.2}× |",
            ms(p50),
            ms(p99),
            ms(p50.saturating_sub(direct_p50)),
            p50.as_secs_f64() / direct_p50.as_secs_f64()
        );
    }

    // 2. 64 concurrent naps of 200 ms through one upstream.
    println!(
        "\n64 concurrent calls of a 200 ms tool through one upstream (wall time, all answered)\n"
    );
    println!("| path | wall |\n|---|---|");
    for (what, t, tool) in [
        (
            "direct to the upstream (stdio)",
            direct.as_ref() as &dyn Transport,
            "nap",
        ),
        ("through toolsmith mcp (stdio)", stdio.as_ref(), "up__nap"),
        ("through toolsmith serve (HTTP)", &http, "up__nap"),
    ] {
        naps(t, tool);
        println!("| {what} | {} |", ms(naps(t, tool)));
    }
    drop(series);

    // 3. tools/list: 3 upstreams × 300 tools against 900 local tools.
    let three = dir.path().join("three.yaml");
    let mut text = String::from("mcp_servers:\n");
    for name in ["a", "b", "c"] {
        text.push_str(&format!(
            "  - name: {name}\n    command: [python3, {UPSTREAM}]\n    env: {{TS_EXTRA: '298'}}\n"
        ));
    }
    std::fs::write(&three, text).expect("catalog");
    let local = dir.path().join("local.yaml");
    let mut text = String::from("tools:\n");
    for i in 0..900 {
        text.push_str(&format!(
            "  - {{name: t_{i:04}, description: 'Extra tool {i}: reads one record.', command: [true], parameters: [{{name: id}}, {{name: fields, type: array, items: string, required: false}}]}}\n"
        ));
    }
    std::fs::write(&local, text).expect("catalog");
    let (_a, fed_stdio) = toolsmith_stdio(&three, dir.path());
    let (_b, fed_http) = toolsmith_http(&three, dir.path(), "three.db");
    let (_c, local_stdio) = toolsmith_stdio(&local, dir.path());
    let (_d, local_http) = toolsmith_http(&local, dir.path(), "local.db");
    discovered(fed_stdio.as_ref(), 900);
    discovered(&fed_http, 900);
    println!("\n`tools/list`, every page (p50 of 30 walks)\n");
    println!(
        "| transport | 900 local tools | 3 upstreams × 300 tools | ratio |\n|---|---|---|---|"
    );
    for (what, l, f) in [
        (
            "stdio",
            local_stdio.as_ref() as &dyn Transport,
            fed_stdio.as_ref() as &dyn Transport,
        ),
        ("HTTP", &local_http, &fed_http),
    ] {
        let (l, f) = (list_p50(l, 900), list_p50(f, 900));
        println!(
            "| {what} | {} | {} | {:.2}× |",
            ms(l),
            ms(f),
            f.as_secs_f64() / l.as_secs_f64()
        );
    }

    // 4. resources/read and prompts/get of the same upstream, interleaved.
    for t in [stdio.as_ref() as &dyn Transport, &http] {
        offered(t);
    }
    let paths: [(&str, &dyn Transport, &str); 3] = [
        ("direct to the upstream (stdio)", direct.as_ref(), "hello"),
        ("through toolsmith mcp (stdio)", stdio.as_ref(), "up__hello"),
        ("through toolsmith serve (HTTP)", &http, "up__hello"),
    ];
    let mut reads: Vec<Vec<Duration>> = vec![Vec::new(); 3];
    let mut gets: Vec<Vec<Duration>> = vec![Vec::new(); 3];
    for round in 0..calls + 100 {
        for (i, (_, t, prompt)) in paths.iter().enumerate() {
            let s = Instant::now();
            read(*t);
            let read_took = s.elapsed();
            let s = Instant::now();
            get(*t, prompt);
            let get_took = s.elapsed();
            if round >= 100 {
                reads[i].push(read_took);
                gets[i].push(get_took);
            }
        }
    }
    println!(
        "
{calls} `resources/read` and `prompts/get` per path, interleaved\n"
    );
    println!("| request | path | p50 | p99 | added to the direct p50 |\n|---|---|---|---|---|");
    for (method, series) in [("resources/read", &mut reads), ("prompts/get", &mut gets)] {
        let direct_p50 = pct(&mut series[0].clone(), 0.5);
        for (i, (what, _, _)) in paths.iter().enumerate() {
            let (p50, p99) = (pct(&mut series[i], 0.5), pct(&mut series[i], 0.99));
            println!(
                "| {method} | {what} | {} | {} | +{} |",
                ms(p50),
                ms(p99),
                ms(p50.saturating_sub(direct_p50))
            );
        }
    }
}

/// Waits until `t` lists the upstream's prompt (its offer discovered).
fn offered(t: &dyn Transport) {
    let started = Instant::now();
    loop {
        let v =
            t.request(&json!({"jsonrpc": "2.0", "id": 1, "method": "prompts/list", "params": {}}));
        let listed = v["result"]["prompts"]
            .as_array()
            .is_some_and(|p| p.iter().any(|p| p["name"] == "up__hello"));
        if listed {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the upstream's prompt never appeared: {v}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `resources/read` of the upstream's note through `t`, its answer checked.
fn read(t: &dyn Transport) {
    let v = t.request(&json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "bench://note"}}));
    assert_eq!(v["result"]["contents"][0]["text"], "a note", "{v}");
}

/// `prompts/get` of `name` through `t`, its answer checked.
fn get(t: &dyn Transport, name: &str) {
    let v = t.request(&json!({"jsonrpc": "2.0", "id": 1, "method": "prompts/get", "params": {"name": name, "arguments": {"name": "Ada"}}}));
    assert_eq!(
        v["result"]["messages"][0]["content"]["text"], "Say hello to Ada.",
        "{v}"
    );
}
