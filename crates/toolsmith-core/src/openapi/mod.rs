//! OpenAPI import (SPEC §12): an OpenAPI 3.0 or 3.1 document → one `http` tool per
//! operation, in the catalog form, each checked by the catalog's own rules.
//!
//! - The name is the `operationId` made a portable tool name (`repos/get-issue` →
//!   `repos_get_issue`), else `method_path`; a prefix goes first; a name taken twice gets
//!   `_2`, `_3`… in document order, and each rename is listed.
//! - The description is the summary, then the description (cut), then the docs URL.
//! - Parameters come from the path, query and header parameters and the `application/json`
//!   request body (its object's properties, or one `body` parameter for any other shape);
//!   schemas are read by [`schema`].
//! - Danger follows the method (GET, HEAD and OPTIONS safe) unless the options say
//!   otherwise; deprecated operations are left out unless asked for; tags are kept.
//! - Everything not mapped is reported, never dropped silently: a skipped operation with its
//!   reason (a required cookie, a body that is not JSON, an external `$ref`, a definition
//!   the catalog refuses), and a note for each simplification of an imported one.

mod request;
mod schema;

use request::{body, param_name, security};

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::catalog::{CatalogSource, parse_tool};
use crate::http::is_safe_method;
use crate::model::Tool;
use schema::{Reader, cut};

/// Characters of a tool description kept (the docs URL comes after).
const DESCRIPTION_MAX: usize = 1000;

const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// What to import and how.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The URL the paths are appended to; the document's first server when not given.
    pub base_url: Option<String>,
    /// Where the document came from, for a relative server URL.
    pub source_url: Option<String>,
    /// Only operations with one of these tags, ids or path globs (`*` any characters);
    /// nothing given: all.
    pub tags: Vec<String>,
    pub operations: Vec<String>,
    pub paths: Vec<String>,
    /// Left out even when included.
    pub exclude_tags: Vec<String>,
    pub exclude_operations: Vec<String>,
    pub exclude_paths: Vec<String>,
    /// Put before every tool name.
    pub prefix: String,
    pub include_deprecated: bool,
    /// Security scheme name → environment variable(s) holding its credential: one for a
    /// bearer token or an API key, `USER:PASSWORD` for basic.
    pub auth: BTreeMap<String, String>,
    /// Operation ids declared safe, or dangerous, whatever their method.
    pub safe: Vec<String>,
    pub dangerous: Vec<String>,
}

/// What an import made of a document.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Imported {
    pub title: String,
    pub version: String,
    /// The tools, each in the catalog form (config values as `${VAR}` references).
    pub tools: Vec<Value>,
    pub skipped: Vec<Skipped>,
    pub notes: Vec<Note>,
    /// Operations the filters left out.
    pub filtered: usize,
}

/// An operation not imported, and why.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Skipped {
    pub operation: String,
    pub method: String,
    pub path: String,
    pub reason: String,
}

/// A simplification made in one imported tool.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Note {
    pub tool: String,
    pub message: String,
}

/// What every OpenAPI source's key starts with: held changes of an import are kept under
/// `openapi:<name>`, beside upstream servers' changes.
pub const OPENAPI_SOURCE: &str = "openapi:";

/// The key of the OpenAPI source `name`.
pub fn openapi_source(name: &str) -> String {
    format!("{OPENAPI_SOURCE}{name}")
}

/// Whether `key` names an OpenAPI source rather than an upstream MCP server.
pub fn is_openapi_source(key: &str) -> bool {
    key.starts_with(OPENAPI_SOURCE)
}

/// The source of an import: the name given, else the tool-name prefix without its trailing
/// `_`, else the document's title made a word.
pub fn source_for(given: Option<&str>, prefix: &str, title: &str) -> String {
    let name = given
        .map(str::to_owned)
        .or_else(|| {
            Some(prefix.trim_end_matches(['_', '-', '.']).to_owned()).filter(|p| !p.is_empty())
        })
        .unwrap_or_else(|| {
            title
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() {
                        c.to_ascii_lowercase()
                    } else {
                        '-'
                    }
                })
                .collect::<String>()
                .trim_matches('-')
                .to_owned()
        });
    openapi_source(&name)
}

/// Reads a document given as JSON or YAML text.
pub fn parse_document(text: &str) -> Result<Value, OpenApiError> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') {
        return serde_json::from_str(text).map_err(|e| OpenApiError::Json(e.to_string()));
    }
    serde_yaml_ng::from_str(text).map_err(|e| OpenApiError::Yaml(e.to_string()))
}

/// A document that cannot be imported, or an import whose tools do not load.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OpenApiError {
    #[error("not JSON: {0}")]
    Json(String),
    #[error("neither JSON nor YAML: {0}")]
    Yaml(String),
    #[error(
        "this is a Swagger 2.0 document; toolsmith reads OpenAPI 3.0 and 3.1 (convert it first, e.g. with swagger2openapi)"
    )]
    Swagger,
    #[error("not an OpenAPI 3.0 or 3.1 document (`openapi: {0:?}`)")]
    Version(String),
    #[error("the document has no `paths`")]
    NoPaths,
    #[error("the document names no server: give the base URL (--base-url)")]
    NoServer,
    #[error("the document's server URL {0:?} is relative: give the base URL (--base-url)")]
    RelativeServer(String),
    /// The document's own address (`source_url`) is not a URL.
    #[error("{url}: {error}")]
    SourceUrl { url: String, error: url::ParseError },
    #[error("cannot place {raw:?} against {source_url}: {error}")]
    Join {
        raw: String,
        source_url: String,
        error: url::ParseError,
    },
    #[error("base URL {url:?}: {error}")]
    BaseUrl { url: String, error: url::ParseError },
    #[error("base URL {0:?}: only http and https")]
    Scheme(String),
    /// A tool of the import that the catalog's rules refuse.
    #[error("{0}")]
    Tool(String),
}

/// Imports every operation of `doc` that `opts` selects; `src` gives environment variables
/// to the check each tool passes (`${VAR}` config values).
pub fn import(
    doc: &Value,
    opts: &Options,
    src: &dyn CatalogSource,
) -> Result<Imported, OpenApiError> {
    let version = doc
        .get("openapi")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if doc.get("swagger").is_some() {
        return Err(OpenApiError::Swagger);
    }
    if !(version.starts_with("3.0") || version.starts_with("3.1")) {
        return Err(OpenApiError::Version(version.to_owned()));
    }
    let paths = doc
        .get("paths")
        .and_then(Value::as_object)
        .ok_or(OpenApiError::NoPaths)?;
    let base = base_url(doc, opts)?;
    let mut out = Imported {
        title: doc["info"]["title"].as_str().unwrap_or_default().to_owned(),
        version: doc["info"]["version"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        ..Imported::default()
    };
    let mut names: HashMap<String, usize> = HashMap::new();
    for (path, item) in paths {
        let Some(item) = deref_item(doc, item) else {
            continue;
        };
        for method in METHODS {
            let Some(op) = item.get(method) else { continue };
            let upper = method.to_ascii_uppercase();
            let id = op
                .get("operationId")
                .and_then(Value::as_str)
                .map(str::to_owned);
            let label = id.clone().unwrap_or_else(|| format!("{upper} {path}"));
            let skip = |reason: String| Skipped {
                operation: label.clone(),
                method: upper.clone(),
                path: path.clone(),
                reason,
            };
            if !selected(opts, op, id.as_deref(), path) {
                out.filtered += 1;
                continue;
            }
            if method == "trace" {
                out.skipped
                    .push(skip("TRACE is not offered as a tool".into()));
                continue;
            }
            if op.get("deprecated") == Some(&Value::Bool(true)) && !opts.include_deprecated {
                out.skipped.push(skip(
                    "deprecated (import with deprecated operations to include it)".into(),
                ));
                continue;
            }
            let wanted = sanitize(&opts.prefix, id.as_deref(), method, path);
            let n = names.entry(wanted.clone()).or_insert(0);
            *n += 1;
            let name = if *n == 1 {
                wanted.clone()
            } else {
                suffixed(&wanted, *n)
            };
            let mut reader = Reader {
                doc,
                notes: Vec::new(),
            };
            if *n > 1 {
                reader.notes.push(format!(
                    "named `{name}`: `{wanted}` was taken by an earlier operation"
                ));
            }
            match operation(&mut reader, opts, &base, path, &upper, item, op, &name) {
                Err(reason) => out.skipped.push(skip(reason)),
                Ok(tool) => match check(tool, src, &mut reader.notes) {
                    Ok(tool) => {
                        out.notes.extend(reader.notes.into_iter().map(|m| Note {
                            tool: name.clone(),
                            message: m,
                        }));
                        out.tools.push(tool);
                    }
                    Err(reason) => out.skipped.push(skip(reason)),
                },
            }
        }
    }
    Ok(out)
}

/// The loaded tools of an import, for callers that store them.
pub fn tools(imported: &Imported, src: &dyn CatalogSource) -> Result<Vec<Tool>, OpenApiError> {
    imported
        .tools
        .iter()
        .map(|v| parse_tool(v, src).map_err(|e| OpenApiError::Tool(e.to_string())))
        .collect()
}

/// The tool passes the catalog's rules; a default that fails its own schema is left out
/// and tried again (noted); anything else skips the operation.
fn check(
    mut tool: Value,
    src: &dyn CatalogSource,
    notes: &mut Vec<String>,
) -> Result<Value, String> {
    if parse_tool(&tool, src).is_ok() {
        return Ok(tool);
    }
    let stripped = strip_defaults(&mut tool);
    match parse_tool(&tool, src) {
        Ok(_) => {
            if stripped {
                notes.push(
                    "defaults the document gives that fail their own schema were left out".into(),
                );
            }
            Ok(tool)
        }
        Err(e) => Err(format!(
            "the definition made of it does not pass the catalog's checks: {e}"
        )),
    }
}

fn strip_defaults(v: &mut Value) -> bool {
    let mut any = false;
    match v {
        Value::Object(map) => {
            any |= map.remove("default").is_some();
            for (_, child) in map.iter_mut() {
                any |= strip_defaults(child);
            }
        }
        Value::Array(items) => {
            for child in items {
                any |= strip_defaults(child);
            }
        }
        _ => {}
    }
    any
}

fn deref_item<'a>(doc: &'a Value, item: &'a Value) -> Option<&'a Value> {
    match item.get("$ref").and_then(Value::as_str) {
        Some(r) => r.strip_prefix('#').and_then(|p| doc.pointer(p)),
        None => Some(item),
    }
}

/// The base URL: the option, else the first server's (its variables at their defaults),
/// made absolute against where the document came from.
fn base_url(doc: &Value, opts: &Options) -> Result<String, OpenApiError> {
    let raw = match &opts.base_url {
        Some(u) => u.clone(),
        None => {
            let server = doc
                .get("servers")
                .and_then(Value::as_array)
                .and_then(|s| s.first());
            let Some(server) = server else {
                return match &opts.source_url {
                    Some(src) => origin(src),
                    None => Err(OpenApiError::NoServer),
                };
            };
            let mut url = server["url"].as_str().unwrap_or("/").to_owned();
            for (name, var) in server
                .get("variables")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                let default = var["default"].as_str().unwrap_or_default();
                url = url.replace(&format!("{{{name}}}"), default);
            }
            url
        }
    };
    let absolute = if raw.starts_with("http://") || raw.starts_with("https://") {
        raw
    } else {
        let Some(src) = &opts.source_url else {
            return Err(OpenApiError::RelativeServer(raw));
        };
        url::Url::parse(src)
            .and_then(|u| u.join(&raw))
            .map_err(|error| OpenApiError::Join {
                raw: raw.clone(),
                source_url: src.clone(),
                error,
            })?
            .to_string()
    };
    let parsed = url::Url::parse(&absolute).map_err(|error| OpenApiError::BaseUrl {
        url: absolute.clone(),
        error,
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(OpenApiError::Scheme(absolute));
    }
    Ok(absolute.trim_end_matches('/').to_owned())
}

fn origin(src: &str) -> Result<String, OpenApiError> {
    let u = url::Url::parse(src).map_err(|error| OpenApiError::SourceUrl {
        url: src.to_owned(),
        error,
    })?;
    Ok(u.origin().ascii_serialization())
}

fn selected(opts: &Options, op: &Value, id: Option<&str>, path: &str) -> bool {
    let tags: Vec<&str> = op
        .get("tags")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let by_tag = |list: &[String]| list.iter().any(|t| tags.contains(&t.as_str()));
    let by_id = |list: &[String]| id.is_some_and(|id| list.iter().any(|o| o == id));
    let by_path = |list: &[String]| list.iter().any(|g| glob(g, path));
    let any_filter = !(opts.tags.is_empty() && opts.operations.is_empty() && opts.paths.is_empty());
    let included =
        !any_filter || by_tag(&opts.tags) || by_id(&opts.operations) || by_path(&opts.paths);
    included
        && !by_tag(&opts.exclude_tags)
        && !by_id(&opts.exclude_operations)
        && !by_path(&opts.exclude_paths)
}

/// `*` matches any characters; everything else itself.
fn glob(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let mut rest = text;
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            let Some(r) = rest.strip_prefix(part) else {
                return false;
            };
            rest = r;
        } else if i == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            match rest.find(part) {
                Some(at) => rest = &rest[at + part.len()..],
                None => return false,
            }
        }
    }
    true
}

/// A portable tool name: letters, digits and `_`, starting with a letter, at most 64.
fn sanitize(prefix: &str, id: Option<&str>, method: &str, path: &str) -> String {
    let raw = match id {
        Some(id) => format!("{prefix}{id}"),
        None => format!("{prefix}{method}_{path}"),
    };
    let mut name = String::with_capacity(raw.len());
    for c in raw.chars() {
        let c = if c.is_ascii_alphanumeric() { c } else { '_' };
        if c == '_' && (name.is_empty() || name.ends_with('_')) {
            continue;
        }
        name.push(c);
    }
    let mut name = name.trim_end_matches('_').to_owned();
    if !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
        name.insert_str(0, "op_");
    }
    name.truncate(64);
    name.trim_end_matches('_').to_owned()
}

fn suffixed(name: &str, n: usize) -> String {
    let tail = format!("_{n}");
    let mut base = name.to_owned();
    base.truncate(64 - tail.len());
    format!("{base}{tail}")
}

/// One operation → one tool, or why not.
#[allow(clippy::too_many_arguments)]
fn operation(
    r: &mut Reader<'_>,
    opts: &Options,
    base: &str,
    path: &str,
    method: &str,
    item: &Value,
    op: &Value,
    name: &str,
) -> Result<Value, String> {
    let mut tool = Map::new();
    tool.insert("name".into(), json!(name));
    tool.insert("description".into(), json!(description(op, method, path)));
    let id = op.get("operationId").and_then(Value::as_str).unwrap_or("");
    let safe = if opts.safe.iter().any(|s| s == id) {
        true
    } else if opts.dangerous.iter().any(|s| s == id) {
        false
    } else {
        is_safe_method(method)
    };
    tool.insert(
        "danger".into(),
        json!(if safe { "safe" } else { "dangerous" }),
    );
    tool.insert(
        "annotations".into(),
        json!({
            "read_only": is_safe_method(method),
            "idempotent": matches!(method, "GET" | "HEAD" | "OPTIONS" | "PUT" | "DELETE"),
            "open_world": true,
        }),
    );
    let tags: Vec<Value> = op
        .get("tags")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|t| json!(t.split_whitespace().collect::<Vec<_>>().join("-")))
        .filter(|t| t.as_str().is_some_and(|s| !s.is_empty()))
        .collect();
    if !tags.is_empty() {
        tool.insert("tags".into(), Value::Array(tags));
    }

    // Path-level parameters, replaced by the operation's of the same name and place.
    let mut declared: Vec<Value> = Vec::new();
    for list in [item.get("parameters"), op.get("parameters")] {
        for p in list.and_then(Value::as_array).into_iter().flatten() {
            let Some(p) = r.deref(p).cloned() else {
                return Err("a parameter's `$ref` leads nowhere".into());
            };
            let key = (p["name"].clone(), p["in"].clone());
            declared.retain(|q| (q["name"].clone(), q["in"].clone()) != key);
            declared.push(p);
        }
    }
    let mut params: Vec<Value> = Vec::new();
    let mut taken: HashSet<String> = HashSet::new();
    for p in &declared {
        let wire = p["name"].as_str().unwrap_or_default().to_owned();
        let place = p["in"].as_str().unwrap_or_default();
        let required = p["required"] == Value::Bool(true) || place == "path";
        let what = format!("{place} parameter `{wire}`");
        match place {
            "path" | "query" | "header" => {}
            "cookie" if required => {
                return Err(format!(
                    "needs the cookie `{wire}`, and toolsmith sends no cookies"
                ));
            }
            _ => {
                r.notes
                    .push(format!("{what} is not sent (toolsmith sends no cookies)"));
                continue;
            }
        }
        if place == "header"
            && matches!(
                wire.to_ascii_lowercase().as_str(),
                "accept" | "content-type" | "authorization"
            )
        {
            r.notes.push(format!(
                "{what} is left out: OpenAPI ignores a parameter of that name (auth comes from security schemes)"
            ));
            continue;
        }
        let schema = match (p.get("schema"), p.get("content")) {
            (Some(s), _) => s.clone(),
            (None, Some(c)) => c
                .as_object()
                .and_then(|m| m.values().next())
                .and_then(|m| m.get("schema"))
                .cloned()
                .unwrap_or(json!({"type": "string"})),
            (None, None) => json!({"type": "string"}),
        };
        let mut out = Map::new();
        let pname = param_name(&wire, &mut taken);
        out.insert("name".into(), json!(pname));
        out.append(&mut r.parameter(&schema, &what, 0));
        if out["type"] == "object" {
            if required {
                return Err(format!(
                    "{what} is an object, which toolsmith does not send in the {place}"
                ));
            }
            r.notes.push(format!("{what} is an object and is not sent"));
            continue;
        }
        if let Some(d) = p.get("description").and_then(Value::as_str) {
            out.insert("description".into(), json!(cut(d.trim(), 300)));
        }
        out.insert("inject_as".into(), json!(place));
        if pname != wire {
            out.insert("http_name".into(), json!(wire));
        }
        if out["type"] == "array" {
            let style =
                p["style"]
                    .as_str()
                    .unwrap_or(if place == "query" { "form" } else { "simple" });
            let explode = p["explode"].as_bool().unwrap_or(style == "form");
            match (style, explode) {
                ("form", true) => {}
                ("form" | "simple", _) => {
                    out.insert("array_style".into(), json!("join"));
                }
                ("spaceDelimited", _) => {
                    out.insert("array_style".into(), json!("join"));
                    out.insert("separator".into(), json!(" "));
                }
                ("pipeDelimited", _) => {
                    out.insert("array_style".into(), json!("join"));
                    out.insert("separator".into(), json!("|"));
                }
                (other, _) => {
                    if required {
                        return Err(format!(
                            "{what} uses style `{other}`, which toolsmith does not write"
                        ));
                    }
                    r.notes
                        .push(format!("{what} uses style `{other}` and is not sent"));
                    continue;
                }
            }
            if place == "path" {
                return Err(format!(
                    "{what} is a list in the path, which toolsmith does not write"
                ));
            }
        }
        if required {
            out.remove("default");
        } else if !out.contains_key("default") {
            out.insert("required".into(), json!(false));
        }
        params.push(Value::Object(out));
    }

    let mut http = Map::new();
    http.insert("method".into(), json!(method));
    http.insert("url".into(), json!(format!("{base}{path}")));
    body(r, op, method, &mut params, &mut taken, &mut http)?;
    let mut config_schema = Vec::new();
    let mut config = Map::new();
    security(r, opts, op, &mut http, &mut config_schema, &mut config);
    tool.insert("http".into(), Value::Object(http));
    if !params.is_empty() {
        tool.insert("parameters".into(), Value::Array(params));
    }
    if !config_schema.is_empty() {
        tool.insert("config_schema".into(), Value::Array(config_schema));
        tool.insert("config".into(), Value::Object(config));
    }
    Ok(Value::Object(tool))
}

/// Summary, then description, cut; then the docs URL.
fn description(op: &Value, method: &str, path: &str) -> String {
    let summary = op["summary"].as_str().unwrap_or("").trim();
    let details = op["description"].as_str().unwrap_or("").trim();
    let mut text = match (summary.is_empty(), details.is_empty()) {
        (true, true) => format!("{method} {path}"),
        (false, true) => summary.to_owned(),
        (true, false) => details.to_owned(),
        (false, false) if details.starts_with(summary) => details.to_owned(),
        (false, false) => format!("{summary}\n\n{details}"),
    };
    text = cut(&text, DESCRIPTION_MAX);
    if let Some(url) = op.pointer("/externalDocs/url").and_then(Value::as_str) {
        text.push_str(&format!("\n\nDocs: {url}"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_made_portable() {
        assert_eq!(
            sanitize("", Some("repos/get-issue"), "get", "/x"),
            "repos_get_issue"
        );
        assert_eq!(
            sanitize("gh_", Some("repos/get"), "get", "/x"),
            "gh_repos_get"
        );
        assert_eq!(
            sanitize("", None, "get", "/repos/{owner}/items"),
            "get_repos_owner_items"
        );
        assert_eq!(sanitize("", Some("1st"), "get", "/"), "op_1st");
        assert_eq!(sanitize("", Some(&"a".repeat(80)), "get", "/").len(), 64);
        assert_eq!(suffixed(&"a".repeat(64), 2).len(), 64);
    }

    #[test]
    fn globs_match_paths() {
        assert!(glob("/repos/*", "/repos/{owner}/{repo}"));
        assert!(glob("*/issues/*", "/repos/{o}/{r}/issues/{n}"));
        assert!(!glob("/users/*", "/repos/x"));
        assert!(glob("/exact", "/exact"));
    }
}
