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

use sqlx::AssertSqlSafe;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

use crate::rows;

/// How long a statement waits for SQLite's write lock (and an open for a racing one).
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// SQLITE_BUSY or SQLITE_LOCKED, extended codes included.
fn busy(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(d) => d
            .code()
            .and_then(|c| c.parse::<i64>().ok())
            .is_some_and(|c| matches!(c & 0xff, 5 | 6)),
        _ => false,
    }
}
use crate::{Page, Query, Result, Store, StoreError, ToolRecord, decode_cursor};

/// The schema, in order; `PRAGMA user_version` is the number applied.
const MIGRATIONS: &[&str] = &[
    include_str!("../migrations/sqlite/0001_registry.sql"),
    include_str!("../migrations/sqlite/0002_runs.sql"),
    include_str!("../migrations/sqlite/0003_search_index.sql"),
    include_str!("../migrations/sqlite/0004_generation.sql"),
    include_str!("../migrations/sqlite/0005_sessions.sql"),
    include_str!("../migrations/sqlite/0006_upstreams.sql"),
    include_str!("../migrations/sqlite/0007_run_upstream.sql"),
    include_str!("../migrations/sqlite/0008_secrets.sql"),
    include_str!("../migrations/sqlite/0009_run_sandbox.sql"),
    include_str!("../migrations/sqlite/0010_toolsets.sql"),
    include_str!("../migrations/sqlite/0011_rate_buckets.sql"),
    include_str!("../migrations/sqlite/0012_session_url.sql"),
    include_str!("../migrations/sqlite/0013_peer_nonces.sql"),
    include_str!("../migrations/sqlite/0014_run_guardrails.sql"),
    include_str!("../migrations/sqlite/0015_mcp_sessions.sql"),
    include_str!("../migrations/sqlite/0016_mcp_session_levels.sql"),
    include_str!("../migrations/sqlite/0017_run_parents.sql"),
    include_str!("../migrations/sqlite/0018_upstream_connections.sql"),
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
            .busy_timeout(BUSY_TIMEOUT)
            // Freed pages are zeroed: a replaced secret leaves no bytes behind in the file.
            .pragma("secure_delete", "ON")
            .foreign_keys(true);
        // Processes opening one fresh file at once race to create it, switch it to WAL and
        // migrate it, and SQLite can answer SQLITE_BUSY at once in those first steps (its
        // busy timeout does not cover them all): opening tries again while it does, for as
        // long as that timeout.
        let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
        let mut pause = Duration::from_millis(10);
        loop {
            let opened = async {
                let pool = SqlitePoolOptions::new()
                    .max_connections(4)
                    .connect_with(options.clone())
                    .await?;
                let store = Self { pool };
                let newer = store.migrate().await?;
                Ok::<_, sqlx::Error>((store, newer))
            }
            .await;
            match opened {
                Ok((store, None)) => return Ok(store),
                Ok((_, Some(applied))) => {
                    return Err(StoreError::Backend(format!(
                        "the registry's schema is version {applied}, newer than this toolsmith knows ({}); upgrade toolsmith",
                        MIGRATIONS.len()
                    )));
                }
                Err(e) if busy(&e) && std::time::Instant::now() < deadline => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(200));
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Applies the migrations not applied yet, each in a write transaction that reads the
    /// version applied under the write lock: two processes opening a fresh file at once
    /// apply each migration once (the second finds it done). `Some(version)`: the file's
    /// schema is newer than this toolsmith knows.
    async fn migrate(&self) -> std::result::Result<Option<usize>, sqlx::Error> {
        loop {
            let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
            let applied: i64 = sqlx::query_scalar("PRAGMA user_version")
                .fetch_one(&mut *tx)
                .await?;
            let applied = applied as usize;
            if applied > MIGRATIONS.len() {
                return Ok(Some(applied));
            }
            let Some(sql) = MIGRATIONS.get(applied) else {
                return Ok(None);
            };
            // The migrations are compiled-in constants.
            sqlx::raw_sql(AssertSqlSafe(*sql)).execute(&mut *tx).await?;
            sqlx::raw_sql(AssertSqlSafe(format!(
                "PRAGMA user_version = {}",
                applied + 1
            )))
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
        }
    }

    /// A write transaction: SQLite's single writer lock, taken at once.
    async fn begin(&self) -> Result<sqlx::Transaction<'static, sqlx::Sqlite>> {
        Ok(self.pool.begin_with("BEGIN IMMEDIATE").await?)
    }

    /// Rows are not locked one by one: the write transaction holds the whole database.
    const ROW_LOCK: &str = "";

    crate::reseal::reseal_methods!();

    /// After a reseal: the WAL written into the file and emptied, the file rebuilt without
    /// free pages (what the old values were in), the WAL emptied again.
    async fn compact(&self) -> Result<()> {
        for statement in [
            "PRAGMA wal_checkpoint(TRUNCATE)",
            "VACUUM",
            "PRAGMA wal_checkpoint(TRUNCATE)",
        ] {
            sqlx::query(statement).execute(&self.pool).await?;
        }
        Ok(())
    }
}

const RECORD_COLUMNS: &str = "name, version, definition, updated_at, updated_by";

impl Store for SqliteStore {
    crate::shared::store_methods!();

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
        rows::page(&rows, limit, rows::tool, |r| r.tool.name.to_string())
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

impl crate::UpstreamStore for SqliteStore {
    crate::upstreams::upstream_methods!();
}

impl crate::documents::Documents for SqliteStore {
    crate::documents::document_methods!(sqlx::SqliteConnection);
}

crate::documents::document_helpers!(sqlx::SqliteConnection, SqliteStore::ROW_LOCK);
