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
//! as two tools, `search_tools` and `call_tool` (the MCP door's search mode);
//! `X-Toolsmith-Discovery: code` (`discovery: code`) as `search_tools` answering with Python
//! stubs and `run_code` (code mode, [`crate::code`]).
//!
//! A door reads what a request asks for into an [`Ask`]; [`crate::Gateway::view`] makes the
//! [`View`].

use std::collections::BTreeMap;
use std::sync::Arc;

use globset::GlobSet;
use toolsmith_core::Tool;
use toolsmith_core::toolset::{Discovery, Toolset, glob_set};
use toolsmith_store::{Registry, ToolsetStore};

use crate::identity::Caller;

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
    /// Serve as `search_tools` (with Python stubs) + `run_code` (code mode).
    pub code: bool,
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

    /// Whether upstream `server`'s resource or resource template `uri` is in the view (see
    /// [`Toolset::admits_resource`]); tool globs do not narrow it.
    pub fn admits_resource(&self, server: &str, uri: &str) -> bool {
        self.limit
            .as_ref()
            .is_none_or(|sets| sets.iter().any(|s| s.admits_resource(server, uri)))
            && self.narrow.iter().all(|s| s.admits_resource(server, uri))
    }

    /// Whether upstream `server`'s prompt served as `name` is in the view (see
    /// [`Toolset::admits_prompt`]), and the tool globs, when given, match its name.
    pub fn admits_prompt(&self, server: &str, name: &str) -> bool {
        self.limit
            .as_ref()
            .is_none_or(|sets| sets.iter().any(|s| s.admits_prompt(server, name)))
            && self.narrow.iter().all(|s| s.admits_prompt(server, name))
            && self.globs.as_ref().is_none_or(|g| g.is_match(name))
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
    /// Whether nothing is asked (then only the caller's limit applies).
    pub fn is_empty(&self) -> bool {
        self.endpoint.is_none()
            && self.toolsets.is_empty()
            && self.tools.is_empty()
            && self.discovery.is_none()
    }
}

/// Why a request's view could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    /// The endpoint's toolset (`/mcp/{toolset}`) is unknown, or not the caller's.
    #[error("unknown toolset {name:?}; the toolsets are: {known}")]
    UnknownEndpoint { name: String, known: String },
    /// A toolset asked to narrow to is unknown, or not the caller's.
    #[error("unknown toolset {name:?}; the toolsets are: {known}")]
    UnknownToolset { name: String, known: String },
    /// A tool glob or discovery mode that does not parse.
    #[error("{0}")]
    BadAsk(String),
    #[error(transparent)]
    Store(#[from] toolsmith_store::StoreError),
}

/// The view of `caller` asking for `ask`, with the toolsets `sets`. An unknown toolset is an
/// error naming the ones the caller may use.
pub fn resolve(sets: &Toolsets, caller: &Caller, ask: &Ask) -> Result<View, ViewError> {
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
    let find = |name: &String, endpoint: bool| {
        let visible = caller.toolsets.is_empty() || caller.toolsets.contains(name);
        match sets.get(name).filter(|_| visible) {
            Some(s) => Ok(s.clone()),
            None => {
                let (name, known) = (
                    name.clone(),
                    match known() {
                        k if k.is_empty() => "(none)".to_owned(),
                        k => k.join(", "),
                    },
                );
                Err(match endpoint {
                    true => ViewError::UnknownEndpoint { name, known },
                    false => ViewError::UnknownToolset { name, known },
                })
            }
        }
    };
    let mut narrow = Vec::new();
    let (mut search, mut code) = (false, false);
    if let Some(name) = &ask.endpoint {
        let set = find(name, true)?;
        search = set.discovery == Discovery::Search;
        code = set.discovery == Discovery::Code;
        narrow.push(set);
    }
    for name in &ask.toolsets {
        narrow.push(find(name, false)?);
    }
    let globs = match ask.tools.is_empty() {
        true => None,
        false => Some(
            glob_set(&ask.tools)
                .map_err(|m| ViewError::BadAsk(format!("{}: {m}", TOOLS_HEADER)))?,
        ),
    };
    match ask.discovery.as_deref() {
        None => {}
        Some("search") => (search, code) = (true, false),
        Some("code") => (search, code) = (false, true),
        Some("all") => (search, code) = (false, false),
        Some(other) => {
            return Err(ViewError::BadAsk(format!(
                "{DISCOVERY_HEADER}: unknown mode {other:?} (expected all, search or code)"
            )));
        }
    }
    Ok(View {
        limit,
        narrow,
        globs,
        search,
        code,
    })
}

/// Who asked for what: what a lasting request (an MCP subscription) resolves its view from
/// again after each registry change, so an edited toolset is followed.
#[derive(Debug, Clone)]
pub struct Asked {
    pub caller: Caller,
    pub ask: Ask,
}

/// Reads every live toolset.
pub(crate) async fn read_toolsets(store: &Registry) -> toolsmith_store::Result<Toolsets> {
    Ok(Arc::new(
        store
            .toolsets()
            .await?
            .into_iter()
            .map(|r| (r.toolset.name.clone(), Arc::new(r.toolset)))
            .collect(),
    ))
}
