//! What the SQLite and PostgreSQL stores share: every statement both run the same way, written
//! once ([`sql`]: `$n` placeholders, which sqlx binds by number on both), and the bodies of
//! the [`crate::Store`] methods that run them, expanded once per backend by the macros below.
//!
//! What stays per backend is what truly differs: opening and migrating, how a write
//! transaction starts (`BEGIN IMMEDIATE` on SQLite; PostgreSQL locks the row instead, with
//! `FOR UPDATE` on the reads a write depends on) and search (FTS5 trigrams on SQLite, `LIKE`
//! with byte-order collation on PostgreSQL). Each backend gives the macros a `pool`, an
//! inherent `async fn begin(&self)` and an associated `ROW_LOCK` suffix.

/// The statements both backends run unchanged.
pub(crate) mod sql {
    pub const STORED: &str = "SELECT version, deleted, definition FROM tools WHERE name = $1";
    pub const UPDATE_TOOL: &str = "UPDATE tools SET version = $2, enabled = $3, deleted = FALSE, description = $4, tags = $5, definition = $6, updated_at = $7, updated_by = $8 WHERE name = $1";
    pub const INSERT_TOOL: &str = "INSERT INTO tools (name, version, enabled, deleted, description, tags, definition, updated_at, updated_by) VALUES ($1, $2, $3, FALSE, $4, $5, $6, $7, $8)";
    pub const INSERT_VERSION: &str = "INSERT INTO tool_versions (name, version, definition, created_at, author, summary) VALUES ($1, $2, $3, $4, $5, $6)";
    pub const GET: &str = "SELECT name, version, definition, updated_at, updated_by FROM tools WHERE name = $1 AND NOT deleted";
    pub const VERSION: &str = "SELECT * FROM tool_versions WHERE name = $1 AND version = $2";
    pub const HISTORY: &str = "SELECT * FROM tool_versions WHERE name = $1 ORDER BY version";
    pub const ANY_VERSION: &str = "SELECT 1 FROM tool_versions WHERE name = $1 LIMIT 1";
    pub const DELETE: &str = "UPDATE tools SET deleted = TRUE, updated_at = $2, updated_by = $3 WHERE name = $1 AND NOT deleted";
    pub const GENERATION: &str = "SELECT generation FROM registry_generation WHERE id = 1";
    pub const INSERT_RUN: &str = "INSERT INTO runs (tool, version, caller, arguments, kind, duration_ms, exit_code, truncated, started_at, upstream, sandbox) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id";
    pub const PRUNE_RUNS: &str = "DELETE FROM runs WHERE id <= $1";
    pub const RUNS: &str = "SELECT * FROM runs WHERE id < $1 AND (CAST($2 AS TEXT) IS NULL OR tool = $2) \
         AND (CAST($3 AS TEXT) IS NULL OR kind = $3) AND (CAST($4 AS TEXT) IS NULL OR caller = $4) \
         ORDER BY id DESC LIMIT $5";

    pub const SESSION_START: &str = "INSERT INTO sessions (id, replica, place, owner, command, status, created_ms, last_seen_ms, url) \
         VALUES ($1, $2, $3, $4, $5, 'running', $6, $6, $7) \
         ON CONFLICT (id) DO UPDATE SET status = 'running', last_seen_ms = $6";
    pub const SESSION_PRUNE: &str = "DELETE FROM sessions WHERE last_seen_ms < $1";
    pub const SESSION_END: &str =
        "UPDATE sessions SET status = $1, last_seen_ms = $2 WHERE id = $3";
    pub const SESSION_ALIVE: &str =
        "UPDATE sessions SET last_seen_ms = $1 WHERE replica = $2 AND status = 'running'";
    pub const SESSION_FIND: &str = "SELECT id, replica, place, owner, command, status, created_ms, last_seen_ms, url \
         FROM sessions WHERE id = $1";
    pub const NONCE_PRUNE: &str = "DELETE FROM peer_nonces WHERE at_ms < $1";
    pub const NONCE_CLAIM: &str =
        "INSERT INTO peer_nonces (nonce, at_ms) VALUES ($1, $2) ON CONFLICT (nonce) DO NOTHING";
}

/// A unique key hit by a write: two writers creating the same new name at once (on
/// PostgreSQL; SQLite's write lock keeps them apart).
pub(crate) fn unique_is_exists(e: sqlx::Error, tool: &toolsmith_core::Tool) -> crate::StoreError {
    match e.as_database_error().map(|d| d.kind()) {
        Some(sqlx::error::ErrorKind::UniqueViolation) => {
            crate::StoreError::Exists(tool.name.to_string())
        }
        _ => e.into(),
    }
}

/// The inherent helpers of a backend whose connection type is `$conn`: the row a write
/// depends on, read (and locked, where the backend locks rows), and the write itself.
macro_rules! store_helpers {
    ($conn:ty) => {
        /// `(version, deleted)` of a name, live or not.
        async fn state(conn: &mut $conn, name: &str) -> crate::Result<Option<(u64, bool)>> {
            Ok(Self::stored(conn, name).await?.map(|(v, d, _)| (v, d)))
        }

        /// `(version, deleted, definition)` of a name, live or not.
        async fn stored(
            conn: &mut $conn,
            name: &str,
        ) -> crate::Result<Option<(u64, bool, String)>> {
            use sqlx::Row;
            let sql = format!("{}{}", crate::shared::sql::STORED, Self::ROW_LOCK);
            let row = sqlx::query(sqlx::AssertSqlSafe(sql))
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

        /// Saves `tool` as version `version` in an open transaction.
        async fn write(
            conn: &mut $conn,
            tool: &toolsmith_core::Tool,
            version: u64,
            exists: bool,
            change: &crate::Change<'_>,
        ) -> crate::Result<crate::ToolRecord> {
            use crate::shared::{sql, unique_is_exists};
            let text =
                crate::secrets::seal(&tool.to_catalog_value(toolsmith_core::model::Secrets::Keep));
            let now = crate::now_ms();
            let tags = format!(" {} ", tool.tags.join(" ").to_lowercase());
            let statement = if exists {
                sql::UPDATE_TOOL
            } else {
                sql::INSERT_TOOL
            };
            sqlx::query(statement)
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
            sqlx::query(sql::INSERT_VERSION)
                .bind(tool.name.as_str())
                .bind(version as i64)
                .bind(&text)
                .bind(now)
                .bind(change.author)
                .bind(change.summary)
                .execute(&mut *conn)
                .await
                .map_err(|e| unique_is_exists(e, tool))?;
            Ok(crate::ToolRecord {
                tool: tool.clone(),
                version,
                updated_at_ms: now,
                updated_by: change.author.to_owned(),
            })
        }
    };
}

/// Every [`crate::Store`] method but `search`, the same code for both backends.
macro_rules! store_methods {
    () => {
        async fn create(
            &self,
            tool: &toolsmith_core::Tool,
            change: crate::Change<'_>,
        ) -> crate::Result<crate::ToolRecord> {
            let mut tx = self.begin().await?;
            let record = match Self::state(&mut tx, tool.name.as_str()).await? {
                Some((_, false)) => return Err(crate::StoreError::Exists(tool.name.to_string())),
                // A deleted name continues its history.
                Some((version, true)) => {
                    Self::write(&mut tx, tool, version + 1, true, &change).await?
                }
                None => Self::write(&mut tx, tool, 1, false, &change).await?,
            };
            tx.commit().await?;
            Ok(record)
        }

        async fn update(
            &self,
            tool: &toolsmith_core::Tool,
            base_version: u64,
            change: crate::Change<'_>,
        ) -> crate::Result<crate::ToolRecord> {
            let mut tx = self.begin().await?;
            let record = match Self::state(&mut tx, tool.name.as_str()).await? {
                None | Some((_, true)) => {
                    return Err(crate::StoreError::NotFound(format!(
                        "tool {:?}",
                        tool.name.as_str()
                    )));
                }
                Some((current, false)) if current != base_version => {
                    return Err(crate::StoreError::Conflict {
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

        async fn get(&self, name: &str) -> crate::Result<crate::ToolRecord> {
            let row = sqlx::query(crate::shared::sql::GET)
                .bind(name)
                .fetch_optional(&self.pool)
                .await?;
            row.as_ref()
                .map(crate::rows::tool)
                .unwrap_or_else(|| Err(crate::StoreError::NotFound(format!("tool {name:?}"))))
        }

        async fn version(&self, name: &str, version: u64) -> crate::Result<crate::VersionRecord> {
            let row = sqlx::query(crate::shared::sql::VERSION)
                .bind(name)
                .bind(version as i64)
                .fetch_optional(&self.pool)
                .await?;
            if let Some(row) = row {
                return crate::rows::version(&row);
            }
            // A name with no version at all is a tool not found, as `get` says it.
            let any = sqlx::query(crate::shared::sql::ANY_VERSION)
                .bind(name)
                .fetch_optional(&self.pool)
                .await?;
            Err(crate::StoreError::NotFound(match any {
                Some(_) => format!("version {version} of tool {name:?}"),
                None => format!("tool {name:?}"),
            }))
        }

        async fn history(&self, name: &str) -> crate::Result<Vec<crate::VersionRecord>> {
            let rows = sqlx::query(crate::shared::sql::HISTORY)
                .bind(name)
                .fetch_all(&self.pool)
                .await?;
            if rows.is_empty() {
                return Err(crate::StoreError::NotFound(format!("tool {name:?}")));
            }
            rows.iter().map(crate::rows::version).collect()
        }

        async fn delete(&self, name: &str, change: crate::Change<'_>) -> crate::Result<()> {
            let done = sqlx::query(crate::shared::sql::DELETE)
                .bind(name)
                .bind(crate::now_ms())
                .bind(change.author)
                .execute(&self.pool)
                .await?;
            if done.rows_affected() == 0 {
                return Err(crate::StoreError::NotFound(format!("tool {name:?}")));
            }
            Ok(())
        }

        async fn sync(
            &self,
            tools: &[toolsmith_core::Tool],
            change: crate::Change<'_>,
        ) -> crate::Result<crate::ImportReport> {
            use crate::SyncAction;
            let mut tx = self.begin().await?;
            let mut report = crate::ImportReport::default();
            for tool in tools {
                let name = tool.name.as_str();
                let current = Self::stored(&mut tx, name).await?;
                let action = crate::sync_action(
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

        async fn generation(&self) -> crate::Result<u64> {
            let g: i64 = sqlx::query_scalar(crate::shared::sql::GENERATION)
                .fetch_one(&self.pool)
                .await?;
            Ok(g as u64)
        }

        async fn record_runs(&self, runs: &[crate::RunRecord], keep: usize) -> crate::Result<()> {
            if runs.is_empty() {
                return Ok(());
            }
            let mut tx = self.pool.begin().await?;
            let mut last: i64 = 0;
            for run in runs {
                last = sqlx::query_scalar(crate::shared::sql::INSERT_RUN)
                    .bind(&run.tool)
                    .bind(run.version as i64)
                    .bind(&run.caller)
                    .bind(run.arguments.to_string())
                    .bind(&run.kind)
                    .bind(run.duration_ms)
                    .bind(run.exit_code)
                    .bind(run.truncated)
                    .bind(run.started_at_ms)
                    .bind(&run.upstream)
                    .bind(run.sandbox.as_ref().map(|s| s.to_string()))
                    .fetch_one(&mut *tx)
                    .await?;
            }
            // Retention: ids only grow, so the newest `keep` are the highest ids.
            sqlx::query(crate::shared::sql::PRUNE_RUNS)
                .bind(last - keep as i64)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(())
        }

        async fn runs(
            &self,
            query: &crate::RunQuery,
        ) -> crate::Result<crate::Page<crate::RunRecord>> {
            let limit = crate::rows::page_size(query.limit);
            let before = crate::rows::runs_before(query.cursor.as_deref())?;
            let rows = sqlx::query(crate::shared::sql::RUNS)
                .bind(before)
                .bind(query.tool.as_deref())
                .bind(query.kind.as_deref())
                .bind(query.caller.as_deref())
                .bind((limit + 1) as i64)
                .fetch_all(&self.pool)
                .await?;
            crate::rows::page(&rows, limit, crate::rows::run, |r| r.id.to_string())
        }

        async fn note_session(&self, note: &crate::SessionNote) -> crate::Result<()> {
            use crate::shared::sql;
            match note {
                crate::SessionNote::Started {
                    id,
                    replica,
                    place,
                    owner,
                    command,
                    at_ms,
                    url,
                } => {
                    sqlx::query(sql::SESSION_PRUNE)
                        .bind(at_ms - crate::SESSION_ROWS_KEPT_MS)
                        .execute(&self.pool)
                        .await?;
                    sqlx::query(sql::SESSION_START)
                        .bind(id)
                        .bind(replica)
                        .bind(place)
                        .bind(owner)
                        .bind(command)
                        .bind(at_ms)
                        .bind(url)
                        .execute(&self.pool)
                        .await?;
                }
                crate::SessionNote::Ended { id, status, at_ms } => {
                    sqlx::query(sql::SESSION_END)
                        .bind(status)
                        .bind(at_ms)
                        .bind(id)
                        .execute(&self.pool)
                        .await?;
                }
                crate::SessionNote::Alive { replica, at_ms } => {
                    sqlx::query(sql::SESSION_ALIVE)
                        .bind(at_ms)
                        .bind(replica)
                        .execute(&self.pool)
                        .await?;
                }
            }
            Ok(())
        }

        async fn claim_nonce(&self, nonce: &str, at_ms: i64, keep_ms: i64) -> crate::Result<bool> {
            use crate::shared::sql;
            sqlx::query(sql::NONCE_PRUNE)
                .bind(at_ms - keep_ms)
                .execute(&self.pool)
                .await?;
            let claimed = sqlx::query(sql::NONCE_CLAIM)
                .bind(nonce)
                .bind(at_ms)
                .execute(&self.pool)
                .await?;
            Ok(claimed.rows_affected() == 1)
        }

        async fn find_session(&self, id: &str) -> crate::Result<Option<crate::SessionRow>> {
            #[allow(clippy::type_complexity)]
            let row: Option<(
                String,
                String,
                String,
                String,
                String,
                String,
                i64,
                i64,
                String,
            )> = sqlx::query_as(crate::shared::sql::SESSION_FIND)
                .bind(id)
                .fetch_optional(&self.pool)
                .await?;
            Ok(row.map(
                |(id, replica, place, owner, command, status, created_ms, last_seen_ms, url)| {
                    crate::SessionRow {
                        id,
                        replica,
                        place,
                        owner,
                        command,
                        status,
                        created_ms,
                        last_seen_ms,
                        url,
                    }
                },
            ))
        }
    };
}

pub(crate) use {store_helpers, store_methods};
