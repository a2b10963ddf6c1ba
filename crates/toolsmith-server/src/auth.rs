//! Bearer tokens with roles (SPEC §8): `read` lists, shows, exports and validates; `call`
//! also calls; `admin` also edits. With no token configured (loopback only), every caller is
//! an admin named `local`.

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
}

impl Token {
    /// `NAME[:ROLE][@TOOLSET[,TOOLSET...]]=SECRET`; the role is `admin` when not given.
    pub fn parse(spec: &str) -> Result<Self, String> {
        let (who, secret) = spec
            .split_once('=')
            .ok_or_else(|| format!("token {spec:?}: expected NAME[:ROLE][@TOOLSET,...]=SECRET"))?;
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
        })
    }
}

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
}

impl Caller {
    /// The caller of a server that asks for no token: an admin named `local`.
    pub fn local() -> Self {
        Self {
            name: "local".into(),
            role: Role::Admin,
            auth_required: false,
            kind: "none",
            toolsets: Vec::new(),
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
    // The web UI's files are public: the page must load before it can ask for a token.
    if crate::ui::is_ui_path(req.uri().path()) && req.method() == Method::GET {
        return Ok(next.run(req).await);
    }
    let caller = if state.tokens.is_empty() {
        Caller::local()
    } else {
        let presented = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim);
        let token = presented.and_then(|p| {
            state
                .tokens
                .iter()
                .find(|t| constant_time_eq(t.secret.as_bytes(), p.as_bytes()))
        });
        let Some(token) = token else {
            return Err(ApiError::new(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "a valid bearer token is required (Authorization: Bearer ...)",
            ));
        };
        let need = needed(req.method(), req.uri().path());
        if token.role < need {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "forbidden",
                format!(
                    "token {:?} has role {:?}; this needs {need:?}",
                    token.name, token.role
                ),
            ));
        }
        Caller {
            name: token.name.clone(),
            role: token.role,
            auth_required: true,
            kind: "token",
            toolsets: token.toolsets.clone(),
        }
    };
    req.extensions_mut().insert(caller);
    Ok(next.run(req).await)
}

/// Compares secrets without an early exit on the first difference.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
