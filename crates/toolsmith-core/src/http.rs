//! HTTP tools (SPEC §12): what an `http` executor declares — method, URL template, fixed
//! headers, auth from config fields, body mode, response cap, allowed hosts — and the pure
//! rules around it (URL placeholders, header names, which addresses are refused).
//! Reading it from a catalog is in `catalog::executor::http`, the request a call makes in
//! `plan::http`, sending it in `toolsmith_exec`.

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde::Serialize;

use crate::place::ArrayStyle;

/// The methods an `http` tool may use.
pub const METHODS: [&str; 7] = ["GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE"];

/// The response body an `http` tool keeps unless it says otherwise (1 MiB).
pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 1024 * 1024;

/// Redirects followed at most.
pub const MAX_REDIRECTS: usize = 5;

/// Headers a tool cannot set: the client owns them.
pub const RESERVED_HEADERS: [&str; 5] = [
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "upgrade",
];

/// An `http` tool's request, as declared (`http:` in the catalog).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HttpCall {
    /// Upper case, one of [`METHODS`].
    pub method: String,
    /// `http(s)://host/path/{param}...`: placeholders only in the path.
    pub url: String,
    /// Fixed headers sent with every call.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth: Option<HttpAuth>,
    /// `whole`: the one `inject_as: body` parameter is the entire body; otherwise the body
    /// parameters form a JSON object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<BodyMode>,
    /// Bytes of response body kept; a longer body fails the call (`output_limit`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_response_bytes: Option<u64>,
    /// When not empty, the only hosts the tool may reach (its URL's, and redirects').
    /// A link-local or metadata address is reached only when named here literally.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allow_hosts: Vec<String>,
    /// Each parameter's place in the request, by parameter name (the catalog writes it on
    /// the parameter: see [`crate::model::Tool::to_catalog_value`]). A parameter not named
    /// here goes where [`HttpCall::default_part`] says.
    #[serde(skip)]
    pub places: BTreeMap<String, HttpPlace>,
}

impl HttpCall {
    pub fn max_response_bytes(&self) -> u64 {
        self.max_response_bytes
            .unwrap_or(DEFAULT_MAX_RESPONSE_BYTES)
    }

    /// Where a parameter without `inject_as` goes: the body for a method that has one, the
    /// query otherwise.
    pub fn default_part(&self) -> RequestPart {
        if method_has_body(&self.method) {
            RequestPart::Body
        } else {
            RequestPart::Query
        }
    }

    /// Where the parameter `name` goes.
    pub fn place(&self, name: &str) -> HttpPlace {
        self.places.get(name).cloned().unwrap_or(HttpPlace {
            inject_as: self.default_part(),
            ..HttpPlace::default()
        })
    }

    /// The parameter's name in the request: its `http_name`, or its own.
    pub fn wire_name<'a>(&'a self, param: &'a str) -> &'a str {
        self.places
            .get(param)
            .and_then(|p| p.http_name.as_deref())
            .unwrap_or(param)
    }
}

/// How an `http` tool's parameter reaches the request (SPEC §12).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct HttpPlace {
    pub inject_as: RequestPart,
    /// The name in the request (query key, header name, body property) when it is not the
    /// parameter's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_name: Option<String>,
    /// For arrays in a query or header: repeated (the default in a query) or joined.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub array_style: Option<ArrayStyle>,
    /// For `array_style: join`; `,` when not given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub separator: Option<String>,
}

/// The part of the request a parameter goes into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestPart {
    /// One path segment of the URL template, percent-encoded.
    Path,
    /// A query parameter.
    Query,
    /// A request header.
    Header,
    /// A property of the JSON body (or the whole body with `body: whole`).
    #[default]
    Body,
}

impl RequestPart {
    /// Its name in the catalog (`inject_as: header`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Path => "path",
            Self::Query => "query",
            Self::Header => "header",
            Self::Body => "body",
        }
    }

    /// Its name in messages: `the path`, `the query`, `the headers`, `the body`.
    pub fn noun(self) -> &'static str {
        match self {
            Self::Path => "path",
            Self::Query => "query",
            Self::Header => "headers",
            Self::Body => "body",
        }
    }
}

/// Whether `host` (a name or an address) may be reached under `allow` (empty: any host):
/// `api.example.com` matches itself, `*.example.com` any name under it.
pub fn host_allowed(allow: &[String], host: &str) -> bool {
    allow.is_empty() || allow.iter().any(|h| host_matches(h, host))
}

/// Whether `allow` names `host` literally (what a link-local or metadata address needs).
pub fn names_host(allow: &[String], host: &str) -> bool {
    allow.iter().any(|h| {
        h.trim_matches(['[', ']'])
            .eq_ignore_ascii_case(host.trim_matches(['[', ']']))
    })
}

fn host_matches(pattern: &str, host: &str) -> bool {
    let pattern = pattern.trim_matches(['[', ']']).to_ascii_lowercase();
    let host = host.trim_matches(['[', ']']).to_ascii_lowercase();
    match pattern.strip_prefix("*.") {
        Some(suffix) => host.len() > suffix.len() && host.ends_with(&format!(".{suffix}")),
        None => pattern == host,
    }
}

/// Where an `http` tool's credentials come from: names of its config fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HttpAuth {
    /// `Authorization: Bearer <field>`.
    Bearer(String),
    /// `Authorization: Basic base64(<user field>:<password field>)`.
    Basic(String, String),
    /// A header `name` whose value is the field `value`.
    Header { name: String, value: String },
    /// A query parameter `name` whose value is the field `value`.
    Query { name: String, value: String },
}

impl HttpAuth {
    /// The config fields it reads.
    pub fn fields(&self) -> Vec<&str> {
        match self {
            Self::Bearer(f) => vec![f],
            Self::Basic(u, p) => vec![u, p],
            Self::Header { value, .. } | Self::Query { value, .. } => vec![value],
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BodyMode {
    Whole,
}

/// GET, HEAD and OPTIONS change nothing; an imported operation with another method is
/// dangerous unless the operator says otherwise.
pub fn is_safe_method(method: &str) -> bool {
    matches!(method, "GET" | "HEAD" | "OPTIONS")
}

/// Whether a request of `method` carries a body built from parameters.
pub fn method_has_body(method: &str) -> bool {
    matches!(method, "POST" | "PUT" | "PATCH" | "DELETE")
}

/// The `{name}` placeholders of a URL template, in order. An unmatched `{` or `}`, an empty
/// or nested placeholder is an error.
pub fn placeholders(template: &str) -> Result<Vec<String>, TemplateError> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find(['{', '}']) {
        if rest[open..].starts_with('}') {
            return Err(TemplateError::Unopened(template.to_owned()));
        }
        let after = &rest[open + 1..];
        let close = after
            .find(['{', '}'])
            .filter(|&i| after[i..].starts_with('}'))
            .ok_or_else(|| TemplateError::Unclosed(template.to_owned()))?;
        let name = &after[..close];
        if name.is_empty() {
            return Err(TemplateError::Empty(template.to_owned()));
        }
        out.push(name.to_owned());
        rest = &after[close + 1..];
    }
    Ok(out)
}

/// A URL template whose placeholders do not pair up (the template is in each variant).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("a `}}` without its `{{` in {0:?}")]
    Unopened(String),
    #[error("a `{{` without its `}}` in {0:?}")]
    Unclosed(String),
    #[error("an empty `{{}}` in {0:?}")]
    Empty(String),
}

/// Whether `name` is an HTTP header name (RFC 9110 token characters).
pub fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Whether `value` may be sent as a header value: no CR, LF or NUL (which would end the
/// header and start another), no other control characters but tab.
pub fn is_header_value(value: &str) -> bool {
    !value.chars().any(|c| c.is_control() && c != '\t')
}

/// Link-local (169.254.0.0/16, fe80::/10) and cloud metadata addresses (fd00:ec2::254):
/// refused unless a tool names them in `allow_hosts`. An IPv6 address that carries an IPv4
/// one — IPv4-mapped (`::ffff:0:0/96`), IPv4-compatible (`::/96`), SIIT (`::ffff:0:0:0/96`),
/// NAT64's well-known prefix (`64:ff9b::/96`) — is judged by the IPv4 address it carries.
pub fn is_link_local_or_metadata(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_link_local(),
        IpAddr::V6(v6) => {
            if let Some(v4) = embedded_ipv4(v6) {
                return v4.is_link_local();
            }
            let s = v6.segments();
            (s[0] & 0xffc0) == 0xfe80
                || v6 == std::net::Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254)
        }
    }
}

/// The IPv4 address an IPv6 address carries in its last 32 bits under the prefixes that
/// translate to IPv4.
fn embedded_ipv4(v6: std::net::Ipv6Addr) -> Option<std::net::Ipv4Addr> {
    let s = v6.segments();
    let last =
        std::net::Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    let carries = matches!(s[..6], [0, 0, 0, 0, 0, 0xffff] | [0, 0, 0, 0, 0xffff, 0])
        // IPv4-compatible (deprecated), but not :: and ::1.
        || (s[..6] == [0; 6] && (s[6] != 0 || s[7] > 1))
        || s[..6] == [0x64, 0xff9b, 0, 0, 0, 0];
    carries.then_some(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_read_in_order_and_broken_ones_refused() {
        assert_eq!(
            placeholders("https://x/repos/{owner}/{repo}/issues/{number}").expect("placeholders"),
            ["owner", "repo", "number"]
        );
        assert!(placeholders("https://x/{a").is_err());
        assert!(placeholders("https://x/a}").is_err());
        assert!(placeholders("https://x/{}").is_err());
        assert!(placeholders("https://x/{a{b}}").is_err());
    }

    #[test]
    fn link_local_and_metadata_addresses_are_recognised() {
        for bad in [
            "169.254.169.254",
            "fe80::1",
            "fd00:ec2::254",
            "::ffff:169.254.1.1",
            "::ffff:a9fe:a9fe",
            "::a9fe:a9fe",
            "64:ff9b::a9fe:a9fe",
            "::ffff:0:a9fe:a9fe",
        ] {
            assert!(
                is_link_local_or_metadata(bad.parse().expect("address")),
                "{bad}"
            );
        }
        for good in [
            "127.0.0.1",
            "10.0.0.1",
            "::1",
            "::",
            "2001:db8::1",
            "64:ff9b::808:808",
            "::ffff:0:a00:1",
        ] {
            assert!(
                !is_link_local_or_metadata(good.parse().expect("address")),
                "{good}"
            );
        }
    }

    #[test]
    fn allowed_hosts_match_names_and_wildcards() {
        let allow = ["api.example.com".to_owned(), "*.cdn.example.com".to_owned()];
        assert!(host_allowed(&allow, "api.example.com"));
        assert!(host_allowed(&allow, "API.example.com"));
        assert!(host_allowed(&allow, "a.cdn.example.com"));
        assert!(!host_allowed(&allow, "cdn.example.com"));
        assert!(!host_allowed(&allow, "evil.com"));
        assert!(!host_allowed(&allow, "api.example.com.evil.com"));
        assert!(host_allowed(&[], "anything"));
        assert!(names_host(&["[fd00:ec2::254]".to_owned()], "fd00:ec2::254"));
    }
}
