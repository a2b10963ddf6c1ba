//! The `<tools>` block for prompt-based models (seed 002's XML formatter).

use std::fmt::Write;

use crate::model::{Format, ParamType, Parameter, Tool};
use crate::plan::text;
use crate::schema::json_type;

pub fn render(tools: &[&Tool]) -> String {
    let mut out = String::from("<tools>\n");
    for tool in tools {
        let _ = writeln!(
            out,
            "  <tool name=\"{}\" danger=\"{}\">",
            escape(tool.name.as_str()),
            if tool.is_dangerous() {
                "dangerous"
            } else {
                "safe"
            }
        );
        let _ = writeln!(
            out,
            "    <description>{}</description>",
            escape(&tool.description_for(Format::Xml))
        );
        if let Some(given) = &tool.input_schema {
            given_arguments(&mut out, given);
        } else if tool.parameters.is_empty() {
            out.push_str("    <arguments/>\n");
        } else {
            out.push_str("    <arguments>\n");
            for p in &tool.parameters {
                parameter(&mut out, p, "arg", 6);
            }
            out.push_str("    </arguments>\n");
        }
        out.push_str("  </tool>\n");
    }
    out.push_str("</tools>\n");
    out
}

/// The arguments of a tool whose schema is given as is: each top-level property with its type
/// and whether it is required, and the whole schema as JSON for what that does not say.
fn given_arguments(out: &mut String, given: &serde_json::Value) {
    let props = given
        .get("properties")
        .and_then(serde_json::Value::as_object);
    let required: Vec<&str> = given
        .get("required")
        .and_then(serde_json::Value::as_array)
        .map(|r| r.iter().filter_map(serde_json::Value::as_str).collect())
        .unwrap_or_default();
    let Some(props) = props.filter(|p| !p.is_empty()) else {
        out.push_str("    <arguments/>\n");
        return;
    };
    out.push_str("    <arguments>\n");
    for (name, p) in props {
        let ty = match p.get("type") {
            Some(serde_json::Value::String(t)) => t.clone(),
            Some(serde_json::Value::Array(ts)) => ts
                .iter()
                .filter_map(serde_json::Value::as_str)
                .collect::<Vec<_>>()
                .join("|"),
            _ => "any".into(),
        };
        let _ = write!(
            out,
            "      <arg name=\"{}\" type=\"{}\" required=\"{}\"",
            escape(name),
            escape(&ty),
            required.contains(&name.as_str())
        );
        match p.get("description").and_then(serde_json::Value::as_str) {
            Some(d) => {
                let _ = writeln!(out, ">{}</arg>", escape(d));
            }
            None => out.push_str("/>\n"),
        }
    }
    let _ = writeln!(out, "      <schema>{}</schema>", escape(&given.to_string()));
    out.push_str("    </arguments>\n");
}

fn parameter(out: &mut String, p: &Parameter, tag: &str, indent: usize) {
    let pad = " ".repeat(indent);
    let _ = write!(out, "{pad}<{tag}");
    if !p.name.is_empty() {
        let _ = write!(out, " name=\"{}\"", escape(&p.name));
    }
    let _ = write!(
        out,
        " type=\"{}\"",
        if p.ty == ParamType::Enum {
            "enum"
        } else {
            json_type(p)
        }
    );
    if tag == "arg" || tag == "property" {
        let _ = write!(out, " required=\"{}\"", p.required);
    }
    if p.nullable {
        out.push_str(" nullable=\"true\"");
    }
    if let Some(d) = &p.default {
        let _ = write!(out, " default=\"{}\"", escape(&text(d)));
    }
    let c = &p.constraints;
    let attrs = [
        ("min_length", c.min_length.map(|v| v.to_string())),
        ("max_length", c.max_length.map(|v| v.to_string())),
        ("pattern", c.pattern.clone()),
        ("format", c.format.clone()),
        ("minimum", c.minimum.as_ref().map(ToString::to_string)),
        ("maximum", c.maximum.as_ref().map(ToString::to_string)),
        (
            "exclusive_minimum",
            c.exclusive_minimum.as_ref().map(ToString::to_string),
        ),
        (
            "exclusive_maximum",
            c.exclusive_maximum.as_ref().map(ToString::to_string),
        ),
        (
            "multiple_of",
            c.multiple_of.as_ref().map(ToString::to_string),
        ),
        ("min_items", c.min_items.map(|v| v.to_string())),
        ("max_items", c.max_items.map(|v| v.to_string())),
        ("unique_items", c.unique_items.then(|| "true".to_string())),
    ];
    for (name, value) in attrs {
        if let Some(v) = value {
            let _ = write!(out, " {name}=\"{}\"", escape(&v));
        }
    }
    let has_children = p.description.is_some()
        || !p.values.is_empty()
        || p.items.is_some()
        || !p.properties.is_empty();
    if !has_children {
        out.push_str("/>\n");
        return;
    }
    out.push_str(">\n");
    if let Some(d) = &p.description {
        let _ = writeln!(out, "{pad}  <description>{}</description>", escape(d));
    }
    for v in &p.values {
        let _ = writeln!(out, "{pad}  <value>{}</value>", escape(&text(v)));
    }
    if let Some(items) = &p.items {
        parameter(out, items, "items", indent + 2);
    }
    for prop in &p.properties {
        parameter(out, prop, "property", indent + 2);
    }
    let _ = writeln!(out, "{pad}</{tag}>");
}

/// Escapes text for XML content and attribute values; characters XML 1.0 cannot carry
/// (most control characters) are written as U+FFFD.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}
