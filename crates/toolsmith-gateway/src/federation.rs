//! Upstream MCP servers behind the registry (SPEC §11): the engine's upstreams follow the
//! registry's servers, and what an upstream lists becomes registry tools — pinned.
//!
//! **Invariant:** what a model sees of an upstream tool is what the operator approved. The
//! first listing of a server (no pins yet) approves every tool it lists, as version 1. After
//! that each listing is compared with the pins, tool by tool: under `on_change: hold` a
//! difference (a new tool, a changed description, schema, title, annotations or output
//! schema, a removed tool) is recorded as a pending change and the registry tool stays the
//! approved one — a removed tool is disabled at once; under `on_change: accept` it is applied
//! at once as a new version authored `upstream:<server>`. Approving a change pins what the
//! upstream says now and saves the tool (author `upstream:<server>`, summary naming who
//! approved); rejecting keeps the change out until the upstream changes again.
//!
//! Before any of that, a definition that is not the approved one is scanned
//! ([`crate::guardrails`]): one the scanner holds waits for a person under
//! `on_suspicious: hold` — even in a first listing, even under `accept`.
//!
//! A name an upstream tool would get that another server's tool or a local tool already has
//! is never taken: the tool is left out and the collision is reported (log and status).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;
use std::time::Duration;
use toolsmith_core::Tool;
use toolsmith_core::model::Executor;
use toolsmith_core::upstream::{McpServer, OnChange, pinned};

use toolsmith_exec::upstream::{Event, Status};
use toolsmith_store::{
    Change, Query, Registry, Store, StoreError, StoreExt, UpstreamChange, UpstreamStore,
    same_definition,
};

use crate::Gateway;
use crate::offer_pins::{self, is_offer_key};
use crate::pending;

/// Starts following: the engine's upstreams are set from the registry now and whenever it
/// changes; each listing is reconciled with the pins. Runs until the process ends.
pub fn start(state: &Arc<Gateway>) -> tokio::task::JoinHandle<()> {
    let state = state.clone();
    let mut events = state.engine.upstreams().subscribe();
    let mut changes = state.subscribe();
    tokio::spawn(async move {
        let mut known: Vec<McpServer> = Vec::new();
        sync_servers(&state, &mut known).await;
        loop {
            tokio::select! {
                event = events.recv() => match event {
                    Ok(Event::Listed { server, tools, offer }) => {
                        // The names shadowing looks for: no tool of this server's, so one
                        // reading serves its tools and its prompts and templates.
                        let others = match crate::guardrails::foreign_names(&state.store, Some(&server)).await {
                            Ok(others) => others,
                            Err(e) => {
                                tracing::error!(server = %server, "reading the registry's tool names for MCP server `{server}`'s listing: {e}");
                                continue;
                            }
                        };
                        if let Err(e) = reconcile(&state, &server, &tools, &others).await {
                            tracing::error!(server = %server, "applying the tools MCP server `{server}` listed: {e}");
                        }
                        let author = upstream_author(&server);
                        if let Err(e) = offer_pins::reconcile(&state, &server, &offer, &author, &others).await {
                            tracing::error!(server = %server, "applying the prompts and templates MCP server `{server}` listed: {e}");
                        }
                    }
                    Ok(Event::Status { .. } | Event::ResourceUpdated { .. }) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                },
                changed = changes.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    sync_servers(&state, &mut known).await;
                }
            }
        }
    })
}

impl Gateway {
    /// Waits until every enabled server of the registry has had a listing applied, or
    /// failed, for at most `timeout`: what a command that shows its tools once (`chat` over a
    /// catalog) needs before it reads them. Answers the servers left out, each with why.
    pub async fn settle_upstreams(&self, timeout: Duration) -> Vec<(String, String)> {
        let deadline = tokio::time::Instant::now() + timeout;
        let servers: Vec<String> = match self.store.servers().await {
            Ok(records) => records
                .into_iter()
                .filter(|r| r.server.enabled)
                .map(|r| r.server.name)
                .collect(),
            Err(e) => return vec![("(all)".into(), e.to_string())],
        };
        loop {
            let mut pending = Vec::new();
            let mut failed = Vec::new();
            for name in &servers {
                if self.federation_problems.applied(name) {
                    continue;
                }
                match self.engine.upstreams().status_of(name) {
                    Some(s) if s.status == Status::Failed => {
                        failed.push((name.clone(), s.last_error.unwrap_or_default()));
                    }
                    _ => pending.push(name.clone()),
                }
            }
            if pending.is_empty() {
                return failed;
            }
            if tokio::time::Instant::now() >= deadline {
                failed.extend(
                    pending
                        .into_iter()
                        .map(|n| (n, "no tool list in time".to_owned())),
                );
                return failed;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Sets the engine's upstreams to the registry's servers when they changed, and takes the
/// tools of servers that are gone out of the registry.
async fn sync_servers(state: &Arc<Gateway>, known: &mut Vec<McpServer>) {
    let servers: Vec<McpServer> = match state.store.servers().await {
        Ok(records) => records.into_iter().map(|r| r.server).collect(),
        Err(e) => {
            tracing::error!("reading the MCP servers of the registry: {e}");
            return;
        }
    };
    if servers == *known {
        return;
    }
    state.engine.upstreams().set(servers.clone());
    let names: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
    if let Ok(all) = state.store.search_all(everything()).await {
        for record in all {
            if let Executor::Mcp(target) = &record.tool.executor
                && !names.contains(&target.server.as_str())
            {
                let summary = format!("MCP server `{}` was removed", target.server);
                let _ = state
                    .store
                    .delete(
                        record.tool.name.as_str(),
                        Change {
                            author: &upstream_author(&target.server),
                            summary: &summary,
                        },
                    )
                    .await;
            }
        }
    }
    *known = servers;
    state.changed();
}

fn everything() -> Query {
    Query {
        include_disabled: true,
        ..Query::default()
    }
}

/// `upstream:<server>`: the author of what an upstream changed.
pub fn upstream_author(server: &str) -> String {
    format!("upstream:{server}")
}

/// Applies one listing of `server` to the registry, by its pins and its `on_change`;
/// `others` are the names shadowing looks for ([`crate::guardrails::foreign_names`]).
pub async fn reconcile(
    state: &Arc<Gateway>,
    server: &str,
    listed: &[Value],
    others: &std::collections::BTreeSet<String>,
) -> Result<(), StoreError> {
    let def = state.store.get_server(server).await?.server;
    // Prompts and templates are pinned beside the tools (`offer_pins`), under keys of their own.
    let (pins, changes) = pending::pins_and_changes(state, server, |k| !is_offer_key(k)).await?;
    let first = pins.is_empty();
    let author = upstream_author(server);
    let mut problems = Vec::new();
    let now: BTreeMap<String, Value> = listed
        .iter()
        .filter_map(|t| {
            let name = t.get("name")?.as_str()?.to_owned();
            def.serves(&name).then(|| (name, pinned(t)))
        })
        .collect();
    for (tool, said) in &now {
        if pins.get(tool) != Some(said) && state.suspicious(&def, tool, said, others) {
            // Kept out of service whatever `on_change` says, in a first listing too.
            let kind = match pins.contains_key(tool) {
                true => "changed",
                false => "added",
            };
            pending::hold(state, server, tool, kind, Some(said), changes.get(tool)).await?;
            continue;
        }
        match pins.get(tool) {
            Some(p) if p == said => {
                // The upstream says what was approved: nothing waits, and the served tool
                // follows the server's overrides.
                if changes.contains_key(tool) {
                    state.store.drop_change(server, tool).await?;
                }
                if let Err(e) = save(&state.store, &def, said, &author, "approved definition").await
                {
                    problems.push(e);
                }
            }
            known if first || def.on_change == OnChange::Accept => {
                let summary = match known {
                    None => "listed by the upstream",
                    Some(_) => "changed by the upstream",
                };
                match save(&state.store, &def, said, &author, summary).await {
                    Ok(()) => {
                        state
                            .store
                            .set_pin(server, tool, Some(said), &author)
                            .await?
                    }
                    Err(e) => problems.push(e),
                }
            }
            pinned_now => {
                let kind = if pinned_now.is_some() {
                    "changed"
                } else {
                    "added"
                };
                pending::hold(state, server, tool, kind, Some(said), changes.get(tool)).await?;
            }
        }
    }
    for tool in pins.keys().filter(|t| !now.contains_key(*t)) {
        // Not served any more (its calls could not succeed): deleted at once under
        // `accept`, disabled while the removal waits for a decision under `hold`.
        let accept = def.on_change == OnChange::Accept;
        let summary = "no longer offered by the upstream";
        retire(&state.store, &def, tool, &author, summary, accept).await?;
        match accept {
            true => state.store.set_pin(server, tool, None, &author).await?,
            false => pending::hold(state, server, tool, "removed", None, changes.get(tool)).await?,
        }
    }
    pending::drop_moot(state, server, &changes, &now).await?;
    for p in &problems {
        tracing::warn!(server = %server, "{p}");
    }
    let problems = problems.into_iter().map(|e| e.to_string()).collect();
    state.federation_problems.set(server, problems);
    state.changed();
    Ok(())
}

/// Why an upstream tool could not be saved, or a decision taken.
#[derive(Debug, thiserror::Error)]
pub enum FederationError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A definition the registry would refuse, or a name another tool holds.
    #[error("{0}")]
    Refused(String),
    /// Approving definitions the guardrail scanner holds, without `allow`.
    #[error("{} held by the guardrail scanner: {}; review the findings (`toolsmith servers changes {server}`) and approve with --allow (REST: \"allow\": true) to serve it anyway", if .held.len() == 1 { "a definition is" } else { "definitions are" }, .held.join("; "))]
    Suspicious { server: String, held: Vec<String> },
    /// A decision naming a tool with no pending change.
    #[error("no pending change of tool {tool:?} on MCP server `{server}` (pending: {pending})")]
    NoPendingChange {
        tool: String,
        server: String,
        pending: String,
    },
}

/// Saves the registry tool `said` (an upstream tool's pinned part) becomes under `def`: a new
/// tool at version 1, a new version when it differs, nothing when it is the same. A name held
/// by a tool that is not this upstream tool is refused, naming both.
pub async fn save(
    store: &Registry,
    def: &McpServer,
    said: &Value,
    author: &str,
    summary: &str,
) -> Result<(), FederationError> {
    let tool = def
        .tool_from(said)
        .map_err(|e| FederationError::Refused(format!("tool {}: {e}", said["name"])))?;
    // The registry reads definitions back through the loader: refuse here what it would.
    let tool = toolsmith_store::definition_to_tool(
        &tool.to_catalog_value(toolsmith_core::model::Secrets::Keep),
    )
    .map_err(|e| {
        FederationError::Refused(format!(
            "tool {} of MCP server `{}` cannot be served: {e}",
            said["name"], def.name
        ))
    })?;
    let change = Change { author, summary };
    match store.get(tool.name.as_str()).await {
        Ok(current) => {
            if !same_target(&current.tool, &tool) {
                return Err(FederationError::Refused(collision(&tool, &current.tool)));
            }
            if same_definition(&current.tool, &tool) {
                return Ok(());
            }
            Ok(store
                .update(&tool, current.version, change)
                .await
                .map(drop)?)
        }
        Err(StoreError::NotFound(_)) => match store.create(&tool, change).await {
            Ok(_) => Ok(()),
            Err(StoreError::Exists { .. }) => Err(FederationError::Refused(format!(
                "tool `{}` of MCP server `{}` collides with a tool created meanwhile",
                tool.name, def.name
            ))),
            Err(e) => Err(e.into()),
        },
        Err(e) => Err(e.into()),
    }
}

/// Whether `a` and `b` are the same upstream tool (so one may replace the other).
fn same_target(a: &Tool, b: &Tool) -> bool {
    matches!((&a.executor, &b.executor), (Executor::Mcp(x), Executor::Mcp(y)) if x == y)
}

fn collision(new: &Tool, held: &Tool) -> String {
    let Executor::Mcp(target) = &new.executor else {
        return format!("tool name `{}` is taken", new.name);
    };
    let by = match &held.executor {
        Executor::Mcp(t) => format!("tool `{}` of MCP server `{}`", t.tool, t.server),
        other => format!("the local {} tool", other.kind()),
    };
    format!(
        "tool `{}` of MCP server `{}` would be named `{}`, which {by} already is; give one a `prefix` or a `tools.{}.name` override",
        target.tool, target.server, new.name, target.tool
    )
}

/// Disables (or, when `delete`, deletes) the registry tool of the upstream tool `tool`.
async fn retire(
    store: &Registry,
    def: &McpServer,
    tool: &str,
    author: &str,
    summary: &str,
    delete: bool,
) -> Result<(), StoreError> {
    let Ok(name) = def.tool_name(tool) else {
        return Ok(());
    };
    let Ok(current) = store.get(name.as_str()).await else {
        return Ok(());
    };
    if !matches!(&current.tool.executor, Executor::Mcp(t) if t.server == def.name && t.tool == tool)
    {
        return Ok(());
    }
    let change = Change { author, summary };
    match delete {
        true => store.delete(name.as_str(), change).await,
        false => store
            .set_enabled(name.as_str(), false, change)
            .await
            .map(drop),
    }
}

/// Approves the pending changes of `server` (all, or those of `tools`): pins what the
/// upstream says now and saves the tools. Returns the upstream tool names approved.
pub async fn approve(
    store: &Registry,
    server: &str,
    tools: &[String],
    by: &str,
    allow: bool,
) -> Result<Vec<String>, FederationError> {
    let def = store.get_server(server).await?.server;
    let pending = decided(store, server, tools).await?;
    let author = upstream_author(server);
    let others = crate::guardrails::foreign_names(store, Some(server)).await?;
    let mut held = Vec::new();
    for c in &pending {
        let found = crate::guardrails::scan_key(&c.tool, c.pinned.as_ref(), &others);
        if toolsmith_core::guard::holds(&found) {
            held.push(format!(
                "`{}` ({})",
                c.tool,
                toolsmith_core::guard::rule_list(&found)
            ));
        }
    }
    if !held.is_empty() && !allow {
        return Err(FederationError::Suspicious {
            server: server.to_owned(),
            held,
        });
    }
    let summary = match held.is_empty() {
        true => format!("approved by {by}"),
        false => format!(
            "approved by {by}, allowing guardrail findings in {}",
            held.join(", ")
        ),
    };
    let mut done = Vec::new();
    for c in pending {
        if is_offer_key(&c.tool) {
            // A prompt or template: its pin is what is served.
            store
                .set_pin(server, &c.tool, c.pinned.as_ref(), by)
                .await?;
            store.drop_change(server, &c.tool).await?;
            done.push(c.tool);
            continue;
        }
        match &c.pinned {
            Some(said) => {
                save(store, &def, said, &author, &summary).await?;
                // An approved tool is served: enable what a removal had disabled.
                if let Ok(name) = def.tool_name(&c.tool) {
                    let _ = store
                        .set_enabled(
                            name.as_str(),
                            def.tools
                                .get(&c.tool)
                                .and_then(|o| o.enabled)
                                .unwrap_or(true),
                            Change {
                                author: &author,
                                summary: &summary,
                            },
                        )
                        .await;
                }
                store.set_pin(server, &c.tool, Some(said), by).await?;
            }
            None => {
                retire(store, &def, &c.tool, &author, &summary, true).await?;
                store.set_pin(server, &c.tool, None, by).await?;
            }
        }
        store.drop_change(server, &c.tool).await?;
        done.push(c.tool);
    }
    Ok(done)
}

/// Rejects the pending changes of `server` (all, or those of `tools`): they stay out until
/// the upstream changes again. Returns the upstream tool names rejected.
pub async fn reject(
    store: &Registry,
    server: &str,
    tools: &[String],
) -> Result<Vec<String>, FederationError> {
    let pending = decided(store, server, tools).await?;
    let mut done = Vec::new();
    for mut c in pending {
        c.status = "rejected".into();
        store.put_change(&c).await?;
        done.push(c.tool);
    }
    Ok(done)
}

/// The pending changes of `server` named by `tools` (all when empty); an unknown name is an
/// error listing the pending ones.
async fn decided(
    store: &Registry,
    server: &str,
    tools: &[String],
) -> Result<Vec<UpstreamChange>, FederationError> {
    store.get_server(server).await?;
    let pending: Vec<UpstreamChange> = store
        .changes(Some(server))
        .await?
        .into_iter()
        .filter(|c| c.status == "pending")
        .collect();
    if let Some(unknown) = tools
        .iter()
        .find(|t| !pending.iter().any(|c| &c.tool == *t))
    {
        let names: Vec<&str> = pending.iter().map(|c| c.tool.as_str()).collect();
        return Err(FederationError::NoPendingChange {
            tool: unknown.clone(),
            server: server.to_owned(),
            pending: match names.is_empty() {
                true => "none".to_owned(),
                false => names.join(", "),
            },
        });
    }
    Ok(pending
        .into_iter()
        .filter(|c| tools.is_empty() || tools.contains(&c.tool))
        .collect())
}
