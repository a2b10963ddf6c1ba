//! The server as a user runs it (SPEC §10): the real `toolsmith serve` process, called over
//! HTTP with a keep-alive client. Measures, side by side in one run:
//! - a REST call of a `true` command tool against a bare spawn of /bin/true (p50, p99, ratio),
//!   and the same tool with `sandbox: none` against it, over the floor of a health round
//!   trip plus a bare spawn (the sandbox's cost through the real server);
//! - the server's resident memory idle, and after 100 000 tools were imported and listed;
//! - list and search over HTTP at 100 000 tools.
//!
//! Run with `cargo bench -p toolsmith --bench serve` (`BENCH_N` calls, `BENCH_TOOLS` tools).

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "common.rs"]
mod common;

use common::{Killed, env, free_port, ms, pct};

fn rss_mib(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .unwrap_or(0.0)
        / 1024.0
}

fn main() {
    let calls = env("BENCH_N", 1000) as usize;
    let tools = env("BENCH_TOOLS", 100_000) as usize;
    let bin = env!("CARGO_BIN_EXE_toolsmith");
    let dir = tempfile::tempdir().expect("tempdir");
    // The registry outside the workspace, as by default (one inside makes the sandbox carve
    // the workspace around it for every call).
    let data = tempfile::tempdir().expect("tempdir");
    let db = data.path().join("registry.db");
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}/v1");
    let server = Killed(
        Command::new(bin)
            .args([
                "serve",
                "--no-catalog",
                "--addr",
                &format!("127.0.0.1:{port}"),
            ])
            .arg("--db")
            .arg(&db)
            .arg("--workspace")
            .arg(dir.path())
            .stderr(Stdio::null())
            .spawn()
            .expect("serve"),
    );
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    common::wait_healthy(&base);
    std::thread::sleep(Duration::from_millis(500));
    let idle = rss_mib(server.0.id());

    for (name, sandbox) in [("yes", "workspace"), ("yes_open", "none")] {
        let status = agent
            .post(format!("{base}/tools"))
            .header("authorization", common::bearer())
            .content_type("application/json")
            .send(format!(
                r#"{{"name": "{name}", "description": "Exit 0.", "sandbox": "{sandbox}", "command": ["true"]}}"#
            ))
            .expect("create")
            .status();
        assert_eq!(status, 201);
    }
    let call = |tool: &str| {
        let mut r = agent
            .post(format!("{base}/tools/{tool}/call"))
            .header("authorization", common::bearer())
            .content_type("application/json")
            .send(r#"{"arguments": {}}"#)
            .expect("call");
        let body = r.body_mut().read_to_string().expect("body");
        assert!(body.starts_with(r#"{"success":true"#), "{body}");
    };
    let health = || {
        let mut r = agent.get(format!("{base}/health")).call().expect("health");
        std::hint::black_box(r.body_mut().read_to_string().expect("body"));
    };
    let spawn = || {
        let s = Command::new("/bin/true").status().expect("spawn");
        assert!(s.success());
    };
    for _ in 0..50 {
        call("yes");
        call("yes_open");
        health();
        spawn();
    }
    let (mut rest, mut open, mut floor, mut bare) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..calls {
        let t = Instant::now();
        spawn();
        bare.push(t.elapsed());
        let t = Instant::now();
        health();
        floor.push(t.elapsed());
        let t = Instant::now();
        call("yes");
        rest.push(t.elapsed());
        let t = Instant::now();
        call("yes_open");
        open.push(t.elapsed());
    }
    let (b50, b99) = (pct(&mut bare, 0.5), pct(&mut bare, 0.99));
    let (h50, _) = (pct(&mut floor, 0.5), pct(&mut floor, 0.99));
    let (r50, r99) = (pct(&mut rest, 0.5), pct(&mut rest, 0.99));
    let (o50, o99) = (pct(&mut open, 0.5), pct(&mut open, 0.99));
    println!("| what ({calls} each, interleaved) | p50 | p99 |\n|---|---|---|");
    println!(
        "| baseline: spawn and wait for /bin/true | {} | {} |",
        ms(b50),
        ms(b99)
    );
    println!(
        "| REST call of a `true` tool (HTTP, pipeline, spawn, log; default sandbox) | {} | {} |",
        ms(r50),
        ms(r99)
    );
    println!(
        "| the same tool with `sandbox: none` | {} | {} |",
        ms(o50),
        ms(o99)
    );
    println!(
        "| ratio | {:.2}× | {:.2}× |\n| added by toolsmith | +{} | +{} |\n",
        r50.as_secs_f64() / b50.as_secs_f64(),
        r99.as_secs_f64() / b99.as_secs_f64(),
        ms(r50.saturating_sub(b50)),
        ms(r99.saturating_sub(b99))
    );
    // The containment issue's table: what a call adds over the floor (a health round trip
    // plus a bare spawn), sandboxed and not, and the sandbox's own share.
    let floor = h50 + b50;
    println!(
        "| over the floor (health round trip {} + bare spawn {}) | p50 |\n|---|---|\n| `sandbox: none` | +{} |\n| default (`workspace`) | +{} |\n| the sandbox's share | +{} |\n",
        ms(h50),
        ms(b50),
        ms(o50.saturating_sub(floor)),
        ms(r50.saturating_sub(floor)),
        ms(r50.saturating_sub(o50))
    );
    let after_calls = rss_mib(server.0.id());

    // 100 000 tools, imported by the CLI into the same registry while the server runs.
    let catalog = dir.path().join("many.yaml");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&catalog).expect("catalog"));
    writeln!(f, "tools:").expect("write");
    for i in 0..tools {
        let description = match i % 1000 {
            0 => format!("Fetch weather report {i}"),
            _ => format!("Search files, variant {i}"),
        };
        writeln!(f, "  - {{name: tool_{i:06}, description: {description:?}, command: [grep], tags: [search], parameters: [{{name: pattern}}, {{name: path, default: .}}]}}").expect("write");
    }
    drop(f);
    let t = Instant::now();
    let out = Command::new(bin)
        .arg("import")
        .arg(&catalog)
        .arg("--db")
        .arg(&db)
        .output()
        .expect("import");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let import = t.elapsed();
    let timed = |url: String, n: usize| {
        let mut v: Vec<Duration> = (0..n)
            .map(|_| {
                let t = Instant::now();
                let mut r = agent
                    .get(&url)
                    .header("authorization", common::bearer())
                    .call()
                    .expect("get");
                assert_eq!(r.status(), 200);
                std::hint::black_box(r.body_mut().read_to_string().expect("body"));
                t.elapsed()
            })
            .collect();
        (pct(&mut v, 0.5), pct(&mut v, 0.99))
    };
    println!("| over HTTP at {tools} tools (200 each) | p50 | p99 |\n|---|---|---|");
    let (p50, p99) = timed(format!("{base}/tools?limit=50"), 200);
    println!("| first page of 50 | {} | {} |", ms(p50), ms(p99));
    let (p50, p99) = timed(
        format!(
            "{base}/tools?limit=50&cursor={}",
            "tool_090000"
                .bytes()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        ),
        200,
    );
    println!(
        "| a page deep in the list (cursor) | {} | {} |",
        ms(p50),
        ms(p99)
    );
    let (p50, p99) = timed(format!("{base}/tools?limit=50&q=weather"), 200);
    println!(
        "| search \"weather\" (100 matches) | {} | {} |",
        ms(p50),
        ms(p99)
    );
    let (p50, p99) = timed(format!("{base}/tools?limit=50&q=variant%209"), 200);
    println!(
        "| search \"variant 9\" (11 111 matches) | {} | {} |",
        ms(p50),
        ms(p99)
    );
    // Walk every page once, as an exporter would.
    let t = Instant::now();
    let mut cursor: Option<String> = None;
    let mut seen = 0;
    loop {
        let url = match &cursor {
            Some(c) => format!("{base}/tools?limit=1000&cursor={c}"),
            None => format!("{base}/tools?limit=1000"),
        };
        let v: serde_json::Value = serde_json::from_str(
            &agent
                .get(&url)
                .header("authorization", common::bearer())
                .call()
                .expect("page")
                .body_mut()
                .read_to_string()
                .expect("body"),
        )
        .expect("json");
        seen += v["tools"].as_array().map_or(0, Vec::len);
        match v["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    let walk = t.elapsed();
    // The generated tools and the two `true` tools (sandboxed and not).
    assert_eq!(seen, tools + 2);
    let full = rss_mib(server.0.id());
    println!(
        "\nimport of {tools} tools by `toolsmith import` (batches of {}): {:.1} s",
        toolsmith_store::SYNC_BATCH,
        import.as_secs_f64()
    );
    println!(
        "listing all {seen} tools in pages of 1000: {:.2} s",
        walk.as_secs_f64()
    );
    println!(
        "server RSS: idle {idle:.1} MiB; after {calls} calls {after_calls:.1} MiB; with {tools} tools listed {full:.1} MiB"
    );
}
