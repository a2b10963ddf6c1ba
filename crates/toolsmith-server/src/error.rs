//! One JSON error shape for every failure: `{"error": {"code", "message", ...}}`. Server
//! faults (5xx) say only that something failed; their detail goes to the log.

use axum::Json;
use axum::extract::{FromRequest, Request};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolsmith_core::json_text;
use toolsmith_store::StoreError;
use utoipa::ToSchema;

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    /// The tool's version, on a conflict.
    pub current_version: Option<u64>,
    /// Each problem found, on an invalid definition.
    pub details: Vec<Value>,
}

/// The body of every error response.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

/// What went wrong: a stable `code` for programs and a `message` for people.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ErrorDetail {
    /// `not_found`, `bad_request`, `conflict`, `exists`, `invalid`, `unauthorized`,
    /// `forbidden`, `base_version_required`, `method_not_allowed`,
    /// `internal`.
    pub code: String,
    pub message: String,
    /// The tool's current version (on `conflict`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_version: Option<u64>,
    /// Each problem with its path (on `invalid`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<Value>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            current_version: None,
            details: Vec::new(),
        }
    }

    pub fn with_details(mut self, details: Vec<Value>) -> Self {
        self.details = details;
        self
    }

    /// A definition the catalog reader refused: 422, each problem with its path.
    pub fn from_catalog(e: toolsmith_core::catalog::CatalogErrors) -> Self {
        let details: Vec<Value> =
            e.0.iter()
                .map(|e| serde_json::json!({"path": e.path, "message": e.message}))
                .collect();
        Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid",
            format!("the definition has {} problem(s)", details.len()),
        )
        .with_details(details)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    pub fn internal(detail: impl std::fmt::Display) -> Self {
        eprintln!("toolsmith: internal error: {detail}");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "the server failed; details are in its log",
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code.into(),
                message: self.message,
                current_version: self.current_version,
                details: self.details,
            },
        };
        (self.status, Json(body)).into_response()
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound(what) => Self::not_found(format!("{what} not found")),
            StoreError::Conflict {
                current_version, ..
            } => Self {
                current_version: Some(current_version),
                ..Self::new(StatusCode::CONFLICT, "conflict", e.to_string())
            },
            StoreError::Exists { .. } => Self::new(StatusCode::CONFLICT, "exists", e.to_string()),
            StoreError::Invalid(message) => {
                Self::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid", message)
            }
            StoreError::Backend(detail) => Self::internal(detail),
        }
    }
}

impl From<toolsmith_gateway::view::ViewError> for ApiError {
    fn from(e: toolsmith_gateway::view::ViewError) -> Self {
        use toolsmith_gateway::view::ViewError;
        match e {
            ViewError::UnknownEndpoint { .. } => {
                Self::new(StatusCode::NOT_FOUND, "unknown_toolset", e.to_string())
            }
            ViewError::UnknownToolset { .. } => {
                Self::new(StatusCode::BAD_REQUEST, "unknown_toolset", e.to_string())
            }
            ViewError::BadAsk(m) => Self::bad_request(m),
            ViewError::Store(e) => e.into(),
        }
    }
}

impl From<toolsmith_gateway::GatewayError> for ApiError {
    fn from(e: toolsmith_gateway::GatewayError) -> Self {
        use toolsmith_gateway::GatewayError;
        match e {
            GatewayError::Store(e) => e.into(),
            GatewayError::Compile(..) => Self::internal(e.to_string()),
            GatewayError::NotForwarded(_) => Self::bad_request(e.to_string()),
        }
    }
}

impl From<toolsmith_gateway::sessions::PeerRefused> for ApiError {
    fn from(e: toolsmith_gateway::sessions::PeerRefused) -> Self {
        use toolsmith_gateway::sessions::PeerRefused;
        let status = match e {
            PeerRefused::NoKey => return Self::not_found(e.to_string()),
            PeerRefused::Proof(_) => (StatusCode::UNAUTHORIZED, "unauthorized"),
            PeerRefused::Registry(_) => (StatusCode::SERVICE_UNAVAILABLE, "registry_unavailable"),
        };
        Self::new(status.0, status.1, e.to_string())
    }
}

/// A JSON body read exactly ([`json_text`]: a duplicate key or a number that would change is
/// refused with its pointer), whose rejections (malformed JSON, wrong content type, a body
/// that is not a JSON object, wrong shape) use the error shape above.
pub struct Body<T>(pub T);

impl<S, T> FromRequest<S> for Body<T>
where
    T: serde::de::DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let text = body_text(req, state).await?;
        let value = json_text::parse(&text).map_err(body_error)?;
        shaped(value).map(Body)
    }
}

/// A call's body: like [`Body`], except that a value inside `arguments` that cannot be taken
/// exactly is the model's mistake, answered as an `invalid_arguments` result like any other
/// argument problem (the rest of the body is then read as usual).
pub struct CallRequest<T> {
    pub body: T,
    /// The problem with the arguments, with its pointer inside them.
    pub arguments_problem: Option<toolsmith_core::result::Problem>,
}

impl<S, T> FromRequest<S> for CallRequest<T>
where
    T: serde::de::DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let text = body_text(req, state).await?;
        match json_text::parse(&text) {
            Ok(value) => Ok(Self {
                body: shaped(value)?,
                arguments_problem: None,
            }),
            Err(json_text::TextError::Value { pointer, message })
                if pointer == "/arguments" || pointer.starts_with("/arguments/") =>
            {
                let value: Value = serde_json::from_str(&text).map_err(|e| {
                    ApiError::new(StatusCode::BAD_REQUEST, "bad_request", e.to_string())
                })?;
                let inner = pointer["/arguments".len()..].to_owned();
                Ok(Self {
                    body: shaped(value)?,
                    arguments_problem: Some(toolsmith_core::result::Problem::new(inner, message)),
                })
            }
            Err(e) => Err(body_error(e)),
        }
    }
}

/// The body as text, once its content type says JSON.
async fn body_text<S: Send + Sync>(req: Request, state: &S) -> Result<String, ApiError> {
    let json = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
        .is_some_and(|v| v == "application/json" || v.ends_with("+json"));
    if !json {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "bad_request",
            "Expected request with `Content-Type: application/json`",
        ));
    }
    let bytes = axum::body::Bytes::from_request(req, state)
        .await
        .map_err(|r| ApiError::new(r.status(), "bad_request", r.body_text()))?;
    String::from_utf8(bytes.to_vec()).map_err(|e| {
        ApiError::bad_request(format!(
            "the body is not UTF-8 text (byte {})",
            e.utf8_error().valid_up_to()
        ))
    })
}

fn body_error(e: json_text::TextError) -> ApiError {
    match e {
        json_text::TextError::Syntax(m) => {
            ApiError::bad_request(format!("Failed to parse the request body as JSON: {m}"))
        }
        json_text::TextError::Value { pointer, message } => ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid",
            format!("the body cannot be taken as sent: {pointer}: {message}"),
        )
        .with_details(vec![
            serde_json::json!({"path": pointer, "message": message}),
        ]),
    }
}

/// A parsed body as `T`: it must be an object of the right shape.
fn shaped<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, ApiError> {
    if !value.is_object() {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid",
            format!(
                "the body must be a JSON object, not {}",
                toolsmith_core::json_text::type_phrase(&value)
            ),
        ));
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let message = e.inner().to_string();
        if path == "." {
            ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid",
                format!("the body does not fit: {message}"),
            )
        } else {
            ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid",
                format!("the body does not fit: {path}: {message}"),
            )
            .with_details(vec![serde_json::json!({"path": path, "message": message})])
        }
    })
}

/// Refuses a NUL character anywhere in the path or query (`%00`): no name, search or cursor
/// has one, and databases refuse them in text (PostgreSQL) or cut strings at them (SQLite's
/// full-text queries).
pub async fn refuse_nul(req: Request, next: Next) -> Response {
    let uri = req.uri();
    let raw = uri.path_and_query().map(|p| p.as_str()).unwrap_or_default();
    if raw.to_ascii_lowercase().contains("%00") {
        return ApiError::bad_request(
            "the path or query contains a NUL character (%00), which no name, search or cursor can hold",
        )
        .into_response();
    }
    next.run(req).await
}

/// Turns the plain-text rejections of axum's extractors (a malformed path or query parameter,
/// say) into the error shape above, so every failure is JSON. On `/mcp` the shape is a
/// JSON-RPC error instead (a body that is not JSON is a parse error, -32700, with status
/// 400), since MCP clients read those.
pub async fn json_errors(req: Request, next: Next) -> Response {
    let mcp = req.uri().path() == "/mcp";
    let response = next.run(req).await;
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let text = match axum::body::to_bytes(response.into_body(), 64 * 1024).await {
        Ok(bytes) => String::from_utf8_lossy(&bytes).trim().to_owned(),
        Err(_) => String::new(),
    };
    if mcp && status.is_client_error() {
        let parse_error = text.contains("deserialize");
        let (status, code) = match parse_error {
            true => (StatusCode::BAD_REQUEST, -32700),
            false => (status, -32600),
        };
        let body = serde_json::json!({"jsonrpc": "2.0", "id": null,
            "error": {"code": code, "message": if text.is_empty() { status.to_string() } else { text }}});
        return (status, Json(body)).into_response();
    }
    let code = match status {
        StatusCode::NOT_FOUND => "not_found",
        StatusCode::METHOD_NOT_ALLOWED => "method_not_allowed",
        StatusCode::UNPROCESSABLE_ENTITY => "invalid",
        s if s.is_server_error() => return ApiError::internal(text).into_response(),
        _ => "bad_request",
    };
    let message = match text.is_empty() {
        true => status
            .canonical_reason()
            .unwrap_or("bad request")
            .to_owned(),
        false => text,
    };
    ApiError::new(status, code, message).into_response()
}
