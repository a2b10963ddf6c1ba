//! An upstream's log messages (`notifications/message`) during calls. A notification names
//! no request, so one goes to the caller of the call in flight when exactly one call is (and
//! that caller asked for logs); with several calls in flight it cannot be told whose it is,
//! and it stays here (at debug level) rather than reach another caller.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::mpsc;

use super::lock;

/// The calls in flight on one upstream, each with where its log messages go (if anywhere).
#[derive(Clone, Default)]
pub(crate) struct LogRoutes(Arc<Mutex<Calls>>);

#[derive(Default)]
struct Calls {
    next: u64,
    open: BTreeMap<u64, Option<mpsc::UnboundedSender<Value>>>,
}

/// One call in flight; dropping it ends it.
pub(crate) struct InFlight {
    routes: LogRoutes,
    id: u64,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        lock(&self.routes.0).open.remove(&self.id);
    }
}

impl LogRoutes {
    /// A call starts; its log messages go to `to`.
    pub(crate) fn enter(&self, to: Option<mpsc::UnboundedSender<Value>>) -> InFlight {
        let mut calls = lock(&self.0);
        calls.next += 1;
        let id = calls.next;
        calls.open.insert(id, to);
        InFlight {
            routes: self.clone(),
            id,
        }
    }

    /// A log message of the upstream (its `LoggingMessageNotificationParam` as JSON).
    pub(crate) fn deliver(&self, server: &str, message: Value) {
        let calls = lock(&self.0);
        match calls.open.values().collect::<Vec<_>>().as_slice() {
            [Some(to)] => {
                let _ = to.send(message);
            }
            _ => tracing::debug!(
                server,
                "log message of an MCP server outside a single call: {message}"
            ),
        }
    }
}
