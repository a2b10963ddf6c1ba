//! The execution log's writer: calls hand their entry over and answer at once; a background
//! task writes what has queued up in one transaction (up to 512 entries), so the log costs a
//! call a channel send instead of a database round trip.
//!
//! Nothing acknowledged is lost on a clean stop: [`RunLog::flush`] waits until every entry
//! queued before it is written, and the server flushes before it exits (after SIGTERM or
//! Ctrl-C). Readers of the log (`GET /v1/runs`) flush first, so a client sees its own calls.
//! What a SIGKILL can lose: the entries of calls answered in the last moment before it (those
//! queued but not yet committed — normally a few milliseconds' worth: the writer waits 5 ms
//! after a first entry for more to join its transaction).

use tokio::sync::{mpsc, oneshot};
use toolsmith_store::{Registry, RunRecord, Store};

/// Entries written in one transaction, at most.
const BATCH: usize = 512;

/// How long the writer waits after a first entry for more to join its transaction.
const LINGER: std::time::Duration = std::time::Duration::from_millis(5);

enum Msg {
    Run(Box<RunRecord>),
    Flush(oneshot::Sender<()>),
}

/// A handle on the writer; cheap to clone.
#[derive(Clone, Debug)]
pub struct RunLog {
    tx: mpsc::UnboundedSender<Msg>,
}

impl std::fmt::Debug for Msg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Msg")
    }
}

impl RunLog {
    /// Starts the writer for `store`, keeping `keep` entries. Needs a Tokio runtime.
    pub fn start(store: Registry, keep: usize) -> Self {
        let (tx, mut rx) = mpsc::unbounded_channel::<Msg>();
        tokio::spawn(async move {
            while let Some(first) = rx.recv().await {
                // A moment for the entries of calls answered right after this one: an agent
                // calling one tool after another then costs one transaction per few calls,
                // not one each (a flush waits for it: 5 ms at most).
                if matches!(first, Msg::Run(_)) {
                    tokio::time::sleep(LINGER).await;
                }
                let mut runs = Vec::new();
                let mut flushes = Vec::new();
                let mut next = Some(first);
                while let Some(m) = next.take() {
                    match m {
                        Msg::Run(r) => runs.push(*r),
                        Msg::Flush(done) => flushes.push(done),
                    }
                    if runs.len() < BATCH {
                        next = rx.try_recv().ok();
                    }
                }
                // The log must not fail calls; a failure to write it goes to the server's log.
                if let Err(e) = store.record_runs(&runs, keep).await {
                    tracing::error!("writing {} execution-log entries: {e}", runs.len());
                }
                for f in flushes {
                    let _ = f.send(());
                }
            }
        });
        Self { tx }
    }

    /// Queues an entry.
    pub fn record(&self, run: RunRecord) {
        let _ = self.tx.send(Msg::Run(Box::new(run)));
    }

    /// Queues the entry of a call of `tool` by `caller` — unless another replica answered it
    /// (a forwarded session call, `meta.forwarded_to`): that replica wrote the entry.
    pub fn record_call(
        &self,
        tool: &toolsmith_core::Tool,
        result: &toolsmith_core::ToolResult,
        arguments: &serde_json::Value,
        caller: &str,
    ) {
        if result.meta.forwarded_to.is_none() {
            self.record(RunRecord::of_tool(tool, result, arguments, caller));
        }
    }

    /// Waits until every entry queued before this call is written.
    pub async fn flush(&self) {
        let (done, wait) = oneshot::channel();
        if self.tx.send(Msg::Flush(done)).is_ok() {
            let _ = wait.await;
        }
    }
}
