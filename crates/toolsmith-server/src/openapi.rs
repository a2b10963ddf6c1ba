//! The OpenAPI 3.1 document served at [`PATH`]. Paths, parameters and body schemas come from
//! the `#[utoipa::path]` attributes on the handlers, collected by the same router that serves
//! them (`routes::router`); this module adds what every operation shares: the bearer-token
//! scheme and the error responses any request can meet.

use serde_json::{Map, Value, json};
use utoipa::OpenApi;
use utoipa::openapi::OpenApi as Document;

/// Where the document is served.
pub const PATH: &str = "/v1/openapi.json";

#[derive(OpenApi)]
#[openapi(
    info(
        title = "toolsmith",
        description = "A registry and execution gateway for LLM tools: versioned definitions, \
                       provider exports, validated calls and an execution log.",
        license(name = "MIT OR Apache-2.0", identifier = "MIT OR Apache-2.0")
    ),
    components(schemas(crate::error::ErrorBody)),
    tags(
        (name = "tools", description = "Definitions: create, edit, enable, export"),
        (name = "versions", description = "History, diff and restore"),
        (name = "calls", description = "Validate and call tools; the execution log"),
        (name = "server", description = "Health"),
        (name = "servers", description = "Upstream MCP servers: status, changes to approve, logs"),
        (name = "connections", description = "Each user's own OAuth connections to per-user servers")
    )
)]
struct Base;

/// The document before the handlers' paths are added.
pub fn base() -> Document {
    Base::openapi()
}

/// Errors any operation can answer with, and the ones only operations with a body can.
const ANY: &[(&str, &str)] = &[
    ("400", "A malformed path or query parameter"),
    (
        "401",
        "A bearer token is required (the server was started with tokens)",
    ),
    ("403", "The token's role does not allow this"),
    ("500", "The server failed; details are in its log"),
];
const WITH_BODY: &[(&str, &str)] = &[
    ("400", "The body is not valid JSON or has the wrong shape"),
    ("413", "The body is larger than the limit (4 MiB)"),
    ("415", "The body is not sent as application/json"),
    ("422", "The body is valid JSON but not a valid request"),
];

/// The finished document: shared error responses on every operation and the bearer scheme.
pub fn finish(api: Document) -> Value {
    let mut doc = serde_json::to_value(&api).unwrap_or_else(|_| json!({}));
    let error = |description: &str| {
        json!({
            "description": description,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}
        })
    };
    if let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) {
        for item in paths.values_mut().filter_map(Value::as_object_mut) {
            for op in item.values_mut().filter_map(Value::as_object_mut) {
                let has_body = op.contains_key("requestBody");
                let responses = op
                    .entry("responses")
                    .or_insert_with(|| json!({}))
                    .as_object_mut();
                let Some(responses) = responses else { continue };
                let extra = ANY.iter().chain(WITH_BODY.iter().filter(|_| has_body));
                for (status, description) in extra {
                    responses
                        .entry(*status)
                        .or_insert_with(|| error(description));
                }
                // OpenAPI requires a description on every response.
                for (status, response) in responses.iter_mut() {
                    if let Some(r) = response.as_object_mut()
                        && !r.contains_key("description")
                    {
                        let reason = status
                            .parse::<u16>()
                            .ok()
                            .and_then(|s| axum::http::StatusCode::from_u16(s).ok())
                            .and_then(|s| s.canonical_reason())
                            .unwrap_or("Response");
                        r.insert("description".into(), json!(reason));
                    }
                }
            }
        }
    }
    if let Some(components) = doc.get_mut("components").and_then(Value::as_object_mut) {
        let schemes = components
            .entry("securitySchemes")
            .or_insert_with(|| Value::Object(Map::new()));
        schemes["bearer"] = json!({
            "type": "http",
            "scheme": "bearer",
            "description": "A token given to `serve` (--tokens-file, TOOLSMITH_TOKEN, --token) or a JWT from its issuer; when it was given none, the local admin token in toolsmith's data folder (`local-admin.token`; the web UI's address that `serve` prints carries it). `/v1/health` and this document need none."
        });
    }
    doc["security"] = json!([{"bearer": []}]);
    doc
}
