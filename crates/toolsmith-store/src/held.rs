//! Held re-imports (SPEC §12 under §11's pinning rule): an OpenAPI import with
//! `on_change: hold` creates new tools and keeps unchanged ones, but a tool whose definition
//! the document changed is not saved: the new definition waits as a pending change of its
//! source (`openapi:<name>`, in the same table as upstream servers' changes) until an
//! operator approves it (saved as the tool's next version) or rejects it.

use serde::Serialize;
use serde_json::Value;
use toolsmith_core::model::Secrets;
use toolsmith_core::{Catalog, Tool};

use crate::upstreams::{UpstreamChange, UpstreamStore};
use crate::{Change, Result, Store, StoreError, definition_to_tool, now_ms, same_definition};

use toolsmith_core::openapi::Skipped;
pub use toolsmith_core::openapi::{is_openapi_source, openapi_source, source_for};

/// What a held import did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct HeldReport {
    pub created: Vec<String>,
    pub unchanged: Vec<String>,
    /// Changed by the document, waiting for a decision.
    pub held: Vec<String>,
    /// Changed by the document as in a change already rejected: still not served.
    pub rejected: Vec<String>,
    /// Operations whose name belongs to a tool the document did not make ([`claimable`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub taken: Vec<Skipped>,
}

/// The summary of the versions an import of `source` writes: what later imports of the same
/// document recognise as theirs.
pub fn import_summary(source: &str) -> String {
    format!("imported from {source}")
}

/// Splits a document's `tools` into those `source` may write and those whose name is taken
/// (each reported as a skipped operation naming the tool that holds the name):
/// an existing tool is replaced by an import only when its current version was written by
/// the same source (an import of it, or an approved held change of it). A tool made or last
/// edited elsewhere — a catalog, the UI or REST, another document, an MCP server — keeps its
/// name, and an import never changes a tool's executor kind. (Tools imported before sources
/// were recorded count as the document's when they are `http` tools of the same origin.)
pub async fn claimable<S: Store>(
    store: &S,
    tools: Vec<Tool>,
    source: &str,
) -> Result<(Vec<Tool>, Vec<Skipped>)> {
    let (mut mine, mut taken) = (Vec::new(), Vec::new());
    for tool in tools {
        let name = tool.name.to_string();
        let current = match store.get(&name).await {
            Err(StoreError::NotFound(_)) => {
                mine.push(tool);
                continue;
            }
            Err(e) => return Err(e),
            Ok(current) => current,
        };
        let (was, now) = (current.tool.executor.kind(), tool.executor.kind());
        if was != now {
            taken.push(skipped(
                &tool,
                format!(
                    "`{name}` is a {was} tool, and an import never turns a tool into another kind ({now}); import with a prefix (or delete `{name}` first) to add this operation"
                ),
            ));
            continue;
        }
        let summary = store.version(&name, current.version).await?.summary;
        let legacy = matches!(
            summary.as_str(),
            "imported from an OpenAPI document" | "imported from catalog"
        ) && same_origin(&current.tool, &tool);
        if summary == import_summary(source)
            || summary.starts_with(&format!("held change of {source} "))
            || legacy
        {
            mine.push(tool);
        } else {
            taken.push(skipped(
                &tool,
                format!(
                    "`{name}` exists and is not {source}'s (version {} by {}: {summary:?}); an import replaces only the tools it made — import with a prefix, or delete `{name}` first",
                    current.version, current.updated_by
                ),
            ));
        }
    }
    Ok((mine, taken))
}

/// An `http` tool's method and URL as scheme, host (and port) and path.
fn http_target(tool: &Tool) -> Option<(&str, &str, &str, &str)> {
    let toolsmith_core::model::Executor::Http(h) = &tool.executor else {
        return None;
    };
    let (scheme, rest) = h.url.split_once("://")?;
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    Some((&h.method, scheme, host, path))
}

/// The operation `tool` was made from, as skipped for `reason`.
fn skipped(tool: &Tool, reason: String) -> Skipped {
    let (method, path) = http_target(tool).map_or_else(Default::default, |(m, _, _, p)| {
        (m.to_owned(), p.to_owned())
    });
    Skipped {
        operation: tool.name.to_string(),
        method,
        path,
        reason,
    }
}

/// Whether two `http` tools call the same scheme, host and port.
fn same_origin(a: &Tool, b: &Tool) -> bool {
    let origin = |t| http_target(t).map(|(_, scheme, host, _)| (scheme, host));
    origin(a).is_some() && origin(a) == origin(b)
}

/// Imports `tools` from `source` (not held): new ones created, changed ones saved as their
/// next versions, each version saying its source. Call [`claimable`] first.
pub async fn import_document<S: Store + crate::StoreExt>(
    store: &S,
    tools: &[Tool],
    source: &str,
    author: &str,
) -> Result<crate::ImportReport> {
    store
        .import_as(tools, false, author, &import_summary(source))
        .await
}

/// Imports `tools` from `source`: new ones created, the same ones kept, changed ones held.
/// Call [`claimable`] first.
pub async fn import_holding<S: Store + UpstreamStore>(
    store: &S,
    tools: &[Tool],
    source: &str,
    author: &str,
) -> Result<HeldReport> {
    let summary = import_summary(source);
    let mut report = HeldReport::default();
    let known = store.changes(Some(source)).await?;
    for tool in tools {
        let name = tool.name.to_string();
        match store.get(&name).await {
            Err(StoreError::NotFound(_)) => {
                store
                    .create(
                        tool,
                        Change {
                            author,
                            summary: &summary,
                        },
                    )
                    .await?;
                report.created.push(name);
            }
            Err(e) => return Err(e),
            Ok(current) if same_definition(&current.tool, tool) => {
                // The document went back to what is served: nothing waits any more.
                store.drop_change(source, &name).await?;
                report.unchanged.push(name);
            }
            Ok(_) => {
                let said = tool.to_catalog_value(Secrets::Keep);
                // A change already rejected stays rejected until the document changes again.
                let rejected = known.iter().any(|c| {
                    c.tool == name && c.status == "rejected" && c.pinned.as_ref() == Some(&said)
                });
                if rejected {
                    report.rejected.push(name);
                    continue;
                }
                store
                    .put_change(&UpstreamChange {
                        server: source.to_owned(),
                        tool: name.clone(),
                        kind: "changed".into(),
                        pinned: Some(said),
                        status: "pending".into(),
                        detected_at_ms: now_ms(),
                    })
                    .await?;
                report.held.push(name);
            }
        }
    }
    Ok(report)
}

/// The pending changes of `source` among `names` (all when empty).
async fn pending<S: UpstreamStore>(
    store: &S,
    source: &str,
    names: &[String],
) -> Result<Vec<UpstreamChange>> {
    Ok(store
        .changes(Some(source))
        .await?
        .into_iter()
        .filter(|c| c.status == "pending" && (names.is_empty() || names.contains(&c.tool)))
        .collect())
}

/// Saves the held definitions of `source` (all, or those of `names`) as their tools' next
/// versions; returns the tools saved.
pub async fn approve_held<S: Store + UpstreamStore>(
    store: &S,
    source: &str,
    names: &[String],
    by: &str,
) -> Result<Vec<String>> {
    let mut done = Vec::new();
    for c in pending(store, source, names).await? {
        let definition = c.pinned.clone().unwrap_or(Value::Null);
        let tool = definition_to_tool(&definition)?;
        let summary = format!("held change of {source} approved by {by}");
        match store.get(&c.tool).await {
            Ok(current) => {
                store
                    .update(
                        &tool,
                        current.version,
                        Change {
                            author: by,
                            summary: &summary,
                        },
                    )
                    .await?;
            }
            Err(StoreError::NotFound(_)) => {
                store
                    .create(
                        &tool,
                        Change {
                            author: by,
                            summary: &summary,
                        },
                    )
                    .await?;
            }
            Err(e) => return Err(e),
        }
        store.drop_change(source, &c.tool).await?;
        done.push(c.tool);
    }
    Ok(done)
}

/// Marks the held changes of `source` (all, or those of `names`) rejected: they stay out of
/// service, and are forgotten when the document changes again or goes back.
pub async fn reject_held<S: UpstreamStore>(
    store: &S,
    source: &str,
    names: &[String],
) -> Result<Vec<String>> {
    let mut done = Vec::new();
    for mut c in pending(store, source, names).await? {
        c.status = "rejected".into();
        store.put_change(&c).await?;
        done.push(c.tool);
    }
    Ok(done)
}

/// Imports a catalog's tools: those of its `openapi:` entries with `on_change: hold` held by
/// their source, the others synced (created, saved as new versions, kept); with `prune`,
/// registry tools the catalog does not have are deleted (softly).
pub async fn import_catalog<S: Store + UpstreamStore>(
    store: &S,
    catalog: &Catalog,
    prune: bool,
    author: &str,
) -> Result<(crate::ImportReport, Vec<(String, HeldReport)>)> {
    let held: std::collections::HashSet<&str> = catalog
        .holds
        .iter()
        .flat_map(|(_, names)| names.iter().map(String::as_str))
        .collect();
    // A document's operation whose name another source's tool holds is left out, as in a
    // document's own import ([`claimable`]); held documents check theirs below.
    let mut sources = Vec::new();
    let mut left_out = std::collections::HashSet::new();
    for (source, names) in &catalog.documents {
        if catalog.holds.iter().any(|(s, _)| s == source) {
            continue;
        }
        let (_, taken) = claimable(store, named(catalog, names), source).await?;
        if !taken.is_empty() {
            left_out.extend(taken.iter().map(|s| s.operation.clone()));
            sources.push((
                source.clone(),
                HeldReport {
                    taken,
                    ..HeldReport::default()
                },
            ));
        }
    }
    let others: Vec<Tool> = catalog
        .tools
        .iter()
        .filter(|t| !held.contains(t.name.as_str()) && !left_out.contains(t.name.as_str()))
        .cloned()
        .collect();
    let mut report = crate::StoreExt::import(store, &others, false, author).await?;
    for (source, names) in &catalog.holds {
        let (tools, taken) = claimable(store, named(catalog, names), source).await?;
        let mut r = import_holding(store, &tools, source, author).await?;
        r.taken = taken;
        // Created and kept tools count as the catalog's; held ones are reported apart.
        report.created.extend(r.created.iter().cloned());
        report.unchanged.extend(r.unchanged.iter().cloned());
        sources.push((source.clone(), r));
    }
    if prune {
        report.deleted = crate::StoreExt::prune(store, &catalog.tools, author).await?;
    }
    Ok((report, sources))
}

/// The tools of `catalog` that `names` names.
fn named(catalog: &Catalog, names: &[String]) -> Vec<Tool> {
    catalog
        .tools
        .iter()
        .filter(|t| names.iter().any(|n| n == t.name.as_str()))
        .cloned()
        .collect()
}

/// A held change's two sides for a diff: the served definition and the held one, secrets
/// as `***` (`Null` where there is none).
pub async fn sides<S: Store>(store: &S, c: &UpstreamChange) -> (Value, Value) {
    let before = match store.get(&c.tool).await {
        Ok(r) => r.tool.to_catalog_value(Secrets::Redact),
        Err(_) => Value::Null,
    };
    let after = c
        .pinned
        .as_ref()
        .and_then(|d| definition_to_tool(d).ok())
        .map_or(Value::Null, |t| t.to_catalog_value(Secrets::Redact));
    (before, after)
}
