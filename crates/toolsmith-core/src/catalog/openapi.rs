//! A catalog's `openapi:` entries (SPEC §12): each names an OpenAPI document beside the
//! catalog and how to import it; its operations become `http` tools of this file (with its
//! `defaults`), and what was skipped or simplified becomes the catalog's notes. With
//! `on_change: hold`, its tools are listed in the catalog's `holds` under their source
//! (`openapi:<name>`): a re-import holds their changes instead of saving them.

use std::collections::BTreeMap;

use super::files::resolve_relative;
use super::*;
use crate::openapi::{self, Options};

const KEYS: &[&str] = &[
    "spec",
    "base_url",
    "include",
    "exclude",
    "prefix",
    "auth",
    "safe",
    "dangerous",
    "include_deprecated",
    "on_change",
    "name",
];

impl Loader<'_> {
    pub(super) fn openapi(&mut self, list: &[Value], rel: &str, defaults: &Defaults, e: &mut Errs) {
        for (i, entry) in list.iter().enumerate() {
            let at = format!("openapi[{i}]");
            let Some(f) = Fields::new(entry, &at, KEYS, e) else {
                continue;
            };
            let Some(spec) = f.string("spec", e) else {
                if !f.has("spec") {
                    e.push(
                        &f.at("spec"),
                        "missing: the OpenAPI document, a file beside the catalog",
                    );
                }
                continue;
            };
            if spec.starts_with("http://") || spec.starts_with("https://") {
                e.push(
                    &f.at("spec"),
                    "a catalog reads files only: save the document beside the catalog, or import the URL with `toolsmith import --openapi URL`",
                );
                continue;
            }
            let path = match resolve_relative(rel, &spec) {
                Ok(p) => p,
                Err(m) => {
                    e.push(&f.at("spec"), m);
                    continue;
                }
            };
            let parsed = match self.src.read(&path) {
                Ok(text) => openapi::parse_document(&text).map_err(|m| format!("{path}: {m}")),
                Err(m) => Err(m.to_string()),
            };
            let doc = match parsed {
                Ok(d) => d,
                Err(m) => {
                    e.push(&f.at("spec"), m);
                    continue;
                }
            };
            let filter = |key: &str, e: &mut Errs| -> [Vec<String>; 3] {
                let Some(v) = f.get(key) else {
                    return Default::default();
                };
                let Some(g) = Fields::new(v, &f.at(key), &["tags", "operations", "paths"], e)
                else {
                    return Default::default();
                };
                ["tags", "operations", "paths"].map(|k| g.strings(k, e).unwrap_or_default())
            };
            let [tags, operations, paths] = filter("include", e);
            let [exclude_tags, exclude_operations, exclude_paths] = filter("exclude", e);
            let mut auth = BTreeMap::new();
            match f.get("auth") {
                None => {}
                Some(Value::Object(map)) => {
                    for (scheme, var) in map {
                        match var.as_str() {
                            Some(v) => {
                                auth.insert(scheme.clone(), v.to_owned());
                            }
                            None => e.push(
                                &join(&f.at("auth"), scheme),
                                "the environment variable holding the credential (USER_VAR:PASSWORD_VAR for basic)",
                            ),
                        }
                    }
                }
                Some(_) => e.push(
                    &f.at("auth"),
                    "a mapping of the document's security schemes to environment variables",
                ),
            }
            let opts_prefix = f.string("prefix", e).unwrap_or_default();
            let opts = Options {
                base_url: f.string("base_url", e),
                source_url: None,
                tags,
                operations,
                paths,
                exclude_tags,
                exclude_operations,
                exclude_paths,
                prefix: opts_prefix.clone(),
                include_deprecated: f.boolean("include_deprecated", e).unwrap_or(false),
                auth,
                safe: f.strings("safe", e).unwrap_or_default(),
                dangerous: f.strings("dangerous", e).unwrap_or_default(),
            };
            let imported = match openapi::import(&doc, &opts, self.src) {
                Ok(i) => i,
                Err(m) => {
                    e.push(&at, format!("{path}: {m}"));
                    continue;
                }
            };
            let hold = f
                .choice(
                    "on_change",
                    "on_change",
                    &["accept", "hold"],
                    |s| matches!(s, "accept" | "hold").then(|| s == "hold"),
                    e,
                )
                .unwrap_or(false);
            let mut names = Vec::new();
            for tool in &imported.tools {
                let name = tool["name"].as_str().unwrap_or_default();
                let here = format!("{at}.{name}");
                if let Some(t) = self.tool(tool, &here, rel, defaults, e) {
                    names.push(t.name.to_string());
                    self.tools.push(t);
                }
            }
            let source = openapi::source_for(
                f.string("name", e).as_deref(),
                &opts_prefix,
                &imported.title,
            );
            if hold {
                self.holds.push((source.clone(), names.clone()));
            }
            self.documents.push((source, names));
            for s in &imported.skipped {
                self.notes.push(format!(
                    "{rel}: {at}: skipped {} ({} {}): {}",
                    s.operation, s.method, s.path, s.reason
                ));
            }
            for n in &imported.notes {
                self.notes
                    .push(format!("{rel}: {at}: {}: {}", n.tool, n.message));
            }
        }
    }
}
