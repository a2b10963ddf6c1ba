//! How problems read: JSON pointers, the validator's errors in plain words, and values
//! quoted short (secrets as `***`).

use super::*;

pub(super) fn pointer_of(path: &str) -> String {
    // `a.b[0]` → `/a/b/0`; parameter names cannot contain `/`, `[` or `]`, but may contain
    // `.`, so walk segments the same way they were built.
    let mut out = String::new();
    for seg in path.split('.') {
        let (name, rest) = seg.split_once('[').unwrap_or((seg, ""));
        out.push('/');
        out.push_str(&name.replace('~', "~0"));
        for idx in rest.split('[').filter(|s| !s.is_empty()) {
            out.push('/');
            out.push_str(idx.trim_end_matches(']'));
        }
    }
    out
}

/// Step 4's messages: plain, with the pointer of the offending value. `hide`: the value is a
/// secret, shown as `***`.
pub(super) fn describe(
    error: &jsonschema::ValidationError<'_>,
    noun: &str,
    hide: bool,
) -> Vec<Problem> {
    let at = error.instance_path().as_str().to_string();
    let instance = error.instance();
    let short = |v: &Value| match hide {
        true => REDACTED.to_string(),
        false => short(v),
    };
    match error.kind() {
        ValidationErrorKind::Type { kind } => {
            let expected = match kind {
                TypeKind::Single(t) => article(&t.to_string()),
                TypeKind::Multiple(set) => set
                    .iter()
                    .map(|t| article(&t.to_string()))
                    .collect::<Vec<_>>()
                    .join(" or "),
            };
            vec![Problem::new(
                at,
                format!("{} is not {expected}", short(instance)),
            )]
        }
        ValidationErrorKind::Required { property } => {
            let name = property.as_str().unwrap_or_default();
            let what = if at.is_empty() { noun } else { "property" };
            vec![Problem::new(
                format!("{at}/{}", escape_pointer(name)),
                format!("missing required {what} {property}"),
            )]
        }
        // Reported by the walk, with the known keys.
        ValidationErrorKind::AdditionalProperties { .. } | ValidationErrorKind::FalseSchema => {
            Vec::new()
        }
        ValidationErrorKind::Enum { options } => {
            let list = options
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(Value::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default();
            vec![Problem::new(
                at,
                format!("{} is not one of {list}", short(instance)),
            )]
        }
        _ => {
            let whole = instance.to_string();
            let shown = match hide {
                true => REDACTED.to_string(),
                false => quote_text(whole.clone()),
            };
            vec![Problem::new(
                at,
                error.to_string().replacen(&whole, &shown, 1),
            )]
        }
    }
}

pub(super) fn escape_pointer(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

pub(super) fn article(t: &str) -> String {
    match t {
        "integer" | "array" | "object" => format!("an {t}"),
        "null" => "null".into(),
        _ => format!("a {t}"),
    }
}

/// Longest quoted value a problem message carries, in characters of its JSON text.
pub const QUOTE_MAX: usize = 200;

/// A value quoted whole for a message, unless it is longer than [`QUOTE_MAX`]: then its head
/// and its size (`"1234…" (2097154 bytes)`), so a huge bad argument gives a short problem.
pub(super) fn quote(v: &Value) -> String {
    quote_text(v.to_string())
}

pub(super) fn quote_text(text: String) -> String {
    crate::result::cut(&text, QUOTE_MAX).unwrap_or(text)
}

/// A value quoted for a message, cut to a readable length.
pub(super) fn short(v: &Value) -> String {
    let text = v.to_string();
    if text.chars().count() <= 60 {
        text
    } else {
        let cut: String = text.chars().take(57).collect();
        format!("{cut}...")
    }
}
