//! Step 1 of the pipeline: the arguments as an object, read exactly from JSON text and
//! repaired where a model's slip is unambiguous (a code fence, arguments encoded twice).

use super::*;
use crate::json_text::type_phrase;

/// What step 1 repaired, for `meta.coerced`.
pub(super) type Notes = Vec<String>;

/// Step 1: the arguments as an object. `null` means none. Text (OpenAI's form, the CLI's
/// `--args`) is read exactly ([`json_text`]: duplicate keys and numbers that would change are
/// refused); empty text and `null` mean none; text wrapped in a markdown code fence is
/// unwrapped; a JSON text holding a string holding an object (arguments encoded twice) is
/// unwrapped once. Each of these repairs is returned as a note for `meta.coerced`.
pub(super) fn parse_arguments(raw: Value) -> Result<(Map<String, Value>, Notes), Vec<Problem>> {
    let mut notes = Vec::new();
    let value = match raw {
        Value::Null => return Ok((Map::new(), notes)),
        Value::String(text) => match parse_text(&text, &mut notes)? {
            Some(v) => v,
            None => return Ok((Map::new(), notes)),
        },
        other => other,
    };
    match value {
        Value::Object(map) => Ok((map, notes)),
        other => Err(vec![Problem::new(
            "",
            format!(
                "arguments must be a JSON object, got {}",
                type_phrase(&other)
            ),
        )]),
    }
}

/// Arguments given as text; `None` when the text means "no arguments".
pub(super) fn parse_text(
    text: &str,
    notes: &mut Vec<String>,
) -> Result<Option<Value>, Vec<Problem>> {
    let mut body = text.trim();
    if let Some(inner) = unfence(body) {
        notes.push("arguments: markdown code fence removed".into());
        body = inner.trim();
    }
    match body {
        "" => {
            notes.push("arguments: empty text→no arguments".into());
            return Ok(None);
        }
        "null" => {
            notes.push("arguments: null→no arguments".into());
            return Ok(None);
        }
        _ => {}
    }
    let problem = |e: json_text::TextError| match e {
        json_text::TextError::Syntax(m) => {
            vec![Problem::new(
                "",
                format!("arguments are not valid JSON: {m}"),
            )]
        }
        json_text::TextError::Value { pointer, message } => vec![Problem::new(pointer, message)],
    };
    match json_text::parse(body).map_err(problem)? {
        Value::String(inner) if inner.trim_start().starts_with('{') => {
            let v = json_text::parse(inner.trim()).map_err(problem)?;
            notes.push("arguments: string→object".into());
            Ok(Some(v))
        }
        Value::Null => {
            notes.push("arguments: null→no arguments".into());
            Ok(None)
        }
        v => Ok(Some(v)),
    }
}

/// The inside of a markdown code fence (```` ```json … ``` ````), when `text` is exactly one.
pub(super) fn unfence(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("```")?;
    let (info, rest) = rest.split_once('\n')?;
    let info = info.trim();
    if !(info.is_empty() || info.eq_ignore_ascii_case("json")) {
        return None;
    }
    let inner = rest.trim_end().strip_suffix("```")?;
    (!inner.contains("```")).then_some(inner)
}
