//! `tools/call` params that rmcp cannot read, made readable before it sees them (SPEC §3.2
//! step 1, for MCP as for REST). A host that passes on a model's double-encoded text sends
//! `"arguments": "{\"q\": 1}"`; rmcp's typed params would refuse that, answering -32601 with no
//! hint. Here such a string moves into `_meta` under [`TEXT_KEY`], where the call handler
//! gives it to the argument pipeline's text reading; any other shape rmcp cannot read (params
//! not an object, no `name`, `arguments` a number) is noted under [`BAD_KEY`] and answered
//! with -32602 naming the field. Both transports use it: stdin line by line, and each
//! `POST /mcp` body.

use axum::body::{Body, to_bytes};
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncBufRead, AsyncRead, BufReader, ReadBuf};

/// Where a string `arguments` goes: the text the pipeline reads.
pub const TEXT_KEY: &str = "toolsmith/arguments_text";
/// Where an unreadable params shape is described: answered with -32602.
pub const BAD_KEY: &str = "toolsmith/bad_params";

/// One JSON-RPC message or batch, repaired; `None` when it needs nothing (the common case:
/// the bytes then go on untouched).
pub fn repair(message: &[u8]) -> Option<Vec<u8>> {
    // Cheap test first: only a tools/call can need it.
    if !contains(message, b"tools/call") {
        return None;
    }
    let mut v: Value = serde_json::from_slice(message).ok()?;
    let changed = match &mut v {
        // Every message of a batch is repaired (a count, not `any`, which would stop early).
        Value::Array(batch) => batch.iter_mut().map(repair_one).filter(|c| *c).count() > 0,
        one => repair_one(one),
    };
    changed.then(|| serde_json::to_vec(&v).unwrap_or_else(|_| message.to_vec()))
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn repair_one(message: &mut Value) -> bool {
    if message.get("method").and_then(Value::as_str) != Some("tools/call")
        || message.get("id").is_none()
    {
        return false;
    }
    let Some(obj) = message.as_object_mut() else {
        return false;
    };
    let params = obj.entry("params").or_insert(Value::Null);
    let bad = |why: String| json!({"name": "", "_meta": {BAD_KEY: why}});
    let Value::Object(p) = params else {
        *params = bad(format!(
            "params must be an object with `name` and `arguments`, not {}",
            toolsmith_core::json_text::type_phrase(params)
        ));
        return true;
    };
    let mut problems = Vec::new();
    match p.get("name") {
        Some(Value::String(_)) => {}
        None => problems.push("params.name is missing: name the tool to call".to_owned()),
        Some(other) => problems.push(format!(
            "params.name must be a string naming the tool, not {}",
            toolsmith_core::json_text::type_phrase(other)
        )),
    }
    let mut text = None;
    match p.get("arguments") {
        None | Some(Value::Null | Value::Object(_)) => {}
        Some(Value::String(s)) => text = Some(s.clone()),
        Some(other) => problems.push(format!(
            "params.arguments must be an object of the tool's parameters (or its JSON text), not {}",
            toolsmith_core::json_text::type_phrase(other)
        )),
    }
    let meta_ok = matches!(p.get("_meta"), None | Some(Value::Object(_)));
    if !meta_ok {
        problems.push("params._meta must be an object".to_owned());
    }
    if problems.is_empty() && text.is_none() {
        return false;
    }
    if !problems.is_empty() {
        let name = p.get("name").and_then(Value::as_str).unwrap_or_default();
        *params = json!({"name": name, "_meta": {BAD_KEY: problems.join("; ")}});
        return true;
    }
    p.remove("arguments");
    let meta = p
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(m) = meta {
        m.insert(TEXT_KEY.into(), Value::String(text.unwrap_or_default()));
    }
    true
}

/// Stdin as rmcp reads it, each line repaired; ends when stdin does.
pub fn repaired_stdin() -> impl AsyncRead + Send + Unpin + 'static {
    Repaired {
        input: BufReader::new(tokio::io::stdin()),
        line: Vec::new(),
        ready: Vec::new(),
        at: 0,
    }
}

/// Reads whole lines from `input` and hands them on repaired, in the reader's own task (no
/// task or pipe in between: a message costs no extra wake-up).
struct Repaired<R> {
    input: BufReader<R>,
    /// The line being read.
    line: Vec<u8>,
    /// A repaired line being handed on, from `at`.
    ready: Vec<u8>,
    at: usize,
}

impl<R: AsyncRead + Unpin> AsyncRead for Repaired<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let me = self.get_mut();
        loop {
            if me.at < me.ready.len() {
                let n = buf.remaining().min(me.ready.len() - me.at);
                buf.put_slice(&me.ready[me.at..me.at + n]);
                me.at += n;
                return Poll::Ready(Ok(()));
            }
            let available = ready!(Pin::new(&mut me.input).poll_fill_buf(cx))?;
            if available.is_empty() {
                // The end: a last line without its newline goes on as it is.
                if me.line.is_empty() {
                    return Poll::Ready(Ok(()));
                }
                me.ready = std::mem::take(&mut me.line);
                me.at = 0;
                continue;
            }
            let (taken, complete) = match available.iter().position(|b| *b == b'\n') {
                Some(i) => (i + 1, true),
                None => (available.len(), false),
            };
            me.line.extend_from_slice(&available[..taken]);
            Pin::new(&mut me.input).consume(taken);
            if complete {
                let line = std::mem::take(&mut me.line);
                me.ready = match repair(&line) {
                    Some(mut fixed) => {
                        fixed.push(b'\n');
                        fixed
                    }
                    None => line,
                };
                me.at = 0;
            }
        }
    }
}

/// The same for each `POST /mcp` body (the body limit has been applied before).
pub async fn repair_http(req: Request, next: Next) -> Response {
    if req.method() != axum::http::Method::POST || req.uri().path() != "/mcp" {
        return next.run(req).await;
    }
    let (mut parts, body) = req.into_parts();
    let Ok(bytes) = to_bytes(body, crate::BODY_LIMIT).await else {
        return crate::error::ApiError::bad_request("the request body could not be read")
            .into_response();
    };
    let body = match repair(&bytes) {
        Some(fixed) => {
            parts.headers.remove(axum::http::header::CONTENT_LENGTH);
            Body::from(fixed)
        }
        None => Body::from(bytes),
    };
    next.run(Request::from_parts(parts, body)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixed(v: Value) -> Value {
        serde_json::from_slice(&repair(v.to_string().as_bytes()).expect("repaired")).expect("json")
    }

    #[test]
    fn string_arguments_move_to_meta() {
        let v = fixed(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "t", "arguments": "{\"a\": 1}", "_meta": {"progressToken": 7}}}));
        assert_eq!(
            v["params"],
            json!({"name": "t", "_meta": {"progressToken": 7, TEXT_KEY: "{\"a\": 1}"}})
        );
    }

    #[test]
    fn unreadable_shapes_are_described() {
        let v = fixed(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "t", "arguments": 5}}));
        assert!(
            v["params"]["_meta"][BAD_KEY]
                .as_str()
                .is_some_and(|m| m.contains("params.arguments") && m.contains("a number")),
            "{v}"
        );
        assert_eq!(v["params"]["name"], "t");
        let v = fixed(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"arguments": {}}}));
        assert!(
            v["params"]["_meta"][BAD_KEY]
                .as_str()
                .is_some_and(|m| m.contains("params.name is missing")),
            "{v}"
        );
        let v = fixed(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": [1]}));
        assert!(v["params"]["_meta"][BAD_KEY].is_string(), "{v}");
    }

    #[tokio::test]
    async fn lines_are_repaired_as_they_are_read() {
        use tokio::io::AsyncReadExt;
        let input = concat!(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","arguments":"{}"}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#
        );
        let mut r = Repaired {
            input: BufReader::with_capacity(7, input.as_bytes()),
            line: Vec::new(),
            ready: Vec::new(),
            at: 0,
        };
        let mut out = String::new();
        r.read_to_string(&mut out).await.expect("read");
        let lines: Vec<&str> = out.split('\n').collect();
        assert_eq!(lines.len(), 3, "{out}");
        assert_eq!(
            lines[0],
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#
        );
        let v: Value = serde_json::from_str(lines[1]).expect("json");
        assert_eq!(v["params"]["_meta"][TEXT_KEY], "{}");
        assert_eq!(lines[2], r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#);
    }

    #[test]
    fn readable_messages_and_batches_pass_untouched() {
        for v in [
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t", "arguments": {"a": 1}}}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            json!({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "t", "arguments": "x"}}),
        ] {
            assert_eq!(repair(v.to_string().as_bytes()), None, "{v}");
        }
        let batch = json!([
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t", "arguments": {}}},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "t", "arguments": "{}"}}
        ]);
        let v = fixed(batch);
        assert_eq!(v[0]["params"]["arguments"], json!({}));
        assert_eq!(v[1]["params"]["_meta"][TEXT_KEY], "{}");
        assert_eq!(repair(b"not json tools/call"), None);
    }
}
