//! The REST handlers under `/v1`, one file per resource, each registering its handlers on
//! the one [`OpenApiRouter`] so that the routes and the OpenAPI document come from the same
//! list: [`server`] (health, whoami, events), [`tools`], [`versions`], [`calls`] (validate,
//! plan, call), [`drafts`] (definitions from requests, `/v1/check`), [`export`], [`runs`],
//! [`servers`] (upstream MCP servers, their changes and logs), [`connections`] (each user's own
//! OAuth connections), [`server_checks`] (a server
//! tried before it is saved, a client's configuration read), [`imports`] (OpenAPI import),
//! [`toolsets`] (named subsets and their members), [`overview`] (the run log aggregated for
//! the UI's charts), [`offers`] (the upstreams' resources and prompts); [`documents`] is what
//! the routes of versioned documents share.

mod calls;
mod code;
mod connections;
mod documents;
mod drafts;
mod export;
mod imports;
mod offers;
mod overview;
mod runs;
mod server;
mod server_checks;
mod servers;
mod tools;
mod toolsets;
mod versions;

use std::sync::Arc;

use axum::extract::{Extension, Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolsmith_core::catalog::{self, CatalogSource, ReadError};
use toolsmith_core::model::{Format, REDACTED, Secrets};
use toolsmith_core::render::{RenderOptions, Rendered, render};
use toolsmith_core::schema::tool_schema;
use toolsmith_core::secrets;
use toolsmith_core::{ErrorKind, Tool, ToolResult};
use toolsmith_gateway::CallOptions;
use toolsmith_store::{
    Change, Difference, Query as StoreQuery, RunQuery, RunRecord, Store, StoreExt, ToolRecord,
    definition_to_tool,
};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::error::{ApiError, Body, CallRequest, ErrorBody};
use toolsmith_gateway::Caller;
use toolsmith_gateway::Gateway;
use toolsmith_gateway::view::View;

type Shared = State<Arc<Gateway>>;
/// The router each resource file adds its handlers to.
type Api = OpenApiRouter<Arc<Gateway>>;
type ApiResult<T> = Result<T, ApiError>;

/// The `/v1` routes, with the OpenAPI document describing them served at
/// [`crate::openapi::PATH`]; both are built from the same handler list so they cannot drift
/// apart.
pub fn router() -> Router<Arc<Gateway>> {
    let api = OpenApiRouter::with_openapi(crate::openapi::base());
    let api = server::routes(api);
    let api = tools::routes(api);
    let api = versions::routes(api);
    let api = calls::routes(api);
    let api = drafts::routes(api);
    let api = export::routes(api);
    let api = code::routes(api);
    let api = servers::routes(api);
    let api = connections::routes(api);
    let api = server_checks::routes(api);
    let api = imports::routes(api);
    let api = toolsets::routes(api);
    let api = overview::routes(api);
    let api = offers::routes(api);
    let (router, api) = runs::routes(api).split_for_parts();
    let served = Arc::new(crate::openapi::finish(api));
    router
        // Replicas' own door (not in the OpenAPI document: only a replica of this registry
        // may use it).
        .route(
            toolsmith_gateway::sessions::PEER_PATH,
            axum::routing::post(calls::peer_session),
        )
        .route(
            crate::openapi::PATH,
            axum::routing::get(move |State(s): Shared| {
                let document = code::with_limits(&served, &s.code_limits());
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

/// The registry's tools (disabled ones included) in the caller's view.
async fn visible_tools(s: &Gateway, view: &View) -> ApiResult<Vec<ToolRecord>> {
    Ok(s.store
        .search_all(StoreQuery {
            include_disabled: true,
            ..StoreQuery::default()
        })
        .await?
        .into_iter()
        .filter(|r| view.admits(&r.tool))
        .collect())
}

/// The names of the tools in the caller's view, for narrowing what is read by name (the run
/// log).
async fn visible_names(s: &Gateway, view: &View) -> ApiResult<std::collections::HashSet<String>> {
    Ok(visible_tools(s, view)
        .await?
        .into_iter()
        .map(|r| r.tool.name.to_string())
        .collect())
}

/// REST as the door `caller` comes through: counted as `rest`, logged under its name, its
/// rate limit applied.
fn rest_door(caller: &Caller) -> toolsmith_gateway::call::Door {
    toolsmith_gateway::call::Door {
        label: "rest".into(),
        log_name: caller.log_name(),
        caller: Some(caller.clone()),
    }
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
