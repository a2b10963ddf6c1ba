//! A tool's other keys: its fixed `env`, `working_dir`, `annotations` and per-provider `formats`.

use super::*;

pub(super) fn read_env(f: &Fields<'_>, e: &mut Errs) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Some(v) = f.get("env") else { return out };
    let Value::Object(map) = v else {
        e.push(
            &f.at("env"),
            "expected a mapping of variable names to values",
        );
        return out;
    };
    for (name, value) in map {
        let at = join(&f.at("env"), name);
        if !crate::form::is_env_name(name) {
            e.push(&at, format!("invalid environment variable name {name:?}: use letters, digits and `_`, not starting with a digit"));
        }
        let text = match value {
            Value::String(s) => s.clone(),
            Value::Number(_) | Value::Bool(_) => value.to_string(),
            other => {
                e.push(
                    &at,
                    format!(
                        "expected text, got {}",
                        crate::json_text::type_phrase(other)
                    ),
                );
                continue;
            }
        };
        if text.contains('\0') {
            e.push(&at, "contains a NUL byte");
        }
        out.insert(name.clone(), text);
    }
    out
}

pub(super) fn read_annotations(v: &Value, at: &str, e: &mut Errs) -> Annotations {
    let Some(f) = Fields::new(v, at, &["read_only", "idempotent", "open_world"], e) else {
        return Annotations::default();
    };
    Annotations {
        read_only: f.boolean("read_only", e),
        idempotent: f.boolean("idempotent", e),
        open_world: f.boolean("open_world", e),
    }
}

pub(super) fn read_formats(f: &Fields<'_>, e: &mut Errs) -> BTreeMap<Format, FormatOverride> {
    let mut out = BTreeMap::new();
    let Some(v) = f.get("formats") else {
        return out;
    };
    let names: Vec<&str> = Format::ALL.iter().map(|x| x.as_str()).collect();
    let Some(ff) = Fields::new(v, &f.at("formats"), &names, e) else {
        return out;
    };
    for format in Format::ALL {
        let Some(o) = ff.get(format.as_str()) else {
            continue;
        };
        let Some(of) = Fields::new(o, &ff.at(format.as_str()), &["description", "append"], e)
        else {
            continue;
        };
        let over = FormatOverride {
            description: of.string("description", e),
            append: of.string("append", e),
        };
        if over
            .description
            .as_deref()
            .is_some_and(|d| d.trim().is_empty())
        {
            e.push(
                &of.at("description"),
                "an override description cannot be empty",
            );
        }
        out.insert(format, over);
    }
    out
}

/// `working_dir`: a folder relative to the workspace, without `..`.
pub(super) fn read_working_dir(f: &Fields<'_>, e: &mut Errs) -> Option<String> {
    let dir = f.string("working_dir", e)?;
    if dir.starts_with('/') || dir.split('/').any(|s| s == "..") {
        e.push(
            &f.at("working_dir"),
            format!("{dir:?} must be relative to the workspace, without `..`"),
        );
    }
    Some(dir)
}
