//! Benchmarks of the pure core (SPEC §3.3, §10): the argument pipeline per call and rendering
//! a large catalog. Run with `cargo bench -p toolsmith-core --bench pipeline`; figures are
//! recorded in bench/README.md.
//!
//! Baseline, side by side: parsing the same arguments with `serde_json` alone, the least any
//! gateway must do with a model's call.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use toolsmith_core::catalog::{self, CatalogSource};
use toolsmith_core::model::Format;
use toolsmith_core::render::{RenderOptions, render};
use toolsmith_core::{CompiledTool, plan};

struct One(&'static str);

impl CatalogSource for One {
    fn read(&self, _: &str) -> Result<String, toolsmith_core::catalog::ReadError> {
        Ok(self.0.to_owned())
    }
    fn var(&self, _: &str) -> Option<String> {
        None
    }
}

/// Ten parameters of mixed types, injected in every style.
const TOOL: &str = r#"
tools:
  - name: search
    description: Search the repository.
    command: [grep, --recursive]
    end_of_options: "--"
    parameters:
      - {name: ignore_case, type: boolean, default: false, inject_as: option, option_name: --ignore-case}
      - {name: max_count, type: integer, minimum: 1, maximum: 1000, default: 50, inject_as: option, option_name: --max-count, option_style: equals}
      - {name: context, type: integer, minimum: 0, required: false, inject_as: option, option_name: --context}
      - {name: include, type: array, items: {type: string, min_length: 1}, required: false, inject_as: option, option_name: --include, option_style: equals}
      - {name: mode, type: enum, values: [fixed, basic, extended], default: basic, inject_as: option, option_name: --mode}
      - {name: score, type: number, minimum: 0, maximum: 1, required: false, inject_as: env, env_name: SCORE}
      - {name: label, required: false, max_length: 64, inject_as: env, env_name: LABEL}
      - {name: options, type: object, properties: [{name: depth, type: integer}], required: false, inject_as: option, option_name: --options}
      - {name: pattern, min_length: 1}
      - {name: path, default: "."}
"#;

fn arguments() -> Value {
    // Two coercions, as models send them: an integer as text and an array as JSON text.
    json!({
        "ignore_case": true, "max_count": "20", "context": 2, "include": "[\"*.rs\", \"*.toml\"]",
        "mode": "extended", "score": 0.5, "label": "bench", "options": {"depth": 3},
        "pattern": "fn main", "path": "src"
    })
}

fn pipeline(c: &mut Criterion) {
    let catalog = catalog::load("c.yaml", &One(TOOL)).expect("bench catalog loads");
    let tool = CompiledTool::new(catalog.tools[0].clone(), 1).expect("compiles");
    let args = arguments();
    let text = args.to_string();
    assert!(
        plan::dry_run(&tool, args.clone()).success,
        "the bench call is valid"
    );

    let mut g = c.benchmark_group("pipeline_10_params");
    g.bench_function("baseline_serde_json_parse", |b| {
        b.iter(|| black_box(serde_json::from_str::<Value>(black_box(&text)).expect("json")))
    });
    g.bench_function("coerce_validate", |b| {
        b.iter(|| black_box(tool.prepare(black_box(args.clone())).expect("valid")))
    });
    g.bench_function("coerce_validate_plan", |b| {
        b.iter(|| {
            let p = tool.prepare(black_box(args.clone())).expect("valid");
            black_box(plan::plan(&tool.tool, &p.arguments).expect("plans"))
        })
    });
    g.bench_function("parse_text_coerce_validate_plan", |b| {
        b.iter(|| {
            let p = tool
                .prepare(Value::String(black_box(&text).clone()))
                .expect("valid");
            black_box(plan::plan(&tool.tool, &p.arguments).expect("plans"))
        })
    });
    g.finish();
}

fn rendering(c: &mut Criterion) {
    let catalog = catalog::load("c.yaml", &One(TOOL)).expect("bench catalog loads");
    let tools: Vec<_> = (0..1000)
        .map(|i| {
            let mut t = catalog.tools[0].clone();
            t.name =
                toolsmith_core::model::ToolName::new(&format!("search_{i}"), Default::default())
                    .expect("name");
            t
        })
        .collect();
    let mut g = c.benchmark_group("render_1000_tools");
    g.bench_function("openai_value_only", |b| {
        b.iter(|| {
            black_box(render(
                black_box(&tools),
                Format::Openai,
                RenderOptions::default(),
            ))
        })
    });
    for (label, format, strict) in [
        ("openai", Format::Openai, false),
        ("openai_strict", Format::Openai, true),
        ("gemini", Format::Gemini, false),
        ("xml", Format::Xml, false),
    ] {
        g.bench_function(label, |b| {
            b.iter(|| {
                black_box(render(black_box(&tools), format, RenderOptions { strict }).to_text())
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = pipeline, rendering
}
criterion_main!(benches);
