//! The result contract every execution returns (SPEC §5.1, seed 004).
//!
//! `{"success": true, "data": ..., "meta": {...}}` or
//! `{"success": false, "error": {"kind", "message", "details"}, "meta": {...}}`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Why a call failed; the wire names are snake_case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum ErrorKind {
    InvalidArguments,
    UnknownTool,
    Disabled,
    NeedsConfirmation,
    Timeout,
    ExitStatus,
    OutputLimit,
    SpawnFailed,
    BadOutput,
    Cancelled,
    /// A session tool could not reach its session; the message starts with the reason:
    /// `session_unknown`, `session_expired`, `session_ended`, `session_busy`,
    /// `session_limit`, `session_elsewhere`, `session_lost` or `sessions_unavailable`.
    Session,
    /// An upstream MCP server could not answer: it is down (the message has its last error
    /// and stderr tail), it answered with a JSON-RPC error, or the connection broke.
    Upstream,
    /// An upstream MCP server uses OAuth and toolsmith holds no (or not enough) authorization
    /// for it: the message says how to connect it (`POST /v1/servers/{name}/connect`).
    NeedsAuthorization,
    /// An upstream MCP tool ran and reported a failure (`isError`); its result is the output.
    ToolError,
    /// An HTTP API answered with a status of 400 or more; the message has the status and the
    /// body's head, the output the whole body.
    HttpStatus,
    /// An HTTP request got no answer: a name that does not resolve, a refused or broken
    /// connection, TLS, or a host or redirect toolsmith refuses.
    Network,
    /// The process could not be sandboxed as its policy requires: the kernel lacks what an
    /// `enforce: required` policy needs, or a protected file has a second name (a hard link).
    Sandbox,
    /// Over a rate limit (the tool's, or the caller's): `meta.retry_after_ms` says how long
    /// to wait.
    RateLimited,
    Internal,
}

/// One problem with the arguments: where (a JSON pointer into them) and what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Problem {
    pub pointer: String,
    pub message: String,
}

/// Longest message a [`Problem`] carries, in characters; a longer one is cut (see [`cut`]).
/// Quoted values are cut shorter where they are quoted; this bounds every other way a
/// message could grow with what was sent (a 2 MiB key named in "unknown argument").
pub const PROBLEM_MESSAGE_MAX: usize = 1000;
/// Longest pointer a [`Problem`] carries, in characters.
pub const PROBLEM_POINTER_MAX: usize = 300;

impl Problem {
    pub fn new(pointer: impl Into<String>, message: impl Into<String>) -> Self {
        let (pointer, message) = (pointer.into(), message.into());
        Self {
            pointer: cut(&pointer, PROBLEM_POINTER_MAX).unwrap_or(pointer),
            message: cut(&message, PROBLEM_MESSAGE_MAX).unwrap_or(message),
        }
    }
}

/// `text` cut to its first `max` characters and marked `… (N bytes)` with its whole size;
/// `None` when it is no longer than that.
pub fn cut(text: &str, max: usize) -> Option<String> {
    let (at, _) = text.char_indices().nth(max)?;
    Some(format!("{}… ({} bytes)", &text[..at], text.len()))
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.pointer.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.pointer, self.message)
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ToolError {
    pub kind: ErrorKind,
    pub message: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<Problem>,
    /// What the process wrote before it failed (`{"stdout", "stderr"}`), when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
}

/// What is known about a call besides its outcome.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Meta {
    pub tool: String,
    pub version: u64,
    /// Each coercion applied to the arguments, as `path: from→to`.
    #[serde(default)]
    pub coerced: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// True when stdout or stderr was cut to the output limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
    /// The full sizes of stdout and stderr, when a process ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdout_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr_bytes: Option<u64>,
    /// True when output was not valid UTF-8 and was shown with replacement characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lossy: Option<bool>,
    /// For `http` tools: `{"status", "headers", "redirects"?}` of the response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<Value>,
    /// For processes: the sandbox policy and what this kernel enforced of it
    /// (`{"policy", "filesystem", "network", "signals", "landlock_abi", "seccomp", ...}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<Value>,
    /// When a call was refused by a rate limit: milliseconds until it would be let through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
    /// A session call answered by the replica holding the session (behind a load balancer):
    /// that replica, `ID (host:pid)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forwarded_to: Option<String>,
    /// The call's id, as the execution log records it (`GET /v1/runs?call_id=`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// The run this call was made by — a code-mode program's, by its call id
    /// (`GET /v1/runs?parent=`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_call_id: Option<String>,
    /// What the result guardrails did: credentials scrubbed (by rule, how many), the result
    /// cut to `max_result_bytes` ([`crate::guard::result`]). Never a scrubbed value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guardrails: Option<Guardrails>,
}

/// `meta.guardrails`: what the result guardrails changed in a result.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Guardrails {
    /// How many credentials each rule replaced (`aws_access_key`, `tool_secret`, …).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub scrubbed: std::collections::BTreeMap<String, u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut: Option<Cut>,
}

impl Guardrails {
    pub fn is_empty(&self) -> bool {
        self.scrubbed.is_empty() && self.cut.is_none()
    }
}

/// A result cut to its cap: its size as JSON before and after, and the cap.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Cut {
    pub from_bytes: u64,
    pub to_bytes: u64,
    pub max_result_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ToolResult {
    pub success: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ToolError>,
    pub meta: Meta,
}

impl ToolResult {
    pub fn ok(data: Value, meta: Meta) -> Self {
        Self {
            success: true,
            data: Some(data),
            error: None,
            meta,
        }
    }

    pub fn err(
        kind: ErrorKind,
        message: impl Into<String>,
        details: Vec<Problem>,
        meta: Meta,
    ) -> Self {
        Self {
            success: false,
            data: None,
            error: Some(ToolError {
                kind,
                message: message.into(),
                details,
                output: None,
            }),
            meta,
        }
    }

    /// Attaches what the process wrote to an error result.
    pub fn with_output(mut self, output: Value) -> Self {
        if let Some(e) = &mut self.error {
            e.output = Some(output);
        }
        self
    }

    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}
