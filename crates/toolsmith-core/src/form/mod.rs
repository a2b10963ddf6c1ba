//! The catalog form read with every problem recorded: typed reads from a YAML/JSON mapping
//! that note each problem with its path instead of stopping at the first, so the loader can
//! report all of them at once, and ([`param`]) the parameter rules. Shared by the catalog
//! loader and the built-ins' own interfaces, which are written in the same form.

pub(crate) mod param;

use std::fmt;

use serde_json::{Map, Number, Value};

use crate::json_text::type_phrase;

/// Problems found in one file.
pub(crate) struct Errs {
    pub file: String,
    pub list: Vec<CatalogError>,
}

impl Errs {
    pub fn new(file: &str) -> Self {
        Self {
            file: file.to_owned(),
            list: Vec::new(),
        }
    }

    pub fn push(&mut self, path: &str, message: impl std::fmt::Display) {
        self.list.push(CatalogError {
            file: self.file.clone(),
            path: path.to_owned(),
            message: message.to_string(),
        });
    }
}

/// A valid environment variable name: letters, digits and `_`, not starting with a digit.
pub(crate) fn is_env_name(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `parent.key`, or `key` at the top.
pub(crate) fn join(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_owned()
    } else {
        format!("{parent}.{key}")
    }
}

/// A mapping being read, with its path and the keys it may have.
pub(crate) struct Fields<'v> {
    map: &'v Map<String, Value>,
    pub path: String,
}

impl<'v> Fields<'v> {
    /// `None` (with an error) unless `value` is a mapping; unknown keys are reported with the
    /// closest known key as a suggestion.
    pub fn new(value: &'v Value, path: &str, known: &[&str], e: &mut Errs) -> Option<Self> {
        let Value::Object(map) = value else {
            e.push(
                path,
                format!("expected a mapping, got {}", type_phrase(value)),
            );
            return None;
        };
        for key in map.keys() {
            if !known.contains(&key.as_str()) {
                let hint = known
                    .iter()
                    .map(|k| (strsim::jaro_winkler(k, key), k))
                    .filter(|(score, _)| *score > 0.8)
                    .max_by(|a, b| a.0.total_cmp(&b.0))
                    .map(|(_, k)| format!("unknown key; did you mean `{k}`?"))
                    .unwrap_or_else(|| {
                        format!("unknown key; expected one of {}", known.join(", "))
                    });
                e.push(&join(path, key), hint);
            }
        }
        Some(Self {
            map,
            path: path.to_owned(),
        })
    }

    pub fn at(&self, key: &str) -> String {
        join(&self.path, key)
    }

    /// The value of `key`; an explicit `null` counts as absent.
    pub fn get(&self, key: &str) -> Option<&'v Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    pub fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    pub fn string(&self, key: &str, e: &mut Errs) -> Option<String> {
        match self.get(key)? {
            Value::String(s) => Some(s.clone()),
            other => {
                e.push(
                    &self.at(key),
                    format!("expected a string, got {}", type_phrase(other)),
                );
                None
            }
        }
    }

    pub fn boolean(&self, key: &str, e: &mut Errs) -> Option<bool> {
        match self.get(key)? {
            Value::Bool(b) => Some(*b),
            other => {
                e.push(
                    &self.at(key),
                    format!("expected true or false, got {}", type_phrase(other)),
                );
                None
            }
        }
    }

    pub fn uint(&self, key: &str, e: &mut Errs) -> Option<u64> {
        match self.get(key)? {
            Value::Number(n) if n.is_u64() => n.as_u64(),
            other => {
                e.push(
                    &self.at(key),
                    format!("expected a non-negative integer, got {other}"),
                );
                None
            }
        }
    }

    pub fn number(&self, key: &str, e: &mut Errs) -> Option<Number> {
        match self.get(key)? {
            Value::Number(n) => Some(n.clone()),
            other => {
                e.push(
                    &self.at(key),
                    format!("expected a number, got {}", type_phrase(other)),
                );
                None
            }
        }
    }

    pub fn strings(&self, key: &str, e: &mut Errs) -> Option<Vec<String>> {
        let list = self.list(key, e)?;
        let mut out = Vec::with_capacity(list.len());
        for (i, v) in list.iter().enumerate() {
            match v {
                Value::String(s) => out.push(s.clone()),
                other => e.push(
                    &format!("{}[{i}]", self.at(key)),
                    format!("expected a string, got {}", type_phrase(other)),
                ),
            }
        }
        Some(out)
    }

    pub fn list(&self, key: &str, e: &mut Errs) -> Option<&'v Vec<Value>> {
        match self.get(key)? {
            Value::Array(a) => Some(a),
            other => {
                e.push(
                    &self.at(key),
                    format!("expected a list, got {}", type_phrase(other)),
                );
                None
            }
        }
    }

    /// A string that must be one of `names`, parsed by `parse`.
    pub fn choice<T>(
        &self,
        key: &str,
        what: &str,
        names: &[&str],
        parse: impl Fn(&str) -> Option<T>,
        e: &mut Errs,
    ) -> Option<T> {
        let s = self.string(key, e)?;
        let parsed = parse(&s);
        if parsed.is_none() {
            e.push(
                &self.at(key),
                format!(
                    "unknown {what} {s:?} (expected one of {})",
                    names.join(", ")
                ),
            );
        }
        parsed
    }
}

/// One problem in a catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogError {
    pub file: String,
    /// Where in the file: `tools[0].parameters[1].type`; empty for the whole file.
    pub path: String,
    pub message: String,
}

impl fmt::Display for CatalogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}: {}: {}", self.file, self.path, self.message)
        }
    }
}

/// Every problem found in a catalog, in file order.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct CatalogErrors(pub Vec<CatalogError>);

impl fmt::Display for CatalogErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0.len();
        writeln!(
            f,
            "{n} problem{} in the catalog:",
            if n == 1 { "" } else { "s" }
        )?;
        for e in &self.0 {
            writeln!(f, "  {e}")?;
        }
        Ok(())
    }
}
