//! Renderers (SPEC §4): golden files for every format, and every provider's rules checked
//! over every example catalog.
//!
//! Regenerate the golden files with `UPDATE_EXPECT=1 cargo test -p toolsmith-core`.

use expect_test::expect_file;
use serde_json::Value;
use toolsmith_core::catalog;
use toolsmith_core::model::Format;
use toolsmith_core::render::{
    RenderOptions, Rendered, exported_name, find_by_exported_name, render,
};

use super::rules;
use super::support::{DirSource, example_catalogs, repo_root};

fn kitchen() -> catalog::Catalog {
    let dir = repo_root().join("crates/toolsmith-core/tests/data");
    catalog::load("kitchen.yaml", &DirSource(dir)).unwrap_or_else(|e| panic!("{e}"))
}

fn violations(rendered: &Rendered, format: Format, strict: bool) -> Vec<String> {
    match (rendered, format) {
        (Rendered::Xml(text), Format::Xml) => rules::xml(text),
        (Rendered::Json(v), Format::Openai) => rules::openai(v, strict),
        (Rendered::Json(v), Format::OpenaiResponses) => rules::openai_responses(v, strict),
        (Rendered::Json(v), Format::Anthropic) => rules::anthropic(v),
        (Rendered::Json(v), Format::Gemini) => rules::gemini(v),
        (Rendered::Json(v), Format::Mcp) => rules::mcp(v),
        (other, f) => vec![format!("{f} rendered as {other:?}")],
    }
}

fn all_modes() -> Vec<(Format, bool)> {
    let mut modes: Vec<(Format, bool)> = Format::ALL.iter().map(|f| (*f, false)).collect();
    modes.push((Format::Openai, true));
    modes.push((Format::OpenaiResponses, true));
    modes
}

fn golden_name(format: Format, strict: bool) -> String {
    let ext = if format == Format::Xml { "xml" } else { "json" };
    format!(
        "{}{}.{ext}",
        format.as_str(),
        if strict { "-strict" } else { "" }
    )
}

#[test]
fn golden_files_for_the_example_catalog() {
    let (_, catalog) = example_catalogs()
        .into_iter()
        .find(|(n, _)| n == "catalog.yaml")
        .expect("examples/catalog.yaml");
    for (format, strict) in all_modes() {
        let out = render(&catalog.tools, format, RenderOptions { strict }).to_text();
        expect_file![format!(
            "../golden/examples/{}",
            golden_name(format, strict)
        )]
        .assert_eq(&out);
    }
}

#[test]
fn golden_files_for_every_parameter_shape() {
    let catalog = kitchen();
    for (format, strict) in all_modes() {
        let out = render(&catalog.tools, format, RenderOptions { strict }).to_text();
        expect_file![format!("../golden/kitchen/{}", golden_name(format, strict))].assert_eq(&out);
    }
}

#[test]
fn every_catalog_meets_every_provider_rule() {
    let mut catalogs = example_catalogs();
    catalogs.push(("tests/data/kitchen.yaml".into(), kitchen()));
    for (name, catalog) in &catalogs {
        for (format, strict) in all_modes() {
            let rendered = render(&catalog.tools, format, RenderOptions { strict });
            let found = violations(&rendered, format, strict);
            assert!(
                found.is_empty(),
                "{name} as {format} (strict {strict}):\n{}",
                found.join("\n")
            );
        }
    }
}

#[test]
fn the_rule_checkers_catch_what_they_should() {
    // A checker that accepts everything proves nothing: feed each one a broken document.
    let bad = serde_json::json!([{"type": "function", "function": {"name": "a.b", "description": "d",
        "parameters": {"type": "object", "properties": {"x": {"type": "string", "minLength": 1}}, "required": ["y"]}}}]);
    let v = rules::openai(&bad, true);
    assert!(v.iter().any(|e| e.contains("function.name")), "{v:?}");
    assert!(
        v.iter()
            .any(|e| e.contains("required \"y\" is not a property")),
        "{v:?}"
    );
    assert!(
        v.iter().any(|e| e.contains("`minLength` is not supported")),
        "{v:?}"
    );
    assert!(
        v.iter().any(|e| e.contains("additionalProperties: false")),
        "{v:?}"
    );
    assert!(
        v.iter()
            .any(|e| e.contains("property x is not in required")),
        "{v:?}"
    );
    let gem = serde_json::json!([{"functionDeclarations": [{"name": "1x", "description": "d",
        "parameters": {"type": "object", "properties": {"e": {"type": "INTEGER", "enum": [1]}, "o": {"type": "OBJECT", "additionalProperties": true}}}}]}]);
    let v = rules::gemini(&gem);
    assert_eq!(v.len(), 6, "{v:#?}");
    assert!(
        rules::xml("<tools><tool name=\"a\"></tools>")
            .iter()
            .any(|e| e.contains("not well-formed"))
    );
    assert!(!rules::xml("<tools><tool/></tools>").is_empty());
    assert!(!rules::mcp(&serde_json::json!([{"name": "a b", "inputSchema": {"type": "object"}, "annotations": {}}])).is_empty());
    assert!(
        !rules::anthropic(
            &serde_json::json!([{"name": "a", "input_schema": {"type": "object"}, "strict": true}])
        )
        .is_empty()
    );
}

#[test]
fn disabled_tools_and_tag_filters() {
    let catalog = kitchen();
    let Rendered::Json(v) = render(&catalog.tools, Format::Mcp, RenderOptions::default()) else {
        panic!("json")
    };
    let names: Vec<&str> = v
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(
        names,
        ["kitchen.sink", "no-params"],
        "the disabled tool is not rendered"
    );
}

#[test]
fn mcp_annotations_follow_danger_and_hints() {
    let catalog = kitchen();
    let Rendered::Json(v) = render(&catalog.tools, Format::Mcp, RenderOptions::default()) else {
        panic!("json")
    };
    assert_eq!(v[0]["annotations"]["destructiveHint"], true);
    assert_eq!(v[0]["annotations"]["idempotentHint"], true);
    assert_eq!(v[0]["annotations"]["openWorldHint"], false);
    assert_eq!(v[1]["annotations"]["destructiveHint"], false);
    assert_eq!(
        v[1]["inputSchema"],
        serde_json::json!({"type": "object", "additionalProperties": false})
    );
}

#[test]
fn mapped_names_resolve_back_to_their_tool() {
    let catalog = kitchen();
    for format in Format::ALL {
        for tool in &catalog.tools {
            let shown = exported_name(tool.name.as_str(), format);
            let found =
                find_by_exported_name(&catalog.tools, format, &shown).map(|t| t.name.as_str());
            assert_eq!(found, Some(tool.name.as_str()), "{format}: {shown}");
        }
    }
    assert_eq!(
        exported_name("kitchen.sink", Format::Openai),
        "kitchen_sink"
    );
    assert_eq!(exported_name("kitchen.sink", Format::Mcp), "kitchen.sink");
}

#[test]
fn strict_free_form_objects_become_json_text_that_the_pipeline_parses_back() {
    let catalog = kitchen();
    let tool = catalog.get("kitchen.sink").expect("tool").clone();
    let Rendered::Json(v) = render([&tool], Format::Openai, RenderOptions { strict: true }) else {
        panic!("json")
    };
    let extra = &v[0]["function"]["parameters"]["properties"]["extra"];
    assert_eq!(extra["type"], serde_json::json!(["string", "null"]));
    let compiled = toolsmith_core::CompiledTool::new(tool, 1).expect("compiles");
    // What a strict-mode model sends: every key, nulls for the ones it leaves out.
    let mut args: serde_json::Map<String, Value> = compiled
        .tool
        .parameters
        .iter()
        .map(|p| (p.name.clone(), Value::Null))
        .collect();
    args.insert("text".into(), "hello".into());
    args.insert("extra".into(), r#"{"any": ["thing"]}"#.into());
    let p = compiled
        .prepare(Value::Object(args))
        .expect("strict-mode arguments are accepted");
    assert_eq!(p.arguments["extra"], serde_json::json!({"any": ["thing"]}));
    assert_eq!(p.arguments["count"], 10, "null became the default");
    assert_eq!(
        p.arguments["level"],
        Value::Null,
        "a nullable parameter keeps its null"
    );
}

/// GitHub's whole REST API (1,100+ operations, every kind of schema) as Python stubs: each
/// module compiles and imports under real Python, with a function and an async twin per tool.
#[test]
#[ignore = "needs @octokit/openapi (npm ci in crates/toolsmith/tests/upstream)"]
fn githubs_import_becomes_python_stubs_that_import() {
    let tools = crate::support::github_tools();
    let modules = toolsmith_core::render::python_stubs(&tools);
    // A nullable optional parameter (`twitter_username`) says `None` once.
    for m in &modules {
        assert!(!m.source.contains("| None | None"), "{}", m.module);
    }
    let dir = tempfile::tempdir().expect("tempdir");
    for m in &modules {
        let file = dir.path().join(&m.path);
        std::fs::create_dir_all(file.parent().expect("folder")).expect("mkdir");
        std::fs::write(&file, &m.source).expect("write");
    }
    std::fs::write(
        dir.path().join("toolsmith_runtime.py"),
        "def call(name, arguments, optional=()):\n    return name\n\nasync def acall(name, arguments, optional=()):\n    return name\n",
    )
    .expect("write runtime");
    let probe = "import importlib, inspect, json, sys\nsys.path.insert(0, sys.argv[1])\n\
        names = json.loads(sys.argv[2])\ncount = 0\n\
        for n in names:\n    m = importlib.import_module(n)\n    \
        fs = [f for f, v in vars(m).items() if inspect.isfunction(v) and v.__module__ == n]\n    \
        count += len([f for f in fs if not f.endswith('_async')])\n    \
        assert all(f + '_async' in fs for f in fs if not f.endswith('_async')), n\n\
        print(count)\n";
    let names: Vec<&str> = modules.iter().map(|m| m.module.as_str()).collect();
    let out = std::process::Command::new("python3")
        .args(["-c", probe])
        .arg(dir.path())
        .arg(serde_json::to_string(&names).expect("json"))
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "the stubs did not import: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let functions: usize = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("a count");
    // One function per tool, but for names that meet as identifiers (`a-b`, `a_b`).
    assert!(
        functions * 100 >= tools.len() * 99,
        "{functions} of {}",
        tools.len()
    );
    let bytes: usize = modules.iter().map(|m| m.source.len()).sum();
    eprintln!(
        "{} tools: {} modules, {functions} functions, {bytes} bytes of stubs",
        tools.len(),
        modules.len()
    );
}

/// Code mode's search answers a model with a brief function: the description's first two
/// paragraphs and its `Docs:` line, the arguments still described, Markdown links reduced to
/// their text; the stubs keep it whole.
#[test]
fn a_brief_function_keeps_the_summary_the_docs_line_and_the_arguments() {
    let tool = described_tool(
        "issues_create_comment",
        "Create an issue comment\n\nYou can use the [REST API](https://docs.github.com/rest) to create comments; [a] (b) and [c](d e) stay.\n\nThis endpoint triggers notifications.\n\nDocs: https://docs.github.com/rest/issues",
    );
    let brief = toolsmith_core::render::python_function_brief(&tool);
    let full = toolsmith_core::render::python_function(&tool);
    for kept in [
        "Create an issue comment",
        "You can use the REST API to create comments; [a] (b) and [c](d e) stay.",
        "Docs: https://docs.github.com/rest/issues",
        "body: The comment, see the docs.",
    ] {
        assert!(brief.contains(kept), "{kept}: {brief}");
    }
    assert!(!brief.contains("triggers notifications"), "{brief}");
    assert!(full.contains("triggers notifications"), "{full}");
    assert!(
        full.contains("[REST API](https://docs.github.com/rest)")
            && full.contains("[the docs](https://example.com/x_(y))"),
        "{full}"
    );
}

fn described_tool(name: &str, description: &str) -> toolsmith_core::Tool {
    let def = serde_json::json!({
        "name": name,
        "description": description,
        "command": ["true"],
        "parameters": [{"name": "body", "description": "The comment, see [the docs](https://example.com/x_(y))."}],
    });
    toolsmith_core::catalog::parse_tool(&def, &crate::support::MemSource::default()).expect("tool")
}
