//! `http_request`: one HTTP(S) request a model writes, sent with the engine's one HTTP client
//! (so the same redirect, address and size rules as `http` tools apply), with a time limit
//! and a size limit on the body: a longer body is cut and says so.

use std::time::Duration;

use serde_json::{Map, Value, json};
use toolsmith_core::plan::Header;
use toolsmith_core::result::ErrorKind;

use super::{str_arg, u64_arg};
use crate::http::{Failure, HttpClient, Outbound};

/// Why the request gave no response: the failure kind (`invalid_arguments`, `timeout`,
/// `network`) and the message.
pub struct RequestError {
    pub kind: ErrorKind,
    pub message: String,
}

pub async fn request(
    client: &HttpClient,
    args: &Map<String, Value>,
    config: &Map<String, Value>,
) -> Result<Value, RequestError> {
    let fail = |message: String| RequestError {
        kind: ErrorKind::InvalidArguments,
        message,
    };
    let url = str_arg(args, "url");
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(fail(format!(
            "{url:?}: only http and https URLs are allowed"
        )));
    }
    let method = args.get("method").and_then(Value::as_str).unwrap_or("GET");
    let timeout_ms = u64_arg(config, "timeout_ms").unwrap_or(10_000);
    let max_bytes = u64_arg(config, "max_bytes").unwrap_or(1024 * 1024);
    let mut headers = Vec::new();
    for (name, v) in args
        .get("headers")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let value = match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        if !toolsmith_core::http::is_header_name(name)
            || !toolsmith_core::http::is_header_value(&value)
        {
            return Err(fail(format!(
                "header {name:?}: not a header name, or a value with line breaks"
            )));
        }
        headers.push(Header {
            name: name.to_ascii_lowercase(),
            value,
            secret: false,
        });
    }
    let body = args.get("body").and_then(Value::as_str).map(str::to_owned);
    let sent = client
        .send(Outbound {
            method,
            url,
            url_shown: url,
            headers: &headers,
            body,
            max_bytes,
            truncate: true,
            timeout: Duration::from_millis(timeout_ms),
            allow_hosts: &[],
        })
        .await;
    let response = match sent {
        Ok(r) => r,
        Err(Failure::Timeout) => {
            return Err(RequestError {
                kind: ErrorKind::Timeout,
                message: format!("{method} {url} did not answer within {timeout_ms} ms"),
            });
        }
        Err(Failure::TooLarge { limit }) => {
            return Err(RequestError {
                kind: ErrorKind::OutputLimit,
                message: format!("{method} {url}: the body is over {limit} bytes"),
            });
        }
        Err(Failure::Refused(message) | Failure::Network(message)) => {
            return Err(RequestError {
                kind: ErrorKind::Network,
                message,
            });
        }
    };
    let headers: Map<String, Value> = response
        .headers
        .iter()
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect();
    Ok(json!({
        "status": response.status,
        "headers": headers,
        "body": String::from_utf8_lossy(&response.body),
        "truncated": response.truncated,
    }))
}
