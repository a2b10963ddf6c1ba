//! Starting the gateway's background work: following the registry's changes made by other
//! processes, and warming the Python runtimes the registry's tools will need.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::Gateway;

/// How often [`follow_registry`] looks at the registry's generation.
pub const FOLLOW_INTERVAL: Duration = Duration::from_millis(250);

/// Follows changes made by other processes sharing the registry (a second `serve` on the same
/// PostgreSQL, `toolsmith import` on the same SQLite file): polls the store's generation
/// every `every` and, when it moved, tells this process's followers (MCP snapshots and
/// list_changed notifications). Runs until the state is dropped.
pub fn follow_registry(gateway: &Arc<Gateway>, every: Duration) -> tokio::task::JoinHandle<()> {
    use toolsmith_store::Store;
    let weak = Arc::downgrade(gateway);
    tokio::spawn(async move {
        let mut last = None;
        let mut ticks = tokio::time::interval(every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            let Some(state) = weak.upgrade() else { return };
            match state.store.generation().await {
                Ok(g) => {
                    state.metrics.polled();
                    if last.is_some_and(|l| l != g) {
                        state.changed();
                    }
                    last = Some(g);
                }
                Err(e) => tracing::warn!("reading the registry's generation: {e}"),
            }
        }
    })
}

/// Starts, in the background, a warm runtime for each Python interpreter the registry's
/// enabled tools run warm ([`Engine::prewarm`]), so their first call does not wait for one.
/// Reads the registry a page at a time and keeps one tool per interpreter, so a registry of
/// 100 000 tools costs no more memory than a page. The task answers how many it started.
pub fn prewarm_registry(gateway: &Arc<Gateway>) -> tokio::task::JoinHandle<usize> {
    use toolsmith_store::Store;
    let state = gateway.clone();
    tokio::spawn(async move {
        let mut keep: HashMap<String, toolsmith_core::Tool> = HashMap::new();
        let mut query = toolsmith_store::Query {
            limit: 1000,
            ..Default::default()
        };
        loop {
            let page = match state.store.search(&query).await {
                Ok(page) => page,
                Err(e) => {
                    tracing::warn!("reading the registry to start warm runtimes: {e}");
                    break;
                }
            };
            for record in page.items {
                if let toolsmith_core::model::Executor::Script(s) = &record.tool.executor
                    && state.engine.runs_warm(&record.tool)
                    && !keep.contains_key(&s.interpreter)
                {
                    keep.insert(s.interpreter.clone(), record.tool);
                }
            }
            match page.next_cursor {
                Some(cursor) => query.cursor = Some(cursor),
                None => break,
            }
        }
        state.engine.prewarm(keep.values())
    })
}
