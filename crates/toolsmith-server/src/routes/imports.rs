//! `POST /v1/openapi/import` (SPEC §12): an OpenAPI 3.0/3.1 document sent in the request
//! becomes `http` tools in the registry — or, with `dry_run`, the answer says what would be
//! created, changed and left out without writing anything. Credentials for the document's
//! security schemes come as values and are stored as secret config fields (shown `***`).
//! Admin role: it writes tools.

use std::collections::{BTreeMap, HashMap};

use toolsmith_core::openapi::{self, Note, Options, Skipped};

use super::*;

/// Registers this file's handlers.
pub(super) fn routes(api: Api) -> Api {
    api.routes(routes!(import_openapi))
        .routes(routes!(held_changes))
        .routes(routes!(approve_held))
        .routes(routes!(reject_held))
}

/// Which operations, as in the catalog's `openapi:` entry.
#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields, default)]
struct Filter {
    tags: Vec<String>,
    operations: Vec<String>,
    /// Globs: `*` matches any characters.
    paths: Vec<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct ImportBody {
    /// The document: a JSON object, or its text (JSON or YAML). Give this or `spec_url`.
    #[serde(default)]
    #[schema(value_type = Object)]
    spec: Value,
    /// Where the server fetches the document (http or https; at most 10 MiB, 20 s; never a
    /// link-local or metadata address).
    #[serde(default)]
    spec_url: Option<String>,
    /// The URL paths are appended to (default: the document's first absolute server URL).
    #[serde(default)]
    base_url: Option<String>,
    #[serde(default)]
    include: Filter,
    #[serde(default)]
    exclude: Filter,
    /// Put before every tool name.
    #[serde(default)]
    prefix: String,
    /// Security scheme name → its credential (a token or key; `user:password` for basic).
    #[serde(default)]
    credentials: BTreeMap<String, String>,
    #[serde(default)]
    include_deprecated: bool,
    /// Operation ids declared safe, or dangerous, whatever their method.
    #[serde(default)]
    safe: Vec<String>,
    #[serde(default)]
    dangerous: Vec<String>,
    /// Say what would happen; write nothing.
    #[serde(default)]
    dry_run: bool,
    /// Only the tools of these names (as a dry run lists them, after the prefix); empty: every
    /// tool the filters let through.
    #[serde(default)]
    only: Vec<String>,
    /// `accept` (default): a changed operation's tool gets a new version; `hold`: the change
    /// waits under `openapi:<source>` until approved.
    #[serde(default)]
    on_change: OnChange,
    /// The name held changes are kept under (default: `prefix` without its trailing `_`, else
    /// the document's title).
    #[serde(default)]
    source: Option<String>,
}

#[derive(Deserialize, ToSchema, Default, PartialEq, Eq, Clone, Copy)]
#[serde(rename_all = "snake_case")]
enum OnChange {
    #[default]
    Accept,
    Hold,
}

#[derive(Serialize, ToSchema)]
struct ImportAnswer {
    title: String,
    version: String,
    dry_run: bool,
    /// The definitions (secrets `***`).
    #[schema(value_type = Vec<Object>)]
    tools: Vec<Value>,
    /// Names that would be (or were) created, updated, left unchanged.
    created: Vec<String>,
    updated: Vec<String>,
    unchanged: Vec<String>,
    #[schema(value_type = Vec<Object>)]
    skipped: Vec<Skipped>,
    #[schema(value_type = Vec<Object>)]
    notes: Vec<Note>,
    /// Operations the filters left out.
    filtered: usize,
    /// With `on_change: hold`: the tools whose changes wait, and the source they wait under.
    held: Vec<String>,
    /// What the guardrail scanner finds in the imported tools, by tool (only those with
    /// findings): shown, not held — the document is the importer's choice.
    #[schema(value_type = Object)]
    findings: BTreeMap<String, Vec<toolsmith_core::guard::Finding>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    source: Option<String>,
}

/// Credentials by the placeholder variable names the import writes (`${TS_CREDENTIAL_n}`).
struct Credentials(HashMap<String, String>);

impl CatalogSource for Credentials {
    fn read(&self, path: &str) -> Result<String, ReadError> {
        Err(ReadError::NoFiles {
            path: path.to_owned(),
            why: "an imported document reads no files",
        })
    }
    fn var(&self, name: &str) -> Option<String> {
        self.0.get(name).cloned()
    }
}

/// Imports an OpenAPI document's operations as `http` tools: new ones are created, changed
/// ones get a new version, the same ones keep theirs. With `dry_run` nothing is written.
#[utoipa::path(post, path = "/v1/openapi/import", tag = "tools", request_body = ImportBody,
    responses((status = 200, body = ImportAnswer), (status = 400, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn import_openapi(
    State(s): Shared,
    Extension(caller): Extension<Caller>,
    Body(body): Body<ImportBody>,
) -> ApiResult<Json<ImportAnswer>> {
    fn unprocessable(m: impl std::fmt::Display) -> ApiError {
        ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid", m.to_string())
    }
    let spec = match (body.spec, &body.spec_url) {
        (Value::Null, Some(url)) => Value::String(fetch_document(&s, url).await?),
        (Value::Null, None) => {
            return Err(unprocessable(
                "give the document (`spec`) or where to fetch it (`spec_url`)",
            ));
        }
        (_, Some(_)) => {
            return Err(unprocessable("give `spec` or `spec_url`, not both"));
        }
        (spec, None) => spec,
    };
    let doc = match spec {
        Value::String(text) => openapi::parse_document(&text).map_err(unprocessable)?,
        other => other,
    };
    // Each credential travels as a variable only this import can read.
    let mut auth = BTreeMap::new();
    let mut vars = HashMap::new();
    for (i, (scheme, value)) in body.credentials.iter().enumerate() {
        let var = format!("TS_CREDENTIAL_{i}");
        let kind = doc
            .pointer(&format!("/components/securitySchemes/{scheme}/scheme"))
            .and_then(Value::as_str)
            .map(str::to_ascii_lowercase);
        match (kind.as_deref(), value.split_once(':')) {
            (Some("basic"), Some((user, password))) => {
                vars.insert(format!("{var}_USER"), user.to_owned());
                vars.insert(format!("{var}_PASSWORD"), password.to_owned());
                auth.insert(scheme.clone(), format!("{var}_USER:{var}_PASSWORD"));
            }
            (Some("basic"), None) => {
                return Err(unprocessable(format!(
                    "credentials.{scheme}: a basic scheme's credential is `user:password`"
                )));
            }
            _ => {
                vars.insert(var.clone(), value.clone());
                auth.insert(scheme.clone(), var);
            }
        }
    }
    let opts_prefix = body.prefix.clone();
    let opts = Options {
        base_url: body.base_url,
        source_url: None,
        tags: body.include.tags,
        operations: body.include.operations,
        paths: body.include.paths,
        exclude_tags: body.exclude.tags,
        exclude_operations: body.exclude.operations,
        exclude_paths: body.exclude.paths,
        prefix: body.prefix,
        include_deprecated: body.include_deprecated,
        auth,
        safe: body.safe,
        dangerous: body.dangerous,
    };
    let src = Credentials(vars);
    let imported = openapi::import(&doc, &opts, &src).map_err(unprocessable)?;
    let mut tools = openapi::tools(&imported, &src).map_err(unprocessable)?;
    if !body.only.is_empty() {
        if let Some(unknown) = body
            .only
            .iter()
            .find(|n| !tools.iter().any(|t| t.name.as_str() == n.as_str()))
        {
            return Err(unprocessable(format!(
                "only: the document makes no tool {unknown:?} (a dry run lists the names)"
            )));
        }
        tools.retain(|t| body.only.iter().any(|n| n == t.name.as_str()));
    }
    let hold = body.on_change == OnChange::Hold;
    let source =
        toolsmith_store::held::source_for(body.source.as_deref(), &opts_prefix, &imported.title);
    // A name held by a tool the document did not make is never taken over (dry run too).
    let (tools, taken) = toolsmith_store::held::claimable(&s.store, tools, &source).await?;
    let shown: Vec<Value> = tools
        .iter()
        .map(|t| t.to_catalog_value(Secrets::Redact))
        .collect();
    // The document's tools may name each other; shadowing is not looked for here.
    let none = std::collections::BTreeSet::new();
    let findings = tools
        .iter()
        .map(|t| {
            (
                t.name.to_string(),
                toolsmith_core::guard::scan_tool(t, &none),
            )
        })
        .filter(|(_, f)| !f.is_empty())
        .collect();
    let mut held = Vec::new();
    let (created, updated, unchanged) = if body.dry_run {
        let mut created = Vec::new();
        let mut updated = Vec::new();
        let mut unchanged = Vec::new();
        for t in &tools {
            let name = t.name.to_string();
            match s.store.get(&name).await {
                Ok(current) if current.tool == *t => unchanged.push(name),
                Ok(_) => updated.push(name),
                Err(_) => created.push(name),
            }
        }
        (created, updated, unchanged)
    } else if hold {
        let r =
            toolsmith_store::held::import_holding(&s.store, &tools, &source, &caller.name).await?;
        s.changed();
        held = r.held;
        held.extend(r.rejected);
        (r.created, Vec::new(), r.unchanged)
    } else {
        let r =
            toolsmith_store::held::import_document(&s.store, &tools, &source, &caller.name).await?;
        s.changed();
        (r.created, r.updated, r.unchanged)
    };
    let mut skipped = imported.skipped;
    skipped.extend(taken);
    // A dry run under `hold` says which changes would wait rather than be saved.
    let (updated, held) = match (body.dry_run, hold) {
        (true, true) => (Vec::new(), updated),
        _ => (updated, held),
    };
    Ok(Json(ImportAnswer {
        title: imported.title,
        version: imported.version,
        dry_run: body.dry_run,
        tools: shown,
        findings,
        created,
        updated,
        unchanged,
        skipped,
        notes: imported.notes,
        filtered: imported.filtered,
        held,
        source: hold.then_some(source),
    }))
}

/// The document at `url`, fetched through the engine's client ([`Gateway::fetch_document`]).
async fn fetch_document(s: &Gateway, url: &str) -> ApiResult<String> {
    s.fetch_document(url)
        .await
        .map_err(|e| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid", e.to_string()))
}

/// The held changes of an OpenAPI source (`openapi:<name>`), with what differs from the
/// served definition (secrets `***`) and the guardrail scanner's findings in the new one.
#[utoipa::path(get, path = "/v1/openapi/{source}/changes", tag = "tools", params(("source" = String, Path, description = "The source, `openapi:<name>`")),
    responses((status = 200, body = super::servers::ChangeList), (status = 404, body = ErrorBody)))]
async fn held_changes(
    State(s): Shared,
    Path(source): Path<String>,
) -> ApiResult<Json<super::servers::ChangeList>> {
    let source = held_source(&s, &source).await?;
    let mut changes = Vec::new();
    let others = toolsmith_gateway::guardrails::foreign_names(&s.store, None).await?;
    for c in toolsmith_store::UpstreamStore::changes(&s.store, Some(&source)).await? {
        let (before, after) = toolsmith_store::held::sides(&s.store, &c).await;
        let now = (!after.is_null()).then(|| after.clone());
        changes.push(super::servers::ChangeView {
            findings: toolsmith_store::definition_to_tool(&after)
                .map(|t| toolsmith_core::guard::scan_tool(&t, &others))
                .unwrap_or_default(),
            diff: toolsmith_store::diff(&before, &after),
            before: (!before.is_null()).then(|| before.clone()),
            tool: c.tool,
            kind: c.kind,
            status: c.status,
            detected_at_ms: c.detected_at_ms,
            now,
        });
    }
    Ok(Json(super::servers::ChangeList { changes }))
}

/// Approves held changes (all, or `{"tools": [...]}`): each held definition becomes its
/// tool's next version.
#[utoipa::path(post, path = "/v1/openapi/{source}/approve", tag = "tools", params(("source" = String, Path, description = "The source, `openapi:<name>`")),
    request_body(content = super::servers::Decision, description = "Which changes (all when empty)"),
    responses((status = 200, body = super::servers::Decided), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn approve_held(
    State(s): Shared,
    Extension(caller): Extension<Caller>,
    Path(source): Path<String>,
    body: axum::body::Bytes,
) -> ApiResult<Json<super::servers::Decided>> {
    let source = held_source(&s, &source).await?;
    let tools = super::servers::decision(&body)?.tools;
    let tools =
        toolsmith_store::held::approve_held(&s.store, &source, &tools, &caller.name).await?;
    s.changed();
    Ok(Json(super::servers::Decided { tools }))
}

/// Rejects held changes: the served versions stay, and these changes stay out until the
/// document changes the tools again.
#[utoipa::path(post, path = "/v1/openapi/{source}/reject", tag = "tools", params(("source" = String, Path, description = "The source, `openapi:<name>`")),
    request_body(content = super::servers::Decision, description = "Which changes (all when empty)"),
    responses((status = 200, body = super::servers::Decided), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn reject_held(
    State(s): Shared,
    Path(source): Path<String>,
    body: axum::body::Bytes,
) -> ApiResult<Json<super::servers::Decided>> {
    let source = held_source(&s, &source).await?;
    let tools = super::servers::decision(&body)?.tools;
    let tools = toolsmith_store::held::reject_held(&s.store, &source, &tools).await?;
    s.changed();
    Ok(Json(super::servers::Decided { tools }))
}

/// `openapi:<name>` as given, or the name with `openapi:` put before it; a source with no
/// changes (held or rejected) is unknown: 404, as an unknown server is.
async fn held_source(s: &Gateway, given: &str) -> ApiResult<String> {
    let source = match toolsmith_store::held::is_openapi_source(given) {
        true => given.to_owned(),
        false => toolsmith_store::held::openapi_source(given),
    };
    if toolsmith_store::UpstreamStore::changes(&s.store, Some(&source))
        .await?
        .is_empty()
    {
        return Err(ApiError::not_found(format!(
            "no changes are held for {source}"
        )));
    }
    Ok(source)
}
