//! The web UI (SPEC §7): the React application built from `ui/` into `ui-dist/` (committed, so
//! building the server never needs Node) and embedded in the binary with `rust-embed`.
//!
//! Served at `/ui/` (`/` redirects there). A path that names no file gets `index.html`, so
//! deep links work. Hashed assets (`/ui/assets/…`) are cached for a year, `index.html` never;
//! text assets are sent precompressed (`.br` or `.gz` files made at build time) when the
//! client accepts it. Every page carries a strict Content-Security-Policy: scripts only from
//! the server itself, no inline scripts, no other origin anywhere. The files are public: the
//! page must load before it can ask for a token, so `/ui` needs none.

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;

/// The built UI.
#[derive(rust_embed::Embed)]
#[folder = "ui-dist/"]
struct Assets;

/// The policy every UI response carries. Styles may be inline: Ant Design and Monaco inject
/// `<style>` elements. Workers come from the server (Monaco's) or from blobs it makes.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; \
     worker-src 'self' blob:; connect-src 'self'; object-src 'none'; frame-ancestors 'none'; \
     base-uri 'none'; form-action 'none'";

/// `/`, `/ui` and `/ui/...`.
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/", get(|| async { Redirect::to("/ui/") }))
        .route("/ui", get(|| async { Redirect::to("/ui/") }))
        .route("/ui/", get(|headers: HeaderMap| async move { serve("index.html", &headers) }))
        .route(
            "/ui/{*path}",
            get(|Path(path): Path<String>, headers: HeaderMap| async move {
                serve(&path, &headers)
            }),
        )
}

/// Whether a request path belongs to the UI (public: no token needed).
pub fn is_ui_path(path: &str) -> bool {
    path == "/" || path == "/ui" || path.starts_with("/ui/")
}

fn serve(path: &str, headers: &HeaderMap) -> Response {
    let (name, file) = match Assets::get(path) {
        Some(f) if !path.ends_with(".gz") && !path.ends_with(".br") => (path, f),
        // An asset that does not exist is a 404; any other path is a page of the app.
        _ if path.starts_with("assets/") => {
            return crate::error::ApiError::not_found(format!("no UI asset {path:?}"))
                .into_response();
        }
        _ => match Assets::get("index.html") {
            Some(f) => ("index.html", f),
            None => {
                return crate::error::ApiError::not_found(
                    "the web UI is not built into this binary",
                )
                .into_response();
            }
        },
    };
    let accepts = headers
        .get(header::ACCEPT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let accepts = |coding: &str| {
        accepts
            .split(',')
            .any(|c| c.split(';').next().unwrap_or_default().trim() == coding)
    };
    let (body, encoding) = ["br", "gzip"]
        .into_iter()
        .filter(|c| accepts(c))
        .find_map(|c| {
            let ext = if c == "br" { "br" } else { "gz" };
            Assets::get(&format!("{name}.{ext}")).map(|f| (f.data, Some(c)))
        })
        .unwrap_or((file.data, None));
    let mut response = (StatusCode::OK, body.into_owned()).into_response();
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(content_type(name)),
    );
    if let Some(e) = encoding {
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_static(e));
    }
    h.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(if name.starts_with("assets/") {
            "public, max-age=31536000, immutable"
        } else {
            "no-cache"
        }),
    );
    let etag = file
        .metadata
        .sha256_hash()
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect::<String>();
    if let Ok(v) = HeaderValue::from_str(&format!("\"{etag}\"")) {
        h.insert(header::ETAG, v);
    }
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    response
}

fn content_type(name: &str) -> &'static str {
    match name.rsplit('.').next().unwrap_or_default() {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "ttf" => "font/ttf",
        "woff2" => "font/woff2",
        "woff" => "font/woff",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}
