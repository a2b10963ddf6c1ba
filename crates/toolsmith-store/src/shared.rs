//! What the SQLite and PostgreSQL stores share: every statement both run the same way, written
//! once ([`sql`]: `$n` placeholders, which sqlx binds by number on both), and the bodies of
//! the [`crate::Store`] methods that run them, expanded once per backend by the macro below.
//! A tool's writes and reads are those of every versioned document ([`crate::documents`]).
//!
//! What stays per backend is what truly differs: opening and migrating, how a write
//! transaction starts (`BEGIN IMMEDIATE` on SQLite; PostgreSQL locks the row instead, with
//! `FOR UPDATE` on the reads a write depends on) and search (FTS5 trigrams on SQLite, `LIKE`
//! with byte-order collation on PostgreSQL). Each backend gives the macros a `pool`, an
//! inherent `async fn begin(&self)` and an associated `ROW_LOCK` suffix.

/// The statements both backends run unchanged.
pub(crate) mod sql {
    pub const GENERATION: &str = "SELECT generation FROM registry_generation WHERE id = 1";
    pub const INSERT_RUN: &str = "INSERT INTO runs (tool, version, caller, arguments, kind, duration_ms, exit_code, truncated, started_at, upstream, sandbox, call_id, guardrails, parent_call_id) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING id";
    pub const PRUNE_RUNS: &str = "DELETE FROM runs WHERE id <= $1";
    pub const RUNS: &str = "SELECT * FROM runs WHERE id < $1 AND (CAST($2 AS TEXT) IS NULL OR tool = $2) \
         AND (CAST($3 AS TEXT) IS NULL OR kind = $3) AND (CAST($4 AS TEXT) IS NULL OR caller = $4) \
         AND (CAST($5 AS TEXT) IS NULL OR call_id = $5) AND (CAST($6 AS TEXT) IS NULL OR parent_call_id = $6) \
         ORDER BY id DESC LIMIT $7";

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
    pub const MCP_SESSION_PRUNE: &str = "DELETE FROM mcp_sessions WHERE at_ms < $1";
    pub const MCP_SESSION_PUT: &str = "INSERT INTO mcp_sessions (id, state, at_ms) VALUES ($1, $2, $3) \
         ON CONFLICT (id) DO UPDATE SET state = $2, at_ms = $3";
    pub const MCP_SESSION_GET: &str =
        "SELECT state FROM mcp_sessions WHERE id = $1 AND at_ms >= $2";
    pub const MCP_SESSION_DROP: &str = "DELETE FROM mcp_sessions WHERE id = $1";
    pub const MCP_SESSION_SET_LEVEL: &str = "UPDATE mcp_sessions SET log_level = $2 WHERE id = $1";
    pub const MCP_SESSION_LEVEL: &str = "SELECT log_level FROM mcp_sessions WHERE id = $1";
}

/// Tools are versioned documents: their writes and reads are [`crate::documents`]'.
impl crate::documents::Document for toolsmith_core::Tool {
    const NOUN: &'static str = "tool";
    const TABLE: &'static str = "tools";
    const VERSIONS: &'static str = "tool_versions";
    type Record = crate::ToolRecord;

    fn name(&self) -> &str {
        self.name.as_str()
    }

    fn stored(&self) -> String {
        crate::secrets::seal(&self.to_catalog_value(toolsmith_core::model::Secrets::Keep))
    }

    fn from_definition(definition: &serde_json::Value) -> crate::Result<Self> {
        crate::definition_to_tool(definition)
    }

    fn record(self, meta: crate::documents::Meta) -> crate::ToolRecord {
        crate::ToolRecord {
            tool: self,
            version: meta.version,
            updated_at_ms: meta.updated_at_ms,
            updated_by: meta.updated_by,
        }
    }

    /// What the listing and search read without parsing definitions.
    fn columns(&self) -> Vec<(&'static str, crate::documents::Column)> {
        use crate::documents::Column;
        vec![
            ("enabled", Column::Bool(self.enabled)),
            ("description", Column::Text(self.description.clone())),
            (
                "tags",
                Column::Text(format!(" {} ", self.tags.join(" ").to_lowercase())),
            ),
        ]
    }
}

/// Every [`crate::Store`] method but `search`, the same code for both backends.
macro_rules! store_methods {
    () => {
        async fn create(
            &self,
            tool: &toolsmith_core::Tool,
            change: crate::Change<'_>,
        ) -> crate::Result<crate::ToolRecord> {
            crate::documents::Documents::create_doc(self, tool, change).await
        }

        async fn update(
            &self,
            tool: &toolsmith_core::Tool,
            base_version: u64,
            change: crate::Change<'_>,
        ) -> crate::Result<crate::ToolRecord> {
            crate::documents::Documents::update_doc(self, tool, base_version, change).await
        }

        async fn get(&self, name: &str) -> crate::Result<crate::ToolRecord> {
            crate::documents::Documents::get_doc::<toolsmith_core::Tool>(self, name).await
        }

        async fn version(&self, name: &str, version: u64) -> crate::Result<crate::VersionRecord> {
            crate::documents::Documents::doc_version::<toolsmith_core::Tool>(self, name, version)
                .await
        }

        async fn history(&self, name: &str) -> crate::Result<Vec<crate::VersionRecord>> {
            crate::documents::Documents::doc_history::<toolsmith_core::Tool>(self, name).await
        }

        async fn delete(&self, name: &str, change: crate::Change<'_>) -> crate::Result<()> {
            crate::documents::Documents::delete_doc::<toolsmith_core::Tool>(self, name, change)
                .await
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
                let current = doc_stored::<toolsmith_core::Tool>(&mut tx, name).await?;
                let action = crate::sync_action(
                    current.as_ref().map(|(v, d, def)| (*v, *d, def.as_str())),
                    tool,
                );
                match action {
                    SyncAction::Create { version, exists } => {
                        write_doc(&mut tx, tool, version, exists, &change).await?;
                    }
                    SyncAction::Update { version } => {
                        write_doc(&mut tx, tool, version, true, &change).await?;
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
                    .bind(&run.call_id)
                    .bind(run.guardrails.as_ref().map(|g| g.to_string()))
                    .bind(&run.parent_call_id)
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
                .bind(query.call_id.as_deref())
                .bind(query.parent_call_id.as_deref())
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

        async fn put_mcp_session(
            &self,
            id: &str,
            state: &str,
            at_ms: i64,
            keep_ms: i64,
        ) -> crate::Result<()> {
            use crate::shared::sql;
            sqlx::query(sql::MCP_SESSION_PRUNE)
                .bind(at_ms - keep_ms)
                .execute(&self.pool)
                .await?;
            sqlx::query(sql::MCP_SESSION_PUT)
                .bind(id)
                .bind(state)
                .bind(at_ms)
                .execute(&self.pool)
                .await?;
            Ok(())
        }

        async fn mcp_session(&self, id: &str, since_ms: i64) -> crate::Result<Option<String>> {
            let row: Option<(String,)> = sqlx::query_as(crate::shared::sql::MCP_SESSION_GET)
                .bind(id)
                .bind(since_ms)
                .fetch_optional(&self.pool)
                .await?;
            Ok(row.map(|(state,)| state))
        }

        async fn drop_mcp_session(&self, id: &str) -> crate::Result<()> {
            sqlx::query(crate::shared::sql::MCP_SESSION_DROP)
                .bind(id)
                .execute(&self.pool)
                .await?;
            Ok(())
        }

        async fn set_mcp_session_level(&self, id: &str, level: &str) -> crate::Result<()> {
            sqlx::query(crate::shared::sql::MCP_SESSION_SET_LEVEL)
                .bind(id)
                .bind(level)
                .execute(&self.pool)
                .await?;
            Ok(())
        }

        async fn mcp_session_level(&self, id: &str) -> crate::Result<Option<String>> {
            let row: Option<(Option<String>,)> =
                sqlx::query_as(crate::shared::sql::MCP_SESSION_LEVEL)
                    .bind(id)
                    .fetch_optional(&self.pool)
                    .await?;
            Ok(row.and_then(|(level,)| level))
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

pub(crate) use store_methods;
