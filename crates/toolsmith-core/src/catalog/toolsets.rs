//! `toolsets:` — named subsets of the registry (SPEC §14), chosen by selectors; see
//! [`crate::toolset`] for what a selector matches.

use super::*;
use crate::toolset::{Discovery, KINDS, Selector, Toolset, valid_name};

const TOOLSET_KEYS: &[&str] = &["name", "description", "include", "exclude", "discovery"];
const SELECTOR_KEYS: &[&str] = &[
    "names",
    "tags",
    "kinds",
    "servers",
    "danger",
    "prompts",
    "resources",
];

/// Reads one toolset definition given as a JSON value (the registry's and the REST API's way
/// in).
pub fn parse_toolset(value: &Value) -> Result<Toolset, CatalogErrors> {
    read_one("toolset", |e| read_toolset(value, "", e))
}

impl Loader<'_> {
    /// Reads the `toolsets:` list of one file.
    pub(super) fn toolsets(&mut self, list: &[Value], file: &str, e: &mut Errs) {
        for (i, v) in list.iter().enumerate() {
            let at = format!("toolsets[{i}]");
            if let Some(set) = read_toolset(v, &at, e) {
                if let Some(first) = self.toolsets.iter().find(|(s, ..)| s.name == set.name) {
                    e.push(
                        &format!("{at}.name"),
                        format!(
                            "duplicate toolset name {:?} (first declared at {}: {})",
                            set.name, first.1, first.2
                        ),
                    );
                    continue;
                }
                self.toolsets.push((set, file.to_owned(), at));
            }
        }
    }
}

fn read_toolset(v: &Value, at: &str, e: &mut Errs) -> Option<Toolset> {
    let f = Fields::new(v, at, TOOLSET_KEYS, e)?;
    let before = e.list.len();
    let name = f.string("name", e);
    match &name {
        Some(n) if !valid_name(n) => e.push(
            &f.at("name"),
            format!("invalid toolset name {n:?}: 1 to 64 letters, digits, `_` or `-`"),
        ),
        None if !f.has("name") => e.push(&f.at("name"), "missing; every toolset needs a name"),
        _ => {}
    }
    let description = f.string("description", e).unwrap_or_default();
    let include = match f.get("include") {
        Some(v) => selectors(v, &f.at("include"), e),
        None => {
            e.push(
                &f.at("include"),
                "missing; say which tools belong: names (globs), tags, kinds, servers or danger ({} for every tool)",
            );
            Vec::new()
        }
    };
    let exclude = f
        .get("exclude")
        .map(|v| selectors(v, &f.at("exclude"), e))
        .unwrap_or_default();
    let discovery = f
        .choice(
            "discovery",
            "discovery mode",
            &["all", "search"],
            Discovery::parse,
            e,
        )
        .unwrap_or_default();
    (e.list.len() == before).then(|| Toolset {
        name: name.unwrap_or_default(),
        description,
        include,
        exclude,
        discovery,
    })
}

/// One selector (a mapping) or a list of them.
fn selectors(v: &Value, at: &str, e: &mut Errs) -> Vec<Selector> {
    match v {
        Value::Array(items) if items.is_empty() => {
            e.push(
                at,
                "an empty list selects nothing; give at least one selector",
            );
            Vec::new()
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .filter_map(|(i, s)| selector(s, &format!("{at}[{i}]"), e))
            .collect(),
        one => selector(one, at, e).into_iter().collect(),
    }
}

fn selector(v: &Value, at: &str, e: &mut Errs) -> Option<Selector> {
    let f = Fields::new(v, at, SELECTOR_KEYS, e)?;
    let names = f.strings("names", e).unwrap_or_default();
    let tags = f.strings("tags", e).unwrap_or_default();
    let kinds = f.strings("kinds", e).unwrap_or_default();
    for (i, k) in kinds.iter().enumerate() {
        if !KINDS.contains(&k.as_str()) {
            e.push(
                &format!("{}[{i}]", f.at("kinds")),
                format!("unknown kind {k:?}; expected one of {}", KINDS.join(", ")),
            );
        }
    }
    let servers = f.strings("servers", e).unwrap_or_default();
    let danger = danger(&f, e);
    let prompts = f.strings("prompts", e).unwrap_or_default();
    let resources = f.strings("resources", e).unwrap_or_default();
    let selector = Selector::new(names, tags, kinds, servers, danger)
        .map_err(|m| e.push(&f.at("names"), m))
        .ok()?;
    let bad_glob = |key: &str, globs: &[String]| {
        globs
            .iter()
            .find_map(|g| crate::toolset::glob_matcher(g).err())
            .map(|m| (key.to_owned(), m))
    };
    if let Some((key, m)) =
        bad_glob("prompts", &prompts).or_else(|| bad_glob("resources", &resources))
    {
        e.push(&f.at(&key), m);
        return None;
    }
    selector
        .with_offers(prompts, resources)
        .map_err(|m| e.push(&f.at("resources"), m))
        .ok()
}
