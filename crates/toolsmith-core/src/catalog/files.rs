//! Catalog files: each read once and parsed (YAML, or JSON by its extension; duplicate keys
//! and non-finite numbers refused), imports resolved inside the entry's folder without
//! cycles, defaults inherited by imports, and tool names checked across every file.

use super::defaults::read_defaults;
use super::*;

impl Loader<'_> {
    pub(super) fn file(&mut self, rel: &str, inherited: &Defaults, stack: &mut Vec<String>) {
        let mut e = Errs::new(rel);
        if stack.iter().any(|f| f == rel) {
            let cycle = [stack.as_slice(), &[rel.to_owned()]].concat().join(" → ");
            let importer = stack.last().cloned().unwrap_or_default();
            self.errors.push(CatalogError {
                file: importer,
                path: "imports".into(),
                message: format!("import cycle: {cycle}"),
            });
            return;
        }
        if self.files.iter().any(|f| f == rel) {
            return; // imported twice along different paths: its tools are already in
        }
        self.files.push(rel.to_owned());
        let text = match self.src.read(rel) {
            Ok(t) => t,
            Err(msg) => {
                e.push("", format!("cannot read the file: {msg}"));
                self.errors.append(&mut e.list);
                return;
            }
        };
        let doc = match parse_document(rel, &text) {
            Ok(v) => v,
            Err(msg) => {
                e.push("", msg);
                self.errors.append(&mut e.list);
                return;
            }
        };
        let Some(top) = Fields::new(&doc, "", TOP_KEYS, &mut e) else {
            self.errors.append(&mut e.list);
            return;
        };
        let defaults = match top.get("defaults") {
            Some(d) => read_defaults(d, inherited, &mut e),
            None => inherited.clone(),
        };
        match top.list("tools", &mut e) {
            Some(tools) => {
                for (i, t) in tools.iter().enumerate() {
                    let at = format!("tools[{i}]");
                    if let Some(tool) = self.tool(t, &at, rel, &defaults, &mut e) {
                        self.tools.push(tool);
                    }
                }
            }
            None if !["tools", "imports", "mcp_servers", "openapi", "toolsets"]
                .iter()
                .any(|k| top.has(k)) =>
            {
                e.push(
                    "",
                    "a catalog needs `tools:` (a list of tools), `mcp_servers:`, `openapi:`, `toolsets:` or `imports:`",
                )
            }
            None => {}
        }
        if let Some(servers) = top.list("mcp_servers", &mut e) {
            self.servers(servers, rel, &defaults.results, &mut e);
        }
        if let Some(sets) = top.list("toolsets", &mut e) {
            self.toolsets(sets, rel, &mut e);
        }
        if let Some(specs) = top.list("openapi", &mut e) {
            self.openapi(specs, rel, &defaults, &mut e);
        }
        let imports: Vec<(String, String)> = top
            .strings("imports", &mut e)
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .filter_map(|(i, p)| {
                let at = format!("imports[{i}]");
                match resolve_relative(rel, &p) {
                    Ok(path) => Some((path, at)),
                    Err(msg) => {
                        e.push(&at, msg);
                        None
                    }
                }
            })
            .collect();
        self.errors.append(&mut e.list);
        stack.push(rel.to_owned());
        for (path, _) in imports {
            self.file(&path, &defaults, stack);
        }
        stack.pop();
    }

    /// Duplicate names, and (for MCP-style names) names that collide once mapped for
    /// stricter providers.
    pub(super) fn check_names(&mut self) {
        let mut seen: HashMap<&str, (&str, &str)> = HashMap::new();
        let mut mapped: HashMap<String, &str> = HashMap::new();
        for (name, file, at) in &self.names {
            let name = name.as_str();
            let mut report = |message: String| {
                self.errors.push(CatalogError {
                    file: file.clone(),
                    path: format!("{at}.name"),
                    message,
                });
            };
            if let Some((first_file, first_at)) = seen.insert(name, (file, at)) {
                report(format!(
                    "duplicate tool name {name:?} (first declared at {first_file}: {first_at})"
                ));
                continue;
            }
            let portable = portable_name(name);
            if let Some(other) = mapped.insert(portable.clone(), name) {
                report(format!(
                    "tool names {other:?} and {name:?} both become {portable:?} for providers that \
                     do not allow `.` or `-`; rename one"
                ));
            }
        }
    }
}

/// YAML, or JSON for `.json` files. Duplicate keys and non-finite numbers are errors (a JSON
/// value could not hold them without losing data); YAML's own limits on aliases and depth
/// apply.
pub(super) fn parse_document(file: &str, text: &str) -> Result<Value, String> {
    let is_json = file.ends_with(".json");
    if is_json {
        // serde_json gives the exact position of JSON syntax errors…
        serde_json::from_str::<serde::de::IgnoredAny>(text)
            .map_err(|e| format!("invalid JSON: {e}"))?;
    }
    // …and the YAML reader (JSON is YAML) refuses duplicate keys, which JSON readers drop.
    let kind = if is_json { "JSON" } else { "YAML" };
    let yaml: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(text).map_err(|e| format!("invalid {kind}: {e}"))?;
    if let Some(at) = non_finite(&yaml, String::new()) {
        return Err(format!("{at}: infinite or NaN numbers are not allowed"));
    }
    let doc = serde_json::to_value(&yaml)
        .map_err(|e| format!("invalid {kind}: {e} (mapping keys must be text)"))?;
    if doc.is_null() {
        return Err("the file is empty; a catalog starts with `tools:`".into());
    }
    Ok(doc)
}

pub(super) fn non_finite(v: &serde_yaml_ng::Value, at: String) -> Option<String> {
    use serde_yaml_ng::Value as Y;
    match v {
        Y::Number(n) if n.as_f64().is_some_and(|f| !f.is_finite()) => Some(at),
        Y::Sequence(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, x)| non_finite(x, format!("{at}[{i}]"))),
        Y::Mapping(map) => map.iter().find_map(|(k, x)| {
            let key = k.as_str().map_or_else(|| format!("{k:?}"), str::to_owned);
            non_finite(x, join(&at, &key))
        }),
        Y::Tagged(t) => non_finite(&t.value, at),
        _ => None,
    }
}

/// `rel` resolved against the folder of `from`; absolute paths and `..` are refused so
/// everything stays inside the entry catalog's folder.
pub(super) fn resolve_relative(from: &str, rel: &str) -> Result<String, String> {
    if rel.starts_with('/') || rel.starts_with('\\') || rel.get(1..2) == Some(":") {
        return Err(format!(
            "{rel:?} is absolute; paths are relative to the catalog's folder"
        ));
    }
    let mut parts: Vec<&str> = match from.rfind('/') {
        Some(i) => from[..i]
            .split('/')
            .filter(|s| !s.is_empty() && *s != ".")
            .collect(),
        None => Vec::new(),
    };
    for seg in rel.split(['/', '\\']) {
        match seg {
            "" | "." => {}
            ".." => {
                return Err(format!(
                    "{rel:?} leaves the catalog's folder (`..` is not allowed)"
                ));
            }
            s => parts.push(s),
        }
    }
    if parts.is_empty() {
        return Err(format!("{rel:?} names no file"));
    }
    Ok(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::resolve_relative;

    #[test]
    fn relative_paths_stay_inside() {
        assert_eq!(
            resolve_relative("catalog.yaml", "more/x.yaml").as_deref(),
            Ok("more/x.yaml")
        );
        assert_eq!(
            resolve_relative("sub/a.yaml", "./b.yaml").as_deref(),
            Ok("sub/b.yaml")
        );
        for bad in [
            "../x.yaml",
            "/etc/passwd",
            "a/../../x",
            "C:/x",
            "\\\\server\\x",
            "",
        ] {
            assert!(resolve_relative("catalog.yaml", bad).is_err(), "{bad}");
        }
    }
}
