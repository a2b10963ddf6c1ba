//! Confirmation of a dangerous tool before it runs (SPEC §7): always yes for safe tools or
//! with `--allow-dangerous`; otherwise the user is asked through elicitation when the client
//! can show a form — an input-required result on protocol 2026-07-28 (the answer comes with
//! the call sent again, under [`CONFIRM_KEY`]), an `elicitation/create` request before it.

use rmcp::RoleServer;
use rmcp::model::{CallToolRequestParams, InputRequest, InputRequiredResult, ProtocolVersion};
use rmcp::service::RequestContext;
use serde_json::{Value, json};
use toolsmith_core::CompiledTool;
use toolsmith_gateway::code::{confirmation_question, confirmed_by};

use super::McpServer;

/// The key of the confirmation in an input-required round trip.
pub(super) const CONFIRM_KEY: &str = "toolsmith_confirm";

/// What the user said about running a dangerous tool.
pub(super) enum Confirmation {
    Confirmed,
    Declined,
    /// The client cannot ask (no elicitation): refused with advice.
    NotAsked,
    /// Ask first (protocol 2026-07-28): the client retries the call with the answer.
    Ask(InputRequiredResult),
}

impl Confirmation {
    /// An elicitation answer: `{"action": "accept", "content": {"confirm": true}}` runs.
    fn answered(answer: &Value) -> Self {
        match confirmed_by(answer) {
            true => Self::Confirmed,
            false => Self::Declined,
        }
    }
}

impl McpServer {
    /// Whether a call may run: always for safe tools or with --allow-dangerous; otherwise
    /// the user is asked through elicitation when the client can show a form (as an
    /// input-required result on protocol 2026-07-28, a server request before it).
    pub(super) async fn confirmation(
        &self,
        tool: &CompiledTool,
        arguments: &Value,
        request: &CallToolRequestParams,
        ctx: &RequestContext<RoleServer>,
    ) -> Confirmation {
        if !tool.tool.is_dangerous() || self.options.allow_dangerous {
            return Confirmation::Confirmed;
        }
        if let Some(answer) = request
            .input_responses
            .as_ref()
            .and_then(|r| r.get(CONFIRM_KEY))
        {
            return Confirmation::answered(answer);
        }
        if ctx
            .client_capabilities()
            .is_none_or(|c| c.elicitation.is_none())
        {
            return Confirmation::NotAsked;
        }
        let params = confirmation_question(&tool.tool, arguments);
        let modern = ctx
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        if modern {
            let ask = json!({"method": "elicitation/create", "params": params});
            return match serde_json::from_value::<InputRequest>(ask) {
                Ok(ask) => Confirmation::Ask(InputRequiredResult::from_input_requests(
                    [(CONFIRM_KEY.to_owned(), ask)].into_iter().collect(),
                )),
                Err(e) => {
                    tracing::error!("building the confirmation request: {e}");
                    Confirmation::NotAsked
                }
            };
        }
        let Ok(params) = serde_json::from_value(params) else {
            return Confirmation::NotAsked;
        };
        match ctx.peer.create_elicitation(params).await {
            Ok(answer) => Confirmation::answered(&serde_json::to_value(answer).unwrap_or_default()),
            Err(e) => {
                tracing::warn!("asking the user to confirm `{}`: {e}", tool.tool.name);
                Confirmation::NotAsked
            }
        }
    }
}
