//! An upstream's "input required" relayed to a client on the 2026-07-28 protocol (SEP-2322),
//! statelessly: the upstream's questions go to the client as it asked them (its keys, its
//! elicitation, sampling and roots requests), and the upstream's `requestState` goes with them
//! sealed ([`toolsmith_store::secrets::seal_state`]) together with the tool, the caller and
//! whether the call was confirmed. The call sent again with the answers opens the state on
//! whichever replica it reaches (they share the registry's key), checks it was issued for
//! this tool and this caller and is not stale, and sends the upstream its own state back.
//! A state changed, made up, another tool's or another caller's is a -32602 error; nothing is
//! kept in memory between the rounds.
//!
//! An upstream on the older protocol asks during the call instead; those questions take
//! [`crate::mcp::ask`]'s parking.

use rmcp::RoleServer;
use rmcp::model::{InputRequiredResult, ProtocolVersion};
use rmcp::service::RequestContext;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use toolsmith_core::{CompiledTool, ToolResult};
use toolsmith_gateway::upstream::{CLIENT_ERROR, Downstream, Resume};
pub use toolsmith_store::now_ms;

/// What a relayed call's `requestState` starts with.
pub const PREFIX: &str = "tsr1.";
/// How long a relayed question may wait for its answer.
pub const KEEP_MS: i64 = 600_000;

/// What the sealed state holds.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Sealed {
    /// The tool the state was issued for (its registry name).
    tool: String,
    /// The caller it was issued to (as the run log names it).
    caller: String,
    /// The call was confirmed (a dangerous tool): the answers do not ask again.
    #[serde(default)]
    confirmed: bool,
    /// The upstream's own `requestState`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    upstream: Option<String>,
    /// Until when it holds (ms since the epoch).
    until: i64,
}

/// Why a `requestState` was refused.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum StateError {
    #[error(
        "requestState was not issued by this server or was changed: send the call again without it"
    )]
    Unreadable,
    #[error("requestState was issued for another tool or another caller")]
    NotThisCall,
    #[error("requestState is older than {} minutes: send the call again without it", KEEP_MS / 60_000)]
    Stale,
}

/// A relayed call's answers, opened: what the upstream gets back, and whether it was confirmed.
#[derive(Debug)]
pub struct Opened {
    pub resume: Resume,
    pub confirmed: bool,
}

/// Whether `state` is a relayed call's (sealed here or by a replica).
pub fn names_relay(state: Option<&str>) -> bool {
    state.is_some_and(|s| s.starts_with(PREFIX))
}

/// Whether this request's client answers an upstream's questions itself (2026-07-28).
pub fn relays(ctx: &RequestContext<RoleServer>) -> bool {
    ctx.protocol_version()
        .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28)
}

/// Sets up `downstream` for a relaying client: results handed back, the client's
/// capabilities declared upstream, and the answers of an opened state.
pub fn prepare(
    downstream: &mut Downstream,
    ctx: &RequestContext<RoleServer>,
    resume: Option<Resume>,
) {
    if !relays(ctx) {
        return;
    }
    downstream.relay_inputs = true;
    downstream.client_capabilities = ctx
        .client_capabilities()
        .and_then(|c| serde_json::to_value(c).ok());
    downstream.resume = resume;
}

/// Opens a relayed call's `state` for `tool` called by `caller`, with the client's answers.
pub fn open(
    state: &str,
    tool: &str,
    caller: &str,
    answers: Option<Map<String, Value>>,
    now_ms: i64,
) -> Result<Opened, StateError> {
    let sealed = state
        .strip_prefix(PREFIX)
        .and_then(toolsmith_store::secrets::open_state)
        .and_then(|plain| serde_json::from_str::<Sealed>(&plain).ok())
        .ok_or(StateError::Unreadable)?;
    if sealed.tool != tool || sealed.caller != caller {
        return Err(StateError::NotThisCall);
    }
    if now_ms > sealed.until {
        return Err(StateError::Stale);
    }
    Ok(Opened {
        resume: Resume {
            input_responses: answers.unwrap_or_default(),
            request_state: sealed.upstream,
        },
        confirmed: sealed.confirmed,
    })
}

/// The answers a request brings to a relayed "input required" (its `requestState` one of
/// ours), opened for `key` and `caller`: `None` for a request that is not such an answer, a
/// -32602 error for a state refused.
pub fn resume(
    state: &Option<String>,
    answers: &Option<rmcp::model::InputResponses>,
    key: &str,
    caller: &str,
) -> Result<Option<Opened>, rmcp::ErrorData> {
    let Some(state) = state.as_deref().filter(|s| names_relay(Some(s))) else {
        return Ok(None);
    };
    let answers = answers
        .as_ref()
        .and_then(|r| serde_json::to_value(r).ok())
        .and_then(|v| v.as_object().cloned());
    open(state, key, caller, answers, now_ms())
        .map(Some)
        .map_err(|e| rmcp::ErrorData::invalid_params(e.to_string(), None))
}

/// The upstream's "input required" in `result` (an upstream tool's call made with
/// `relay_inputs`), its state sealed for `caller`; `None` for any other result.
pub fn relayed(
    tool: &CompiledTool,
    result: &ToolResult,
    caller: &str,
    confirmed: bool,
    now_ms: i64,
) -> Option<InputRequiredResult> {
    tool.tool.executor.upstream()?;
    let data = result.data.as_ref().filter(|_| result.error.is_none())?;
    seal_asked(data, tool.tool.name.as_str(), caller, confirmed, now_ms)
}

/// `answer` when it is an upstream's "input required", its state sealed for `key` (a
/// tool's name, `prompt:` and a prompt's) and `caller`; `None` for any other answer.
pub fn seal_asked(
    answer: &Value,
    key: &str,
    caller: &str,
    confirmed: bool,
    now_ms: i64,
) -> Option<InputRequiredResult> {
    if answer.get("resultType").and_then(Value::as_str) != Some("input_required") {
        return None;
    }
    let mut asked: InputRequiredResult = serde_json::from_value(answer.clone()).ok()?;
    let sealed = Sealed {
        tool: key.to_owned(),
        caller: caller.to_owned(),
        confirmed,
        upstream: asked.request_state.take(),
        until: now_ms + KEEP_MS,
    };
    let plain = serde_json::to_string(&sealed).ok()?;
    asked.request_state = Some(format!(
        "{PREFIX}{}",
        toolsmith_store::secrets::seal_state(&plain)
    ));
    Some(asked)
}

/// An upstream's error that is the client's own fault — it did not declare a capability the
/// tool needs (-32021) — as the upstream gave it, for the client: `None` for any other result.
pub fn client_error(tool: &CompiledTool, result: &ToolResult) -> Option<rmcp::ErrorData> {
    tool.tool.executor.upstream()?;
    let e = result.error.as_ref()?.output.as_ref()?.get(CLIENT_ERROR)?;
    let code = i32::try_from(e.get("code")?.as_i64()?).ok()?;
    let message = e.get("message")?.as_str()?.to_owned();
    let data = e.get("data").filter(|d| !d.is_null()).cloned();
    Some(rmcp::ErrorData::new(
        rmcp::model::ErrorCode(code),
        message,
        data,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seal(s: &Sealed) -> String {
        let plain = serde_json::to_string(s).expect("json");
        format!("{PREFIX}{}", toolsmith_store::secrets::seal_state(&plain))
    }

    fn issued(upstream: Option<&str>) -> Sealed {
        Sealed {
            tool: "ask".into(),
            caller: "mcp:ada".into(),
            confirmed: true,
            upstream: upstream.map(str::to_owned),
            until: 2_000,
        }
    }

    #[test]
    fn a_state_opens_for_its_tool_and_caller_only_and_until_it_is_stale() {
        let state = seal(&issued(Some("up-1")));
        assert!(names_relay(Some(&state)));
        let answers: Map<String, Value> =
            serde_json::from_value(serde_json::json!({"user_name": {"action": "accept"}}))
                .expect("map");
        let opened = open(&state, "ask", "mcp:ada", Some(answers.clone()), 1_000).expect("opens");
        assert!(opened.confirmed);
        assert_eq!(opened.resume.request_state.as_deref(), Some("up-1"));
        assert_eq!(opened.resume.input_responses, answers);
        assert_eq!(
            open(&state, "other", "mcp:ada", None, 1_000).err(),
            Some(StateError::NotThisCall)
        );
        assert_eq!(
            open(&state, "ask", "mcp:bob", None, 1_000).err(),
            Some(StateError::NotThisCall)
        );
        assert_eq!(
            open(&state, "ask", "mcp:ada", None, 2_001).err(),
            Some(StateError::Stale)
        );
        for bad in [
            format!("{state}-TAMPERED"),
            state.replacen(PREFIX, "", 1),
            format!("{PREFIX}AAAA"),
        ] {
            assert_eq!(
                open(&bad, "ask", "mcp:ada", None, 1_000).err(),
                Some(StateError::Unreadable),
                "{bad}"
            );
        }
    }
}
