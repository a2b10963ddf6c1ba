//! [`Registry`]: either backend, chosen by the address it is opened with, behind the one
//! [`Store`] trait.

use toolsmith_core::Tool;

use crate::documents::Document;

use crate::{
    Change, ImportReport, Page, Query, Result, RunQuery, RunRecord, SessionNote, SessionRow, Store,
    ToolRecord, VersionRecord,
};
use crate::{postgres, sqlite};

/// The registry a server or the CLI uses: SQLite or PostgreSQL.
#[derive(Debug, Clone)]
pub enum Registry {
    Sqlite(sqlite::SqliteStore),
    Postgres(postgres::PgStore),
}

impl Registry {
    /// `postgres://…` or `postgresql://…` opens PostgreSQL; anything else is an SQLite file
    /// (`sqlite://` prefix optional).
    pub async fn open(address: &str) -> Result<Self> {
        if address.starts_with("postgres://") || address.starts_with("postgresql://") {
            Ok(Self::Postgres(postgres::PgStore::open(address).await?))
        } else {
            let path = address.strip_prefix("sqlite://").unwrap_or(address);
            Ok(Self::Sqlite(
                sqlite::SqliteStore::open(std::path::Path::new(path)).await?,
            ))
        }
    }

    /// Holds the lock of `server`'s OAuth connection for `subject` across replicas until the
    /// returned value is dropped (PostgreSQL: an advisory lock); `None` on SQLite, whose
    /// registry one process serves.
    pub async fn lock_connection(
        &self,
        server: &str,
        subject: &str,
    ) -> Result<Option<Box<dyn Send>>> {
        match self {
            Self::Sqlite(_) => Ok(None),
            Self::Postgres(s) => Ok(Some(Box::new(s.lock_connection(server, subject).await?))),
        }
    }

    /// Makes sure the registry's secrets are sealed with `key`: a registry sealed before must
    /// have been sealed with this key (else a clear error, nothing changed); one never sealed
    /// (new, or written by a release before secrets were encrypted) is sealed now, its plain
    /// values gone from the file. Returns what was sealed, if anything.
    pub async fn secure(
        &self,
        key: &crate::secrets::SecretKey,
    ) -> Result<Option<crate::reseal::Resealed>> {
        let check = match self {
            Self::Sqlite(s) => s.stored_key_check().await?,
            Self::Postgres(s) => s.stored_key_check().await?,
        };
        match check {
            Some(check) => {
                key.open_text(&check).map_err(|_| {
                    crate::StoreError::Invalid(
                        "this key does not open the registry's secrets: they were sealed with another key (give the one it was written with: --secret-key-file or TOOLSMITH_SECRET_KEY)".into(),
                    )
                })?;
                Ok(None)
            }
            None => match self.reseal(None, key).await {
                Ok(done) => Ok(Some(done)),
                // Another replica sealed the same new registry at the same moment: what it
                // wrote must open with this key.
                Err(e) => match self.stored_check().await? {
                    Some(check) => {
                        key.open_text(&check).map_err(|_| {
                            crate::StoreError::Invalid(
                                "another process sealed this registry's secrets with another key just now (give every replica the same key: --secret-key-file or TOOLSMITH_SECRET_KEY)".into(),
                            )
                        })?;
                        Ok(None)
                    }
                    None => Err(e),
                },
            },
        }
    }

    async fn stored_check(&self) -> Result<Option<String>> {
        match self {
            Self::Sqlite(s) => s.stored_key_check().await,
            Self::Postgres(s) => s.stored_key_check().await,
        }
    }

    /// Whether the registry's secrets were ever sealed (it then needs its key).
    pub async fn is_sealed(&self) -> Result<bool> {
        Ok(match self {
            Self::Sqlite(s) => s.stored_key_check().await?,
            Self::Postgres(s) => s.stored_key_check().await?,
        }
        .is_some())
    }

    /// Every secret opened with `from` and sealed with `to` (a key rotation), then compacted.
    pub async fn reseal(
        &self,
        from: Option<&crate::secrets::SecretKey>,
        to: &crate::secrets::SecretKey,
    ) -> Result<crate::reseal::Resealed> {
        match self {
            Self::Sqlite(s) => s.reseal(from, to).await,
            Self::Postgres(s) => s.reseal(from, to).await,
        }
    }

    /// Takes one call of `key` from the bucket of `scope` shared by every replica (`calls`
    /// per `per_ms`, `burst` at once): `Some(Ok(None))` when it passes, `Some(Ok(Some(wait
    /// ms)))` when not; `None` with SQLite, whose limits are kept in the process.
    pub async fn take_rate(
        &self,
        scope: &str,
        key: &str,
        limit: toolsmith_core::rate::RateLimit,
    ) -> Option<Result<Option<u64>>> {
        match self {
            Self::Sqlite(_) => None,
            Self::Postgres(s) => {
                let interval = (limit.per_ms / u64::from(limit.calls)).max(1) as i64;
                Some(
                    s.take_rate(scope, key, interval, i64::from(limit.burst))
                        .await,
                )
            }
        }
    }

    pub fn backend(&self) -> &'static str {
        match self {
            Self::Sqlite(_) => "sqlite",
            Self::Postgres(_) => "postgres",
        }
    }
}

/// Forwards one `Store` method to whichever backend the registry holds.
macro_rules! forward {
    ($self:ident, $method:ident ( $($arg:expr),* )) => {
        match $self {
            Registry::Sqlite(s) => s.$method($($arg),*).await,
            Registry::Postgres(s) => s.$method($($arg),*).await,
        }
    };
}

impl Store for Registry {
    async fn create(&self, tool: &Tool, change: Change<'_>) -> Result<ToolRecord> {
        forward!(self, create(tool, change))
    }
    async fn update(
        &self,
        tool: &Tool,
        base_version: u64,
        change: Change<'_>,
    ) -> Result<ToolRecord> {
        forward!(self, update(tool, base_version, change))
    }
    async fn get(&self, name: &str) -> Result<ToolRecord> {
        forward!(self, get(name))
    }
    async fn version(&self, name: &str, version: u64) -> Result<VersionRecord> {
        forward!(self, version(name, version))
    }
    async fn history(&self, name: &str) -> Result<Vec<VersionRecord>> {
        forward!(self, history(name))
    }
    async fn delete(&self, name: &str, change: Change<'_>) -> Result<()> {
        forward!(self, delete(name, change))
    }
    async fn search(&self, query: &Query) -> Result<Page<ToolRecord>> {
        forward!(self, search(query))
    }
    async fn record_runs(&self, runs: &[RunRecord], keep: usize) -> Result<()> {
        forward!(self, record_runs(runs, keep))
    }
    async fn runs(&self, query: &RunQuery) -> Result<Page<RunRecord>> {
        forward!(self, runs(query))
    }
    async fn sync(&self, tools: &[Tool], change: Change<'_>) -> Result<ImportReport> {
        forward!(self, sync(tools, change))
    }
    async fn generation(&self) -> Result<u64> {
        forward!(self, generation())
    }
    async fn note_session(&self, note: &SessionNote) -> Result<()> {
        forward!(self, note_session(note))
    }
    async fn find_session(&self, id: &str) -> Result<Option<SessionRow>> {
        forward!(self, find_session(id))
    }
    async fn claim_nonce(&self, nonce: &str, at_ms: i64, keep_ms: i64) -> Result<bool> {
        forward!(self, claim_nonce(nonce, at_ms, keep_ms))
    }
    async fn put_mcp_session(&self, id: &str, state: &str, at_ms: i64, keep_ms: i64) -> Result<()> {
        forward!(self, put_mcp_session(id, state, at_ms, keep_ms))
    }
    async fn mcp_session(&self, id: &str, since_ms: i64) -> Result<Option<String>> {
        forward!(self, mcp_session(id, since_ms))
    }
    async fn drop_mcp_session(&self, id: &str) -> Result<()> {
        forward!(self, drop_mcp_session(id))
    }
    async fn set_mcp_session_level(&self, id: &str, level: &str) -> Result<()> {
        forward!(self, set_mcp_session_level(id, level))
    }
    async fn mcp_session_level(&self, id: &str) -> Result<Option<String>> {
        forward!(self, mcp_session_level(id))
    }
}

impl crate::UpstreamStore for Registry {
    async fn pins(&self, server: &str) -> Result<Vec<crate::Pin>> {
        forward!(self, pins(server))
    }
    async fn set_pin(
        &self,
        server: &str,
        tool: &str,
        pinned: Option<&serde_json::Value>,
        by: &str,
    ) -> Result<()> {
        forward!(self, set_pin(server, tool, pinned, by))
    }
    async fn changes(&self, server: Option<&str>) -> Result<Vec<crate::UpstreamChange>> {
        forward!(self, changes(server))
    }
    async fn put_change(&self, change: &crate::UpstreamChange) -> Result<()> {
        forward!(self, put_change(change))
    }
    async fn drop_change(&self, server: &str, tool: &str) -> Result<()> {
        forward!(self, drop_change(server, tool))
    }
    async fn connection(&self, server: &str, subject: &str) -> Result<Option<String>> {
        forward!(self, connection(server, subject))
    }
    async fn put_connection(&self, server: &str, subject: &str, credentials: &str) -> Result<()> {
        forward!(self, put_connection(server, subject, credentials))
    }
    async fn drop_connection(&self, server: &str, subject: &str) -> Result<bool> {
        forward!(self, drop_connection(server, subject))
    }
    async fn connections(&self, server: Option<&str>) -> Result<Vec<crate::Connection>> {
        forward!(self, connections(server))
    }
}

/// Forwards one generic [`crate::documents::Documents`] method.
macro_rules! forward_doc {
    ($self:ident, $method:ident::<$d:ty> ( $($arg:expr),* )) => {
        match $self {
            Registry::Sqlite(s) => s.$method::<$d>($($arg),*).await,
            Registry::Postgres(s) => s.$method::<$d>($($arg),*).await,
        }
    };
}

impl crate::documents::Documents for Registry {
    async fn create_doc<D: Document>(&self, doc: &D, change: Change<'_>) -> Result<D::Record> {
        forward_doc!(self, create_doc::<D>(doc, change))
    }
    async fn update_doc<D: Document>(
        &self,
        doc: &D,
        base_version: u64,
        change: Change<'_>,
    ) -> Result<D::Record> {
        forward_doc!(self, update_doc::<D>(doc, base_version, change))
    }
    async fn get_doc<D: Document>(&self, name: &str) -> Result<D::Record> {
        forward_doc!(self, get_doc::<D>(name))
    }
    async fn docs<D: Document>(&self) -> Result<Vec<D::Record>> {
        forward_doc!(self, docs::<D>())
    }
    async fn doc_version<D: Document>(&self, name: &str, version: u64) -> Result<VersionRecord> {
        forward_doc!(self, doc_version::<D>(name, version))
    }
    async fn doc_history<D: Document>(&self, name: &str) -> Result<Vec<VersionRecord>> {
        forward_doc!(self, doc_history::<D>(name))
    }
    async fn delete_doc<D: Document>(&self, name: &str, change: Change<'_>) -> Result<()> {
        forward_doc!(self, delete_doc::<D>(name, change))
    }
}
