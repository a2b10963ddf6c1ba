//! Toolsets in the registry (SPEC §14): their definitions, versioned like tools (an update
//! names the version it is based on; every version is kept). Membership is not stored: it
//! is computed from the definition against the tools of the moment.
//!
//! Toolsets are [`crate::documents`]: one implementation of their writes and reads with the
//! other versioned kinds.

use serde_json::Value;
use toolsmith_core::toolset::Toolset;

use crate::documents::{Documents, Meta};
use crate::{Change, Result, StoreError, VersionRecord};

/// A toolset as the registry holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolsetRecord {
    pub toolset: Toolset,
    pub version: u64,
    pub updated_at_ms: i64,
    pub updated_by: String,
}

/// The registry's operations on toolsets (versioned documents: writes are [`Documents`]'
/// own).
pub trait ToolsetStore: Documents {
    fn get_toolset(&self, name: &str) -> impl Future<Output = Result<ToolsetRecord>> + Send {
        self.get_doc::<Toolset>(name)
    }
    /// Every live toolset, by name.
    fn toolsets(&self) -> impl Future<Output = Result<Vec<ToolsetRecord>>> + Send {
        self.docs::<Toolset>()
    }
    /// Every version of `name`, oldest first.
    fn toolset_history(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Vec<VersionRecord>>> + Send {
        self.doc_history::<Toolset>(name)
    }
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
impl<S: Documents> ToolsetStore for S {}

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
                store.create_doc(set, change()).await?;
                report.created.push(set.name.clone());
            }
            Ok(current) if current.toolset == *set => report.unchanged.push(set.name.clone()),
            Ok(current) => {
                store.update_doc(set, current.version, change()).await?;
                report.updated.push(set.name.clone());
            }
            Err(e) => return Err(e),
        }
    }
    Ok(report)
}
