//! The shared registry: PostgreSQL, for several `toolsmith serve` replicas.
//!
//! A write locks the tool's row (`SELECT … FOR UPDATE`) inside its transaction, so the version
//! check and the write cannot interleave with another replica's; a race on a new name ends in
//! the primary key, reported as [`StoreError::Exists`]. Migrations are compiled in, recorded
//! in `toolsmith_schema`, and run under an advisory lock so replicas may start together.

use std::str::FromStr;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::{AssertSqlSafe, Row};
use toolsmith_core::Tool;
use toolsmith_core::model::Secrets;

use crate::rows;
use crate::{
    Change, ImportReport, Page, Query, Result, RunQuery, RunRecord, Store, StoreError, SyncAction,
    ToolRecord, VersionRecord, decode_cursor, encode_cursor, now_ms, sync_action,
};

const MIGRATIONS: &[&str] = &[
    include_str!("../migrations/postgres/0001_registry.sql"),
    include_str!("../migrations/postgres/0002_runs.sql"),
    include_str!("../migrations/postgres/0003_search_index.sql"),
    include_str!("../migrations/postgres/0004_generation.sql"),
    include_str!("../migrations/postgres/0005_sessions.sql"),
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

    async fn write(
        conn: &mut sqlx::PgConnection,
        tool: &Tool,
        version: u64,
        exists: bool,
        change: &Change<'_>,
    ) -> Result<ToolRecord> {
        let text = tool.to_catalog_value(Secrets::Keep).to_string();
        let now = now_ms();
        let tags = format!(" {} ", tool.tags.join(" ").to_lowercase());
        let sql = if exists {
            "UPDATE tools SET version = $2, enabled = $3, deleted = FALSE, description = $4, tags = $5, definition = $6, updated_at = $7, updated_by = $8 WHERE name = $1"
        } else {
            "INSERT INTO tools (name, version, enabled, deleted, description, tags, definition, updated_at, updated_by) VALUES ($1, $2, $3, FALSE, $4, $5, $6, $7, $8)"
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
            .await
            .map_err(|e| unique_is_exists(e, tool))?;
        sqlx::query("INSERT INTO tool_versions (name, version, definition, created_at, author, summary) VALUES ($1, $2, $3, $4, $5, $6)")
            .bind(tool.name.as_str())
            .bind(version as i64)
            .bind(&text)
            .bind(now)
            .bind(change.author)
            .bind(change.summary)
            .execute(&mut *conn)
            .await
            .map_err(|e| unique_is_exists(e, tool))?;
        Ok(ToolRecord {
            tool: tool.clone(),
            version,
            updated_at_ms: now,
            updated_by: change.author.to_owned(),
        })
    }
}

/// Two replicas creating the same new name at once: the loser hits the primary key.
fn unique_is_exists(e: sqlx::Error, tool: &Tool) -> StoreError {
    match e.as_database_error().and_then(|d| d.code()) {
        Some(code) if code == "23505" => StoreError::Exists(tool.name.to_string()),
        _ => e.into(),
    }
}

async fn state_for_update(
    conn: &mut sqlx::PgConnection,
    name: &str,
) -> Result<Option<(u64, bool)>> {
    let row = sqlx::query("SELECT version, deleted FROM tools WHERE name = $1 FOR UPDATE")
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

/// `(version, deleted, definition)` of a name, live or not, locked for the transaction.
async fn stored(conn: &mut sqlx::PgConnection, name: &str) -> Result<Option<(u64, bool, String)>> {
    let row =
        sqlx::query("SELECT version, deleted, definition FROM tools WHERE name = $1 FOR UPDATE")
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

impl Store for PgStore {
    async fn create(&self, tool: &Tool, change: Change<'_>) -> Result<ToolRecord> {
        let mut tx = self.pool.begin().await?;
        let record = match state_for_update(&mut tx, tool.name.as_str()).await? {
            Some((_, false)) => return Err(StoreError::Exists(tool.name.to_string())),
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
        let mut tx = self.pool.begin().await?;
        let record = match state_for_update(&mut tx, tool.name.as_str()).await? {
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
        let row = sqlx::query("SELECT name, version, definition, updated_at, updated_by FROM tools WHERE name = $1 AND NOT deleted")
            .bind(name)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref()
            .map(rows::tool)
            .unwrap_or_else(|| Err(StoreError::NotFound(format!("tool {name:?}"))))
    }

    async fn version(&self, name: &str, version: u64) -> Result<VersionRecord> {
        let row = sqlx::query("SELECT * FROM tool_versions WHERE name = $1 AND version = $2")
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
        let rows = sqlx::query("SELECT * FROM tool_versions WHERE name = $1 ORDER BY version")
            .bind(name)
            .fetch_all(&self.pool)
            .await?;
        if rows.is_empty() {
            return Err(StoreError::NotFound(format!("tool {name:?}")));
        }
        rows.iter().map(rows::version).collect()
    }

    async fn delete(&self, name: &str, change: Change<'_>) -> Result<()> {
        let done = sqlx::query("UPDATE tools SET deleted = TRUE, updated_at = $2, updated_by = $3 WHERE name = $1 AND NOT deleted")
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
        let items = rows
            .iter()
            .take(limit)
            .map(rows::tool)
            .collect::<Result<Vec<_>>>()?;
        let next_cursor = (rows.len() > limit)
            .then(|| items.last().map(|r| encode_cursor(r.tool.name.as_str())))
            .flatten();
        Ok(Page { items, next_cursor })
    }

    async fn sync(&self, tools: &[Tool], change: Change<'_>) -> Result<ImportReport> {
        let mut tx = self.pool.begin().await?;
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
        let mut last: i64 = 0;
        for run in runs {
            last = sqlx::query_scalar(
                "INSERT INTO runs (tool, version, caller, arguments, kind, duration_ms, exit_code, truncated, started_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
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
            .fetch_one(&mut *tx)
            .await?;
        }
        // Retention: ids only grow, so the newest `keep` are the highest ids.
        sqlx::query("DELETE FROM runs WHERE id <= $1")
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
            "SELECT * FROM runs WHERE id < $1 AND ($2::text IS NULL OR tool = $2) AND ($3::text IS NULL OR kind = $3) \
             AND ($4::text IS NULL OR caller = $4) ORDER BY id DESC LIMIT $5",
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
