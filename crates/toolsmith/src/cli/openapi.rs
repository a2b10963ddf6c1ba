//! `import --openapi`: an OpenAPI 3.0/3.1 document (a file or an http(s) URL) → `http`
//! tools in the registry, or printed as a catalog (`--print`). What is not imported, and
//! every simplification, is reported with its reason.

use std::collections::BTreeMap;
use std::time::Instant;

use clap::Args;
use serde_json::json;
use toolsmith_core::openapi::{self, Imported, Options};

use super::registry::registry;
use super::*;

#[derive(Debug, Args, Default)]
pub struct OpenapiArgs {
    /// The URL the operations' paths are appended to (default: the document's first server).
    #[arg(long, value_name = "URL", requires = "openapi")]
    pub base_url: Option<String>,
    /// Only operations with this tag (repeat for several; with --operation and --path, any
    /// of them selects).
    #[arg(long = "tag", value_name = "TAG", requires = "openapi")]
    pub tags: Vec<String>,
    /// Only the operation with this operationId (repeatable).
    #[arg(long = "operation", value_name = "ID", requires = "openapi")]
    pub operations: Vec<String>,
    /// Only operations whose path matches this glob, e.g. '/repos/*' (repeatable).
    #[arg(long = "path", value_name = "GLOB", requires = "openapi")]
    pub paths: Vec<String>,
    /// Leave out operations with this tag (repeatable).
    #[arg(long = "exclude-tag", value_name = "TAG", requires = "openapi")]
    pub exclude_tags: Vec<String>,
    /// Leave out the operation with this operationId (repeatable).
    #[arg(long = "exclude-operation", value_name = "ID", requires = "openapi")]
    pub exclude_operations: Vec<String>,
    /// Leave out operations whose path matches this glob (repeatable).
    #[arg(long = "exclude-path", value_name = "GLOB", requires = "openapi")]
    pub exclude_paths: Vec<String>,
    /// Put before every tool name, e.g. `gh_`.
    #[arg(long, value_name = "PREFIX", default_value = "", requires = "openapi")]
    pub prefix: String,
    /// The credential of a security scheme of the document, from an environment variable:
    /// SCHEME=VAR (bearer token, OAuth token or API key) or SCHEME=USER_VAR:PASSWORD_VAR
    /// (basic). Stored as a secret config field.
    #[arg(long = "auth", value_name = "SCHEME=VAR", requires = "openapi")]
    pub auth: Vec<String>,
    /// Import deprecated operations too.
    #[arg(long, requires = "openapi")]
    pub include_deprecated: bool,
    /// Declare this operation safe whatever its method (repeatable).
    #[arg(long = "safe", value_name = "ID", requires = "openapi")]
    pub safe: Vec<String>,
    /// Declare this operation dangerous whatever its method (repeatable).
    #[arg(long = "dangerous", value_name = "ID", requires = "openapi")]
    pub dangerous: Vec<String>,
    /// What a changed operation does to its tool on a re-import: `accept` saves it as the
    /// next version; `hold` keeps the served version and holds the change until approved
    /// (`toolsmith servers changes|approve|reject openapi:SOURCE`).
    #[arg(long, value_name = "accept|hold", default_value = "accept", value_parser = ["accept", "hold"], requires = "openapi")]
    pub on_change: String,
    /// The name held changes are kept under (`openapi:SOURCE`); default: the prefix without
    /// its trailing `_`, else the document's title.
    #[arg(long, value_name = "SOURCE", requires = "openapi")]
    pub source: Option<String>,
}

impl OpenapiArgs {
    fn options(&self, source_url: Option<String>) -> Result<Options> {
        let mut auth = BTreeMap::new();
        for a in &self.auth {
            let Some((scheme, var)) = a.split_once('=') else {
                bail!("--auth {a:?}: expected SCHEME=VAR (or SCHEME=USER_VAR:PASSWORD_VAR)");
            };
            auth.insert(scheme.to_owned(), var.to_owned());
        }
        Ok(Options {
            base_url: self.base_url.clone(),
            source_url,
            tags: self.tags.clone(),
            operations: self.operations.clone(),
            paths: self.paths.clone(),
            exclude_tags: self.exclude_tags.clone(),
            exclude_operations: self.exclude_operations.clone(),
            exclude_paths: self.exclude_paths.clone(),
            prefix: self.prefix.clone(),
            include_deprecated: self.include_deprecated,
            auth,
            safe: self.safe.clone(),
            dangerous: self.dangerous.clone(),
        })
    }
}

/// The text of a document named by a path or an http(s) URL.
pub(super) fn fetch(spec: &str) -> Result<(String, Option<String>)> {
    if spec.starts_with("http://") || spec.starts_with("https://") {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(std::time::Duration::from_secs(60)))
            .build()
            .into();
        let mut response = agent
            .get(spec)
            .call()
            .with_context(|| format!("fetching {spec}"))?;
        let text = response
            .body_mut()
            .with_config()
            .limit(256 * 1024 * 1024)
            .read_to_string()
            .with_context(|| format!("reading {spec}"))?;
        return Ok((text, Some(spec.to_owned())));
    }
    let text = std::fs::read_to_string(spec).with_context(|| format!("reading {spec}"))?;
    Ok((text, None))
}

/// Environment variables as `${NAME}` placeholders: a printed catalog keeps references.
struct Placeholders;

impl toolsmith_core::CatalogSource for Placeholders {
    fn read(&self, path: &str) -> std::result::Result<String, toolsmith_core::catalog::ReadError> {
        Err(toolsmith_core::catalog::ReadError::NoFiles {
            path: path.to_owned(),
            why: "an imported document reads no files",
        })
    }
    fn var(&self, name: &str) -> Option<String> {
        Some(format!("${{{name}}}"))
    }
}

pub(super) fn import(
    spec: &str,
    args: &OpenapiArgs,
    print: bool,
    db: &DbArg,
    json: bool,
) -> Result<ExitCode> {
    let started = Instant::now();
    let (text, source_url) = fetch(spec)?;
    let doc = openapi::parse_document(&text).map_err(|e| anyhow::anyhow!("{spec}: {e}"))?;
    let opts = args.options(source_url)?;
    if !print {
        for var in opts.auth.values().flat_map(|v| v.split(':')) {
            if std::env::var_os(var).is_none() {
                bail!("--auth names the environment variable {var}, which is not set");
            }
        }
    }
    let src: &dyn toolsmith_core::CatalogSource = if print {
        &Placeholders
    } else {
        &crate::source::EnvSource
    };
    let imported = openapi::import(&doc, &opts, src).map_err(|e| anyhow::anyhow!("{spec}: {e}"))?;
    let took = started.elapsed();
    if print {
        report(spec, &imported, None, took, json, true);
        out!(
            "{}",
            serde_yaml_ng::to_string(&json!({"tools": imported.tools})).unwrap_or_default()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let tools = openapi::tools(&imported, src).map_err(|e| anyhow::anyhow!("{spec}: {e}"))?;
    for warning in crate::output::guardrail_warnings(&tools) {
        eprintln!("  warning: {warning}");
    }
    let spec = spec.to_owned();
    let hold = args.on_change == "hold";
    let source =
        toolsmith_store::held::source_for(args.source.as_deref(), &args.prefix, &imported.title);
    let mut imported = imported;
    registry(db, |store, author| async move {
        // A name held by a tool the document did not make is never taken over.
        let (tools, taken) = toolsmith_store::held::claimable(&store, tools, &source).await?;
        imported.skipped.extend(taken);
        if hold {
            let r = toolsmith_store::held::import_holding(&store, &tools, &source, &author).await?;
            let stored = json!({"source": source, "created": r.created, "unchanged": r.unchanged, "held": r.held, "rejected": r.rejected});
            report(
                &spec,
                &imported,
                Some(stored),
                started.elapsed(),
                json,
                false,
            );
            if !json {
                outln!(
                    "  registry: {} created, {} unchanged, {} held as {source} (see `toolsmith servers changes {source}`){}",
                    r.created.len(),
                    r.unchanged.len(),
                    r.held.len(),
                    if r.rejected.is_empty() {
                        String::new()
                    } else {
                        format!(", {} still rejected", r.rejected.len())
                    }
                );
            }
            return Ok(ExitCode::SUCCESS);
        }
        let r = toolsmith_store::held::import_document(&store, &tools, &source, &author).await?;
        let stored = serde_json::to_value(&r).unwrap_or_default();
        report(
            &spec,
            &imported,
            Some(stored),
            started.elapsed(),
            json,
            false,
        );
        Ok(ExitCode::SUCCESS)
    })
}

/// What was imported, skipped and simplified: on stdout (or as JSON), or on stderr when
/// stdout carries the printed catalog.
fn report(
    spec: &str,
    i: &Imported,
    stored: Option<serde_json::Value>,
    took: std::time::Duration,
    json: bool,
    to_stderr: bool,
) {
    let say = |line: String| {
        if to_stderr {
            eprintln!("{line}");
        } else {
            outln!("{line}");
        }
    };
    if json {
        let names: Vec<&str> = i.tools.iter().filter_map(|t| t["name"].as_str()).collect();
        say(json!({
            "title": i.title,
            "version": i.version,
            "tools": names,
            "skipped": i.skipped,
            "notes": i.notes,
            "filtered": i.filtered,
            "stored": stored,
            "seconds": took.as_secs_f64(),
        })
        .to_string());
        return;
    }
    say(format!(
        "{spec}: {} {}: {} tools, {} operations skipped, {} left out by filters ({:.2} s)",
        i.title,
        i.version,
        i.tools.len(),
        i.skipped.len(),
        i.filtered,
        took.as_secs_f64()
    ));
    if let Some(r) = stored.filter(|r| r.get("updated").is_some()) {
        let n = |k: &str| r[k].as_array().map_or(0, Vec::len);
        say(format!(
            "  registry: {} created, {} updated, {} unchanged",
            n("created"),
            n("updated"),
            n("unchanged")
        ));
    }
    for s in &i.skipped {
        say(format!(
            "  skipped {} ({} {}): {}",
            s.operation, s.method, s.path, s.reason
        ));
    }
    for n in &i.notes {
        say(format!("  note {}: {}", n.tool, n.message));
    }
}
