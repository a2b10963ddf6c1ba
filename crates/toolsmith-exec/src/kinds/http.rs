//! HTTP tools: the planned request sent with the engine's one client. A JSON body is the
//! result's `data`, other text a string, anything else a note of its type and size; the
//! status and selected headers are `meta.http`. A status of 400 or more is the failure kind
//! `http_status` with the status and the body's head (its full body is the output); a host
//! or redirect toolsmith refuses, a name that does not resolve or a broken connection is
//! `network`; a body over the cap is `output_limit`.

use serde_json::{Map, Value, json};
use toolsmith_core::http::HttpCall;

use super::*;
use crate::http::{Failure, Outbound, Response};
use toolsmith_core::plan::{Header, HttpRequest};

/// Characters of the body an `http_status` message quotes.
const BODY_HEAD: usize = 500;

/// Response headers carried into `meta.http.headers`: what a model can act on.
const KEPT_HEADERS: [&str; 8] = [
    "content-type",
    "content-length",
    "location",
    "retry-after",
    "etag",
    "last-modified",
    "link",
    "x-request-id",
];

impl Engine {
    pub(crate) async fn run_http(
        &self,
        t: &Tool,
        call: &HttpCall,
        req: HttpRequest,
        mut meta: Meta,
    ) -> ToolResult {
        // The caller's trace goes on to the service (SPEC §15).
        let traced: Vec<Header>;
        let headers = match crate::trace::current() {
            Some((parent, state)) => {
                let context = std::iter::once(("traceparent", parent))
                    .chain(state.map(|s| ("tracestate", s)))
                    .map(|(name, value)| Header {
                        name: name.into(),
                        value,
                        secret: false,
                    });
                traced = req
                    .headers
                    .iter()
                    .filter(|h| !h.name.eq_ignore_ascii_case("traceparent"))
                    .cloned()
                    .chain(context)
                    .collect();
                &traced
            }
            None => &req.headers,
        };
        let sent = self
            .http
            .send(Outbound {
                method: &req.method,
                url: &req.url,
                url_shown: &req.url_shown,
                headers,
                body: req.body,
                max_bytes: call.max_response_bytes(),
                truncate: false,
                timeout: Duration::from_millis(t.timeout_ms),
                allow_hosts: &call.allow_hosts,
            })
            .await;
        let what = format!("{} {}", req.method, req.url_shown);
        let response = match sent {
            Ok(r) => r,
            Err(Failure::Timeout) => {
                return ToolResult::err(
                    ErrorKind::Timeout,
                    format!("{what} did not answer within {} ms", t.timeout_ms),
                    Vec::new(),
                    meta,
                );
            }
            Err(Failure::TooLarge { limit }) => {
                return ToolResult::err(
                    ErrorKind::OutputLimit,
                    format!(
                        "{what}: the response body is over the tool's {limit} bytes (max_response_bytes)"
                    ),
                    Vec::new(),
                    meta,
                );
            }
            Err(Failure::Refused(m) | Failure::Network(m)) => {
                return ToolResult::err(ErrorKind::Network, m, Vec::new(), meta);
            }
        };
        meta.http = Some(http_meta(&response));
        let data = body_value(&response);
        if response.status >= 400 {
            let head: String = match &data {
                Value::String(s) => s.chars().take(BODY_HEAD).collect(),
                other => other.to_string().chars().take(BODY_HEAD).collect(),
            };
            return ToolResult::err(
                ErrorKind::HttpStatus,
                format!(
                    "{what} answered {} {}: {}",
                    response.status,
                    response.reason,
                    if head.is_empty() { "(no body)" } else { &head }
                ),
                Vec::new(),
                meta,
            )
            .with_output(data);
        }
        ToolResult::ok(data, meta)
    }
}

/// `{"status", "headers", "redirects"?}`.
fn http_meta(r: &Response) -> Value {
    let headers: Map<String, Value> = r
        .headers
        .iter()
        .filter(|(n, _)| {
            KEPT_HEADERS.contains(&n.as_str())
                || n.starts_with("x-ratelimit-")
                || n.starts_with("ratelimit")
        })
        .map(|(n, v)| (n.clone(), json!(v)))
        .collect();
    let mut meta = json!({"status": r.status, "headers": headers});
    if r.redirects > 0 {
        meta["redirects"] = json!(r.redirects);
    }
    meta
}

/// JSON as a value, text as a string, anything else a note; an empty body is null.
fn body_value(r: &Response) -> Value {
    if r.body.is_empty() {
        return Value::Null;
    }
    let kind = r
        .header("content-type")
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let json_type = kind == "application/json" || kind.ends_with("+json");
    if json_type && let Ok(v) = serde_json::from_slice::<Value>(&r.body) {
        return v;
    }
    let textual = kind.is_empty()
        || json_type
        || kind.starts_with("text/")
        || kind.ends_with("+xml")
        || matches!(
            kind.as_str(),
            "application/xml" | "application/javascript" | "application/x-www-form-urlencoded"
        );
    match (textual, std::str::from_utf8(&r.body)) {
        (true, Ok(text)) => Value::String(text.to_owned()),
        _ => json!({
            "binary": true,
            "content_type": if kind.is_empty() { "application/octet-stream" } else { kind.as_str() },
            "bytes": r.body.len(),
        }),
    }
}
