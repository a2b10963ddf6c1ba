//! Calls: validate, plan (the dry run) and call a tool, each through the same pipeline.

use super::*;

/// Registers this file's handlers.
pub(super) fn routes(api: Api) -> Api {
    api.routes(routes!(validate))
        .routes(routes!(plan))
        .routes(routes!(call))
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
    /// What toolsmith answers when an upstream tool asks this caller a question during the
    /// call (elicitation; a REST caller cannot be asked): `decline` (the default), or
    /// `defaults` — accept with the form's own defaults when they cover every required field,
    /// else decline. A page to visit (URL mode) is always declined.
    #[serde(default)]
    questions: Questions,
}

/// What a REST call answers an upstream's questions with.
#[derive(Deserialize, ToSchema, Default, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Questions {
    #[default]
    Decline,
    Defaults,
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
    let tool = s.tool_to_call(&name, body.version).await?;
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
/// the plan. `data` is `{"arguments", "argv", "stdin", "env"}` (`"builtin"` for built-ins,
/// `"http": {"method", "url", "headers", "body"}` for http tools; secret values as `***`), `meta.coerced` the repairs; a problem is an `invalid_arguments`
/// result, a disabled tool `disabled`. Dangerous tools are planned too: nothing runs.
#[utoipa::path(post, path = "/v1/tools/{name}/plan", tag = "calls", params(("name" = String, Path, description = "The tool's name")), request_body = CallBody,
    responses((status = 200, body = ToolResult), (status = 404, body = ErrorBody)))]
async fn plan(
    State(s): Shared,
    Path(name): Path<String>,
    request: CallRequest<CallBody>,
) -> ApiResult<Json<ToolResult>> {
    let body = request.body;
    let tool = s.tool_to_call(&name, body.version).await?;
    let mut result = match request.arguments_problem {
        Some(problem) if tool.tool.enabled => tool.invalid_arguments(vec![problem]),
        _ => toolsmith_core::plan::dry_run(&tool, body.arguments),
    };
    // What this server's kernel would enforce of the tool's sandbox, had it run.
    result.meta.sandbox = s.sandbox_report(&tool.tool);
    Ok(Json(result))
}

/// Calls a tool. Argument and execution failures are results (`success: false`) with a
/// kind and a message; a dangerous tool without `"confirm": true` runs nothing and returns
/// `needs_confirmation`.
#[utoipa::path(post, path = "/v1/tools/{name}/call", tag = "calls", params(("name" = String, Path, description = "The tool's name")), request_body = CallBody,
    responses((status = 200, body = ToolResult), (status = 404, body = ErrorBody),
        (status = 429, description = "Over a rate limit (the tool's for this caller, or the caller's own); `Retry-After` says when to try again",
            headers(("Retry-After" = String, description = "Seconds to wait")), body = ErrorBody)))]
async fn call(
    State(s): Shared,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
    request: CallRequest<CallBody>,
) -> ApiResult<Response> {
    let body = request.body;
    let tool = s.tool_to_call(&name, body.version).await?;
    let door = rest_door(&caller);
    let result = match door.admit(&s, &tool, &body.arguments).await {
        Err(refused) => refused,
        Ok(admitted) => {
            let mut options = CallOptions {
                admin: caller.role == toolsmith_gateway::Role::Admin,
                ..CallOptions::new(caller.log_name(), body.confirm)
            };
            if body.questions == Questions::Defaults {
                options.downstream.elicit = Some(toolsmith_gateway::upstream::Elicitor::defaults());
            }
            admitted
                .run(body.arguments, request.arguments_problem, options)
                .await
        }
    };
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
        return Ok(Json(r).into_response());
    }
    if let Some(e) = result
        .error
        .as_ref()
        .filter(|e| e.kind == ErrorKind::RateLimited)
    {
        let wait = result
            .meta
            .retry_after_ms
            .unwrap_or(1000)
            .div_ceil(1000)
            .max(1);
        let mut response = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            e.message.clone(),
        )
        .into_response();
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, header::HeaderValue::from(wait));
        return Ok(response);
    }
    Ok(Json(result).into_response())
}

/// A session call another replica forwarded here, where its session lives
/// ([`toolsmith_gateway::sessions`]): its proof checked for this request, then answered as the caller
/// named in it, with no further forwarding or limits (the replica the caller reached applied
/// those). This replica writes the run-log entry, under that caller; the replica that
/// forwarded does not write one for an answer that came from here.
pub(super) async fn peer_session(
    State(s): Shared,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> ApiResult<Json<ToolResult>> {
    toolsmith_gateway::sessions::check_peer(
        &s.store,
        headers
            .get(toolsmith_gateway::sessions::PEER_HEADER)
            .and_then(|v| v.to_str().ok()),
        "POST",
        toolsmith_gateway::sessions::PEER_PATH,
        &body,
    )
    .await?;
    let call: toolsmith_gateway::sessions::PeerCall = serde_json::from_slice(&body)
        .map_err(|e| ApiError::bad_request(format!("a forwarded session call: {e}")))?;
    let result = s.answer_forwarded(call).await?;
    Ok(Json(result))
}
