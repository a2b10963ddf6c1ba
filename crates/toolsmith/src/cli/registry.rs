//! The registry commands: import, history, runs, diff, restore, enable and disable.

use super::*;

pub(super) fn import(file: PathBuf, db: &DbArg, prune: bool, json: bool) -> Result<ExitCode> {
    registry(db, |store, author| async move {
        let catalog = load_catalog(&file)?;
        let (report, held) =
            toolsmith_store::held::import_catalog(&store, &catalog, prune, &author).await?;
        let servers = toolsmith_store::import_servers(&store, &catalog.servers, &author).await?;
        let toolsets = toolsmith_store::import_toolsets(&store, &catalog.toolsets, &author).await?;
        output::import_report(&file, &report, json);
        if !json {
            output::say_held(&held, false);
        }
        for warning in crate::output::guardrail_warnings(&catalog.tools) {
            eprintln!("  warning: {warning}");
        }
        if !catalog.servers.is_empty() && !json {
            outln!(
                "MCP servers: {} created, {} updated, {} unchanged",
                servers.created.len(),
                servers.updated.len(),
                servers.unchanged.len()
            );
            for why in &servers.skipped {
                outln!("  skipped {why}");
            }
        }
        if !catalog.toolsets.is_empty() && !json {
            outln!(
                "toolsets: {} created, {} updated, {} unchanged",
                toolsets.created.len(),
                toolsets.updated.len(),
                toolsets.unchanged.len()
            );
        }
        Ok(ExitCode::SUCCESS)
    })
}

pub(super) fn history(name: String, db: &DbArg, json: bool) -> Result<ExitCode> {
    registry(db, |store, _| async move {
        output::history(&store.history(&name).await?, json);
        Ok(ExitCode::SUCCESS)
    })
}

pub(super) fn restore(name: String, version: u64, db: &DbArg) -> Result<ExitCode> {
    registry(db, |store, author| async move {
        let r = store
            .restore(
                &name,
                version,
                Change {
                    author: &author,
                    summary: "",
                },
            )
            .await?;
        outln!(
            "{name}: version {version} restored as version {}",
            r.version
        );
        Ok(ExitCode::SUCCESS)
    })
}

pub(super) fn runs(
    db: &DbArg,
    tool: Option<String>,
    kind: Option<String>,
    call_id: Option<String>,
    limit: usize,
    json: bool,
) -> Result<ExitCode> {
    registry(db, |store, _| async move {
        let page = store
            .runs(&RunQuery {
                tool,
                kind,
                call_id,
                limit,
                ..RunQuery::default()
            })
            .await?;
        output::runs(&page.items, json);
        Ok(ExitCode::SUCCESS)
    })
}

pub(super) fn diff(
    name: String,
    from: u64,
    to: Option<u64>,
    db: &DbArg,
    json: bool,
) -> Result<ExitCode> {
    registry(db, |store, _| async move {
        let to = match to {
            Some(v) => v,
            None => store.get(&name).await?.version,
        };
        let (a, b) = (
            store.version(&name, from).await?,
            store.version(&name, to).await?,
        );
        let changes = toolsmith_store::diff_definitions(&a.definition, &b.definition)?;
        if json {
            outln!(
                "{}",
                serde_json::json!({"from": from, "to": to, "changes": changes})
            );
        } else if changes.is_empty() {
            outln!("{name}: versions {from} and {to} are the same");
        } else {
            outln!("{name}: version {from} → {to}");
            for c in changes {
                outln!("  {}: {} → {}", c.path, c.from, c.to);
            }
        }
        Ok(ExitCode::SUCCESS)
    })
}

pub(super) fn set_enabled(name: String, db: DbArg, enabled: bool) -> Result<ExitCode> {
    registry(&db, |store, author| async move {
        let r = store
            .set_enabled(
                &name,
                enabled,
                Change {
                    author: &author,
                    summary: "",
                },
            )
            .await?;
        outln!(
            "{name}: {} (version {})",
            if enabled { "enabled" } else { "disabled" },
            r.version
        );
        Ok(ExitCode::SUCCESS)
    })
}

/// Opens the registry and runs `f` with it and the author's name.
pub(super) fn registry<F, Fut>(db: &DbArg, f: F) -> Result<ExitCode>
where
    F: FnOnce(Registry, String) -> Fut,
    Fut: std::future::Future<Output = Result<ExitCode>>,
{
    let author = db.author("cli");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    rt.block_on(async move { f(db.open().await?, author).await })
}
