//! Rule checkers, one per provider: what each provider accepts in its `tools` field, written
//! down independently of the renderers so a renderer bug cannot hide behind its own golden
//! file. Each returns every violation found, with the JSON path of the offending node.

use serde_json::Value;

type Violations = Vec<String>;

fn name_ok(name: &str, first: fn(char) -> bool, rest: fn(char) -> bool, max: usize) -> bool {
    !name.is_empty()
        && name.len() <= max
        && name.chars().next().is_some_and(first)
        && name.chars().all(rest)
}

fn alnum_dash(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// Walks every schema node (the root, properties, items) with its path.
fn walk<'v>(node: &'v Value, path: String, out: &mut Vec<(String, &'v Value)>) {
    out.push((path.clone(), node));
    if let Some(props) = node.get("properties").and_then(Value::as_object) {
        for (k, v) in props {
            walk(v, format!("{path}.properties.{k}"), out);
        }
    }
    if let Some(items) = node.get("items") {
        walk(items, format!("{path}.items"), out);
    }
}

fn nodes<'v>(schema: &'v Value, path: &str) -> Vec<(String, &'v Value)> {
    let mut out = Vec::new();
    walk(schema, path.to_owned(), &mut out);
    out
}

fn types_of(node: &Value) -> Vec<&str> {
    match node.get("type") {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// A JSON Schema object node as every JSON-Schema provider wants it at the root.
fn root_object(schema: &Value, at: &str, v: &mut Violations) {
    if schema.get("type") != Some(&Value::String("object".into())) {
        v.push(format!("{at}: the root schema must have type object"));
    }
    for (path, node) in nodes(schema, at) {
        if types_of(node).is_empty() && node.get("enum").is_none() {
            v.push(format!("{path}: untyped schema node"));
        }
        if let Some(req) = node.get("required").and_then(Value::as_array) {
            let props = node.get("properties").and_then(Value::as_object);
            for r in req {
                if !props.is_some_and(|p| p.contains_key(r.as_str().unwrap_or_default())) {
                    v.push(format!("{path}: required {r} is not a property"));
                }
            }
        }
    }
}

/// OpenAI strict mode (structured outputs): closed objects, everything required, optional
/// values nullable, only supported keywords.
fn openai_strict_schema(schema: &Value, at: &str, v: &mut Violations) {
    const UNSUPPORTED: &[&str] = &[
        "minLength",
        "maxLength",
        "uniqueItems",
        "default",
        "patternProperties",
        "minProperties",
        "maxProperties",
        "contains",
    ];
    for (path, node) in nodes(schema, at) {
        for key in UNSUPPORTED {
            if node.get(*key).is_some() {
                v.push(format!("{path}: `{key}` is not supported in strict mode"));
            }
        }
        if types_of(node).contains(&"object") {
            if node.get("additionalProperties") != Some(&Value::Bool(false)) {
                v.push(format!(
                    "{path}: strict objects need additionalProperties: false"
                ));
            }
            let props: Vec<&String> = node
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| p.keys().collect())
                .unwrap_or_default();
            let req: Vec<&str> = node
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            for p in props {
                if !req.contains(&p.as_str()) {
                    v.push(format!("{path}: property {p} is not in required"));
                }
            }
        }
        if let Some(values) = node.get("enum").and_then(Value::as_array)
            && types_of(node).contains(&"null")
            && !values.contains(&Value::Null)
        {
            v.push(format!("{path}: a nullable enum must list null"));
        }
    }
}

pub fn openai(tools: &Value, strict: bool) -> Violations {
    let mut v = Vec::new();
    for (i, t) in tools.as_array().into_iter().flatten().enumerate() {
        let at = format!("[{i}]");
        if t["type"] != "function" {
            v.push(format!("{at}.type: must be \"function\""));
        }
        let f = &t["function"];
        if !f["name"]
            .as_str()
            .is_some_and(|n| name_ok(n, alnum_dash, alnum_dash, 64))
        {
            v.push(format!(
                "{at}.function.name: must match ^[a-zA-Z0-9_-]{{1,64}}$"
            ));
        }
        if !f["description"].is_string() {
            v.push(format!("{at}.function.description: missing"));
        }
        root_object(
            &f["parameters"],
            &format!("{at}.function.parameters"),
            &mut v,
        );
        if strict {
            if f["strict"] != true {
                v.push(format!("{at}.function.strict: must be true"));
            }
            openai_strict_schema(
                &f["parameters"],
                &format!("{at}.function.parameters"),
                &mut v,
            );
        }
    }
    v
}

pub fn openai_responses(tools: &Value, strict: bool) -> Violations {
    let mut v = Vec::new();
    for (i, t) in tools.as_array().into_iter().flatten().enumerate() {
        let at = format!("[{i}]");
        if t["type"] != "function" || t.get("function").is_some() {
            v.push(format!(
                "{at}: must be a flat {{\"type\": \"function\", \"name\", ...}} object"
            ));
        }
        if !t["name"]
            .as_str()
            .is_some_and(|n| name_ok(n, alnum_dash, alnum_dash, 64))
        {
            v.push(format!("{at}.name: must match ^[a-zA-Z0-9_-]{{1,64}}$"));
        }
        if t["strict"] != Value::Bool(strict) {
            v.push(format!(
                "{at}.strict: must be {strict} (the Responses API defaults to strict)"
            ));
        }
        root_object(&t["parameters"], &format!("{at}.parameters"), &mut v);
        if strict {
            openai_strict_schema(&t["parameters"], &format!("{at}.parameters"), &mut v);
        }
    }
    v
}

pub fn anthropic(tools: &Value) -> Violations {
    let mut v = Vec::new();
    for (i, t) in tools.as_array().into_iter().flatten().enumerate() {
        let at = format!("[{i}]");
        let keys: Vec<&String> = t
            .as_object()
            .map(|o| o.keys().collect())
            .unwrap_or_default();
        for k in keys {
            if !["name", "description", "input_schema"].contains(&k.as_str()) {
                v.push(format!("{at}.{k}: not a field of an Anthropic tool"));
            }
        }
        if !t["name"]
            .as_str()
            .is_some_and(|n| name_ok(n, alnum_dash, alnum_dash, 64))
        {
            v.push(format!("{at}.name: must match ^[a-zA-Z0-9_-]{{1,64}}$"));
        }
        root_object(&t["input_schema"], &format!("{at}.input_schema"), &mut v);
    }
    v
}

pub fn gemini(tools: &Value) -> Violations {
    const TYPES: &[&str] = &["STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT"];
    const KEYS: &[&str] = &[
        "type",
        "format",
        "description",
        "nullable",
        "enum",
        "items",
        "properties",
        "required",
        "minItems",
        "maxItems",
        "minimum",
        "maximum",
        "minLength",
        "maxLength",
        "pattern",
    ];
    let mut v = Vec::new();
    let Some(list) = tools.as_array().filter(|a| a.len() == 1) else {
        return vec!["must be one Tool object: [{\"functionDeclarations\": [...]}]".into()];
    };
    for (i, d) in list[0]["functionDeclarations"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let at = format!("[0].functionDeclarations[{i}]");
        let first = |c: char| c.is_ascii_alphabetic() || c == '_';
        let rest = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-');
        if !d["name"]
            .as_str()
            .is_some_and(|n| name_ok(n, first, rest, 64))
        {
            v.push(format!(
                "{at}.name: must start with a letter or _ and use a-z, 0-9, _ . - (64 at most)"
            ));
        }
        let Some(params) = d.get("parameters") else {
            continue;
        };
        if params["type"] != "OBJECT" {
            v.push(format!("{at}.parameters: must be an OBJECT"));
        }
        for (path, node) in nodes(params, &format!("{at}.parameters")) {
            match node["type"].as_str() {
                Some(t) if TYPES.contains(&t) => {}
                _ => v.push(format!("{path}.type: every node needs one of {TYPES:?}")),
            }
            for k in node.as_object().into_iter().flat_map(|o| o.keys()) {
                if !KEYS.contains(&k.as_str()) {
                    v.push(format!("{path}.{k}: not in Gemini's schema subset"));
                }
            }
            if let Some(values) = node.get("enum").and_then(Value::as_array)
                && (node["type"] != "STRING" || !values.iter().all(Value::is_string))
            {
                v.push(format!(
                    "{path}.enum: Gemini enums are STRING with string values"
                ));
            }
            if node["type"] == "OBJECT"
                && node
                    .get("properties")
                    .and_then(Value::as_object)
                    .is_none_or(|p| p.is_empty())
            {
                v.push(format!("{path}: an OBJECT needs properties"));
            }
        }
    }
    v
}

pub fn mcp(tools: &Value) -> Violations {
    let mut v = Vec::new();
    for (i, t) in tools.as_array().into_iter().flatten().enumerate() {
        let at = format!("[{i}]");
        let rest = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-');
        if !t["name"]
            .as_str()
            .is_some_and(|n| name_ok(n, rest, rest, 128))
        {
            v.push(format!("{at}.name: must match [A-Za-z0-9_.-]{{1,128}}"));
        }
        root_object(&t["inputSchema"], &format!("{at}.inputSchema"), &mut v);
        if let Some(out) = t.get("outputSchema") {
            root_object(out, &format!("{at}.outputSchema"), &mut v);
        }
        for hint in [
            "readOnlyHint",
            "destructiveHint",
            "idempotentHint",
            "openWorldHint",
        ] {
            if !t["annotations"][hint].is_boolean() {
                v.push(format!("{at}.annotations.{hint}: must be a boolean"));
            }
        }
    }
    v
}

/// Well-formed XML with one `<tools>` root whose `<tool>` children each have a name.
pub fn xml(text: &str) -> Violations {
    use quick_xml::Reader;
    use quick_xml::events::{BytesStart, Event};
    let mut reader = Reader::from_str(text);
    let mut v = Vec::new();
    let mut depth = 0usize;
    let mut roots = 0;
    let mut check = |e: &BytesStart<'_>, depth: usize, v: &mut Violations| match depth {
        0 => {
            roots += 1;
            if e.name().as_ref() != "tools" || roots > 1 {
                v.push("the document must have one <tools> root".into());
            }
        }
        1 if e.name().as_ref() != "tool"
            || e.try_get_attribute("name").ok().flatten().is_none() =>
        {
            v.push("children of <tools> are <tool name=...>".into());
        }
        _ => {}
    };
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) => {
                check(&e, depth, &mut v);
                depth += 1;
            }
            Ok(Event::Empty(e)) => check(&e, depth, &mut v),
            Ok(Event::End(_)) => depth -= 1,
            Ok(Event::Eof) => break,
            Ok(_) => {}
            Err(e) => {
                v.push(format!(
                    "not well-formed at byte {}: {e}",
                    reader.error_position()
                ));
                break;
            }
        }
    }
    if roots == 0 {
        v.push("no <tools> root".into());
    }
    v
}
