//! Random and hostile input never panics: not in the loader, not in the pipeline, not in the
//! planner or the renderers. Each case also asserts the outcome is well-formed.

use proptest::prelude::*;
use serde_json::{Value, json};
use toolsmith_core::catalog;
use toolsmith_core::model::Format;
use toolsmith_core::plan;
use toolsmith_core::render::{RenderOptions, render};

use super::support::{MemSource, compiled};

/// Arbitrary JSON values, nested a few levels.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
        prop_oneof![
            Just("string"),
            Just("integer"),
            Just("array"),
            Just("object"),
            Just("enum"),
            Just("option"),
            Just("stdin"),
            Just("--"),
            Just("${HOME}")
        ]
        .prop_map(|s| json!(s)),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        let keys = prop_oneof![
            Just("tools".to_string()),
            Just("name".to_string()),
            Just("type".to_string()),
            Just("parameters".to_string()),
            Just("items".to_string()),
            Just("properties".to_string()),
            Just("command".to_string()),
            Just("default".to_string()),
            Just("inject_as".to_string()),
            Just("values".to_string()),
            Just("description".to_string()),
            Just("config".to_string()),
            "[a-z_]{1,8}",
        ];
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::btree_map(keys, inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn load_text(text: &str, file: &str) -> Result<catalog::Catalog, catalog::CatalogErrors> {
    catalog::load(file, &MemSource::new(&[(file, text)]))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(768))]

    /// Random bytes as YAML and as JSON: an error list or a catalog, never a panic.
    #[test]
    fn random_text_never_panics(text in "(?s).{0,300}") {
        for file in ["c.yaml", "c.json"] {
            if let Err(e) = load_text(&text, file) {
                prop_assert!(!e.0.is_empty());
            }
        }
    }

    /// Random structures shaped like catalogs: loaded tools can be rendered and called.
    #[test]
    fn random_catalogs_never_panic(doc in any_json(), args in any_json()) {
        let text = serde_json::to_string(&json!({"tools": [doc]})).expect("json");
        match load_text(&text, "c.json") {
            Err(e) => prop_assert!(e.0.iter().all(|e| !e.message.is_empty())),
            Ok(c) => {
                for f in Format::ALL {
                    let _ = render(&c.tools, f, RenderOptions { strict: true }).to_text();
                }
                for t in c.tools {
                    let ct = toolsmith_core::CompiledTool::new(t, 1).expect("a loaded tool compiles");
                    let r = plan::dry_run(&ct, args.clone());
                    prop_assert_eq!(r.success, r.error.is_none());
                }
            }
        }
    }

    /// Random arguments against a tool with every kind of parameter.
    #[test]
    fn random_arguments_never_panic(args in any_json(), text in "(?s).{0,80}") {
        let t = compiled(r#"
name: t
description: d
command: [p]
parameters:
  - {name: name, required: false}
  - {name: type, type: integer, required: false, inject_as: option, option_name: --t}
  - {name: items, type: array, items: {type: object, properties: [{name: a, type: number}]}, required: false, inject_as: option, option_name: --i}
  - {name: tools, type: object, additional_properties: true, required: false, inject_as: env}
  - {name: config, type: boolean, required: false, inject_as: option, option_name: --c}
"#);
        for input in [args.clone(), Value::String(text.clone()), json!({"items": text, "type": text})] {
            let r = plan::dry_run(&t, input);
            match (&r.data, &r.error) {
                (Some(d), None) => prop_assert!(d["argv"].is_array()),
                (None, Some(e)) => prop_assert!(!e.details.is_empty()),
                _ => prop_assert!(false, "malformed result"),
            }
        }
    }
}

#[test]
fn pathological_yaml_is_refused_cleanly() {
    // A billion laughs: aliases that expand exponentially.
    let mut laughs = String::from("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..12 {
        let refs = vec![format!("*a{}", i - 1); 9].join(", ");
        laughs.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
    }
    laughs.push_str("tools: *a11\n");
    let e = load_text(&laughs, "c.yaml").expect_err("refused");
    assert!(
        e.0[0].message.contains("repetition limit exceeded"),
        "{}",
        e.0[0].message
    );

    // Deep nesting.
    let deep = format!("tools: {}{}", "[".repeat(10_000), "]".repeat(10_000));
    let e = load_text(&deep, "c.yaml").expect_err("refused");
    assert!(
        e.0[0].message.contains("recursion limit exceeded"),
        "{}",
        e.0[0].message
    );
    let deep_json = format!(
        "{{\"tools\": {}{}}}",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let e = load_text(&deep_json, "c.json").expect_err("refused");
    assert!(
        e.0[0].message.contains("recursion limit exceeded"),
        "{}",
        e.0[0].message
    );

    // Deeply nested parameters that stay within the parser's limits.
    let mut param = String::from("{type: string}");
    for _ in 0..40 {
        param = format!("{{type: array, items: {param}}}");
    }
    let yaml = format!(
        "tools: [{{name: t, description: d, command: [p], parameters: [{{name: p, type: array, items: {param}}}]}}]"
    );
    let c = load_text(&yaml, "c.yaml").expect("40 levels load");
    let t = toolsmith_core::CompiledTool::new(c.tools[0].clone(), 1).expect("compiles");
    assert!(
        t.prepare(json!({"p": "[[[[[[\"x\"]]]]]]"})).is_err(),
        "wrong depth is a validation error"
    );
}
