//! Catalog import: what sync does with each tool (create, update, leave unchanged), and the
//! report of it.

use serde_json::Value;
use toolsmith_core::Tool;
use toolsmith_core::model::Secrets;

use crate::{ImportReport, definition_to_tool, same_definition};

/// What sync does with one tool, given the stored `(version, deleted, definition)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SyncAction {
    /// Write `version`; `exists` when a (deleted) row is there to update.
    Create {
        version: u64,
        exists: bool,
    },
    Update {
        version: u64,
    },
    Unchanged,
}

pub(crate) fn sync_action(stored: Option<(u64, bool, &str)>, tool: &Tool) -> SyncAction {
    match stored {
        None => SyncAction::Create {
            version: 1,
            exists: false,
        },
        Some((version, true, _)) => SyncAction::Create {
            version: version + 1,
            exists: true,
        },
        Some((version, false, definition)) => {
            let new = tool.to_catalog_value(Secrets::Keep);
            // Compared opened: a sealed secret differs in every write (a random nonce).
            let old: Option<Value> = serde_json::from_str(definition)
                .ok()
                .and_then(|v| crate::secrets::open(v).ok());
            // Equal as stored, or equal once the stored form is read back (a definition
            // stored by an older toolsmith may spell defaults differently).
            let same = old.as_ref() == Some(&new)
                || old
                    .as_ref()
                    .and_then(|v| definition_to_tool(v).ok())
                    .is_some_and(|t| same_definition(&t, tool));
            match same {
                true => SyncAction::Unchanged,
                false => SyncAction::Update {
                    version: version + 1,
                },
            }
        }
    }
}

impl ImportReport {
    pub(crate) fn note(&mut self, action: SyncAction, name: &str) {
        let list = match action {
            SyncAction::Create { .. } => &mut self.created,
            SyncAction::Update { .. } => &mut self.updated,
            SyncAction::Unchanged => &mut self.unchanged,
        };
        list.push(name.to_owned());
    }

    pub(crate) fn extend(&mut self, other: ImportReport) {
        self.created.extend(other.created);
        self.updated.extend(other.updated);
        self.unchanged.extend(other.unchanged);
        self.deleted.extend(other.deleted);
        self.skipped.extend(other.skipped);
    }
}
