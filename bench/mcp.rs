//! toolsmith against FastMCP (SPEC §10, issue: MCP), side by side in one run: the same tool (a
//! command running `echo`; FastMCP's runs it with `subprocess.run`) and the same 1000 extra
//! tools, over stdio and over Streamable HTTP (stateless, JSON responses, on both). Measures
//! sequential call latency (p50, p99) beside a bare spawn of the same `echo` from the same
//! client (interleaved call by call), the rate of calls made one at a time (what an agent
//! does), call throughput with several requests in flight, and the time to list every tool
//! (following cursors).
//!
//! `cargo bench -p toolsmith --bench mcp`. The FastMCP side runs when `FASTMCP_PYTHON` names a
//! Python with `fastmcp` installed (see bench/README.md); `BENCH_SECONDS` (default 5) per
//! throughput run, `BENCH_INFLIGHT` (default 8) requests in flight.
//!
//! The client is a minimal JSON-RPC driver, the same for both servers, so that the client's
//! own cost stays small and equal (the correctness of our MCP is tested with the official
//! client in tests/mcp.rs).

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

#[path = "common.rs"]
mod common;
#[path = "rpc.rs"]
mod rpc;

use common::{Killed, env, free_port, ms, pct};
use rpc::{Http, StdioRpc, Transport, wait_http};

fn call(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hello"}}})
}

fn list(id: u64, cursor: Option<&str>) -> Value {
    let params = match cursor {
        Some(c) => json!({"cursor": c}),
        None => json!({}),
    };
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params})
}

fn check_call(v: &Value) {
    let text = v["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(text.trim(), "hello", "unexpected call result: {v}");
}

struct Figures {
    p50: Duration,
    p99: Duration,
    /// A bare spawn of `echo hello` from the client, interleaved call by call.
    bare_p50: Duration,
    /// One call at a time, as an agent makes them.
    sequential_per_second: f64,
    per_second: f64,
    list: Duration,
    tools: usize,
}

fn measure(t: &dyn Transport, inflight: usize, seconds: u64) -> Figures {
    for i in 0..50 {
        check_call(&t.request(&call(i)));
    }
    let bare = || {
        let out = Command::new("echo").arg("hello").output().expect("echo");
        assert_eq!(out.stdout, b"hello\n");
    };
    let (mut lat, mut spawns) = (Vec::new(), Vec::new());
    for i in 0..500 {
        let s = Instant::now();
        bare();
        spawns.push(s.elapsed());
        let s = Instant::now();
        check_call(&t.request(&call(i)));
        lat.push(s.elapsed());
    }
    let sequential_per_second = lat.len() as f64 / lat.iter().sum::<Duration>().as_secs_f64();
    let (p50, p99) = (pct(&mut lat, 0.5), pct(&mut lat, 0.99));
    let bare_p50 = pct(&mut spawns, 0.5);
    let done = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..inflight {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    check_call(&t.request(&call(1)));
                    done.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        std::thread::sleep(Duration::from_secs(seconds));
        stop.store(true, Ordering::Relaxed);
    });
    let per_second = done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64();
    let mut walks = Vec::new();
    let mut tools = 0;
    for _ in 0..30 {
        let s = Instant::now();
        let (mut cursor, mut n) = (None::<String>, 0);
        loop {
            let v = t.request(&list(7, cursor.as_deref()));
            n += v["result"]["tools"].as_array().map_or(0, Vec::len);
            match v["result"]["nextCursor"].as_str() {
                Some(c) => cursor = Some(c.to_owned()),
                None => break,
            }
        }
        walks.push(s.elapsed());
        tools = n;
    }
    Figures {
        p50,
        p99,
        bare_p50,
        sequential_per_second,
        per_second,
        list: pct(&mut walks, 0.5),
        tools,
    }
}

fn row(what: &str, f: &Figures) {
    println!(
        "| {what} | {} | {} | {} (+{}) | {:.0} | {:.0} | {} ({} tools) |",
        ms(f.p50),
        ms(f.p99),
        ms(f.bare_p50),
        ms(f.p50.saturating_sub(f.bare_p50)),
        f.sequential_per_second,
        f.per_second,
        ms(f.list),
        f.tools
    );
}

fn ratio(what: &str, ours: &Figures, theirs: &Figures) {
    println!(
        "| {what}: toolsmith ÷ FastMCP | {:.1}× faster | {:.1}× faster | | **{:.1}×** | {:.1}× | {:.1}× faster |",
        theirs.p50.as_secs_f64() / ours.p50.as_secs_f64(),
        theirs.p99.as_secs_f64() / ours.p99.as_secs_f64(),
        ours.sequential_per_second / theirs.sequential_per_second,
        ours.per_second / theirs.per_second,
        theirs.list.as_secs_f64() / ours.list.as_secs_f64()
    );
}

fn main() {
    let seconds = env("BENCH_SECONDS", 5);
    let inflight = env("BENCH_INFLIGHT", 8) as usize;
    let bin = env!("CARGO_BIN_EXE_toolsmith");
    let dir = tempfile::tempdir().expect("tempdir");
    let catalog = dir.path().join("bench.yaml");
    let mut text = String::from(
        "tools:\n  - {name: echo, description: Print the text., command: [echo], parameters: [{name: text}]}\n",
    );
    for i in 0..1000 {
        text.push_str(&format!(
            "  - {{name: bulk_{i:04}, description: Bulk tool {i}., command: [true]}}\n"
        ));
    }
    std::fs::write(&catalog, text).expect("catalog");
    let db = dir.path().join("registry.db");
    let fastmcp = std::env::var("FASTMCP_PYTHON").ok();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../bench/mcp/fastmcp_server.py"
    );
    println!(
        "{inflight} requests in flight for {seconds} s per throughput figure; latency over 500 sequential calls\n"
    );
    println!(
        "| server | call p50 | call p99 | bare spawn of echo p50 (call over it) | sequential calls/s | calls/s, {inflight} in flight | list every tool (p50) |\n|---|---|---|---|---|---|---|"
    );

    // Streamable HTTP.
    let port = free_port();
    let _serve = Killed(
        Command::new(bin)
            .args(["serve", "--addr", &format!("127.0.0.1:{port}")])
            .arg("--catalog")
            .arg(&catalog)
            .arg("--db")
            .arg(&db)
            .arg("--workspace")
            .arg(dir.path())
            .stderr(Stdio::null())
            .spawn()
            .expect("serve"),
    );
    let url = format!("http://127.0.0.1:{port}/mcp");
    wait_http(&url);
    let ours_http = measure(&Http::new(url), inflight, seconds);
    row("toolsmith, HTTP", &ours_http);
    let theirs_http = fastmcp.as_ref().map(|py| {
        let port = free_port();
        let _server = Killed(
            Command::new(py)
                .args([script, "http", &port.to_string()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("fastmcp"),
        );
        let url = format!("http://127.0.0.1:{port}/mcp");
        wait_http(&url);
        let f = measure(&Http::new(url), inflight, seconds);
        row("FastMCP 4.1.6, HTTP", &f);
        f
    });

    // stdio.
    let mut child = Command::new(bin)
        .args(["mcp", "--db"])
        .arg(&db)
        .arg("--workspace")
        .arg(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("mcp");
    let t = StdioRpc::start(&mut child);
    let _ours = Killed(child);
    let ours_stdio = measure(t.as_ref(), inflight, seconds);
    row("toolsmith, stdio", &ours_stdio);
    let theirs_stdio = fastmcp.as_ref().map(|py| {
        let mut child = Command::new(py)
            .args([script, "stdio"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("fastmcp");
        let t = StdioRpc::start(&mut child);
        let _theirs = Killed(child);
        let f = measure(t.as_ref(), inflight, seconds);
        row("FastMCP 4.1.6, stdio", &f);
        f
    });
    match (theirs_http, theirs_stdio) {
        (Some(h), Some(s)) => {
            ratio("HTTP", &ours_http, &h);
            ratio("stdio", &ours_stdio, &s);
        }
        _ => println!("\n(FASTMCP_PYTHON is not set: FastMCP was not measured)"),
    }
}
