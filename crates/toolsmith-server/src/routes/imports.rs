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
    /// The document: a JSON object, or its text (JSON or YAML).
    #[schema(value_type = Object)]
    spec: Value,
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
}

/// Credentials by the placeholder variable names the import writes (`${TS_CREDENTIAL_n}`).
struct Credentials(HashMap<String, String>);

impl CatalogSource for Credentials {
    fn read(&self, path: &str) -> Result<String, String> {
        Err(format!("an imported document reads no files ({path})"))
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
    let unprocessable = |m: String| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid", m);
    let doc = match body.spec {
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
    let tools = openapi::tools(&imported, &src).map_err(unprocessable)?;
    let shown: Vec<Value> = tools
        .iter()
        .map(|t| t.to_catalog_value(Secrets::Redact))
        .collect();
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
    } else {
        let r = s.store.import(&tools, false, &caller.name).await?;
        s.changed();
        (r.created, r.updated, r.unchanged)
    };
    Ok(Json(ImportAnswer {
        title: imported.title,
        version: imported.version,
        dry_run: body.dry_run,
        tools: shown,
        created,
        updated,
        unchanged,
        skipped: imported.skipped,
        notes: imported.notes,
        filtered: imported.filtered,
    }))
}
