//! Code mode over REST: `/v1/code/stubs`, typed Python stubs of the tools in the caller's view
//! (`toolsmith_core::render::python_stubs`) — a module per server prefix — for people and
//! editors; and `POST /v1/code/run`, a program run against them
//! ([`toolsmith_gateway::code`]).

use toolsmith_core::render::{PythonModule, python_stubs};

use super::*;

/// Registers this file's handlers.
pub(super) fn routes(api: Api) -> Api {
    api.routes(routes!(stubs)).routes(routes!(run))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct StubParams {
    /// Only this module (`tools.github`), as Python source (`text/x-python`).
    module: Option<String>,
    /// Only members of these toolsets (comma-separated; all of them), like the
    /// `X-Toolsmith-Toolset` header.
    #[allow(
        dead_code,
        reason = "read by the view layer (crate::view), documented here"
    )]
    toolset: Option<String>,
}

/// The generated modules.
#[derive(Serialize, ToSchema)]
struct StubList {
    #[schema(value_type = Vec<Object>)]
    modules: Vec<PythonModule>,
}

/// Typed Python stubs of the enabled tools in the caller's view: `{"modules": [{"module",
/// "path", "source"}]}`, or one module's source with `module`.
#[utoipa::path(get, path = "/v1/code/stubs", tag = "tools", params(StubParams),
    responses((status = 200, description = "The modules, or one module's source", body = StubList,
        content((StubList = "application/json"), (String = "text/x-python"))),
        (status = 400, description = "An unknown toolset", body = ErrorBody),
        (status = 404, description = "No such module among them", body = ErrorBody)))]
async fn stubs(
    State(s): Shared,
    Extension(view): Extension<Arc<View>>,
    Query(p): Query<StubParams>,
) -> ApiResult<Response> {
    let tools: Vec<Tool> = s
        .store
        .search_all(StoreQuery::default())
        .await?
        .into_iter()
        .map(|r| r.tool)
        .filter(|t| view.admits(t))
        .collect();
    let modules = python_stubs(&tools);
    match p.module {
        None => Ok(Json(StubList { modules }).into_response()),
        Some(name) => match modules.into_iter().find(|m| m.module == name) {
            Some(m) => Ok((
                [(header::CONTENT_TYPE, "text/x-python; charset=utf-8")],
                m.source,
            )
                .into_response()),
            None => Err(ApiError::not_found(format!(
                "no module {name:?} among the stubs of the tools you may see"
            ))),
        },
    }
}

/// A program to run.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct RunBody {
    /// The program (Python 3). Its last expression is its value; `print` is its output.
    code: String,
    /// Dangerous tools the user agreed the program may call, by served name; a dangerous
    /// tool not named raises `needs_confirmation` in the program and does not run.
    #[serde(default)]
    confirm: Vec<String>,
    /// A shorter time limit than the server's (`serve --code-timeout`, 60 s unless set), in
    /// milliseconds. (The served document's maximum is the server's own: [`with_limits`].)
    #[serde(default)]
    #[schema(minimum = 1, maximum = 60000)]
    timeout_ms: Option<u64>,
}

/// The OpenAPI document as this server serves it: `RunBody.timeout_ms`'s maximum is the
/// server's own time limit for a program (`--code-timeout`), not the default's.
pub(super) fn with_limits(
    document: &Value,
    limits: &toolsmith_gateway::code::CodeLimits,
) -> axum::body::Bytes {
    let pointer = "/components/schemas/RunBody/properties/timeout_ms/maximum";
    let mut document = std::borrow::Cow::Borrowed(document);
    if document.pointer(pointer).and_then(Value::as_u64) != Some(limits.timeout_ms)
        && let Some(maximum) = document.to_mut().pointer_mut(pointer)
    {
        *maximum = Value::from(limits.timeout_ms);
    }
    serde_json::to_vec(&*document).unwrap_or_default().into()
}

/// One tool call the program made.
#[derive(Serialize, ToSchema)]
struct InnerCallBody {
    tool: String,
    /// `ok`, or the error's kind.
    outcome: String,
    duration_ms: f64,
    /// The call's id in the run log.
    #[serde(skip_serializing_if = "Option::is_none")]
    call_id: Option<String>,
}

/// A program's run: its result (`data`: `{"output", "cut", "value", "error"}` when it ran to
/// its end — `error` its exception's traceback; a result of kind `timeout`, `exit_status`…
/// when the sandbox stopped it) and its tool calls in order.
#[derive(Serialize, ToSchema)]
struct CodeRunBody {
    result: ToolResult,
    calls: Vec<InnerCallBody>,
}

/// Runs a Python program in the warm runtime under the kernel sandbox (no network, files
/// read-only but its scratch folder, limits on time, CPU, memory, processes and output). It
/// imports the tools of the caller's view as typed functions (`from tools.github import
/// search_issues`; `GET /v1/code/stubs` shows them), and each call goes through the gateway
/// as the caller's: a tool outside the view is missing, arguments are repaired and checked
/// (a failure raises `toolsmith_runtime.ToolError` with every problem), dangerous tools run
/// only when named in `confirm`, each call is rate-limited and in the run log.
#[utoipa::path(post, path = "/v1/code/run", tag = "calls", request_body = RunBody,
    responses((status = 200, body = CodeRunBody), (status = 400, body = ErrorBody)))]
async fn run(
    State(s): Shared,
    Extension(caller): Extension<Caller>,
    Extension(view): Extension<Arc<View>>,
    Body(body): Body<RunBody>,
) -> ApiResult<Json<CodeRunBody>> {
    let request = toolsmith_gateway::code::CodeRequest {
        code: body.code,
        confirmed: body.confirm.into_iter().collect(),
        confirm_all: false,
        ask: None,
        admin: caller.role == toolsmith_gateway::Role::Admin,
    };
    let mut limits = s.code_limits();
    match body.timeout_ms {
        Some(ms) if (1..=limits.timeout_ms).contains(&ms) => limits.timeout_ms = ms,
        Some(ms) => {
            return Err(ApiError::bad_request(format!(
                "timeout_ms={ms}: a program may run 1 to {} ms here",
                limits.timeout_ms
            )));
        }
        None => {}
    }
    let ran = s
        .run_code(rest_door(&caller), view, request, &limits)
        .await?;
    Ok(Json(CodeRunBody {
        result: ran.result,
        calls: ran
            .calls
            .into_iter()
            .map(|c| InnerCallBody {
                tool: c.tool,
                outcome: c.outcome,
                duration_ms: c.duration_ms,
                call_id: c.call_id,
            })
            .collect(),
    }))
}
