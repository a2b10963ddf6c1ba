//! Upstream MCP servers in the registry (SPEC §11): their definitions, versioned like tools
//! (an update names the version it is based on), the pinned part of each upstream tool as the
//! operator approved it, and the changes an upstream made since, waiting for a decision.
//!
//! The statements are the same on both backends ([`sql`]); [`upstream_methods`] expands the
//! bodies for each.

use serde_json::Value;
use toolsmith_core::upstream::McpServer;

use crate::{Change, Result};

/// A server as the registry holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerRecord {
    pub server: McpServer,
    pub version: u64,
    pub updated_at_ms: i64,
    pub updated_by: String,
}

/// What an upstream said about one tool, as approved.
#[derive(Debug, Clone, PartialEq)]
pub struct Pin {
    pub server: String,
    /// The upstream's own name of the tool.
    pub tool: String,
    /// Its pinned part ([`toolsmith_core::upstream::pinned`]).
    pub pinned: Value,
    pub approved_at_ms: i64,
    pub approved_by: String,
}

/// What an upstream changed about one tool since its pin.
#[derive(Debug, Clone, PartialEq)]
pub struct UpstreamChange {
    pub server: String,
    pub tool: String,
    /// `added`, `changed` or `removed`.
    pub kind: String,
    /// What the upstream says now (`None` when it removed the tool).
    pub pinned: Option<Value>,
    /// `pending`, or `rejected` (kept until the upstream changes again).
    pub status: String,
    pub detected_at_ms: i64,
}

/// The registry's operations on upstream servers, pins and changes.
pub trait UpstreamStore: Send + Sync {
    /// Creates `server` at version 1 (a deleted name continues its history).
    fn create_server(
        &self,
        server: &McpServer,
        change: Change<'_>,
    ) -> impl Future<Output = Result<ServerRecord>> + Send;
    /// Saves `server` as its next version, if the current one is `base_version`.
    fn update_server(
        &self,
        server: &McpServer,
        base_version: u64,
        change: Change<'_>,
    ) -> impl Future<Output = Result<ServerRecord>> + Send;
    fn get_server(&self, name: &str) -> impl Future<Output = Result<ServerRecord>> + Send;
    /// The summary of version `version` of server `name` (who wrote it, and how).
    fn server_summary(
        &self,
        name: &str,
        version: u64,
    ) -> impl Future<Output = Result<Option<String>>> + Send;
    /// Every live server, by name.
    fn servers(&self) -> impl Future<Output = Result<Vec<ServerRecord>>> + Send;
    /// Soft delete; its pins and changes go with it.
    fn delete_server(
        &self,
        name: &str,
        change: Change<'_>,
    ) -> impl Future<Output = Result<()>> + Send;
    /// Every pin of `server`.
    fn pins(&self, server: &str) -> impl Future<Output = Result<Vec<Pin>>> + Send;
    /// Pins `tool` of `server` to `pinned` (`None` removes the pin).
    fn set_pin(
        &self,
        server: &str,
        tool: &str,
        pinned: Option<&Value>,
        by: &str,
    ) -> impl Future<Output = Result<()>> + Send;
    /// The changes of `server` (or of every server), oldest first.
    fn changes(
        &self,
        server: Option<&str>,
    ) -> impl Future<Output = Result<Vec<UpstreamChange>>> + Send;
    /// Records (or replaces) the change of one tool.
    fn put_change(&self, change: &UpstreamChange) -> impl Future<Output = Result<()>> + Send;
    /// Forgets the change of one tool (approved, or the upstream went back to the pin).
    fn drop_change(&self, server: &str, tool: &str) -> impl Future<Output = Result<()>> + Send;
}

/// The statements both backends run unchanged.
pub(crate) mod sql {
    pub const SERVER_STATE: &str = "SELECT version, deleted FROM mcp_servers WHERE name = $1";
    pub const UPDATE_SERVER: &str = "UPDATE mcp_servers SET version = $2, deleted = FALSE, definition = $3, updated_at = $4, updated_by = $5 WHERE name = $1";
    pub const INSERT_SERVER: &str = "INSERT INTO mcp_servers (name, version, deleted, definition, updated_at, updated_by) VALUES ($1, $2, FALSE, $3, $4, $5)";
    pub const INSERT_SERVER_VERSION: &str = "INSERT INTO mcp_server_versions (name, version, definition, created_at, author, summary) VALUES ($1, $2, $3, $4, $5, $6)";
    pub const GET_SERVER: &str = "SELECT name, version, definition, updated_at, updated_by FROM mcp_servers WHERE name = $1 AND NOT deleted";
    pub const SERVER_SUMMARY: &str =
        "SELECT summary FROM mcp_server_versions WHERE name = $1 AND version = $2";
    pub const SERVERS: &str = "SELECT name, version, definition, updated_at, updated_by FROM mcp_servers WHERE NOT deleted ORDER BY name";
    pub const DELETE_SERVER: &str = "UPDATE mcp_servers SET deleted = TRUE, updated_at = $2, updated_by = $3 WHERE name = $1 AND NOT deleted";
    pub const DELETE_PINS: &str = "DELETE FROM upstream_pins WHERE server = $1";
    pub const DELETE_CHANGES: &str = "DELETE FROM upstream_changes WHERE server = $1";
    pub const PINS: &str = "SELECT server, tool, pinned, approved_at, approved_by FROM upstream_pins WHERE server = $1 ORDER BY tool";
    pub const UNPIN: &str = "DELETE FROM upstream_pins WHERE server = $1 AND tool = $2";
    pub const PIN: &str = "INSERT INTO upstream_pins (server, tool, pinned, approved_at, approved_by) VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (server, tool) DO UPDATE SET pinned = $3, approved_at = $4, approved_by = $5";
    pub const CHANGES: &str = "SELECT server, tool, kind, pinned, status, detected_at FROM upstream_changes \
         WHERE (CAST($1 AS TEXT) IS NULL OR server = $1) ORDER BY detected_at, server, tool";
    pub const PUT_CHANGE: &str = "INSERT INTO upstream_changes (server, tool, kind, pinned, status, detected_at) VALUES ($1, $2, $3, $4, $5, $6) \
         ON CONFLICT (server, tool) DO UPDATE SET kind = $3, pinned = $4, status = $5, detected_at = $6";
    pub const DROP_CHANGE: &str = "DELETE FROM upstream_changes WHERE server = $1 AND tool = $2";
}

/// A stored server definition back into an [`McpServer`], through the catalog loader.
pub(crate) fn definition_to_server(text: &str) -> Result<McpServer> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| crate::StoreError::Invalid(e.to_string()))?;
    let value = crate::secrets::open(value)?;
    toolsmith_core::catalog::parse_server(&value, &crate::NoFiles)
        .map_err(|e| crate::StoreError::Invalid(e.to_string()))
}

/// Every [`UpstreamStore`] method, the same code for both backends (each has a `pool` and
/// an inherent `async fn begin(&self)`).
macro_rules! upstream_methods {
    () => {
        async fn create_server(
            &self,
            server: &toolsmith_core::upstream::McpServer,
            change: crate::Change<'_>,
        ) -> crate::Result<crate::upstreams::ServerRecord> {
            let mut tx = self.begin().await?;
            let state = Self::server_state(&mut tx, &server.name).await?;
            let (version, exists) = match state {
                Some((_, false)) => {
                    return Err(crate::StoreError::Exists(format!("server {}", server.name)))
                }
                Some((v, true)) => (v + 1, true),
                None => (1, false),
            };
            let record = Self::write_server(&mut tx, server, version, exists, &change).await?;
            tx.commit().await?;
            Ok(record)
        }

        async fn update_server(
            &self,
            server: &toolsmith_core::upstream::McpServer,
            base_version: u64,
            change: crate::Change<'_>,
        ) -> crate::Result<crate::upstreams::ServerRecord> {
            let mut tx = self.begin().await?;
            let record = match Self::server_state(&mut tx, &server.name).await? {
                None | Some((_, true)) => {
                    return Err(crate::StoreError::NotFound(format!(
                        "server {:?}",
                        server.name
                    )));
                }
                Some((current, false)) if current != base_version => {
                    return Err(crate::StoreError::Conflict {
                        name: server.name.clone(),
                        current_version: current,
                        based_on: base_version,
                    });
                }
                Some((current, false)) => {
                    Self::write_server(&mut tx, server, current + 1, true, &change).await?
                }
            };
            tx.commit().await?;
            Ok(record)
        }

        async fn get_server(&self, name: &str) -> crate::Result<crate::upstreams::ServerRecord> {
            let row: Option<(String, i64, String, i64, String)> =
                sqlx::query_as(crate::upstreams::sql::GET_SERVER)
                    .bind(name)
                    .fetch_optional(&self.pool)
                    .await?;
            match row {
                Some(row) => crate::upstreams::server_record(row),
                None => Err(crate::StoreError::NotFound(format!("server {name:?}"))),
            }
        }

        async fn server_summary(&self, name: &str, version: u64) -> crate::Result<Option<String>> {
            Ok(sqlx::query_scalar(crate::upstreams::sql::SERVER_SUMMARY)
                .bind(name)
                .bind(version as i64)
                .fetch_optional(&self.pool)
                .await?)
        }

        async fn servers(&self) -> crate::Result<Vec<crate::upstreams::ServerRecord>> {
            let rows: Vec<(String, i64, String, i64, String)> =
                sqlx::query_as(crate::upstreams::sql::SERVERS)
                    .fetch_all(&self.pool)
                    .await?;
            rows.into_iter()
                .map(crate::upstreams::server_record)
                .collect()
        }

        async fn delete_server(&self, name: &str, change: crate::Change<'_>) -> crate::Result<()> {
            use crate::upstreams::sql;
            let mut tx = self.begin().await?;
            let done = sqlx::query(sql::DELETE_SERVER)
                .bind(name)
                .bind(crate::now_ms())
                .bind(change.author)
                .execute(&mut *tx)
                .await?;
            if done.rows_affected() == 0 {
                return Err(crate::StoreError::NotFound(format!("server {name:?}")));
            }
            for statement in [sql::DELETE_PINS, sql::DELETE_CHANGES] {
                sqlx::query(statement).bind(name).execute(&mut *tx).await?;
            }
            tx.commit().await?;
            Ok(())
        }

        async fn pins(&self, server: &str) -> crate::Result<Vec<crate::upstreams::Pin>> {
            let rows: Vec<(String, String, String, i64, String)> =
                sqlx::query_as(crate::upstreams::sql::PINS)
                    .bind(server)
                    .fetch_all(&self.pool)
                    .await?;
            rows.into_iter()
                .map(|(server, tool, pinned, approved_at_ms, approved_by)| {
                    Ok(crate::upstreams::Pin {
                        server,
                        tool,
                        pinned: serde_json::from_str(&pinned)
                            .map_err(|e| crate::StoreError::Invalid(e.to_string()))?,
                        approved_at_ms,
                        approved_by,
                    })
                })
                .collect()
        }

        async fn set_pin(
            &self,
            server: &str,
            tool: &str,
            pinned: Option<&serde_json::Value>,
            by: &str,
        ) -> crate::Result<()> {
            use crate::upstreams::sql;
            match pinned {
                Some(p) => {
                    sqlx::query(sql::PIN)
                        .bind(server)
                        .bind(tool)
                        .bind(p.to_string())
                        .bind(crate::now_ms())
                        .bind(by)
                        .execute(&self.pool)
                        .await?;
                }
                None => {
                    sqlx::query(sql::UNPIN)
                        .bind(server)
                        .bind(tool)
                        .execute(&self.pool)
                        .await?;
                }
            }
            Ok(())
        }

        async fn changes(
            &self,
            server: Option<&str>,
        ) -> crate::Result<Vec<crate::upstreams::UpstreamChange>> {
            let rows: Vec<(String, String, String, Option<String>, String, i64)> =
                sqlx::query_as(crate::upstreams::sql::CHANGES)
                    .bind(server)
                    .fetch_all(&self.pool)
                    .await?;
            rows.into_iter()
                .map(|(server, tool, kind, pinned, status, detected_at_ms)| {
                    Ok(crate::upstreams::UpstreamChange {
                        server,
                        tool,
                        kind,
                        pinned: pinned
                            .map(|p| serde_json::from_str(&p))
                            .transpose()
                            .map_err(|e| crate::StoreError::Invalid(e.to_string()))?
                            .map(crate::secrets::open)
                            .transpose()?,
                        status,
                        detected_at_ms,
                    })
                })
                .collect()
        }

        async fn put_change(&self, c: &crate::upstreams::UpstreamChange) -> crate::Result<()> {
            sqlx::query(crate::upstreams::sql::PUT_CHANGE)
                .bind(&c.server)
                .bind(&c.tool)
                .bind(&c.kind)
                .bind(c.pinned.as_ref().map(crate::secrets::seal))
                .bind(&c.status)
                .bind(c.detected_at_ms)
                .execute(&self.pool)
                .await?;
            Ok(())
        }

        async fn drop_change(&self, server: &str, tool: &str) -> crate::Result<()> {
            sqlx::query(crate::upstreams::sql::DROP_CHANGE)
                .bind(server)
                .bind(tool)
                .execute(&self.pool)
                .await?;
            Ok(())
        }
    };
}

/// The inherent helpers of the server writes, for a backend whose connection is `$conn`.
macro_rules! upstream_helpers {
    ($conn:ty) => {
        async fn server_state(conn: &mut $conn, name: &str) -> crate::Result<Option<(u64, bool)>> {
            use sqlx::Row;
            let sql = format!("{}{}", crate::upstreams::sql::SERVER_STATE, Self::ROW_LOCK);
            let row = sqlx::query(sqlx::AssertSqlSafe(sql))
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

        async fn write_server(
            conn: &mut $conn,
            server: &toolsmith_core::upstream::McpServer,
            version: u64,
            exists: bool,
            change: &crate::Change<'_>,
        ) -> crate::Result<crate::upstreams::ServerRecord> {
            use crate::upstreams::sql;
            let text = crate::secrets::seal(
                &server.to_catalog_value(toolsmith_core::model::Secrets::Keep),
            );
            let now = crate::now_ms();
            let statement = if exists {
                sql::UPDATE_SERVER
            } else {
                sql::INSERT_SERVER
            };
            sqlx::query(statement)
                .bind(&server.name)
                .bind(version as i64)
                .bind(&text)
                .bind(now)
                .bind(change.author)
                .execute(&mut *conn)
                .await?;
            sqlx::query(sql::INSERT_SERVER_VERSION)
                .bind(&server.name)
                .bind(version as i64)
                .bind(&text)
                .bind(now)
                .bind(change.author)
                .bind(change.summary)
                .execute(&mut *conn)
                .await?;
            Ok(crate::upstreams::ServerRecord {
                server: server.clone(),
                version,
                updated_at_ms: now,
                updated_by: change.author.to_owned(),
            })
        }
    };
}

pub(crate) use {upstream_helpers, upstream_methods};

/// A `(name, version, definition, updated_at, updated_by)` row into a record.
pub(crate) fn server_record(row: (String, i64, String, i64, String)) -> Result<ServerRecord> {
    let (_, version, definition, updated_at_ms, updated_by) = row;
    Ok(ServerRecord {
        server: definition_to_server(&definition)?,
        version: version as u64,
        updated_at_ms,
        updated_by,
    })
}

/// Catalog import of servers: new ones are created, changed ones saved as their next
/// version, unchanged ones keep theirs. The report names which was which.
pub async fn import_servers<S: UpstreamStore>(
    store: &S,
    servers: &[McpServer],
    author: &str,
) -> Result<crate::ImportReport> {
    let mut report = crate::ImportReport::default();
    let change = || Change {
        author,
        summary: IMPORTED,
    };
    for server in servers {
        match store.get_server(&server.name).await {
            Err(crate::StoreError::NotFound(_)) => {
                store.create_server(server, change()).await?;
                report.created.push(server.name.clone());
            }
            Ok(current) if current.server == *server => {
                report.unchanged.push(server.name.clone());
            }
            Ok(current) => {
                // An import replaces only a server an import wrote last, and never turns a
                // command into a URL or back: one made or edited through REST or the UI keeps
                // its definition.
                let name = &server.name;
                let kind = |s: &McpServer| match s.transport {
                    toolsmith_core::upstream::Transport::Stdio { .. } => "command",
                    toolsmith_core::upstream::Transport::Http { .. } => "URL",
                };
                let summary = store
                    .server_summary(name, current.version)
                    .await?
                    .unwrap_or_default();
                if kind(&current.server) != kind(server) {
                    report.skipped.push(format!(
                        "MCP server `{name}`: it runs a {}, and an import never turns it into a {} (delete it first, or give this one another name)",
                        kind(&current.server),
                        kind(server)
                    ));
                } else if summary != IMPORTED {
                    report.skipped.push(format!(
                        "MCP server `{name}`: version {} was saved by {} ({summary:?}), not by an import; an import does not replace it (edit it there, or delete it first)",
                        current.version, current.updated_by
                    ));
                } else {
                    store
                        .update_server(server, current.version, change())
                        .await?;
                    report.updated.push(server.name.clone());
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(report)
}

/// The summary of the versions [`import_servers`] writes.
const IMPORTED: &str = "imported from catalog";
