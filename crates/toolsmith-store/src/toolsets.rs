//! Toolsets in the registry (SPEC §14): their definitions, versioned like tools (an update
//! names the version it is based on; every version is kept). Membership is not stored: it
//! is computed from the definition against the tools of the moment.
//!
//! Toolsets are [`crate::documents`]: one implementation of their writes and reads with the
//! other versioned kinds.

use serde_json::Value;
use toolsmith_core::toolset::Toolset;

use crate::documents::{Documents, Meta};
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

impl crate::documents::Document for Toolset {
    const NOUN: &'static str = "toolset";
    const TABLE: &'static str = "toolsets";
    const VERSIONS: &'static str = "toolset_versions";
    type Record = ToolsetRecord;

    fn name(&self) -> &str {
        &self.name
    }

    fn stored(&self) -> String {
        self.to_catalog_value().to_string()
    }

    fn from_definition(definition: &Value) -> Result<Self> {
        toolsmith_core::catalog::parse_toolset(definition)
            .map_err(|e| StoreError::Invalid(e.to_string()))
    }

    fn record(self, meta: Meta) -> ToolsetRecord {
        ToolsetRecord {
            toolset: self,
            version: meta.version,
            updated_at_ms: meta.updated_at_ms,
            updated_by: meta.updated_by,
        }
    }
}

/// Toolsets are versioned documents: every store of them has these operations.
impl<S: Documents> ToolsetStore for S {
    async fn create_toolset(&self, toolset: &Toolset, change: Change<'_>) -> Result<ToolsetRecord> {
        self.create_doc(toolset, change).await
    }

    async fn update_toolset(
        &self,
        toolset: &Toolset,
        base_version: u64,
        change: Change<'_>,
    ) -> Result<ToolsetRecord> {
        self.update_doc(toolset, base_version, change).await
    }

    async fn get_toolset(&self, name: &str) -> Result<ToolsetRecord> {
        self.get_doc::<Toolset>(name).await
    }

    async fn toolsets(&self) -> Result<Vec<ToolsetRecord>> {
        self.docs::<Toolset>().await
    }

    async fn delete_toolset(&self, name: &str, change: Change<'_>) -> Result<()> {
        self.delete_doc::<Toolset>(name, change).await
    }

    async fn toolset_history(&self, name: &str) -> Result<Vec<ToolsetVersion>> {
        Ok(self
            .doc_history::<Toolset>(name)
            .await?
            .into_iter()
            .map(|v| ToolsetVersion {
                version: v.version,
                definition: v.definition,
                created_at_ms: v.created_at_ms,
                author: v.author,
                summary: v.summary,
            })
            .collect())
    }
}

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
