//! HTTP tools: validated arguments → the exact request (method, URL, headers, body).
//!
//! A path value is percent-encoded as one segment (`/`, `?`, `#`, `%` and every other
//! reserved byte encoded; `.`, `..` and the empty string refused), so no value can change
//! the route; query values are form-encoded; header values with line breaks are refused.
//! Credentials come from the tool's secret config fields and are kept apart, so every view
//! shows `***` in their place.

use base64::Engine as _;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use super::*;
use crate::http::{BodyMode, HttpAuth, HttpCall, RequestPart, is_header_value};

/// Everything but RFC 3986's unreserved characters is encoded in a path segment.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The request an `http` tool's call sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequest {
    pub method: String,
    /// The URL sent, credentials in its query included.
    pub url: String,
    /// The URL as views show it: a credential in its query as `***`.
    pub url_shown: String,
    pub headers: Vec<Header>,
    /// JSON text.
    pub body: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub name: String,
    pub value: String,
    /// A credential: shown as `***`, and dropped when a redirect leaves the host.
    pub secret: bool,
}

impl HttpRequest {
    /// The dry-run view: `{"method", "url", "headers", "body"}`, credentials as `***`.
    pub fn to_json(&self) -> Value {
        let headers: Map<String, Value> = self
            .headers
            .iter()
            .map(|h| {
                (
                    h.name.clone(),
                    json!(if h.secret { REDACTED } else { h.value.as_str() }),
                )
            })
            .collect();
        let body = self
            .body
            .as_deref()
            .map(|b| serde_json::from_str(b).unwrap_or_else(|_| json!(b)));
        json!({"method": self.method, "url": self.url_shown, "headers": headers, "body": body})
    }
}

pub(super) fn plan(
    tool: &Tool,
    call: &HttpCall,
    args: &Map<String, Value>,
) -> Result<HttpRequest, Vec<Problem>> {
    let mut problems = Vec::new();
    let mut url = call.url.clone();
    let mut query: Vec<(String, String)> = Vec::new();
    let mut headers: Vec<Header> = call
        .headers
        .iter()
        .map(|(name, value)| Header {
            name: name.to_ascii_lowercase(),
            value: value.clone(),
            secret: false,
        })
        .collect();
    let mut body = Map::new();
    let mut whole: Option<Value> = None;
    let mut has_body = false;
    for p in &tool.parameters {
        let at = format!("/{}", p.name);
        let wire = call.wire_name(&p.name);
        let inj = call.place(&p.name);
        if inj.inject_as == RequestPart::Body {
            has_body = true;
        }
        let Some(value) = args.get(&p.name) else {
            continue;
        };
        match inj.inject_as {
            RequestPart::Path => {
                let segment = text(value);
                if matches!(segment.as_str(), "" | "." | "..") {
                    problems.push(Problem::new(
                        at,
                        format!("{segment:?} cannot be a path segment: it would change the route"),
                    ));
                    continue;
                }
                let encoded = utf8_percent_encode(&segment, SEGMENT).to_string();
                url = url.replace(&format!("{{{wire}}}"), &encoded);
            }
            RequestPart::Query => match value {
                Value::Null => {}
                Value::Array(items) => match inj.array_style {
                    Some(ArrayStyle::Join) => {
                        query.push((wire.to_owned(), join(items, inj.separator.as_deref())))
                    }
                    _ => query.extend(items.iter().map(|v| (wire.to_owned(), text(v)))),
                },
                v => query.push((wire.to_owned(), text(v))),
            },
            RequestPart::Header => {
                let value = match value {
                    Value::Null => continue,
                    Value::Array(items) => {
                        join(items, Some(inj.separator.as_deref().unwrap_or(",")))
                    }
                    v => text(v),
                };
                if !is_header_value(&value) {
                    problems.push(Problem::new(
                        at,
                        "a header value cannot hold line breaks or control characters",
                    ));
                    continue;
                }
                headers.push(Header {
                    name: wire.to_ascii_lowercase(),
                    value,
                    secret: false,
                });
            }
            RequestPart::Body if call.body == Some(BodyMode::Whole) => whole = Some(value.clone()),
            RequestPart::Body => {
                body.insert(wire.to_owned(), value.clone());
            }
        }
    }
    if problems.is_empty()
        && let Ok(left) = crate::http::placeholders(&url)
        && let Some(name) = left.first()
    {
        problems.push(Problem::new(
            format!("/{name}"),
            format!("the URL needs a value for `{{{name}}}`"),
        ));
    }
    let mut shown_query = query.clone();
    if let Some(auth) = &call.auth {
        let field = |name: &str, problems: &mut Vec<Problem>| -> String {
            match tool.config.get(name).and_then(Value::as_str) {
                Some(v) => v.to_owned(),
                None => {
                    problems.push(Problem::new(
                        "",
                        format!("tool `{}` is not configured: its config field {name:?} (a credential) has no value; an operator sets it", tool.name),
                    ));
                    String::new()
                }
            }
        };
        let secret_header = |name: &str, value: String| Header {
            name: name.to_ascii_lowercase(),
            value,
            secret: true,
        };
        match auth {
            HttpAuth::Bearer(f) => {
                let token = field(f, &mut problems);
                headers.push(secret_header("authorization", format!("Bearer {token}")));
            }
            HttpAuth::Basic(u, p) => {
                let pair = format!("{}:{}", field(u, &mut problems), field(p, &mut problems));
                let encoded = base64::engine::general_purpose::STANDARD.encode(pair);
                headers.push(secret_header("authorization", format!("Basic {encoded}")));
            }
            HttpAuth::Header { name, value } => {
                let v = field(value, &mut problems);
                headers.push(secret_header(name, v));
            }
            HttpAuth::Query { name, value } => {
                query.push((name.clone(), field(value, &mut problems)));
                shown_query.push((name.clone(), REDACTED.into()));
            }
        }
    }
    let body = match (has_body, call.body) {
        (false, _) => None,
        (true, Some(BodyMode::Whole)) => whole.map(|v| v.to_string()),
        (true, None) => Some(Value::Object(body).to_string()),
    };
    if body.is_some() && !headers.iter().any(|h| h.name == "content-type") {
        headers.push(Header {
            name: "content-type".into(),
            value: "application/json".into(),
            secret: false,
        });
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let with_query = |pairs: &[(String, String)]| -> Result<String, Vec<Problem>> {
        let mut u = url::Url::parse(&url).map_err(|e| {
            vec![Problem::new(
                "",
                format!("the URL {url:?} does not parse: {e}"),
            )]
        })?;
        if !pairs.is_empty() {
            u.query_pairs_mut().extend_pairs(pairs);
        }
        Ok(u.to_string())
    };
    Ok(HttpRequest {
        method: call.method.clone(),
        url: with_query(&query)?,
        url_shown: with_query(&shown_query)?,
        headers,
        body,
    })
}
