//! The embedded registry: one SQLite file in WAL mode.
//!
//! Writes run in `BEGIN IMMEDIATE` transactions, so the version check and the write happen
//! under SQLite's single writer lock: two clients racing on the same version cannot both
//! win. A committed transaction is in the WAL before `commit` returns, so a killed process
//! loses nothing it acknowledged. Migrations are compiled in and tracked with
//! `PRAGMA user_version`.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{AssertSqlSafe, Row};
use toolsmith_core::Tool;
use toolsmith_core::model::Secrets;

use crate::rows;
use crate::{
    Change, ImportReport, Page, Query, Result, RunQuery, RunRecord, Store, StoreError, SyncAction,
    ToolRecord, VersionRecord, decode_cursor, encode_cursor, now_ms, sync_action,
};

/// The schema, in order; `PRAGMA user_version` is the number applied.
const MIGRATIONS: &[&str] = &[
    include_str!("../migrations/sqlite/0001_registry.sql"),
    include_str!("../migrations/sqlite/0002_runs.sql"),
    include_str!("../migrations/sqlite/0003_search_index.sql"),
    include_str!("../migrations/sqlite/0004_generation.sql"),
    include_str!("../migrations/sqlite/0005_sessions.sql"),
];

/// The SQLite registry.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
}

impl SqliteStore {
    /// Opens (creating if needed) the registry file and brings its schema up to date.
    pub async fn open(path: &Path) -> Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| StoreError::Backend(format!("{}: {e}", dir.display())))?;
        }
        let options = SqliteConnectOptions::from_str("sqlite://")
            .map_err(|e| StoreError::Backend(e.to_string()))?
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(10))
            .foreign_keys(true);
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options)
            .await?;
        let store = Self { pool };
        store.migrate().await?;
        Ok(store)
    }

    async fn migrate(&self) -> Result<()> {
        let applied: i64 = sqlx::query_scalar("PRAGMA user_version")
            .fetch_one(&self.pool)
            .await?;
        if applied as usize > MIGRATIONS.len() {
            return Err(StoreError::Backend(format!(
                "the registry's schema is version {applied}, newer than this toolsmith knows ({}); upgrade toolsmith",
                MIGRATIONS.len()
            )));
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(applied as usize) {
            let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
            // The migrations are compiled-in constants.
            sqlx::raw_sql(AssertSqlSafe(*sql)).execute(&mut *tx).await?;
            sqlx::raw_sql(AssertSqlSafe(format!("PRAGMA user_version = {}", i + 1)))
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
        }
        Ok(())
    }

    /// Saves `tool` as version `version` in an open transaction.
    async fn write(
        conn: &mut sqlx::SqliteConnection,
        tool: &Tool,
        version: u64,
        exists: bool,
        change: &Change<'_>,
    ) -> Result<ToolRecord> {
        let definition = tool.to_catalog_value(Secrets::Keep);
        let text = definition.to_string();
        let now = now_ms();
        let tags = format!(" {} ", tool.tags.join(" ").to_lowercase());
        let sql = if exists {
            "UPDATE tools SET version = ?2, enabled = ?3, deleted = 0, description = ?4, tags = ?5, definition = ?6, updated_at = ?7, updated_by = ?8 WHERE name = ?1"
        } else {
            "INSERT INTO tools (name, version, enabled, deleted, description, tags, definition, updated_at, updated_by) VALUES (?1, ?2, ?3, 0, ?4, ?5, ?6, ?7, ?8)"
        };
        sqlx::query(sql)
            .bind(tool.name.as_str())
            .bind(version as i64)
            .bind(tool.enabled)
            .bind(&tool.description)
            .bind(&tags)
            .bind(&text)
            .bind(now)
            .bind(change.author)
            .execute(&mut *conn)
            .await?;
        sqlx::query("INSERT INTO tool_versions (name, version, definition, created_at, author, summary) VALUES (?1, ?2, ?3, ?4, ?5, ?6)")
            .bind(tool.name.as_str())
            .bind(version as i64)
            .bind(&text)
            .bind(now)
            .bind(change.author)
            .bind(change.summary)
            .execute(&mut *conn)
            .await?;
        Ok(ToolRecord {
            tool: tool.clone(),
            version,
            updated_at_ms: now,
            updated_by: change.author.to_owned(),
        })
    }
}

/// `(version, deleted)` of a name, live or not.
async fn state(conn: &mut sqlx::SqliteConnection, name: &str) -> Result<Option<(u64, bool)>> {
    let row = sqlx::query("SELECT version, deleted FROM tools WHERE name = ?1")
        .bind(name)
        .fetch_optional(&mut *conn)
        .await?;
    Ok(row.map(|r| {
        (
            r.get::<i64, _>("version") as u64,
            r.get::<bool, _>("deleted"),
        )
    }))
}

const RECORD_COLUMNS: &str = "name, version, definition, updated_at, updated_by";

/// `(version, deleted, definition)` of a name, live or not.
async fn stored(
    conn: &mut sqlx::SqliteConnection,
    name: &str,
) -> Result<Option<(u64, bool, String)>> {
    let row = sqlx::query("SELECT version, deleted, definition FROM tools WHERE name = ?1")
        .bind(name)
        .fetch_optional(&mut *conn)
        .await?;
    Ok(row.map(|r| {
        (
            r.get::<i64, _>("version") as u64,
            r.get::<bool, _>("deleted"),
            r.get::<String, _>("definition"),
        )
    }))
}

impl Store for SqliteStore {
    async fn create(&self, tool: &Tool, change: Change<'_>) -> Result<ToolRecord> {
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let record = match state(&mut tx, tool.name.as_str()).await? {
            Some((_, false)) => return Err(StoreError::Exists(tool.name.to_string())),
            // A deleted name continues its history.
            Some((version, true)) => Self::write(&mut tx, tool, version + 1, true, &change).await?,
            None => Self::write(&mut tx, tool, 1, false, &change).await?,
        };
        tx.commit().await?;
        Ok(record)
    }

    async fn update(
        &self,
        tool: &Tool,
        base_version: u64,
        change: Change<'_>,
    ) -> Result<ToolRecord> {
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let record = match state(&mut tx, tool.name.as_str()).await? {
            None | Some((_, true)) => {
                return Err(StoreError::NotFound(format!(
                    "tool {:?}",
                    tool.name.as_str()
                )));
            }
            Some((current, false)) if current != base_version => {
                return Err(StoreError::Conflict {
                    name: tool.name.to_string(),
                    current_version: current,
                    based_on: base_version,
                });
            }
            Some((current, false)) => {
                Self::write(&mut tx, tool, current + 1, true, &change).await?
            }
        };
        tx.commit().await?;
        Ok(record)
    }

    async fn get(&self, name: &str) -> Result<ToolRecord> {
        let row = sqlx::query(AssertSqlSafe(format!(
            "SELECT {RECORD_COLUMNS} FROM tools WHERE name = ?1 AND deleted = 0"
        )))
        .bind(name)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref()
            .map(rows::tool)
            .unwrap_or_else(|| Err(StoreError::NotFound(format!("tool {name:?}"))))
    }

    async fn version(&self, name: &str, version: u64) -> Result<VersionRecord> {
        let row = sqlx::query("SELECT * FROM tool_versions WHERE name = ?1 AND version = ?2")
            .bind(name)
            .bind(version as i64)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(rows::version).unwrap_or_else(|| {
            Err(StoreError::NotFound(format!(
                "version {version} of tool {name:?}"
            )))
        })
    }

    async fn history(&self, name: &str) -> Result<Vec<VersionRecord>> {
        let rows = sqlx::query("SELECT * FROM tool_versions WHERE name = ?1 ORDER BY version")
            .bind(name)
            .fetch_all(&self.pool)
            .await?;
        if rows.is_empty() {
            return Err(StoreError::NotFound(format!("tool {name:?}")));
        }
        rows.iter().map(rows::version).collect()
    }

    async fn delete(&self, name: &str, change: Change<'_>) -> Result<()> {
        let done = sqlx::query("UPDATE tools SET deleted = 1, updated_at = ?2, updated_by = ?3 WHERE name = ?1 AND deleted = 0")
            .bind(name)
            .bind(now_ms())
            .bind(change.author)
            .execute(&self.pool)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(format!("tool {name:?}")));
        }
        Ok(())
    }

    async fn search(&self, query: &Query) -> Result<Page<ToolRecord>> {
        let limit = rows::page_size(query.limit);
        let mut sql = format!("SELECT {RECORD_COLUMNS} FROM tools WHERE deleted = 0");
        if !query.include_disabled {
            sql.push_str(" AND enabled = 1");
        }
        let after = query.cursor.as_deref().map(decode_cursor).transpose()?;
        if after.is_some() {
            sql.push_str(" AND name > ?1");
        }
        // Three characters or more: the trigram index narrows the rows first; LIKE then keeps
        // exactly what the scan would have (the index folds case a little differently).
        let mut indexed = query.text.as_deref().and_then(trigram_phrase);
        // A common term matches so many rows that reading them all and sorting costs more
        // than walking the name index until a page is full: then the scan is used.
        if let Some(phrase) = &indexed {
            let hits: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM (SELECT 1 FROM tools_fts WHERE tools_fts MATCH ?1 LIMIT ?2)",
            )
            .bind(phrase)
            .bind(DENSE_MATCHES)
            .fetch_one(&self.pool)
            .await?;
            if hits >= DENSE_MATCHES {
                indexed = None;
            }
        }
        if indexed.is_some() {
            sql.push_str(" AND rowid IN (SELECT rowid FROM tools_fts WHERE tools_fts MATCH ?5)");
        }
        if query.text.is_some() {
            sql.push_str(" AND (lower(name) LIKE ?2 ESCAPE '\\' OR lower(description) LIKE ?2 ESCAPE '\\' OR tags LIKE ?2 ESCAPE '\\')");
        }
        if query.tag.is_some() {
            sql.push_str(" AND tags LIKE ?3 ESCAPE '\\'");
        }
        sql.push_str(" ORDER BY name LIMIT ?4");
        // Built only from constant fragments; every value is bound.
        let rows = sqlx::query(AssertSqlSafe(sql))
            .bind(after.unwrap_or_default())
            .bind(query.text.as_deref().map(rows::like).unwrap_or_default())
            .bind(query.tag.as_deref().map(rows::tag_like).unwrap_or_default())
            .bind((limit + 1) as i64)
            .bind(indexed.unwrap_or_default())
            .fetch_all(&self.pool)
            .await?;
        let mut items = rows
            .iter()
            .take(limit)
            .map(rows::tool)
            .collect::<Result<Vec<_>>>()?;
        let next_cursor = (rows.len() > limit)
            .then(|| items.last().map(|r| encode_cursor(r.tool.name.as_str())))
            .flatten();
        items.shrink_to_fit();
        Ok(Page { items, next_cursor })
    }

    async fn sync(&self, tools: &[Tool], change: Change<'_>) -> Result<ImportReport> {
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let mut report = ImportReport::default();
        for tool in tools {
            let name = tool.name.as_str();
            let current = stored(&mut tx, name).await?;
            let action = sync_action(
                current.as_ref().map(|(v, d, def)| (*v, *d, def.as_str())),
                tool,
            );
            match action {
                SyncAction::Create { version, exists } => {
                    Self::write(&mut tx, tool, version, exists, &change).await?;
                }
                SyncAction::Update { version } => {
                    Self::write(&mut tx, tool, version, true, &change).await?;
                }
                SyncAction::Unchanged => {}
            }
            report.note(action, name);
        }
        tx.commit().await?;
        Ok(report)
    }

    crate::session_methods!();

    async fn generation(&self) -> Result<u64> {
        let g: i64 = sqlx::query_scalar("SELECT generation FROM registry_generation WHERE id = 1")
            .fetch_one(&self.pool)
            .await?;
        Ok(g as u64)
    }

    async fn record_runs(&self, runs: &[RunRecord], keep: usize) -> Result<()> {
        if runs.is_empty() {
            return Ok(());
        }
        let mut tx = self.pool.begin().await?;
        let mut last = 0;
        for run in runs {
            last = sqlx::query(
                "INSERT INTO runs (tool, version, caller, arguments, kind, duration_ms, exit_code, truncated, started_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )
            .bind(&run.tool)
            .bind(run.version as i64)
            .bind(&run.caller)
            .bind(run.arguments.to_string())
            .bind(&run.kind)
            .bind(run.duration_ms)
            .bind(run.exit_code)
            .bind(run.truncated)
            .bind(run.started_at_ms)
            .execute(&mut *tx)
            .await?
            .last_insert_rowid();
        }
        // Retention: ids only grow, so the newest `keep` are the highest ids.
        sqlx::query("DELETE FROM runs WHERE id <= ?1")
            .bind(last - keep as i64)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn runs(&self, query: &RunQuery) -> Result<Page<RunRecord>> {
        let limit = rows::page_size(query.limit);
        let before = rows::runs_before(query.cursor.as_deref())?;
        let rows = sqlx::query(
            "SELECT * FROM runs WHERE id < ?1 AND (?2 IS NULL OR tool = ?2) AND (?3 IS NULL OR kind = ?3) AND (?4 IS NULL OR caller = ?4) ORDER BY id DESC LIMIT ?5",
        )
        .bind(before)
        .bind(query.tool.as_deref())
        .bind(query.kind.as_deref())
        .bind(query.caller.as_deref())
        .bind((limit + 1) as i64)
        .fetch_all(&self.pool)
        .await?;
        let items = rows
            .iter()
            .take(limit)
            .map(rows::run)
            .collect::<Result<Vec<_>>>()?;
        let next_cursor = (rows.len() > limit)
            .then(|| items.last().map(|r| encode_cursor(&r.id.to_string())))
            .flatten();
        Ok(Page { items, next_cursor })
    }
}

/// Matches beyond which a search walks the name index instead of the trigram index.
const DENSE_MATCHES: i64 = 2000;

/// The FTS5 query for a substring search: one quoted phrase, which the trigram tokenizer
/// matches anywhere inside a column. `None` under three characters, which trigrams cannot
/// find.
fn trigram_phrase(text: &str) -> Option<String> {
    (text.chars().count() >= 3 && !text.contains('\0'))
        .then(|| format!("\"{}\"", text.to_lowercase().replace('"', "\"\"")))
}
