//! The shared registry: PostgreSQL, for several `toolsmith serve` replicas.
//!
//! A write locks the tool's row (`SELECT … FOR UPDATE`) inside its transaction, so the version
//! check and the write cannot interleave with another replica's; a race on a new name ends in
//! the primary key, reported as [`StoreError::Exists`]. Migrations are compiled in, recorded
//! in `toolsmith_schema`, and run under an advisory lock so replicas may start together.

use std::str::FromStr;

use sqlx::AssertSqlSafe;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};

use crate::rows;
use crate::{Page, Query, Result, Store, StoreError, ToolRecord, decode_cursor};

const MIGRATIONS: &[&str] = &[
    include_str!("../migrations/postgres/0001_registry.sql"),
    include_str!("../migrations/postgres/0002_runs.sql"),
    include_str!("../migrations/postgres/0003_search_index.sql"),
    include_str!("../migrations/postgres/0004_generation.sql"),
    include_str!("../migrations/postgres/0005_sessions.sql"),
    include_str!("../migrations/postgres/0006_upstreams.sql"),
    include_str!("../migrations/postgres/0007_run_upstream.sql"),
    include_str!("../migrations/postgres/0008_secrets.sql"),
    include_str!("../migrations/postgres/0009_run_sandbox.sql"),
    include_str!("../migrations/postgres/0010_toolsets.sql"),
    include_str!("../migrations/postgres/0011_rate_buckets.sql"),
    include_str!("../migrations/postgres/0012_session_url.sql"),
    include_str!("../migrations/postgres/0013_peer_nonces.sql"),
    include_str!("../migrations/postgres/0014_run_guardrails.sql"),
    include_str!("../migrations/postgres/0015_mcp_sessions.sql"),
    include_str!("../migrations/postgres/0016_mcp_session_levels.sql"),
    include_str!("../migrations/postgres/0017_run_parents.sql"),
    include_str!("../migrations/postgres/0018_upstream_connections.sql"),
];

/// An arbitrary constant naming toolsmith's migration lock.
const MIGRATION_LOCK: i64 = 0x746f_6f6c_736d_6974;

#[derive(Debug, Clone)]
pub struct PgStore {
    pool: PgPool,
}

impl PgStore {
    /// Connects to `url` (`postgres://user:pass@host/db`) and brings the schema up to date.
    pub async fn open(url: &str) -> Result<Self> {
        Self::open_in_schema(url, None).await
    }

    /// The same, with every table in `schema` (created if needed): tests use one each.
    pub async fn open_in_schema(url: &str, schema: Option<&str>) -> Result<Self> {
        let mut options = PgConnectOptions::from_str(url)
            .map_err(|e| StoreError::Backend(format!("{url}: {e}")))?;
        if let Some(schema) = schema {
            if !schema
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
            {
                return Err(StoreError::Invalid(format!("schema name {schema:?}")));
            }
            let setup = PgPoolOptions::new()
                .max_connections(1)
                .connect_with(options.clone())
                .await?;
            sqlx::raw_sql(AssertSqlSafe(format!(
                "CREATE SCHEMA IF NOT EXISTS {schema}"
            )))
            .execute(&setup)
            .await?;
            setup.close().await;
            options = options.options([("search_path", schema)]);
        }
        let pool = PgPoolOptions::new()
            .max_connections(8)
            .connect_with(options)
            .await?;
        let store = Self { pool };
        store.migrate().await?;
        Ok(store)
    }

    /// Holds the lock of one OAuth connection (a transaction-scoped advisory lock on its
    /// server and subject) until the returned transaction is dropped: replicas refresh a
    /// connection's tokens one at a time, each reading what the one before it saved.
    pub async fn lock_connection(
        &self,
        server: &str,
        subject: &str,
    ) -> Result<sqlx::Transaction<'static, sqlx::Postgres>> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
            .bind(format!("toolsmith oauth connection\n{server}\n{subject}"))
            .execute(&mut *tx)
            .await?;
        Ok(tx)
    }

    async fn migrate(&self) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(MIGRATION_LOCK)
            .execute(&mut *tx)
            .await?;
        sqlx::raw_sql("CREATE TABLE IF NOT EXISTS toolsmith_schema (version INTEGER NOT NULL)")
            .execute(&mut *tx)
            .await?;
        let applied: Option<i32> = sqlx::query_scalar("SELECT max(version) FROM toolsmith_schema")
            .fetch_one(&mut *tx)
            .await?;
        let applied = applied.unwrap_or(0) as usize;
        if applied > MIGRATIONS.len() {
            return Err(StoreError::Backend(format!(
                "the registry's schema is version {applied}, newer than this toolsmith knows ({}); upgrade toolsmith",
                MIGRATIONS.len()
            )));
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(applied) {
            // The migrations are compiled-in constants.
            sqlx::raw_sql(AssertSqlSafe(*sql)).execute(&mut *tx).await?;
            sqlx::query("INSERT INTO toolsmith_schema (version) VALUES ($1)")
                .bind((i + 1) as i32)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// A write transaction; the rows a write depends on are locked as they are read.
    async fn begin(&self) -> Result<sqlx::Transaction<'static, sqlx::Postgres>> {
        Ok(self.pool.begin().await?)
    }

    /// The version check and the write cannot interleave with another replica's.
    const ROW_LOCK: &str = " FOR UPDATE";

    crate::reseal::reseal_methods!();

    /// After a reseal: the tables rewritten, so no dead row keeps an old value (the server's
    /// own WAL archive, if any, is the operator's).
    async fn compact(&self) -> Result<()> {
        sqlx::query(
            "VACUUM FULL tools, tool_versions, mcp_servers, mcp_server_versions, upstream_changes, upstream_connections",
        )
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}

impl PgStore {
    /// Takes one call of `key` from the shared bucket of `scope` (GCRA: a call every
    /// `interval_ms`, `burst` at once), in one statement, on the database's clock: `None`
    /// when it passes, else the milliseconds to wait.
    pub async fn take_rate(
        &self,
        scope: &str,
        key: &str,
        interval_ms: i64,
        burst: i64,
    ) -> Result<Option<u64>> {
        let tolerance = interval_ms * burst;
        let taken: Option<i64> = sqlx::query_scalar(
            "WITH now AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms) \
             INSERT INTO rate_buckets (scope, key, tat) SELECT $1, $2, ms + $3 FROM now \
             ON CONFLICT (scope, key) DO UPDATE SET tat = GREATEST(rate_buckets.tat, (SELECT ms FROM now)) + $3 \
             WHERE GREATEST(rate_buckets.tat, (SELECT ms FROM now)) + $3 - (SELECT ms FROM now) <= $4 \
             RETURNING tat",
        )
        .bind(scope)
        .bind(key)
        .bind(interval_ms)
        .bind(tolerance)
        .fetch_optional(&self.pool)
        .await?;
        if taken.is_some() {
            return Ok(None);
        }
        let wait: Option<i64> = sqlx::query_scalar(
            "SELECT GREATEST(tat, now.ms) + $3 - now.ms - $4 FROM rate_buckets, \
             (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms) AS now \
             WHERE scope = $1 AND key = $2",
        )
        .bind(scope)
        .bind(key)
        .bind(interval_ms)
        .bind(tolerance)
        .fetch_optional(&self.pool)
        .await?;
        Ok(Some(wait.unwrap_or(interval_ms).max(1) as u64))
    }
}

impl Store for PgStore {
    crate::shared::store_methods!();

    async fn search(&self, query: &Query) -> Result<Page<ToolRecord>> {
        let limit = rows::page_size(query.limit);
        let after = query.cursor.as_deref().map(decode_cursor).transpose()?;
        // `COLLATE "C"`: byte order, the same order as SQLite's and stable across locales.
        let rows = sqlx::query(
            "SELECT name, version, definition, updated_at, updated_by FROM tools WHERE NOT deleted \
             AND ($1 OR enabled) \
             AND ($2::text IS NULL OR name COLLATE \"C\" > $2) \
             AND ($3::text IS NULL OR lower(name) LIKE $3 OR lower(description) LIKE $3 OR tags LIKE $3) \
             AND ($4::text IS NULL OR tags LIKE $4) \
             ORDER BY name COLLATE \"C\" LIMIT $5",
        )
        .bind(query.include_disabled)
        .bind(after)
        .bind(query.text.as_deref().map(rows::like))
        .bind(query.tag.as_deref().map(rows::tag_like))
        .bind((limit + 1) as i64)
        .fetch_all(&self.pool)
        .await?;
        rows::page(&rows, limit, rows::tool, |r| r.tool.name.to_string())
    }
}

impl crate::UpstreamStore for PgStore {
    crate::upstreams::upstream_methods!();
}

impl crate::documents::Documents for PgStore {
    crate::documents::document_methods!(sqlx::PgConnection);
}

crate::documents::document_helpers!(sqlx::PgConnection, PgStore::ROW_LOCK);
