//! `/v1/export`: the enabled tools rendered for a provider.

use super::*;

/// Registers this file's handlers.
pub(super) fn routes(api: Api) -> Api {
    api.routes(routes!(export))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct ExportParams {
    /// The provider format.
    #[param(inline)]
    format: Format,
    /// OpenAI strict mode (every property required, nullable when optional).
    #[serde(default)]
    strict: bool,
    /// Only tools with this tag.
    tag: Option<String>,
    /// Only this tool (when it is enabled).
    name: Option<String>,
    /// Only members of these toolsets (comma-separated; all of them), like the
    /// `X-Toolsmith-Toolset` header.
    #[allow(
        dead_code,
        reason = "read by the view layer (crate::view), documented here"
    )]
    toolset: Option<String>,
    /// Only tools matching one of these name globs (comma-separated).
    #[allow(
        dead_code,
        reason = "read by the view layer (crate::view), documented here"
    )]
    tools: Option<String>,
}

/// Every enabled tool rendered for one provider. With `strict`, an upstream tool whose schema
/// OpenAI's strict mode cannot take goes with `strict: false`, and an
/// `x-toolsmith-not-strict` header says which and why.
#[utoipa::path(get, path = "/v1/export", tag = "tools", params(ExportParams),
    responses((status = 200, description = "The tools in the provider's format: a JSON array or object (by format), or XML",
        headers(("x-toolsmith-not-strict" = String, description = "With `strict`: a tool sent with `strict: false`, and why (one header per tool)")),
        content((Value = "application/json"), (String = "application/xml"))),
        (status = 400, description = "Unknown format", body = ErrorBody)))]
async fn export(
    State(s): Shared,
    Extension(view): Extension<Arc<View>>,
    Query(p): Query<ExportParams>,
) -> ApiResult<Response> {
    let format = p.format;
    let tools: Vec<Tool> = match p.name {
        Some(name) => match s.store.get(&name).await {
            Ok(r) => vec![r.tool]
                .into_iter()
                .filter(|t| p.tag.as_ref().is_none_or(|tag| t.tags.contains(tag)))
                .collect(),
            Err(toolsmith_store::StoreError::NotFound(_)) => Vec::new(),
            Err(e) => return Err(e.into()),
        },
        None => {
            let tagged = StoreQuery {
                tag: p.tag,
                ..StoreQuery::default()
            };
            s.store
                .search_all(tagged)
                .await?
                .into_iter()
                .map(|r| r.tool)
                .collect()
        }
    };
    let tools: Vec<Tool> = tools.into_iter().filter(|t| view.admits(t)).collect();
    let mut response = match render(&tools, format, RenderOptions { strict: p.strict }) {
        Rendered::Json(v) => Json(v).into_response(),
        Rendered::Xml(text) => ([(header::CONTENT_TYPE, "application/xml")], text).into_response(),
    };
    // An upstream tool whose schema strict mode cannot take is sent with `strict: false`:
    // one header per tool says why.
    if p.strict && matches!(format, Format::Openai | Format::OpenaiResponses) {
        for why in tools
            .iter()
            .filter_map(toolsmith_core::render::strict_problem)
        {
            if let Ok(v) = header::HeaderValue::from_str(&why.replace(['\r', '\n'], " ")) {
                response.headers_mut().append(NOT_STRICT, v);
            }
        }
    }
    Ok(response)
}

/// The header naming a tool sent without strict mode, and why.
const NOT_STRICT: &str = "x-toolsmith-not-strict";
