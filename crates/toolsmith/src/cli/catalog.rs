//! The catalog commands: check, list, show and export.

use super::*;

pub(super) fn check(file: &std::path::Path, json: bool) -> Result<ExitCode> {
    let catalog = load_catalog(file)?;
    let mut warnings = sandbox_warnings(&catalog);
    warnings.extend(crate::output::guardrail_warnings(&catalog.tools));
    output::check_summary(file, &catalog, &warnings, json);
    Ok(ExitCode::SUCCESS)
}

/// Tools whose program (a command's first word, a script's interpreter), found on this
/// machine's PATH, their sandbox could not read — they would fail with "Permission denied"
/// (a pyenv shim under `$HOME`, a virtual environment outside the system folders). Judged
/// with the current folder as the workspace, as `serve` run here would.
fn sandbox_warnings(catalog: &toolsmith_core::Catalog) -> Vec<String> {
    let Ok(here) = std::env::current_dir() else {
        return Vec::new();
    };
    let sandboxes = toolsmith_exec::sandbox::Sandboxes::new(Default::default(), &here, None, &[]);
    let path = std::env::var("PATH").unwrap_or_default();
    catalog
        .tools
        .iter()
        .filter_map(|t| {
            let program = t.executor.program().filter(|p| !p.contains('{'))?;
            let hint = sandboxes.program_hint(t.sandbox.as_ref(), program, &path)?;
            Some(format!("tool `{}`: {hint}", t.name))
        })
        .collect()
}

pub(super) fn list(catalog: &CatalogArg, json: bool) -> Result<ExitCode> {
    let catalog = load_catalog(&catalog.catalog)?;
    output::list(&catalog, json);
    Ok(ExitCode::SUCCESS)
}

pub(super) fn show(name: &str, catalog: &CatalogArg, json: bool) -> Result<ExitCode> {
    let catalog = load_catalog(&catalog.catalog)?;
    let Some(tool) = catalog.get(name) else {
        bail!("{}", unknown_tool(&catalog, name))
    };
    output::show(tool, json);
    Ok(ExitCode::SUCCESS)
}

pub(super) fn export(
    catalog: &CatalogArg,
    format: Format,
    strict: bool,
    tags: &[String],
) -> Result<ExitCode> {
    let catalog = load_catalog(&catalog.catalog)?;
    let selected = catalog
        .tools
        .iter()
        .filter(|t| tags.is_empty() || t.tags.iter().any(|tag| tags.contains(tag)));
    let selected: Vec<_> = selected.collect();
    out!(
        "{}",
        render(selected.iter().copied(), format, RenderOptions { strict }).to_text()
    );
    if strict {
        for why in selected
            .iter()
            .filter_map(|t| toolsmith_core::render::strict_problem(t))
        {
            eprintln!("{why}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) fn unknown_tool(catalog: &toolsmith_core::Catalog, name: &str) -> String {
    let names: Vec<&str> = catalog.tools.iter().map(|t| t.name.as_str()).collect();
    format!(
        "no tool named {name:?} in the catalog (tools: {})",
        names.join(", ")
    )
}
