//! [`Registry`]: either backend, chosen by the address it is opened with, behind the one
//! [`Store`] trait.

use toolsmith_core::Tool;

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

    /// The backend's name, for logs.
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
}
