//! A minimal MCP JSON-RPC client for the benchmarks (`mcp.rs`, `federation.rs`): the same
//! driver for every server measured, so that the client's own cost stays small and equal —
//! requests over Streamable HTTP (stateless, JSON or one SSE event back) or a child's
//! stdin/stdout (answers matched to requests by id, so many may be in flight).

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub const PROTOCOL: &str = "2025-11-25";

/// One measured server: how to send a request and wait for its answer.
pub trait Transport: Sync {
    fn request(&self, body: &Value) -> Value;
}

pub struct Http {
    url: String,
    agent: ureq::Agent,
}

impl Http {
    pub fn new(url: String) -> Self {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        Self { url, agent }
    }
}

impl Transport for Http {
    fn request(&self, body: &Value) -> Value {
        let mut r = self
            .agent
            .post(&self.url)
            .header("authorization", super::common::bearer())
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", PROTOCOL)
            .content_type("application/json")
            .send(body.to_string())
            .expect("request");
        let text = r.body_mut().read_to_string().expect("body");
        // JSON, or one SSE event carrying it.
        let json = text
            .lines()
            .find_map(|l| l.strip_prefix("data:"))
            .unwrap_or(&text);
        serde_json::from_str(json.trim()).unwrap_or_else(|e| panic!("{e}: {text}"))
    }
}

/// JSON-RPC over a child's stdin/stdout; answers are matched to requests by id.
pub struct StdioRpc {
    stdin: Mutex<ChildStdin>,
    pending: Mutex<std::collections::HashMap<u64, std::sync::mpsc::Sender<Value>>>,
    next: AtomicUsize,
}

impl StdioRpc {
    pub fn start(child: &mut Child) -> Arc<Self> {
        let me = Arc::new(Self {
            stdin: Mutex::new(child.stdin.take().expect("stdin")),
            pending: Mutex::default(),
            next: AtomicUsize::new(1_000_000),
        });
        let stdout: ChildStdout = child.stdout.take().expect("stdout");
        let reader = me.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                let Ok(v) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                if let Some(id) = v["id"].as_u64()
                    && let Some(tx) = reader.pending.lock().expect("lock").remove(&id)
                {
                    let _ = tx.send(v);
                }
            }
        });
        me.send_only(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}), Some(0))
            .recv_timeout(Duration::from_secs(30))
            .expect("initialize");
        me.write(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        me
    }

    pub fn write(&self, v: &Value) {
        let mut stdin = self.stdin.lock().expect("lock");
        writeln!(stdin, "{v}").expect("write");
        stdin.flush().expect("flush");
    }

    pub fn send_only(&self, v: &Value, id: Option<u64>) -> std::sync::mpsc::Receiver<Value> {
        let (tx, rx) = std::sync::mpsc::channel();
        if let Some(id) = id {
            self.pending.lock().expect("lock").insert(id, tx);
        }
        self.write(v);
        rx
    }
}

impl Transport for StdioRpc {
    fn request(&self, body: &Value) -> Value {
        let id = self.next.fetch_add(1, Ordering::Relaxed) as u64;
        let mut body = body.clone();
        body["id"] = json!(id);
        self.send_only(&body, Some(id))
            .recv_timeout(Duration::from_secs(60))
            .expect("answer")
    }
}

/// Waits until something listens at `url` (and a moment more for it to settle).
pub fn wait_http(url: &str) {
    let started = Instant::now();
    while std::net::TcpStream::connect(
        url.trim_start_matches("http://")
            .split('/')
            .next()
            .unwrap_or_default(),
    )
    .is_err()
    {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{url} did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
}
