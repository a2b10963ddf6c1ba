//! What every SQL backend shares: turning rows into records, and the search helpers. Generic
//! over sqlx's `Row`, so SQLite and PostgreSQL read their rows with the same code.

use serde_json::Value;
use sqlx::{ColumnIndex, Decode, Row, Type};

use crate::{
    Result, RunRecord, StoreError, ToolRecord, VersionRecord, decode_cursor, definition_to_tool,
};

/// A type a backend can read from a column.
pub(crate) trait Col<R: Row>: for<'r> Decode<'r, R::Database> + Type<R::Database> {}
impl<R: Row, T: for<'r> Decode<'r, R::Database> + Type<R::Database>> Col<R> for T {}

fn json<R: Row>(row: &R, column: &str) -> Result<Value>
where
    for<'a> &'a str: ColumnIndex<R>,
    String: Col<R>,
{
    serde_json::from_str(&row.try_get::<String, _>(column)?)
        .map_err(|e| StoreError::Invalid(e.to_string()))
}

/// A stored definition, its secrets opened ([`crate::secrets`]).
fn definition<R: Row>(row: &R) -> Result<Value>
where
    for<'a> &'a str: ColumnIndex<R>,
    String: Col<R>,
{
    crate::secrets::open(json(row, "definition")?)
}

/// A `tools` row (name, version, definition, updated_at, updated_by).
pub(crate) fn tool<R: Row>(row: &R) -> Result<ToolRecord>
where
    for<'a> &'a str: ColumnIndex<R>,
    String: Col<R>,
    i64: Col<R>,
{
    Ok(ToolRecord {
        tool: definition_to_tool(&definition(row)?)?,
        version: row.try_get::<i64, _>("version")? as u64,
        updated_at_ms: row.try_get("updated_at")?,
        updated_by: row.try_get("updated_by")?,
    })
}

/// A `tool_versions` row.
pub(crate) fn version<R: Row>(row: &R) -> Result<VersionRecord>
where
    for<'a> &'a str: ColumnIndex<R>,
    String: Col<R>,
    i64: Col<R>,
{
    Ok(VersionRecord {
        name: row.try_get("name")?,
        version: row.try_get::<i64, _>("version")? as u64,
        definition: definition(row)?,
        created_at_ms: row.try_get("created_at")?,
        author: row.try_get("author")?,
        summary: row.try_get("summary")?,
    })
}

/// A `runs` row.
pub(crate) fn run<R: Row>(row: &R) -> Result<RunRecord>
where
    for<'a> &'a str: ColumnIndex<R>,
    String: Col<R>,
    i64: Col<R>,
    f64: Col<R>,
    bool: Col<R>,
    Option<i32>: Col<R>,
    Option<String>: Col<R>,
{
    Ok(RunRecord {
        id: row.try_get("id")?,
        tool: row.try_get("tool")?,
        version: row.try_get::<i64, _>("version")? as u64,
        caller: row.try_get("caller")?,
        arguments: json(row, "arguments").unwrap_or(Value::Null),
        kind: row.try_get("kind")?,
        duration_ms: row.try_get("duration_ms")?,
        exit_code: row.try_get("exit_code")?,
        truncated: row.try_get("truncated")?,
        started_at_ms: row.try_get("started_at")?,
        upstream: row.try_get("upstream")?,
        sandbox: row
            .try_get::<Option<String>, _>("sandbox")?
            .and_then(|s| serde_json::from_str(&s).ok()),
        call_id: row.try_get("call_id")?,
        parent_call_id: row.try_get("parent_call_id")?,
        guardrails: row
            .try_get::<Option<String>, _>("guardrails")?
            .and_then(|s| serde_json::from_str(&s).ok()),
    })
}

/// A page of `limit` records read from `rows` (one more than a page was fetched, to know
/// whether another follows), with the cursor after the last one named by `key`.
pub(crate) fn page<R, T>(
    rows: &[R],
    limit: usize,
    read: impl Fn(&R) -> Result<T>,
    key: impl Fn(&T) -> String,
) -> Result<crate::Page<T>> {
    let mut items = rows
        .iter()
        .take(limit)
        .map(read)
        .collect::<Result<Vec<_>>>()?;
    let next_cursor = (rows.len() > limit)
        .then(|| items.last().map(|r| crate::encode_cursor(&key(r))))
        .flatten();
    items.shrink_to_fit();
    Ok(crate::Page { items, next_cursor })
}

/// A page size: 50 when 0, at most 1000.
pub(crate) fn page_size(limit: usize) -> usize {
    match limit {
        0 => 50,
        n => n.min(1000),
    }
}

/// `%text%` for a case-insensitive LIKE with `\` as the escape.
pub(crate) fn like(text: &str) -> String {
    format!("%{}%", escape_like(&text.to_lowercase()))
}

/// `% tag %` for the space-delimited tags column.
pub(crate) fn tag_like(tag: &str) -> String {
    format!("% {} %", escape_like(&tag.to_lowercase()))
}

fn escape_like(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_")
}

/// The id a runs cursor points below; no cursor means from the newest.
pub(crate) fn runs_before(cursor: Option<&str>) -> Result<i64> {
    match cursor {
        Some(c) => decode_cursor(c)?
            .parse()
            .map_err(|_| StoreError::Invalid(format!("invalid cursor {c:?}"))),
        None => Ok(i64::MAX),
    }
}
