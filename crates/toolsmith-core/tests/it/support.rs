//! Shared helpers: an in-memory catalog source and one-line loaders.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use toolsmith_core::catalog::{self, Catalog, CatalogSource};
use toolsmith_core::{CompiledTool, Tool};

/// Files and environment variables held in memory.
#[derive(Default)]
pub struct MemSource {
    pub files: HashMap<String, String>,
    pub env: HashMap<String, String>,
}

impl MemSource {
    pub fn new(files: &[(&str, &str)]) -> Self {
        Self {
            files: files
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            env: HashMap::new(),
        }
    }

    pub fn with_env(mut self, name: &str, value: &str) -> Self {
        self.env.insert(name.into(), value.into());
        self
    }
}

impl CatalogSource for MemSource {
    fn read(&self, path: &str) -> Result<String, toolsmith_core::catalog::ReadError> {
        self.files
            .get(path)
            .cloned()
            .ok_or_else(|| toolsmith_core::catalog::ReadError::Io {
                path: path.to_owned(),
                error: "no such file".into(),
            })
    }
    fn var(&self, name: &str) -> Option<String> {
        self.env.get(name).cloned()
    }
}

/// Files under a real folder (for the shipped examples).
pub struct DirSource(pub PathBuf);

impl CatalogSource for DirSource {
    fn read(&self, path: &str) -> Result<String, toolsmith_core::catalog::ReadError> {
        std::fs::read_to_string(self.0.join(path)).map_err(|e| {
            toolsmith_core::catalog::ReadError::Io {
                path: path.to_owned(),
                error: e.to_string(),
            }
        })
    }
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
}

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// GitHub's REST API (npm `@octokit/openapi`, installed by `npm ci` in
/// crates/toolsmith/tests/upstream) imported as tools, every operation one.
pub fn github_tools() -> Vec<Tool> {
    let path = repo_root().join(
        "crates/toolsmith/tests/upstream/node_modules/@octokit/openapi/generated/api.github.com.json",
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run `npm ci` in crates/toolsmith/tests/upstream",
            path.display()
        )
    });
    let doc = toolsmith_core::openapi::parse_document(&text).expect("GitHub's document parses");
    let src = MemSource::default();
    let imported =
        toolsmith_core::openapi::import(&doc, &Default::default(), &src).expect("imports");
    let tools = toolsmith_core::openapi::tools(&imported, &src).expect("tools");
    assert!(tools.len() > 1000, "{}", tools.len());
    tools
}

/// Every catalog under `examples/` (entry files only: those not imported by another).
pub fn example_catalogs() -> Vec<(String, Catalog)> {
    let dir = repo_root().join("examples");
    let mut out = Vec::new();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("examples/ exists")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml") || n.ends_with(".json"))
        .collect();
    names.sort();
    for name in names {
        let catalog = catalog::load(&name, &DirSource(dir.clone()))
            .unwrap_or_else(|e| panic!("examples/{name} should load:\n{e}"));
        out.push((name, catalog));
    }
    out
}

/// Loads a one-file catalog from text; panics with the errors if it does not load.
pub fn load(yaml: &str) -> Catalog {
    catalog::load("catalog.yaml", &MemSource::new(&[("catalog.yaml", yaml)]))
        .unwrap_or_else(|e| panic!("catalog should load:\n{e}"))
}

/// The errors of a one-file catalog, one per line, without the file name.
pub fn errors(yaml: &str) -> String {
    match catalog::load("catalog.yaml", &MemSource::new(&[("catalog.yaml", yaml)])) {
        Ok(_) => "loaded without errors".into(),
        Err(e) => {
            e.0.iter()
                .map(|e| format!("{}: {}\n", e.path, e.message))
                .collect()
        }
    }
}

/// The only tool of a catalog whose `tools:` list is `tools_yaml`.
pub fn tool(tool_yaml: &str) -> Tool {
    let catalog = load(&format!("tools:\n{}", indent(tool_yaml)));
    assert_eq!(catalog.tools.len(), 1);
    catalog.tools.into_iter().next().expect("one tool")
}

pub fn compiled(tool_yaml: &str) -> CompiledTool {
    CompiledTool::new(tool(tool_yaml), 1).expect("compiles")
}

/// Turns a tool's YAML mapping into a list item.
fn indent(tool_yaml: &str) -> String {
    let mut out = String::new();
    for (i, line) in tool_yaml.trim_matches('\n').lines().enumerate() {
        out.push_str(if i == 0 { "  - " } else { "    " });
        out.push_str(line);
        out.push('\n');
    }
    out
}

pub fn json(s: &str) -> Value {
    serde_json::from_str(s).expect("valid JSON in test")
}
