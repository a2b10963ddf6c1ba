//! One JSON error shape for every failure: `{"error": {"code", "message", ...}}`. Server
//! faults (5xx) say only that something failed; their detail goes to the log.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use toolsmith_store::StoreError;

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    /// Extra fields beside `code` and `message` (`current_version`, `details`).
    pub extra: Option<Value>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            extra: None,
        }
    }

    pub fn with(mut self, extra: Value) -> Self {
        self.extra = Some(extra);
        self
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
        let mut error = json!({"code": self.code, "message": self.message});
        if let (Some(Value::Object(extra)), Value::Object(map)) = (self.extra, &mut error) {
            map.extend(extra);
        }
        (self.status, Json(json!({ "error": error }))).into_response()
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound(what) => Self::not_found(format!("{what} not found")),
            StoreError::Conflict {
                ref name,
                current_version,
                based_on,
            } => {
                let message = format!(
                    "tool {name:?} is at version {current_version}; your change was based on version {based_on}"
                );
                Self::new(StatusCode::CONFLICT, "conflict", message)
                    .with(json!({"current_version": current_version}))
            }
            StoreError::Exists(name) => Self::new(
                StatusCode::CONFLICT,
                "exists",
                format!("tool {name:?} already exists"),
            ),
            StoreError::Invalid(message) => {
                Self::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid", message)
            }
            StoreError::Backend(detail) => Self::internal(detail),
        }
    }
}

/// `Json<T>` whose rejections (malformed JSON, wrong content type, wrong shape) use the
/// error shape above.
pub struct Body<T>(pub T);

impl<S, T> FromRequest<S> for Body<T>
where
    Json<T>: FromRequest<S, Rejection = JsonRejection>,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match Json::<T>::from_request(req, state).await {
            Ok(Json(v)) => Ok(Body(v)),
            Err(rejection) => Err(ApiError::new(
                rejection.status(),
                "bad_request",
                rejection.body_text(),
            )),
        }
    }
}
