//! The REST handlers under `/v1`.

use std::sync::Arc;

use axum::extract::{Extension, Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};
use toolsmith_core::catalog::{self, CatalogSource};
use toolsmith_core::model::{Format, REDACTED, Secrets};
use toolsmith_core::render::{RenderOptions, Rendered, render};
use toolsmith_core::schema::object_schema;
use toolsmith_core::{ErrorKind, Tool, ToolResult};
use toolsmith_exec::CallOptions;
use toolsmith_store::{
    Change, Query as StoreQuery, RunQuery, RunRecord, Store, StoreExt, ToolRecord,
    definition_to_tool,
};

use crate::AppState;
use crate::auth::Caller;
use crate::error::{ApiError, Body};

type Shared = State<Arc<AppState>>;
type ApiResult<T> = Result<T, ApiError>;

pub fn router(_state: Arc<AppState>) -> Router<Arc<AppState>> {
    Router::new()
        .route("/v1/health", get(health))
        .route("/v1/tools", get(list).post(create))
        .route("/v1/tools/{name}", get(show).put(update).delete(remove))
        .route("/v1/tools/{name}/versions", get(versions))
        .route("/v1/tools/{name}/versions/{version}", get(version))
        .route("/v1/tools/{name}/restore/{version}", post(restore))
        .route("/v1/tools/{name}/diff", get(diff))
        .route("/v1/tools/{name}/enable", post(enable))
        .route("/v1/tools/{name}/disable", post(disable))
        .route("/v1/tools/{name}/validate", post(validate))
        .route("/v1/tools/{name}/call", post(call))
        .route("/v1/export", get(export))
        .route("/v1/runs", get(runs))
        .fallback(|| async { ApiError::not_found("no such route; the API lives under /v1") })
        .method_not_allowed_fallback(|| async {
            ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "this route does not take that method",
            )
        })
}

async fn health() -> Json<Value> {
    Json(json!({"status": "ok", "version": env!("CARGO_PKG_VERSION")}))
}

/// A tool as responses show it: secrets redacted.
fn view(r: &ToolRecord) -> Value {
    json!({
        "name": r.tool.name,
        "version": r.version,
        "updated_at_ms": r.updated_at_ms,
        "updated_by": r.updated_by,
        "definition": r.tool.to_catalog_value(Secrets::Redact),
        "input_schema": object_schema(&r.tool.parameters, false),
    })
}

fn summary(r: &ToolRecord) -> Value {
    json!({
        "name": r.tool.name,
        "title": r.tool.title,
        "description": r.tool.description,
        "version": r.version,
        "enabled": r.tool.enabled,
        "danger": r.tool.danger,
        "executor": r.tool.executor.kind(),
        "tags": r.tool.tags,
    })
}

#[derive(Deserialize)]
struct ListParams {
    q: Option<String>,
    tag: Option<String>,
    limit: Option<usize>,
    cursor: Option<String>,
    #[serde(default)]
    include_disabled: bool,
}

async fn list(State(s): Shared, Query(p): Query<ListParams>) -> ApiResult<Json<Value>> {
    let query = StoreQuery {
        text: p.q,
        tag: p.tag,
        include_disabled: p.include_disabled,
        limit: p.limit.unwrap_or(50),
        cursor: p.cursor,
    };
    let page = s.store.search(&query).await?;
    Ok(Json(
        json!({"tools": page.items.iter().map(summary).collect::<Vec<_>>(), "next_cursor": page.next_cursor}),
    ))
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

/// A definition from a request: `"***"` for a secret keeps the stored value (secrets are
/// write-only, so clients send back what they were shown).
fn parse_definition(
    mut value: Value,
    name: Option<&str>,
    current: Option<&Tool>,
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
    if let (Some(current), Some(config)) = (
        current,
        value.get_mut("config").and_then(Value::as_object_mut),
    ) {
        for p in current.config_schema.iter().filter(|p| p.secret) {
            if config.get(&p.name).and_then(Value::as_str) == Some(REDACTED)
                && let Some(v) = current.config.get(&p.name)
            {
                config.insert(p.name.clone(), v.clone());
            }
        }
    }
    catalog::parse_tool(&value, &Closed).map_err(|e| {
        let details: Vec<Value> =
            e.0.iter()
                .map(|e| json!({"path": e.path, "message": e.message}))
                .collect();
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid",
            format!("the definition has {} problem(s)", e.0.len()),
        )
        .with(json!({"details": details}))
    })
}

#[derive(Deserialize, Default)]
struct ChangeParams {
    summary: Option<String>,
    base_version: Option<u64>,
}

async fn create(
    State(s): Shared,
    Extension(caller): Extension<Caller>,
    Query(p): Query<ChangeParams>,
    Body(body): Body<Value>,
) -> ApiResult<Response> {
    let tool = parse_definition(body, None, None)?;
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

async fn show(State(s): Shared, Path(name): Path<String>) -> ApiResult<Json<Value>> {
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

async fn update(
    State(s): Shared,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
    Query(p): Query<ChangeParams>,
    headers: HeaderMap,
    Body(body): Body<Value>,
) -> ApiResult<Json<Value>> {
    let base = base_version(&headers, &p)?;
    let current = s.store.get(&name).await?;
    let tool = parse_definition(body, Some(&name), Some(&current.tool))?;
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

fn version_view(v: &toolsmith_store::VersionRecord, with_definition: bool) -> ApiResult<Value> {
    let mut out = json!({"version": v.version, "created_at_ms": v.created_at_ms, "author": v.author, "summary": v.summary});
    if with_definition {
        out["definition"] = definition_to_tool(&v.definition)?.to_catalog_value(Secrets::Redact);
    }
    Ok(out)
}

async fn versions(State(s): Shared, Path(name): Path<String>) -> ApiResult<Json<Value>> {
    let list = s.store.history(&name).await?;
    Ok(Json(
        json!({"versions": list.iter().map(|v| version_view(v, false)).collect::<ApiResult<Vec<_>>>()?}),
    ))
}

async fn version(
    State(s): Shared,
    Path((name, version)): Path<(String, u64)>,
) -> ApiResult<Json<Value>> {
    Ok(Json(version_view(
        &s.store.version(&name, version).await?,
        true,
    )?))
}

async fn restore(
    State(s): Shared,
    Extension(caller): Extension<Caller>,
    Path((name, version)): Path<(String, u64)>,
) -> ApiResult<Json<Value>> {
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
) -> ApiResult<Json<Value>> {
    let change = Change {
        author: &caller.name,
        summary: "",
    };
    Ok(Json(view(
        &s.store.set_enabled(name, enabled, change).await?,
    )))
}

async fn enable(
    State(s): Shared,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
) -> ApiResult<Json<Value>> {
    toggle(&s, &caller, &name, true).await
}

async fn disable(
    State(s): Shared,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
) -> ApiResult<Json<Value>> {
    toggle(&s, &caller, &name, false).await
}

#[derive(Deserialize)]
struct ExportParams {
    format: String,
    #[serde(default)]
    strict: bool,
    tag: Option<String>,
}

async fn export(State(s): Shared, Query(p): Query<ExportParams>) -> ApiResult<Response> {
    let format = Format::parse(&p.format).ok_or_else(|| {
        ApiError::bad_request(format!(
            "unknown format {:?} (expected one of {})",
            p.format,
            Format::names()
        ))
    })?;
    let mut tools = Vec::new();
    let mut cursor = None;
    loop {
        let page = s
            .store
            .search(&StoreQuery {
                tag: p.tag.clone(),
                limit: 1000,
                cursor,
                ..StoreQuery::default()
            })
            .await?;
        tools.extend(page.items.into_iter().map(|r| r.tool));
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    Ok(
        match render(&tools, format, RenderOptions { strict: p.strict }) {
            Rendered::Json(v) => Json(v).into_response(),
            Rendered::Xml(text) => {
                ([(header::CONTENT_TYPE, "application/xml")], text).into_response()
            }
        },
    )
}

#[derive(Deserialize)]
struct CallBody {
    /// An object, or a JSON string holding one (OpenAI's form); absent means none.
    #[serde(default)]
    arguments: Value,
    /// Pin a version; the current one otherwise.
    version: Option<u64>,
    #[serde(default)]
    confirm: bool,
}

/// The tool at the pinned or current version, compiled.
async fn compiled_tool(
    s: &AppState,
    name: &str,
    version: Option<u64>,
) -> ApiResult<Arc<toolsmith_core::CompiledTool>> {
    let (tool, v) = match version {
        Some(v) => (
            definition_to_tool(&s.store.version(name, v).await?.definition)?,
            v,
        ),
        None => {
            let r = s.store.get(name).await?;
            (r.tool, r.version)
        }
    };
    s.compiled(&tool, v).map_err(ApiError::internal)
}

async fn validate(
    State(s): Shared,
    Path(name): Path<String>,
    Body(body): Body<CallBody>,
) -> ApiResult<Json<Value>> {
    let tool = compiled_tool(&s, &name, body.version).await?;
    Ok(Json(match tool.prepare(body.arguments) {
        Ok(p) => {
            json!({"valid": true, "arguments": Value::Object(p.arguments), "coerced": p.coerced})
        }
        Err(problems) => json!({"valid": false, "details": problems}),
    }))
}

async fn call(
    State(s): Shared,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
    Body(body): Body<CallBody>,
) -> ApiResult<Json<ToolResult>> {
    let tool = compiled_tool(&s, &name, body.version).await?;
    let arguments = body.arguments.clone();
    let result = s
        .engine
        .call(
            &tool,
            body.arguments,
            CallOptions {
                confirmed: body.confirm,
            },
        )
        .await;
    // The log must not fail the call; a failure to write it goes to the server's log.
    if let Err(e) = s
        .store
        .record_run(
            &RunRecord::of(&result, &arguments, &caller.name),
            s.run_retention,
        )
        .await
    {
        eprintln!("toolsmith: recording the run of {name}: {e}");
    }
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

#[derive(Deserialize)]
struct RunParams {
    tool: Option<String>,
    kind: Option<String>,
    caller: Option<String>,
    limit: Option<usize>,
    cursor: Option<String>,
}

async fn runs(State(s): Shared, Query(p): Query<RunParams>) -> ApiResult<Json<Value>> {
    let q = RunQuery {
        tool: p.tool,
        kind: p.kind,
        caller: p.caller,
        limit: p.limit.unwrap_or(50),
        cursor: p.cursor,
    };
    let page = s.store.runs(&q).await?;
    Ok(Json(
        json!({"runs": page.items, "next_cursor": page.next_cursor}),
    ))
}

#[derive(Deserialize)]
struct DiffParams {
    from: u64,
    /// The current version when absent.
    to: Option<u64>,
}

async fn diff(
    State(s): Shared,
    Path(name): Path<String>,
    Query(p): Query<DiffParams>,
) -> ApiResult<Json<Value>> {
    let to = match p.to {
        Some(v) => v,
        None => s.store.get(&name).await?.version,
    };
    let (a, b) = (
        s.store.version(&name, p.from).await?,
        s.store.version(&name, to).await?,
    );
    let changes = toolsmith_store::diff_definitions(&a.definition, &b.definition)?;
    Ok(Json(json!({"from": p.from, "to": to, "changes": changes})))
}
