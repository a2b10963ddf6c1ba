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
//! replicas. [`Registry`] is either, chosen by the address it is opened with.

pub mod postgres;
mod rows;
pub mod sqlite;

use serde::Serialize;
use serde_json::{Map, Value};
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
        "tool {name:?} is at version {current_version}; the change was based on version {based_on}"
    )]
    Conflict {
        name: String,
        current_version: u64,
        based_on: u64,
    },
    /// The name is taken by a live tool.
    #[error("tool {0:?} already exists")]
    Exists(String),
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
}

impl RunRecord {
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
        let mut text = arguments.to_string();
        let arguments = if text.len() > MAX_LOGGED_ARGUMENTS {
            let mut cut = MAX_LOGGED_ARGUMENTS;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            Value::String(format!("{text}… (cut)"))
        } else {
            arguments.clone()
        };
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
}

/// Rows of sessions that ended (or whose replica went silent) this long ago are removed.
pub const SESSION_ROWS_KEPT_MS: i64 = 24 * 3600 * 1000;

/// The sessions table's statements: the same text for both backends (`$n` placeholders,
/// `ON CONFLICT`), run by each on its own pool.
pub(crate) mod session_sql {
    pub const START: &str = "INSERT INTO sessions (id, replica, place, owner, command, status, created_ms, last_seen_ms) \
         VALUES ($1, $2, $3, $4, $5, 'running', $6, $6) \
         ON CONFLICT (id) DO UPDATE SET status = 'running', last_seen_ms = $6";
    pub const PRUNE: &str = "DELETE FROM sessions WHERE last_seen_ms < $1";
    pub const END: &str = "UPDATE sessions SET status = $1, last_seen_ms = $2 WHERE id = $3";
    pub const ALIVE: &str =
        "UPDATE sessions SET last_seen_ms = $1 WHERE replica = $2 AND status = 'running'";
    pub const FIND: &str = "SELECT id, replica, place, owner, command, status, created_ms, last_seen_ms \
         FROM sessions WHERE id = $1";
}

/// The sessions methods of [`Store`], the same code for both backends (each has a `pool`).
macro_rules! session_methods {
    () => {
        async fn note_session(&self, note: &crate::SessionNote) -> crate::Result<()> {
            match note {
                crate::SessionNote::Started {
                    id,
                    replica,
                    place,
                    owner,
                    command,
                    at_ms,
                } => {
                    sqlx::query(crate::session_sql::PRUNE)
                        .bind(at_ms - crate::SESSION_ROWS_KEPT_MS)
                        .execute(&self.pool)
                        .await?;
                    sqlx::query(crate::session_sql::START)
                        .bind(id)
                        .bind(replica)
                        .bind(place)
                        .bind(owner)
                        .bind(command)
                        .bind(at_ms)
                        .execute(&self.pool)
                        .await?;
                }
                crate::SessionNote::Ended { id, status, at_ms } => {
                    sqlx::query(crate::session_sql::END)
                        .bind(status)
                        .bind(at_ms)
                        .bind(id)
                        .execute(&self.pool)
                        .await?;
                }
                crate::SessionNote::Alive { replica, at_ms } => {
                    sqlx::query(crate::session_sql::ALIVE)
                        .bind(at_ms)
                        .bind(replica)
                        .execute(&self.pool)
                        .await?;
                }
            }
            Ok(())
        }

        async fn find_session(&self, id: &str) -> crate::Result<Option<crate::SessionRow>> {
            let row: Option<(String, String, String, String, String, String, i64, i64)> =
                sqlx::query_as(crate::session_sql::FIND)
                    .bind(id)
                    .fetch_optional(&self.pool)
                    .await?;
            Ok(row.map(
                |(id, replica, place, owner, command, status, created_ms, last_seen_ms)| {
                    crate::SessionRow {
                        id,
                        replica,
                        place,
                        owner,
                        command,
                        status,
                        created_ms,
                        last_seen_ms,
                    }
                },
            ))
        }
    };
}

pub(crate) use session_methods;

/// The largest argument text kept in the log.
pub const MAX_LOGGED_ARGUMENTS: usize = 4096;

/// Filters for the execution log; newest first.
#[derive(Debug, Clone, Default)]
pub struct RunQuery {
    pub tool: Option<String>,
    pub kind: Option<String>,
    pub caller: Option<String>,
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
}

/// What sync does with one tool, given the stored `(version, deleted, definition)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SyncAction {
    /// Write `version`; `exists` when a (deleted) row is there to update.
    Create {
        version: u64,
        exists: bool,
    },
    Update {
        version: u64,
    },
    Unchanged,
}

pub(crate) fn sync_action(stored: Option<(u64, bool, &str)>, tool: &Tool) -> SyncAction {
    match stored {
        None => SyncAction::Create {
            version: 1,
            exists: false,
        },
        Some((version, true, _)) => SyncAction::Create {
            version: version + 1,
            exists: true,
        },
        Some((version, false, definition)) => {
            let new = tool.to_catalog_value(Secrets::Keep);
            let old: Option<Value> = serde_json::from_str(definition).ok();
            // Equal as stored, or equal once the stored form is read back (a definition
            // stored by an older toolsmith may spell defaults differently).
            let same = old.as_ref() == Some(&new)
                || old
                    .as_ref()
                    .and_then(|v| definition_to_tool(v).ok())
                    .is_some_and(|t| same_definition(&t, tool));
            match same {
                true => SyncAction::Unchanged,
                false => SyncAction::Update {
                    version: version + 1,
                },
            }
        }
    }
}

impl ImportReport {
    pub(crate) fn note(&mut self, action: SyncAction, name: &str) {
        let list = match action {
            SyncAction::Create { .. } => &mut self.created,
            SyncAction::Update { .. } => &mut self.updated,
            SyncAction::Unchanged => &mut self.unchanged,
        };
        list.push(name.to_owned());
    }

    fn extend(&mut self, other: ImportReport) {
        self.created.extend(other.created);
        self.updated.extend(other.updated);
        self.unchanged.extend(other.unchanged);
        self.deleted.extend(other.deleted);
    }
}

/// The registry a server or the CLI uses: SQLite or PostgreSQL.
#[derive(Debug, Clone)]
pub enum Registry {
    Sqlite(sqlite::SqliteStore),
    Postgres(postgres::PgStore),
}

impl Registry {
    /// `postgres://…` or `postgresql://…` opens PostgreSQL; anything else is an SQLite file
    /// (`sqlite://` prefix optional).
    pub async fn open(address: &str) -> Result<Self> {
        if address.starts_with("postgres://") || address.starts_with("postgresql://") {
            Ok(Self::Postgres(postgres::PgStore::open(address).await?))
        } else {
            let path = address.strip_prefix("sqlite://").unwrap_or(address);
            Ok(Self::Sqlite(
                sqlite::SqliteStore::open(std::path::Path::new(path)).await?,
            ))
        }
    }

    /// The backend's name, for logs.
    pub fn backend(&self) -> &'static str {
        match self {
            Self::Sqlite(_) => "sqlite",
            Self::Postgres(_) => "postgres",
        }
    }
}

/// Forwards one `Store` method to whichever backend the registry holds.
macro_rules! forward {
    ($self:ident, $method:ident ( $($arg:expr),* )) => {
        match $self {
            Registry::Sqlite(s) => s.$method($($arg),*).await,
            Registry::Postgres(s) => s.$method($($arg),*).await,
        }
    };
}

impl Store for Registry {
    async fn create(&self, tool: &Tool, change: Change<'_>) -> Result<ToolRecord> {
        forward!(self, create(tool, change))
    }
    async fn update(
        &self,
        tool: &Tool,
        base_version: u64,
        change: Change<'_>,
    ) -> Result<ToolRecord> {
        forward!(self, update(tool, base_version, change))
    }
    async fn get(&self, name: &str) -> Result<ToolRecord> {
        forward!(self, get(name))
    }
    async fn version(&self, name: &str, version: u64) -> Result<VersionRecord> {
        forward!(self, version(name, version))
    }
    async fn history(&self, name: &str) -> Result<Vec<VersionRecord>> {
        forward!(self, history(name))
    }
    async fn delete(&self, name: &str, change: Change<'_>) -> Result<()> {
        forward!(self, delete(name, change))
    }
    async fn search(&self, query: &Query) -> Result<Page<ToolRecord>> {
        forward!(self, search(query))
    }
    async fn record_runs(&self, runs: &[RunRecord], keep: usize) -> Result<()> {
        forward!(self, record_runs(runs, keep))
    }
    async fn runs(&self, query: &RunQuery) -> Result<Page<RunRecord>> {
        forward!(self, runs(query))
    }
    async fn sync(&self, tools: &[Tool], change: Change<'_>) -> Result<ImportReport> {
        forward!(self, sync(tools, change))
    }
    async fn generation(&self) -> Result<u64> {
        forward!(self, generation())
    }
    async fn note_session(&self, note: &SessionNote) -> Result<()> {
        forward!(self, note_session(note))
    }
    async fn find_session(&self, id: &str) -> Result<Option<SessionRow>> {
        forward!(self, find_session(id))
    }
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
        async move {
            let kept = self.keep_secrets(tools).await?;
            let tools = kept.as_deref().unwrap_or(tools);
            let mut report = ImportReport::default();
            // Batches of 500: one transaction each, short enough not to hold the write lock
            // long (a 100 000-tool import takes seconds, not a minute of single commits).
            for batch in tools.chunks(SYNC_BATCH) {
                let change = Change {
                    author,
                    summary: "imported from catalog",
                };
                report.extend(self.sync(batch, change).await?);
            }
            if prune {
                let everything = Query {
                    include_disabled: true,
                    ..Query::default()
                };
                for record in self.search_all(everything).await? {
                    if !tools.iter().any(|t| t.name == record.tool.name) {
                        let name = record.tool.name.to_string();
                        self.delete(
                            &name,
                            Change {
                                author,
                                summary: "not in the catalog (pruned)",
                            },
                        )
                        .await?;
                        report.deleted.push(name);
                    }
                }
            }
            Ok(report)
        }
    }
}

impl<S: Store> StoreExt for S {}

/// One difference between two definitions: the path (`parameters[1].type`) and the value on
/// each side (`null` where absent).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Difference {
    pub path: String,
    pub from: Value,
    pub to: Value,
}

/// The differences from `a` to `b`, walking objects by key and arrays by index (knowing
/// nothing of secrets: use [`diff_definitions`] for definitions).
pub fn diff(a: &Value, b: &Value) -> Vec<Difference> {
    fn walk(a: &Value, b: &Value, path: String, out: &mut Vec<Difference>) {
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                let mut keys: Vec<&String> = x.keys().collect();
                keys.extend(y.keys().filter(|k| !x.contains_key(*k)));
                for k in keys {
                    let child = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    walk(
                        x.get(k).unwrap_or(&Value::Null),
                        y.get(k).unwrap_or(&Value::Null),
                        child,
                        out,
                    );
                }
            }
            (Value::Array(x), Value::Array(y)) => {
                for i in 0..x.len().max(y.len()) {
                    walk(
                        x.get(i).unwrap_or(&Value::Null),
                        y.get(i).unwrap_or(&Value::Null),
                        format!("{path}[{i}]"),
                        out,
                    );
                }
            }
            _ if a != b => out.push(Difference {
                path,
                from: a.clone(),
                to: b.clone(),
            }),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(a, b, String::new(), &mut out);
    out
}

/// `diff` of two stored definitions, with secret values shown as `***`: a secret config
/// value — a string, or a whole array or object — is compared as one value and reported as
/// one change at `config.<name>`, so nothing inside it reaches the output.
pub fn diff_definitions(a: &Value, b: &Value) -> Result<Vec<Difference>> {
    let (ta, tb) = (definition_to_tool(a)?, definition_to_tool(b)?);
    let mut secrets: Vec<&str> = ta
        .config_schema
        .iter()
        .chain(&tb.config_schema)
        .filter(|p| p.secret)
        .map(|p| p.name.as_str())
        .collect();
    secrets.sort_unstable();
    secrets.dedup();
    let (mut a, mut b) = (a.clone(), b.clone());
    let mut out = Vec::new();
    for name in secrets {
        let take = |v: &mut Value| {
            v.get_mut("config")
                .and_then(Value::as_object_mut)
                .and_then(|c| c.remove(name))
        };
        let (from, to) = (take(&mut a), take(&mut b));
        if from != to {
            let shown = |v: Option<Value>| {
                v.map_or(Value::Null, |_| {
                    Value::String(toolsmith_core::model::REDACTED.into())
                })
            };
            out.push(Difference {
                path: format!("config.{name}"),
                from: shown(from),
                to: shown(to),
            });
        }
    }
    for v in [&mut a, &mut b] {
        if let Some(map) = v.as_object_mut()
            && map
                .get("config")
                .is_some_and(|c| c.as_object().is_some_and(Map::is_empty))
        {
            map.remove("config");
        }
    }
    let mut all = diff(&a, &b);
    all.extend(out);
    Ok(all)
}

/// Two definitions are the same when their catalog forms (secrets included) are equal.
pub fn same_definition(a: &Tool, b: &Tool) -> bool {
    a.to_catalog_value(Secrets::Keep) == b.to_catalog_value(Secrets::Keep)
}

/// A stored definition back into a `Tool`, through the catalog loader.
pub fn definition_to_tool(definition: &Value) -> Result<Tool> {
    catalog::parse_tool(definition, &NoFiles).map_err(|e| StoreError::Invalid(e.to_string()))
}

/// Stored definitions are self-contained: no files to read, no variables to expand.
struct NoFiles;

impl CatalogSource for NoFiles {
    fn read(&self, path: &str) -> std::result::Result<String, String> {
        Err(format!("stored definitions cannot read files ({path})"))
    }
    fn var(&self, _: &str) -> Option<String> {
        None
    }
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Cursors are opaque to callers: the hex of the last name of the previous page.
pub fn encode_cursor(name: &str) -> String {
    name.bytes().map(|b| format!("{b:02x}")).collect()
}

pub fn decode_cursor(cursor: &str) -> Result<String> {
    let bad = || StoreError::Invalid(format!("invalid cursor {cursor:?}"));
    if !cursor.len().is_multiple_of(2) {
        return Err(bad());
    }
    let bytes: std::result::Result<Vec<u8>, _> = (0..cursor.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(cursor.get(i..i + 2).unwrap_or("zz"), 16))
        .collect();
    String::from_utf8(bytes.map_err(|_| bad())?).map_err(|_| bad())
}
