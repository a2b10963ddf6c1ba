//! Benchmarks of the guardrails (SPEC §11): the definition scanner over GitHub's whole
//! OpenAPI import (npm `@octokit/openapi`, installed by `npm ci` in
//! `crates/toolsmith/tests/upstream`), and the result guardrails on a 1 MiB result. Run with
//! `cargo bench -p toolsmith-core --bench guard`; figures are recorded in bench/README.md.
//!
//! Baselines, side by side: rendering the same tools in MCP's form (what the scanner reads;
//! the gateway renders a listing anyway), and serialising the same result with `serde_json`
//! (what every door does with a result).

use std::collections::BTreeSet;
use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use toolsmith_core::catalog::TextSource;
use toolsmith_core::guard::{self, result::ResultPolicy};
use toolsmith_core::model::Format;
use toolsmith_core::render::render_one;
use toolsmith_core::result::{Meta, ToolResult};

fn github_tools() -> Vec<toolsmith_core::Tool> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "../toolsmith/tests/upstream/node_modules/@octokit/openapi/generated/api.github.com.json",
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run `npm ci` in crates/toolsmith/tests/upstream first",
            path.display()
        )
    });
    let doc = toolsmith_core::openapi::parse_document(&text).expect("GitHub's document parses");
    let src = TextSource(String::new());
    let imported =
        toolsmith_core::openapi::import(&doc, &Default::default(), &src).expect("imports");
    toolsmith_core::openapi::tools(&imported, &src).expect("tools")
}

fn scanner(c: &mut Criterion) {
    let tools = github_tools();
    let others: BTreeSet<String> = tools.iter().map(|t| t.name.as_str().to_owned()).collect();
    let mut g = c.benchmark_group(format!("github import, {} tools", tools.len()));
    g.measurement_time(Duration::from_secs(10)).sample_size(20);
    g.bench_function("baseline: render each in MCP's form", |b| {
        b.iter(|| {
            for t in &tools {
                black_box(render_one(t, Format::Mcp, Default::default()));
            }
        })
    });
    g.bench_function("render + scan each", |b| {
        b.iter(|| {
            for t in &tools {
                black_box(guard::scan_tool(t, &others));
            }
        })
    });
    let none = BTreeSet::new();
    g.bench_function("render + scan each, no names to shadow", |b| {
        b.iter(|| {
            for t in &tools {
                black_box(guard::scan_tool(t, &none));
            }
        })
    });
    g.finish();
}

/// A result of about 1 MiB as an MCP upstream sends it: 400 text blocks with ordinary text,
/// one AWS-shaped key among them.
fn result() -> ToolResult {
    let blocks: Vec<Value> = (0..400)
        .map(|i| {
            let mut text = format!("line {i}: ").repeat(260);
            if i == 200 {
                text.push_str(" AKIAIOSFODNN7EXAMPLE");
            }
            json!({"type": "text", "text": text})
        })
        .collect();
    ToolResult::ok(json!({"content": blocks}), Meta::default())
}

fn results(c: &mut Criterion) {
    let r = result();
    let size = serde_json::to_string(&r.data).expect("json").len();
    let mut g = c.benchmark_group(format!("a {} KiB result", size / 1024));
    g.measurement_time(Duration::from_secs(5));
    g.bench_function("baseline: serde_json to text", |b| {
        b.iter(|| black_box(serde_json::to_string(&r).expect("json")))
    });
    let guard = ResultPolicy::default().guard();
    g.bench_function("scrub (10 shapes) + size check", |b| {
        b.iter_batched(
            || r.clone(),
            |mut r| {
                guard.apply(&mut r);
                r
            },
            criterion::BatchSize::LargeInput,
        )
    });
    let cut = ResultPolicy {
        max_result_bytes: Some(64 * 1024),
        ..Default::default()
    }
    .guard();
    g.bench_function("scrub + cut to 64 KiB", |b| {
        b.iter_batched(
            || r.clone(),
            |mut r| {
                cut.apply(&mut r);
                r
            },
            criterion::BatchSize::LargeInput,
        )
    });
    g.finish();
}

/// The common case: a command's small result, `{"stdout", "stderr", "exit_code"}`.
fn small(c: &mut Criterion) {
    let r = ToolResult::ok(
        json!({"stdout": "hello world\n", "stderr": "", "exit_code": 0}),
        Meta::default(),
    );
    let mut g = c.benchmark_group("a command's small result");
    g.bench_function("baseline: serde_json to text", |b| {
        b.iter(|| black_box(serde_json::to_string(&r).expect("json")))
    });
    let guard = ResultPolicy::default().guard();
    g.bench_function("scrub (10 shapes) + size check", |b| {
        b.iter_batched(
            || r.clone(),
            |mut r| {
                guard.apply(&mut r);
                r
            },
            criterion::BatchSize::SmallInput,
        )
    });
    g.finish();
}

criterion_group!(benches, scanner, results, small);
criterion_main!(benches);
