//! A `tools/call`, answered: search mode's own tools, the tool found in the request's view,
//! the call path's admission (rate limits), the answers to a relayed question opened, the
//! confirmation of a dangerous tool, then the run — parked where an upstream's questions go
//! to a 2026-07-28 client — and its result in MCP's form: a complete result, an upstream's
//! "input required" ([`super::relay`]) or an upstream's task ([`super::tasks`]).

use rmcp::model::{CallToolRequestParams, CallToolResponse};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::{Value, json};
use toolsmith_core::{ErrorKind, ToolResult};

use super::ask::{self, Next, Parking};
use super::confirm::Confirmation;
use super::{McpServer, asks_back, params, relay, search, tasks};

impl McpServer {
    /// A `tools/call`, answered (in its span: [`crate::traces::mcp_request`]).
    pub(super) async fn answer_call(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if let Some(why) = ctx.meta.get(params::BAD_KEY).and_then(Value::as_str) {
            return Err(ErrorData::invalid_params(why.to_owned(), None));
        }
        let view = self.view(&ctx).await?;
        let snapshot = self.snapshot().await?;
        let mut request = request;
        let mut wrapped = false;
        if view.code {
            match request.name.as_ref() {
                search::SEARCH => {
                    let arguments = request.arguments.unwrap_or_default();
                    return Ok(search::search(&snapshot, &view, &arguments).into());
                }
                search::RUN => {
                    let answers = request
                        .input_responses
                        .as_ref()
                        .and_then(|r| serde_json::to_value(r).ok());
                    let state = request.request_state.as_deref();
                    let arguments = request.arguments.clone().unwrap_or_default();
                    return Ok(self
                        .run_program(arguments, view, (state, answers), &ctx)
                        .await);
                }
                _ => {}
            }
        }
        if view.search {
            match request.name.as_ref() {
                search::SEARCH => {
                    let arguments = request.arguments.unwrap_or_default();
                    return Ok(search::search(&snapshot, &view, &arguments).into());
                }
                search::CALL => {
                    request = search::unwrap_call(request)?;
                    wrapped = true;
                }
                // A member called by its own name (a model that skipped call_tool) runs too.
                _ => {}
            }
        }
        let found = snapshot
            .by_name
            .get(request.name.as_ref())
            .filter(|t| view.admits(&t.tool))
            .cloned();
        let Some(tool) = found else {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool {:?}: it is not in this server's registry, or it is disabled; tools/list shows the tools",
                    request.name
                ),
                None,
            ));
        };
        // Arguments sent as JSON text are read by the pipeline, as REST's are.
        let arguments = match ctx.meta.get(params::TEXT_KEY) {
            Some(Value::String(text)) if !wrapped => Value::String(text.clone()),
            _ => Value::Object(request.arguments.clone().unwrap_or_default()),
        };
        // The call path's first step: the caller's own rate limit (over HTTP, where callers
        // are known).
        let door = self.door(&ctx);
        let admitted = match door.clone().admit(&self.state, &tool, &arguments).await {
            Ok(admitted) => admitted,
            Err(refused) => return Ok(self.finish(&tool, refused, false)),
        };
        let upstream = tool.tool.executor.upstream().is_some();
        // The answers to an upstream's "input required" relayed to this client: the state it
        // was given, opened and checked (a bad one is refused before anything runs).
        let opened = match upstream {
            true => relay::resume(
                &request.request_state,
                &request.input_responses,
                tool.tool.name.as_str(),
                &door.log_name,
            )?,
            false => None,
        };
        // The answer to an upstream's question asked of this client (protocol 2026-07-28):
        // the parked call goes on.
        if let Some(state) = request
            .request_state
            .as_deref()
            .filter(|s| upstream && Parking::names_a_question(Some(s)))
        {
            let answer = request
                .input_responses
                .as_ref()
                .and_then(|r| r.get(ask::QUESTION_KEY))
                .cloned()
                .unwrap_or_else(|| json!({"action": "cancel"}));
            let result = match self.parking.resume(state, answer).await {
                Some(Next::Ask(asked)) => return Ok(CallToolResponse::InputRequired(asked)),
                // (Counted and logged by the call path the parked call runs on.)
                Some(Next::Done(result)) => *result,
                None => {
                    let result = ToolResult::err(
                        ErrorKind::Upstream,
                        format!(
                            "the question of `{}` this answers is no longer waiting (it waits {} minutes, \
                             on the server that asked it); call the tool again",
                            tool.tool.name,
                            ask::KEEP.as_secs() / 60
                        ),
                        Vec::new(),
                        tool.meta(Vec::new()),
                    );
                    self.state.record(&door, &tool.tool, &result, &arguments);
                    result
                }
            };
            return Ok(self.finish(&tool, result, false));
        }
        let confirmation = match &opened {
            Some(o) if o.confirmed => Confirmation::Confirmed,
            _ => self.confirmation(&tool, &arguments, &request, &ctx).await,
        };
        let (confirmed, declined) = match confirmation {
            Confirmation::Ask(ask) => return Ok(CallToolResponse::InputRequired(ask)),
            Confirmation::Confirmed => (true, false),
            Confirmation::Declined => (false, true),
            Confirmation::NotAsked => (false, false),
        };
        // An upstream's questions go to a 2026-07-28 client as "input required": the call is
        // parked until the answer comes with the call sent again.
        let resume = opened.map(|o| o.resume);
        let result = if upstream && asks_back(&ctx) {
            match self
                .parked_run(admitted, arguments.clone(), (confirmed, resume), &ctx)
                .await
            {
                Next::Ask(asked) => return Ok(CallToolResponse::InputRequired(asked)),
                Next::Done(result) => *result,
            }
        } else {
            self.run(
                admitted,
                &tool,
                arguments.clone(),
                (confirmed, resume),
                &ctx,
            )
            .await
        };
        if let Some(e) = relay::client_error(&tool, &result) {
            return Err(e);
        }
        if let Some(e) = connect_first(&result, &ctx) {
            return Err(e);
        }
        // A 2026-07-28 upstream's "input required", for this client to answer.
        if let Some(asked) =
            relay::relayed(&tool, &result, &door.log_name, confirmed, relay::now_ms())
        {
            return Ok(CallToolResponse::InputRequired(asked));
        }
        // A 2026-07-28 upstream's task, for this client to follow (tasks extension).
        if let Some(task) = tasks::relayed(&tool, &result, &door.log_name) {
            return Ok(task);
        }
        Ok(self.finish(&tool, result, declined))
    }
}

/// MCP's "URL elicitation required" error (2025-11-25, SEP-1036).
pub const URL_ELICITATION_REQUIRED: i32 = -32042;

/// A call that needs its caller to connect their own account first (a per-user OAuth
/// server), for a client that can show its user a page (`elicitation.url`): the URL as a
/// URL-mode elicitation the client opens before it calls again. Other clients get the
/// result, whose message carries the URL.
fn connect_first(result: &ToolResult, ctx: &RequestContext<RoleServer>) -> Option<ErrorData> {
    let e = result.error.as_ref()?;
    if e.kind != ErrorKind::NeedsAuthorization {
        return None;
    }
    let url = e.output.as_ref()?.get("authorization_url")?.as_str()?;
    ctx.client_capabilities()?.elicitation?.url?;
    let id = format!("connect-{}", toolsmith_gateway::random_hex(8));
    Some(ErrorData::new(
        rmcp::model::ErrorCode(URL_ELICITATION_REQUIRED),
        e.message.clone(),
        Some(json!({"elicitations": [{
            "mode": "url",
            "elicitationId": id,
            "url": url,
            "message": "Connect your own account with this server (it opens its consent page); then call the tool again.",
        }]})),
    ))
}
