//! Prompts and resource templates pinned like tools (SPEC §11): a prompt is text a model
//! obeys, a template's description too, so what is served of them is what was approved.
//!
//! Each listing of a server is reconciled with its pins, by the rules the server's tools
//! follow (`federation::reconcile`): its first listing is approved as it is; later, under
//! `on_change: hold`, an added or changed prompt or template waits in the server's changes
//! (with its diff) while the approved definition stays served, and under `accept` it is
//! approved at once; one the server stopped offering leaves service at once (its gets could
//! not succeed). Pins and changes share the tools' tables under keys no tool name can take:
//! `prompt:<name>` and `template:<uriTemplate>` (MCP tool names hold no `:`), so the same
//! REST routes and CLI commands list, approve and reject them.
//!
//! A definition that is not the approved one is scanned first, as a tool's is
//! (`Gateway::suspicious`, docs/guardrails.md): one the scanner holds waits for a person,
//! first listing or not.
//!
//! What is pinned is the whole object the server listed (name, title, description,
//! arguments or URI template, MIME type, icons). A prompt's messages and a resource's contents
//! are the server's answer to each request, and are not.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;
use toolsmith_core::upstream::OnChange;
use toolsmith_exec::upstream::Offer;
use toolsmith_store::{StoreError, UpstreamStore};

use crate::Gateway;
use crate::pending;

/// The key a prompt is pinned under.
pub const PROMPT: &str = "prompt:";
/// The key a resource template is pinned under.
pub const TEMPLATE: &str = "template:";

/// Whether a pin or change key is a prompt's or a template's (not a tool's): MCP tool names
/// hold no `:`.
pub fn is_offer_key(key: &str) -> bool {
    key.starts_with(PROMPT) || key.starts_with(TEMPLATE)
}

/// The keyed definitions a listing offers: prompts by name, templates by URI template.
fn keyed(offer: &Offer) -> BTreeMap<String, Value> {
    let key = |prefix: &str, v: &Value, field: &str| {
        v.get(field)
            .and_then(Value::as_str)
            .map(|k| (format!("{prefix}{k}"), v.clone()))
    };
    offer
        .prompts
        .iter()
        .filter_map(|p| key(PROMPT, p, "name"))
        .chain(
            offer
                .templates
                .iter()
                .filter_map(|t| key(TEMPLATE, t, "uriTemplate")),
        )
        .collect()
}

/// Applies one listing's prompts and templates of `server` to its pins and changes; what is
/// approved at once is approved by `author` (the upstream). `others` are the names
/// shadowing looks for.
pub async fn reconcile(
    state: &Arc<Gateway>,
    server: &str,
    offer: &Offer,
    author: &str,
    others: &std::collections::BTreeSet<String>,
) -> Result<(), StoreError> {
    let def = state.store.get_server(server).await?.server;
    let (pins, changes) = pending::pins_and_changes(state, server, is_offer_key).await?;
    let first = pins.is_empty() && changes.is_empty();
    let accept = def.on_change == OnChange::Accept;
    let now = keyed(offer);
    for (key, said) in &now {
        if pins.get(key) != Some(said) && state.suspicious(&def, key, said, others) {
            let kind = if pins.contains_key(key) {
                "changed"
            } else {
                "added"
            };
            pending::hold(state, server, key, kind, Some(said), changes.get(key)).await?;
            continue;
        }
        match pins.get(key) {
            Some(p) if p == said => {
                if changes.contains_key(key) {
                    state.store.drop_change(server, key).await?;
                }
            }
            _ if first || accept => {
                state.store.set_pin(server, key, Some(said), author).await?;
                if changes.contains_key(key) {
                    state.store.drop_change(server, key).await?;
                }
            }
            pinned => {
                let kind = if pinned.is_some() { "changed" } else { "added" };
                pending::hold(state, server, key, kind, Some(said), changes.get(key)).await?;
            }
        }
    }
    for key in pins.keys().filter(|k| !now.contains_key(*k)) {
        match accept {
            true => state.store.set_pin(server, key, None, author).await?,
            false => pending::hold(state, server, key, "removed", None, changes.get(key)).await?,
        }
    }
    pending::drop_moot(state, server, &changes, &now).await?;
    state.changed();
    Ok(())
}

impl Gateway {
    /// What of `offer` is served: each prompt and template the server offers now, as its
    /// approved definition; one not approved (held) is left out.
    pub(crate) async fn approved(&self, server: &str, offer: &Offer) -> Offer {
        let pins: BTreeMap<String, Value> = match self.store.pins(server).await {
            Ok(pins) => pins.into_iter().map(|p| (p.tool, p.pinned)).collect(),
            Err(e) => {
                tracing::warn!(server, "reading the pins of MCP server `{server}`: {e}");
                BTreeMap::new()
            }
        };
        let served = |prefix: &str, items: &[Value], field: &str| -> Vec<Value> {
            items
                .iter()
                .filter_map(|v| {
                    let key = format!("{prefix}{}", v.get(field)?.as_str()?);
                    pins.get(&key).cloned()
                })
                .collect()
        };
        Offer {
            resources: offer.resources.clone(),
            templates: served(TEMPLATE, &offer.templates, "uriTemplate"),
            prompts: served(PROMPT, &offer.prompts, "name"),
        }
    }
}
