//! The agent loop: performs the effects the state machine asks for — a model request, a
//! classification, a question to the user, a tool run — and feeds what happened back as
//! events, until the turn ends.
//!
//! A call the model makes goes through the same argument pipeline as every other front door
//! (sloppy arguments repaired, the repairs shown); a dangerous one is shown to the user with
//! the exact command it would run (the dry-run plan) before they are asked. Ctrl-C (the
//! `interrupt` notifier) stops a stream where it is, or kills a running tool; the machine then
//! answers every open call.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use toolsmith_core::agent::history::{ToolCall, answered};
use toolsmith_core::agent::machine::{Effect, Event, Machine, State};
use toolsmith_core::agent::stream::{Delta, Usage};
use toolsmith_core::render::{RenderOptions, Rendered, find_by_exported_name, render};
use toolsmith_core::{CompiledTool, ErrorKind, ToolResult, plan};
use toolsmith_gateway::call::Door;
use toolsmith_gateway::{CallOptions, Gateway};

use crate::provider::{Listener, Provider};
use crate::transcript::Transcript;

/// When tools run without asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approval {
    /// Safe tools run; dangerous ones ask.
    Ask,
    /// Everything runs without asking.
    Auto,
    /// Safe tools run; dangerous ones are declined.
    Never,
    /// Only tools annotated `read_only` run; the rest are declined.
    ReadOnly,
}

impl Approval {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "ask" => Some(Self::Ask),
            "auto" => Some(Self::Auto),
            "never" => Some(Self::Never),
            "read-only" => Some(Self::ReadOnly),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ask => "ask",
            Self::Auto => "auto",
            Self::Never => "never",
            Self::ReadOnly => "read-only",
        }
    }
}

/// The user's answer to "run this?".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Yes,
    /// Yes, and for this tool the rest of the session.
    Always,
    /// No, with an optional reason for the model; the turn goes on.
    No(Option<String>),
    /// No, and stop the turn.
    Stop,
}

/// What the person (or a program, with `--json`) sees, and how they answer.
/// A call over its tool's rate limit is tried again after the wait this many times at most,
/// and only when the wait is at most [`RATE_WAIT_MAX`].
const RATE_WAITS: u32 = 5;
const RATE_WAIT_MAX: Duration = Duration::from_secs(60);

pub trait Ui: Send {
    fn delta(&mut self, delta: &Delta);
    /// Every effect as it is performed (transitions, notices, saved items).
    fn effect(&mut self, effect: &Effect);
    /// A call about to be handled: the arguments after the pipeline, its coercions, and the
    /// plan (`argv`, `stdin`, `env`) when it is a valid call.
    fn call(&mut self, call: &ToolCall, plan: &ToolResult);
    /// Asks whether the dangerous `call` may run (blocking is fine).
    fn ask(&mut self, call: &ToolCall, plan: &ToolResult) -> Answer;
    /// Asks whether the program `call` runs (code mode) may run a dangerous tool: `question`
    /// names it and its arguments (blocking is fine; `Always` counts as yes, `Stop` as no).
    fn ask_program(&mut self, call: &ToolCall, question: &str) -> Answer;
    /// What was decided for a call that needed approval, and by whom.
    fn decision(&mut self, call: &ToolCall, decision: &str);
    fn result(&mut self, call: &ToolCall, result: &ToolResult);
    fn usage(&mut self, usage: &Usage);
    fn retrying(&mut self, why: &str, wait: Duration);
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The model answered: its last text.
    Answered(String),
    /// The user stopped the turn, or it hit the turn limit.
    Stopped(String),
    Interrupted,
    Failed(String),
}

/// The tools the model may call, compiled, with their rendering for the provider.
pub struct Tools {
    pub compiled: Vec<Arc<CompiledTool>>,
    pub rendered: Value,
    format: toolsmith_core::Format,
}

impl Tools {
    /// The gateway's tools (`compiled`: enabled, in the caller's view) for a provider using
    /// `format`.
    pub fn new(compiled: Vec<Arc<CompiledTool>>, format: toolsmith_core::Format) -> Self {
        let tools: Vec<_> = compiled.iter().map(|c| c.tool.clone()).collect();
        let rendered = match render(&tools, format, RenderOptions::default()) {
            Rendered::Json(v) => v,
            Rendered::Xml(_) => Value::Array(Vec::new()),
        };
        Self {
            compiled,
            rendered,
            format,
        }
    }

    /// The tool a call names (by the name the provider saw).
    pub fn find(&self, name: &str) -> Option<Arc<CompiledTool>> {
        self.compiled
            .iter()
            .find(|c| c.tool.name.as_str() == name)
            .or_else(|| {
                self.compiled.iter().find(|c| {
                    find_by_exported_name(std::slice::from_ref(&c.tool), self.format, name)
                        .is_some()
                })
            })
            .cloned()
    }
}

/// A boxed future that can move between threads.
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// Code mode's two tools, answered by the door that offers them (`chat --code-mode`): the
/// model is offered `search_tools` and `run_code` instead of the tools themselves.
pub trait CodeMode: Send + Sync {
    /// `search_tools` with the model's arguments: the matches as Python functions.
    fn search(&self, arguments: Value) -> BoxFuture<'_, ToolResult>;
    /// `run_code` with the model's arguments; `confirmed`: dangerous tools may run in it
    /// without asking; else `ask`, when given, asks the user about each one (its question in
    /// words; true: run it).
    fn run(
        &self,
        arguments: Value,
        confirmed: bool,
        ask: Option<Asker>,
    ) -> BoxFuture<'_, ToolResult>;
}

/// Asks the user a yes/no question on behalf of a running program (code mode's dangerous
/// inner calls): the question's text, answered true for yes.
pub type Asker = Arc<dyn Fn(String) -> BoxFuture<'static, bool> + Send + Sync>;

/// Code mode's searching tool.
pub const CODE_SEARCH: &str = "search_tools";
/// Code mode's program-running tool.
pub const CODE_RUN: &str = "run_code";

/// An agent: the machine, the model, the tools, the gateway its calls go through, the user.
pub struct Agent {
    pub machine: Machine,
    pub provider: Provider,
    pub tools: Tools,
    /// Every call takes the gateway's one call path (door `chat`): counted and logged like
    /// any other door's.
    pub gateway: Arc<Gateway>,
    pub approval: Approval,
    pub system: Option<String>,
    pub ui: Box<dyn Ui>,
    pub transcript: Option<Transcript>,
    /// Raised on Ctrl-C: the stream or the tool in progress stops.
    pub interrupt: Arc<Interrupt>,
    /// Code mode: `search_tools` and `run_code` are answered here (the tools offered are
    /// those two).
    pub code: Option<Arc<dyn CodeMode>>,
}

/// Ctrl-C, as the loop sees it: raised by a signal handler, waited for by whatever is in
/// progress, cleared at the start of each turn (so a Ctrl-C between turns is not carried
/// into the next one).
#[derive(Debug, Default)]
pub struct Interrupt {
    raised: std::sync::atomic::AtomicBool,
    notify: tokio::sync::Notify,
}

impl Interrupt {
    pub fn raise(&self) {
        self.raised.store(true, std::sync::atomic::Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    pub fn clear(&self) {
        self.raised
            .store(false, std::sync::atomic::Ordering::SeqCst);
    }

    pub fn is_raised(&self) -> bool {
        self.raised.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Resolves once raised (at once if it already is).
    pub async fn wait(&self) {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_raised() {
                return;
            }
            notified.await;
        }
    }
}

struct Relay<'a> {
    ui: &'a mut dyn Ui,
    text: &'a mut String,
}

impl Listener for Relay<'_> {
    fn delta(&mut self, d: &Delta) {
        if let Delta::Text(t) = d {
            self.text.push_str(t);
        }
        self.ui.delta(d);
    }
    fn retrying(&mut self, why: &str, wait: Duration) {
        self.ui.retrying(why, wait);
    }
}

/// What the model is told a call did: the result without the bookkeeping of `meta`, except
/// the coercions (so it learns to send the right types), cut to a size it can take.
pub fn for_the_model(result: &ToolResult) -> String {
    let mut v = json!({"success": result.success});
    if let Some(d) = &result.data {
        v["data"] = without_binary(d.clone());
    }
    if let Some(e) = &result.error {
        v["error"] = serde_json::to_value(e).unwrap_or(Value::Null);
    }
    if !result.meta.coerced.is_empty() {
        v["coerced"] = json!(result.meta.coerced);
    }
    let mut text = v.to_string();
    const MOST: usize = 100_000;
    if text.len() > MOST {
        let mut cut = MOST;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("… [cut: the result was longer than 100 000 bytes]");
    }
    text
}

/// An upstream MCP tool's content blocks with their base64 payloads (images, audio, blob
/// resources) replaced by their type and size: a model reading text gains nothing from them
/// but a flooded context.
fn without_binary(mut data: Value) -> Value {
    let Some(blocks) = data.get_mut("content").and_then(Value::as_array_mut) else {
        return data;
    };
    for block in blocks {
        let holder = match block.get("type").and_then(Value::as_str) {
            Some("image" | "audio") => Some(&mut *block),
            Some("resource") => block.get_mut("resource"),
            _ => None,
        };
        let Some(Value::Object(m)) = holder else {
            continue;
        };
        for key in ["data", "blob"] {
            if let Some(Value::String(b64)) = m.remove(key) {
                m.insert(
                    "omitted".into(),
                    json!(format!("{} bytes of base64 {key}, not shown", b64.len())),
                );
            }
        }
    }
    data
}

impl Agent {
    /// Runs one user turn to its end: model answers, tool calls, questions, until the model
    /// answers without calling anything (or the turn stops).
    pub async fn turn(&mut self, text: String) -> Outcome {
        if self.machine.state == State::Error {
            self.apply(Event::Reset);
        }
        self.interrupt.clear();
        let mut queue: VecDeque<Effect> = VecDeque::new();
        let first = self.step(Event::UserMessage(text));
        queue.extend(first);
        let mut outcome = None;
        while let Some(effect) = queue.pop_front() {
            // Ctrl-C between two steps stops the turn at the next one.
            if self.interrupt.is_raised()
                && matches!(
                    effect,
                    Effect::Request | Effect::Run { .. } | Effect::Classify(_)
                )
                && matches!(
                    self.machine.state,
                    State::Streaming | State::ToolExecuting | State::AwaitingConfirmation
                )
            {
                queue.clear();
                queue.extend(self.step(Event::Interrupted {
                    partial: String::new(),
                }));
                outcome = Some(Outcome::Interrupted);
                continue;
            }
            let event = match effect {
                Effect::Request => Some(self.request().await),
                Effect::Classify(call) => Some(self.classify(&call)),
                Effect::Ask(call) => Some(self.ask(&call)),
                Effect::Run { call, confirmed } => Some(self.run(&call, confirmed).await),
                Effect::Notice(ref n) => {
                    if n == "interrupted" {
                        outcome = Some(Outcome::Interrupted);
                    } else if self.machine.state == State::Idle {
                        outcome.get_or_insert(Outcome::Stopped(n.clone()));
                    }
                    None
                }
                _ => None,
            };
            if let Some(event) = event {
                if let Event::Error(m) = &event {
                    outcome = Some(Outcome::Failed(m.clone()));
                }
                queue.extend(self.step(event));
            }
        }
        outcome.unwrap_or_else(|| {
            let last = self.machine.history.iter().rev().find_map(|i| match i {
                toolsmith_core::agent::Item::Assistant { text, .. } => Some(text.clone()),
                _ => None,
            });
            Outcome::Answered(last.unwrap_or_default())
        })
    }

    /// Applies an event and reports its effects (transitions, saved items) to the user
    /// interface and the transcript; returns the effects still to perform.
    fn step(&mut self, event: Event) -> Vec<Effect> {
        match self.machine.step(event) {
            Ok(effects) => {
                let mut todo = Vec::new();
                for e in effects {
                    if let Effect::Save(item) = &e
                        && let Some(t) = &mut self.transcript
                        && let Err(err) = t.append(item)
                    {
                        self.ui.effect(&Effect::Notice(format!(
                            "the transcript could not be written: {err}"
                        )));
                    }
                    self.ui.effect(&e);
                    if matches!(
                        e,
                        Effect::Request
                            | Effect::Classify(_)
                            | Effect::Ask(_)
                            | Effect::Run { .. }
                            | Effect::Notice(_)
                    ) {
                        todo.push(e);
                    }
                }
                todo
            }
            Err(refused) => {
                // The driver only sends events the machine expects; say so if not.
                self.ui
                    .effect(&Effect::Notice(format!("internal: {refused}")));
                Vec::new()
            }
        }
    }

    fn apply(&mut self, event: Event) {
        let _ = self.step(event);
    }

    async fn request(&mut self) -> Event {
        if let Err(e) = answered(&self.machine.history) {
            return Event::Error(format!("internal: the conversation is not whole ({e})"));
        }
        let mut text = String::new();
        let interrupt = self.interrupt.clone();
        let answer = {
            let mut relay = Relay {
                ui: self.ui.as_mut(),
                text: &mut text,
            };
            let fut = self.provider.answer(
                self.system.as_deref(),
                &self.machine.history,
                &self.tools.rendered,
                &mut relay,
            );
            // The model's answer, a span of the turn's trace (SPEC §15).
            let fut = tracing::Instrument::instrument(
                fut,
                tracing::info_span!(target: toolsmith_gateway::trace::TARGET, "model"),
            );
            tokio::select! {
                r = fut => Some(r),
                () = interrupt.wait() => None,
            }
        };
        match answer {
            None => Event::Interrupted { partial: text },
            Some(Ok(r)) => {
                if let Some(u) = &r.usage {
                    self.ui.usage(u);
                }
                Event::Response {
                    text: r.text,
                    calls: r.calls,
                }
            }
            Some(Err(e)) => Event::Error(e.to_string()),
        }
    }

    /// The call's dry run: the arguments after the pipeline, and what would run.
    fn plan_of(&self, call: &ToolCall) -> Option<(Arc<CompiledTool>, ToolResult)> {
        let tool = self.tools.find(&call.name)?;
        let plan = plan::dry_run(&tool, Value::String(call.arguments.clone()));
        Some((tool, plan))
    }

    fn classify(&mut self, call: &ToolCall) -> Event {
        let Some((tool, plan)) = self.plan_of(call) else {
            // Unknown: it "runs" and answers unknown_tool.
            return Event::Safe;
        };
        self.ui.call(call, &plan);
        // A call with bad arguments runs nothing (the engine refuses it before asking), so
        // nobody is asked about it.
        if !plan.success {
            return Event::Safe;
        }
        let t = &tool.tool;
        let read_only = t.annotations.read_only == Some(true);
        match self.approval {
            Approval::Ask | Approval::Never | Approval::Auto if !t.is_dangerous() => Event::Safe,
            Approval::ReadOnly if read_only && !t.is_dangerous() => Event::Safe,
            _ => Event::Dangerous,
        }
    }

    fn ask(&mut self, call: &ToolCall) -> Event {
        let plan = self.plan_of(call).map(|(_, p)| p).unwrap_or_else(|| {
            ToolResult::err(
                ErrorKind::UnknownTool,
                "unknown tool",
                Vec::new(),
                Default::default(),
            )
        });
        let (event, decision) = match self.approval {
            Approval::Auto => (
                Event::Confirmed { always: false },
                "approved (--approval auto)".to_string(),
            ),
            Approval::Never => (
                Event::Declined {
                    reason: Some(
                        "dangerous tools are declined in this session (--approval never)".into(),
                    ),
                },
                "declined (--approval never)".to_string(),
            ),
            Approval::ReadOnly => (
                Event::Declined {
                    reason: Some(
                        "only read-only tools run in this session (--approval read-only)".into(),
                    ),
                },
                "declined (--approval read-only)".to_string(),
            ),
            Approval::Ask => {
                let ui = &mut self.ui;
                let answer = tokio::task::block_in_place(|| ui.ask(call, &plan));
                match answer {
                    Answer::Yes => (
                        Event::Confirmed { always: false },
                        "approved by the user".into(),
                    ),
                    Answer::Always => (
                        Event::Confirmed { always: true },
                        format!(
                            "approved by the user for `{}` for the rest of the session",
                            call.name
                        ),
                    ),
                    Answer::No(reason) => {
                        let d = match &reason {
                            Some(r) => format!("declined by the user: {r}"),
                            None => "declined by the user".into(),
                        };
                        (Event::Declined { reason }, d)
                    }
                    Answer::Stop => (
                        Event::Rejected,
                        "declined by the user, who stopped the turn".into(),
                    ),
                }
            }
        };
        self.ui.decision(call, &decision);
        event
    }

    async fn run(&mut self, call: &ToolCall, confirmed: bool) -> Event {
        // (A code-mode tool is safe itself; what its program calls is confirmed as said.)
        if let Some(code) = self.code.clone()
            && matches!(call.name.as_str(), CODE_SEARCH | CODE_RUN)
        {
            let arguments = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
            // Dangerous tools inside a program: all run under `auto`; under `ask` the user is
            // asked about each as the program reaches it (the program waits); under `never`
            // and `read-only` none runs.
            let (questions, mut asked) = tokio::sync::mpsc::unbounded_channel::<(
                String,
                tokio::sync::oneshot::Sender<bool>,
            )>();
            let ask: Option<Asker> = (self.approval == Approval::Ask).then(|| {
                Arc::new(move |question: String| {
                    let questions = questions.clone();
                    Box::pin(async move {
                        let (reply, answer) = tokio::sync::oneshot::channel();
                        questions.send((question, reply)).is_ok() && answer.await.unwrap_or(false)
                    }) as BoxFuture<'static, bool>
                }) as Asker
            });
            let mut fut = match call.name.as_str() {
                CODE_SEARCH => code.search(arguments),
                _ => code.run(arguments, self.approval == Approval::Auto, ask),
            };
            let interrupt = self.interrupt.clone();
            let result = loop {
                tokio::select! {
                    r = &mut fut => break r,
                    Some((question, reply)) = asked.recv() => {
                        let answer = self.ui.ask_program(call, &question);
                        let _ = reply.send(matches!(answer, Answer::Yes | Answer::Always));
                    }
                    () = interrupt.wait() => return Event::Interrupted { partial: String::new() },
                }
            };
            self.ui.result(call, &result);
            return Event::ToolCompleted {
                content: for_the_model(&result),
                is_error: !result.success,
            };
        }
        let Some(tool) = self.tools.find(&call.name) else {
            let known: Vec<String> = self
                .tools
                .compiled
                .iter()
                .map(|c| c.tool.name.to_string())
                .collect();
            let result = ToolResult::err(
                ErrorKind::UnknownTool,
                format!(
                    "there is no tool named {:?}; the tools are: {}",
                    call.name,
                    known.join(", ")
                ),
                Vec::new(),
                Default::default(),
            );
            self.ui.result(call, &result);
            return Event::ToolCompleted {
                content: for_the_model(&result),
                is_error: true,
            };
        };
        let interrupt = self.interrupt.clone();
        let mut waited = 0;
        let result = loop {
            let door = Door {
                label: "chat".into(),
                caller: None,
                log_name: "chat".into(),
            };
            let fut = self.gateway.call(
                door,
                &tool,
                Value::String(call.arguments.clone()),
                CallOptions::new("chat", confirmed),
            );
            let result = tokio::select! {
                r = fut => r,
                // Dropping the call kills its processes.
                () = interrupt.wait() => return Event::Interrupted { partial: String::new() },
            };
            // Over the tool's rate limit: wait (saying so) and call again, a few times.
            let wait = result
                .error
                .as_ref()
                .filter(|e| e.kind == ErrorKind::RateLimited)
                .and(result.meta.retry_after_ms)
                .map(Duration::from_millis)
                .filter(|w| *w <= RATE_WAIT_MAX && waited < RATE_WAITS);
            let Some(wait) = wait else { break result };
            waited += 1;
            self.ui
                .retrying(&format!("`{}` is over its rate limit", call.name), wait);
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = interrupt.wait() => return Event::Interrupted { partial: String::new() },
            }
        };
        self.ui.result(call, &result);
        Event::ToolCompleted {
            content: for_the_model(&result),
            is_error: !result.success,
        }
    }
}

#[cfg(test)]
mod tests {
    use toolsmith_core::result::Meta;

    use super::*;

    #[test]
    fn an_upstream_image_reaches_the_model_as_its_type_and_size() {
        let image = "iVBORw0KGgo".repeat(1000);
        let data = json!({"content": [
            {"type": "text", "text": "here it is"},
            {"type": "image", "mimeType": "image/png", "data": image},
            {"type": "resource", "resource": {"uri": "file:///a.gz", "blob": "AAAA"}}
        ]});
        let text = for_the_model(&ToolResult::ok(data, Meta::default()));
        assert!(!text.contains("iVBORw0KGgo"), "{text}");
        assert!(
            text.contains("here it is") && text.contains("image/png"),
            "{text}"
        );
        assert!(
            text.contains("11000 bytes of base64 data, not shown"),
            "{text}"
        );
        assert!(
            text.contains("4 bytes of base64 blob, not shown") && text.contains("file:///a.gz"),
            "{text}"
        );
    }
}
