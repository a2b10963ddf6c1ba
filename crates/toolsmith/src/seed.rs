//! A catalog put into the registry a gateway serves: `mcp --catalog` and `chat` (without
//! `--db`) serve a catalog alone from a private registry that lives as long as the command
//! ([`private_registry`]); `mcp --catalog --db` imports it into that registry first. Servers
//! and toolsets go in before the tools, so the gateway's federation starts the servers and
//! the view knows the toolsets; changes an import holds for approval are said on stderr.

use std::path::Path;

use anyhow::{Context, Result};
use toolsmith_core::Catalog;
use toolsmith_store::Registry;

/// Imports `catalog` (read from `file`) into `store`, as `author`.
pub async fn import_catalog(
    store: &Registry,
    file: &Path,
    catalog: &Catalog,
    author: &str,
) -> Result<()> {
    let servers = toolsmith_store::import_servers(store, &catalog.servers, author).await?;
    for why in &servers.skipped {
        say!("skipped {why}");
    }
    toolsmith_store::import_toolsets(store, &catalog.toolsets, author).await?;
    let (r, held) = toolsmith_store::held::import_catalog(store, catalog, false, author).await?;
    crate::output::say_held(&held, true);
    tracing::info!(
        "imported {}: {} created, {} updated, {} unchanged",
        file.display(),
        r.created.len(),
        r.updated.len(),
        r.unchanged.len()
    );
    Ok(())
}

/// A registry of its own in a temporary folder (removed when the folder is dropped), with
/// `catalog` imported.
pub async fn private_registry(
    file: &Path,
    catalog: &Catalog,
    secret_key_file: Option<&Path>,
    author: &str,
) -> Result<(Registry, tempfile::TempDir)> {
    let dir = tempfile::tempdir().context("creating a temporary registry")?;
    let address = dir.path().join("registry.db").display().to_string();
    let store = crate::secret_key::open_registry(&address, secret_key_file).await?;
    import_catalog(&store, file, catalog, author).await?;
    Ok((store, dir))
}
