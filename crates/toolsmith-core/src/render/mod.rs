//! Rendering tools for models (SPEC §4): `openai` (optionally strict), `openai-responses`,
//! `anthropic`, `gemini`, `mcp` and `xml`.
//!
//! Every format starts from the tool's canonical JSON Schema ([`crate::schema`]) and applies
//! its provider's rules ([`transform`]); per-format overrides from the catalog change the
//! description. Disabled tools are never rendered.

mod python;
mod transform;
mod xml;

pub use python::{
    Module as PythonModule, module_of as python_module_of, python_function, python_function_brief,
    python_stubs,
};

use serde_json::{Map, Value, json};

use crate::model::{Format, Tool};
use crate::schema::tool_schema;

/// Options that change how tools are rendered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RenderOptions {
    /// OpenAI strict mode (`openai` and `openai-responses` only).
    pub strict: bool,
}

/// A rendered tool list: the value of the provider's `tools` field, or the XML block.
#[derive(Debug, Clone, PartialEq)]
pub enum Rendered {
    Json(Value),
    Xml(String),
}

impl Rendered {
    /// Pretty JSON, or the XML text, ending with a newline.
    pub fn to_text(&self) -> String {
        match self {
            Self::Json(v) => format!("{}\n", serde_json::to_string_pretty(v).unwrap_or_default()),
            Self::Xml(s) => s.clone(),
        }
    }
}

/// Renders the enabled tools among `tools` in `format`.
pub fn render<'t>(
    tools: impl IntoIterator<Item = &'t Tool>,
    format: Format,
    opts: RenderOptions,
) -> Rendered {
    let tools: Vec<&Tool> = tools.into_iter().filter(|t| t.enabled).collect();
    if format == Format::Xml {
        return Rendered::Xml(xml::render(&tools));
    }
    let list: Vec<Value> = tools.iter().map(|t| render_one(t, format, opts)).collect();
    match format {
        Format::Gemini => Rendered::Json(Value::Array(vec![Value::Object(object([(
            "functionDeclarations",
            Value::Array(list),
        )]))])),
        _ => Rendered::Json(Value::Array(list)),
    }
}

/// One tool in a JSON format (for `xml`, use [`render`]).
pub fn render_one(tool: &Tool, format: Format, opts: RenderOptions) -> Value {
    let schema = tool_schema(tool);
    let description = tool.description_for(format);
    let name = exported_name(tool.name.as_str(), format);
    match format {
        Format::Openai => {
            let mut function = object([("name", json!(name)), ("description", json!(description))]);
            match strict_schema(tool, schema, opts) {
                Ok(strict) => {
                    function.insert("parameters".into(), strict);
                    function.insert("strict".into(), json!(true));
                }
                Err(schema) => {
                    function.insert("parameters".into(), schema);
                    if opts.strict {
                        function.insert("strict".into(), json!(false));
                    }
                }
            }
            Value::Object(object([
                ("type", json!("function")),
                ("function", Value::Object(function)),
            ]))
        }
        Format::OpenaiResponses => {
            let (parameters, strict) = match strict_schema(tool, schema, opts) {
                Ok(strict) => (strict, true),
                Err(schema) => (schema, false),
            };
            // The Responses API treats functions as strict unless told otherwise.
            Value::Object(object([
                ("type", json!("function")),
                ("name", json!(name)),
                ("description", json!(description)),
                ("parameters", parameters),
                ("strict", json!(strict)),
            ]))
        }
        Format::Anthropic => Value::Object(object([
            ("name", json!(name)),
            ("description", json!(description)),
            ("input_schema", schema),
        ])),
        Format::Gemini => {
            let mut decl = object([("name", json!(name)), ("description", json!(description))]);
            match &tool.input_schema {
                Some(given) if given.get("properties").is_some_and(|p| p != &json!({})) => {
                    decl.insert("parameters".into(), transform::gemini_given(given));
                }
                Some(_) => {}
                None if !tool.parameters.is_empty() => {
                    decl.insert("parameters".into(), transform::gemini(schema));
                }
                None => {}
            }
            Value::Object(decl)
        }
        Format::Mcp | Format::Xml => mcp_tool(tool, schema, description),
    }
}

/// The strict OpenAI schema, when asked for and possible; otherwise (`Err`) the schema as
/// it is, to be sent with `strict: false` ([`strict_problem`] says why).
fn strict_schema(tool: &Tool, schema: Value, opts: RenderOptions) -> Result<Value, Value> {
    if !opts.strict {
        return Err(schema);
    }
    match &tool.input_schema {
        Some(given) => transform::openai_strict_given(given).map_err(|_| schema),
        None => Ok(transform::openai_strict(schema)),
    }
}

/// Why `tool` cannot be rendered in OpenAI's strict mode (it is sent with `strict: false`
/// then), or `None` when it can.
pub fn strict_problem(tool: &Tool) -> Option<String> {
    let given = tool.input_schema.as_ref()?;
    transform::openai_strict_given(given)
        .err()
        .map(|why| format!("tool `{}` is sent without strict mode: {why}", tool.name))
}

/// A JSON object from pairs, in order. (`json!` would copy non-literal values through
/// `to_value`, which for a schema tree is a deep clone.)
fn object<const N: usize>(pairs: [(&str, Value); N]) -> Map<String, Value> {
    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// An MCP `Tool` object.
fn mcp_tool(tool: &Tool, schema: Value, description: String) -> Value {
    let mut out = Map::new();
    out.insert("name".into(), json!(tool.name.as_str()));
    if let Some(title) = &tool.title {
        out.insert("title".into(), json!(title));
    }
    out.insert("description".into(), json!(description));
    out.insert("inputSchema".into(), schema);
    if let Some(output) = &tool.output_schema {
        out.insert("outputSchema".into(), output.clone());
    }
    let a = tool.annotations;
    let mut ann = Map::new();
    if let Some(title) = &tool.title {
        ann.insert("title".into(), json!(title));
    }
    ann.insert("readOnlyHint".into(), json!(a.read_only.unwrap_or(false)));
    ann.insert("destructiveHint".into(), json!(tool.is_dangerous()));
    ann.insert(
        "idempotentHint".into(),
        json!(a.idempotent.unwrap_or(false)),
    );
    ann.insert("openWorldHint".into(), json!(a.open_world.unwrap_or(true)));
    out.insert("annotations".into(), Value::Object(ann));
    Value::Object(out)
}

/// The name a tool is shown under in `format`: unchanged for MCP and XML; for the others,
/// mapped into `^[A-Za-z_][A-Za-z0-9_]{0,63}$` (see [`portable_name`]).
pub fn exported_name(name: &str, format: Format) -> String {
    match format {
        Format::Mcp | Format::Xml => name.to_owned(),
        _ => portable_name(name),
    }
}

/// Maps an MCP-style name into the set every provider accepts: other characters become `_`,
/// a leading digit gets a `t_` prefix, and names over 64 characters are cut to 55 plus `_`
/// and 8 hex digits of a hash of the whole name. Portable names are returned unchanged.
pub fn portable_name(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if !out.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        out.insert_str(0, "t_");
    }
    if out.len() > 64 {
        // FNV-1a: stable across builds and platforms, unlike std's hasher.
        let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
        out.truncate(55);
        out.push_str(&format!("_{:08x}", hash as u32));
    }
    out
}

/// The tool among `tools` that `format` shows as `rendered` (the reverse of
/// [`exported_name`]), for calls coming back from a provider.
pub fn find_by_exported_name<'t>(
    tools: &'t [Tool],
    format: Format,
    rendered: &str,
) -> Option<&'t Tool> {
    tools
        .iter()
        .find(|t| t.name.as_str() == rendered)
        .or_else(|| {
            tools
                .iter()
                .find(|t| exported_name(t.name.as_str(), format) == rendered)
        })
}

#[cfg(test)]
mod tests {
    use super::portable_name;

    #[test]
    fn names_map_into_the_portable_set() {
        assert_eq!(portable_name("read_file"), "read_file");
        assert_eq!(portable_name("git.status"), "git_status");
        assert_eq!(portable_name("9lives"), "t_9lives");
        let long = "a.".repeat(60);
        let mapped = portable_name(&long);
        assert_eq!(mapped.len(), 64);
        assert_ne!(
            mapped,
            portable_name(&"a-".repeat(60)),
            "the hash keeps long names apart"
        );
    }
}
