//! The HTTP side of who is calling (SPEC §8, §14): the bearer secret read from
//! `Authorization`, the role each route needs ([`needed`]), the 401 with `WWW-Authenticate`
//! saying why and, with a JWT issuer, where the protected resource metadata is (RFC 9728),
//! and that document. Whose secret it is the gateway decides
//! ([`toolsmith_gateway::identity`]). `GET /v1/health`, `GET /v1/openapi.json`, the web UI's
//! files and the peer route (which checks a proof of its own) answer anyone.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;

use toolsmith_gateway::connections;
use toolsmith_gateway::sessions::PEER_PATH;
use toolsmith_gateway::{Gateway, Role};

use crate::error::ApiError;

/// The liveness route, answered to anyone.
pub const HEALTH_PATH: &str = "/v1/health";

/// The role a request needs, decided from the whole route — never from a suffix, which a
/// tool's own name could supply (a tool named `validate` or `call`): reads, validations and
/// plans `read`; calls and MCP `call`; every other write `admin`.
pub fn needed(method: &Method, path: &str) -> Role {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match (method, segments.as_slice()) {
        (_, ["mcp", ..]) => Role::Call,
        (&Method::POST, ["v1", "tools", _, "call"]) => Role::Call,
        // An upstream may act on a read or a prompt: the call role, as for its tools.
        (&Method::GET | &Method::HEAD, ["v1", "resources", "read"]) => Role::Call,
        (&Method::POST, ["v1", "prompts", _, "get"]) => Role::Call,
        (&Method::POST, ["v1", "tools", _, "validate" | "plan"]) => Role::Read,
        (&Method::POST, ["v1", "check"]) => Role::Read,
        // A caller connects (and forgets) its own account with a per-user server.
        (&Method::POST | &Method::DELETE, ["v1", "connections", _]) => Role::Call,
        (&Method::GET | &Method::HEAD | &Method::OPTIONS, _) => Role::Read,
        _ => Role::Admin,
    }
}

pub async fn require(
    State(state): State<Arc<Gateway>>,
    mut req: Request,
    next: Next,
) -> Result<Response, ApiError> {
    // The web UI's files are public: the page must load before it can ask for a token. So
    // is the protected resource metadata: it tells a client where to get one.
    let path = req.uri().path();
    // So are OAuth's callback (the browser coming back from an authorization server: its
    // `state` names an authorization begun here, and is good once) and toolsmith's client
    // metadata document.
    if (crate::ui::is_ui_path(path)
        || path.starts_with("/.well-known/")
        || path == connections::CALLBACK_PATH
        || path == connections::CLIENT_METADATA_PATH)
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
    let presented = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|p| !p.is_empty());
    let caller = match state.auth.authenticate(presented).await {
        Ok(caller) => caller,
        Err(refused) => return Ok(unauthorized(&state, &req, refused.why.as_deref())),
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
fn unauthorized(state: &Gateway, req: &Request, why: Option<&str>) -> Response {
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
fn public_base(state: &Gateway, req: &Request) -> String {
    public_base_of(state, req.headers())
}

/// [`public_base`] from a request's headers.
pub(crate) fn public_base_of(state: &Gateway, headers: &header::HeaderMap) -> String {
    if let Some(url) = state.public_url() {
        return url.trim_end_matches('/').to_owned();
    }
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("127.0.0.1");
    format!("http://{host}")
}

/// `GET /.well-known/oauth-protected-resource[/mcp...]` (RFC 9728): this server as an OAuth
/// protected resource — its identifier, the issuer that grants tokens for it, the scopes it
/// understands. 404 when no issuer is configured.
pub async fn resource_metadata(State(state): State<Arc<Gateway>>, req: Request) -> Response {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reading_a_resource_or_getting_a_prompt_needs_the_call_role() {
        let get = Method::GET;
        let post = Method::POST;
        assert_eq!(needed(&get, "/v1/resources"), Role::Read);
        assert_eq!(needed(&get, "/v1/prompts"), Role::Read);
        assert_eq!(needed(&get, "/v1/resources/read"), Role::Call);
        assert_eq!(needed(&post, "/v1/prompts/gh__triage/get"), Role::Call);
        assert_eq!(needed(&post, "/v1/tools/t/call"), Role::Call);
        assert_eq!(needed(&post, "/v1/connections/notion"), Role::Call);
        assert_eq!(
            needed(&Method::DELETE, "/v1/connections/notion"),
            Role::Call
        );
        assert_eq!(needed(&post, "/v1/servers/notion/connect"), Role::Admin);
        // A name shaped like a route's suffix does not change the role.
        assert_eq!(needed(&post, "/v1/prompts/get/x"), Role::Admin);
        assert_eq!(needed(&Method::PUT, "/v1/tools/t"), Role::Admin);
    }
}
