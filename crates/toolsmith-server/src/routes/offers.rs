//! The upstreams' resources and prompts for callers that do not speak MCP (SPEC §11): listed
//! in the caller's view, a resource read and a prompt got from the server that owns it — the
//! same answers the MCP door gives (`toolsmith_gateway::offers`). Listing needs the read
//! role; reading and getting the call role (an upstream may act on them).

use toolsmith_gateway::offers::OfferError;
use toolsmith_store::UpstreamStore;

use super::*;

/// Registers this file's handlers.
pub(super) fn routes(api: Api) -> Api {
    api.routes(routes!(list_resources))
        .routes(routes!(read_resource))
        .routes(routes!(list_prompts))
        .routes(routes!(get_prompt))
}

/// The upstreams' resources and resource templates in the caller's view (MCP `Resource` and
/// `ResourceTemplate` objects, as the servers gave them).
#[derive(Serialize, ToSchema)]
struct ResourceList {
    #[schema(value_type = Vec<Object>)]
    resources: Vec<Value>,
    #[schema(value_type = Vec<Object>)]
    resource_templates: Vec<Value>,
}

/// The upstreams' prompts in the caller's view (MCP `Prompt` objects, named like tools:
/// the server's prefix, `__`, the prompt's name).
#[derive(Serialize, ToSchema)]
struct PromptList {
    #[schema(value_type = Vec<Object>)]
    prompts: Vec<Value>,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct ListParams {
    /// Only what this MCP server offers (as it is served: an item another server serves
    /// under the same URI or name is that one's).
    server: Option<String>,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct ReadParams {
    /// The resource's URI (one listed, or one a template matches).
    uri: String,
}

/// The arguments of a prompt.
#[derive(Deserialize, Default, ToSchema)]
#[serde(deny_unknown_fields)]
struct PromptArguments {
    /// Argument name → value (MCP prompts take strings).
    #[serde(default)]
    arguments: std::collections::BTreeMap<String, String>,
}

fn offer_error(e: OfferError) -> ApiError {
    match e {
        OfferError::NotFound { .. } => ApiError::not_found(e.to_string()),
        OfferError::Rpc { code, message } => ApiError::new(
            StatusCode::BAD_GATEWAY,
            "upstream",
            format!("the MCP server answered with error {code}: {message}"),
        ),
        OfferError::Upstream(why) => ApiError::new(StatusCode::BAD_GATEWAY, "upstream", why),
    }
}

/// Every resource and resource template of the upstreams the caller may see.
#[utoipa::path(get, path = "/v1/resources", tag = "servers", params(ListParams),
    responses((status = 200, body = ResourceList), (status = 404, body = ErrorBody)))]
async fn list_resources(
    State(s): Shared,
    Extension(v): Extension<Arc<View>>,
    Query(p): Query<ListParams>,
) -> ApiResult<Json<ResourceList>> {
    let only = known_server(&s, p.server.as_deref()).await?;
    Ok(Json(ResourceList {
        resources: s.resources(&v, only).await,
        resource_templates: s.resource_templates(&v, only).await,
    }))
}

/// `server` if the registry has a server of that name (a misspelt one is a 404, not an
/// empty list).
async fn known_server<'a>(s: &Gateway, server: Option<&'a str>) -> ApiResult<Option<&'a str>> {
    if let Some(name) = server {
        s.store.get_server(name).await?;
    }
    Ok(server)
}

/// Reads a resource from the server that owns it: its `contents` (text, or base64 `blob`).
#[utoipa::path(get, path = "/v1/resources/read", tag = "servers", params(ReadParams),
    responses((status = 200, description = "The server's ReadResourceResult", body = Object),
        (status = 404, body = ErrorBody), (status = 502, body = ErrorBody)))]
async fn read_resource(
    State(s): Shared,
    Extension(caller): Extension<Caller>,
    Extension(v): Extension<Arc<View>>,
    Query(p): Query<ReadParams>,
) -> ApiResult<Json<Value>> {
    let answer = s.read_resource(&rest_door(&caller), &v, &p.uri).await;
    Ok(Json(answer.map_err(offer_error)?))
}

/// Every prompt of the upstreams the caller may see.
#[utoipa::path(get, path = "/v1/prompts", tag = "servers", params(ListParams),
    responses((status = 200, body = PromptList), (status = 404, body = ErrorBody)))]
async fn list_prompts(
    State(s): Shared,
    Extension(v): Extension<Arc<View>>,
    Query(p): Query<ListParams>,
) -> ApiResult<Json<PromptList>> {
    let only = known_server(&s, p.server.as_deref()).await?;
    Ok(Json(PromptList {
        prompts: s.prompts(&v, only).await,
    }))
}

/// Gets a prompt with its arguments from the server that owns it: its `messages`.
#[utoipa::path(post, path = "/v1/prompts/{name}/get", tag = "servers",
    params(("name" = String, Path, description = "The prompt's name as listed")),
    request_body(content = PromptArguments, description = "The prompt's arguments (`{}` for none)"),
    responses((status = 200, description = "The server's GetPromptResult", body = Object),
        (status = 404, body = ErrorBody), (status = 502, body = ErrorBody)))]
async fn get_prompt(
    State(s): Shared,
    Extension(caller): Extension<Caller>,
    Extension(v): Extension<Arc<View>>,
    Path(name): Path<String>,
    Body(body): Body<PromptArguments>,
) -> ApiResult<Json<Value>> {
    let arguments = body
        .arguments
        .into_iter()
        .map(|(k, v)| (k, Value::String(v)))
        .collect();
    let answer = s
        .get_prompt(&rest_door(&caller), &v, &name, arguments, None)
        .await;
    Ok(Json(answer.map_err(offer_error)?))
}
