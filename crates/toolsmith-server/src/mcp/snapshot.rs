//! The enabled tools at one registry generation, as MCP serves them: rendered once with the
//! MCP renderer (the same as `export --format mcp`) and compiled, in name order; rebuilt by
//! [`crate::mcp::McpServer::snapshot`] when the registry's change counter moves. Read by
//! `tools/list`, `tools/call` and search mode ([`crate::mcp::search`]).

use std::collections::HashMap;
use std::sync::Arc;

use rmcp::model::Tool as McpTool;
use serde_json::{Value, json};
use toolsmith_core::CompiledTool;
use toolsmith_core::model::Format;
use toolsmith_core::render::{RenderOptions, Rendered, render};
use toolsmith_store::{Query, StoreExt};

use toolsmith_gateway::Gateway;

/// The enabled tools at one registry generation, in name order.
pub struct Snapshot {
    pub(crate) generation: u64,
    tools: Vec<McpTool>,
    pub(crate) by_name: HashMap<String, Arc<CompiledTool>>,
}

impl Snapshot {
    /// The enabled tools of the registry now, rendered for MCP and compiled.
    pub(crate) async fn build(
        state: &Gateway,
        generation: u64,
    ) -> toolsmith_store::Result<Snapshot> {
        let records = state.store.search_all(Query::default()).await?;
        let tools: Vec<_> = records.iter().map(|r| r.tool.clone()).collect();
        let rendered = match render(&tools, Format::Mcp, RenderOptions::default()) {
            Rendered::Json(Value::Array(items)) => items,
            _ => Vec::new(),
        };
        let mut snapshot = Snapshot {
            generation,
            tools: Vec::with_capacity(records.len()),
            by_name: HashMap::with_capacity(records.len()),
        };
        for (record, mut value) in records.into_iter().zip(rendered) {
            let name = value["name"].as_str().unwrap_or_default().to_owned();
            if let (Some(title), Value::Object(map)) = (&record.tool.title, &mut value) {
                map.insert("title".into(), json!(title));
            }
            let tool = match serde_json::from_value::<McpTool>(value) {
                Ok(t) => t,
                Err(e) => {
                    tracing::error!("tool {name}: not a valid MCP tool: {e}");
                    continue;
                }
            };
            let compiled = match state.compiled(&record.tool, record.version) {
                Ok(c) => c,
                Err(e) => {
                    tracing::error!("tool {name}: {e}");
                    continue;
                }
            };
            snapshot.tools.push(tool);
            snapshot.by_name.insert(name, compiled);
        }
        Ok(snapshot)
    }

    /// Every enabled tool, in name order.
    pub fn tools(&self) -> &[McpTool] {
        &self.tools
    }

    pub fn get(&self, name: &str) -> Option<&Arc<CompiledTool>> {
        self.by_name.get(name)
    }

    /// The served MCP definition of `name`.
    pub fn definition(&self, name: &str) -> Option<&McpTool> {
        self.tools
            .binary_search_by(|t| t.name.as_ref().cmp(name))
            .ok()
            .map(|i| &self.tools[i])
    }
}
