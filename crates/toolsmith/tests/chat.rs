//! `toolsmith chat` end to end: the real binary and its real HTTP client against a scripted
//! model — an axum server in this test that replays SSE transcripts (OpenAI Chat Completions
//! and Anthropic Messages) and records every request it gets. Only the model is scripted.

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

use common::BIN;

/// One scripted answer: status, extra headers, body.
#[derive(Clone)]
struct Reply {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: String,
}

fn sse(body: &str) -> Reply {
    Reply {
        status: 200,
        headers: vec![("content-type", "text/event-stream".into())],
        body: body.into(),
    }
}

#[derive(Default)]
struct Script {
    replies: Mutex<Vec<Reply>>,
    /// (headers, body) of each request, in order.
    seen: Mutex<Vec<(HeaderMap, Value)>>,
}

struct Model {
    addr: SocketAddr,
    script: Arc<Script>,
    _rt: tokio::runtime::Runtime,
}

impl Model {
    fn requests(&self) -> Vec<Value> {
        self.script
            .seen
            .lock()
            .expect("lock")
            .iter()
            .map(|(_, b)| b.clone())
            .collect()
    }

    fn headers(&self, n: usize) -> HeaderMap {
        self.script.seen.lock().expect("lock")[n].0.clone()
    }
}

/// A scripted model answering `replies` in order, on a port of its own.
fn model(replies: Vec<Reply>) -> Model {
    let script = Arc::new(Script {
        replies: Mutex::new(replies),
        seen: Mutex::default(),
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let s = script.clone();
    let handler = move |headers: HeaderMap, body: String| {
        let s = s.clone();
        async move {
            let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            s.seen.lock().expect("lock").push((headers, v));
            let mut replies = s.replies.lock().expect("lock");
            if replies.is_empty() {
                return (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "no more scripted replies",
                )
                    .into_response();
            }
            let r = replies.remove(0);
            let mut resp: Response =
                (StatusCode::from_u16(r.status).expect("status"), r.body).into_response();
            for (k, v) in r.headers {
                resp.headers_mut().insert(k, v.parse().expect("header"));
            }
            resp
        }
    };
    let app = Router::new()
        .route("/v1/chat/completions", post(handler.clone()))
        .route("/v1/messages", post(handler));
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    rt.spawn(async move { axum::serve(listener, app).await });
    Model {
        addr,
        script,
        _rt: rt,
    }
}

const CATALOG: &str = r#"
toolsets:
  - {name: quiet, include: {names: [list_dir, echo_*]}}
tools:
  - name: list_dir
    builtin: list_dir
  - name: delete_file
    description: Delete one file in the workspace.
    danger: dangerous
    command: [rm, -f]
    end_of_options: "--"
    working_dir: .
    parameters:
      - {name: path, workspace_path: true}
  - name: echo_args
    description: Echo the arguments back.
    script:
      source: |
        import json, sys
        print(json.dumps(json.load(sys.stdin)))
    parameters:
      - {name: count, type: integer}
      - {name: tags, type: array, items: string}
  - name: nap
    description: Sleep a long time.
    command: [sleep, "30.123"]
"#;

struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("catalog.yaml"), CATALOG).expect("catalog");
        std::fs::create_dir(dir.path().join("ws")).expect("ws");
        std::fs::write(dir.path().join("ws/tmp.txt"), "keep?").expect("file");
        std::fs::write(dir.path().join("ws/a.txt"), "a").expect("file");
        Self { dir }
    }

    fn ws(&self) -> std::path::PathBuf {
        self.dir.path().join("ws")
    }

    fn command(&self, m: &Model, provider: &str, args: &[&str]) -> Command {
        let catalog = self.dir.path().join("catalog.yaml");
        self.command_over(&["-c", catalog.to_str().expect("path")], m, provider, args)
    }

    /// The same, with the tools from `source` (`-c FILE` or `--db FILE`).
    fn command_over(&self, source: &[&str], m: &Model, provider: &str, args: &[&str]) -> Command {
        let base = match provider {
            "anthropic" => format!("http://{}", m.addr),
            _ => format!("http://{}/v1", m.addr),
        };
        let mut c = Command::new(BIN);
        c.arg("chat")
            .args(source)
            .args([
                "--provider",
                provider,
                "--base-url",
                &base,
                "--model",
                "test-model",
            ])
            .args([
                "--api-key-env",
                "TS_TEST_KEY",
                "--no-cgroups",
                "--workspace",
            ])
            .arg(self.ws())
            .args(args)
            .env("TS_TEST_KEY", "sk-test-secret-123")
            .env("XDG_DATA_HOME", self.dir.path().join("data"))
            .stdin(Stdio::null());
        c
    }

    fn run(&self, m: &Model, provider: &str, args: &[&str]) -> Output {
        self.command(m, provider, args).output().expect("run chat")
    }

    /// Runs chat (OpenAI) with `answers` on its stdin, as a user typing them.
    fn answered(&self, m: &Model, args: &[&str], answers: &[u8]) -> Output {
        use std::io::Write;
        let mut c = self.command(m, "openai", args);
        c.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().expect("spawn");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(answers)
            .expect("answers");
        child.wait_with_output().expect("wait")
    }

    /// Every line of every saved conversation.
    fn transcripts(&self) -> String {
        let dir = self.dir.path().join("data/toolsmith/chats");
        let mut out = String::new();
        for e in std::fs::read_dir(&dir).expect("chats").flatten() {
            out.push_str(&std::fs::read_to_string(e.path()).expect("read"));
        }
        out
    }
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

const TEXT_ONLY: &str = "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\" there\"}}]}\n\ndata: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

/// An OpenAI stream making `calls` (id, name, arguments), each split in two fragments.
fn openai_calls(calls: &[(&str, &str, &str)]) -> String {
    let mut s = String::new();
    for (i, (id, name, args)) in calls.iter().enumerate() {
        let (a, b) = args.split_at(args.len() / 2);
        s.push_str(&format!("data: {}\n\n", json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "id": id, "type": "function", "function": {"name": name, "arguments": a}}]}}]})));
        s.push_str(&format!("data: {}\n\n", json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "function": {"arguments": b}}]}}]})));
    }
    s.push_str(
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
    );
    s.push_str("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":5}}\n\ndata: [DONE]\n\n");
    s
}

#[test]
fn a_text_answer_streams_to_stdout() {
    let env = Env::new();
    let m = model(vec![sse(TEXT_ONLY)]);
    let o = env.run(&m, "openai", &["Say hi"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(out.trim(), "hi there");
    let r = &m.requests()[0];
    assert_eq!(
        (r["model"].clone(), r["stream"].clone()),
        (json!("test-model"), json!(true))
    );
    assert_eq!(r["stream_options"], json!({"include_usage": true}));
    assert_eq!(
        r["messages"],
        json!([{"role": "user", "content": "Say hi"}])
    );
    let names: Vec<&str> = r["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    // The gateway's tools, in name order (as MCP lists them).
    assert_eq!(names, ["delete_file", "echo_args", "list_dir", "nap"]);
    assert_eq!(m.headers(0)["authorization"], "Bearer sk-test-secret-123");
    // The key is nowhere but in that header.
    assert!(!env.transcripts().contains("sk-test-secret"));
    assert!(env.transcripts().contains("\"type\":\"session\""));
}

#[test]
fn a_toolset_limits_what_the_model_is_offered() {
    let env = Env::new();
    let m = model(vec![sse(TEXT_ONLY)]);
    let o = env.run(&m, "openai", &["--toolset", "quiet", "Say hi"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
    let requests = m.requests();
    let names: Vec<&str> = requests[0]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert_eq!(names, ["echo_args", "list_dir"]);
    let o = env.run(&m, "openai", &["--toolset", "loud", "Say hi"]);
    let (_, err) = text(&o);
    assert_ne!(o.status.code(), Some(0));
    assert!(
        err.contains("--toolset loud: no such toolset; the toolsets are: quiet"),
        "{err}"
    );
}

#[test]
fn a_call_over_its_tools_rate_limit_waits_and_says_so() {
    let env = Env::new();
    std::fs::write(
        env.dir.path().join("catalog.yaml"),
        "tools:\n  - {name: tick, description: Ticks., command: [echo, tick], rate_limit: 1/1s}\n",
    )
    .expect("catalog");
    let m = model(vec![
        sse(&openai_calls(&[("c1", "tick", "{}"), ("c2", "tick", "{}")])),
        sse(TEXT_ONLY),
    ]);
    let o = env.run(&m, "openai", &["--json", "tick twice"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    let retries: Vec<Value> = out
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "retry")
        .collect();
    assert_eq!(retries.len(), 1, "{out}");
    assert_eq!(retries[0]["reason"], "`tick` is over its rate limit");
    assert!(
        retries[0]["wait_ms"]
            .as_u64()
            .is_some_and(|w| w > 0 && w <= 1001),
        "{}",
        retries[0]
    );
    let requests = m.requests();
    let results: Vec<&str> = requests[1]["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(results.len(), 2);
    assert!(
        results.iter().all(|r| r.contains("tick")),
        "both ran: {results:?}"
    );
}

#[test]
fn parallel_calls_under_approval_never_run_the_safe_one_and_answer_both() {
    let env = Env::new();
    let m = model(vec![
        sse(&openai_calls(&[
            ("call_a", "list_dir", "{\"path\": \".\"}"),
            ("call_b", "delete_file", "{\"path\": \"tmp.txt\"}"),
        ])),
        sse(
            "data: {\"choices\":[{\"delta\":{\"content\":\"I listed; I did not delete.\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
        ),
    ]);
    let o = env.run(&m, "openai", &["--approval", "never", "--json", "tidy up"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(
        env.ws().join("tmp.txt").exists(),
        "the dangerous call did not run"
    );
    let reqs = m.requests();
    assert_eq!(reqs.len(), 2);
    let msgs = reqs[1]["messages"].as_array().expect("messages");
    assert_eq!(
        msgs.len(),
        4,
        "user, one assistant message with both calls, two results: {msgs:?}"
    );
    let ids: Vec<&str> = msgs[1]["tool_calls"]
        .as_array()
        .expect("calls")
        .iter()
        .filter_map(|c| c["id"].as_str())
        .collect();
    assert_eq!(ids, ["call_a", "call_b"]);
    assert_eq!(
        msgs[1]["tool_calls"][1]["function"]["arguments"],
        "{\"path\": \"tmp.txt\"}"
    );
    assert_eq!(
        (msgs[2]["role"].clone(), msgs[2]["tool_call_id"].clone()),
        (json!("tool"), json!("call_a"))
    );
    assert!(
        msgs[2]["content"].as_str().unwrap_or("").contains("a.txt"),
        "{}",
        msgs[2]
    );
    assert_eq!(msgs[3]["tool_call_id"], "call_b");
    assert!(
        msgs[3]["content"]
            .as_str()
            .unwrap_or("")
            .contains("declined"),
        "{}",
        msgs[3]
    );
    // The --json transcript: transitions, the calls, the decision, the results, usage, the end.
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    let kinds: Vec<&str> = lines.iter().filter_map(|l| l["type"].as_str()).collect();
    for k in [
        "session",
        "transition",
        "tool_call",
        "approval",
        "tool_result",
        "usage",
        "text",
        "end",
    ] {
        assert!(kinds.contains(&k), "{k} missing from {kinds:?}");
    }
    assert!(
        lines
            .iter()
            .any(|l| l["type"] == "transition" && l["event"] == "dangerous_tool_detected")
    );
    assert!(lines.iter().any(|l| l["type"] == "approval"
        && l["id"] == "call_b"
        && l["decision"].as_str().unwrap_or("").contains("declined")));
    assert_eq!(
        lines.last().map(|l| l["outcome"].clone()),
        Some(json!("answered"))
    );
    assert!(!out.contains("sk-test-secret"));
}

#[test]
fn ask_with_yes_on_stdin_runs_the_dangerous_call() {
    let env = Env::new();
    let m = model(vec![
        sse(&openai_calls(&[(
            "call_b",
            "delete_file",
            "{\"path\": \"tmp.txt\"}",
        )])),
        sse(TEXT_ONLY),
    ]);
    let o = env.answered(&m, &["--approval", "ask", "delete tmp.txt"], b"y\n");
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("Run delete_file: rm -f -- tmp.txt? [y]es"),
        "the exact command was shown: {err}"
    );
    assert!(!env.ws().join("tmp.txt").exists(), "approved, it ran");
    let msgs = m.requests()[1]["messages"].clone();
    assert!(
        msgs[2]["content"]
            .as_str()
            .unwrap_or("")
            .contains("\"success\":true"),
        "{msgs}"
    );
}

#[test]
fn a_chats_calls_take_the_gateways_call_path_and_are_in_the_run_log() {
    let env = Env::new();
    let db = env.dir.path().join("registry.db");
    let toolsmith = |args: &[&str]| {
        Command::new(BIN)
            .args(args)
            .arg("--db")
            .arg(&db)
            .env("XDG_DATA_HOME", env.dir.path().join("data"))
            .output()
            .expect("toolsmith")
    };
    let catalog = env.dir.path().join("catalog.yaml");
    let o = toolsmith(&["import", catalog.to_str().expect("path")]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let m = model(vec![
        sse(&openai_calls(&[(
            "c1",
            "echo_args",
            "{\"count\": 2, \"tags\": [\"a\"]}",
        )])),
        sse(TEXT_ONLY),
    ]);
    let db_arg = db.to_str().expect("path");
    // The registry's key is the data folder's, made by the import.
    let o = env
        .command_over(&["--db", db_arg], &m, "openai", &["--json", "echo"])
        .output()
        .expect("run chat");
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    // The call reached the model's tool through the gateway: the registry's run log has it,
    // under the door's caller, at the tool's registry version.
    let o = toolsmith(&["runs", "--json", "--tool", "echo_args"]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let runs: Value = serde_json::from_slice(&o.stdout).expect("runs json");
    let runs = runs
        .as_array()
        .or_else(|| runs["items"].as_array())
        .expect("a list of runs")
        .clone();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["caller"], "chat", "{runs:?}");
    assert_eq!(runs[0]["version"], 1, "{runs:?}");
    assert_eq!(runs[0]["kind"], "ok", "{runs:?}");
}

#[test]
fn a_sloppy_call_is_repaired_and_the_model_is_told() {
    let env = Env::new();
    let m = model(vec![
        sse(&openai_calls(&[(
            "c1",
            "echo_args",
            "{\"count\": \"3\", \"tags\": \"[\\\"a\\\", \\\"b\\\"]\"}",
        )])),
        sse(TEXT_ONLY),
    ]);
    let o = env.run(&m, "openai", &["--json", "echo"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    let call = out
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|l| l["type"] == "tool_call")
        .expect("a tool_call line");
    assert_eq!(call["arguments"], json!({"count": 3, "tags": ["a", "b"]}));
    assert_eq!(
        call["coerced"],
        json!(["count: string→integer", "tags: string→array"])
    );
    let result = m.requests()[1]["messages"][2]["content"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    let v: Value = serde_json::from_str(&result).expect("result json");
    assert_eq!(v["data"], json!({"count": 3, "tags": ["a", "b"]}));
    assert_eq!(
        v["coerced"],
        json!(["count: string→integer", "tags: string→array"])
    );
}

#[test]
#[ignore = "needs the Python OTLP receiver (TOOLSMITH_TEST_PYTHON with opentelemetry-proto)"]
fn a_turn_is_a_trace_of_its_own() {
    let env = Env::new();
    let r = common::otlp_receiver(env.dir.path());
    let m = model(vec![
        sse(&openai_calls(&[("c1", "list_dir", "{}")])),
        sse(TEXT_ONLY),
    ]);
    let o = env.run(&m, "openai", &["--otlp-endpoint", &r.url, "--json", "look"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    // Exported before the process ended.
    let spans = common::read_spans(&r.spans);
    let turns: Vec<&Value> = spans.iter().filter(|s| s["name"] == "chat turn").collect();
    assert_eq!(turns.len(), 1, "{spans:#?}");
    let turn = turns[0];
    assert_eq!(turn["parent_span_id"], "", "a turn starts its trace");
    assert_eq!(turn["attributes"]["outcome"], "answered");
    let under = |name: &str| {
        spans
            .iter()
            .filter(|s| {
                s["name"] == name
                    && s["trace_id"] == turn["trace_id"]
                    && s["parent_span_id"] == turn["span_id"]
            })
            .count()
    };
    assert_eq!(
        (under("model"), under("call list_dir")),
        (2, 1),
        "{spans:#?}"
    );
}

#[test]
fn the_turn_limit_stops_the_loop() {
    let env = Env::new();
    let call = openai_calls(&[("c", "list_dir", "{\"path\": \".\"}")]);
    let m = model(vec![sse(&call), sse(&call), sse(&call)]);
    let o = env.run(&m, "openai", &["--max-turns", "2", "loop forever"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(m.requests().len(), 2, "stopped after two requests");
    assert!(err.contains("stopped after 2 model requests"), "{err}");
    // The saved conversation is whole: both calls answered.
    assert_eq!(
        env.transcripts()
            .matches("\"role\":\"tool_result\"")
            .count(),
        2
    );
}

#[test]
fn rate_limits_are_retried_and_refusals_explained() {
    let env = Env::new();
    let limited = Reply {
        status: 429,
        headers: vec![
            ("retry-after", "0".into()),
            ("content-type", "application/json".into()),
        ],
        body: "{\"error\":{\"message\":\"Rate limit reached\"}}".into(),
    };
    let m = model(vec![limited, sse(TEXT_ONLY)]);
    let o = env.run(&m, "openai", &["hi"]);
    let (out, err) = text(&o);
    assert_eq!(
        (o.status.code(), out.trim()),
        (Some(0), "hi there"),
        "{err}"
    );
    assert_eq!(m.requests().len(), 2);
    assert!(
        err.contains("HTTP 429: Rate limit reached; retrying"),
        "{err}"
    );

    let refused = Reply {
        status: 401,
        headers: vec![("content-type", "application/json".into())],
        body: "{\"error\":{\"message\":\"Incorrect API key provided\",\"type\":\"invalid_request_error\"}}".into(),
    };
    let m = model(vec![refused]);
    let o = env.run(&m, "openai", &["hi"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(m.requests().len(), 1, "a 401 is not retried");
    assert!(
        err.contains("HTTP 401): Incorrect API key provided — check the API key"),
        "{err}"
    );
}

/// Finding 8 of the second hardening round: a provider that quotes the key back (in a
/// refusal, a retried error, with or without `Bearer`) never gets it onto the terminal, into
/// `--json` events or into the saved conversation.
#[test]
fn an_echoed_api_key_is_redacted_everywhere() {
    let env = Env::new();
    let echo = |status: u16| {
        Reply {
        status,
        headers: vec![
            ("retry-after", "0".into()),
            ("content-type", "application/json".into()),
        ],
        body: "{\"error\":{\"message\":\"Incorrect API key provided: sk-test-secret-123 (sent as Bearer sk-test-secret-123)\"}}".into(),
    }
    };
    let m = model(vec![echo(503), echo(401)]);
    let o = env.run(&m, "openai", &["--json", "hi"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(m.requests().len(), 2, "the 503 was retried");
    for (what, text) in [
        ("stdout", &out),
        ("stderr", &err),
        ("transcript", &env.transcripts()),
    ] {
        assert!(
            !text.contains("sk-test-secret"),
            "{what} has the key: {text}"
        );
    }
    assert!(
        out.contains("Incorrect API key provided: *** (sent as Bearer ***)"),
        "the message is kept, the key is not: {out}"
    );
}

fn sleeping() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .expect("proc")
        .flatten()
        .filter_map(|e| {
            let pid = e.file_name().to_string_lossy().parse::<u32>().ok()?;
            let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
            cmd.windows(6).any(|w| w == b"30.123").then_some(pid)
        })
        .collect()
}

#[test]
fn ctrl_c_during_a_long_tool_kills_it_and_answers_the_call() {
    let env = Env::new();
    let m = model(vec![sse(&openai_calls(&[("c_nap", "nap", "{}")]))]);
    let child = env
        .command(&m, "openai", &["nap please"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let started = std::time::Instant::now();
    while sleeping().is_empty() {
        assert!(started.elapsed().as_secs() < 20, "the tool never started");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(kill.success());
    let o = child.wait_with_output().expect("wait");
    assert_eq!(o.status.code(), Some(130), "{}", text(&o).1);
    let gone = std::time::Instant::now();
    while !sleeping().is_empty() {
        assert!(gone.elapsed().as_secs() < 5, "the tool's process survived");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let saved = env.transcripts();
    assert!(
        saved.contains("\"call_id\":\"c_nap\"") && saved.contains("Interrupted by the user"),
        "{saved}"
    );
}

#[test]
fn anthropic_tool_use_and_results() {
    let env = Env::new();
    let first = concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":9}}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Looking.\"}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_a\",\"name\":\"list_dir\",\"input\":{}}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"path\\\": \"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\\\".\\\"}\"}}\n\n",
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":20}}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    );
    let second = concat!(
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" Two files.\"}}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    );
    let m = model(vec![sse(first), sse(second)]);
    let o = env.run(&m, "anthropic", &["--system", "be brief", "what is here?"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    // The text before the tool call ends its line (the call is shown in between, on stderr).
    assert_eq!(out, "Looking.\n Two files.\n");
    let h = m.headers(0);
    assert_eq!(
        (
            h["x-api-key"].to_str().ok(),
            h["anthropic-version"].to_str().ok()
        ),
        (Some("sk-test-secret-123"), Some("2023-06-01"))
    );
    let reqs = m.requests();
    assert_eq!(reqs[0]["system"], "be brief");
    assert!(reqs[0]["tools"][0]["input_schema"].is_object());
    let msgs = reqs[1]["messages"].as_array().expect("messages");
    assert_eq!(
        msgs[1]["content"][1],
        json!({"type": "tool_use", "id": "toolu_a", "name": "list_dir", "input": {"path": "."}})
    );
    assert_eq!(msgs[2]["content"][0]["type"], "tool_result");
    assert_eq!(msgs[2]["content"][0]["tool_use_id"], "toolu_a");
    assert_eq!(msgs[2]["content"][0]["is_error"], false);
}

#[test]
fn a_conversation_resumes() {
    let env = Env::new();
    let m = model(vec![sse(TEXT_ONLY), sse(TEXT_ONLY)]);
    assert!(env.run(&m, "openai", &["first"]).status.success());
    let o = env.run(&m, "openai", &["--resume", "last", "second"]);
    assert!(o.status.success(), "{}", text(&o).1);
    let msgs = m.requests()[1]["messages"].clone();
    assert_eq!(
        msgs,
        json!([
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "hi there"},
            {"role": "user", "content": "second"},
        ])
    );
    let o = env.run(&m, "openai", &["--resume", "nope", "x"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).1.contains("no saved conversation \"nope\""),
        "{}",
        text(&o).1
    );
}

/// A smoke test against a real OpenAI-compatible endpoint, when one is named.
#[test]
#[ignore = "needs a real model endpoint (TOOLSMITH_TEST_OPENAI_BASE_URL, _MODEL, and a key in OPENAI_API_KEY)"]
fn against_a_real_endpoint() {
    let base =
        std::env::var("TOOLSMITH_TEST_OPENAI_BASE_URL").expect("TOOLSMITH_TEST_OPENAI_BASE_URL");
    let model_name =
        std::env::var("TOOLSMITH_TEST_OPENAI_MODEL").unwrap_or_else(|_| "gpt-4o-mini".into());
    let env = Env::new();
    let o = Command::new(BIN)
        .args(["chat", "-c"])
        .arg(env.dir.path().join("catalog.yaml"))
        .args([
            "--base-url",
            &base,
            "--model",
            &model_name,
            "--approval",
            "never",
            "--workspace",
        ])
        .arg(env.ws())
        .arg("List the files in the workspace with list_dir, then say how many there are.")
        .env("XDG_DATA_HOME", env.dir.path().join("data"))
        .output()
        .expect("run");
    assert!(o.status.success(), "{}", text(&o).1);
}

#[test]
fn a_catalogs_mcp_server_serves_the_model_and_ends_with_the_chat() {
    let env = Env::new();
    let marker = format!("chat-upstream-{}", std::process::id());
    let tiny = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/upstream/tiny_server.py");
    std::fs::write(
        env.dir.path().join("catalog.yaml"),
        format!(
            "{CATALOG}mcp_servers:\n  - name: tiny\n    command: [python3, {}]\n    env_allowlist: [PATH]\n    env: {{TS_MARKER: {marker}}}\n",
            tiny.display()
        ),
    )
    .expect("catalog");
    let m = model(vec![
        sse(&openai_calls(&[(
            "c1",
            "tiny__ping",
            "{\"loud\": \"true\"}",
        )])),
        sse(TEXT_ONLY),
    ]);
    let o = env.run(&m, "openai", &["--json", "ping it"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    let offered: Vec<String> = m.requests()[0]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .collect();
    assert!(offered.contains(&"tiny__ping".to_owned()), "{offered:?}");
    let result = m.requests()[1]["messages"][2]["content"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    let v: Value = serde_json::from_str(&result).expect("result json");
    assert_eq!(v["data"]["content"][0]["text"], "PONG", "{v}");
    assert_eq!(v["coerced"], json!(["loud: string→boolean"]), "{v}");
    // The server is stopped as the chat ends (TERM, then its group killed); on a loaded
    // machine its exit can trail the chat's by a moment.
    let gone = (0..50).any(|_| {
        let none = common::processes_with(&format!("TS_MARKER={marker}")).is_empty();
        if !none {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        none
    });
    assert!(gone, "the chat's MCP server outlived it by 5 s");
}

#[test]
fn code_mode_offers_two_tools_and_runs_the_models_program_through_the_gateway() {
    let env = Env::new();
    let program = json!({"code": "from tools import echo_args\nr = echo_args(count='3', tags=['a'])\nprint('echoed')\nr['count'] * 2"}).to_string();
    let m = model(vec![
        sse(&openai_calls(&[(
            "c1",
            "search_tools",
            r#"{"query": "echo the arguments"}"#,
        )])),
        sse(&openai_calls(&[("c2", "run_code", &program)])),
        sse(TEXT_ONLY),
    ]);
    let o = env.run(&m, "openai", &["--code-mode", "Echo three"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(out.trim(), "hi there");
    let requests = m.requests();
    let names: Vec<&str> = requests[0]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert_eq!(names, ["search_tools", "run_code"]);
    let told = |n: usize| {
        requests[n]["messages"]
            .as_array()
            .and_then(|m| m.last())
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
            .to_owned()
    };
    // The search's answer is the tool as a Python function.
    let found = told(1);
    assert!(
        found.contains("from tools import echo_args") && found.contains("def echo_args(*, "),
        "{found}"
    );
    // The program ran, its call through the gateway ("3" repaired to 3): the model gets
    // what it printed and its value, nothing of the call's own result.
    let ran: Value = serde_json::from_str(&told(2)).expect("json");
    assert_eq!(ran["data"]["output"], "echoed\n", "{ran}");
    assert_eq!(ran["data"]["value"], 6, "{ran}");
}

#[test]
fn under_ask_a_programs_dangerous_call_is_put_to_the_user_and_runs_only_on_yes() {
    let env = Env::new();
    let program =
        json!({"code": "from tools import delete_file\ndelete_file(path='tmp.txt')\n'deleted'"})
            .to_string();
    let m = model(vec![
        sse(&openai_calls(&[("c1", "run_code", &program)])),
        sse(&openai_calls(&[("c2", "run_code", &program)])),
        sse(TEXT_ONLY),
    ]);
    // No to the first program, yes to the second.
    let o = env.answered(
        &m,
        &[
            "--code-mode",
            "--approval",
            "ask",
            "--json",
            "delete tmp.txt",
        ],
        b"n\ny\n",
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let questions: Vec<Value> = out
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["type"] == "question" && l["program_asks"].is_string())
        .collect();
    assert_eq!(questions.len(), 2, "{out}");
    let asked = questions[0]["program_asks"].as_str().unwrap_or_default();
    assert!(
        asked.contains("delete_file") && asked.contains("tmp.txt"),
        "the question names the tool and its arguments: {asked}"
    );
    assert_eq!(questions[0]["id"], "c1");
    let told = |n: usize| -> String {
        m.requests()[n]["messages"]
            .as_array()
            .and_then(|m| m.last())
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
            .to_owned()
    };
    // Declined: the call raised in the program, nothing ran.
    let first: Value = serde_json::from_str(&told(1)).expect("json");
    assert!(
        first["data"]["error"]
            .as_str()
            .unwrap_or_default()
            .contains("needs_confirmation"),
        "{first}"
    );
    // Agreed: it ran.
    let second: Value = serde_json::from_str(&told(2)).expect("json");
    assert_eq!(second["data"]["value"], "deleted", "{second}");
    assert!(!env.ws().join("tmp.txt").exists(), "approved, it ran");
}
