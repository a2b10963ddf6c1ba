//! Versioned documents: what the registry keeps of tools, MCP servers and toolsets (and the
//! next kinds: prompts, resources, connections) — a live row per name and every version — and
//! the one implementation of their writes and reads.
//!
//! A kind says what it is ([`Document`]: its two tables, its stored form, the record a read
//! gives, its own columns of the live row); [`Documents`] is every operation on any kind —
//! create, update with the version it is based on, get, list, one version, history, delete
//! (soft: every version is kept, and a deleted name continues its history when created
//! again). [`document_methods`] expands those operations once per backend: the statements are
//! the same on both, built from the kind's tables; what differs (how a write transaction
//! starts, `FOR UPDATE`) comes from the backend's `begin` and `ROW_LOCK`.

use serde_json::Value;

use crate::{Change, Result, StoreError, VersionRecord};

/// A kind of versioned document.
pub trait Document: Clone + Send + Sync {
    /// How messages name one: `tool`, `server`, `toolset`.
    const NOUN: &'static str;
    /// The live table: `name, version, deleted, definition, updated_at, updated_by` and the
    /// kind's own [`Document::columns`].
    const TABLE: &'static str;
    /// Every version: `name, version, definition, created_at, author, summary`.
    const VERSIONS: &'static str;
    /// Statements run with a delete, in its transaction, binding the name as `$1` (what goes
    /// with the document: a server's pins and pending changes).
    const ON_DELETE: &'static [&'static str] = &[];
    /// What a read gives.
    type Record: Send;

    fn name(&self) -> &str;
    /// The stored text: the catalog form, secrets sealed where the kind has any.
    fn stored(&self) -> String;
    /// A stored definition (secrets opened) back into the document, through the catalog
    /// reader.
    fn from_definition(definition: &Value) -> Result<Self>;
    fn record(self, meta: Meta) -> Self::Record;
    /// The kind's own columns of the live row, with this document's values (the tools'
    /// listing reads them without parsing definitions).
    fn columns(&self) -> Vec<(&'static str, Column)> {
        Vec::new()
    }
}

/// The version and who wrote it, as a read gives them with the document.
#[derive(Debug, Clone)]
pub struct Meta {
    pub version: u64,
    pub updated_at_ms: i64,
    pub updated_by: String,
}

/// A value of one of a kind's own columns.
#[derive(Debug, Clone)]
pub enum Column {
    Bool(bool),
    Text(String),
}

/// The registry's operations on every kind of versioned document.
pub trait Documents: Send + Sync {
    /// Creates `doc` at version 1 (a deleted name continues its history).
    fn create_doc<D: Document>(
        &self,
        doc: &D,
        change: Change<'_>,
    ) -> impl Future<Output = Result<D::Record>> + Send;
    /// Saves `doc` as its next version, if the current one is `base_version`.
    fn update_doc<D: Document>(
        &self,
        doc: &D,
        base_version: u64,
        change: Change<'_>,
    ) -> impl Future<Output = Result<D::Record>> + Send;
    /// The live document `name`.
    fn get_doc<D: Document>(&self, name: &str) -> impl Future<Output = Result<D::Record>> + Send;
    /// Every live document of the kind, by name.
    fn docs<D: Document>(&self) -> impl Future<Output = Result<Vec<D::Record>>> + Send;
    /// Version `version` of `name`.
    fn doc_version<D: Document>(
        &self,
        name: &str,
        version: u64,
    ) -> impl Future<Output = Result<VersionRecord>> + Send;
    /// Every version of `name`, oldest first.
    fn doc_history<D: Document>(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Vec<VersionRecord>>> + Send;
    /// Soft delete; its versions are kept.
    fn delete_doc<D: Document>(
        &self,
        name: &str,
        change: Change<'_>,
    ) -> impl Future<Output = Result<()>> + Send;
}

/// The statements, from a kind's tables.
pub(crate) mod sql {
    use super::{Column, Document};

    pub fn state<D: Document>(row_lock: &str) -> String {
        format!(
            "SELECT version, deleted, definition FROM {} WHERE name = $1{row_lock}",
            D::TABLE
        )
    }

    /// `UPDATE` (or `INSERT`) of the live row: `$1` name, `$2` version, `$3` definition,
    /// `$4` updated_at, `$5` updated_by, then the kind's columns.
    pub fn write<D: Document>(columns: &[(&'static str, Column)], exists: bool) -> String {
        let own = columns.iter().enumerate().map(|(i, (c, _))| (*c, i + 6));
        if exists {
            let sets: String = own.map(|(c, n)| format!(", {c} = ${n}")).collect();
            format!(
                "UPDATE {} SET version = $2, deleted = FALSE, definition = $3, updated_at = $4, updated_by = $5{sets} WHERE name = $1",
                D::TABLE
            )
        } else {
            let (names, slots): (String, String) = own
                .map(|(c, n)| (format!(", {c}"), format!(", ${n}")))
                .unzip();
            format!(
                "INSERT INTO {} (name, version, deleted, definition, updated_at, updated_by{names}) VALUES ($1, $2, FALSE, $3, $4, $5{slots})",
                D::TABLE
            )
        }
    }

    pub fn insert_version<D: Document>() -> String {
        format!(
            "INSERT INTO {} (name, version, definition, created_at, author, summary) VALUES ($1, $2, $3, $4, $5, $6)",
            D::VERSIONS
        )
    }

    pub fn get<D: Document>() -> String {
        format!(
            "SELECT name, version, definition, updated_at, updated_by FROM {} WHERE name = $1 AND NOT deleted",
            D::TABLE
        )
    }

    pub fn all<D: Document>() -> String {
        format!(
            "SELECT name, version, definition, updated_at, updated_by FROM {} WHERE NOT deleted ORDER BY name",
            D::TABLE
        )
    }

    pub fn version<D: Document>() -> String {
        format!(
            "SELECT name, version, definition, created_at, author, summary FROM {} WHERE name = $1 AND version = $2",
            D::VERSIONS
        )
    }

    pub fn any_version<D: Document>() -> String {
        format!("SELECT 1 FROM {} WHERE name = $1 LIMIT 1", D::VERSIONS)
    }

    pub fn history<D: Document>() -> String {
        format!(
            "SELECT name, version, definition, created_at, author, summary FROM {} WHERE name = $1 ORDER BY version",
            D::VERSIONS
        )
    }

    pub fn delete<D: Document>() -> String {
        format!(
            "UPDATE {} SET deleted = TRUE, updated_at = $2, updated_by = $3 WHERE name = $1 AND NOT deleted",
            D::TABLE
        )
    }
}

/// `name` not found, as a kind says it.
pub(crate) fn not_found<D: Document>(name: &str) -> StoreError {
    StoreError::NotFound(format!("{} {name:?}", D::NOUN))
}

/// A unique key hit by a write: two writers creating the same new name at once (on
/// PostgreSQL; SQLite's write lock keeps them apart).
pub(crate) fn unique_is_exists<D: Document>(e: sqlx::Error, name: &str) -> StoreError {
    match e.as_database_error().map(|d| d.kind()) {
        Some(sqlx::error::ErrorKind::UniqueViolation) => StoreError::Exists {
            kind: D::NOUN,
            name: name.to_owned(),
        },
        _ => e.into(),
    }
}

/// A live row (`name, version, definition, updated_at, updated_by`) into a kind's record.
pub(crate) fn record<D: Document>(row: (String, i64, String, i64, String)) -> Result<D::Record> {
    let (_, version, definition, updated_at_ms, updated_by) = row;
    let definition: Value =
        serde_json::from_str(&definition).map_err(|e| StoreError::Invalid(e.to_string()))?;
    let doc = D::from_definition(&crate::secrets::open(definition)?)?;
    Ok(doc.record(Meta {
        version: version as u64,
        updated_at_ms,
        updated_by,
    }))
}

/// The [`Documents`] methods and their helpers, the same code for both backends (each has a
/// `pool`, an inherent `async fn begin(&self)` and a `ROW_LOCK` suffix; `$conn` is its
/// connection type). Expanded inside `impl Documents for <backend>`; the helpers
/// (`doc_stored`, `write_doc`) are what a bulk write (`sync`) uses inside its transaction.
macro_rules! document_methods {
    ($conn:ty) => {
        async fn create_doc<D: crate::documents::Document>(
            &self,
            doc: &D,
            change: crate::Change<'_>,
        ) -> crate::Result<D::Record> {
            let mut tx = self.begin().await?;
            let (version, exists) = match doc_stored::<D>(&mut tx, doc.name()).await? {
                Some((_, false, _)) => {
                    return Err(crate::StoreError::Exists {
                        kind: D::NOUN,
                        name: doc.name().to_owned(),
                    });
                }
                Some((v, true, _)) => (v + 1, true),
                None => (1, false),
            };
            let record = write_doc(&mut tx, doc, version, exists, &change).await?;
            tx.commit().await?;
            Ok(record)
        }

        async fn update_doc<D: crate::documents::Document>(
            &self,
            doc: &D,
            base_version: u64,
            change: crate::Change<'_>,
        ) -> crate::Result<D::Record> {
            let mut tx = self.begin().await?;
            let record = match doc_stored::<D>(&mut tx, doc.name()).await? {
                None | Some((_, true, _)) => {
                    return Err(crate::documents::not_found::<D>(doc.name()));
                }
                Some((current, false, _)) if current != base_version => {
                    return Err(crate::StoreError::Conflict {
                        kind: D::NOUN,
                        name: doc.name().to_owned(),
                        current_version: current,
                        based_on: base_version,
                    });
                }
                Some((current, false, _)) => {
                    write_doc(&mut tx, doc, current + 1, true, &change).await?
                }
            };
            tx.commit().await?;
            Ok(record)
        }

        async fn get_doc<D: crate::documents::Document>(
            &self,
            name: &str,
        ) -> crate::Result<D::Record> {
            let row: Option<(String, i64, String, i64, String)> =
                sqlx::query_as(sqlx::AssertSqlSafe(crate::documents::sql::get::<D>()))
                    .bind(name)
                    .fetch_optional(&self.pool)
                    .await?;
            match row {
                Some(row) => crate::documents::record::<D>(row),
                None => Err(crate::documents::not_found::<D>(name)),
            }
        }

        async fn docs<D: crate::documents::Document>(&self) -> crate::Result<Vec<D::Record>> {
            let rows: Vec<(String, i64, String, i64, String)> =
                sqlx::query_as(sqlx::AssertSqlSafe(crate::documents::sql::all::<D>()))
                    .fetch_all(&self.pool)
                    .await?;
            rows.into_iter()
                .map(crate::documents::record::<D>)
                .collect()
        }

        async fn doc_version<D: crate::documents::Document>(
            &self,
            name: &str,
            version: u64,
        ) -> crate::Result<crate::VersionRecord> {
            let row = sqlx::query(sqlx::AssertSqlSafe(crate::documents::sql::version::<D>()))
                .bind(name)
                .bind(version as i64)
                .fetch_optional(&self.pool)
                .await?;
            if let Some(row) = row {
                return crate::rows::version(&row);
            }
            // A name with no version at all is not found, as `get_doc` says it.
            let any = sqlx::query(sqlx::AssertSqlSafe(
                crate::documents::sql::any_version::<D>(),
            ))
            .bind(name)
            .fetch_optional(&self.pool)
            .await?;
            Err(match any {
                Some(_) => crate::StoreError::NotFound(format!(
                    "version {version} of {} {name:?}",
                    D::NOUN
                )),
                None => crate::documents::not_found::<D>(name),
            })
        }

        async fn doc_history<D: crate::documents::Document>(
            &self,
            name: &str,
        ) -> crate::Result<Vec<crate::VersionRecord>> {
            let rows = sqlx::query(sqlx::AssertSqlSafe(crate::documents::sql::history::<D>()))
                .bind(name)
                .fetch_all(&self.pool)
                .await?;
            if rows.is_empty() {
                return Err(crate::documents::not_found::<D>(name));
            }
            rows.iter().map(crate::rows::version).collect()
        }

        async fn delete_doc<D: crate::documents::Document>(
            &self,
            name: &str,
            change: crate::Change<'_>,
        ) -> crate::Result<()> {
            let mut tx = self.begin().await?;
            let done = sqlx::query(sqlx::AssertSqlSafe(crate::documents::sql::delete::<D>()))
                .bind(name)
                .bind(crate::now_ms())
                .bind(change.author)
                .execute(&mut *tx)
                .await?;
            if done.rows_affected() == 0 {
                return Err(crate::documents::not_found::<D>(name));
            }
            for statement in D::ON_DELETE {
                sqlx::query(*statement).bind(name).execute(&mut *tx).await?;
            }
            tx.commit().await?;
            Ok(())
        }
    };
}

/// The helpers [`document_methods`] and a bulk write use inside a transaction, for a backend
/// whose connection is `$conn` and whose reads for a write end with `$lock`: free functions
/// of the backend's module.
macro_rules! document_helpers {
    ($conn:ty, $lock:expr) => {
        /// `(version, deleted, definition)` of a name, live or not, its row locked where the
        /// backend locks rows.
        pub(crate) async fn doc_stored<D: crate::documents::Document>(
            conn: &mut $conn,
            name: &str,
        ) -> crate::Result<Option<(u64, bool, String)>> {
            use sqlx::Row;
            let row = sqlx::query(sqlx::AssertSqlSafe(crate::documents::sql::state::<D>(
                $lock,
            )))
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

        /// Saves `doc` as version `version` in an open transaction: its live row (inserted,
        /// or updated when the name `exists`) and its version row.
        pub(crate) async fn write_doc<D: crate::documents::Document>(
            conn: &mut $conn,
            doc: &D,
            version: u64,
            exists: bool,
            change: &crate::Change<'_>,
        ) -> crate::Result<D::Record> {
            use crate::documents::{Column, sql, unique_is_exists};
            let text = doc.stored();
            let now = crate::now_ms();
            let columns = doc.columns();
            let statement = sql::write::<D>(&columns, exists);
            let mut query = sqlx::query(sqlx::AssertSqlSafe(statement))
                .bind(doc.name())
                .bind(version as i64)
                .bind(&text)
                .bind(now)
                .bind(change.author);
            for (_, value) in columns {
                query = match value {
                    Column::Bool(b) => query.bind(b),
                    Column::Text(t) => query.bind(t),
                };
            }
            query
                .execute(&mut *conn)
                .await
                .map_err(|e| unique_is_exists::<D>(e, doc.name()))?;
            sqlx::query(sqlx::AssertSqlSafe(sql::insert_version::<D>()))
                .bind(doc.name())
                .bind(version as i64)
                .bind(&text)
                .bind(now)
                .bind(change.author)
                .bind(change.summary)
                .execute(&mut *conn)
                .await
                .map_err(|e| unique_is_exists::<D>(e, doc.name()))?;
            Ok(D::record(
                doc.clone(),
                crate::documents::Meta {
                    version,
                    updated_at_ms: now,
                    updated_by: change.author.to_owned(),
                },
            ))
        }
    };
}

pub(crate) use {document_helpers, document_methods};
