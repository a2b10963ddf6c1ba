//! The REST handlers under `/v1`.

use std::sync::Arc;

use axum::extract::{Extension, Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolsmith_core::catalog::{self, CatalogSource};
use toolsmith_core::model::{Format, REDACTED, Secrets};
use toolsmith_core::render::{RenderOptions, Rendered, render};
use toolsmith_core::schema::object_schema;
use toolsmith_core::secrets;
use toolsmith_core::{ErrorKind, Tool, ToolResult};
use toolsmith_exec::CallOptions;
use toolsmith_store::{
    Change, Difference, Query as StoreQuery, RunQuery, RunRecord, Store, StoreExt, ToolRecord,
    definition_to_tool,
};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::auth::Caller;
use crate::error::{ApiError, Body, CallRequest, ErrorBody};

type Shared = State<Arc<AppState>>;
type ApiResult<T> = Result<T, ApiError>;

/// The `/v1` routes, with the OpenAPI document describing them served at
/// [`crate::openapi::PATH`]; both are built from the same handler list so they cannot drift
/// apart.
pub fn router() -> Router<Arc<AppState>> {
    let (router, api) = OpenApiRouter::with_openapi(crate::openapi::base())
        .routes(routes!(health))
        .routes(routes!(list, create))
        .routes(routes!(show, update, remove))
        .routes(routes!(versions))
        .routes(routes!(version))
        .routes(routes!(restore))
        .routes(routes!(diff))
        .routes(routes!(enable))
        .routes(routes!(disable))
        .routes(routes!(validate))
        .routes(routes!(plan))
        .routes(routes!(call))
        .routes(routes!(whoami))
        .routes(routes!(check))
        .routes(routes!(events))
        .routes(routes!(export))
        .routes(routes!(runs))
        .split_for_parts();
    let served = axum::body::Bytes::from(
        serde_json::to_vec(&crate::openapi::finish(api)).unwrap_or_default(),
    );
    router
        .route(
            crate::openapi::PATH,
            axum::routing::get(move || {
                let document = served.clone();
                async move { ([(header::CONTENT_TYPE, "application/json")], document) }
            }),
        )
        .fallback(|| async { ApiError::not_found("no such route; the API lives under /v1") })
        .method_not_allowed_fallback(|| async {
            ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "this route does not take that method",
            )
        })
}

/// The server is up.
#[derive(Serialize, ToSchema)]
struct Health {
    status: String,
    version: String,
}

/// Whether the server is up, and its version.
#[utoipa::path(get, path = "/v1/health", tag = "server", responses((status = 200, body = Health)))]
async fn health() -> Json<Health> {
    Json(Health {
        status: "ok".into(),
        version: env!("CARGO_PKG_VERSION").into(),
    })
}

/// A tool with its whole definition (secret config values shown as `***`).
#[derive(Serialize, ToSchema)]
struct ToolView {
    name: String,
    version: u64,
    updated_at_ms: i64,
    updated_by: String,
    /// The definition in catalog form (SPEC §2).
    #[schema(value_type = Object)]
    definition: Value,
    /// The JSON Schema (2020-12) of the tool's arguments.
    #[schema(value_type = Object)]
    input_schema: Value,
}

/// A tool in a listing.
#[derive(Serialize, ToSchema)]
struct ToolSummary {
    name: String,
    title: Option<String>,
    description: String,
    version: u64,
    enabled: bool,
    /// `safe` or `dangerous`.
    danger: String,
    /// `command`, `script` or `builtin`.
    executor: String,
    tags: Vec<String>,
}

/// A page of tools; pass `next_cursor` back as `cursor` for the next one.
#[derive(Serialize, ToSchema)]
struct ToolList {
    tools: Vec<ToolSummary>,
    next_cursor: Option<String>,
}

fn view(r: &ToolRecord) -> ToolView {
    ToolView {
        name: r.tool.name.to_string(),
        version: r.version,
        updated_at_ms: r.updated_at_ms,
        updated_by: r.updated_by.clone(),
        definition: r.tool.to_catalog_value(Secrets::Redact),
        input_schema: object_schema(&r.tool.parameters, false),
    }
}

fn summary(r: &ToolRecord) -> ToolSummary {
    ToolSummary {
        name: r.tool.name.to_string(),
        title: r.tool.title.clone(),
        description: r.tool.description.clone(),
        version: r.version,
        enabled: r.tool.enabled,
        danger: serde_json::to_value(r.tool.danger)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default(),
        executor: r.tool.executor.kind().into(),
        tags: r.tool.tags.clone(),
    }
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct ListParams {
    /// Words that must all appear in the name, description or tags.
    q: Option<String>,
    /// Only tools with this tag.
    tag: Option<String>,
    /// Tools per page (50 when absent).
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<usize>,
    /// `next_cursor` from the previous page.
    cursor: Option<String>,
    /// Include disabled tools.
    #[serde(default)]
    include_disabled: bool,
}

/// Lists or searches tools, by name, in pages.
#[utoipa::path(get, path = "/v1/tools", tag = "tools", params(ListParams),
    responses((status = 200, body = ToolList)))]
async fn list(State(s): Shared, Query(p): Query<ListParams>) -> ApiResult<Json<ToolList>> {
    let query = StoreQuery {
        text: p.q,
        tag: p.tag,
        include_disabled: p.include_disabled,
        limit: page_limit(p.limit)?,
        cursor: p.cursor,
    };
    let page = s.store.search(&query).await.map_err(query_error)?;
    Ok(Json(ToolList {
        tools: page.items.iter().map(summary).collect(),
        next_cursor: page.next_cursor,
    }))
}

/// A page size from a query: 1 to 1000, 50 when absent.
fn page_limit(limit: Option<usize>) -> ApiResult<usize> {
    match limit {
        None => Ok(50),
        Some(n @ 1..=1000) => Ok(n),
        Some(n) => Err(ApiError::bad_request(format!(
            "limit={n}: a page holds 1 to 1000 entries"
        ))),
    }
}

/// Store errors caused by the query string (an invalid cursor) are the client's: 400.
fn query_error(e: toolsmith_store::StoreError) -> ApiError {
    match e {
        toolsmith_store::StoreError::Invalid(message) => ApiError::bad_request(message),
        e => e.into(),
    }
}

/// The path of the first string (or key) holding a NUL character.
fn nul_at(v: &Value, at: String) -> Option<String> {
    match v {
        Value::String(s) if s.contains('\0') => Some(at),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, v)| nul_at(v, format!("{at}[{i}]"))),
        Value::Object(map) => map.iter().find_map(|(k, v)| {
            let here = if at.is_empty() {
                k.clone()
            } else {
                format!("{at}.{k}")
            };
            if k.contains('\0') {
                Some(here)
            } else {
                nul_at(v, here)
            }
        }),
        _ => None,
    }
}

/// Definitions sent to the API cannot read files or the server's environment.
struct Closed;

impl CatalogSource for Closed {
    fn read(&self, path: &str) -> Result<String, String> {
        Err(format!(
            "{path}: definitions sent to the API carry scripts inline (`source`), not `path`"
        ))
    }
    fn var(&self, _: &str) -> Option<String> {
        None
    }
}

/// What a definition from a request is for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Draft {
    /// To be saved: `***` in a field secret before and after becomes the stored value.
    Save,
    /// Only checked and previewed: a stored secret never enters it (see
    /// [`toolsmith_core::secrets`]); a kept field stays `***` and is not checked again.
    Preview,
}

/// A definition from a request: `"***"` for a secret keeps the stored value (secrets are
/// write-only, so clients send back what they were shown), by the rules of
/// [`toolsmith_core::secrets`]. Problems are 422 with one detail each, and never carry a
/// stored secret value, whichever definition marked what secret.
fn parse_definition(
    mut value: Value,
    name: Option<&str>,
    current: Option<&Tool>,
    purpose: Draft,
) -> ApiResult<Tool> {
    if let (Some(name), Value::Object(map)) = (name, &mut value) {
        match map.get("name") {
            None => {
                map.insert("name".into(), json!(name));
            }
            Some(n) if n == name => {}
            Some(n) => {
                return Err(ApiError::bad_request(format!(
                    "the body names tool {n}, the path {name:?}; rename by creating a new tool"
                )));
            }
        }
    }
    if let Some(at) = nul_at(&value, String::new()) {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid",
            format!("{at}: contains a NUL character, which a definition cannot hold"),
        ));
    }
    let placeholders = secrets::placeholders(&value, current);
    match (purpose, current) {
        (Draft::Save, Some(current)) => secrets::restore(&mut value, current, &placeholders.kept),
        (Draft::Save, None) => {}
        (Draft::Preview, _) => secrets::leave_out(&mut value, &placeholders.kept),
    }
    let mut problems = placeholders.problems;
    match catalog::parse_tool(&value, &Closed) {
        Ok(mut tool) if problems.is_empty() => {
            if purpose == Draft::Preview {
                for name in &placeholders.kept {
                    tool.config.insert(name.clone(), json!(REDACTED));
                }
            }
            return Ok(tool);
        }
        Ok(_) => {}
        Err(e) => problems.extend(e.0.into_iter().map(|e| (e.path, e.message))),
    }
    let stored = current.map(secrets::values).unwrap_or_default();
    let details: Vec<Value> = problems
        .iter()
        .map(|(path, message)| json!({"path": path, "message": secrets::scrub(message, &stored)}))
        .collect();
    Err(ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid",
        format!("the definition has {} problem(s)", details.len()),
    )
    .with_details(details))
}

#[derive(Deserialize, Default, IntoParams)]
#[into_params(parameter_in = Query)]
struct ChangeParams {
    /// A one-line summary of the change for the history.
    summary: Option<String>,
    /// The version the change is based on (or send `If-Match`).
    base_version: Option<u64>,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct CreateParams {
    /// A one-line summary of the change for the history.
    summary: Option<String>,
}

/// Creates a tool at version 1.
#[utoipa::path(post, path = "/v1/tools", tag = "tools", params(CreateParams),
    request_body(content = Object, description = "A definition in catalog form (SPEC §2); scripts inline as `source`"),
    responses((status = 201, body = ToolView), (status = 409, description = "A tool of that name exists", body = ErrorBody),
        (status = 422, description = "The definition is invalid; `details` names each problem", body = ErrorBody)))]
async fn create(
    State(s): Shared,
    Extension(caller): Extension<Caller>,
    Query(p): Query<CreateParams>,
    Body(body): Body<Value>,
) -> ApiResult<Response> {
    let tool = parse_definition(body, None, None, Draft::Save)?;
    let summary = p.summary.unwrap_or_else(|| "created".into());
    let r = s
        .store
        .create(
            &tool,
            Change {
                author: &caller.name,
                summary: &summary,
            },
        )
        .await?;
    Ok((StatusCode::CREATED, Json(view(&r))).into_response())
}

/// A tool's current definition.
#[utoipa::path(get, path = "/v1/tools/{name}", tag = "tools", params(("name" = String, Path, description = "The tool's name")),
    responses((status = 200, body = ToolView), (status = 404, body = ErrorBody)))]
async fn show(State(s): Shared, Path(name): Path<String>) -> ApiResult<Json<ToolView>> {
    Ok(Json(view(&s.store.get(&name).await?)))
}

/// The version an update was based on: `If-Match: 3` (quotes allowed) or `?base_version=3`.
fn base_version(headers: &HeaderMap, p: &ChangeParams) -> ApiResult<u64> {
    let header_value = headers
        .get(header::IF_MATCH)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().trim_matches('"').to_owned());
    match (header_value, p.base_version) {
        (Some(v), _) => v
            .parse()
            .map_err(|_| ApiError::bad_request(format!("If-Match: {v:?} is not a version number"))),
        (None, Some(v)) => Ok(v),
        (None, None) => Err(ApiError::new(
            StatusCode::PRECONDITION_REQUIRED,
            "base_version_required",
            "say which version your change is based on: an If-Match header or ?base_version=N",
        )),
    }
}

/// Replaces a tool's definition, creating a new version. Name the version the change is
/// based on (`If-Match` or `base_version`); a stale one gets 409 and changes nothing.
#[utoipa::path(put, path = "/v1/tools/{name}", tag = "tools",
    params(("name" = String, Path, description = "The tool's name"), ChangeParams, ("If-Match" = Option<String>, Header, nullable = false, pattern = r#"^\s*"?[0-9]{1,18}"?\s*$"#, description = "The version the change is based on")),
    request_body(content = Object, description = "The whole definition in catalog form; `***` for a secret keeps its value"),
    responses((status = 200, body = ToolView), (status = 404, body = ErrorBody),
        (status = 409, description = "Stale base version; `current_version` says the current one", body = ErrorBody),
        (status = 422, body = ErrorBody), (status = 428, description = "No base version given", body = ErrorBody)))]
async fn update(
    State(s): Shared,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
    Query(p): Query<ChangeParams>,
    headers: HeaderMap,
    Body(body): Body<Value>,
) -> ApiResult<Json<ToolView>> {
    let base = base_version(&headers, &p)?;
    let current = s.store.get(&name).await?;
    let tool = parse_definition(body, Some(&name), Some(&current.tool), Draft::Save)?;
    let summary = p.summary.unwrap_or_else(|| "edited".into());
    let r = s
        .store
        .update(
            &tool,
            base,
            Change {
                author: &caller.name,
                summary: &summary,
            },
        )
        .await?;
    Ok(Json(view(&r)))
}

/// Deletes a tool (its history is kept).
#[utoipa::path(delete, path = "/v1/tools/{name}", tag = "tools", params(("name" = String, Path, description = "The tool's name")),
    responses((status = 204, description = "Deleted"), (status = 404, body = ErrorBody)))]
async fn remove(
    State(s): Shared,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
) -> ApiResult<StatusCode> {
    s.store
        .delete(
            &name,
            Change {
                author: &caller.name,
                summary: "deleted",
            },
        )
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// One saved version of a tool.
#[derive(Serialize, ToSchema)]
struct VersionView {
    version: u64,
    created_at_ms: i64,
    /// The token name that made the change.
    author: String,
    summary: String,
    /// The definition at this version (secrets as `***`); only when one version is asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    definition: Option<Value>,
}

/// A tool's history, oldest first.
#[derive(Serialize, ToSchema)]
struct VersionList {
    versions: Vec<VersionView>,
}

fn version_view(
    v: &toolsmith_store::VersionRecord,
    with_definition: bool,
) -> ApiResult<VersionView> {
    let definition = match with_definition {
        true => Some(definition_to_tool(&v.definition)?.to_catalog_value(Secrets::Redact)),
        false => None,
    };
    Ok(VersionView {
        version: v.version,
        created_at_ms: v.created_at_ms,
        author: v.author.clone(),
        summary: v.summary.clone(),
        definition,
    })
}

/// Every version of a tool.
#[utoipa::path(get, path = "/v1/tools/{name}/versions", tag = "versions", params(("name" = String, Path, description = "The tool's name")),
    responses((status = 200, body = VersionList), (status = 404, body = ErrorBody)))]
async fn versions(State(s): Shared, Path(name): Path<String>) -> ApiResult<Json<VersionList>> {
    let list = s.store.history(&name).await?;
    Ok(Json(VersionList {
        versions: list
            .iter()
            .map(|v| version_view(v, false))
            .collect::<ApiResult<_>>()?,
    }))
}

/// One version of a tool, with its definition.
#[utoipa::path(get, path = "/v1/tools/{name}/versions/{version}", tag = "versions", params(("name" = String, Path, description = "The tool's name"), ("version" = u64, Path, description = "A version number")),
    responses((status = 200, body = VersionView), (status = 404, body = ErrorBody)))]
async fn version(
    State(s): Shared,
    Path((name, version)): Path<(String, u64)>,
) -> ApiResult<Json<VersionView>> {
    Ok(Json(version_view(
        &s.store.version(&name, version).await?,
        true,
    )?))
}

/// Makes an old version current again, as a new version.
#[utoipa::path(post, path = "/v1/tools/{name}/restore/{version}", tag = "versions", params(("name" = String, Path, description = "The tool's name"), ("version" = u64, Path, description = "A version number")),
    responses((status = 200, body = ToolView), (status = 404, body = ErrorBody)))]
async fn restore(
    State(s): Shared,
    Extension(caller): Extension<Caller>,
    Path((name, version)): Path<(String, u64)>,
) -> ApiResult<Json<ToolView>> {
    Ok(Json(view(
        &s.store
            .restore(
                &name,
                version,
                Change {
                    author: &caller.name,
                    summary: "",
                },
            )
            .await?,
    )))
}

/// Enables or disables a tool; the two routes differ only in the value.
async fn toggle(
    s: &AppState,
    caller: &Caller,
    name: &str,
    enabled: bool,
) -> ApiResult<Json<ToolView>> {
    let change = Change {
        author: &caller.name,
        summary: "",
    };
    Ok(Json(view(
        &s.store.set_enabled(name, enabled, change).await?,
    )))
}

/// Enables a tool (a new version).
#[utoipa::path(post, path = "/v1/tools/{name}/enable", tag = "tools", params(("name" = String, Path, description = "The tool's name")),
    responses((status = 200, body = ToolView), (status = 404, body = ErrorBody)))]
async fn enable(
    State(s): Shared,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
) -> ApiResult<Json<ToolView>> {
    toggle(&s, &caller, &name, true).await
}

/// Disables a tool (a new version): it is no longer listed, exported or callable.
#[utoipa::path(post, path = "/v1/tools/{name}/disable", tag = "tools", params(("name" = String, Path, description = "The tool's name")),
    responses((status = 200, body = ToolView), (status = 404, body = ErrorBody)))]
async fn disable(
    State(s): Shared,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
) -> ApiResult<Json<ToolView>> {
    toggle(&s, &caller, &name, false).await
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct ExportParams {
    /// The provider format.
    #[param(inline)]
    format: Format,
    /// OpenAI strict mode (every property required, nullable when optional).
    #[serde(default)]
    strict: bool,
    /// Only tools with this tag.
    tag: Option<String>,
    /// Only this tool (when it is enabled).
    name: Option<String>,
}

/// Every enabled tool rendered for one provider.
#[utoipa::path(get, path = "/v1/export", tag = "tools", params(ExportParams),
    responses((status = 200, description = "The tools in the provider's format: a JSON array or object (by format), or XML",
        content((Value = "application/json"), (String = "application/xml"))),
        (status = 400, description = "Unknown format", body = ErrorBody)))]
async fn export(State(s): Shared, Query(p): Query<ExportParams>) -> ApiResult<Response> {
    let format = p.format;
    let tools: Vec<Tool> = match p.name {
        Some(name) => match s.store.get(&name).await {
            Ok(r) => vec![r.tool]
                .into_iter()
                .filter(|t| p.tag.as_ref().is_none_or(|tag| t.tags.contains(tag)))
                .collect(),
            Err(toolsmith_store::StoreError::NotFound(_)) => Vec::new(),
            Err(e) => return Err(e.into()),
        },
        None => {
            let tagged = StoreQuery {
                tag: p.tag,
                ..StoreQuery::default()
            };
            s.store
                .search_all(tagged)
                .await?
                .into_iter()
                .map(|r| r.tool)
                .collect()
        }
    };
    Ok(
        match render(&tools, format, RenderOptions { strict: p.strict }) {
            Rendered::Json(v) => Json(v).into_response(),
            Rendered::Xml(text) => {
                ([(header::CONTENT_TYPE, "application/xml")], text).into_response()
            }
        },
    )
}

/// A call (or a validation) of a tool.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct CallBody {
    /// An object, or a JSON string holding one (OpenAI's form); absent means none. Anything
    /// else is reported in the result as `invalid_arguments`, like any other argument problem.
    #[serde(default)]
    #[schema(value_type = Value)]
    arguments: Value,
    /// Pin a version; the current one otherwise.
    #[serde(default, deserialize_with = "integral")]
    #[schema(minimum = 1)]
    version: Option<u64>,
    #[serde(default)]
    confirm: bool,
}

/// A whole number that may arrive as `3` or `3.0` (JSON Schema counts both as integers).
fn integral<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let n = Option::<serde_json::Number>::deserialize(d)?;
    let Some(n) = n else { return Ok(None) };
    if let Some(v) = n.as_u64() {
        return Ok(Some(v));
    }
    match n.as_f64() {
        Some(f) if f.fract() == 0.0 && (0.0..=u64::MAX as f64).contains(&f) => Ok(Some(f as u64)),
        _ => Err(serde::de::Error::custom(format!(
            "{n} is not a version number (a whole number from 1)"
        ))),
    }
}

/// The tool at the pinned or current version, compiled. A pinned version runs only while
/// the tool exists and is enabled now, and as dangerous if either it or the current version
/// is: a pin chooses a definition, not a way around what the tool's owner decided since.
async fn compiled_tool(
    s: &AppState,
    name: &str,
    version: Option<u64>,
) -> ApiResult<Arc<toolsmith_core::CompiledTool>> {
    if let Some(c) = s.current(name)
        && version.is_none_or(|v| v == c.version)
    {
        return Ok(c);
    }
    let generation = s.generation();
    let current = s.store.get(name).await?;
    if version.is_none_or(|v| v == current.version) {
        let c = s
            .compiled(&current.tool, current.version)
            .map_err(ApiError::internal)?;
        s.remember_current(generation, c.clone());
        return Ok(c);
    }
    // A pinned older version.
    let v = version.unwrap_or(current.version);
    let mut pinned = definition_to_tool(&s.store.version(name, v).await?.definition)?;
    pinned.enabled = current.tool.enabled;
    if current.tool.is_dangerous() {
        pinned.danger = toolsmith_core::model::Danger::Dangerous;
    }
    s.compiled(&pinned, v).map_err(ApiError::internal)
}

/// The outcome of the argument pipeline.
#[derive(Serialize, ToSchema)]
struct Validation {
    valid: bool,
    /// The arguments after coercion and defaults (when valid).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    arguments: Option<Value>,
    /// Each coercion applied (when valid).
    #[serde(skip_serializing_if = "Option::is_none")]
    coerced: Option<Vec<String>>,
    /// Each problem, with a JSON pointer (when invalid).
    #[serde(skip_serializing_if = "Option::is_none")]
    details: Option<Vec<toolsmith_core::result::Problem>>,
}

/// Runs the argument pipeline (parse, coerce, defaults, validate) without calling the tool.
#[utoipa::path(post, path = "/v1/tools/{name}/validate", tag = "calls", params(("name" = String, Path, description = "The tool's name")), request_body = CallBody,
    responses((status = 200, body = Validation), (status = 404, body = ErrorBody)))]
async fn validate(
    State(s): Shared,
    Path(name): Path<String>,
    request: CallRequest<CallBody>,
) -> ApiResult<Json<Validation>> {
    let body = request.body;
    let tool = compiled_tool(&s, &name, body.version).await?;
    let prepared = match request.arguments_problem {
        Some(problem) => Err(vec![problem]),
        None => tool.prepare(body.arguments),
    };
    Ok(Json(match prepared {
        Ok(p) => Validation {
            valid: true,
            arguments: Some(Value::Object(p.arguments)),
            coerced: Some(p.coerced),
            details: None,
        },
        Err(problems) => Validation {
            valid: false,
            arguments: None,
            coerced: None,
            details: Some(problems),
        },
    }))
}

/// What a call would run, without running it (the CLI's `call --dry-run`): the pipeline, then
/// the plan. `data` is `{"arguments", "argv", "stdin", "env"}` (`"builtin"` for built-ins;
/// secret values as `***`), `meta.coerced` the repairs; a problem is an `invalid_arguments`
/// result, a disabled tool `disabled`. Dangerous tools are planned too: nothing runs.
#[utoipa::path(post, path = "/v1/tools/{name}/plan", tag = "calls", params(("name" = String, Path, description = "The tool's name")), request_body = CallBody,
    responses((status = 200, body = ToolResult), (status = 404, body = ErrorBody)))]
async fn plan(
    State(s): Shared,
    Path(name): Path<String>,
    request: CallRequest<CallBody>,
) -> ApiResult<Json<ToolResult>> {
    let body = request.body;
    let tool = compiled_tool(&s, &name, body.version).await?;
    Ok(Json(match request.arguments_problem {
        Some(problem) if tool.tool.enabled => tool.invalid_arguments(vec![problem]),
        _ => toolsmith_core::plan::dry_run(&tool, body.arguments),
    }))
}

/// A draft definition to check, with what to preview.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct CheckBody {
    /// The definition in catalog form; `***` for a secret of an existing tool keeps its value.
    #[schema(value_type = Object)]
    definition: serde_json::Map<String, Value>,
    /// Also render the tool for this provider.
    #[serde(default)]
    #[schema(inline)]
    format: Option<Format>,
    /// OpenAI strict mode, with `format`.
    #[serde(default)]
    strict: bool,
    /// Sample arguments: also plan a call with them (what would run).
    #[serde(default)]
    #[schema(value_type = Option<Value>)]
    arguments: Option<Value>,
}

/// What a check found.
#[derive(Serialize, ToSchema)]
struct CheckResult {
    /// Whether the definition would be saved.
    valid: bool,
    /// Every problem, each with its path in the definition (`parameters[1].pattern`).
    problems: Vec<Value>,
    /// The JSON Schema of the arguments (when valid).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    input_schema: Option<Value>,
    /// The tool as `format` shows it to a model (when valid and asked for).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Value>)]
    rendered: Option<Value>,
    /// The plan of a call with `arguments` (when valid and asked for), as `/plan` gives it.
    #[serde(skip_serializing_if = "Option::is_none")]
    plan: Option<ToolResult>,
}

/// Checks a definition without saving it — every problem with its path, as the catalog
/// checker reports them — and previews it: its argument schema, how a provider sees it, and
/// what a call with sample arguments would run (secrets as `***`).
#[utoipa::path(post, path = "/v1/check", tag = "tools", request_body = CheckBody,
    responses((status = 200, body = CheckResult)))]
async fn check(State(s): Shared, Body(body): Body<CheckBody>) -> ApiResult<Json<CheckResult>> {
    let current = match body.definition.get("name").and_then(Value::as_str) {
        Some(name) => match s.store.get(name).await {
            Ok(r) => Some(r.tool),
            Err(toolsmith_store::StoreError::NotFound(_)) => None,
            Err(e) => return Err(e.into()),
        },
        None => None,
    };
    let tool = match parse_definition(
        Value::Object(body.definition),
        None,
        current.as_ref(),
        Draft::Preview,
    ) {
        Ok(t) => t,
        Err(e) if e.status.is_client_error() => {
            let problems = if e.details.is_empty() {
                vec![json!({"path": "", "message": e.message})]
            } else {
                e.details
            };
            return Ok(Json(CheckResult {
                valid: false,
                problems,
                input_schema: None,
                rendered: None,
                plan: None,
            }));
        }
        Err(e) => return Err(e),
    };
    let rendered = body.format.map(|f| match f {
        Format::Xml => match render(std::slice::from_ref(&tool), f, RenderOptions::default()) {
            Rendered::Xml(t) => Value::String(t),
            Rendered::Json(v) => v,
        },
        f => toolsmith_core::render::render_one(
            &tool,
            f,
            RenderOptions {
                strict: body.strict,
            },
        ),
    });
    let plan = match body.arguments {
        Some(args) => {
            // A disabled draft is previewed as it would run once enabled.
            let mut enabled = tool.clone();
            enabled.enabled = true;
            let compiled =
                toolsmith_core::CompiledTool::new(enabled, 0).map_err(ApiError::internal)?;
            Some(toolsmith_core::plan::dry_run(&compiled, args))
        }
        None => None,
    };
    Ok(Json(CheckResult {
        valid: true,
        problems: Vec::new(),
        input_schema: Some(object_schema(&tool.parameters, false)),
        rendered,
        plan,
    }))
}

/// Who the caller is.
#[derive(Serialize, ToSchema)]
struct WhoAmI {
    /// The token's name (`local` when the server has no tokens).
    name: String,
    /// `read`, `call` or `admin`.
    role: crate::auth::Role,
    /// Whether the server asks for tokens.
    auth_required: bool,
}

/// The caller's name and role, for clients (the web UI) that show or hide what the role
/// cannot do.
#[utoipa::path(get, path = "/v1/whoami", tag = "server", responses((status = 200, body = WhoAmI)))]
async fn whoami(Extension(caller): Extension<Caller>) -> Json<WhoAmI> {
    Json(WhoAmI {
        name: caller.name,
        role: caller.role,
        auth_required: caller.auth_required,
    })
}

/// Registry changes as server-sent events: `event: changed` with `{"generation": N}` each
/// time the registry changes (here, in another process on the same registry, or on another
/// replica), and a comment every 15 s to keep proxies from closing the stream. Clients
/// refetch what they show.
#[utoipa::path(get, path = "/v1/events", tag = "server",
    responses((status = 200, description = "An event stream (text/event-stream) of `changed` events", content_type = "text/event-stream", body = String)))]
async fn events(State(s): Shared) -> impl IntoResponse {
    use axum::response::sse::{Event, KeepAlive, Sse};
    use tokio_stream::StreamExt;
    let first = s.generation();
    let changes = tokio_stream::wrappers::WatchStream::from_changes(s.subscribe());
    let hello = tokio_stream::once(first);
    let stream = hello.chain(changes).map(|generation| {
        Ok::<_, std::convert::Infallible>(
            Event::default()
                .event("changed")
                .data(json!({"generation": generation}).to_string()),
        )
    });
    Sse::new(stream).keep_alive(KeepAlive::new().interval(std::time::Duration::from_secs(15)))
}

/// Calls a tool. Argument and execution failures are results (`success: false`) with a
/// kind and a message; a dangerous tool without `"confirm": true` runs nothing and returns
/// `needs_confirmation`.
#[utoipa::path(post, path = "/v1/tools/{name}/call", tag = "calls", params(("name" = String, Path, description = "The tool's name")), request_body = CallBody,
    responses((status = 200, body = ToolResult), (status = 404, body = ErrorBody)))]
async fn call(
    State(s): Shared,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
    request: CallRequest<CallBody>,
) -> ApiResult<Json<ToolResult>> {
    let body = request.body;
    let tool = compiled_tool(&s, &name, body.version).await?;
    let arguments = body.arguments.clone();
    let mut unfinished = LogIfDropped {
        state: s.clone(),
        tool: tool.clone(),
        arguments: arguments.clone(),
        caller: caller.name.clone(),
        started: std::time::Instant::now(),
    };
    let result = match request.arguments_problem {
        // (A disabled tool answers `disabled` whatever its arguments: the engine says so.)
        Some(problem) if tool.tool.enabled => tool.invalid_arguments(vec![problem]),
        _ => {
            s.engine
                .call(
                    &tool,
                    body.arguments,
                    CallOptions {
                        confirmed: body.confirm,
                        caller: caller.name.clone(),
                        admin: caller.role == crate::auth::Role::Admin,
                    },
                )
                .await
        }
    };
    unfinished.disarm();
    s.runs
        .record(RunRecord::of(&result, &arguments, &caller.name));
    if result
        .error
        .as_ref()
        .is_some_and(|e| e.kind == ErrorKind::NeedsConfirmation)
    {
        let mut r = result;
        if let Some(e) = &mut r.error {
            e.message
                .push_str("; send the call again with \"confirm\": true once the user has agreed");
        }
        return Ok(Json(r));
    }
    Ok(Json(result))
}

/// Writes a `cancelled` entry to the execution log when a call's request goes away before
/// the call ends (the client disconnected; dropping the call killed its processes), so every
/// call that started is in the log.
struct LogIfDropped {
    state: Arc<AppState>,
    tool: Arc<toolsmith_core::CompiledTool>,
    arguments: Value,
    caller: String,
    started: std::time::Instant,
}

impl LogIfDropped {
    /// The call ended normally; its own entry will be written.
    fn disarm(&mut self) {
        self.caller.clear();
    }
}

impl Drop for LogIfDropped {
    fn drop(&mut self) {
        if self.caller.is_empty() {
            return;
        }
        let mut meta = self.tool.meta(Vec::new());
        meta.duration_ms = Some(self.started.elapsed().as_secs_f64() * 1000.0);
        let result = ToolResult::err(
            ErrorKind::Cancelled,
            "the client went away before the call ended; its processes were killed",
            Vec::new(),
            meta,
        );
        self.state
            .runs
            .record(RunRecord::of(&result, &self.arguments, &self.caller));
    }
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct RunParams {
    /// Only calls of this tool.
    tool: Option<String>,
    /// Only calls with this outcome: `ok` or an error kind.
    kind: Option<String>,
    /// Only calls by this token name.
    caller: Option<String>,
    /// Entries per page (50 when absent).
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<usize>,
    /// `next_cursor` from the previous page.
    cursor: Option<String>,
}

/// A page of the execution log, newest first.
#[derive(Serialize, ToSchema)]
struct RunList {
    runs: Vec<RunRecord>,
    next_cursor: Option<String>,
}

/// The execution log, newest first.
#[utoipa::path(get, path = "/v1/runs", tag = "calls", params(RunParams),
    responses((status = 200, body = RunList)))]
async fn runs(State(s): Shared, Query(p): Query<RunParams>) -> ApiResult<Json<RunList>> {
    // Read your writes: the calls answered so far are in the log before it is read.
    s.runs.flush().await;
    let q = RunQuery {
        tool: p.tool,
        kind: p.kind,
        caller: p.caller,
        limit: page_limit(p.limit)?,
        cursor: p.cursor,
    };
    let page = s.store.runs(&q).await.map_err(query_error)?;
    Ok(Json(RunList {
        runs: page.items,
        next_cursor: page.next_cursor,
    }))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct DiffParams {
    /// The older version.
    from: u64,
    /// The newer version; the current one when absent.
    to: Option<u64>,
}

/// What changed between two versions.
#[derive(Serialize, ToSchema)]
struct DiffView {
    from: u64,
    to: u64,
    changes: Vec<Difference>,
}

/// The differences between two versions of a tool, path by path (secrets as `***`).
#[utoipa::path(get, path = "/v1/tools/{name}/diff", tag = "versions", params(("name" = String, Path, description = "The tool's name"), DiffParams),
    responses((status = 200, body = DiffView), (status = 404, body = ErrorBody)))]
async fn diff(
    State(s): Shared,
    Path(name): Path<String>,
    Query(p): Query<DiffParams>,
) -> ApiResult<Json<DiffView>> {
    let to = match p.to {
        Some(v) => v,
        None => s.store.get(&name).await?.version,
    };
    let (a, b) = (
        s.store.version(&name, p.from).await?,
        s.store.version(&name, to).await?,
    );
    let changes = toolsmith_store::diff_definitions(&a.definition, &b.definition)?;
    Ok(Json(DiffView {
        from: p.from,
        to,
        changes,
    }))
}
