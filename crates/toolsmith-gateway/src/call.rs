//! The gateway's one call path, which every front door takes (REST's `POST /v1/tools/{name}/call`,
//! MCP's `tools/call` over HTTP and stdio): a call is first admitted under its caller's rate
//! limit ([`Door::admit`]), then run by the engine, counted in the metrics and written to the
//! execution log ([`Admitted::run`]) — and written as `cancelled` when its request goes away
//! before it ends (dropping the call killed its processes), so every call that started is in
//! the log whichever door it came through. A door only reads its wire format into a call and
//! writes the result back in it; what a door asks of the user (MCP's confirmation and an
//! upstream's questions) happens between the two steps.

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use toolsmith_core::result::Problem;
use toolsmith_core::{CompiledTool, ErrorKind, ToolResult};
use toolsmith_exec::CallOptions;

use crate::identity::Caller;
use crate::{Gateway, GatewayError};
use toolsmith_store::RunRecord;

/// Which door a call came through, and who called.
#[derive(Debug, Clone)]
pub struct Door {
    /// The door's label in the metrics: `rest`, or the MCP server's caller name.
    pub label: String,
    /// The caller, where the door knows one (over HTTP): its rate limit applies.
    pub caller: Option<Caller>,
    /// The name the execution log knows the caller by.
    pub log_name: String,
}

/// A call admitted through its door: the only way to run one ([`Admitted::run`]).
pub struct Admitted {
    state: Arc<Gateway>,
    door: Door,
    tool: Arc<CompiledTool>,
}

impl Door {
    /// Whose own connection a call reaches an upstream on, where a server connects each
    /// user's own account: the caller's log name when the server asks for tokens, else
    /// [`toolsmith_exec::upstream::LOCAL_SUBJECT`] (one person: the one at this machine).
    /// Whom its requests to an upstream are for: [`Self::subject`], with the caller's JWT
    /// for a server that exchanges it. (`subject` is where the name is kept.)
    pub fn on_behalf<'a>(&'a self, subject: &'a str) -> toolsmith_exec::upstream::OnBehalf<'a> {
        toolsmith_exec::upstream::OnBehalf {
            subject: Some(subject),
            token: self.caller.as_ref().and_then(|c| c.jwt.as_ref()),
        }
    }

    pub fn subject(&self) -> String {
        match &self.caller {
            Some(c) if c.auth_required => c.log_name(),
            _ => toolsmith_exec::upstream::LOCAL_SUBJECT.to_owned(),
        }
    }

    /// The call of `tool` admitted, or refused (`rate_limited`, with `meta.retry_after_ms`);
    /// a refusal is counted and logged like any other result.
    pub async fn admit(
        self,
        state: &Arc<Gateway>,
        tool: &Arc<CompiledTool>,
        arguments: &Value,
    ) -> Result<Admitted, ToolResult> {
        let refused = match &self.caller {
            Some(caller) => state.admit(caller, tool).await,
            None => None,
        };
        if let Some(refused) = refused {
            state.record(&self, &tool.tool, &refused, arguments);
            return Err(refused);
        }
        Ok(Admitted {
            state: state.clone(),
            door: self,
            tool: tool.clone(),
        })
    }
}

impl Admitted {
    /// Runs the call — or answers `invalid_arguments` for `problem`, a body the door could not
    /// read as arguments (a disabled tool answers `disabled` whatever its arguments: the
    /// engine says so) — counts it and logs it. Dropped before it ends, it logs the call as
    /// `cancelled`.
    pub async fn run(
        self,
        arguments: Value,
        problem: Option<Problem>,
        mut options: CallOptions,
    ) -> ToolResult {
        if options.downstream.subject.is_none() {
            options.downstream.subject = Some(self.door.subject());
            options.downstream.subject_token =
                self.door.caller.as_ref().and_then(|c| c.jwt.clone());
        }
        let _flight = self.state.metrics.in_flight();
        let mut unfinished = Unfinished {
            admitted: &self,
            arguments: &arguments,
            started: Instant::now(),
            armed: true,
        };
        let result = match problem {
            Some(problem) if self.tool.tool.enabled => self.tool.invalid_arguments(vec![problem]),
            _ => {
                self.state
                    .engine
                    .call(&self.tool, arguments.clone(), options)
                    .await
            }
        };
        let result = match (&result.error, self.tool.tool.executor.upstream()) {
            (Some(e), Some(target))
                if e.kind == ErrorKind::NeedsAuthorization
                    && self.state.engine.upstreams().per_user(&target.server) =>
            {
                self.state
                    .with_authorization_url(&target.server, &self.door.subject(), result)
                    .await
            }
            _ => result,
        };
        unfinished.armed = false;
        self.state
            .record(&self.door, &self.tool.tool, &result, &arguments);
        result
    }
}

impl Gateway {
    /// The tool a call of `name` runs: its current version (kept per registry generation, so
    /// a call does not read the registry), or the older `version` it pins. A pinned version
    /// runs only while the tool exists and is enabled now, and as dangerous if either it or the
    /// current version is: a pin chooses a definition, not a way around what the tool's owner
    /// decided since.
    pub async fn tool_to_call(
        &self,
        name: &str,
        version: Option<u64>,
    ) -> Result<Arc<CompiledTool>, GatewayError> {
        use toolsmith_store::Store;
        if let Some(c) = self.current(name)
            && version.is_none_or(|v| v == c.version)
        {
            return Ok(c);
        }
        let generation = self.generation();
        let current = self.store.get(name).await?;
        if version.is_none_or(|v| v == current.version) {
            let c = self.compiled(&current.tool, current.version)?;
            self.remember_current(generation, c.clone());
            return Ok(c);
        }
        // A pinned older version.
        let v = version.unwrap_or(current.version);
        let mut pinned =
            toolsmith_store::definition_to_tool(&self.store.version(name, v).await?.definition)?;
        pinned.enabled = current.tool.enabled;
        if current.tool.is_dangerous() {
            pinned.danger = toolsmith_core::model::Danger::Dangerous;
        }
        self.compiled(&pinned, v)
    }

    /// A session call another replica forwarded here, where its session lives (its proof
    /// already checked: [`crate::sessions::check_peer`]), answered as the caller named in it
    /// with no further forwarding or limits (the replica the caller reached applied those and
    /// counted it). This replica writes the run-log entry, under that caller, before it
    /// answers: the caller's next look at the log (on any replica) has it.
    pub async fn answer_forwarded(
        &self,
        call: crate::sessions::PeerCall,
    ) -> Result<ToolResult, GatewayError> {
        if !matches!(
            call.tool.as_str(),
            "session_exec" | "session_read" | "session_end"
        ) {
            return Err(GatewayError::NotForwarded(call.tool));
        }
        let tool = self.tool_to_call(&call.tool, None).await?;
        let arguments = Value::Object(call.arguments);
        let result = self
            .engine
            .call(
                &tool,
                arguments.clone(),
                CallOptions {
                    admin: call.admin,
                    forwarded: true,
                    ..CallOptions::new(call.caller.clone(), true)
                },
            )
            .await;
        self.runs.record(RunRecord::of_tool(
            &tool.tool,
            &result,
            &arguments,
            &call.caller,
        ));
        self.runs.flush().await;
        Ok(result)
    }

    /// A call through `door` with nothing asked of the user between admitting and running
    /// it (a door that asks goes through [`Door::admit`] and [`Admitted::run`] itself).
    pub async fn call(
        self: &Arc<Self>,
        door: Door,
        tool: &Arc<CompiledTool>,
        arguments: Value,
        options: CallOptions,
    ) -> ToolResult {
        match door.admit(self, tool, &arguments).await {
            Ok(admitted) => admitted.run(arguments, None, options).await,
            Err(refused) => refused,
        }
    }

    /// Whether `caller` may call `tool` now under its own rate limit (its token's, else the
    /// server's): `None`, or the refusal (kind `rate_limited`, `meta.retry_after_ms`).
    pub async fn admit(&self, caller: &Caller, tool: &CompiledTool) -> Option<ToolResult> {
        let limit = caller.rate_limit.or_else(|| self.default_rate_limit())?;
        let who = caller.log_name();
        self.engine
            .rates()
            // One scope per distinct limit: callers with different limits never reset
            // each other's buckets.
            .take(&format!("caller {}", limit.text()), limit, &who)
            .await
            .err()
            .map(|wait| {
                let mut meta = tool.meta(Vec::new());
                meta.retry_after_ms = Some(wait.as_millis() as u64 + 1);
                ToolResult::err(
                    ErrorKind::RateLimited,
                    format!(
                        "{who:?} may make {} calls; try again in {:.1} s",
                        limit.text(),
                        wait.as_secs_f64()
                    ),
                    Vec::new(),
                    meta,
                )
            })
    }

    /// Counts `result` of a call of `tool` through `door` and queues its execution-log entry
    /// (unless another replica answered it: that one wrote the entry). Results that come from
    /// neither step of the path — an answer to a question no longer waiting — go here too.
    pub fn record(
        &self,
        door: &Door,
        tool: &toolsmith_core::Tool,
        result: &ToolResult,
        arguments: &Value,
    ) {
        self.metrics.call(tool, result, &door.label);
        self.runs
            .record_call(tool, result, arguments, &door.log_name);
    }
}

/// Writes a `cancelled` entry for a call whose future was dropped before it ended.
struct Unfinished<'a> {
    admitted: &'a Admitted,
    arguments: &'a Value,
    started: Instant,
    armed: bool,
}

impl Drop for Unfinished<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let Admitted { state, door, tool } = self.admitted;
        let mut meta = tool.meta(Vec::new());
        meta.duration_ms = Some(self.started.elapsed().as_secs_f64() * 1000.0);
        let result = ToolResult::err(
            ErrorKind::Cancelled,
            "the client went away before the call ended; its processes were killed",
            Vec::new(),
            meta,
        );
        state.metrics.call(&tool.tool, &result, &door.label);
        state.runs.record(RunRecord::of_tool(
            &tool.tool,
            &result,
            self.arguments,
            &door.log_name,
        ));
    }
}
