//! The definition scanner ([`toolsmith_core::guard`]) where upstream definitions enter the
//! registry: each tool, prompt and resource template a server lists that is not its approved
//! definition is scanned before it can be served. Under the server's `on_suspicious: hold`
//! (the default) a definition with a `hold` finding is kept out of service — in the server's
//! first listing too, and under `on_change: accept` — and waits in the server's pending
//! changes; approving it needs `allow` and records who allowed it. Under `warn` it is
//! served and its findings shown.
//!
//! Shadowing is naming a tool that is not the server's own: the names the scanner looks for
//! are every other tool of the registry, by its registry name and (for another upstream's
//! tool) its upstream name ([`foreign_names`]).

use std::collections::BTreeSet;

use serde_json::Value;
use toolsmith_core::guard::{self, Finding, Kind};
use toolsmith_core::model::Executor;
use toolsmith_core::upstream::{McpServer, OnSuspicious};
use toolsmith_store::{Query, Registry, StoreError, StoreExt};

use crate::Gateway;

/// The names of every tool of the registry that is not `server`'s: registry names, and the
/// upstream names of other servers' tools.
pub async fn foreign_names(
    store: &Registry,
    server: Option<&str>,
) -> Result<BTreeSet<String>, StoreError> {
    let all = store
        .search_all(Query {
            include_disabled: true,
            ..Query::default()
        })
        .await?;
    let mut names = BTreeSet::new();
    for record in all {
        match &record.tool.executor {
            Executor::Mcp(t) if Some(t.server.as_str()) == server => {}
            Executor::Mcp(t) => {
                names.insert(t.tool.clone());
                names.insert(record.tool.name.as_str().to_owned());
            }
            _ => {
                names.insert(record.tool.name.as_str().to_owned());
            }
        }
    }
    Ok(names)
}

/// The findings of a pinned or pending definition under its key (a tool's upstream name,
/// `prompt:NAME`, `template:URI`); none for a removal.
pub fn scan_key(key: &str, said: Option<&Value>, others: &BTreeSet<String>) -> Vec<Finding> {
    let Some(said) = said else {
        return Vec::new();
    };
    // The keys `offer_pins` gives prompts and templates.
    let kind = if key.starts_with("prompt:") {
        Kind::Prompt
    } else if key.starts_with("template:") {
        Kind::Template
    } else {
        Kind::Tool
    };
    guard::scan(kind, said, others)
}

impl Gateway {
    /// Whether `def`'s listing of `key` as `said` is kept out of service by its findings
    /// (`on_suspicious: hold`); counts and logs them either way.
    pub(crate) fn suspicious(
        &self,
        def: &McpServer,
        key: &str,
        said: &Value,
        others: &BTreeSet<String>,
    ) -> bool {
        let findings = scan_key(key, Some(said), others);
        if findings.is_empty() {
            return false;
        }
        self.metrics.findings(&def.name, &findings);
        let held = guard::holds(&findings) && def.on_suspicious == OnSuspicious::Hold;
        let rules = guard::rule_list(&findings);
        match held {
            true => {
                tracing::warn!(server = %def.name, "MCP server `{}` listed `{key}` with guardrail findings ({rules}); held for review (on_suspicious: hold)", def.name)
            }
            false => {
                tracing::info!(server = %def.name, "MCP server `{}` listed `{key}` with guardrail findings ({rules}); served (on_suspicious: {})", def.name, def.on_suspicious.as_str())
            }
        }
        held
    }
}
