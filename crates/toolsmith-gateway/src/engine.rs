//! What a front door asks of the engine besides calls, through the gateway: the sandbox a
//! tool runs under, the upstream servers' state and controls (status, log, refresh, restart,
//! a probe of a definition not yet saved, the tasks an upstream runs for a caller), and how many calls ran warm. A door never reaches
//! the engine itself.

use std::time::Duration;

use serde_json::Value;
use toolsmith_core::Tool;
use toolsmith_core::upstream::McpServer;
use toolsmith_exec::upstream::{ServerStatus, TaskRequest, UpstreamError};

use crate::Gateway;

impl Gateway {
    /// The sandbox policy `tool` runs under and what this kernel enforces of it (`None` for
    /// a tool that starts no process).
    pub fn sandbox_report(&self, tool: &Tool) -> Option<Value> {
        self.engine.sandbox().report_for(tool)
    }

    /// The state of upstream server `name`, when the engine runs it.
    pub fn upstream_status(&self, name: &str) -> Option<ServerStatus> {
        self.engine.upstreams().status_of(name)
    }

    /// The state of every upstream server the engine runs.
    pub fn upstream_statuses(&self) -> Vec<ServerStatus> {
        self.engine.upstreams().status()
    }

    /// The end of upstream server `name`'s stderr (secrets as `***`).
    pub fn upstream_log(&self, name: &str) -> Option<String> {
        self.engine.upstreams().log(name)
    }

    /// Asks upstream server `name` to list its tools again; whether this gateway runs it.
    pub fn refresh_upstream(&self, name: &str) -> bool {
        self.engine.upstreams().refresh(name)
    }

    /// Restarts upstream server `name`; whether this gateway runs it.
    pub fn restart_upstream(&self, name: &str) -> bool {
        self.engine.upstreams().restart(name)
    }

    /// Starts `def` apart from the served upstreams, waits for its first listing at most
    /// `timeout`, and stops it: its tools, or why not — with the end of its stderr.
    pub async fn probe_upstream(
        &self,
        def: McpServer,
        timeout: Duration,
    ) -> (
        Result<Vec<Value>, toolsmith_exec::upstream::ProbeError>,
        String,
    ) {
        self.engine.upstreams().probe(def, timeout).await
    }

    /// Whether an upstream declares the tasks extension (SEP-2663), so the gateway relays it.
    pub fn upstreams_offer_tasks(&self) -> bool {
        self.engine.upstreams().any_offers_tasks()
    }

    /// `request` about upstream `server`'s task `task_id` (its own id), declaring the
    /// caller's `client_capabilities`, as `door`'s caller (whose own connection holds the
    /// task on a per-user server): the upstream's answer as JSON.
    pub async fn upstream_task(
        &self,
        server: &str,
        task_id: &str,
        request: TaskRequest,
        (client_capabilities, door): (Option<Value>, &crate::call::Door),
    ) -> Result<Value, UpstreamError> {
        self.engine
            .upstreams()
            .task(
                server,
                task_id,
                request,
                (client_capabilities, door.on_behalf(&door.subject())),
            )
            .await
    }

    /// Python calls that ran in a warm runtime since the engine started.
    pub fn warm_calls(&self) -> u64 {
        self.engine.warm_calls()
    }
}
