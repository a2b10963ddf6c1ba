//! The engine's one HTTP client (SPEC §12), shared by `http` tools and the `http_request`
//! built-in: reqwest over rustls, one connection pool.
//!
//! What it guarantees for every request it sends:
//! - redirects are followed by hand, at most [`MAX_REDIRECTS`], never from https to http,
//!   and credentials (secret headers) are dropped when a redirect leaves the first host;
//! - the host of the URL and of every redirect passes the tool's `allow_hosts`;
//! - link-local and cloud metadata addresses (169.254.0.0/16, fe80::/10, fd00:ec2::254) are
//!   refused, whether written in the URL or reached through DNS, unless the tool names the
//!   address in `allow_hosts`;
//! - the body is read up to a cap and the request ends at a deadline;
//! - no message carries the URL reqwest saw (its query may hold a credential).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use toolsmith_core::http::{MAX_REDIRECTS, host_allowed, is_link_local_or_metadata, names_host};
use toolsmith_core::plan::Header;

/// One request to send.
pub struct Outbound<'a> {
    pub method: &'a str,
    pub url: &'a str,
    /// What messages show for the URL (credentials as `***`).
    pub url_shown: &'a str,
    pub headers: &'a [Header],
    pub body: Option<String>,
    /// Bytes of body read at most; more is [`Failure::TooLarge`], or with `truncate` the
    /// body cut there.
    pub max_bytes: u64,
    pub truncate: bool,
    pub timeout: Duration,
    /// Hosts allowed (empty: any); an address listed here may be link-local.
    pub allow_hosts: &'a [String],
}

/// Why no response came back.
#[derive(Debug)]
pub enum Failure {
    /// The request was not sent: a host or a redirect toolsmith refuses.
    Refused(String),
    /// No answer: the name did not resolve, the connection or TLS failed, it broke.
    Network(String),
    Timeout,
    /// The body is longer than the cap.
    TooLarge {
        limit: u64,
    },
}

/// A response, its body read whole.
pub struct Response {
    pub status: u16,
    pub reason: &'static str,
    /// Lower-case names.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Redirects followed.
    pub redirects: usize,
    /// The body was cut at the cap (`truncate`).
    pub truncated: bool,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The HTTP client could not be built (its TLS setup), with the library's reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot start the HTTP client: {0}")]
pub struct ClientError(pub String);

#[derive(Debug, Clone)]
pub struct HttpClient {
    client: reqwest::Client,
}

impl HttpClient {
    pub fn new() -> Result<Self, ClientError> {
        // reqwest 0.13 leaves the crypto provider to the application: ring, as elsewhere.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .dns_resolver(Arc::new(Guard))
            .connect_timeout(Duration::from_secs(10))
            .pool_idle_timeout(Duration::from_secs(60))
            // A proxy from the environment would resolve names where the guard cannot see.
            .no_proxy()
            .build()
            .map_err(|e| ClientError(e.to_string()))?;
        Ok(Self { client })
    }

    /// Sends `req`, following redirects under the rules above.
    pub async fn send(&self, req: Outbound<'_>) -> Result<Response, Failure> {
        let deadline = Instant::now() + req.timeout;
        let mut url = reqwest::Url::parse(req.url)
            .map_err(|e| Failure::Refused(format!("{}: not a URL ({e})", req.url_shown)))?;
        let first_host = (
            url.host_str().map(str::to_owned),
            url.port_or_known_default(),
        );
        let mut method = req.method.to_owned();
        let mut body = req.body;
        let mut headers: Vec<Header> = req.headers.to_vec();
        let mut shown = req.url_shown.to_owned();
        for hop in 0..=MAX_REDIRECTS {
            check_host(&url, req.allow_hosts, &shown)?;
            let m = reqwest::Method::from_bytes(method.as_bytes())
                .map_err(|_| Failure::Refused(format!("{method:?} is not an HTTP method")))?;
            let mut builder = self.client.request(m, url.clone());
            for h in &headers {
                builder = builder.header(h.name.as_str(), h.value.as_str());
            }
            if let Some(b) = &body {
                builder = builder.body(b.clone());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let response = match tokio::time::timeout(left, builder.send()).await {
                Err(_) => return Err(Failure::Timeout),
                Ok(Err(e)) if e.is_timeout() => return Err(Failure::Timeout),
                Ok(Err(e)) => return Err(Failure::Network(describe(e, &method, &shown))),
                Ok(Ok(r)) => r,
            };
            let status = response.status();
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok());
            if status.is_redirection()
                && status != reqwest::StatusCode::NOT_MODIFIED
                && let Some(location) = location
            {
                if hop == MAX_REDIRECTS {
                    return Err(Failure::Refused(format!(
                        "{method} {shown}: more than {MAX_REDIRECTS} redirects"
                    )));
                }
                let next = url.join(location).map_err(|e| {
                    Failure::Refused(format!(
                        "{method} {shown}: redirected to {location:?}, which is not a URL ({e})"
                    ))
                })?;
                if url.scheme() == "https" && next.scheme() != "https" {
                    return Err(Failure::Refused(format!(
                        "{method} {shown}: redirected from https to {next}; toolsmith never leaves https"
                    )));
                }
                if (
                    next.host_str().map(str::to_owned),
                    next.port_or_known_default(),
                ) != first_host
                {
                    headers.retain(|h| !h.secret);
                }
                let to_get = status == reqwest::StatusCode::SEE_OTHER
                    || (matches!(status.as_u16(), 301 | 302) && method == "POST");
                if to_get && method != "HEAD" {
                    method = "GET".into();
                    body = None;
                    headers.retain(|h| h.name != "content-type");
                }
                shown = next.to_string();
                url = next;
                continue;
            }
            let reason = status.canonical_reason().unwrap_or("");
            let kept: Vec<(String, String)> = response
                .headers()
                .iter()
                .map(|(n, v)| {
                    (
                        n.as_str().to_owned(),
                        String::from_utf8_lossy(v.as_bytes()).into_owned(),
                    )
                })
                .collect();
            let cap = Cap {
                max: req.max_bytes,
                truncate: req.truncate,
            };
            let (body, truncated) = read_capped(response, cap, deadline, &method, &shown).await?;
            return Ok(Response {
                status: status.as_u16(),
                reason,
                headers: kept,
                body,
                redirects: hop,
                truncated,
            });
        }
        unreachable!("the loop returns by its last hop")
    }
}

/// How much of a body is read, and what happens past it.
struct Cap {
    max: u64,
    truncate: bool,
}

/// The body, and whether it was cut at the cap.
async fn read_capped(
    mut response: reqwest::Response,
    cap: Cap,
    deadline: Instant,
    method: &str,
    shown: &str,
) -> Result<(Vec<u8>, bool), Failure> {
    let max = cap.max;
    if !cap.truncate && response.content_length().is_some_and(|n| n > max) {
        return Err(Failure::TooLarge { limit: max });
    }
    let mut body = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, response.chunk()).await {
            Err(_) => return Err(Failure::Timeout),
            Ok(Err(e)) => return Err(Failure::Network(describe(e, method, shown))),
            Ok(Ok(None)) => return Ok((body, false)),
            Ok(Ok(Some(chunk))) => {
                if (body.len() + chunk.len()) as u64 > max {
                    if !cap.truncate {
                        return Err(Failure::TooLarge { limit: max });
                    }
                    let room = max as usize - body.len();
                    body.extend_from_slice(&chunk[..room]);
                    return Ok((body, true));
                }
                body.extend_from_slice(&chunk);
            }
        }
    }
}

/// A reqwest error as a message, without the URL it carries (the shown one instead), with
/// its causes.
fn describe(e: reqwest::Error, method: &str, shown: &str) -> String {
    use std::error::Error as _;
    let e = e.without_url();
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    format!("{method} {shown}: {text}")
}

/// The scheme, the allowed hosts and the refused addresses, for one hop.
fn check_host(url: &reqwest::Url, allow: &[String], shown: &str) -> Result<(), Failure> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(Failure::Refused(format!(
            "{shown}: only http and https URLs are reached"
        )));
    }
    let host = match url.host() {
        Some(url::Host::Domain(d)) => d.to_ascii_lowercase(),
        Some(url::Host::Ipv4(ip)) => ip.to_string(),
        Some(url::Host::Ipv6(ip)) => ip.to_string(),
        None => return Err(Failure::Refused(format!("{shown}: no host"))),
    };
    if !host_allowed(allow, &host) {
        return Err(Failure::Refused(format!(
            "{shown}: host {host} is not in the tool's allow_hosts ({})",
            allow.join(", ")
        )));
    }
    let literal = match url.host() {
        Some(url::Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
        _ => None,
    };
    if let Some(ip) = literal
        && is_link_local_or_metadata(ip)
        && !names_host(allow, &host)
    {
        return Err(Failure::Refused(format!(
            "{shown}: {ip} is a link-local or cloud metadata address, refused unless the tool names it in allow_hosts"
        )));
    }
    Ok(())
}

/// Resolves names as the system does, and drops link-local and metadata addresses: a name
/// that resolves only to those is an error.
struct Guard;

impl Resolve for Guard {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let all: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let kept: Vec<SocketAddr> = all
                .iter()
                .copied()
                .filter(|a| !is_link_local_or_metadata(a.ip()))
                .collect();
            if kept.is_empty() && !all.is_empty() {
                return Err(format!(
                    "{host} resolves only to link-local or metadata addresses, which toolsmith refuses (write the address in the URL and name it in allow_hosts to reach it)"
                )
                .into());
            }
            Ok(Box::new(kept.into_iter()) as Addrs)
        })
    }
}
