//! Guardrails (SPEC §11): the definition scanner, which reads every model-facing text of a
//! tool, prompt or resource template — name, title, description, every key and string of its
//! schemas and annotations, a prompt's arguments — for what published attacks hide there, and
//! the result guardrails ([`result`]) that cap and scrub what a call hands back.
//!
//! A [`Finding`] names its rule, its [`Severity`], the JSON pointer of the text, whether the
//! match is in the key or the value there, and the exact span with its context, every hidden
//! character spelled out ([`visible::visible`]) so the person reviewing sees what the model
//! would read. The rules are deterministic (no model, no network); `docs/guardrails.md` lists
//! each with the attack it comes from.
//!
//! **Invariant:** the scanner is a pure function of the definition and the names of the
//! other tools beside it, so findings are computed where they are shown and never stored.

pub mod result;
mod rules;
pub mod visible;

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::Value;

pub use rules::RULES;

/// How serious a finding is. `hold` keeps an upstream definition out of service until a
/// person approves it (under `on_suspicious: hold`); `warn` is shown and counted only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum Severity {
    Warn,
    Hold,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Warn => "warn",
            Self::Hold => "hold",
        }
    }
}

/// Where in the text at `path` a finding is: the object key, or the string value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum Part {
    Key,
    Value,
}

/// One thing the scanner found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Finding {
    /// The rule's id (`hidden-characters`, `concealment`, …).
    pub rule: &'static str,
    pub severity: Severity,
    /// The JSON pointer of the text in the definition (`/description`,
    /// `/inputSchema/properties/sidenote/description`).
    pub path: String,
    pub part: Part,
    /// The span in characters of that text, end exclusive.
    pub start: usize,
    pub end: usize,
    /// The matched text, hidden characters spelled out.
    pub matched: String,
    /// Up to 40 characters either side of it, likewise.
    pub before: String,
    pub after: String,
    /// Why the rule flags it.
    pub why: String,
}

/// What is scanned: decides nothing but the wording of findings today; kept so a rule can be
/// limited to one kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Tool,
    Prompt,
    Template,
}

/// Texts longer than this are flagged (`oversized-text`, warn): room to bury instructions.
pub const OVERSIZED_TEXT: usize = 4096;
/// At most this many findings per definition (the first ones, by path).
pub const MAX_FINDINGS: usize = 50;
const CONTEXT: usize = 40;

/// Scans `definition` (an MCP tool, prompt or resource template object as listed) and
/// answers its findings, the most severe first. `others` are the names of the tools beside
/// it (the same server's and the registry's): naming one of them is shadowing.
pub fn scan(_kind: Kind, definition: &Value, others: &BTreeSet<String>) -> Vec<Finding> {
    let own: BTreeSet<&str> = ["name", "title"]
        .iter()
        .filter_map(|k| definition.get(*k).and_then(Value::as_str))
        .collect();
    let mut scan = Scan {
        findings: Vec::new(),
        others,
        own,
    };
    scan.value(definition, &mut String::new(), false);
    let mut findings = scan.findings;
    findings.sort_by(|a, b| b.severity.cmp(&a.severity).then(a.path.cmp(&b.path)));
    let mut seen = BTreeSet::new();
    findings.retain(|f| seen.insert((f.rule, f.path.clone(), f.part == Part::Key, f.start)));
    findings.truncate(MAX_FINDINGS);
    findings
}

/// Whether any finding keeps the definition out of service under `on_suspicious: hold`.
pub fn holds(findings: &[Finding]) -> bool {
    findings.iter().any(|f| f.severity == Severity::Hold)
}

/// The findings' rule ids, each once, most severe first: `concealment, html`.
pub fn rule_list(findings: &[Finding]) -> String {
    let mut ids: Vec<&str> = Vec::new();
    for f in findings {
        if !ids.contains(&f.rule) {
            ids.push(f.rule);
        }
    }
    ids.join(", ")
}

struct Scan<'a> {
    findings: Vec<Finding>,
    others: &'a BTreeSet<String>,
    own: BTreeSet<&'a str>,
}

impl Scan<'_> {
    fn value(&mut self, v: &Value, path: &mut String, under_properties: bool) {
        match v {
            Value::String(s) => self.text(s, path, Part::Value),
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    let len = path.len();
                    path.push('/');
                    path.push_str(&i.to_string());
                    self.value(item, path, false);
                    path.truncate(len);
                }
            }
            Value::Object(map) => {
                for (key, item) in map {
                    let len = path.len();
                    path.push('/');
                    path.push_str(&key.replace('~', "~0").replace('/', "~1"));
                    self.text(key, path, Part::Key);
                    if under_properties {
                        self.parameter_name(key, path);
                    }
                    self.value(item, path, key == "properties" && item.is_object());
                    path.truncate(len);
                }
            }
            _ => {}
        }
    }

    fn parameter_name(&mut self, key: &str, path: &str) {
        if rules::SMUGGLING_PARAMETERS
            .iter()
            .any(|p| p.eq_ignore_ascii_case(key))
        {
            self.push(
                "smuggling-parameter",
                Severity::Hold,
                "a catch-all parameter of the kind poisoned descriptions ask the model to fill with secrets (Invariant Labs' `sidenote`)",
                path,
                Part::Key,
                key,
                0,
                key.len(),
            );
        }
    }

    fn text(&mut self, text: &str, path: &str, part: Part) {
        if part == Part::Key && KEYWORDS.binary_search(&text).is_ok() {
            // A JSON Schema or MCP keyword says nothing of its own (what it holds is read).
            return;
        }
        self.characters(text, path, part);
        // A parameter name spelling a request (`content_from_reading_ssh_id_rsa`, CyberArk's
        // full-schema poisoning) reads as words once its separators are spaces; the
        // separators are one byte each, so the spans stay the same.
        let words =
            (part == Part::Key && text.contains(['_', '-'])).then(|| text.replace(['_', '-'], " "));
        for read in [Some(text), words.as_deref()].into_iter().flatten() {
            for (rule, start, end) in rules::matches(read) {
                let (id, severity, why) = (rule.id, rule.severity, rule.why);
                self.push(id, severity, why, path, part, text, start, end);
            }
        }
        self.shadowing(text, path, part);
        let chars = text.chars().count();
        if chars > OVERSIZED_TEXT {
            let why = format!("{chars} characters: room to bury instructions");
            self.push(
                "oversized-text",
                Severity::Warn,
                &why,
                path,
                part,
                text,
                0,
                0,
            );
        }
    }

    /// Runs of hidden characters and of terminal controls, one finding each.
    fn characters(&mut self, text: &str, path: &str, part: Part) {
        let mut run: Option<(usize, bool)> = None;
        let mut found = Vec::new();
        for (i, c) in text.char_indices() {
            let class = match (visible::is_hidden(c), visible::is_control(c)) {
                (true, _) => Some(true),
                (_, true) => Some(false),
                _ => None,
            };
            if run.map(|(_, hidden)| hidden) != class {
                if let Some((start, hidden)) = run {
                    found.push((start, i, hidden));
                }
                run = class.map(|hidden| (i, hidden));
            }
        }
        if let Some((start, hidden)) = run {
            found.push((start, text.len(), hidden));
        }
        for (start, end, hidden) in found {
            let (rule, why) = match hidden {
                true => (
                    "hidden-characters",
                    "characters that render as nothing or reorder text (Unicode tags, zero-width, bidi overrides): text the reviewer does not see",
                ),
                false => (
                    "terminal-escape",
                    "terminal control characters (ANSI escapes) that can hide or rewrite text on a reviewer's screen (Trail of Bits)",
                ),
            };
            self.push(rule, Severity::Hold, why, path, part, text, start, end);
        }
    }

    /// Another tool's name in this text: a description that rewrites how another tool
    /// behaves (Invariant Labs' shadowing). A distinctive name (`send_email`, `getTinyImage`)
    /// counts wherever it stands as a word; a plain word (`echo`) only as "the echo tool".
    fn shadowing(&mut self, text: &str, path: &str, part: Part) {
        if self.others.is_empty() || part == Part::Key {
            return;
        }
        let bytes = text.as_bytes();
        let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
        let mut i = 0;
        while i < bytes.len() {
            if !is_word(bytes[i]) {
                i += 1;
                continue;
            }
            let start = i;
            while i < bytes.len() && is_word(bytes[i]) {
                i += 1;
            }
            let word = &text[start..i];
            if !self.others.contains(word) || self.own.contains(word) {
                continue;
            }
            let rest = text[i..].trim_start_matches(['`', '\'', '"', ' ']);
            let named_tool = rest.len() < text.len() - i
                && rest
                    .get(..4)
                    .is_some_and(|t| t.eq_ignore_ascii_case("tool"));
            if distinctive(word) || named_tool {
                let why = format!(
                    "names another tool, `{word}`: a description that steers how another tool is used (Invariant Labs' shadowing)"
                );
                self.push(
                    "shadowing",
                    Severity::Hold,
                    &why,
                    path,
                    part,
                    text,
                    start,
                    i,
                );
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        rule: &'static str,
        severity: Severity,
        why: &str,
        path: &str,
        part: Part,
        text: &str,
        start: usize,
        end: usize,
    ) {
        let (before, after) = visible::context(text, start, end, CONTEXT);
        self.findings.push(Finding {
            rule,
            severity,
            path: path.to_owned(),
            part,
            start: text[..start].chars().count(),
            end: text[..end].chars().count(),
            matched: visible::visible(&text[start..end]),
            before,
            after,
            why: why.to_owned(),
        });
    }
}

/// The keys of MCP definitions and JSON Schema, sorted: not scanned as text.
const KEYWORDS: &[&str] = &[
    "$defs",
    "$id",
    "$ref",
    "$schema",
    "additionalProperties",
    "allOf",
    "annotations",
    "anyOf",
    "arguments",
    "const",
    "default",
    "definitions",
    "deprecated",
    "description",
    "destructiveHint",
    "enum",
    "examples",
    "exclusiveMaximum",
    "exclusiveMinimum",
    "format",
    "idempotentHint",
    "inputSchema",
    "items",
    "maxItems",
    "maxLength",
    "maximum",
    "mimeType",
    "minItems",
    "minLength",
    "minimum",
    "multipleOf",
    "name",
    "not",
    "nullable",
    "oneOf",
    "openWorldHint",
    "outputSchema",
    "pattern",
    "properties",
    "readOnlyHint",
    "required",
    "title",
    "type",
    "uniqueItems",
    "uriTemplate",
];

/// Whether a tool name is unlike an ordinary word: it has a separator, a digit or an inner
/// capital, and at least four characters.
fn distinctive(name: &str) -> bool {
    name.len() >= 4
        && (name.contains(['_', '-', '.'])
            || name.bytes().any(|b| b.is_ascii_digit())
            || name.bytes().skip(1).any(|b| b.is_ascii_uppercase()))
}

/// Scans a registry tool as a model sees it: its MCP form (name, title, description, input
/// and output schema, annotations).
pub fn scan_tool(tool: &crate::Tool, others: &BTreeSet<String>) -> Vec<Finding> {
    let def = crate::render::render_one(tool, crate::Format::Mcp, Default::default());
    scan(Kind::Tool, &def, others)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
#[test]
fn keywords_are_sorted_for_binary_search() {
    assert!(KEYWORDS.windows(2).all(|w| w[0] < w[1]));
}
