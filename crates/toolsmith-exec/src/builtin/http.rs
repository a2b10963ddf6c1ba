//! `http_request`: one HTTP(S) request with a time limit and a size limit on the body.

use std::io::Read;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::{BuiltinError, str_arg, u64_arg};

pub fn request(
    args: &Map<String, Value>,
    config: &Map<String, Value>,
) -> Result<Value, BuiltinError> {
    let url = str_arg(args, "url");
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(format!("{url:?}: only http and https URLs are allowed").into());
    }
    let method = args.get("method").and_then(Value::as_str).unwrap_or("GET");
    let timeout = Duration::from_millis(u64_arg(config, "timeout_ms").unwrap_or(10_000));
    let max_bytes = u64_arg(config, "max_bytes").unwrap_or(1024 * 1024);
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .http_status_as_error(false)
        .max_redirects(5)
        .build()
        .into();
    let mut builder = ureq::http::Request::builder().method(method).uri(url);
    if let Some(headers) = args.get("headers").and_then(Value::as_object) {
        for (k, v) in headers {
            let v = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            builder = builder.header(k.as_str(), v);
        }
    }
    let body = args
        .get("body")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .as_bytes()
        .to_vec();
    let request = builder
        .body(body)
        .map_err(|e| format!("invalid request: {e}"))?;
    let mut response = agent
        .run(request)
        .map_err(|e| format!("{method} {url}: {e}"))?;
    let status = response.status().as_u16();
    let headers: Map<String, Value> = response
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_owned(),
                json!(String::from_utf8_lossy(v.as_bytes())),
            )
        })
        .collect();
    let mut bytes = Vec::new();
    response
        .body_mut()
        .as_reader()
        .take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{method} {url}: reading the body: {e}"))?;
    let truncated = bytes.len() as u64 > max_bytes;
    bytes.truncate(max_bytes as usize);
    Ok(json!({
        "status": status,
        "headers": headers,
        "body": String::from_utf8_lossy(&bytes),
        "truncated": truncated,
    }))
}
