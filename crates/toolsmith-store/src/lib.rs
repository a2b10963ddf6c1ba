//! toolsmith-store: the registry (SPEC §6). Tools with integer versions, each save an
//! immutable snapshot of the whole definition, behind one [`Store`] trait.
//!
//! - Every save increments the tool's `version` and writes a [`VersionRecord`] (definition,
//!   time, author, one-line summary). Restoring version `v` saves a new version equal to it.
//! - Updates name the version they were based on; a stale one is refused with
//!   [`StoreError::Conflict`] and nothing is written (optimistic concurrency).
//! - Definitions are stored in the catalog form (`Tool::to_catalog_value` with secrets kept)
//!   and read back through the catalog loader, so the registry holds nothing the loader would
//!   refuse. Views that leave the process redact secrets; the store itself does not.
//! - Deleting is soft: the history stays, and importing or creating the name again continues
//!   its version numbers.
//!
//! [`sqlite::SqliteStore`] is the embedded default; [`postgres::PgStore`] serves several
//! replicas. [`Registry`] is either, chosen by the address it is opened with. What the two
//! backends run alike is written once in `shared` (statements and method bodies); `rows`
//! reads rows into records for both; `sync` decides what an import does with each tool;
//! `diff` compares definitions.

mod diff;
pub mod documents;
pub mod held;
pub mod postgres;
mod registry;
pub mod reseal;
mod rows;
pub mod secrets;
mod shared;
pub mod sqlite;
mod sync;
pub mod toolsets;
pub mod upstreams;

pub use diff::{Difference, diff, diff_definitions};
pub use registry::Registry;
pub(crate) use sync::{SyncAction, sync_action};
pub use toolsets::{ToolsetRecord, ToolsetStore, import_toolsets};
pub use upstreams::{Connection, Pin, ServerRecord, UpstreamChange, UpstreamStore, import_servers};

use serde::Serialize;
use serde_json::Value;
use toolsmith_core::Tool;
use toolsmith_core::catalog::{self, CatalogSource};
use toolsmith_core::model::Secrets;

/// Why a store operation failed, in terms a caller can act on.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0} not found")]
    NotFound(String),
    /// The update was based on a version that is no longer the current one.
    #[error(
        "{kind} {name:?} is at version {current_version}; your change was based on version {based_on}"
    )]
    Conflict {
        /// What the document is: `tool`, `server`, `toolset`.
        kind: &'static str,
        name: String,
        current_version: u64,
        based_on: u64,
    },
    /// The name is taken by a live document of that kind.
    #[error("{kind} {name:?} already exists")]
    Exists { kind: &'static str, name: String },
    /// A stored definition the loader refuses (the database was edited by hand?).
    #[error("invalid definition: {0}")]
    Invalid(String),
    #[error("database: {0}")]
    Backend(String),
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        Self::Backend(e.to_string())
    }
}

pub type Result<T> = std::result::Result<T, StoreError>;

/// A tool as the registry holds it now.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolRecord {
    pub tool: Tool,
    pub version: u64,
    pub updated_at_ms: i64,
    pub updated_by: String,
}

/// One immutable snapshot.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VersionRecord {
    pub name: String,
    pub version: u64,
    /// The catalog form, secrets kept: redact before showing it.
    pub definition: Value,
    pub created_at_ms: i64,
    pub author: String,
    pub summary: String,
}

/// Who makes a change and why.
#[derive(Debug, Clone)]
pub struct Change<'a> {
    pub author: &'a str,
    pub summary: &'a str,
}

/// A search over name, description and tags.
#[derive(Debug, Clone, Default)]
pub struct Query {
    /// Case-insensitive substring of the name, description or a tag.
    pub text: Option<String>,
    pub tag: Option<String>,
    pub include_disabled: bool,
    /// Page size (1..=1000; 50 when 0).
    pub limit: usize,
    /// From the previous page's `next_cursor`.
    pub cursor: Option<String>,
}

/// One page of results, in name order; `next_cursor` is `None` on the last page.
#[derive(Debug, Clone)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
}

/// What an import did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ImportReport {
    pub created: Vec<String>,
    pub updated: Vec<String>,
    pub unchanged: Vec<String>,
    pub deleted: Vec<String>,
    /// What the import left alone, each with why (an MCP server made elsewhere).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
}

/// One call in the execution log.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RunRecord {
    /// Assigned by the store; 0 when recording.
    pub id: i64,
    pub tool: String,
    pub version: u64,
    pub caller: String,
    /// The arguments as sent (after the pipeline when they were valid), cut to 4 KiB.
    pub arguments: Value,
    /// `ok`, or the error kind.
    pub kind: String,
    pub duration_ms: f64,
    pub exit_code: Option<i32>,
    pub truncated: bool,
    pub started_at_ms: i64,
    /// The upstream MCP server the call went to (absent for toolsmith's own tools).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
    /// What the kernel enforced of the call's sandbox (its `meta.sandbox`), for calls that
    /// started a process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub sandbox: Option<Value>,
    /// The call's id (its result's `meta.call_id`), for calls the engine ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// The run this call was made by (code mode: the program's run), by its call id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_call_id: Option<String>,
    /// What the result guardrails did (its `meta.guardrails`: credentials scrubbed by rule,
    /// the result cut to `max_result_bytes`), never a scrubbed value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub guardrails: Option<Value>,
}

impl RunRecord {
    /// The entry for a call of `tool`: [`RunRecord::of`], with the upstream server of an
    /// MCP tool.
    pub fn of_tool(
        tool: &toolsmith_core::Tool,
        result: &toolsmith_core::ToolResult,
        arguments: &Value,
        caller: &str,
    ) -> Self {
        let mut run = Self::of(result, arguments, caller);
        run.upstream = tool.executor.upstream().map(|t| t.server.clone());
        run
    }

    /// Arguments as the log keeps them: cut to 4 KiB of JSON text (then a string saying so).
    pub fn logged_arguments(arguments: &Value) -> Value {
        let mut text = arguments.to_string();
        if text.len() <= MAX_LOGGED_ARGUMENTS {
            return arguments.clone();
        }
        let mut cut = MAX_LOGGED_ARGUMENTS;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        Value::String(format!("{text}… (cut)"))
    }

    /// The log entry for a finished call.
    pub fn of(result: &toolsmith_core::ToolResult, arguments: &Value, caller: &str) -> Self {
        let kind = match &result.error {
            None => "ok".to_string(),
            Some(e) => serde_json::to_value(e.kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
        };
        let duration_ms = result.meta.duration_ms.unwrap_or(0.0);
        let arguments = Self::logged_arguments(arguments);
        Self {
            id: 0,
            tool: result.meta.tool.clone(),
            version: result.meta.version,
            caller: caller.to_owned(),
            arguments,
            kind,
            duration_ms,
            exit_code: result.meta.exit_code,
            truncated: result.meta.truncated.unwrap_or(false),
            started_at_ms: now_ms() - duration_ms as i64,
            upstream: None,
            sandbox: result.meta.sandbox.clone(),
            call_id: result.meta.call_id.clone(),
            parent_call_id: result.meta.parent_call_id.clone(),
            guardrails: result
                .meta
                .guardrails
                .as_ref()
                .and_then(|g| serde_json::to_value(g).ok()),
        }
    }
}

/// A change to the sessions table: where each session lives (SPEC §5.4).
#[derive(Debug, Clone)]
pub enum SessionNote {
    Started {
        id: String,
        replica: String,
        /// `host:pid` of the server holding it.
        place: String,
        owner: String,
        command: String,
        at_ms: i64,
        /// Where the holder can be reached (`serve --advertise-url`); empty when nowhere.
        url: String,
    },
    Ended {
        id: String,
        status: String,
        at_ms: i64,
    },
    /// Every running session of `replica` was alive at `at_ms`.
    Alive { replica: String, at_ms: i64 },
}

/// A session as the registry knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRow {
    pub id: String,
    pub replica: String,
    pub place: String,
    pub owner: String,
    pub command: String,
    /// `running`, or how it ended.
    pub status: String,
    pub created_ms: i64,
    pub last_seen_ms: i64,
    /// Where the holder can be reached; empty when it gave no address.
    pub url: String,
}

/// Rows of sessions that ended (or whose replica went silent) this long ago are removed.
pub const SESSION_ROWS_KEPT_MS: i64 = 24 * 3600 * 1000;

/// The largest argument text kept in the log.
pub const MAX_LOGGED_ARGUMENTS: usize = 4096;

/// Filters for the execution log; newest first.
#[derive(Debug, Clone, Default)]
pub struct RunQuery {
    pub tool: Option<String>,
    pub kind: Option<String>,
    pub caller: Option<String>,
    /// Only the call with this id (`meta.call_id`).
    pub call_id: Option<String>,
    /// Only the calls made by the run with this call id (a code-mode program's).
    pub parent_call_id: Option<String>,
    pub limit: usize,
    pub cursor: Option<String>,
}

/// The registry's operations. Every write is one transaction.
pub trait Store: Send + Sync {
    /// Creates `tool` at version 1 (or, for a deleted name, the next version of its history).
    fn create(
        &self,
        tool: &Tool,
        change: Change<'_>,
    ) -> impl Future<Output = Result<ToolRecord>> + Send;
    /// Saves `tool` as the next version, if the current version is `base_version`.
    fn update(
        &self,
        tool: &Tool,
        base_version: u64,
        change: Change<'_>,
    ) -> impl Future<Output = Result<ToolRecord>> + Send;
    fn get(&self, name: &str) -> impl Future<Output = Result<ToolRecord>> + Send;
    fn version(
        &self,
        name: &str,
        version: u64,
    ) -> impl Future<Output = Result<VersionRecord>> + Send;
    /// Every version, oldest first.
    fn history(&self, name: &str) -> impl Future<Output = Result<Vec<VersionRecord>>> + Send;
    /// Soft delete: the tool leaves listings and calls; its history stays.
    fn delete(&self, name: &str, change: Change<'_>) -> impl Future<Output = Result<()>> + Send;
    fn search(&self, query: &Query) -> impl Future<Output = Result<Page<ToolRecord>>> + Send;
    /// Appends entries to the execution log in one transaction, keeping at most `keep`
    /// entries.
    fn record_runs(
        &self,
        runs: &[RunRecord],
        keep: usize,
    ) -> impl Future<Output = Result<()>> + Send;
    fn runs(&self, query: &RunQuery) -> impl Future<Output = Result<Page<RunRecord>>> + Send;
    /// A number that moves whenever a tool is created, changed or deleted, by this process
    /// or any other sharing the registry; poll it to follow changes.
    fn generation(&self) -> impl Future<Output = Result<u64>> + Send;
    /// Catalog sync's writes for a batch, in one transaction: a tool that is new (or
    /// deleted) is created, one that differs from the live one is saved as its next version,
    /// an unchanged one keeps its version. The report says which was which.
    fn sync(
        &self,
        tools: &[Tool],
        change: Change<'_>,
    ) -> impl Future<Output = Result<ImportReport>> + Send;
    /// Records where a session lives, that it ended, or that a replica's sessions are alive.
    fn note_session(&self, note: &SessionNote) -> impl Future<Output = Result<()>> + Send;
    /// The session `id`, if the registry knows it.
    fn find_session(&self, id: &str) -> impl Future<Output = Result<Option<SessionRow>>> + Send;
    /// Records `nonce`, seen at `at_ms`, for every replica of the registry: `false` when it
    /// was recorded before (a replayed request). Nonces older than `keep_ms` are forgotten.
    fn claim_nonce(
        &self,
        nonce: &str,
        at_ms: i64,
        keep_ms: i64,
    ) -> impl Future<Output = Result<bool>> + Send;
    /// Records (or refreshes) the MCP session `id` with what its client said at initialize
    /// (`state`, JSON), at `at_ms`; sessions not refreshed for `keep_ms` are forgotten.
    fn put_mcp_session(
        &self,
        id: &str,
        state: &str,
        at_ms: i64,
        keep_ms: i64,
    ) -> impl Future<Output = Result<()>> + Send;
    /// The MCP session `id`'s state, if it was refreshed at or after `since_ms`.
    fn mcp_session(
        &self,
        id: &str,
        since_ms: i64,
    ) -> impl Future<Output = Result<Option<String>>> + Send;
    /// Forgets the MCP session `id` (its client ended it).
    fn drop_mcp_session(&self, id: &str) -> impl Future<Output = Result<()>> + Send;
    /// Records the log level the MCP session `id`'s client set (a known session only).
    fn set_mcp_session_level(
        &self,
        id: &str,
        level: &str,
    ) -> impl Future<Output = Result<()>> + Send;
    /// The log level the MCP session `id`'s client set, if it set one.
    fn mcp_session_level(&self, id: &str) -> impl Future<Output = Result<Option<String>>> + Send;
}

/// Tools per transaction in a catalog import.
pub const SYNC_BATCH: usize = 500;

/// Operations built from the trait's primitives, the same for every backend.
pub trait StoreExt: Store {
    /// Saves version `version` again as the next version.
    fn restore(
        &self,
        name: &str,
        version: u64,
        change: Change<'_>,
    ) -> impl Future<Output = Result<ToolRecord>> + Send {
        async move {
            let old = self.version(name, version).await?;
            let current = self.get(name).await?;
            let tool = definition_to_tool(&old.definition)?;
            let summary = if change.summary.is_empty() {
                format!("restored version {version}")
            } else {
                change.summary.to_owned()
            };
            self.update(
                &tool,
                current.version,
                Change {
                    author: change.author,
                    summary: &summary,
                },
            )
            .await
        }
    }

    /// Enables or disables a tool (a new version, since `enabled` is part of the snapshot);
    /// no change when it already is.
    fn set_enabled(
        &self,
        name: &str,
        enabled: bool,
        change: Change<'_>,
    ) -> impl Future<Output = Result<ToolRecord>> + Send {
        async move {
            let current = self.get(name).await?;
            if current.tool.enabled == enabled {
                return Ok(current);
            }
            let mut tool = current.tool.clone();
            tool.enabled = enabled;
            let summary = if change.summary.is_empty() {
                if enabled { "enabled" } else { "disabled" }
            } else {
                change.summary
            };
            self.update(
                &tool,
                current.version,
                Change {
                    author: change.author,
                    summary,
                },
            )
            .await
        }
    }

    /// Every tool `query` matches, in name order, read in pages of 1000 (its `limit` and
    /// `cursor` are ignored).
    fn search_all(&self, query: Query) -> impl Future<Output = Result<Vec<ToolRecord>>> + Send {
        async move {
            let mut query = Query {
                limit: 1000,
                cursor: None,
                ..query
            };
            let mut all = Vec::new();
            loop {
                let page = self.search(&query).await?;
                all.extend(page.items);
                match page.next_cursor {
                    Some(c) => query.cursor = Some(c),
                    None => return Ok(all),
                }
            }
        }
    }

    /// `tools` with each `***` of a secret config value replaced by the stored secret it
    /// stands for (an exported catalog carries `***`; importing it keeps the secrets), by the
    /// rules of [`toolsmith_core::secrets`]; `None` when no tool has one. A `***` with nothing
    /// to keep is an error naming the tool and the field, and nothing is imported.
    fn keep_secrets(
        &self,
        tools: &[Tool],
    ) -> impl Future<Output = Result<Option<Vec<Tool>>>> + Send {
        async move {
            let has_placeholder = |t: &Tool| {
                t.config_schema.iter().any(|p| {
                    p.secret
                        && t.config.get(&p.name).and_then(Value::as_str)
                            == Some(toolsmith_core::model::REDACTED)
                })
            };
            if !tools.iter().any(has_placeholder) {
                return Ok(None);
            }
            let mut out = tools.to_vec();
            for tool in out.iter_mut().filter(|t| has_placeholder(t)) {
                let stored = match self.get(tool.name.as_str()).await {
                    Ok(r) => Some(r.tool),
                    Err(StoreError::NotFound(_)) => None,
                    Err(e) => return Err(e),
                };
                let draft = tool.to_catalog_value(Secrets::Keep);
                let found = toolsmith_core::secrets::placeholders(&draft, stored.as_ref());
                if let Some((path, message)) = found.problems.first() {
                    return Err(StoreError::Invalid(format!(
                        "{}: {path}: {message}",
                        tool.name
                    )));
                }
                for name in found.kept {
                    if let Some(v) = stored.as_ref().and_then(|s| s.config.get(&name)) {
                        tool.config.insert(name, v.clone());
                    }
                }
            }
            Ok(Some(out))
        }
    }

    /// Catalog sync: creates new tools, saves changed ones, leaves unchanged ones at their
    /// version; with `prune`, deletes live tools the catalog does not have.
    fn import(
        &self,
        tools: &[Tool],
        prune: bool,
        author: &str,
    ) -> impl Future<Output = Result<ImportReport>> + Send {
        self.import_as(tools, prune, author, "imported from catalog")
    }

    /// [`StoreExt::import`], each version written saying `summary` (an OpenAPI document's
    /// import says its source: [`held::import_summary`]).
    fn import_as(
        &self,
        tools: &[Tool],
        prune: bool,
        author: &str,
        summary: &str,
    ) -> impl Future<Output = Result<ImportReport>> + Send {
        async move {
            let kept = self.keep_secrets(tools).await?;
            let tools = kept.as_deref().unwrap_or(tools);
            let mut report = ImportReport::default();
            // Batches of 500: one transaction each, short enough not to hold the write lock
            // long (a 100 000-tool import takes seconds, not a minute of single commits).
            for batch in tools.chunks(SYNC_BATCH) {
                let change = Change { author, summary };
                report.extend(self.sync(batch, change).await?);
            }
            if prune {
                report.deleted = self.prune(tools, author).await?;
            }
            Ok(report)
        }
    }

    /// Deletes (softly) the live tools `keep` does not name, upstream tools excepted (they
    /// belong to their servers, not to catalogs); returns their names.
    fn prune(
        &self,
        keep: &[Tool],
        author: &str,
    ) -> impl Future<Output = Result<Vec<String>>> + Send {
        async move {
            let everything = Query {
                include_disabled: true,
                ..Query::default()
            };
            let mut deleted = Vec::new();
            for record in self.search_all(everything).await? {
                let upstream = record.tool.executor.upstream().is_some();
                if !upstream && !keep.iter().any(|t| t.name == record.tool.name) {
                    let name = record.tool.name.to_string();
                    self.delete(
                        &name,
                        Change {
                            author,
                            summary: "not in the catalog (pruned)",
                        },
                    )
                    .await?;
                    deleted.push(name);
                }
            }
            Ok(deleted)
        }
    }
}

impl<S: Store> StoreExt for S {}

/// Two definitions are the same when their catalog forms (secrets included) are equal.
pub fn same_definition(a: &Tool, b: &Tool) -> bool {
    a.to_catalog_value(Secrets::Keep) == b.to_catalog_value(Secrets::Keep)
}

/// A stored definition back into a `Tool`, through the catalog loader.
pub fn definition_to_tool(definition: &Value) -> Result<Tool> {
    catalog::parse_tool(definition, &NoFiles).map_err(|e| StoreError::Invalid(e.to_string()))
}

/// Stored definitions are self-contained: no files to read, no variables to expand.
pub(crate) struct NoFiles;

impl CatalogSource for NoFiles {
    fn read(&self, path: &str) -> std::result::Result<String, toolsmith_core::catalog::ReadError> {
        Err(toolsmith_core::catalog::ReadError::NoFiles {
            path: path.to_owned(),
            why: "stored definitions cannot read files",
        })
    }
    fn var(&self, _: &str) -> Option<String> {
        None
    }
}

/// Milliseconds since the Unix epoch (the registry's clock for what it keeps).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Cursors are opaque to callers: the hex of the last name of the previous page.
pub fn encode_cursor(name: &str) -> String {
    secrets::hex(name.as_bytes())
}

pub fn decode_cursor(cursor: &str) -> Result<String> {
    let bad = || StoreError::Invalid(format!("invalid cursor {cursor:?}"));
    String::from_utf8(secrets::unhex(cursor).ok_or_else(bad)?).map_err(|_| bad())
}
