//! Each user's own OAuth connections (SPEC §11, `connection: per_user`): the caller lists
//! the per-user servers and whether it connected each, connects one (the URL where it
//! consents, coming back to `/oauth/callback`) and forgets one. A caller limited to toolsets
//! sees (and connects) only the servers some of whose tools it sees. An admin lists
//! everyone's (`?all=true`): which exist and when they were made, never a token.

use super::servers::{Disconnected, connect_error};
use super::*;
use toolsmith_gateway::connections::{ConnectionInfo, MyConnection, Started};
use toolsmith_store::UpstreamStore;

/// Registers this file's handlers.
pub(super) fn routes(api: Api) -> Api {
    api.routes(routes!(list_connections))
        .routes(routes!(connect_mine, disconnect_mine))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct ListParams {
    /// Every user's connections (admin only): which exist, never their tokens.
    #[serde(default)]
    all: bool,
}

/// The caller's per-user servers, or (`all`, admin) every connection made.
#[derive(Serialize, ToSchema)]
struct Connections {
    /// The name the caller's connections are kept under (its token's name; `jwt:` and the
    /// subject of a JWT; `local` where no token is asked).
    subject: String,
    /// Each server that connects each user's own account, and whether the caller did.
    servers: Vec<MyConnection>,
    /// With `all`: every connection made (`subject` `""` is a server's shared one).
    #[serde(skip_serializing_if = "Option::is_none")]
    all: Option<Vec<ConnectionInfo>>,
}

/// The caller's own connections to the servers that connect each user's account
/// (`connection: per_user`); with `all=true` (admin only) also every connection made.
#[utoipa::path(get, path = "/v1/connections", tag = "connections", params(ListParams),
    responses((status = 200, body = Connections), (status = 403, body = ErrorBody)))]
async fn list_connections(
    State(s): Shared,
    Extension(caller): Extension<Caller>,
    Extension(view): Extension<Arc<View>>,
    Query(p): Query<ListParams>,
) -> ApiResult<Json<Connections>> {
    let subject = rest_door(&caller).subject();
    if p.all && caller.role != toolsmith_gateway::Role::Admin {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "every user's connections are listed to admins only; without `all` you see your own",
        ));
    }
    let mut servers = s
        .my_connections(&subject)
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?;
    if let Some(visible) = visible_servers(&s, &view).await? {
        servers.retain(|c| visible.contains(&c.server));
    }
    let all = match p.all {
        true => Some(
            s.connections(None)
                .await
                .map_err(|e| ApiError::internal(e.to_string()))?,
        ),
        false => None,
    };
    Ok(Json(Connections {
        subject,
        servers,
        all,
    }))
}

/// Begins the caller's own authorization with a per-user server: open `authorization_url`
/// in a browser and consent; the authorization server sends the browser back to this
/// server's `/oauth/callback`, and the caller's calls of that server go as them from then on.
#[utoipa::path(post, path = "/v1/connections/{server}", tag = "connections", params(("server" = String, Path, description = "The server's name")),
    responses((status = 200, body = Started), (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "The server has one shared connection, or does not use OAuth"),
        (status = 502, body = ErrorBody, description = "Its authorization server could not be found or refused to register toolsmith")))]
async fn connect_mine(
    State(s): Shared,
    Extension(caller): Extension<Caller>,
    Extension(view): Extension<Arc<View>>,
    Path(server): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Json<Started>> {
    // A server none of whose tools the caller may see answers as a missing one.
    if visible_servers(&s, &view)
        .await?
        .is_some_and(|visible| !visible.contains(&server))
    {
        return Err(connect_error(
            toolsmith_gateway::connections::ConnectError::Unknown(server),
        ));
    }
    let base = crate::auth::public_base_of(&s, &headers);
    s.connect_user(&server, &rest_door(&caller).subject(), &base)
        .await
        .map(Json)
        .map_err(connect_error)
}

/// Forgets the caller's own tokens for a server: its next call needs authorization again.
/// Other users' connections are untouched.
#[utoipa::path(delete, path = "/v1/connections/{server}", tag = "connections", params(("server" = String, Path, description = "The server's name")),
    responses((status = 200, body = Disconnected), (status = 404, body = ErrorBody)))]
async fn disconnect_mine(
    State(s): Shared,
    Extension(caller): Extension<Caller>,
    Path(server): Path<String>,
) -> ApiResult<Json<Disconnected>> {
    s.store.get_server(&server).await?;
    let disconnected = s
        .disconnect(&server, &rest_door(&caller).subject())
        .await
        .map_err(connect_error)?;
    Ok(Json(Disconnected { disconnected }))
}

/// The servers of the tools in a limited caller's view (`None`: the caller sees everything).
async fn visible_servers(
    s: &Gateway,
    view: &View,
) -> ApiResult<Option<std::collections::HashSet<String>>> {
    if view.is_everything() {
        return Ok(None);
    }
    Ok(Some(
        visible_tools(s, view)
            .await?
            .into_iter()
            .filter_map(|r| r.tool.executor.upstream().map(|m| m.server.clone()))
            .collect(),
    ))
}
