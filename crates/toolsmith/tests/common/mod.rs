//! Helpers shared by the test binaries that run `toolsmith serve` as a real process.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub const BIN: &str = env!("CARGO_BIN_EXE_toolsmith");

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A running `serve`, killed when dropped.
pub struct Serve(pub Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `toolsmith serve` on a free port with `db` and `workspace` (its working folder too) and
/// `extra` arguments; returns it with its REST and MCP URLs, read from what it printed.
pub fn serve(db: &str, workspace: &Path, extra: &[&str]) -> (Serve, String, String) {
    start_serve(db, workspace, &[&["--no-cgroups"], extra].concat(), None)
}

/// The same with cgroups on (tests of what a server leaves behind).
pub fn serve_contained(db: &str, workspace: &Path, extra: &[&str]) -> (Serve, String, String) {
    start_serve(db, workspace, extra, None)
}

/// `serve` with `TMPDIR` set to `tmp`: what it keeps under the temporary folder (scripts,
/// working folders, its sessions' ledger) is seen only by servers given the same folder.
pub fn serve_in_tmp(
    db: &str,
    workspace: &Path,
    extra: &[&str],
    tmp: &Path,
) -> (Serve, String, String) {
    start_serve(db, workspace, extra, Some(tmp))
}

fn start_serve(
    db: &str,
    workspace: &Path,
    extra: &[&str],
    tmp: Option<&Path>,
) -> (Serve, String, String) {
    let mut command = Command::new(BIN);
    if let Some(tmp) = tmp {
        command.env("TMPDIR", tmp);
    }
    let mut child = command
        .args(["serve", "--addr", "127.0.0.1:0"])
        .args(["--db", db])
        .arg("--workspace")
        .arg(workspace)
        .args(extra)
        .current_dir(workspace)
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn serve");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let (rest, mcp) = read_addresses(&mut lines);
    // What the server says after start (a panic in a connection's task, a warning) goes to
    // the test's captured output: shown when the test fails, silent when it passes; and is
    // kept for [`serve_log`].
    let base = rest.clone();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            eprintln!("serve: {line}");
            let mut logs = SERVE_LOGS.lock().unwrap_or_else(|e| e.into_inner());
            let log = match logs.iter_mut().find(|(b, _)| *b == base) {
                Some((_, log)) => log,
                None => {
                    logs.push((base.clone(), String::new()));
                    &mut logs.last_mut().expect("pushed").1
                }
            };
            log.push_str(&line);
            log.push('\n');
        }
    });
    (Serve(child), rest, mcp)
}

/// What each `serve` started here logged after its start, by its REST base.
static SERVE_LOGS: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());

/// What the `serve` at `base` (its REST base) has logged since it started.
pub fn serve_log(base: &str) -> String {
    SERVE_LOGS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|(b, _)| b == base)
        .map(|(_, log)| log.clone())
        .unwrap_or_default()
}

/// Reads what `serve` prints at start up to the web UI's address: its REST and MCP URLs, and
/// its local admin token when it was given no token ([`local_token`] knows it from then on).
pub fn read_addresses(
    lines: &mut impl Iterator<Item = std::io::Result<String>>,
) -> (String, String) {
    let mut urls = None;
    let mut said = String::new();
    loop {
        let line = lines
            .next()
            .unwrap_or_else(|| panic!("serve ended before printing its addresses: {said}"))
            .expect("line");
        said.push_str(&line);
        said.push('\n');
        if let Some(after) = line.split("REST API on ").nth(1) {
            let mut words = after.split_whitespace();
            let rest = words.next().expect("rest url").to_owned();
            let mcp = after
                .split("MCP on ")
                .nth(1)
                .and_then(|s| s.split_whitespace().next())
                .expect("mcp url")
                .to_owned();
            urls = Some((rest, mcp));
        }
        if let Some(ui) = line.split("web UI: ").nth(1) {
            if let Some((url, token)) = ui.trim().split_once("/#token=") {
                remember_token(url, token.trim_matches('"'));
            }
            break;
        }
    }
    urls.expect("serve printed its REST address before the UI's")
}

/// The local admin tokens of the servers started here without tokens, by `host:port`.
static LOCAL_TOKENS: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());

/// The `Authorization` value for a server started here without tokens (its local admin
/// token; empty for any other, which a server reads as no token).
pub fn bearer(url: &str) -> String {
    local_token(url)
        .map(|t| format!("Bearer {t}"))
        .unwrap_or_default()
}

/// `host:port` of an `http://` URL.
fn authority(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.split('/').next().unwrap_or(rest)
}

/// Remembers the token requests to `url`'s server carry when a test gives none: the local
/// admin token a server printed (`web UI: URL/#token=...`), or the token of replicas.
pub fn remember_token(url: &str, token: &str) {
    LOCAL_TOKENS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((authority(url).to_owned(), token.to_owned()));
}

/// The local admin token of the server `url` points at, if it was started here without
/// tokens: what a client of such a server presents (the web UI takes it from the address).
pub fn local_token(url: &str) -> Option<String> {
    let at = authority(url);
    LOCAL_TOKENS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .rev()
        .find(|(a, _)| a == at)
        .map(|(_, t)| t.clone())
}

/// Processes whose environment holds `marker` (a unique `NAME=value` set for one test).
pub fn processes_with(marker: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(env) = std::fs::read(entry.path().join("environ"))
            && env.split(|b| *b == 0).any(|v| v == marker.as_bytes())
        {
            out.push(pid);
        }
    }
    out
}

/// One REST request; the status and the body (JSON, or the text as a string).
pub fn request(method: &str, url: &str, body: Option<Value>) -> (u16, Value) {
    request_as(method, url, body, None)
}

/// [`request`] with a bearer token.
pub fn request_as(
    method: &str,
    url: &str,
    body: Option<Value>,
    token: Option<&str>,
) -> (u16, Value) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .into();
    let mut req = ureq::http::Request::builder()
        .method(method)
        .uri(url)
        .header("content-type", "application/json");
    let local = token.is_none().then(|| local_token(url)).flatten();
    if let Some(token) = token.or(local.as_deref()) {
        req = req.header("authorization", format!("Bearer {token}"));
    }
    let req = req
        .body(body.map(|b| b.to_string()).unwrap_or_default().into_bytes())
        .expect("request");
    let mut resp = agent.run(req).expect("send");
    let status = resp.status().as_u16();
    let text = resp.body_mut().read_to_string().unwrap_or_default();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

pub fn get(base: &str, path: &str) -> Value {
    let (status, v) = request("GET", &format!("{base}{path}"), None);
    assert_eq!(status, 200, "GET {path}: {v}");
    v
}

/// Calls `tool` (confirmed) over REST; returns the ToolResult.
pub fn call(base: &str, tool: &str, arguments: Value) -> Value {
    let (status, v) = request(
        "POST",
        &format!("{base}/tools/{tool}/call"),
        Some(json!({"arguments": arguments, "confirm": true})),
    );
    assert_eq!(status, 200, "{tool}: {v}");
    v
}

/// The kind of a failed ToolResult.
pub fn error_kind(r: &Value) -> String {
    assert_eq!(r["success"], false, "{r}");
    r["error"]["kind"].as_str().unwrap_or_default().to_owned()
}

/// Runs `toolsmith args` with `env` added (in `dir` if given): whether it succeeded, its
/// stdout and its stderr.
pub fn toolsmith(
    args: &[&str],
    env: &[(&str, &str)],
    dir: Option<&Path>,
) -> (bool, String, String) {
    let mut command = Command::new(BIN);
    command.args(args).envs(env.iter().copied());
    if let Some(dir) = dir {
        command.current_dir(dir);
    }
    let o = command.output().expect("run toolsmith");
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The Python with the official MCP client (`TOOLSMITH_TEST_PYTHON`).
pub fn python() -> String {
    std::env::var("TOOLSMITH_TEST_PYTHON").expect(
        "TOOLSMITH_TEST_PYTHON must name the python of a virtual environment with .ci/requirements.txt (.ci/run sets it)",
    )
}

/// Runs `tests/mcp_client.py` with `args`; it must print `ok` last.
pub fn mcp_client(python: &str, args: &[&str]) {
    let o = mcp_client_command(python, args)
        .output()
        .expect("run the Python MCP client");
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    eprintln!("{out}");
    assert!(
        o.status.success() && out.trim_end().ends_with("ok"),
        "the MCP client failed:\n{out}\n{err}"
    );
}

/// `python tests/mcp_client.py args`. A server started here without tokens asks for its
/// local admin token: the client sends it on every request (`TOOLSMITH_TEST_BEARER`).
pub fn mcp_client_command(python: &str, args: &[&str]) -> Command {
    let mut command = Command::new(python);
    if let Some(token) = args
        .iter()
        .filter(|a| a.starts_with("http"))
        .find_map(|a| local_token(a))
    {
        command.env("TOOLSMITH_TEST_BEARER", token);
    }
    command
        .arg(repo().join("crates/toolsmith/tests/mcp_client.py"))
        .args(args);
    command
}

/// One JSON-RPC request to an MCP endpoint; status and JSON.
pub fn post_mcp(url: &str, body: Value, token: Option<&str>) -> (u16, Value) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut req = ureq::http::Request::builder()
        .method("POST")
        .uri(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18");
    let local = token.is_none().then(|| local_token(url)).flatten();
    if let Some(t) = token.or(local.as_deref()) {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    let mut resp = agent
        .run(req.body(body.to_string().into_bytes()).expect("request"))
        .expect("send");
    let status = resp.status().as_u16();
    let text = resp.body_mut().read_to_string().unwrap_or_default();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// Imports each catalog file into the registry `db` with `toolsmith import`.
pub fn import_all(db: &str, files: &[PathBuf]) {
    for file in files {
        let o = Command::new(BIN)
            .arg("import")
            .arg(file)
            .args(["--db", db])
            .output()
            .expect("import");
        assert!(
            o.status.success(),
            "import {}: {}",
            file.display(),
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// A registry address on the test PostgreSQL (`TOOLSMITH_TEST_POSTGRES`) in a schema of its
/// own (`prefix` and this process's id), created and migrated first, so replicas started on
/// it one after another share it.
pub fn postgres_registry(prefix: &str) -> String {
    let url = std::env::var("TOOLSMITH_TEST_POSTGRES")
        .expect("TOOLSMITH_TEST_POSTGRES must name a PostgreSQL database (.ci/run sets it)");
    let schema = format!("{prefix}_{}", std::process::id());
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(toolsmith_store::postgres::PgStore::open_in_schema(
            &url,
            Some(&schema),
        ))
        .expect("schema");
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}options[search_path]={schema}")
}

/// The OTLP/HTTP receiver of the trace tests (`otlp_receiver.py`): its process, its address,
/// the file it writes spans to (one JSON object per line).
pub struct Receiver {
    pub child: Child,
    pub url: String,
    pub spans: PathBuf,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the receiver, writing spans under `dir`.
pub fn otlp_receiver(dir: &Path) -> Receiver {
    let spans = dir.join("spans.jsonl");
    let mut child = Command::new(python())
        .arg(repo().join("crates/toolsmith/tests/otlp_receiver.py"))
        .arg(&spans)
        .stdout(Stdio::piped())
        .spawn()
        .expect("the OTLP receiver");
    let mut port = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut port)
        .expect("its port");
    Receiver {
        child,
        url: format!("http://127.0.0.1:{}", port.trim()),
        spans,
    }
}

/// The spans the receiver wrote so far.
pub fn read_spans(file: &Path) -> Vec<Value> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("span"))
        .collect()
}

// ---- Python upstreams and 2026-07-28 requests -------------------------------------------

/// A Python upstream on a free port, killed when dropped.
pub struct Upstream(pub Child, pub u16);

impl Drop for Upstream {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// The conformance fixture upstream (`tests/conformance/upstream.py`, the official Python SDK).
pub fn fixture(python: &str) -> Upstream {
    listening(python, "conformance/upstream.py", "the fixture upstream")
}

/// The Python server `script` (under `crates/toolsmith/tests`, given its port) once it listens.
pub fn listening(python: &str, script: &str, what: &str) -> Upstream {
    listening_with(python, script, what, &[])
}

/// [`listening`] with `env` added to its environment.
pub fn listening_with(python: &str, script: &str, what: &str, env: &[(&str, &str)]) -> Upstream {
    let port = free_port();
    let child = Command::new(python)
        .arg(repo().join("crates/toolsmith/tests").join(script))
        .arg(port.to_string())
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("start {what}: {e}"));
    let up = Upstream(child, port);
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{what} did not listen within 60 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    up
}

/// One 2026-07-28 request (per-request `_meta`, the protocol header) as `token`; the HTTP
/// status and the JSON-RPC answer.
pub fn ask(url: &str, token: &str, method: &str, params: Value, caps: Value) -> (u16, Value) {
    ask_with(url, token, method, params, caps, &[])
}

/// The same with more HTTP headers.
pub fn ask_with(
    url: &str,
    token: &str,
    method: &str,
    params: Value,
    caps: Value,
    headers: &[(&str, &str)],
) -> (u16, Value) {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": {"name": "relay-test", "version": "1"},
    });
    // What Mcp-Name carries: a tool's or prompt's name, a resource's URI, a task's id.
    let name = (params["name"].as_str())
        .or(params["uri"].as_str())
        .or(params["taskId"].as_str())
        .unwrap_or_default()
        .to_owned();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let req = ureq::http::Request::builder()
        .method("POST")
        .uri(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .header("mcp-name", name)
        .header("authorization", format!("Bearer {token}"));
    let req = headers
        .iter()
        .fold(req, |req, (name, value)| req.header(*name, *value))
        .body(body.to_string().into_bytes())
        .expect("request");
    let mut resp = agent.run(req).expect("send");
    let status = resp.status().as_u16();
    let text = resp.body_mut().read_to_string().unwrap_or_default();
    // An answer on an event stream: its last `data:` line.
    let json_text = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .next_back()
        .unwrap_or(&text)
        .trim()
        .to_owned();
    let answer = serde_json::from_str(&json_text).unwrap_or(Value::String(text));
    (status, answer)
}
