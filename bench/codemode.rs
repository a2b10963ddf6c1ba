//! Code mode (issue 39) on the real `toolsmith serve` (SQLite, `--no-cgroups`) with GitHub's
//! REST API imported from `@octokit/openapi` (1,186 tools) and one local tool. Measures, side
//! by side in one run:
//! - **context**: what a model is given — the full `tools/list` (every page's tools), search
//!   mode (its two tools and the `search_tools` answers a task needs) and code mode (its two
//!   tools and the same searches, answered as Python functions) — counted with a real
//!   tokenizer offline (npm `gpt-tokenizer`, o200k_base: `tests/upstream/count_tokens.mjs`);
//! - **latency**: 10 sequential `tools/call` of a local tool from an MCP client, against one
//!   `run_code` whose program makes the same 10 calls sequentially and with `asyncio.gather`,
//!   and an empty program; p50 and p99 over `BENCH_N` rounds, interleaved.
//!
//! Run with `cargo bench -p toolsmith --bench codemode` (needs `npm ci` in
//! `crates/toolsmith/tests/upstream` and node).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

#[path = "common.rs"]
mod common;

use common::{Killed, env, free_port, ms, pct};

/// The searches of the task: list a repository's open issues, comment on one, label it.
const QUERIES: [&str; 3] = [
    "list repository issues",
    "create issue comment",
    "add labels to an issue",
];
/// Matches per search.
const LIMIT: u64 = 5;
const TOKEN: &str = "root-secret-1";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn upstream_dir() -> PathBuf {
    repo().join("crates/toolsmith/tests/upstream")
}

struct Client {
    agent: ureq::Agent,
    url: String,
}

impl Client {
    /// One 2026-07-28 request to `/mcp{path}`: its result.
    fn ask(&self, path: &str, method: &str, mut params: Value) -> Value {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
        });
        let name = params["name"].as_str().unwrap_or_default().to_owned();
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let req = ureq::http::Request::builder()
            .method("POST")
            .uri(format!("{}{path}", self.url))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method)
            .header("mcp-name", name)
            .header("authorization", format!("Bearer {TOKEN}"))
            .body(body.to_string().into_bytes())
            .expect("request");
        let mut resp = self.agent.run(req).expect("send");
        let text = resp.body_mut().read_to_string().expect("body");
        let json_text = text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .next_back()
            .unwrap_or(&text)
            .trim()
            .to_owned();
        let v: Value = serde_json::from_str(&json_text).expect("json");
        assert!(v["error"].is_null(), "{method}: {v}");
        v["result"].clone()
    }

    /// Every page of `tools/list` at `/mcp{path}`: the tools, as a model is given them.
    fn tools(&self, path: &str) -> Vec<Value> {
        let (mut all, mut cursor) = (Vec::new(), None::<String>);
        loop {
            let params = cursor.map_or(json!({}), |c| json!({"cursor": c}));
            let page = self.ask(path, "tools/list", params);
            all.extend(page["tools"].as_array().cloned().unwrap_or_default());
            match page["nextCursor"].as_str() {
                Some(c) => cursor = Some(c.to_owned()),
                None => return all,
            }
        }
    }

    fn call(&self, path: &str, tool: &str, arguments: Value) -> Value {
        self.ask(
            path,
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
        )
    }
}

/// Tokens of each text (o200k_base).
fn count_tokens(dir: &Path, texts: &[(&str, String)]) -> Vec<u64> {
    let files: Vec<PathBuf> = texts
        .iter()
        .enumerate()
        .map(|(i, (_, text))| {
            let f = dir.join(format!("text-{i}.txt"));
            std::fs::write(&f, text).expect("write");
            f
        })
        .collect();
    let out = Command::new("node")
        .arg(upstream_dir().join("count_tokens.mjs"))
        .args(&files)
        .output()
        .expect("node (count_tokens.mjs)");
    assert!(
        out.status.success(),
        "count_tokens.mjs: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let counts: Vec<u64> = serde_json::from_slice(&out.stdout).expect("counts");
    assert_eq!(counts.len(), texts.len());
    counts
}

fn main() {
    let rounds = env("BENCH_N", 100) as usize;
    let spec = upstream_dir().join("node_modules/@octokit/openapi/generated/api.github.com.json");
    assert!(
        spec.exists(),
        "{}: run `npm ci` in crates/toolsmith/tests/upstream",
        spec.display()
    );
    let dir = tempfile::tempdir().expect("tempdir");
    // A catalog's paths are its folder's: the document is copied beside it.
    std::fs::copy(&spec, dir.path().join("github.json")).expect("copy the document");
    let file = dir.path().join("catalog.yaml");
    std::fs::write(
        &file,
        "toolsets:\n  - {name: search, include: {}, discovery: search}\n  - {name: code, include: {}, discovery: code}\n\
         tools:\n  - {name: yes, description: Lists the workspace., builtin: list_dir}\n\
         openapi:\n  - spec: github.json\n",
    )
    .expect("catalog");
    let port = free_port();
    let _server = Killed(
        Command::new(env!("CARGO_BIN_EXE_toolsmith"))
            .args([
                "serve",
                "--no-cgroups",
                "--addr",
                &format!("127.0.0.1:{port}"),
                "--token",
                &format!("root={TOKEN}"),
            ])
            .arg("--catalog")
            .arg(&file)
            .arg("--db")
            .arg(dir.path().join("registry.db"))
            .arg("--workspace")
            .arg(dir.path())
            .stderr(Stdio::null())
            .spawn()
            .expect("serve"),
        // (A catalog serve refuses ends it: it never listens, and that is said below.)
    );
    let client = Client {
        agent: ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into(),
        url: format!("http://127.0.0.1:{port}/mcp"),
    };
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "serve did not start"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    // Context.
    let full = client.tools("");
    println!(
        "toolsmith serve with GitHub's REST API imported: {} tools",
        full.len()
    );
    let search_tools = client.tools("/search");
    let code_tools = client.tools("/code");
    let answers = |path: &str| -> String {
        QUERIES
            .iter()
            .map(|q| {
                let r = client.call(path, "search_tools", json!({"query": q, "limit": LIMIT}));
                r["content"][0]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let search_text = format!(
        "{}\n{}",
        Value::Array(search_tools.clone()),
        answers("/search")
    );
    let code_text = format!("{}\n{}", Value::Array(code_tools.clone()), answers("/code"));
    let texts = [
        ("full tools/list", Value::Array(full.clone()).to_string()),
        ("search mode: its 2 tools + 3 searches", search_text),
        ("code mode: its 2 tools + 3 searches", code_text),
    ];
    let tokens = count_tokens(dir.path(), &texts);
    println!("\n| what the model is given | bytes | tokens (o200k_base) | of the full list |");
    println!("|---|---|---|---|");
    for ((what, text), t) in texts.iter().zip(&tokens) {
        println!(
            "| {what} | {} | {t} | {:.2} % |",
            text.len(),
            *t as f64 * 100.0 / tokens[0] as f64
        );
    }

    // Latency: 10 calls from the client, against programs making them.
    let sequential = "from tools import yes\nfor _ in range(10):\n    yes()";
    let parallel = "import asyncio\nfrom tools import yes_async\nasync def main():\n    await asyncio.gather(*[yes_async() for _ in range(10)])\nasyncio.run(main())";
    let run = |code: &str| {
        let r = client.call("/code", "run_code", json!({"code": code}));
        assert_eq!(r["isError"], false, "{r}");
    };
    for _ in 0..5 {
        run(sequential);
        run(parallel);
    }
    let mut times: [Vec<Duration>; 4] = Default::default();
    for _ in 0..rounds {
        let t = Instant::now();
        for _ in 0..10 {
            let r = client.call("", "yes", json!({}));
            assert_eq!(r["isError"], false, "{r}");
        }
        times[0].push(t.elapsed());
        for (i, code) in [sequential, parallel, "1"].iter().enumerate() {
            let t = Instant::now();
            run(code);
            times[i + 1].push(t.elapsed());
        }
    }
    let base = pct(&mut times[0], 0.5);
    println!("\n| {rounds} rounds, interleaved | p50 | p99 | against 10 client calls at p50 |");
    println!("|---|---|---|---|");
    for (what, t) in [
        "10 sequential tools/call from an MCP client",
        "run_code: 10 sequential calls",
        "run_code: 10 calls with asyncio.gather",
        "run_code: an empty program (`1`)",
    ]
    .iter()
    .zip(times.iter_mut())
    {
        let p50 = pct(t, 0.5);
        let diff = p50.as_secs_f64() * 1000.0 - base.as_secs_f64() * 1000.0;
        println!(
            "| {what} | {} | {} | {diff:+.3} ms |",
            ms(p50),
            ms(pct(t, 0.99))
        );
    }
}
