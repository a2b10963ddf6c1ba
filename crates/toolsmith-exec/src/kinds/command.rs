//! Command tools: the planned argv, run as one process.

use super::*;

impl Engine {
    /// Runs a command tool: `invocation` as planned, as one process.
    pub(crate) async fn run_command(
        &self,
        t: &Tool,
        invocation: Process,
        meta: Meta,
    ) -> ToolResult {
        self.spawn(t, invocation, None, meta, None).await
    }
}
