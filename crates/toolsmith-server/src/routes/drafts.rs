//! Definitions sent in requests — checked, with `***` kept by the rules of
//! [`toolsmith_core::secrets`] — and `/v1/check`, which checks and previews a draft without
//! saving it.

use super::*;

/// Registers this file's handlers.
pub(super) fn routes(api: Api) -> Api {
    api.routes(routes!(check))
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
pub(super) struct Closed;

impl CatalogSource for Closed {
    fn read(&self, path: &str) -> Result<String, ReadError> {
        Err(ReadError::NoFiles {
            path: path.to_owned(),
            why: "definitions sent to the API carry scripts inline (`source`), not `path`",
        })
    }
    fn var(&self, _: &str) -> Option<String> {
        None
    }
}

/// What a definition from a request is for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Draft {
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
pub(super) fn parse_definition(
    mut value: Value,
    name: Option<&str>,
    current: Option<&Tool>,
    purpose: Draft,
) -> ApiResult<Tool> {
    if let Some(name) = name {
        super::documents::name_from_path("tool", &mut value, name)?;
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
/// what a call with sample arguments would run (secrets as `***`). A name outside the
/// caller's toolsets is checked as a new tool's.
#[utoipa::path(post, path = "/v1/check", tag = "tools", request_body = CheckBody,
    responses((status = 200, body = CheckResult)))]
async fn check(
    State(s): Shared,
    Extension(view): Extension<Arc<View>>,
    Body(body): Body<CheckBody>,
) -> ApiResult<Json<CheckResult>> {
    // The stored tool a draft of that name would replace — through the caller's view: a tool
    // hidden from them is checked exactly as a new one, so the answer tells nothing of it.
    let current = match body.definition.get("name").and_then(Value::as_str) {
        Some(name) => match s.store.get(name).await {
            Ok(r) if view.admits(&r.tool) => Some(r.tool),
            Ok(_) => None,
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
        input_schema: Some(tool_schema(&tool)),
        rendered,
        plan,
    }))
}
