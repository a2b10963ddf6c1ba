//! The server itself: health, who the caller is, and registry changes as events.

use super::*;

/// Registers this file's handlers.
pub(super) fn routes(api: Api) -> Api {
    api.routes(routes!(health))
        .routes(routes!(whoami))
        .routes(routes!(events))
}

/// The server is up.
#[derive(Serialize, ToSchema)]
struct Health {
    status: String,
    version: String,
}

/// Whether the server is up, and its version — to anyone (load balancers hold no token);
/// nothing about tools, servers or callers.
#[utoipa::path(get, path = "/v1/health", tag = "server", security(()), responses((status = 200, body = Health)))]
async fn health() -> Json<Health> {
    Json(Health {
        status: "ok".into(),
        version: env!("CARGO_PKG_VERSION").into(),
    })
}

/// Who the caller is.
#[derive(Serialize, ToSchema)]
struct WhoAmI {
    /// The token's name (`local` when the server has no tokens).
    name: String,
    /// `read`, `call` or `admin`.
    role: toolsmith_gateway::Role,
    /// Whether the server asks for tokens.
    auth_required: bool,
    /// How the caller proved who it is: `none`, `token` or `jwt`.
    kind: String,
    /// The toolsets the caller is limited to (empty: every tool).
    toolsets: Vec<String>,
}

/// The caller's name and role, for clients (the web UI) that show or hide what the role
/// cannot do.
#[utoipa::path(get, path = "/v1/whoami", tag = "server", responses((status = 200, body = WhoAmI)))]
async fn whoami(Extension(caller): Extension<Caller>) -> Json<WhoAmI> {
    Json(WhoAmI {
        name: caller.name,
        role: caller.role,
        auth_required: caller.auth_required,
        kind: caller.kind.into(),
        toolsets: caller.toolsets,
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
