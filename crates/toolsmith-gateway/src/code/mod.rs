//! Code mode's `run_code`: a program (Python) run in the warm runtime under the kernel sandbox
//! — a script tool of the gateway's own, `run_code` ([`runner.py`](runner.py) reads the
//! program from its arguments): read-only files but its scratch folder, no network, limits on
//! CPU, memory, processes, time and output — whose tool calls come back here as messages on
//! its stdout ([`toolsmith_exec::talk`]) and go through the gateway's one call path as the
//! program's caller: the caller's view (a tool outside it answers exactly as a missing one),
//! the argument pipeline (repairs; invalid arguments raise with every problem), confirmation
//! (a dangerous tool runs only when the caller agreed to it by name for this program or the
//! user says yes when asked — through the door's asker, when it has one — else it raises
//! `needs_confirmation` and nothing ran), rate limits, metrics and the run log (each
//! inner call recorded under the caller, the program's own run too). The program imports its
//! tools as typed functions (`from tools.github import search_issues`); each function's stub
//! is generated when first used ([`toolsmith_core::render::python_function`]).

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::Serialize;
use serde_json::{Map, Value, json};
use toolsmith_core::render::{python_function, python_module_of};
use toolsmith_core::{CompiledTool, ErrorKind, Tool, ToolResult};
use toolsmith_exec::CallOptions;
use toolsmith_exec::talk::Talk;
use toolsmith_exec::upstream::Elicitor;
use tracing::Instrument;

use crate::call::Door;
use crate::view::View;
use crate::{Gateway, GatewayError};

/// The runner's source; `OUTPUT_CAP` is set from [`CodeLimits::output_chars`].
const RUNNER: &str = include_str!("runner.py");
/// The name the program's own run has in the run log and metrics.
pub const RUN_CODE: &str = "run_code";

/// What a program may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CodeLimits {
    /// Wall time, in milliseconds.
    pub timeout_ms: u64,
    /// Address space, in bytes.
    pub memory_bytes: u64,
    /// CPU time, in seconds.
    pub cpu_seconds: u64,
    /// Processes at once (the runner's own included).
    pub processes: u64,
    /// Characters of its printed output kept (the rest cut, with a note).
    pub output_chars: usize,
}

impl Default for CodeLimits {
    fn default() -> Self {
        Self {
            timeout_ms: 60_000,
            memory_bytes: 1024 * 1024 * 1024,
            cpu_seconds: 30,
            processes: 16,
            output_chars: 64 * 1024,
        }
    }
}

/// One program to run, as its caller sends it.
#[derive(Clone, Default)]
pub struct CodeRequest {
    pub code: String,
    /// Dangerous tools the user agreed the program may call (by served name).
    pub confirmed: BTreeSet<String>,
    /// Every dangerous tool may run (the server's operator agreed for everyone:
    /// `--allow-dangerous`).
    pub confirm_all: bool,
    /// The caller may see and use every caller's sessions.
    pub admin: bool,
    /// Who asks the user to confirm a dangerous tool the program calls (an
    /// `elicitation/create`'s params in, its answer out); none: such a call is refused.
    pub ask: Option<Elicitor>,
}

/// The question that asks the user to run dangerous `tool` with `arguments`: an
/// `elicitation/create`'s params (a form with one boolean, `confirm`).
pub fn confirmation_question(tool: &Tool, arguments: &Value) -> Value {
    let message = format!(
        "Run the dangerous tool `{}` ({}) with these arguments?\n{}",
        tool.name,
        tool.description,
        serde_json::to_string_pretty(arguments).unwrap_or_default()
    );
    json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": {"confirm": {"type": "boolean", "title": "Run it", "default": false}},
            "required": ["confirm"]
        }
    })
}

/// Whether an answer to [`confirmation_question`] says yes.
pub fn confirmed_by(answer: &Value) -> bool {
    answer["action"] == "accept" && answer["content"]["confirm"] == true
}

/// One tool call the program made.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct InnerCall {
    pub tool: String,
    /// `ok`, or the error's kind.
    pub outcome: String,
    pub duration_ms: f64,
    /// The call's id in the run log (when it ran).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}

/// A program's run: its own result (`data`: `{"output", "cut", "value", "error"}` when it ran
/// to its end; an error of kind `timeout`, `exit_status`… when the sandbox stopped it) and
/// its tool calls in the order they were made.
#[derive(Debug, Clone, Serialize)]
pub struct CodeRun {
    pub result: ToolResult,
    pub calls: Vec<InnerCall>,
}

/// The `run_code` tool's definition: a warm Python script, sandboxed and limited.
fn definition(limits: &CodeLimits) -> Value {
    let source = RUNNER.replacen(
        "OUTPUT_CAP = 65536",
        &format!("OUTPUT_CAP = {}", limits.output_chars),
        1,
    );
    json!({
        "name": RUN_CODE,
        "description": "Runs a Python program that calls tools (code mode).",
        "script": {"interpreter": "python3", "source": source, "warm": true},
        "parameters": [{"name": "code", "type": "string", "description": "The program."}],
        "danger": "safe",
        "timeout_ms": limits.timeout_ms,
        "limits": {
            "memory_bytes": limits.memory_bytes,
            "cpu_seconds": limits.cpu_seconds,
            "processes": limits.processes,
            "output_bytes": limits.output_chars * 4 + 65_536,
        },
        "sandbox": {"preset": "read-only", "network": "none"},
    })
}

impl Gateway {
    /// The `run_code` tool under `limits` (compiled once per limits, never taken from the
    /// registry's cache: a registry tool of the same name is another tool).
    pub fn code_tool(&self, limits: &CodeLimits) -> Result<Arc<CompiledTool>, GatewayError> {
        if let Some(tool) = self
            .code_tools
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(limits)
        {
            return Ok(tool.clone());
        }
        let tool = toolsmith_store::definition_to_tool(&definition(limits))?;
        let tool = CompiledTool::new(tool, 1)
            .map(Arc::new)
            .map_err(|e| GatewayError::Compile(RUN_CODE.to_owned(), e))?;
        let mut kept = self.code_tools.lock().unwrap_or_else(|e| e.into_inner());
        // (Requests may each ask for another time: the cache starts again when full.)
        if kept.len() >= 64 {
            kept.clear();
        }
        kept.insert(*limits, tool.clone());
        Ok(tool)
    }

    /// Runs `request`'s program for the caller at `door` seeing `view` (see the module's docs).
    pub async fn run_code(
        self: &Arc<Self>,
        door: Door,
        view: Arc<View>,
        request: CodeRequest,
        limits: &CodeLimits,
    ) -> Result<CodeRun, GatewayError> {
        let tool = self.code_tool(limits)?;
        let (talk, mut ends) = Talk::new();
        // The program's call id, decided now: its calls name it in the run log.
        let program = toolsmith_exec::session::random_hex(8);
        let mut options = CallOptions::new(door.log_name.clone(), false);
        options.admin = request.admin;
        options.talk = Some(Arc::new(talk));
        options.call_id = Some(program.clone());
        let inner = Inner {
            gateway: self.clone(),
            door: door.clone(),
            view,
            confirmed: request.confirmed,
            confirm_all: request.confirm_all,
            admin: request.admin,
            ask: request.ask,
            program,
            namespace: tokio::sync::OnceCell::new(),
            calls: Mutex::new(Vec::new()),
        };
        let inner = Arc::new(inner);
        // One span for the program (SPEC §15): its own run and each call it makes under it.
        let span = tracing::info_span!(
            target: toolsmith_exec::trace::TARGET,
            "run_code",
            call_id = %inner.program,
            caller = %door.log_name,
        );
        let run = self
            .call(door, &tool, json!({"code": request.code}), options)
            .instrument(span.clone());
        tokio::pin!(run);
        let mut answering = tokio::task::JoinSet::new();
        let result = loop {
            tokio::select! {
                result = &mut run => break result,
                Some(message) = ends.messages.recv() => {
                    let (inner, replies) = (inner.clone(), ends.replies.clone());
                    answering.spawn(async move {
                        let reply = inner.answer(&message).await;
                        let _ = replies.send(reply.to_string().into_bytes());
                    }.instrument(span.clone()));
                }
            }
        };
        // The program is over: what it left asking is dropped with it.
        answering.abort_all();
        let calls = inner
            .calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        Ok(CodeRun { result, calls })
    }
}

/// What answers one program's messages.
struct Inner {
    gateway: Arc<Gateway>,
    door: Door,
    view: Arc<View>,
    confirmed: BTreeSet<String>,
    confirm_all: bool,
    admin: bool,
    ask: Option<Elicitor>,
    /// The program's call id, which its calls name as their parent in the run log.
    program: String,
    /// The enabled tools by module and function (the gateway's, kept per registry
    /// generation), read once per program; narrowed to the view where they are looked up.
    namespace: tokio::sync::OnceCell<Arc<Namespace>>,
    calls: Mutex<Vec<InnerCall>>,
}

impl Inner {
    /// The answer to one message (`{"op": "call" | "module" | "stub", "id", …}`).
    async fn answer(&self, message: &[u8]) -> Value {
        let Ok(message) = serde_json::from_slice::<Value>(message) else {
            return json!({"id": null, "error": {"kind": "internal", "message": "a message that is not JSON"}});
        };
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        let text = |key: &str| message.get(key).and_then(Value::as_str).unwrap_or_default();
        let mut answer = match text("op") {
            "call" => {
                let arguments = message.get("arguments").cloned().unwrap_or(json!({}));
                self.call(text("tool"), arguments).await
            }
            "module" => {
                let functions = message.get("functions").and_then(Value::as_bool);
                self.module(text("module"), functions.unwrap_or(false))
                    .await
            }
            "stub" => self.stub(text("module"), text("name")).await,
            other => failure("internal", format!("unknown message {other:?}")),
        };
        answer["id"] = id;
        answer
    }

    /// The enabled tools by module and function (read once per program).
    async fn namespace(&self) -> &Namespace {
        self.namespace
            .get_or_init(|| async {
                self.gateway
                    .code_namespace()
                    .await
                    .unwrap_or_else(|_| Arc::new(Namespace::new(Vec::new())))
            })
            .await
    }

    /// Whether module `tools.<prefix>` (`tools` for `""`, always there) has a tool of the
    /// view; with `functions`, its functions' names too (what `dir()` and `import *` ask
    /// for: an import alone does not list them).
    async fn module(&self, prefix: &str, functions: bool) -> Value {
        let namespace = self.namespace().await;
        if !prefix.is_empty() && !namespace.has_module(&self.view, prefix) {
            return failure(
                "not_found",
                format!("no module tools.{prefix} among the tools you may use"),
            );
        }
        match functions {
            true => json!({ "functions": namespace.functions(&self.view, prefix) }),
            false => json!({}),
        }
    }

    /// The stub of function `name` of module `tools.<prefix>` (`<tool>_async` is its tool's
    /// stub too: it defines both forms).
    async fn stub(&self, prefix: &str, name: &str) -> Value {
        let namespace = self.namespace().await;
        let found = namespace.find(&self.view, prefix, name).or_else(|| {
            name.strip_suffix("_async")
                .and_then(|base| namespace.find(&self.view, prefix, base))
        });
        match found {
            Some(tool) => json!({ "source": python_function(tool) }),
            None => failure(
                "not_found",
                format!(
                    "no tool {name} in {} among the tools you may use",
                    module_name(prefix)
                ),
            ),
        }
    }

    /// A tool call through the call path, as the program's caller.
    async fn call(&self, name: &str, arguments: Value) -> Value {
        let started = Instant::now();
        let found = match self.gateway.tool_to_call(name, None).await {
            Ok(tool) if self.view.admits(&tool.tool) => Some(tool),
            _ => None,
        };
        let Some(tool) = found else {
            // Outside the view answers as missing.
            self.note(name, "not_found", started, None);
            return failure("not_found", format!("no tool {name:?}"));
        };
        let mut confirmed = self.confirm_all || self.confirmed.contains(name);
        // A dangerous tool not agreed to up front: the user is asked, when someone can ask.
        if !confirmed
            && tool.tool.is_dangerous()
            && let Some(ask) = &self.ask
        {
            let answer = (ask.0)(confirmation_question(&tool.tool, &arguments)).await;
            confirmed = answer.as_ref().is_ok_and(confirmed_by);
        }
        let mut options = CallOptions::new(self.door.log_name.clone(), confirmed);
        options.parent_call_id = Some(self.program.clone());
        options.admin = self.admin;
        let result = self
            .gateway
            .call(self.door.clone(), &tool, arguments, options)
            .await;
        let outcome = match &result.error {
            None => "ok".to_owned(),
            Some(e) => kind_name(e.kind),
        };
        self.note(name, &outcome, started, result.meta.call_id.clone());
        match &result.error {
            None => json!({ "ok": value_of(&tool, &result) }),
            Some(e) => {
                let mut message = e.message.clone();
                if e.kind == ErrorKind::NeedsConfirmation {
                    message.push_str(
                        "; it was not run: the program may call it only when the user confirms it for this program",
                    );
                }
                json!({"error": {"kind": kind_name(e.kind), "message": message, "problems": e.details}})
            }
        }
    }

    fn note(&self, tool: &str, outcome: &str, started: Instant, call_id: Option<String>) {
        self.calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(InnerCall {
                tool: tool.to_owned(),
                outcome: outcome.to_owned(),
                duration_ms: started.elapsed().as_secs_f64() * 1000.0,
                call_id,
            });
    }
}

/// The enabled tools at one registry generation by code mode's names: module (a server
/// prefix, `""` for `tools`) and function ([`python_module_of`]), each name's tools in the
/// registry's order (two served names may make the same identifier: the first the view
/// admits is the one a program gets).
pub struct Namespace {
    tools: Vec<Tool>,
    /// Module → its functions in order of first appearance, each with its tools' indexes.
    modules: HashMap<String, Functions>,
}

#[derive(Default)]
struct Functions {
    order: Vec<String>,
    tools: HashMap<String, Vec<usize>>,
}

impl Namespace {
    pub fn new(tools: Vec<Tool>) -> Self {
        let mut modules: HashMap<String, Functions> = HashMap::new();
        for (i, tool) in tools.iter().enumerate() {
            let (module, function) = python_module_of(tool.name.as_str());
            let functions = modules.entry(module).or_default();
            let at = functions.tools.entry(function.clone()).or_default();
            if at.is_empty() {
                functions.order.push(function);
            }
            at.push(i);
        }
        Self { tools, modules }
    }

    /// The tool `view` admits named `function` in `module`.
    fn find(&self, view: &View, module: &str, function: &str) -> Option<&Tool> {
        let at = self.modules.get(module)?.tools.get(function)?;
        at.iter().map(|&i| &self.tools[i]).find(|t| view.admits(t))
    }

    /// Whether `module` has a tool `view` admits.
    fn has_module(&self, view: &View, module: &str) -> bool {
        self.modules.get(module).is_some_and(|functions| {
            functions
                .tools
                .values()
                .flatten()
                .any(|&i| view.admits(&self.tools[i]))
        })
    }

    /// The names of `module`'s functions with a tool `view` admits, in the registry's order.
    fn functions(&self, view: &View, module: &str) -> Vec<&str> {
        let Some(functions) = self.modules.get(module) else {
            return Vec::new();
        };
        functions
            .order
            .iter()
            .filter(|name| {
                functions.tools[name.as_str()]
                    .iter()
                    .any(|&i| view.admits(&self.tools[i]))
            })
            .map(String::as_str)
            .collect()
    }
}

fn module_name(prefix: &str) -> String {
    match prefix {
        "" => "tools".to_owned(),
        p => format!("tools.{p}"),
    }
}

fn failure(kind: &str, message: String) -> Value {
    json!({"error": {"kind": kind, "message": message}})
}

fn kind_name(kind: ErrorKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| "error".to_owned())
}

/// A result as the program gets it: a local tool's data as it is; an upstream tool's
/// `structuredContent`, else its text (one text block: a `str`), images and blobs as
/// `{"type", "mimeType", "size"}`.
pub fn value_of(tool: &CompiledTool, result: &ToolResult) -> Value {
    let data = result.data.clone().unwrap_or(Value::Null);
    if tool.tool.executor.upstream().is_none() {
        return data;
    }
    if let Some(structured) = data.get("structuredContent").filter(|v| !v.is_null()) {
        return structured.clone();
    }
    let blocks: Vec<Value> = data
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(block_value)
        .collect();
    match blocks.as_slice() {
        [] => Value::Null,
        [one] => one.clone(),
        _ if blocks.iter().all(Value::is_string) => Value::String(
            blocks
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        _ => Value::Array(blocks),
    }
}

fn block_value(block: &Value) -> Value {
    let kind = block
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if kind == "text" {
        return block.get("text").cloned().unwrap_or(Value::Null);
    }
    let mut out = Map::new();
    out.insert("type".into(), Value::from(kind));
    let inner = block.get("resource").unwrap_or(block);
    for key in ["mimeType", "uri", "name"] {
        if let Some(v) = inner.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    if let Some(text) = inner.get("text") {
        out.insert("text".into(), text.clone());
    }
    if let Some(data) = inner
        .get("data")
        .or_else(|| inner.get("blob"))
        .and_then(Value::as_str)
    {
        // Base64: three bytes for every four characters, less the padding.
        let padding = data.bytes().rev().take_while(|&b| b == b'=').count();
        out.insert(
            "size".into(),
            Value::from(data.len() / 4 * 3 - padding.min(2)),
        );
    }
    Value::Object(out)
}
