//! Changes an upstream made that wait for a decision (tools, prompts and templates alike,
//! under `on_change: hold`): recording one, and dropping the ones that became moot.

use std::collections::BTreeMap;

use serde_json::Value;
use toolsmith_store::{StoreError, UpstreamChange, UpstreamStore};

use crate::Gateway;

/// Records a pending change of `key` (a tool's upstream name, `prompt:NAME`,
/// `template:URI`), unless the same one is already recorded (pending, or rejected: a rejected
/// change stays out until the upstream says something else).
pub(crate) async fn hold(
    state: &Gateway,
    server: &str,
    key: &str,
    kind: &str,
    said: Option<&Value>,
    recorded: Option<&UpstreamChange>,
) -> Result<(), StoreError> {
    if recorded.is_some_and(|c| c.kind == kind && c.pinned.as_ref() == said) {
        return Ok(());
    }
    tracing::warn!(server = %server, "MCP server `{server}` {kind} `{key}`; held for approval (on_change: hold)");
    state
        .store
        .put_change(&UpstreamChange {
            server: server.to_owned(),
            tool: key.to_owned(),
            kind: kind.to_owned(),
            pinned: said.cloned(),
            status: "pending".into(),
            detected_at_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as i64),
        })
        .await
}

/// Drops the recorded changes that became moot: an addition the upstream no longer offers
/// (never approved), a removal of something it offers again.
pub(crate) async fn drop_moot<T>(
    state: &Gateway,
    server: &str,
    recorded: &BTreeMap<String, UpstreamChange>,
    now: &BTreeMap<String, T>,
) -> Result<(), StoreError> {
    for (key, c) in recorded {
        let moot = match c.kind.as_str() {
            "added" => !now.contains_key(key),
            "removed" => now.contains_key(key),
            _ => false,
        };
        if moot {
            state.store.drop_change(server, key).await?;
        }
    }
    Ok(())
}

/// The pins and the recorded changes of `server` whose keys `mine` selects (a tool's, or a
/// prompt's and template's: they share the tables), by key.
pub(crate) async fn pins_and_changes(
    state: &Gateway,
    server: &str,
    mine: impl Fn(&str) -> bool,
) -> Result<(BTreeMap<String, Value>, BTreeMap<String, UpstreamChange>), StoreError> {
    let pins = state
        .store
        .pins(server)
        .await?
        .into_iter()
        .filter(|p| mine(&p.tool))
        .map(|p| (p.tool, p.pinned))
        .collect();
    let changes = state
        .store
        .changes(Some(server))
        .await?
        .into_iter()
        .filter(|c| mine(&c.tool))
        .map(|c| (c.tool.clone(), c))
        .collect();
    Ok((pins, changes))
}
