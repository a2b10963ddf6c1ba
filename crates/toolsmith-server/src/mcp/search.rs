//! Search mode (SPEC §14): a view served to an MCP client as two tools instead of hundreds —
//! `search_tools` (ranked matches with their full input schemas) and `call_tool` (runs a
//! member through the whole pipeline, confirmation and log, as if called by its own name).
//!
//! Ranking counts each query word on its own (stop words left out, a plural's `s` dropped): a
//! word in the name weighs 3, in a tag 2, in the title or description 1, each times how rare
//! the word is among the tools (ln(1 + tools / tools having it)); tools matching no word are
//! left out; ties go by name.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use rmcp::ErrorData;
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, Tool as McpTool};
use serde_json::{Map, Value, json};

use crate::mcp::snapshot::Snapshot;
use toolsmith_gateway::view::View;

/// The searching tool's name.
pub const SEARCH: &str = "search_tools";
/// The calling tool's name.
pub const CALL: &str = "call_tool";
/// Matches returned when the query does not say.
const DEFAULT_LIMIT: usize = 10;
/// Matches returned at most.
const MAX_LIMIT: usize = 50;

/// `search_tools` as a view lists it, saying what its matches come back as.
fn search_tool(description: &str) -> Value {
    json!({
        "name": SEARCH,
        "description": description,
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Words describing the tool you need"},
                "tags": {"type": "array", "items": {"type": "string"}, "description": "Only tools with every one of these tags"},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": "How many matches at most (10 when absent)"}
            },
            "required": ["query"],
            "additionalProperties": false
        },
        "annotations": {"readOnlyHint": true, "openWorldHint": false}
    })
}

/// The tools a view lists, as MCP objects.
fn listed(tools: [Value; 2]) -> Vec<McpTool> {
    tools
        .into_iter()
        .filter_map(|t| serde_json::from_value(t).ok())
        .collect()
}

/// The two tools a search-mode view lists.
pub fn tools() -> Vec<McpTool> {
    let search = search_tool(
        "Find tools by what they do. Give a few words (each is matched on its own against tool names, descriptions and tags); the best matches come back with their full input schemas. Then run one with call_tool.",
    );
    let call = json!({
        "name": CALL,
        "description": "Run a tool found with search_tools: give its name and its arguments (an object matching the inputSchema search_tools returned).",
        "inputSchema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The tool's name, as search_tools returned it"},
                "arguments": {"type": "object", "description": "The tool's arguments"}
            },
            "required": ["name"],
            "additionalProperties": false
        }
    });
    listed([search, call])
}

/// The program-running tool's name (code mode).
pub const RUN: &str = "run_code";

/// The two tools a code-mode view lists, `run_code` saying the server's time limit.
pub fn code_tools(timeout_ms: u64) -> Vec<McpTool> {
    let search = search_tool(
        "Find tools by what they do. Give a few words (each is matched on its own against tool names, descriptions and tags); the best matches come back as Python functions: the import line and the typed signature with a brief docstring. Then call them from a program with run_code.",
    );
    let at_most = match timeout_ms % 1000 {
        0 => format!("{} s", timeout_ms / 1000),
        _ => format!("{timeout_ms} ms"),
    };
    let run = json!({
        "name": RUN,
        "description": format!("Run a Python 3 program that calls tools found with search_tools as functions (`from tools.NAME import FUNCTION`; each has an `_async` twin for asyncio.gather). Intermediate results stay in the program: you get only what it prints and the value of its last expression. A failed tool call raises toolsmith_runtime.ToolError (kind, message, problems). No network, no files but a scratch folder, {at_most} at most."),
        "inputSchema": {
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "The program"},
                "timeout_ms": {"type": "integer", "minimum": 1, "maximum": timeout_ms, "description": "A shorter time limit, in milliseconds"}
            },
            "required": ["code"],
            "additionalProperties": false
        },
        "annotations": {"openWorldHint": false}
    });
    listed([search, run])
}

/// A tool as code mode shows it: its import line and its function (the sync form).
fn python_of(tool: &toolsmith_core::Tool) -> String {
    let (module, function) = toolsmith_core::render::python_module_of(tool.name.as_str());
    let module = match module.as_str() {
        "" => "tools".to_owned(),
        m => format!("tools.{m}"),
    };
    let source = toolsmith_core::render::python_function_brief(tool);
    let sync = source.split("\n\n\nasync def ").next().unwrap_or(&source);
    // The body (a call of the runtime) tells a model nothing.
    let shown: Vec<&str> = sync
        .trim_end()
        .lines()
        .filter(|l| !l.trim_start().starts_with("return _call("))
        .collect();
    format!("from {module} import {function}\n{}", shown.join("\n"))
}

/// The tools of `snapshot` that `view` admits, in name order.
pub fn visible<'s>(snapshot: &'s Snapshot, view: &View) -> Vec<&'s McpTool> {
    snapshot
        .tools()
        .iter()
        .filter(|t| {
            view.is_everything() || snapshot.get(&t.name).is_some_and(|c| view.admits(&c.tool))
        })
        .collect()
}

/// A fingerprint of what `view` shows: changes when a visible tool is added, removed or
/// gets a new version, or the mode changes — not when something outside the view does.
pub fn fingerprint(snapshot: &Snapshot, view: &View) -> u64 {
    let mut h = DefaultHasher::new();
    view.search.hash(&mut h);
    view.code.hash(&mut h);
    for t in visible(snapshot, view) {
        t.name.hash(&mut h);
        snapshot.get(&t.name).map(|c| c.version).hash(&mut h);
    }
    h.finish()
}

/// Answers `search_tools`.
pub fn search(snapshot: &Snapshot, view: &View, arguments: &Map<String, Value>) -> CallToolResult {
    let Some(query) = arguments.get("query").and_then(Value::as_str) else {
        return CallToolResult::error(vec![ContentBlock::text(
            "invalid_arguments: `query` (a string of words describing the tool) is required",
        )]);
    };
    let tags: Vec<&str> = arguments
        .get("tags")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let limit = arguments
        .get("limit")
        .and_then(Value::as_u64)
        .map_or(DEFAULT_LIMIT, |n| (n as usize).clamp(1, MAX_LIMIT));
    let words = query_words(query);
    let candidates: Vec<(&McpTool, &toolsmith_core::Tool)> = visible(snapshot, view)
        .into_iter()
        .filter_map(|t| Some((t, &snapshot.get(&t.name)?.tool)))
        .filter(|(_, tool)| tags.iter().all(|want| tool.tags.iter().any(|o| o == want)))
        .collect();
    // A word most tools have says little: each word weighs ln(1 + tools / tools having it).
    let fields: Vec<[String; 3]> = candidates.iter().map(|(_, t)| fields_of(t)).collect();
    let weights: Vec<f64> = words
        .iter()
        .map(|w| {
            let having = fields
                .iter()
                .filter(|f| f.iter().any(|x| x.contains(w.as_str())))
                .count();
            (1.0 + candidates.len() as f64 / having.max(1) as f64).ln()
        })
        .collect();
    let mut ranked: Vec<(f64, &McpTool, &[String])> = candidates
        .iter()
        .zip(&fields)
        .filter_map(|((t, tool), f)| {
            let score = score(&words, &weights, f);
            (score > 0.0 || words.is_empty()).then_some((score, *t, tool.tags.as_slice()))
        })
        .collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.name.cmp(&b.1.name)));
    let total = ranked.len();
    let found: Vec<Value> = ranked
        .into_iter()
        .take(limit)
        .map(|(score, t, tags)| match view.code {
            true => json!({
                "name": t.name,
                "python": snapshot.get(&t.name).map(|c| python_of(&c.tool)),
                "score": (score * 100.0).round() / 100.0,
            }),
            false => json!({
                "name": t.name,
                "title": t.title,
                "description": t.description,
                "tags": tags,
                "inputSchema": t.input_schema.as_ref(),
                "score": (score * 100.0).round() / 100.0,
            }),
        })
        .collect();
    let text = match found.is_empty() {
        true => format!("no tool matches {query:?}; try other words"),
        false if view.code => found
            .iter()
            .filter_map(|f| f["python"].as_str())
            .collect::<Vec<_>>()
            .join("\n\n"),
        false => found
            .iter()
            .map(|f| {
                format!(
                    "{} — {}\n  input schema: {}",
                    f["name"].as_str().unwrap_or_default(),
                    f["description"].as_str().unwrap_or_default(),
                    f["inputSchema"]
                )
            })
            .collect::<Vec<_>>()
            .join("\n"),
    };
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(json!({"tools": found, "matched": total}));
    result
}

/// Words that say nothing about a tool.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "by", "do", "for", "from", "i", "in", "into", "is", "it", "me", "my",
    "of", "on", "or", "some", "that", "the", "this", "to", "tool", "tools", "use", "with",
];

/// The query's words: lower case, stop words out, a plural's `s` dropped (`words` finds
/// `word_stats`).
fn query_words(query: &str) -> Vec<String> {
    query
        .split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .filter(|w| !w.is_empty() && !STOP_WORDS.contains(&w.as_str()))
        .map(|w| match w.strip_suffix('s') {
            Some(stem) if stem.len() > 2 && !stem.ends_with('s') => stem.to_owned(),
            _ => w,
        })
        .collect()
}

/// A tool's name, tags and title + description, in lower case.
fn fields_of(tool: &toolsmith_core::Tool) -> [String; 3] {
    [
        tool.name.as_str().to_lowercase(),
        tool.tags.join(" ").to_lowercase(),
        format!(
            "{} {}",
            tool.title.as_deref().unwrap_or_default(),
            tool.description
        )
        .to_lowercase(),
    ]
}

/// How well a tool's fields match the words: name 3, tag 2, description 1, each times the
/// word's weight; and twice all the words' weight again when the title and description have
/// the words as one phrase, in order ("list repository issues" is the title of GitHub's
/// `issues/list-for-repo`; every `issues_list_*` has the three words).
fn score(words: &[String], weights: &[f64], fields: &[String; 3]) -> f64 {
    let words_score: f64 = words
        .iter()
        .zip(weights)
        .map(|(w, weight)| {
            let hits: f64 = fields
                .iter()
                .zip([3.0, 2.0, 1.0])
                .filter(|(f, _)| f.contains(w.as_str()))
                .map(|(_, k)| k)
                .sum();
            hits * weight
        })
        .sum();
    let phrase = words.len() > 1 && fields[2].contains(&words.join(" "));
    match phrase {
        true => words_score + 2.0 * weights.iter().sum::<f64>(),
        false => words_score,
    }
}

/// The call `call_tool` stands for: its `name` and `arguments` as a call of that tool.
pub fn unwrap_call(mut request: CallToolRequestParams) -> Result<CallToolRequestParams, ErrorData> {
    let arguments = request.arguments.take().unwrap_or_default();
    let Some(name) = arguments.get("name").and_then(Value::as_str) else {
        return Err(ErrorData::invalid_params(
            "call_tool needs `name` (a tool's name from search_tools) and `arguments` (an object)",
            None,
        ));
    };
    let inner = match arguments.get("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(other) => {
            return Err(ErrorData::invalid_params(
                format!("call_tool: `arguments` must be an object, got {other}"),
                None,
            ));
        }
    };
    request.name = name.to_owned().into();
    request.arguments = Some(inner);
    Ok(request)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_whose_title_is_the_query_ranks_above_tools_with_the_same_words() {
        let words = query_words("list repository issues");
        assert_eq!(words, ["list", "repository", "issue"]);
        let weights = [1.0, 1.0, 1.0];
        let field = |name: &str, text: &str| [name.to_owned(), String::new(), text.to_owned()];
        let assignees = field(
            "issues_list_assignees",
            "list assignees lists the available assignees for issues in a repository.",
        );
        let for_repo = field(
            "issues_list_for_repo",
            "list repository issues list issues in a repository.",
        );
        assert!(
            score(&words, &weights, &for_repo) > score(&words, &weights, &assignees),
            "{} vs {}",
            score(&words, &weights, &for_repo),
            score(&words, &weights, &assignees)
        );
        // One word is no phrase: the same score for both.
        let one = query_words("issues");
        assert_eq!(
            score(&one, &[1.0], &for_repo),
            score(&one, &[1.0], &assignees)
        );
    }
}
