//! OAuth's browser-facing pages (`auth: oauth` upstreams, SPEC §11): the callback an
//! authorization server sends the browser back to (`/oauth/callback`: the code exchanged for
//! tokens, the server connected, a page saying so or why not) and toolsmith's client metadata
//! document (`/oauth/client-metadata.json`). Both are public, as a browser reaches them
//! without toolsmith's token; the callback's `state` names an authorization begun here and
//! is good once.

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use serde::Deserialize;
use toolsmith_gateway::Gateway;
use toolsmith_gateway::connections::{self, ConnectError};

/// What an authorization server sends back (RFC 6749 §4.1.2, RFC 9207's `iss`).
#[derive(Deserialize)]
pub(crate) struct Callback {
    code: Option<String>,
    state: Option<String>,
    iss: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

/// `GET /oauth/callback`.
pub(crate) async fn callback(
    State(state): State<Arc<Gateway>>,
    Query(back): Query<Callback>,
) -> Response {
    let Some(auth_state) = back.state.as_deref() else {
        return page(
            StatusCode::BAD_REQUEST,
            "Not connected",
            "The authorization server's answer carries no state: it is not the answer to an authorization begun here.",
        );
    };
    let error = back
        .error
        .as_deref()
        .map(|e| match &back.error_description {
            Some(d) => format!("{e} ({d})"),
            None => e.to_owned(),
        });
    match state
        .finish_authorization(
            auth_state,
            back.code.as_deref(),
            error.as_deref(),
            back.iss.as_deref(),
        )
        .await
    {
        Ok(server) => page(
            StatusCode::OK,
            "Connected",
            &format!("toolsmith is connected to the MCP server {server}. You can close this tab."),
        ),
        Err(e) => {
            let status = match e {
                ConnectError::NoSuchAuthorization => StatusCode::BAD_REQUEST,
                _ => StatusCode::BAD_GATEWAY,
            };
            tracing::warn!("OAuth callback: {e}");
            page(status, "Not connected", &e.to_string())
        }
    }
}

/// `GET /oauth/client-metadata.json`.
pub(crate) async fn client_metadata(
    State(state): State<Arc<Gateway>>,
    headers: HeaderMap,
) -> Response {
    let base = crate::auth::public_base_of(&state, &headers);
    (
        [(header::CONTENT_TYPE, "application/json")],
        connections::client_metadata(&base).to_string(),
    )
        .into_response()
}

/// A small page for the person in the browser.
fn page(status: StatusCode, title: &str, text: &str) -> Response {
    let esc = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
    };
    let body = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>toolsmith: {t}</title></head>\
         <body style=\"font-family: system-ui, sans-serif; max-width: 40em; margin: 4em auto\">\
         <h1>{t}</h1><p>{x}</p></body></html>",
        t = esc(title),
        x = esc(text)
    );
    (status, Html(body)).into_response()
}
