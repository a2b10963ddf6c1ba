//! The definition scanner against a corpus: published poisoning examples (each with its
//! source, `tests/fixtures/guard/attacks.json`) must all be held, and benign definitions
//! from real servers — `server-everything`'s listing, the FastMCP fixture's, the shipped
//! example catalogs and (where npm installed it) GitHub's whole OpenAPI import — held at
//! most 1% of the time. The figures go to bench/README.md.

use std::collections::BTreeSet;

use serde_json::Value;
use toolsmith_core::guard::{self, Kind, Severity};

use crate::support::{example_catalogs, repo_root};

fn fixture(name: &str) -> Vec<Value> {
    let path = repo_root()
        .join("crates/toolsmith-core/tests/fixtures/guard")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("a JSON list")
}

fn kind_of(v: &Value) -> Kind {
    match v.get("_kind").and_then(Value::as_str) {
        Some("prompt") => Kind::Prompt,
        Some("template") => Kind::Template,
        _ => Kind::Tool,
    }
}

#[test]
fn every_published_attack_is_held_with_the_rule_of_its_class() {
    let attacks = fixture("attacks.json");
    let mut missed = Vec::new();
    let mut classes = BTreeSet::new();
    for a in &attacks {
        let others: BTreeSet<String> = a["others"]
            .as_array()
            .expect("as built above")
            .iter()
            .map(|o| o.as_str().expect("as built above").to_owned())
            .collect();
        let kind = match a["kind"].as_str() {
            Some("prompt") => Kind::Prompt,
            Some("template") => Kind::Template,
            _ => Kind::Tool,
        };
        let found = guard::scan(kind, &a["definition"], &others);
        classes.insert(a["class"].as_str().expect("as built above").to_owned());
        if !guard::holds(&found) {
            missed.push(format!(
                "{} ({}): {found:?}",
                a["class"], a["definition"]["name"]
            ));
        }
        for f in &found {
            // Every span is where it says: the characters it names are the text's.
            assert!(f.start <= f.end, "{f:?}");
            assert!(!f.why.is_empty());
        }
    }
    assert_eq!(missed, Vec::<String>::new(), "attacks not held");
    assert!(classes.len() >= 12, "{classes:?}");
    eprintln!(
        "attacks: {} of {} held, {} classes",
        attacks.len(),
        attacks.len(),
        classes.len()
    );
}

#[test]
fn the_classes_are_caught_by_the_rules_written_for_them() {
    let attacks = fixture("attacks.json");
    let expect = [
        ("tool-poisoning", "instruction-markup"),
        ("shadowing", "shadowing"),
        ("line-jumping", "model-instruction"),
        ("ansi-escapes", "terminal-escape"),
        ("conversation-theft", "conversation-request"),
        ("full-schema-poisoning", "secret-request"),
        ("parameter-exfiltration", "smuggling-parameter"),
        ("unicode-tags", "hidden-characters"),
        ("bidi-and-zero-width", "hidden-characters"),
        ("markdown-exfiltration", "exfiltration-url"),
        ("prompt-override", "model-instruction"),
        ("encoded-instructions", "encoded-blob"),
        ("hidden-html", "instruction-markup"),
    ];
    for (class, rule) in expect {
        let hit = attacks.iter().filter(|a| a["class"] == class).any(|a| {
            let others = a["others"]
                .as_array()
                .expect("as built above")
                .iter()
                .map(|o| o.as_str().expect("as built above").to_owned())
                .collect();
            guard::scan(Kind::Tool, &a["definition"], &others)
                .iter()
                .any(|f| f.rule == rule && f.severity == Severity::Hold)
        });
        assert!(hit, "no {class} example is caught by {rule}");
    }
}

/// Counts the benign definitions held; prints each held one with its findings.
fn held_among(defs: &[(Kind, Value)], others: &BTreeSet<String>) -> usize {
    let mut held = 0;
    for (kind, d) in defs {
        let found = guard::scan(*kind, d, others);
        if guard::holds(&found) {
            held += 1;
            eprintln!("held: {} — {found:#?}", d["name"]);
        }
    }
    held
}

fn names(defs: &[(Kind, Value)]) -> BTreeSet<String> {
    defs.iter()
        .filter_map(|(_, d)| d.get("name").and_then(Value::as_str).map(str::to_owned))
        .collect()
}

/// Shadowing is naming a tool of *another* server: each benign server is scanned with the
/// other's tool names (and the examples' with both), as the gateway scans a listing with
/// every name it does not come with.
#[test]
fn benign_servers_and_the_examples_are_not_held() {
    let servers: Vec<Vec<(Kind, Value)>> = ["server-everything.json", "fastmcp-fixture.json"]
        .iter()
        .map(|f| fixture(f).into_iter().map(|d| (kind_of(&d), d)).collect())
        .collect();
    for (i, defs) in servers.iter().enumerate() {
        assert!(defs.len() >= 9, "{}", defs.len());
        assert_eq!(held_among(defs, &names(&servers[1 - i])), 0, "server {i}");
    }
    let mut tools = Vec::new();
    for (_, catalog) in example_catalogs() {
        tools.extend(catalog.tools);
    }
    let others: BTreeSet<String> = names(&servers[0])
        .union(&names(&servers[1]))
        .cloned()
        .collect();
    let held: Vec<_> = tools
        .iter()
        .filter(|t| guard::holds(&guard::scan_tool(t, &others)))
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(held, Vec::<&str>::new());
}

#[test]
#[ignore = "needs @octokit/openapi (npm ci in crates/toolsmith/tests/upstream)"]
fn githubs_import_is_held_at_most_one_percent() {
    let tools = crate::support::github_tools();
    let others: BTreeSet<String> = tools.iter().map(|t| t.name.as_str().to_owned()).collect();
    let started = std::time::Instant::now();
    let findings: Vec<_> = tools.iter().map(|t| guard::scan_tool(t, &others)).collect();
    let took = started.elapsed();
    let held: Vec<_> = tools
        .iter()
        .zip(&findings)
        .filter(|(_, f)| guard::holds(f))
        .collect();
    let warned = findings
        .iter()
        .filter(|f| !f.is_empty() && !guard::holds(f))
        .count();
    for (t, f) in &held {
        let spans: Vec<String> = f
            .iter()
            .map(|f| {
                format!(
                    "{} {}: {}«{}»{}",
                    f.rule, f.path, f.before, f.matched, f.after
                )
            })
            .collect();
        eprintln!("held: {} — {}", t.name, spans.join(" / "));
    }
    let rate = held.len() as f64 / tools.len() as f64;
    eprintln!(
        "GitHub: {} tools, {} held ({:.2}%), {} with warnings only, scanned in {:?}",
        tools.len(),
        held.len(),
        rate * 100.0,
        warned,
        took
    );
    assert!(rate <= 0.01, "{} of {} held", held.len(), tools.len());
}
