//! `toolsets` — the registry's toolsets: list them with their member counts, or show one
//! with its definition and each member with why it is in.

use serde_json::json;
use toolsmith_store::{StoreExt, ToolsetStore};

use super::registry::registry;
use super::*;

#[derive(Debug, Subcommand)]
pub enum ToolsetsCommand {
    /// Every toolset: its member count, discovery mode and description.
    List {
        #[command(flatten)]
        args: ToolsetsArgs,
    },
    /// One toolset: its definition and its members now, each with why it is in.
    Show {
        name: String,
        #[command(flatten)]
        args: ToolsetsArgs,
    },
}

#[derive(Debug, clap::Args, Default)]
pub struct ToolsetsArgs {
    #[command(flatten)]
    db: DbArg,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub(super) fn run(command: Option<ToolsetsCommand>, args: ToolsetsArgs) -> Result<ExitCode> {
    match command.unwrap_or(ToolsetsCommand::List { args }) {
        ToolsetsCommand::List { args } => list(args),
        ToolsetsCommand::Show { name, args } => show(name, args),
    }
}

/// Every enabled tool of the registry.
async fn tools(store: &Registry) -> Result<Vec<toolsmith_core::Tool>> {
    Ok(store
        .search_all(toolsmith_store::Query::default())
        .await?
        .into_iter()
        .map(|r| r.tool)
        .collect())
}

fn list(args: ToolsetsArgs) -> Result<ExitCode> {
    registry(&args.db, |store, _| async move {
        let tools = tools(&store).await?;
        let sets = store.toolsets().await?;
        let rows: Vec<Value> = sets
            .iter()
            .map(|r| {
                json!({
                    "name": r.toolset.name,
                    "version": r.version,
                    "members": tools.iter().filter(|t| r.toolset.admits(t)).count(),
                    "discovery": r.toolset.discovery.as_str(),
                    "description": r.toolset.description,
                })
            })
            .collect();
        if args.json {
            outln!("{}", serde_json::to_string_pretty(&rows)?);
        } else if rows.is_empty() {
            outln!(
                "no toolsets (declare them under `toolsets:` in a catalog, or POST /v1/toolsets)"
            );
        } else {
            for r in &rows {
                outln!(
                    "{:<24} {:>5} member(s)  {:<6}  v{}  {}",
                    r["name"].as_str().unwrap_or_default(),
                    r["members"],
                    r["discovery"].as_str().unwrap_or_default(),
                    r["version"],
                    r["description"].as_str().unwrap_or_default()
                );
            }
        }
        Ok(ExitCode::SUCCESS)
    })
}

fn show(name: String, args: ToolsetsArgs) -> Result<ExitCode> {
    registry(&args.db, |store, _| async move {
        let record = match store.get_toolset(&name).await {
            Ok(r) => r,
            Err(toolsmith_store::StoreError::NotFound(_)) => {
                let known: Vec<String> = store
                    .toolsets()
                    .await?
                    .into_iter()
                    .map(|r| r.toolset.name)
                    .collect();
                bail!(
                    "no toolset {name:?}; the toolsets are: {}",
                    if known.is_empty() {
                        "(none)".into()
                    } else {
                        known.join(", ")
                    }
                );
            }
            Err(e) => return Err(e.into()),
        };
        let members: Vec<Value> = tools(&store)
            .await?
            .iter()
            .filter_map(|t| {
                let why = record.toolset.why(t)?;
                Some(json!({"name": t.name.as_str(), "why": why}))
            })
            .collect();
        if args.json {
            let out = json!({
                "name": record.toolset.name,
                "version": record.version,
                "definition": record.toolset.to_catalog_value(),
                "members": members,
            });
            outln!("{}", serde_json::to_string_pretty(&out)?);
            return Ok(ExitCode::SUCCESS);
        }
        outln!(
            "{} (version {}, by {})",
            record.toolset.name,
            record.version,
            record.updated_by
        );
        outln!(
            "{}",
            serde_yaml_ng::to_string(&record.toolset.to_catalog_value())?.trim_end()
        );
        outln!("{} member(s):", members.len());
        for m in &members {
            outln!(
                "  {:<32} {}",
                m["name"].as_str().unwrap_or_default(),
                m["why"].as_str().unwrap_or_default()
            );
        }
        Ok(ExitCode::SUCCESS)
    })
}
