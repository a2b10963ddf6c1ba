//! What the REST routes of every versioned document — tools, MCP servers, toolsets — share:
//! the version a change is based on (`If-Match` or `?base_version=`), the summary it is
//! recorded with, the name in a body against the name in the path, and the writes, through
//! the store's one implementation ([`Documents`]). A kind's own file keeps what is its own
//! (parsing its definition, who may write it, its view).

use toolsmith_store::documents::{Document, Documents};

use super::*;

#[derive(Deserialize, Default, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct ChangeParams {
    /// A one-line summary of the change for the history.
    pub(super) summary: Option<String>,
    /// The version the change is based on (or send `If-Match`).
    pub(super) base_version: Option<u64>,
}

/// The version an update was based on: `If-Match: 3` (quotes allowed) or `?base_version=3`.
pub(super) fn base_version(headers: &HeaderMap, p: &ChangeParams) -> ApiResult<u64> {
    let header_value = headers
        .get(header::IF_MATCH)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().trim_matches('"').to_owned());
    match (header_value, p.base_version) {
        (Some(v), _) => v
            .parse()
            .map_err(|_| ApiError::bad_request(format!("If-Match: {v:?} is not a version number"))),
        (None, Some(v)) => Ok(v),
        (None, None) => Err(ApiError::new(
            StatusCode::PRECONDITION_REQUIRED,
            "base_version_required",
            "say which version your change is based on: an If-Match header or ?base_version=N",
        )),
    }
}

/// A change by `caller`, recorded with `summary`.
pub(super) fn change<'a>(caller: &'a Caller, summary: &'a str) -> Change<'a> {
    Change {
        author: &caller.name,
        summary,
    }
}

/// Creates `doc` at version 1 (`summary`: `created` when not given).
pub(super) async fn create<D: Document>(
    s: &Gateway,
    caller: &Caller,
    doc: &D,
    summary: Option<&str>,
) -> ApiResult<D::Record> {
    let summary = summary.unwrap_or("created");
    Ok(s.store.create_doc(doc, change(caller, summary)).await?)
}

/// Saves `doc` as the version after `base` (`summary`: `edited` when not given); a stale
/// base changes nothing and answers 409.
pub(super) async fn update<D: Document>(
    s: &Gateway,
    caller: &Caller,
    doc: &D,
    base: u64,
    summary: Option<&str>,
) -> ApiResult<D::Record> {
    let summary = summary.unwrap_or("edited");
    Ok(s.store
        .update_doc(doc, base, change(caller, summary))
        .await?)
}

/// Deletes the document `name` of kind `D`; its versions are kept.
pub(super) async fn delete<D: Document>(s: &Gateway, caller: &Caller, name: &str) -> ApiResult<()> {
    Ok(s.store
        .delete_doc::<D>(name, change(caller, "deleted"))
        .await?)
}

/// The body of a `PUT` to `/v1/<kind>s/{name}` names the path's document: its `name` is filled
/// in when absent and must match when given (renaming is creating a new one).
pub(super) fn name_from_path(noun: &str, body: &mut Value, name: &str) -> ApiResult<()> {
    let Value::Object(map) = body else {
        return Ok(());
    };
    match map.get("name") {
        None => {
            map.insert("name".into(), json!(name));
            Ok(())
        }
        Some(n) if n == name => Ok(()),
        Some(n) => Err(ApiError::bad_request(format!(
            "the body names {noun} {n}, the path {name:?}; rename by creating a new {noun}"
        ))),
    }
}
