//! Upstream MCP servers in the registry (SPEC §11): their definitions, versioned like tools
//! (an update names the version it is based on), the pinned part of each upstream tool as the
//! operator approved it, and the changes an upstream made since, waiting for a decision.
//!
//! Servers are [`crate::documents`] (one implementation of their writes and reads with the
//! other versioned kinds); the statements on pins and changes are the same on both backends
//! ([`sql`]), and [`upstream_methods`] expands their bodies for each.

use serde_json::Value;
use toolsmith_core::upstream::McpServer;

use crate::documents::{Documents, Meta};
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

/// The registry's operations on upstream servers (versioned documents: [`Documents`]), their
/// pins and changes.
pub trait UpstreamStore: Documents {
    fn get_server(&self, name: &str) -> impl Future<Output = Result<ServerRecord>> + Send {
        self.get_doc::<McpServer>(name)
    }
    /// The summary of version `version` of server `name` (who wrote it, and how).
    fn server_summary(
        &self,
        name: &str,
        version: u64,
    ) -> impl Future<Output = Result<Option<String>>> + Send {
        async move {
            match self.doc_version::<McpServer>(name, version).await {
                Ok(v) => Ok(Some(v.summary)),
                Err(crate::StoreError::NotFound(_)) => Ok(None),
                Err(e) => Err(e),
            }
        }
    }
    /// Every live server, by name.
    fn servers(&self) -> impl Future<Output = Result<Vec<ServerRecord>>> + Send {
        self.docs::<McpServer>()
    }
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
    /// The OAuth credentials (text, opened) of `server` for `subject` (`""`: shared).
    fn connection(
        &self,
        server: &str,
        subject: &str,
    ) -> impl Future<Output = Result<Option<String>>> + Send;
    /// Keeps `credentials` (sealed with the registry's key) for `server` and `subject`.
    fn put_connection(
        &self,
        server: &str,
        subject: &str,
        credentials: &str,
    ) -> impl Future<Output = Result<()>> + Send;
    /// Forgets them: whether there were any.
    fn drop_connection(
        &self,
        server: &str,
        subject: &str,
    ) -> impl Future<Output = Result<bool>> + Send;
    /// Which connections exist — never what they hold — of `server` (or every server).
    fn connections(
        &self,
        server: Option<&str>,
    ) -> impl Future<Output = Result<Vec<Connection>>> + Send;
}

/// That an OAuth connection to an upstream exists ([`UpstreamStore::connections`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connection {
    pub server: String,
    /// `""`: the server's shared connection; else the caller it belongs to.
    pub subject: String,
    /// When it was last written (connected or refreshed).
    pub at_ms: i64,
}

/// Credentials as stored: a definition-shaped document whose one secret config value is
/// the text, so sealing, opening and re-sealing are those of definitions.
pub(crate) fn credentials_document(text: &str) -> Value {
    serde_json::json!({
        "config_schema": [{"name": "credentials", "type": "string", "secret": true}],
        "config": {"credentials": text},
    })
}

/// The text of a stored credentials document, opened.
pub(crate) fn credentials_text(stored: &str) -> Result<String> {
    let v: Value =
        serde_json::from_str(stored).map_err(|e| crate::StoreError::Invalid(e.to_string()))?;
    let v = crate::secrets::open(v)?;
    v["config"]["credentials"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| crate::StoreError::Invalid("stored credentials without their text".into()))
}

impl crate::documents::Document for McpServer {
    const NOUN: &'static str = "server";
    const TABLE: &'static str = "mcp_servers";
    const VERSIONS: &'static str = "mcp_server_versions";
    const ON_DELETE: &'static [&'static str] = &[
        sql::DELETE_PINS,
        sql::DELETE_CHANGES,
        sql::DELETE_CONNECTIONS,
    ];
    type Record = ServerRecord;

    fn name(&self) -> &str {
        &self.name
    }

    fn stored(&self) -> String {
        crate::secrets::seal(&self.to_catalog_value(toolsmith_core::model::Secrets::Keep))
    }

    fn from_definition(definition: &Value) -> Result<Self> {
        toolsmith_core::catalog::parse_stored_server(definition, &crate::NoFiles)
            .map_err(|e| crate::StoreError::Invalid(e.to_string()))
    }

    fn record(self, meta: Meta) -> ServerRecord {
        ServerRecord {
            server: self,
            version: meta.version,
            updated_at_ms: meta.updated_at_ms,
            updated_by: meta.updated_by,
        }
    }
}

/// The statements both backends run unchanged.
pub(crate) mod sql {
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
    pub const DELETE_CONNECTIONS: &str = "DELETE FROM upstream_connections WHERE server = $1";
    pub const CONNECTION: &str =
        "SELECT credentials FROM upstream_connections WHERE server = $1 AND subject = $2";
    pub const PUT_CONNECTION: &str = "INSERT INTO upstream_connections (server, subject, credentials, at_ms) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (server, subject) DO UPDATE SET credentials = $3, at_ms = $4";
    pub const DROP_CONNECTION: &str =
        "DELETE FROM upstream_connections WHERE server = $1 AND subject = $2";
    pub const CONNECTIONS: &str = "SELECT server, subject, at_ms FROM upstream_connections \
         WHERE (CAST($1 AS TEXT) IS NULL OR server = $1) ORDER BY server, subject";
}

/// The [`UpstreamStore`] methods on pins and changes, the same code for both backends (each
/// has a `pool`); the server methods are the versioned documents'.
macro_rules! upstream_methods {
    () => {
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

        async fn connection(&self, server: &str, subject: &str) -> crate::Result<Option<String>> {
            let row: Option<(String,)> = sqlx::query_as(crate::upstreams::sql::CONNECTION)
                .bind(server)
                .bind(subject)
                .fetch_optional(&self.pool)
                .await?;
            row.map(|(stored,)| crate::upstreams::credentials_text(&stored))
                .transpose()
        }

        async fn put_connection(
            &self,
            server: &str,
            subject: &str,
            credentials: &str,
        ) -> crate::Result<()> {
            if !crate::secrets::has_key() {
                return Err(crate::StoreError::Invalid(
                    "OAuth tokens are kept sealed, and this process has no registry key to seal them with (give --secret-key-file or TOOLSMITH_SECRET_KEY)".into(),
                ));
            }
            let stored =
                crate::secrets::seal(&crate::upstreams::credentials_document(credentials));
            sqlx::query(crate::upstreams::sql::PUT_CONNECTION)
                .bind(server)
                .bind(subject)
                .bind(stored)
                .bind(crate::now_ms())
                .execute(&self.pool)
                .await?;
            Ok(())
        }

        async fn drop_connection(&self, server: &str, subject: &str) -> crate::Result<bool> {
            let done = sqlx::query(crate::upstreams::sql::DROP_CONNECTION)
                .bind(server)
                .bind(subject)
                .execute(&self.pool)
                .await?;
            Ok(done.rows_affected() > 0)
        }

        async fn connections(
            &self,
            server: Option<&str>,
        ) -> crate::Result<Vec<crate::upstreams::Connection>> {
            let rows: Vec<(String, String, i64)> =
                sqlx::query_as(crate::upstreams::sql::CONNECTIONS)
                    .bind(server)
                    .fetch_all(&self.pool)
                    .await?;
            Ok(rows
                .into_iter()
                .map(|(server, subject, at_ms)| crate::upstreams::Connection {
                    server,
                    subject,
                    at_ms,
                })
                .collect())
        }
    };
}

pub(crate) use upstream_methods;

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
                store.create_doc(server, change()).await?;
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
                    store.update_doc(server, current.version, change()).await?;
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
