//! Bearer tokens with roles (SPEC §8, §14): `read` lists, shows, exports and validates;
//! `call` also calls; `admin` also edits. A token is a static one (`--token`,
//! `--tokens-file`, optionally limited to toolsets) or a JWT from the configured issuer
//! ([`crate::jwt`]); both can be used side by side. With neither configured (loopback only),
//! the caller is an admin named `local` — when it presents the local admin token `serve`
//! keeps in toolsmith's data folder ([`crate::AppState::set_local_token`]), so that no
//! process the gateway starts is that admin. `GET /v1/health` and `GET /v1/openapi.json`
//! answer anyone. A refusal is 401 with `WWW-Authenticate` saying
//! why and, with an issuer, where the protected resource metadata is.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;

use crate::AppState;
use crate::error::ApiError;

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Read,
    Call,
    Admin,
}

impl Role {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "read" => Some(Self::Read),
            "call" => Some(Self::Call),
            "admin" => Some(Self::Admin),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Token {
    pub name: String,
    pub secret: String,
    pub role: Role,
    /// The toolsets the token is limited to (empty: not limited).
    pub toolsets: Vec<String>,
    /// How often its holder may call tools (`rate_limit=100/1m` after the secret).
    pub rate_limit: Option<toolsmith_core::rate::RateLimit>,
}

impl Token {
    /// `NAME[:ROLE][@TOOLSET[,TOOLSET...]]=SECRET [rate_limit=N/PER]`; the role is `admin`
    /// when not given.
    pub fn parse(line: &str) -> Result<Self, String> {
        let (spec, options) = match line.split_once(char::is_whitespace) {
            Some((s, o)) => (s, o.trim()),
            None => (line, ""),
        };
        let (who, secret) = spec.split_once('=').ok_or_else(|| {
            format!("token {line:?}: expected NAME[:ROLE][@TOOLSET,...]=SECRET [rate_limit=N/PER]")
        })?;
        let mut rate_limit = None;
        for option in options.split_whitespace() {
            match option.split_once('=') {
                Some(("rate_limit", v)) => {
                    rate_limit = Some(
                        toolsmith_core::rate::RateLimit::parse(v)
                            .map_err(|e| format!("rate_limit: {e}"))?,
                    );
                }
                // Never quoted: a secret written with a space would be shown.
                Some(_) => {
                    return Err(format!(
                        "token {who:?}: an unknown option after the secret (the only one is rate_limit=N/PER)"
                    ));
                }
                None => {
                    return Err(format!(
                        "token {who:?}: text after the secret that is not an option (secrets hold no spaces; options are rate_limit=N/PER)"
                    ));
                }
            }
        }
        let (who, toolsets) = match who.split_once('@') {
            Some((who, sets)) => {
                let sets: Vec<String> = sets.split(',').map(|s| s.trim().to_owned()).collect();
                if let Some(bad) = sets
                    .iter()
                    .find(|s| !toolsmith_core::toolset::valid_name(s))
                {
                    return Err(format!(
                        "token {who:?}: invalid toolset name {bad:?} after `@` (1 to 64 letters, digits, `_` or `-`, separated by commas)"
                    ));
                }
                (who, sets)
            }
            None => (who, Vec::new()),
        };
        let (name, role) = match who.split_once(':') {
            Some((n, r)) => (
                n,
                Role::parse(r).ok_or_else(|| {
                    format!("token {n:?}: unknown role {r:?} (expected read, call or admin)")
                })?,
            ),
            None => (who, Role::Admin),
        };
        if name.is_empty() || secret.len() < 8 {
            return Err(format!(
                "token {name:?}: a name and a secret of at least 8 characters are needed"
            ));
        }
        Ok(Self {
            name: name.to_owned(),
            secret: secret.to_owned(),
            role,
            toolsets,
            rate_limit,
        })
    }
}

/// The toolsets of a caller whose token limits it to none (a JWT whose toolsets claim is
/// present but empty): no toolset has this name, so the caller sees no tool.
pub const NO_TOOLSETS: &str = "(none)";

/// Tokens from a file: one `NAME[:ROLE][@TOOLSET,...]=SECRET` per line; blank lines and
/// lines starting with `#` are skipped. Errors name the line.
pub fn parse_tokens_file(text: &str) -> Result<Vec<Token>, String> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
        .map(|(n, l)| Token::parse(l).map_err(|e| format!("line {n}: {e}")))
        .collect()
}

/// The liveness route, answered to anyone.
pub const HEALTH_PATH: &str = "/v1/health";

/// Where a replica takes the session calls another forwards to it ([`crate::sessions`]): no
/// token is asked there; the route checks a proof made for that one request.
pub const PEER_PATH: &str = "/v1/peer/session";

/// Who is calling; put in the request's extensions by [`require`].
#[derive(Debug, Clone)]
pub struct Caller {
    pub name: String,
    pub role: Role,
    /// Whether the server asks for tokens at all.
    pub auth_required: bool,
    /// How the caller proved who it is: `none` (no tokens asked), `token` (a static token)
    /// or `jwt`.
    pub kind: &'static str,
    /// The toolsets the caller is limited to (empty: not limited).
    pub toolsets: Vec<String>,
    /// Its own rate limit across tools (its token's or JWT's; else the server's default).
    pub rate_limit: Option<toolsmith_core::rate::RateLimit>,
}

impl Caller {
    /// The name the execution log and sessions know the caller by: the token's name, with
    /// `jwt:` before a JWT subject (so a static token and a JWT subject of the same name
    /// stay apart).
    pub fn log_name(&self) -> String {
        match self.kind {
            "jwt" => format!("jwt:{}", self.name),
            _ => self.name.clone(),
        }
    }

    /// The caller of a server that asks for no token: an admin named `local`.
    pub fn local() -> Self {
        Self {
            name: "local".into(),
            role: Role::Admin,
            auth_required: false,
            kind: "none",
            toolsets: Vec::new(),
            rate_limit: None,
        }
    }
}

/// The role a request needs, decided from the whole route — never from a suffix, which a
/// tool's own name could supply (a tool named `validate` or `call`): reads, validations and
/// plans `read`; calls and MCP `call`; every other write `admin`.
pub fn needed(method: &Method, path: &str) -> Role {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match (method, segments.as_slice()) {
        (_, ["mcp", ..]) => Role::Call,
        (&Method::POST, ["v1", "tools", _, "call"]) => Role::Call,
        (&Method::POST, ["v1", "tools", _, "validate" | "plan"]) => Role::Read,
        (&Method::POST, ["v1", "check"]) => Role::Read,
        (&Method::GET | &Method::HEAD | &Method::OPTIONS, _) => Role::Read,
        _ => Role::Admin,
    }
}

pub async fn require(
    State(state): State<Arc<AppState>>,
    mut req: Request,
    next: Next,
) -> Result<Response, ApiError> {
    // The web UI's files are public: the page must load before it can ask for a token. So
    // is the protected resource metadata: it tells a client where to get one.
    let path = req.uri().path();
    if (crate::ui::is_ui_path(path) || path.starts_with("/.well-known/"))
        && req.method() == Method::GET
    {
        return Ok(next.run(req).await);
    }
    // Replicas forwarding a session call prove themselves with their own token there, and
    // name the caller they checked. Liveness (status and version only) is for load
    // balancers, which hold no token; the API's description is the same for everyone.
    if (path == PEER_PATH && req.method() == Method::POST)
        || ((path == HEALTH_PATH || path == crate::openapi::PATH) && req.method() == Method::GET)
    {
        return Ok(next.run(req).await);
    }
    let jwt = state.jwt();
    let presented = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|p| !p.is_empty());
    let caller = if state.tokens.is_empty() && jwt.is_none() {
        match (state.local_token(), presented) {
            (None, _) => Caller::local(),
            (Some(local), Some(p)) if constant_time_eq(local.secret.as_bytes(), p.as_bytes()) => {
                Caller::local()
            }
            (Some(local), presented) => {
                let why = format!(
                    "{} the local admin token: open the web UI at the address `toolsmith serve` printed, or send `Authorization: Bearer` with the token in {}",
                    match presented {
                        Some(_) => "this is not",
                        None => "this server asks for",
                    },
                    local.file.display()
                );
                return Ok(unauthorized(&state, &req, Some(&why)));
            }
        }
    } else {
        let Some(presented) = presented else {
            return Ok(unauthorized(&state, &req, None));
        };
        let token = state
            .tokens
            .iter()
            .find(|t| constant_time_eq(t.secret.as_bytes(), presented.as_bytes()));
        match (token, jwt) {
            (Some(token), _) => Caller {
                name: token.name.clone(),
                role: token.role,
                auth_required: true,
                kind: "token",
                toolsets: token.toolsets.clone(),
                rate_limit: token.rate_limit,
            },
            (None, Some(jwt)) if presented.matches('.').count() == 2 => {
                match jwt.verify(presented).await {
                    Ok(caller) => caller,
                    Err(why) => return Ok(unauthorized(&state, &req, Some(&why))),
                }
            }
            (None, _) => {
                return Ok(unauthorized(
                    &state,
                    &req,
                    jwt.map(|_| "neither a known token nor a JWT"),
                ));
            }
        }
    };
    let need = needed(req.method(), req.uri().path());
    if caller.role < need {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            format!(
                "{:?} has role {:?}; this needs {need:?}",
                caller.name, caller.role
            ),
        ));
    }
    req.extensions_mut().insert(caller);
    Ok(next.run(req).await)
}

/// 401, with `WWW-Authenticate` saying why (RFC 6750) and, when JWTs are accepted, where
/// the protected resource metadata is (RFC 9728), so MCP clients can find the issuer.
fn unauthorized(state: &AppState, req: &Request, why: Option<&str>) -> Response {
    use axum::response::IntoResponse;
    let mut challenge = String::from("Bearer realm=\"toolsmith\"");
    if let Some(why) = why {
        let why = why.replace(['"', '\\'], "'");
        challenge.push_str(&format!(
            ", error=\"invalid_token\", error_description=\"{why}\""
        ));
    }
    if state.jwt().is_some() {
        let base = public_base(state, req);
        let suffix = resource_suffix(req.uri().path());
        challenge.push_str(&format!(
            ", resource_metadata=\"{base}/.well-known/oauth-protected-resource{suffix}\""
        ));
    }
    let message = match why {
        Some(why) => format!("the bearer token was refused: {why}"),
        None => "a valid bearer token is required (Authorization: Bearer ...)".into(),
    };
    let mut response =
        ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", message).into_response();
    if let Ok(v) = header::HeaderValue::from_str(&challenge) {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, v);
    }
    response
}

/// The resource a path belongs to, as the metadata path's suffix: `/mcp` (or
/// `/mcp/{toolset}`) for MCP, nothing for the REST API.
fn resource_suffix(path: &str) -> &str {
    match path.starts_with("/mcp") {
        true => path.trim_end_matches('/'),
        false => "",
    }
}

/// How clients reach this server: `--public-url`, else `http://` and the request's `Host`.
fn public_base(state: &AppState, req: &Request) -> String {
    if let Some(url) = state.public_url() {
        return url.trim_end_matches('/').to_owned();
    }
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("127.0.0.1");
    format!("http://{host}")
}

/// `GET /.well-known/oauth-protected-resource[/mcp...]` (RFC 9728): this server as an OAuth
/// protected resource — its identifier, the issuer that grants tokens for it, the scopes it
/// understands. 404 when no issuer is configured.
pub async fn resource_metadata(State(state): State<Arc<AppState>>, req: Request) -> Response {
    use axum::response::IntoResponse;
    let Some(jwt) = state.jwt() else {
        return ApiError::not_found(
            "this server accepts no OAuth tokens (start it with --jwt-issuer to publish metadata)",
        )
        .into_response();
    };
    let suffix = req
        .uri()
        .path()
        .strip_prefix("/.well-known/oauth-protected-resource")
        .unwrap_or_default();
    let base = public_base(&state, &req);
    axum::Json(serde_json::json!({
        "resource": format!("{base}{suffix}"),
        "authorization_servers": [jwt.config.issuer],
        "scopes_supported": ["toolsmith:read", "toolsmith:call", "toolsmith:admin"],
        "bearer_methods_supported": ["header"],
        "resource_name": "toolsmith",
    }))
    .into_response()
}

/// Compares secrets without an early exit on the first difference.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
