//! Toolsets in the registry (SPEC §14): their definitions, versioned like tools (an update
//! names the version it is based on; every version is kept). Membership is not stored: it
//! is computed from the definition against the tools of the moment.
//!
//! The statements are the same on both backends ([`sql`]); [`toolset_methods`] expands the
//! bodies for each.

use serde_json::Value;
use toolsmith_core::toolset::Toolset;

use crate::{Change, Result, StoreError};

/// A toolset as the registry holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolsetRecord {
    pub toolset: Toolset,
    pub version: u64,
    pub updated_at_ms: i64,
    pub updated_by: String,
}

/// One kept version of a toolset.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolsetVersion {
    pub version: u64,
    /// The catalog form.
    pub definition: Value,
    pub created_at_ms: i64,
    pub author: String,
    pub summary: String,
}

/// The registry's operations on toolsets.
pub trait ToolsetStore: Send + Sync {
    /// Creates `toolset` at version 1 (a deleted name continues its history).
    fn create_toolset(
        &self,
        toolset: &Toolset,
        change: Change<'_>,
    ) -> impl Future<Output = Result<ToolsetRecord>> + Send;
    /// Saves `toolset` as its next version, if the current one is `base_version`.
    fn update_toolset(
        &self,
        toolset: &Toolset,
        base_version: u64,
        change: Change<'_>,
    ) -> impl Future<Output = Result<ToolsetRecord>> + Send;
    fn get_toolset(&self, name: &str) -> impl Future<Output = Result<ToolsetRecord>> + Send;
    /// Every live toolset, by name.
    fn toolsets(&self) -> impl Future<Output = Result<Vec<ToolsetRecord>>> + Send;
    /// Soft delete; its versions are kept.
    fn delete_toolset(
        &self,
        name: &str,
        change: Change<'_>,
    ) -> impl Future<Output = Result<()>> + Send;
    /// Every version of `name`, oldest first.
    fn toolset_history(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Vec<ToolsetVersion>>> + Send;
}

/// The statements both backends run unchanged.
pub(crate) mod sql {
    pub const STATE: &str = "SELECT version, deleted FROM toolsets WHERE name = $1";
    pub const UPDATE: &str = "UPDATE toolsets SET version = $2, deleted = FALSE, definition = $3, updated_at = $4, updated_by = $5 WHERE name = $1";
    pub const INSERT: &str = "INSERT INTO toolsets (name, version, deleted, definition, updated_at, updated_by) VALUES ($1, $2, FALSE, $3, $4, $5)";
    pub const INSERT_VERSION: &str = "INSERT INTO toolset_versions (name, version, definition, created_at, author, summary) VALUES ($1, $2, $3, $4, $5, $6)";
    pub const GET: &str = "SELECT name, version, definition, updated_at, updated_by FROM toolsets WHERE name = $1 AND NOT deleted";
    pub const ALL: &str = "SELECT name, version, definition, updated_at, updated_by FROM toolsets WHERE NOT deleted ORDER BY name";
    pub const DELETE: &str = "UPDATE toolsets SET deleted = TRUE, updated_at = $2, updated_by = $3 WHERE name = $1 AND NOT deleted";
    pub const HISTORY: &str = "SELECT version, definition, created_at, author, summary FROM toolset_versions WHERE name = $1 ORDER BY version";
}

/// A stored definition back into a [`Toolset`], through the catalog reader.
pub(crate) fn definition_to_toolset(text: &str) -> Result<Toolset> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| StoreError::Invalid(e.to_string()))?;
    toolsmith_core::catalog::parse_toolset(&value).map_err(|e| StoreError::Invalid(e.to_string()))
}

/// A `(name, version, definition, updated_at, updated_by)` row into a record.
pub(crate) fn record(row: (String, i64, String, i64, String)) -> Result<ToolsetRecord> {
    let (_, version, definition, updated_at_ms, updated_by) = row;
    Ok(ToolsetRecord {
        toolset: definition_to_toolset(&definition)?,
        version: version as u64,
        updated_at_ms,
        updated_by,
    })
}

/// Every [`ToolsetStore`] method, the same code for both backends (each has a `pool`, an
/// inherent `async fn begin(&self)` and a `ROW_LOCK` suffix).
macro_rules! toolset_methods {
    () => {
        async fn create_toolset(
            &self,
            toolset: &toolsmith_core::toolset::Toolset,
            change: crate::Change<'_>,
        ) -> crate::Result<crate::toolsets::ToolsetRecord> {
            let mut tx = self.begin().await?;
            let version = match crate::toolsets::toolset_state!(tx, &toolset.name) {
                Some((_, false)) => {
                    return Err(crate::StoreError::Exists(format!(
                        "toolset {}",
                        toolset.name
                    )));
                }
                Some((v, true)) => v + 1,
                None => 1,
            };
            let record = crate::toolsets::write_toolset!(tx, toolset, version, version > 1, change);
            tx.commit().await?;
            Ok(record)
        }

        async fn update_toolset(
            &self,
            toolset: &toolsmith_core::toolset::Toolset,
            base_version: u64,
            change: crate::Change<'_>,
        ) -> crate::Result<crate::toolsets::ToolsetRecord> {
            let mut tx = self.begin().await?;
            let record = match crate::toolsets::toolset_state!(tx, &toolset.name) {
                None | Some((_, true)) => {
                    return Err(crate::StoreError::NotFound(format!(
                        "toolset {:?}",
                        toolset.name
                    )));
                }
                Some((current, false)) if current != base_version => {
                    return Err(crate::StoreError::Conflict {
                        name: toolset.name.clone(),
                        current_version: current,
                        based_on: base_version,
                    });
                }
                Some((current, false)) => {
                    crate::toolsets::write_toolset!(tx, toolset, current + 1, true, change)
                }
            };
            tx.commit().await?;
            Ok(record)
        }

        async fn get_toolset(&self, name: &str) -> crate::Result<crate::toolsets::ToolsetRecord> {
            let row: Option<(String, i64, String, i64, String)> =
                sqlx::query_as(crate::toolsets::sql::GET)
                    .bind(name)
                    .fetch_optional(&self.pool)
                    .await?;
            match row {
                Some(row) => crate::toolsets::record(row),
                None => Err(crate::StoreError::NotFound(format!("toolset {name:?}"))),
            }
        }

        async fn toolsets(&self) -> crate::Result<Vec<crate::toolsets::ToolsetRecord>> {
            let rows: Vec<(String, i64, String, i64, String)> =
                sqlx::query_as(crate::toolsets::sql::ALL)
                    .fetch_all(&self.pool)
                    .await?;
            rows.into_iter().map(crate::toolsets::record).collect()
        }

        async fn delete_toolset(&self, name: &str, change: crate::Change<'_>) -> crate::Result<()> {
            let done = sqlx::query(crate::toolsets::sql::DELETE)
                .bind(name)
                .bind(crate::now_ms())
                .bind(change.author)
                .execute(&self.pool)
                .await?;
            if done.rows_affected() == 0 {
                return Err(crate::StoreError::NotFound(format!("toolset {name:?}")));
            }
            Ok(())
        }

        async fn toolset_history(
            &self,
            name: &str,
        ) -> crate::Result<Vec<crate::toolsets::ToolsetVersion>> {
            let rows: Vec<(i64, String, i64, String, String)> =
                sqlx::query_as(crate::toolsets::sql::HISTORY)
                    .bind(name)
                    .fetch_all(&self.pool)
                    .await?;
            if rows.is_empty() {
                return Err(crate::StoreError::NotFound(format!("toolset {name:?}")));
            }
            rows.into_iter()
                .map(|(version, definition, created_at_ms, author, summary)| {
                    Ok(crate::toolsets::ToolsetVersion {
                        version: version as u64,
                        definition: serde_json::from_str(&definition)
                            .map_err(|e| crate::StoreError::Invalid(e.to_string()))?,
                        created_at_ms,
                        author,
                        summary,
                    })
                })
                .collect()
        }
    };
}

/// The version and deleted flag of a toolset, its row locked for the write (`$tx`).
macro_rules! toolset_state {
    ($tx:ident, $name:expr) => {{
        use sqlx::Row;
        let sql = format!("{}{}", crate::toolsets::sql::STATE, Self::ROW_LOCK);
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind($name)
            .fetch_optional(&mut *$tx)
            .await?
            .map(|r| {
                (
                    r.get::<i64, _>("version") as u64,
                    r.get::<bool, _>("deleted"),
                )
            })
    }};
}

/// Writes a toolset's row (insert or update) and its version row.
macro_rules! write_toolset {
    ($tx:ident, $toolset:expr, $version:expr, $exists:expr, $change:expr) => {{
        let toolset = $toolset;
        let text = toolset.to_catalog_value().to_string();
        let now = crate::now_ms();
        let statement = if $exists {
            crate::toolsets::sql::UPDATE
        } else {
            crate::toolsets::sql::INSERT
        };
        sqlx::query(statement)
            .bind(&toolset.name)
            .bind($version as i64)
            .bind(&text)
            .bind(now)
            .bind($change.author)
            .execute(&mut *$tx)
            .await?;
        sqlx::query(crate::toolsets::sql::INSERT_VERSION)
            .bind(&toolset.name)
            .bind($version as i64)
            .bind(&text)
            .bind(now)
            .bind($change.author)
            .bind($change.summary)
            .execute(&mut *$tx)
            .await?;
        crate::toolsets::ToolsetRecord {
            toolset: toolset.clone(),
            version: $version,
            updated_at_ms: now,
            updated_by: $change.author.to_owned(),
        }
    }};
}

pub(crate) use {toolset_methods, toolset_state, write_toolset};

/// Catalog import of toolsets: new ones are created, changed ones saved as their next
/// version, unchanged ones keep theirs. The report names which was which.
pub async fn import_toolsets<S: ToolsetStore>(
    store: &S,
    toolsets: &[Toolset],
    author: &str,
) -> Result<crate::ImportReport> {
    let mut report = crate::ImportReport::default();
    let change = || Change {
        author,
        summary: "imported from catalog",
    };
    for set in toolsets {
        match store.get_toolset(&set.name).await {
            Err(StoreError::NotFound(_)) => {
                store.create_toolset(set, change()).await?;
                report.created.push(set.name.clone());
            }
            Ok(current) if current.toolset == *set => report.unchanged.push(set.name.clone()),
            Ok(current) => {
                store.update_toolset(set, current.version, change()).await?;
                report.updated.push(set.name.clone());
            }
            Err(e) => return Err(e),
        }
    }
    Ok(report)
}
