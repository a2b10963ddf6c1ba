//! Code mode (issue 39) on the real `toolsmith serve` (SQLite; cgroups as it runs by default,
//! none with `BENCH_NO_CGROUPS=1`) with GitHub's
//! REST API imported from `@octokit/openapi` (1,186 tools) and one local tool. Measures, side
//! by side in one run:
//! - **context**: what a model is given — the full `tools/list` (every page's tools), search
//!   mode (its two tools and the `search_tools` answers a task needs) and code mode (its two
//!   tools and the same searches, answered as Python functions) — counted with a real
//!   tokenizer offline (npm `gpt-tokenizer`, o200k_base: `tests/upstream/count_tokens.mjs`);
//! - **latency**: 10 sequential `tools/call` of a local tool from an MCP client, against one
//!   `run_code` whose program makes the same 10 calls sequentially and with `asyncio.gather`,
//!   and an empty program; p50 and p99 over `BENCH_N` rounds, interleaved;
//! - **against FastMCP's code mode** (`fastmcp_codemode.py`: FastMCP 4.1.6 with the same
//!   document imported by `FastMCP.from_openapi`, the same local tool, the experimental
//!   `CodeMode` transform running programs in `pydantic-monty`), served beside it and asked by
//!   the same client: the context its discovery takes for the same task, the same latencies
//!   (interleaved with toolsmith's), and which of a set of ordinary programs each one runs.
//!
//! Run with `cargo bench -p toolsmith --bench codemode` (needs `npm ci` in
//! `crates/toolsmith/tests/upstream` and node; for FastMCP's leg, `$TOOLSMITH_TEST_PYTHON`
//! (else `python3`) with `fastmcp` and `pydantic-monty` — without them the leg says it was not
//! measured and why).

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

/// The Python that runs FastMCP's leg, when it has `fastmcp` and `pydantic_monty`; else why not.
fn fastmcp_python() -> Result<String, String> {
    let python = std::env::var("TOOLSMITH_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let out = Command::new(&python)
        .args(["-c", "import fastmcp, pydantic_monty"])
        .output()
        .map_err(|e| format!("{python}: {e}"))?;
    match out.status.success() {
        true => Ok(python),
        false => Err(format!(
            "{python} cannot import fastmcp and pydantic_monty: {}",
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or_default()
        )),
    }
}

/// Waits for a listener on `port`.
fn listening(port: u16, what: &str) {
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "{what} did not start"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The text of a tool result's first content block.
fn text_of(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Ordinary programs, each as toolsmith's `run_code` and FastMCP's `execute` take it (the
/// value is the last expression in one, `return`ed in the other), to see which each runs.
const PROGRAMS: [(&str, &str); 10] = [
    (
        "json, re",
        "import json, re\njson.dumps(re.findall(r'\\d+', 'a1b22'))",
    ),
    (
        "datetime",
        "import datetime\nstr(datetime.date(2026, 1, 1) + datetime.timedelta(days=40))",
    ),
    (
        "a class",
        "class Point:\n    def __init__(self, x):\n        self.x = x\nPoint(3).x",
    ),
    (
        "a dataclass",
        "from dataclasses import dataclass\n@dataclass\nclass P:\n    x: int\nP(2).x",
    ),
    (
        "collections.Counter",
        "import collections\ncollections.Counter('abracadabra').most_common(1)[0][0]",
    ),
    (
        "statistics",
        "import statistics\nstatistics.median([3, 1, 2])",
    ),
    (
        "itertools",
        "import itertools\nlen(list(itertools.combinations(range(6), 2)))",
    ),
    (
        "decimal",
        "from decimal import Decimal\nstr(Decimal('0.1') + Decimal('0.2'))",
    ),
    (
        "hashlib",
        "import hashlib\nhashlib.sha256(b'x').hexdigest()[:8]",
    ),
    (
        "csv + io",
        "import csv, io\nlist(csv.reader(io.StringIO('a,b\\n1,2')))[1]",
    ),
];

/// `program` as FastMCP's `execute` takes it: its last line `return`ed.
fn returning(program: &str) -> String {
    match program.rsplit_once('\n') {
        Some((head, last)) => format!("{head}\nreturn {last}"),
        None => format!("return {program}"),
    }
}

/// The names a FastMCP `search` answer (brief) lists: its `- name: description` lines.
fn listed_names(answer: &str) -> Vec<String> {
    answer
        .lines()
        .filter_map(|l| l.strip_prefix("- "))
        .filter_map(|l| l.split_once(": ").map(|(name, _)| name))
        .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .map(str::to_owned)
        .collect()
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
         \x20 - {name: noop, description: Nothing., script: {interpreter: python3, source: \"print(1)\\n\"}, sandbox: {preset: read-only, network: none}}\n\
         openapi:\n  - spec: github.json\n",
    )
    .expect("catalog");
    let port = free_port();
    let _server = Killed(
        Command::new(env!("CARGO_BIN_EXE_toolsmith"))
            .args([
                "serve",
                "--addr",
                &format!("127.0.0.1:{port}"),
                "--token",
                &format!("root={TOKEN}"),
            ])
            // `serve` as it runs by default (cgroups where the machine has them); with
            // BENCH_NO_CGROUPS=1, without (every program then gets a new working folder, so
            // its Landlock ruleset is built anew: bench/README.md).
            .args(
                std::env::var_os("BENCH_NO_CGROUPS")
                    .is_some()
                    .then_some("--no-cgroups"),
            )
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
    listening(port, "serve");
    // FastMCP's code mode beside it, asked by the same client.
    // Two of them: with GitHub's tools (the context, and what one call costs among them),
    // and with the local tool alone (the latencies: FastMCP reads its whole catalog on every
    // call, ~2.5 s with GitHub's, which would drown the code mode's own cost).
    let start_fastmcp = |python: &str, document: Option<&Path>| {
        let port = free_port();
        let mut command = Command::new(python);
        command
            .arg(repo().join("bench/fastmcp_codemode.py"))
            .arg(port.to_string());
        if let Some(document) = document {
            command.arg(document);
        }
        let child = command
            .current_dir(dir.path())
            .stderr(Stdio::null())
            .spawn()
            .expect("fastmcp_codemode.py");
        let child = Killed(child);
        listening(port, "fastmcp_codemode.py");
        let client = Client {
            agent: client.agent.clone(),
            url: format!("http://127.0.0.1:{port}/mcp"),
        };
        (child, client)
    };
    let fastmcp = match fastmcp_python() {
        Ok(python) => Some((
            start_fastmcp(&python, Some(&spec)),
            start_fastmcp(&python, None),
        )),
        Err(why) => {
            println!("FastMCP's code mode: not measured ({why})");
            None
        }
    };
    let fm_github = fastmcp.as_ref().map(|((_, c), _)| c);
    let fm = fastmcp.as_ref().map(|(_, (_, c))| c);

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
    let mut texts = vec![
        ("full tools/list", Value::Array(full.clone()).to_string()),
        ("search mode: its 2 tools + 3 searches", search_text),
        ("code mode: its 2 tools + 3 searches", code_text),
    ];
    // How many tools FastMCP serves (its searches say "5 of N tools").
    let mut fm_count = String::from("?");
    if let Some(fm) = fm_github {
        // Its progressive disclosure: `search` (brief: names and descriptions), then
        // `get_schema` (detailed) of each search's first match, which the task calls.
        let mut text = Value::Array(fm.tools("")).to_string();
        let mut chosen = Vec::new();
        for q in QUERIES {
            let answer = text_of(&fm.call("", "search", json!({"query": q, "limit": LIMIT})));
            chosen.extend(listed_names(&answer).into_iter().take(1));
            if let Some(n) = answer
                .split_once(" of ")
                .and_then(|(_, rest)| rest.split_once(" tools"))
            {
                fm_count = n.0.to_owned();
            }
            text.push('\n');
            text.push_str(&answer);
        }
        assert_eq!(
            chosen.len(),
            QUERIES.len(),
            "FastMCP's searches named no tool"
        );
        text.push('\n');
        text.push_str(&text_of(&fm.call(
            "",
            "get_schema",
            json!({"tools": chosen}),
        )));
        texts.push((
            "FastMCP CodeMode: its 3 tools + 3 searches + get_schema of 3",
            text,
        ));
    }
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
    // FastMCP's programs: `call_tool(name, params)`, awaited, the value `return`ed.
    let fm_sequential = "for _ in range(10):\n    await call_tool('yes', {})\nreturn 1";
    let fm_parallel = "import asyncio\nawait asyncio.gather(*[call_tool('yes', {}) for _ in range(10)])\nreturn 1";
    let execute = |fm: &Client, code: &str| {
        let r = fm.call("", "execute", json!({"code": code}));
        assert_eq!(r["isError"], false, "{r}");
    };
    if let Some(fm) = fm {
        for _ in 0..5 {
            execute(fm, fm_sequential);
            execute(fm, fm_parallel);
        }
    }
    let ten_calls = |c: &Client| {
        let t = Instant::now();
        for _ in 0..10 {
            let r = c.call("", "yes", json!({}));
            assert_eq!(r["isError"], false, "{r}");
        }
        t.elapsed()
    };
    let mut times: [Vec<Duration>; 9] = Default::default();
    for _ in 0..rounds {
        times[0].push(ten_calls(&client));
        let t = Instant::now();
        let r = client.call("", "noop", json!({}));
        assert_eq!(r["isError"], false, "{r}");
        times[8].push(t.elapsed());
        for (i, code) in [sequential, parallel, "1"].iter().enumerate() {
            let t = Instant::now();
            run(code);
            times[i + 1].push(t.elapsed());
        }
        if let Some(fm) = fm {
            times[4].push(ten_calls(fm));
            for (i, code) in [fm_sequential, fm_parallel, "return 1"].iter().enumerate() {
                let t = Instant::now();
                execute(fm, code);
                times[i + 5].push(t.elapsed());
            }
        }
    }
    println!("\n| {rounds} rounds, interleaved | p50 | p99 | against its 10 client calls at p50 |");
    println!("|---|---|---|---|");
    let rows = [
        "toolsmith: 10 sequential tools/call from an MCP client",
        "toolsmith run_code: 10 sequential calls",
        "toolsmith run_code: 10 calls with asyncio.gather",
        "toolsmith run_code: an empty program (`1`)",
        "FastMCP: 10 sequential tools/call from an MCP client",
        "FastMCP execute: 10 sequential calls",
        "FastMCP execute: 10 calls with asyncio.gather",
        "FastMCP execute: an empty program (`return 1`)",
    ];
    let (times, warm) = times.split_at_mut(8);
    for (names, ts) in rows.chunks(4).zip(times.chunks_mut(4)) {
        if ts[0].is_empty() {
            continue;
        }
        let base = pct(&mut ts[0], 0.5);
        for (what, t) in names.iter().zip(ts.iter_mut()) {
            let p50 = pct(t, 0.5);
            let diff = p50.as_secs_f64() * 1000.0 - base.as_secs_f64() * 1000.0;
            println!(
                "| {what} | {} | {} | {diff:+.3} ms |",
                ms(p50),
                ms(pct(t, 0.99))
            );
        }
    }
    // What any warm Python tool with run_code's sandbox costs: the floor under a program.
    println!(
        "| toolsmith: one warm script tool doing nothing, run_code's sandbox (read-only, no network) | {} | {} | |",
        ms(pct(&mut warm[0], 0.5)),
        ms(pct(&mut warm[0], 0.99))
    );

    // One call among GitHub's tools.
    if let Some(fm_github) = fm_github {
        let one = |c: &Client| {
            let mut t: Vec<Duration> = (0..5)
                .map(|_| {
                    let t = Instant::now();
                    let r = c.call("", "yes", json!({}));
                    assert_eq!(r["isError"], false, "{r}");
                    t.elapsed()
                })
                .collect();
            pct(&mut t, 0.5)
        };
        println!(
            "\n| one tools/call of the local tool beside GitHub's tools, p50 of 5 | |\n|---|---|"
        );
        println!(
            "| toolsmith ({} tools) | {} |",
            full.len(),
            ms(one(&client))
        );
        println!("| FastMCP ({fm_count} tools) | {} |", ms(one(fm_github)));
        // A program making that one call: FastMCP's `call_tool` reads the whole catalog.
        let t = Instant::now();
        run("from tools import yes\nyes()");
        println!(
            "| toolsmith run_code: a program making that call (one run) | {} |",
            ms(t.elapsed())
        );
        let t = Instant::now();
        execute(fm_github, "await call_tool('yes', {})\nreturn 1");
        println!(
            "| FastMCP execute: a program making that call (one run) | {} |",
            ms(t.elapsed())
        );
    }

    // What each runs.
    if let Some(fm) = fm {
        println!("\n| program | toolsmith run_code (CPython) | FastMCP execute (Monty) |");
        println!("|---|---|---|");
        let verdict = |r: &Value| match r["isError"].as_bool() {
            Some(false) => format!("runs: `{}`", text_of(r).trim().replace('\n', " ")),
            _ => format!(
                "fails: {}",
                text_of(r)
                    .lines()
                    .rfind(|l| !l.trim().is_empty())
                    .unwrap_or_default()
                    .trim()
            ),
        };
        for (what, program) in PROGRAMS {
            let ours = client.call("/code", "run_code", json!({"code": program}));
            let theirs = fm.call("", "execute", json!({"code": returning(program)}));
            println!("| {what} | {} | {} |", verdict(&ours), verdict(&theirs));
        }
    }
}
