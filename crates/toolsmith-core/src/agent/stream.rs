//! Streamed model answers, assembled: OpenAI Chat Completions chunks and Anthropic Messages
//! events in, text deltas out as they come, and at the end the whole response — its text and
//! its tool calls, whose names and JSON arguments arrive in fragments.
//!
//! Lenient where servers differ (unknown fields, `usage: {}`, a missing `[DONE]`, `type`
//! late or never, names split across fragments, `finish_reason: "stop"` with tool calls) and
//! plain where they fail (a mid-stream `error`, a chunk that is not JSON).

use std::collections::BTreeMap;

use serde_json::Value;

use super::history::ToolCall;
use super::sse::SseEvent;

/// Text as it arrives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delta {
    Text(String),
    /// Reasoning some models stream beside the answer (not sent back to them).
    Reasoning(String),
}

/// Token counts, when the provider says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// A whole answer.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Response {
    pub text: String,
    pub calls: Vec<ToolCall>,
    /// `stop`, `tool_calls`, `length`, `end_turn`, `tool_use`… as the provider said it.
    pub finish: Option<String>,
    pub usage: Option<Usage>,
}

/// Why a stream could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamError {
    /// The provider reported an error in the stream.
    Provider(String),
    /// The stream held something that is not what the protocol says.
    Malformed(String),
}

impl std::fmt::Display for StreamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StreamError::Provider(m) => write!(f, "the provider reported an error: {m}"),
            StreamError::Malformed(m) => write!(f, "the provider's stream could not be read: {m}"),
        }
    }
}

/// Either provider's assembler.
pub trait Assembler {
    /// One server-sent event: the text it adds.
    fn event(&mut self, event: &SseEvent) -> Result<Vec<Delta>, StreamError>;
    /// The stream said it is over (`[DONE]`, `message_stop`).
    fn done(&self) -> bool;
    /// The answer so far (at the end: the answer).
    fn response(&self) -> Response;
}

fn parse(data: &str) -> Result<Value, StreamError> {
    serde_json::from_str(data).map_err(|e| {
        let head: String = data.chars().take(120).collect();
        StreamError::Malformed(format!("an event is not JSON ({e}): {head:?}"))
    })
}

fn error_message(v: &Value) -> String {
    let e = &v["error"];
    let message = e["message"].as_str().or_else(|| e.as_str()).unwrap_or("");
    match e["type"].as_str().or_else(|| e["code"].as_str()) {
        Some(kind) if !message.is_empty() => format!("{message} ({kind})"),
        Some(kind) => kind.to_string(),
        None if !message.is_empty() => message.to_string(),
        None => v["error"].to_string(),
    }
}

#[derive(Debug, Default, Clone)]
struct Partial {
    id: String,
    name: String,
    arguments: String,
}

/// OpenAI Chat Completions (`chat.completion.chunk` events).
#[derive(Debug, Default)]
pub struct OpenAi {
    text: String,
    calls: BTreeMap<u64, Partial>,
    finish: Option<String>,
    usage: Option<Usage>,
    done: bool,
}

impl Assembler for OpenAi {
    fn event(&mut self, event: &SseEvent) -> Result<Vec<Delta>, StreamError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(Vec::new());
        }
        if data.is_empty() {
            return Ok(Vec::new());
        }
        let v = parse(data)?;
        if !v["error"].is_null() {
            return Err(StreamError::Provider(error_message(&v)));
        }
        if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
            let n = |k: &str| u.get(k).and_then(Value::as_u64);
            if let (Some(i), Some(o)) = (n("prompt_tokens"), n("completion_tokens")) {
                self.usage = Some(Usage {
                    input_tokens: i,
                    output_tokens: o,
                });
            }
        }
        let mut out = Vec::new();
        for choice in v["choices"].as_array().into_iter().flatten() {
            let delta = &choice["delta"];
            if let Some(t) = delta["content"].as_str().filter(|t| !t.is_empty()) {
                self.text.push_str(t);
                out.push(Delta::Text(t.to_owned()));
            }
            for key in ["reasoning_content", "reasoning"] {
                if let Some(t) = delta[key].as_str().filter(|t| !t.is_empty()) {
                    out.push(Delta::Reasoning(t.to_owned()));
                }
            }
            for (j, call) in delta["tool_calls"]
                .as_array()
                .into_iter()
                .flatten()
                .enumerate()
            {
                // Keyed by `index`; a server that leaves it out gets the position (or, for a
                // fragment without an id, the last call).
                let index = call["index"].as_u64().unwrap_or_else(|| {
                    match (call["id"].as_str(), self.calls.keys().next_back()) {
                        (None, Some(last)) => *last,
                        _ => self.calls.len() as u64 + j as u64,
                    }
                });
                let p = self.calls.entry(index).or_default();
                if let Some(id) = call["id"].as_str().filter(|s| !s.is_empty()) {
                    p.id = id.to_owned();
                }
                let f = &call["function"];
                if let Some(n) = f["name"].as_str() {
                    p.name.push_str(n);
                }
                if let Some(a) = f["arguments"].as_str() {
                    p.arguments.push_str(a);
                }
            }
            if let Some(r) = choice["finish_reason"].as_str() {
                self.finish = Some(r.to_owned());
            }
        }
        Ok(out)
    }

    fn done(&self) -> bool {
        self.done
    }

    fn response(&self) -> Response {
        Response {
            text: self.text.clone(),
            calls: finished(&self.calls),
            finish: self.finish.clone(),
            usage: self.usage,
        }
    }
}

/// The calls assembled, in the provider's order: an id made up where a server sent none,
/// `{}` for arguments never sent.
fn finished(calls: &BTreeMap<u64, Partial>) -> Vec<ToolCall> {
    calls
        .iter()
        .filter(|(_, p)| !p.name.is_empty())
        .map(|(i, p)| ToolCall {
            id: if p.id.is_empty() {
                format!("call_{i}")
            } else {
                p.id.clone()
            },
            name: p.name.clone(),
            arguments: if p.arguments.trim().is_empty() {
                "{}".into()
            } else {
                p.arguments.clone()
            },
        })
        .collect()
}

/// Anthropic Messages (`message_start` … `message_stop` events).
#[derive(Debug, Default)]
pub struct Anthropic {
    text: String,
    /// Content blocks by index: tool uses only (text goes straight into `text`).
    calls: BTreeMap<u64, Partial>,
    finish: Option<String>,
    usage: Usage,
    saw_usage: bool,
    done: bool,
}

impl Assembler for Anthropic {
    fn event(&mut self, event: &SseEvent) -> Result<Vec<Delta>, StreamError> {
        if event.data.trim().is_empty() {
            return Ok(Vec::new());
        }
        let v = parse(&event.data)?;
        let kind = v["type"].as_str().unwrap_or(event.event.as_str());
        let mut out = Vec::new();
        match kind {
            "error" => return Err(StreamError::Provider(error_message(&v))),
            "message_start" => {
                if let Some(n) = v["message"]["usage"]["input_tokens"].as_u64() {
                    self.usage.input_tokens = n;
                    self.saw_usage = true;
                }
            }
            "content_block_start" => {
                let block = &v["content_block"];
                let index = v["index"].as_u64().unwrap_or(0);
                match block["type"].as_str() {
                    Some("tool_use") => {
                        let p = self.calls.entry(index).or_default();
                        p.id = block["id"].as_str().unwrap_or_default().to_owned();
                        p.name = block["name"].as_str().unwrap_or_default().to_owned();
                        // Input normally streams as partial JSON; a non-empty start counts.
                        if let Some(input) = block["input"].as_object().filter(|o| !o.is_empty()) {
                            p.arguments = Value::Object(input.clone()).to_string();
                        }
                    }
                    Some("text") => {
                        if let Some(t) = block["text"].as_str().filter(|t| !t.is_empty()) {
                            self.text.push_str(t);
                            out.push(Delta::Text(t.to_owned()));
                        }
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let d = &v["delta"];
                let index = v["index"].as_u64().unwrap_or(0);
                match d["type"].as_str() {
                    Some("text_delta") => {
                        if let Some(t) = d["text"].as_str() {
                            self.text.push_str(t);
                            out.push(Delta::Text(t.to_owned()));
                        }
                    }
                    Some("input_json_delta") => {
                        if let Some(j) = d["partial_json"].as_str() {
                            self.calls.entry(index).or_default().arguments.push_str(j);
                        }
                    }
                    Some("thinking_delta") => {
                        if let Some(t) = d["thinking"].as_str() {
                            out.push(Delta::Reasoning(t.to_owned()));
                        }
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(r) = v["delta"]["stop_reason"].as_str() {
                    self.finish = Some(r.to_owned());
                }
                if let Some(n) = v["usage"]["output_tokens"].as_u64() {
                    self.usage.output_tokens = n;
                    self.saw_usage = true;
                }
            }
            "message_stop" => self.done = true,
            _ => {} // ping, content_block_stop, unknown events
        }
        Ok(out)
    }

    fn done(&self) -> bool {
        self.done
    }

    fn response(&self) -> Response {
        Response {
            text: self.text.clone(),
            calls: finished(&self.calls),
            finish: self.finish.clone(),
            usage: self.saw_usage.then_some(self.usage),
        }
    }
}
