//! The caller's view of the registry (SPEC §14): the one place that decides which tools a
//! request may see. Every front door asks it — MCP `tools/list` and `tools/call` (HTTP and
//! stdio), REST listing, showing, calling, editing, export and the run log — so a tool
//! outside the view answers exactly as a tool that does not exist.
//!
//! A view is the intersection of what the caller's token (or JWT) is limited to — the union
//! of its toolsets — with what the request narrows to: the toolset in the path
//! (`/mcp/{toolset}`), `X-Toolsmith-Toolset: a,b` / `?toolset=a,b` (every one of them) and
//! `X-Toolsmith-Tools: glob,glob` / `?tools=` (any of them). Narrowing only ever narrows.
//! `X-Toolsmith-Discovery: search` (or a toolset with `discovery: search`) serves the view
//! as two tools, `search_tools` and `call_tool` ([`crate::mcp_search`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::Response;
use globset::GlobSet;
use toolsmith_core::Tool;
use toolsmith_core::toolset::{Discovery, Toolset, glob_set};
use toolsmith_store::{Store, ToolsetStore};

use crate::AppState;
use crate::auth::Caller;
use crate::error::ApiError;

/// The header naming toolsets to narrow to (all of them).
pub const TOOLSET_HEADER: &str = "x-toolsmith-toolset";
/// The header naming tool globs to narrow to (any of them).
pub const TOOLS_HEADER: &str = "x-toolsmith-tools";
/// The header choosing how tools are shown (`all` or `search`).
pub const DISCOVERY_HEADER: &str = "x-toolsmith-discovery";

/// The toolsets by name, as read at one registry generation.
pub type Toolsets = Arc<BTreeMap<String, Arc<Toolset>>>;

/// Which tools one request may see.
#[derive(Debug, Clone, Default)]
pub struct View {
    /// The caller's limit: a tool must be in one of these (`None`: not limited).
    limit: Option<Vec<Arc<Toolset>>>,
    /// Narrowing: a tool must be in every one of these.
    narrow: Vec<Arc<Toolset>>,
    /// Narrowing by name: a tool must match one of these.
    globs: Option<GlobSet>,
    /// Serve as `search_tools` + `call_tool`.
    pub search: bool,
}

impl View {
    /// Every tool, each as itself.
    pub fn everything() -> Self {
        Self::default()
    }

    /// Whether the view hides nothing (then nothing needs checking).
    pub fn is_everything(&self) -> bool {
        self.limit.is_none() && self.narrow.is_empty() && self.globs.is_none()
    }

    pub fn admits(&self, tool: &Tool) -> bool {
        self.limit
            .as_ref()
            .is_none_or(|sets| sets.iter().any(|s| s.admits(tool)))
            && self.narrow.iter().all(|s| s.admits(tool))
            && self
                .globs
                .as_ref()
                .is_none_or(|g| g.is_match(tool.name.as_str()))
    }
}

/// What a request asks to narrow to.
#[derive(Debug, Clone, Default)]
pub struct Ask {
    /// The toolset of the endpoint (`/mcp/{toolset}`, `toolsmith mcp --toolset`).
    pub endpoint: Option<String>,
    pub toolsets: Vec<String>,
    pub tools: Vec<String>,
    /// `all` or `search`.
    pub discovery: Option<String>,
}

impl Ask {
    /// Reads the narrowing of a request: its path, headers and query.
    pub fn of(req: &Request) -> Self {
        let mut ask = Self::default();
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

    fn is_empty(&self) -> bool {
        self.endpoint.is_none()
            && self.toolsets.is_empty()
            && self.tools.is_empty()
            && self.discovery.is_none()
    }
}

/// `a=b&c=d` decoded.
fn url_pairs(query: &str) -> Vec<(String, String)> {
    axum::extract::Query::<Vec<(String, String)>>::try_from_uri(
        &format!("/?{query}").parse().unwrap_or_default(),
    )
    .map(|q| q.0)
    .unwrap_or_default()
}

/// The view of `caller` asking for `ask`. An unknown toolset is an error naming the ones the
/// caller may use (404 for an endpoint, 400 for narrowing).
pub async fn resolve(state: &AppState, caller: &Caller, ask: &Ask) -> Result<View, ApiError> {
    if caller.toolsets.is_empty() && ask.is_empty() {
        return Ok(View::everything());
    }
    let sets = state.toolsets().await?;
    let limit = (!caller.toolsets.is_empty()).then(|| {
        caller
            .toolsets
            .iter()
            .filter_map(|n| sets.get(n).cloned())
            .collect::<Vec<_>>()
    });
    // The toolsets this caller may name: its own when limited, else every one.
    let known = || match &caller.toolsets {
        own if own.is_empty() => sets.keys().cloned().collect::<Vec<_>>(),
        own => own
            .iter()
            .filter(|n| sets.contains_key(*n))
            .cloned()
            .collect(),
    };
    let find = |name: &String, status: StatusCode| {
        let visible = caller.toolsets.is_empty() || caller.toolsets.contains(name);
        match sets.get(name).filter(|_| visible) {
            Some(s) => Ok(s.clone()),
            None => Err(ApiError::new(
                status,
                "unknown_toolset",
                format!(
                    "unknown toolset {name:?}; the toolsets are: {}",
                    match known() {
                        k if k.is_empty() => "(none)".to_owned(),
                        k => k.join(", "),
                    }
                ),
            )),
        }
    };
    let mut narrow = Vec::new();
    let mut search = false;
    if let Some(name) = &ask.endpoint {
        let set = find(name, StatusCode::NOT_FOUND)?;
        search = set.discovery == Discovery::Search;
        narrow.push(set);
    }
    for name in &ask.toolsets {
        narrow.push(find(name, StatusCode::BAD_REQUEST)?);
    }
    let globs = match ask.tools.is_empty() {
        true => None,
        false => Some(
            glob_set(&ask.tools)
                .map_err(|m| ApiError::bad_request(format!("{}: {m}", TOOLS_HEADER)))?,
        ),
    };
    match ask.discovery.as_deref() {
        None => {}
        Some("search") => search = true,
        Some("all") => search = false,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "{DISCOVERY_HEADER}: unknown mode {other:?} (expected all or search)"
            )));
        }
    }
    Ok(View {
        limit,
        narrow,
        globs,
        search,
    })
}

/// Puts the caller's [`View`] in the request's extensions, after authentication. Routes that
/// name a tool (`/v1/tools/{name}...`) answer for a tool outside the view exactly as for a
/// tool that does not exist.
pub async fn attach(
    State(state): State<Arc<AppState>>,
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
    let ask = Ask::of(&req);
    let view = resolve(&state, &caller, &ask).await?;
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

/// Who asked for what: what a lasting request (an MCP subscription) resolves its view from
/// again after each registry change, so an edited toolset is followed.
#[derive(Debug, Clone)]
pub struct Asked {
    pub caller: Caller,
    pub ask: Ask,
}

/// The view a request carries (every tool when none was attached: a route outside the
/// authenticated stack).
pub fn of(extensions: &axum::http::Extensions) -> Arc<View> {
    extensions
        .get::<Arc<View>>()
        .cloned()
        .unwrap_or_else(|| Arc::new(View::everything()))
}

/// Reads every live toolset.
pub(crate) async fn read_toolsets(state: &AppState) -> toolsmith_store::Result<Toolsets> {
    Ok(Arc::new(
        state
            .store
            .toolsets()
            .await?
            .into_iter()
            .map(|r| (r.toolset.name.clone(), Arc::new(r.toolset)))
            .collect(),
    ))
}
