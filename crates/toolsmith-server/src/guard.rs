//! Browser safety for every route (REST, MCP, the web UI): no web page the user visits can
//! drive the server.
//!
//! Two attacks are shut out here, before authentication or any handler runs:
//! - **DNS rebinding**: a page on `evil.example` re-points its name at 127.0.0.1 and talks to
//!   the server as a same-origin page. Its requests carry `Host: evil.example`, so every
//!   request whose `Host` is not on the allowlist ([`Policy::allows_host`]: localhost,
//!   127.0.0.1, [::1] on any port, the address the server listens on, and `--allow-host`
//!   names) is refused with 403.
//! - **CSRF**: a page posts an HTML form (or a no-preflight `fetch`) to the server. Every
//!   state-changing request (any method but GET, HEAD and OPTIONS) whose `Origin` is present
//!   and neither the server's own origin nor an allowed one, or that a browser marks
//!   `Sec-Fetch-Site: cross-site`, is refused with 403 — whatever its content type or body.
//!   Programs that send no `Origin` (curl, SDKs, the CLI) are unaffected.
//!
//! CORS headers are sent only to origins named with `--allow-origin`; every response gets
//! `X-Content-Type-Options: nosniff`, and API responses `Cache-Control: no-store`.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// Which hosts and origins the server answers.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// Extra `Host` values: `name` (any port) or `name:port`; `*` turns the check off.
    hosts: Vec<String>,
    /// Extra origins (`https://app.example.com`), allowed to change state and sent CORS
    /// headers.
    origins: Vec<String>,
    /// No Host check at all (`--allow-host '*'`, behind a proxy that checks it).
    any_host: bool,
}

impl Policy {
    /// The loopback names, plus `hosts` and `origins` (as given on the command line), plus the
    /// address the server listens on when it is a specific one.
    pub fn new(hosts: &[String], origins: &[String], listen: Option<SocketAddr>) -> Self {
        let mut extra: Vec<String> = hosts
            .iter()
            .map(|h| h.trim().to_ascii_lowercase())
            .collect();
        if let Some(addr) = listen.filter(|a| !a.ip().is_unspecified() && !a.ip().is_loopback()) {
            extra.push(match addr.ip() {
                std::net::IpAddr::V6(ip) => format!("[{ip}]"),
                ip => ip.to_string(),
            });
        }
        Self {
            any_host: extra.iter().any(|h| h == "*"),
            hosts: extra,
            origins: origins
                .iter()
                .map(|o| o.trim().trim_end_matches('/').to_ascii_lowercase())
                .collect(),
        }
    }

    /// The names `Host` may carry besides the loopback ones (for messages and rmcp).
    pub fn extra_hosts(&self) -> &[String] {
        &self.hosts
    }

    /// Whether the Host check is off (`--allow-host '*'`).
    pub fn any_host(&self) -> bool {
        self.any_host
    }

    /// The origins named with `--allow-origin`.
    pub fn extra_origins(&self) -> &[String] {
        &self.origins
    }

    /// Whether a `Host` header value (`name`, `name:port`, `[v6]:port`) is one the server
    /// answers.
    pub fn allows_host(&self, host: &str) -> bool {
        if self.any_host {
            return true;
        }
        let host = host.trim().to_ascii_lowercase();
        let (name, _) = split_host(&host);
        if matches!(name, "localhost" | "127.0.0.1" | "[::1]") {
            return true;
        }
        self.hosts.iter().any(|allowed| {
            let (n, port) = split_host(allowed);
            match port {
                Some(_) => *allowed == host,
                None => n == name,
            }
        })
    }

    /// Whether `origin` may change state on a server reached as `host`: its own origin, or
    /// one named with `--allow-origin`. `loopback_any_port` also admits http://localhost,
    /// http://127.0.0.1 and http://[::1] on any port (what `/mcp` has always allowed: MCP
    /// clients running in a browser on the same machine).
    fn allows_origin(&self, origin: &str, host: &str, loopback_any_port: bool) -> bool {
        let origin = origin.trim().to_ascii_lowercase();
        let host = host.trim().to_ascii_lowercase();
        if origin == format!("http://{host}") || origin == format!("https://{host}") {
            return true;
        }
        if self.is_listed_origin(&origin) {
            return true;
        }
        loopback_any_port
            && origin.strip_prefix("http://").is_some_and(|rest| {
                matches!(split_host(rest).0, "localhost" | "127.0.0.1" | "[::1]")
            })
    }

    fn is_listed_origin(&self, origin: &str) -> bool {
        self.origins.iter().any(|o| o == origin)
    }
}

/// `name:port` → (`name`, Some(`port`)); `[v6]:port` keeps the brackets on the name.
fn split_host(host: &str) -> (&str, Option<&str>) {
    if host.starts_with('[') {
        return match host.find(']') {
            Some(end) => {
                let rest = &host[end + 1..];
                (&host[..=end], rest.strip_prefix(':'))
            }
            None => (host, None),
        };
    }
    match host.rsplit_once(':') {
        Some((name, port)) if !name.contains(':') => (name, Some(port)),
        _ => (host, None),
    }
}

/// The request's `Host` (or the authority of an absolute URI).
fn host_of(req: &Request) -> Option<String> {
    req.headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| req.uri().authority().map(|a| a.as_str().to_owned()))
}

fn forbidden(message: String) -> Response {
    ApiError::new(StatusCode::FORBIDDEN, "forbidden", message).into_response()
}

/// Whether the request can change anything (every method but GET, HEAD and OPTIONS).
fn changes_state(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// The middleware: Host allowlist, cross-site refusal for state-changing requests, CORS for
/// allowed origins only, and the headers every response carries.
pub async fn check(State(policy): State<Arc<Policy>>, req: Request, next: Next) -> Response {
    let Some(host) = host_of(&req) else {
        return forbidden(
            "the request has no Host header; the server answers only requests that name it".into(),
        );
    };
    if !policy.allows_host(&host) {
        return forbidden(format!(
            "Host {host:?} is not one this server answers (localhost, 127.0.0.1 and [::1] by default; \
             add names with --allow-host). This refusal protects against DNS rebinding"
        ));
    }
    let origin = req
        .headers()
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let is_mcp = req.uri().path() == "/mcp" || req.uri().path().starts_with("/mcp/");
    let api = is_mcp || req.uri().path().starts_with("/v1");
    if changes_state(req.method()) {
        match &origin {
            Some(o) if !policy.allows_origin(o, &host, is_mcp) => {
                return forbidden(format!(
                    "a {} from the web page at {o} is refused: only the server's own pages (and origins \
                     given with --allow-origin) may change anything. This refusal protects against \
                     cross-site request forgery",
                    req.method()
                ));
            }
            None if cross_site(req.headers()) => {
                return forbidden(format!(
                    "a cross-site {} is refused (Sec-Fetch-Site: cross-site); this refusal protects \
                     against cross-site request forgery",
                    req.method()
                ));
            }
            _ => {}
        }
    }
    let cors_origin = origin
        .map(|o| o.trim().to_ascii_lowercase())
        .filter(|o| policy.is_listed_origin(o));
    if req.method() == Method::OPTIONS
        && let Some(o) = &cors_origin
        && req
            .headers()
            .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD)
    {
        let mut response = StatusCode::NO_CONTENT.into_response();
        add_cors(response.headers_mut(), o, true);
        add_common(response.headers_mut(), api);
        return response;
    }
    let mut response = next.run(req).await;
    if let Some(o) = &cors_origin {
        add_cors(response.headers_mut(), o, false);
    }
    add_common(response.headers_mut(), api);
    response
}

fn cross_site(headers: &HeaderMap) -> bool {
    headers
        .get("sec-fetch-site")
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"cross-site"))
}

fn add_cors(headers: &mut HeaderMap, origin: &str, preflight: bool) {
    if let Ok(v) = HeaderValue::from_str(origin) {
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, v);
    }
    headers.append(header::VARY, HeaderValue::from_static("Origin"));
    headers.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static("etag, mcp-session-id, mcp-protocol-version"),
    );
    if preflight {
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static("GET, HEAD, POST, PUT, DELETE, OPTIONS"),
        );
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            HeaderValue::from_static(
                "authorization, content-type, if-match, last-event-id, mcp-session-id, mcp-protocol-version",
            ),
        );
        headers.insert(
            header::ACCESS_CONTROL_MAX_AGE,
            HeaderValue::from_static("600"),
        );
    }
}

fn add_common(headers: &mut HeaderMap, api: bool) {
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    if api && !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts() {
        let p = Policy::new(
            &["tools.example.com".into(), "api.example.com:8443".into()],
            &[],
            Some("192.168.1.5:7700".parse().expect("addr")),
        );
        for ok in [
            "localhost",
            "LOCALHOST:7700",
            "127.0.0.1:1",
            "[::1]:7700",
            "[::1]",
            "tools.example.com:9",
            "api.example.com:8443",
            "192.168.1.5:7700",
        ] {
            assert!(p.allows_host(ok), "{ok}");
        }
        for bad in [
            "evil.example.com",
            "localhost.evil.com",
            "127.0.0.1.nip.io",
            "api.example.com:8444",
            "api.example.com",
            "[::2]:7700",
            "",
        ] {
            assert!(!p.allows_host(bad), "{bad}");
        }
        assert!(Policy::new(&["*".into()], &[], None).allows_host("anything"));
    }

    #[test]
    fn origins() {
        let p = Policy::new(&[], &["https://app.example.com/".into()], None);
        assert!(p.allows_origin("http://127.0.0.1:7700", "127.0.0.1:7700", false));
        assert!(p.allows_origin("https://app.example.com", "127.0.0.1:7700", false));
        assert!(!p.allows_origin("http://127.0.0.1:7701", "127.0.0.1:7700", false));
        assert!(!p.allows_origin("http://evil.example.com", "127.0.0.1:7700", false));
        assert!(!p.allows_origin("null", "127.0.0.1:7700", false));
        assert!(p.allows_origin("http://localhost:6274", "127.0.0.1:7700", true));
        assert!(!p.allows_origin("http://evil.example.com", "127.0.0.1:7700", true));
    }
}
