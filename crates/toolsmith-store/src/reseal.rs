//! Sealing a registry's secrets in place (SPEC §13): when a registry written before secrets
//! were encrypted is first opened with a key (every plain secret config value sealed), and
//! when the key is rotated (each opened with the old key and sealed with the new). One
//! transaction over every table holding definitions — `tools`, `tool_versions`,
//! `mcp_servers`, `mcp_server_versions`, `upstream_changes`, `upstream_connections` — then, on SQLite, `VACUUM` and a
//! truncating WAL checkpoint so no plain bytes stay behind in free pages or the WAL; on
//! PostgreSQL, `VACUUM FULL` of those tables.

use serde_json::Value;

use crate::secrets::{self, SecretKey};
use crate::{Result, StoreError};

/// What a pass did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Resealed {
    /// Definitions rewritten.
    pub definitions: usize,
    /// Secret values sealed in them.
    pub secrets: usize,
}

/// `text` (a stored definition) opened with `from` and sealed with `to`; `None` when it is
/// unchanged (nothing secret in it, or already sealed with `to` and not rotating).
pub(crate) fn reseal_text(
    text: &str,
    from: Option<&SecretKey>,
    to: &SecretKey,
) -> Result<Option<(String, usize)>> {
    let mut v: Value =
        serde_json::from_str(text).map_err(|e| StoreError::Invalid(e.to_string()))?;
    let before = v.clone();
    secrets::open_with(&mut v, from)?;
    let sealed = secrets::seal_with(&mut v, to);
    Ok((v != before || sealed > 0).then(|| (v.to_string(), sealed)))
}

/// How the key check reads once sealed with `key`.
pub(crate) fn key_check(key: &SecretKey) -> String {
    key.seal_text(secrets::CHECK)
}

/// The tables holding definitions: (table, key columns, the definition's column).
pub(crate) const TABLES: &[(&str, &[&str], &str)] = &[
    ("tools", &["name"], "definition"),
    ("tool_versions", &["name", "version"], "definition"),
    ("mcp_servers", &["name"], "definition"),
    ("mcp_server_versions", &["name", "version"], "definition"),
    ("upstream_changes", &["server", "tool"], "pinned"),
    (
        "upstream_connections",
        &["server", "subject"],
        "credentials",
    ),
];

/// `reseal` and `key_check` for a backend; expanded in `sqlite` and `postgres` (their
/// `pool`, `begin` and after-pass compaction differ only in the statements).
macro_rules! reseal_methods {
    () => {
        /// The sealed key check, if the registry's secrets were ever sealed.
        pub async fn stored_key_check(&self) -> crate::Result<Option<String>> {
            Ok(
                sqlx::query_scalar("SELECT key_check FROM registry_secrets WHERE id = 1")
                    .fetch_optional(&self.pool)
                    .await?,
            )
        }

        /// Opens every definition's secrets with `from` (plain ones need none) and seals them
        /// with `to`, in one transaction, recording `to`'s key check; then compacts.
        pub async fn reseal(
            &self,
            from: Option<&crate::secrets::SecretKey>,
            to: &crate::secrets::SecretKey,
        ) -> crate::Result<crate::reseal::Resealed> {
            use sqlx::Row;
            let mut done = crate::reseal::Resealed::default();
            let mut tx = self.begin().await?;
            for (table, keys, column) in crate::reseal::TABLES {
                let select = format!(
                    "SELECT {}, {column} FROM {table} WHERE {column} IS NOT NULL",
                    keys.iter()
                        .map(|k| format!("CAST({k} AS TEXT) AS {k}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                let rows = sqlx::query(sqlx::AssertSqlSafe(select))
                    .fetch_all(&mut *tx)
                    .await?;
                let condition = keys
                    .iter()
                    .enumerate()
                    .map(|(i, k)| format!("CAST({k} AS TEXT) = ${}", i + 2))
                    .collect::<Vec<_>>()
                    .join(" AND ");
                let update = format!("UPDATE {table} SET {column} = $1 WHERE {condition}");
                for row in rows {
                    let text: String = row.try_get(*column)?;
                    let Some((sealed, n)) = crate::reseal::reseal_text(&text, from, to)? else {
                        continue;
                    };
                    let mut q = sqlx::query(sqlx::AssertSqlSafe(update.clone())).bind(sealed);
                    for k in *keys {
                        q = q.bind(row.try_get::<String, _>(*k)?);
                    }
                    q.execute(&mut *tx).await?;
                    done.definitions += 1;
                    done.secrets += n;
                }
            }
            sqlx::query("DELETE FROM registry_secrets")
                .execute(&mut *tx)
                .await?;
            sqlx::query("INSERT INTO registry_secrets (id, key_check) VALUES (1, $1)")
                .bind(crate::reseal::key_check(to))
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            self.compact().await?;
            Ok(done)
        }
    };
}

pub(crate) use reseal_methods;
