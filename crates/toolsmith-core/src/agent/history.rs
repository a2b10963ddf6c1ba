//! The conversation in one provider-neutral form, and its encoding for each provider: OpenAI
//! Chat Completions messages and Anthropic Messages content blocks.
//!
//! The rule every provider enforces, checked by [`answered`]: each tool call of an assistant
//! message is answered by exactly one tool result before anything else follows, and every
//! result answers a call.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// A tool call as the model made it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    /// The name the model used (the exported name).
    pub name: String,
    /// The arguments as the model sent them: JSON text, maybe sloppy.
    pub arguments: String,
}

/// One entry of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Item {
    User {
        text: String,
    },
    Assistant {
        text: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        calls: Vec<ToolCall>,
    },
    ToolResult {
        call_id: String,
        name: String,
        content: String,
        #[serde(default)]
        is_error: bool,
    },
}

/// A history whose calls and results do not pair up: the first call or result at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unanswered {
    #[error("item {item}: a result for {call_id:?}, which no open call made")]
    NoCall { item: usize, call_id: String },
    #[error("item {item}: call {call_id:?} is not answered before it")]
    Before { item: usize, call_id: String },
    #[error("call {0:?} is not answered")]
    AtEnd(String),
}

/// Checks that every call is answered exactly once, right after the message that made it,
/// and that every result answers a call. The error names the first call or result at fault.
pub fn answered(items: &[Item]) -> Result<(), Unanswered> {
    let mut open: Vec<&str> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        match item {
            Item::ToolResult { call_id, .. } => match open.iter().position(|c| c == call_id) {
                Some(p) => {
                    open.remove(p);
                }
                None => {
                    return Err(Unanswered::NoCall {
                        item: i,
                        call_id: call_id.clone(),
                    });
                }
            },
            other => {
                if let Some(c) = open.first() {
                    return Err(Unanswered::Before {
                        item: i,
                        call_id: (*c).to_owned(),
                    });
                }
                if let Item::Assistant { calls, .. } = other {
                    open = calls.iter().map(|c| c.id.as_str()).collect();
                }
            }
        }
    }
    match open.first() {
        Some(c) => Err(Unanswered::AtEnd((*c).to_owned())),
        None => Ok(()),
    }
}

/// The conversation as OpenAI Chat Completions `messages` (after an optional system message).
/// All calls of one response go in one assistant message; each result is a `tool` message.
pub fn openai_messages(system: Option<&str>, items: &[Item]) -> Vec<Value> {
    let mut out = Vec::with_capacity(items.len() + 1);
    if let Some(s) = system {
        out.push(json!({"role": "system", "content": s}));
    }
    for item in items {
        out.push(match item {
            Item::User { text } => json!({"role": "user", "content": text}),
            Item::Assistant { text, calls } if calls.is_empty() => {
                json!({"role": "assistant", "content": text})
            }
            Item::Assistant { text, calls } => json!({
                "role": "assistant",
                "content": if text.is_empty() { Value::Null } else { json!(text) },
                "tool_calls": calls.iter().map(|c| json!({
                    "id": c.id, "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                })).collect::<Vec<_>>(),
            }),
            Item::ToolResult {
                call_id, content, ..
            } => json!({"role": "tool", "tool_call_id": call_id, "content": content}),
        });
    }
    out
}

/// The conversation as Anthropic Messages `messages`: tool uses are content blocks of the
/// assistant message, and results go back as `tool_result` blocks of the next user message.
pub fn anthropic_messages(items: &[Item]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for item in items {
        match item {
            Item::User { text } => {
                // Text after tool results joins the same user message (roles alternate).
                if let Some(last) = out.last_mut().filter(|m| m["role"] == "user")
                    && let Some(blocks) = last["content"].as_array_mut()
                {
                    blocks.push(json!({"type": "text", "text": text}));
                } else {
                    out.push(json!({"role": "user", "content": [{"type": "text", "text": text}]}));
                }
            }
            Item::Assistant { text, calls } => {
                let mut blocks = Vec::new();
                if !text.is_empty() {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                for c in calls {
                    let input = serde_json::from_str::<Value>(&c.arguments)
                        .ok()
                        .filter(Value::is_object)
                        .unwrap_or_else(|| json!({}));
                    blocks.push(
                        json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}),
                    );
                }
                if blocks.is_empty() {
                    blocks.push(json!({"type": "text", "text": "(no answer)"}));
                }
                out.push(json!({"role": "assistant", "content": blocks}));
            }
            Item::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } => {
                let block = json!({"type": "tool_result", "tool_use_id": call_id, "content": content, "is_error": is_error});
                match out.last_mut().filter(|m| m["role"] == "user") {
                    Some(last) => {
                        if let Some(blocks) = last["content"].as_array_mut() {
                            blocks.push(block);
                        }
                    }
                    None => out.push(json!({"role": "user", "content": [block]})),
                }
            }
        }
    }
    out
}
