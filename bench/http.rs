//! HTTP tools (SPEC §12, issue 23), side by side in one run:
//!
//! 1. An `http` tool call through the engine (pipeline, plan, the engine's client, the
//!    result) against the same GET made directly with reqwest, interleaved call by call,
//!    both to one keep-alive loopback server in this process: p50, p99, and what the tool
//!    adds to the direct request's p50.
//! 2. Importing GitHub's published description (`@octokit/openapi`, installed by `npm ci`
//!    in crates/toolsmith/tests/upstream): operations, tools, skipped, time (best of 3).
//!
//! `cargo bench -p toolsmith-exec --bench http`; `BENCH_CALLS` (default 5000) calls per
//! series.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use toolsmith_core::CompiledTool;
use toolsmith_core::catalog::{self, TextSource};
use toolsmith_exec::{CallOptions, Engine, EngineConfig};

const BODY: &str = r#"{"id":7,"name":"widget","tags":["a","b"]}"#;

/// Answers every request on every connection with the same small JSON body, keeping the
/// connection open.
async fn serve(listener: tokio::net::TcpListener) {
    loop {
        let Ok((mut sock, _)) = listener.accept().await else {
            return;
        };
        tokio::spawn(async move {
            let reply = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{BODY}",
                BODY.len()
            );
            let mut buf = vec![0u8; 8192];
            let mut have = Vec::new();
            loop {
                let Ok(n) = sock.read(&mut buf).await else {
                    return;
                };
                if n == 0 {
                    return;
                }
                have.extend_from_slice(&buf[..n]);
                while let Some(end) = have.windows(4).position(|w| w == b"\r\n\r\n") {
                    have.drain(..end + 4);
                    if sock.write_all(reply.as_bytes()).await.is_err() {
                        return;
                    }
                }
            }
        });
    }
}

fn pct(v: &mut [Duration], q: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 * q) as usize).min(v.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    let calls: usize = std::env::var("BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5000);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        tokio::spawn(serve(listener));

        let yaml = format!(
            "tools:\n  - name: get_item\n    description: d\n    http: {{url: \"http://127.0.0.1:{port}/items/{{id}}\"}}\n    parameters:\n      - {{name: id, type: integer, inject_as: path}}\n      - {{name: fields, type: array, items: string, required: false}}\n"
        );
        let c = catalog::load("c.yaml", &TextSource(yaml)).expect("bench catalog");
        let tool = CompiledTool::new(c.tools.into_iter().next().expect("tool"), 1).expect("compiles");
        let dir = tempfile::tempdir().expect("tempdir");
        let mut config = EngineConfig::new(dir.path());
        config.use_cgroups = false;
        config.warm_runtime = false;
        let engine = Arc::new(Engine::new(config).expect("engine"));
        let _ = rustls::crypto::ring::default_provider().install_default();
        let direct = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .build()
            .expect("client");
        let url = format!("http://127.0.0.1:{port}/items/7?fields=a&fields=b");

        let (mut through, mut bare) = (Vec::with_capacity(calls), Vec::with_capacity(calls));
        for i in 0..calls + calls / 10 {
            let t = Instant::now();
            let r = engine
                .call(&tool, json!({"id": "7", "fields": ["a", "b"]}), CallOptions::new("bench", true))
                .await;
            let d1 = t.elapsed();
            assert!(r.success, "{r:?}");
            let t = Instant::now();
            let resp = direct.get(&url).send().await.expect("send");
            let body = resp.bytes().await.expect("body");
            let d2 = t.elapsed();
            assert_eq!(&body[..], BODY.as_bytes());
            if i >= calls / 10 {
                through.push(d1);
                bare.push(d2);
            }
        }
        let (t50, t99) = (pct(&mut through, 0.5), pct(&mut through, 0.99));
        let (b50, b99) = (pct(&mut bare, 0.5), pct(&mut bare, 0.99));
        println!("## 1. An http tool call vs the same GET with reqwest ({calls} each, interleaved)\n");
        println!("| | p50 | p99 |\n|---|---|---|");
        println!("| reqwest directly | {} | {} |", ms(b50), ms(b99));
        println!("| http tool through the engine | {} | {} |", ms(t50), ms(t99));
        println!(
            "\nThe tool adds {} at p50 ({:.2}× the direct request).\n",
            ms(t50.saturating_sub(b50)),
            t50.as_secs_f64() / b50.as_secs_f64()
        );
    });

    let spec = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "../toolsmith/tests/upstream/node_modules/@octokit/openapi/generated/api.github.com.json",
    );
    println!("## 2. Importing GitHub's OpenAPI description\n");
    let Ok(text) = std::fs::read_to_string(&spec) else {
        println!(
            "(skipped: {} is missing; run `npm ci` in crates/toolsmith/tests/upstream)",
            spec.display()
        );
        return;
    };
    let mut best = Duration::MAX;
    let mut last = None;
    for _ in 0..3 {
        let t = Instant::now();
        let doc = toolsmith_core::openapi::parse_document(&text).expect("parse");
        let imported =
            toolsmith_core::openapi::import(&doc, &Default::default(), &TextSource(String::new()))
                .expect("import");
        best = best.min(t.elapsed());
        last = Some(imported);
    }
    let imported = last.expect("imported");
    println!(
        "{} MiB of JSON: {} tools, {} skipped, {} notes, in {} (parse, map, check every tool; best of 3)",
        text.len() / (1024 * 1024),
        imported.tools.len(),
        imported.skipped.len(),
        imported.notes.len(),
        ms(best)
    );
}
