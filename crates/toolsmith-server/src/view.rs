//! The HTTP side of the caller's view (SPEC §14): what a request asks to narrow to — the
//! toolset in the path (`/mcp/{toolset}`), `X-Toolsmith-Toolset: a,b` / `?toolset=a,b`,
//! `X-Toolsmith-Tools: glob,glob` / `?tools=`, `X-Toolsmith-Discovery: search|all` — read
//! into an [`Ask`], and the [`View`] the gateway makes of it ([`Gateway::view`]) attached to
//! the request for every route and MCP to read ([`attach`], [`of`]).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::Response;
use toolsmith_gateway::view::{Ask, Asked, DISCOVERY_HEADER, TOOLS_HEADER, TOOLSET_HEADER, View};
use toolsmith_gateway::{Caller, Gateway};
use toolsmith_store::Store;

use crate::error::ApiError;

/// Reads the narrowing of a request: its path, headers and query.
pub fn ask_of(req: &Request) -> Ask {
    let mut ask = Ask::default();
    let segments: Vec<&str> = req.uri().path().trim_matches('/').split('/').collect();
    if let ["mcp", name] = segments.as_slice() {
        ask.endpoint = Some((*name).to_owned());
    }
    let header = |name: &str| {
        req.headers()
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
    };
    ask.toolsets = header(TOOLSET_HEADER);
    ask.tools = header(TOOLS_HEADER);
    ask.discovery = header(DISCOVERY_HEADER).pop();
    if let Some(query) = req.uri().query() {
        for (key, value) in url_pairs(query) {
            let list = value
                .split(',')
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty());
            match key.as_str() {
                "toolset" => ask.toolsets.extend(list),
                "tools" => ask.tools.extend(list),
                "discovery" => ask.discovery = Some(value),
                _ => {}
            }
        }
    }
    ask
}

/// `a=b&c=d` decoded.
fn url_pairs(query: &str) -> Vec<(String, String)> {
    axum::extract::Query::<Vec<(String, String)>>::try_from_uri(
        &format!("/?{query}").parse().unwrap_or_default(),
    )
    .map(|q| q.0)
    .unwrap_or_default()
}

/// Puts the caller's [`View`] in the request's extensions, after authentication. Routes that
/// name a tool (`/v1/tools/{name}...`) answer for a tool outside the view exactly as for a
/// tool that does not exist.
pub async fn attach(
    State(state): State<Arc<Gateway>>,
    mut req: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let Some(caller) = req.extensions().get::<Caller>().cloned() else {
        return Ok(next.run(req).await);
    };
    // Upstream servers and OpenAPI sources span toolsets: a caller limited to some works
    // with its tools only.
    let path = req.uri().path();
    if !caller.toolsets.is_empty()
        && (path.starts_with("/v1/servers")
            || path.starts_with("/v1/openapi/")
            || path.starts_with("/v1/check/"))
    {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            format!(
                "{:?} is limited to the toolsets {}: upstream servers and OpenAPI imports are for callers that are not",
                caller.name,
                caller.toolsets.join(", ")
            ),
        ));
    }
    let ask = ask_of(&req);
    let view = state.view(&caller, &ask).await?;
    if !view.is_everything()
        && let ["v1", "tools", name, ..] = req
            .uri()
            .path()
            .trim_start_matches('/')
            .split('/')
            .collect::<Vec<_>>()
            .as_slice()
        && let Ok(record) = state.store.get(name).await
        && !view.admits(&record.tool)
    {
        return Err(toolsmith_store::StoreError::NotFound(format!("tool {name:?}")).into());
    }
    req.extensions_mut().insert(Arc::new(view));
    req.extensions_mut().insert(Arc::new(Asked { caller, ask }));
    Ok(next.run(req).await)
}

/// The view a request carries (every tool when none was attached: a route outside the
/// authenticated stack).
pub fn of(extensions: &axum::http::Extensions) -> Arc<View> {
    extensions
        .get::<Arc<View>>()
        .cloned()
        .unwrap_or_else(|| Arc::new(View::everything()))
}
