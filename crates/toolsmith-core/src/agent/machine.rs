//! The agent's state machine (seed 004): five states driven by events, one declarative
//! transition table ([`TABLE`]) as the single source of truth, and a pure reducer
//! ([`Machine::step`]) that returns effects for a driver to perform.
//!
//! The table is the seed's, plus four events the best agents need: `interrupted` (Ctrl-C),
//! `turn_limit_reached`, `user_declined` ("no, and go on": the seed's `user_rejected` ends the
//! turn) and the internal bookkeeping stays out of the table. Whatever the path, **every tool
//! call the model made gets exactly one result before the next model request**: a declined,
//! stopped, interrupted or failed call is answered with a result saying so, because an
//! unanswered call makes the next request fail at every provider.

use std::collections::VecDeque;

use super::history::{Item, ToolCall, answered};

/// Where the agent is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum State {
    Idle,
    Streaming,
    AwaitingConfirmation,
    ToolExecuting,
    Error,
}

/// What can happen; each event is one row key of [`TABLE`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventKind {
    UserMessage,
    SafeToolDetected,
    DangerousToolDetected,
    UserConfirmed,
    UserRejected,
    UserDeclined,
    ToolCompleted,
    StreamingComplete,
    ErrorOccurred,
    Reset,
    Interrupted,
    TurnLimitReached,
}

impl State {
    pub const ALL: [State; 5] = [
        State::Idle,
        State::Streaming,
        State::AwaitingConfirmation,
        State::ToolExecuting,
        State::Error,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            State::Idle => "idle",
            State::Streaming => "streaming",
            State::AwaitingConfirmation => "awaiting_confirmation",
            State::ToolExecuting => "tool_executing",
            State::Error => "error",
        }
    }
}

impl EventKind {
    pub const ALL: [EventKind; 12] = [
        EventKind::UserMessage,
        EventKind::SafeToolDetected,
        EventKind::DangerousToolDetected,
        EventKind::UserConfirmed,
        EventKind::UserRejected,
        EventKind::UserDeclined,
        EventKind::ToolCompleted,
        EventKind::StreamingComplete,
        EventKind::ErrorOccurred,
        EventKind::Reset,
        EventKind::Interrupted,
        EventKind::TurnLimitReached,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::UserMessage => "user_message",
            EventKind::SafeToolDetected => "safe_tool_detected",
            EventKind::DangerousToolDetected => "dangerous_tool_detected",
            EventKind::UserConfirmed => "user_confirmed",
            EventKind::UserRejected => "user_rejected",
            EventKind::UserDeclined => "user_declined",
            EventKind::ToolCompleted => "tool_completed",
            EventKind::StreamingComplete => "streaming_complete",
            EventKind::ErrorOccurred => "error_occurred",
            EventKind::Reset => "reset",
            EventKind::Interrupted => "interrupted",
            EventKind::TurnLimitReached => "turn_limit_reached",
        }
    }
}

use EventKind as E;
use State as S;

/// The transition table: (from, event, to). Anything not here is refused.
pub const TABLE: &[(State, EventKind, State)] = &[
    // The seed's table.
    (S::Idle, E::UserMessage, S::Streaming),
    (S::Streaming, E::SafeToolDetected, S::ToolExecuting),
    (
        S::Streaming,
        E::DangerousToolDetected,
        S::AwaitingConfirmation,
    ),
    (S::Streaming, E::StreamingComplete, S::Idle),
    (S::AwaitingConfirmation, E::UserConfirmed, S::ToolExecuting),
    (S::AwaitingConfirmation, E::UserRejected, S::Idle),
    (S::ToolExecuting, E::ToolCompleted, S::Streaming),
    (S::Idle, E::ErrorOccurred, S::Error),
    (S::Streaming, E::ErrorOccurred, S::Error),
    (S::AwaitingConfirmation, E::ErrorOccurred, S::Error),
    (S::ToolExecuting, E::ErrorOccurred, S::Error),
    (S::Error, E::Reset, S::Idle),
    // Added: decline one call and go on; Ctrl-C; the turn limit.
    (S::AwaitingConfirmation, E::UserDeclined, S::Streaming),
    (S::Streaming, E::Interrupted, S::Idle),
    (S::AwaitingConfirmation, E::Interrupted, S::Idle),
    (S::ToolExecuting, E::Interrupted, S::Idle),
    (S::Streaming, E::TurnLimitReached, S::Idle),
];

/// The table's answer for `(state, event)`: the next state, or `None` for a refused event.
pub fn next(state: State, event: EventKind) -> Option<State> {
    TABLE
        .iter()
        .find(|(from, e, _)| *from == state && *e == event)
        .map(|(_, _, to)| *to)
}

/// The table as Markdown, for documentation (ARCHITECTURE.md prints it).
pub fn table_markdown() -> String {
    let mut out = String::from("| from | event | to |\n|---|---|---|\n");
    for (from, e, to) in TABLE {
        out.push_str(&format!(
            "| `{}` | `{}` | `{}` |\n",
            from.as_str(),
            e.as_str(),
            to.as_str()
        ));
    }
    out
}

/// What the driver tells the machine.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The user's message: a new turn.
    UserMessage(String),
    /// The model's response ended: its text and the tool calls it made, in order.
    Response {
        text: String,
        calls: Vec<ToolCall>,
    },
    /// The call being classified may run at once (safe, allowed, or unknown to the catalog).
    Safe,
    /// The call being classified needs the user's approval.
    Dangerous,
    /// The user approved the call; `always`: this tool for the rest of the session.
    Confirmed {
        always: bool,
    },
    /// The user declined the call (with an optional reason for the model); the turn goes on.
    Declined {
        reason: Option<String>,
    },
    /// The user declined and stopped the turn: every call left is declined too.
    Rejected,
    /// The running call finished: its result as the model will see it.
    ToolCompleted {
        content: String,
        is_error: bool,
    },
    /// Something failed (the provider, the network): the message.
    Error(String),
    Reset,
    /// Ctrl-C: `partial` is the text streamed so far (when the model was answering).
    Interrupted {
        partial: String,
    },
}

impl Event {
    fn kind(&self, calls_pending: bool) -> EventKind {
        match self {
            Event::UserMessage(_) => E::UserMessage,
            // A response with calls leads to their classification; without, the turn ends.
            Event::Response { calls, .. } if !calls.is_empty() || calls_pending => {
                E::SafeToolDetected
            }
            Event::Response { .. } => E::StreamingComplete,
            Event::Safe => E::SafeToolDetected,
            Event::Dangerous => E::DangerousToolDetected,
            Event::Confirmed { .. } => E::UserConfirmed,
            Event::Declined { .. } => E::UserDeclined,
            Event::Rejected => E::UserRejected,
            Event::ToolCompleted { .. } => E::ToolCompleted,
            Event::Error(_) => E::ErrorOccurred,
            Event::Reset => E::Reset,
            Event::Interrupted { .. } => E::Interrupted,
        }
    }
}

/// What the driver must do.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Send the history to the model and stream its answer (then `Event::Response`).
    Request,
    /// Decide whether this call may run at once (answer `Safe` or `Dangerous`).
    Classify(ToolCall),
    /// Ask the user about this call (answer `Confirmed`, `Declined` or `Rejected`).
    Ask(ToolCall),
    /// Run this call (answer `ToolCompleted`). `confirmed`: the user approved it.
    Run { call: ToolCall, confirmed: bool },
    /// Append this item to the saved transcript.
    Save(Item),
    /// The state changed (for `--json` and logs).
    Transition {
        from: State,
        event: EventKind,
        to: State,
    },
    /// Tell the user something (a limit reached, a turn stopped).
    Notice(String),
}

/// An event the table refuses in the current state; the machine is unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub state: State,
    pub event: EventKind,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "`{}` is not possible in state `{}`",
            self.event.as_str(),
            self.state.as_str()
        )
    }
}

/// The text a declined call answers with.
pub const DECLINED: &str = "The user declined to run this tool call; it did not run.";
/// The text of calls left unanswered when the user stopped the turn.
pub const STOPPED: &str = "The user stopped this turn before this tool call ran; it did not run.";
/// The text a call answers with when the user pressed Ctrl-C.
pub const INTERRUPTED: &str = "Interrupted by the user; the tool call did not finish.";

/// The agent: its state, the conversation, and the calls of the current response.
#[derive(Debug, Clone)]
pub struct Machine {
    pub state: State,
    pub history: Vec<Item>,
    /// Calls of the last response still to run, in the model's order; the first is current.
    pending: VecDeque<ToolCall>,
    /// Model requests made in this user turn.
    requests: u32,
    /// The most model requests one user turn may make.
    pub max_turns: u32,
    /// Tools the user allowed for the rest of the session.
    pub always: Vec<String>,
}

impl Machine {
    pub fn new(max_turns: u32) -> Self {
        Self {
            state: State::Idle,
            history: Vec::new(),
            pending: VecDeque::new(),
            requests: 0,
            max_turns: max_turns.max(1),
            always: Vec::new(),
        }
    }

    /// A machine continuing a saved conversation (which must answer every call).
    pub fn resume(history: Vec<Item>, max_turns: u32) -> Self {
        Self {
            history,
            ..Self::new(max_turns)
        }
    }

    /// The call waiting for classification, approval or its result.
    pub fn current(&self) -> Option<&ToolCall> {
        self.pending.front()
    }

    /// Applies `event`: the new state and what the driver must do, or `Refused` with nothing
    /// changed.
    pub fn step(&mut self, event: Event) -> Result<Vec<Effect>, Refused> {
        let kind = event.kind(!self.pending.is_empty());
        // Events about a call need one to be waiting.
        let about_a_call = matches!(
            event,
            Event::Safe
                | Event::Dangerous
                | Event::Confirmed { .. }
                | Event::Declined { .. }
                | Event::Rejected
                | Event::ToolCompleted { .. }
        );
        let refused = Refused {
            state: self.state,
            event: kind,
        };
        if about_a_call && self.pending.is_empty() {
            return Err(refused);
        }
        // A response whose calls are not classified yet is still the `streaming` state's:
        // its safe/dangerous row is taken when the driver answers `Safe` or `Dangerous`.
        if matches!(&event, Event::Response { calls, .. } if !calls.is_empty())
            && self.state != State::Streaming
        {
            return Err(refused);
        }
        // A new response while calls of the last one are unanswered would lose them.
        if matches!(event, Event::Response { .. }) && !self.pending.is_empty() {
            return Err(refused);
        }
        let Some(to) = next(self.state, kind) else {
            return Err(Refused {
                state: self.state,
                event: kind,
            });
        };
        let mut fx = Vec::new();
        let from = self.state;
        match event {
            Event::UserMessage(text) => {
                self.requests = 0;
                self.record(Item::User { text }, &mut fx);
                self.go(from, kind, to, &mut fx);
                self.request(&mut fx);
            }
            Event::Response { text, calls } => {
                if calls.is_empty() {
                    self.record(Item::Assistant { text, calls }, &mut fx);
                    self.go(from, kind, to, &mut fx);
                } else {
                    // Stay in `streaming` until the first call is classified.
                    self.pending = calls.iter().cloned().collect();
                    self.record(Item::Assistant { text, calls }, &mut fx);
                    if let Some(c) = self.current() {
                        fx.push(Effect::Classify(c.clone()));
                    }
                }
            }
            Event::Safe => {
                self.go(from, kind, to, &mut fx);
                if let Some(c) = self.current() {
                    fx.push(Effect::Run {
                        call: c.clone(),
                        confirmed: false,
                    });
                }
            }
            Event::Dangerous => {
                let allowed = self
                    .current()
                    .is_some_and(|c| self.always.contains(&c.name));
                if allowed {
                    // Allowed for the session: confirmed without asking again.
                    self.go(from, kind, to, &mut fx);
                    let to2 = next(to, E::UserConfirmed).unwrap_or(to);
                    self.go(to, E::UserConfirmed, to2, &mut fx);
                    if let Some(c) = self.current() {
                        fx.push(Effect::Run {
                            call: c.clone(),
                            confirmed: true,
                        });
                    }
                } else {
                    self.go(from, kind, to, &mut fx);
                    if let Some(c) = self.current() {
                        fx.push(Effect::Ask(c.clone()));
                    }
                }
            }
            Event::Confirmed { always } => {
                if always && let Some(c) = self.current() {
                    let name = c.name.clone();
                    if !self.always.contains(&name) {
                        self.always.push(name);
                    }
                }
                self.go(from, kind, to, &mut fx);
                if let Some(c) = self.current() {
                    fx.push(Effect::Run {
                        call: c.clone(),
                        confirmed: true,
                    });
                }
            }
            Event::Declined { reason } => {
                let text = match reason.as_deref().map(str::trim) {
                    Some(r) if !r.is_empty() => format!("{DECLINED} The user said: {r}"),
                    _ => DECLINED.to_string(),
                };
                self.answer_current(text, true, &mut fx);
                self.go(from, kind, to, &mut fx);
                self.after_call(&mut fx);
            }
            Event::Rejected => {
                self.answer_current(DECLINED.to_string(), true, &mut fx);
                self.answer_rest(STOPPED, &mut fx);
                self.go(from, kind, to, &mut fx);
                fx.push(Effect::Notice(
                    "the turn stopped; say what to do next".into(),
                ));
            }
            Event::ToolCompleted { content, is_error } => {
                self.answer_current(content, is_error, &mut fx);
                self.go(from, kind, to, &mut fx);
                self.after_call(&mut fx);
            }
            Event::Error(message) => {
                // Calls of an answer that cannot go on are answered, so the history stays
                // valid for the next turn.
                self.answer_rest(&format!("Not run: {message}"), &mut fx);
                self.go(from, kind, to, &mut fx);
                fx.push(Effect::Notice(message));
            }
            Event::Reset => self.go(from, kind, to, &mut fx),
            Event::Interrupted { partial } => {
                if from == State::Streaming && self.pending.is_empty() && !partial.is_empty() {
                    self.record(
                        Item::Assistant {
                            text: partial,
                            calls: Vec::new(),
                        },
                        &mut fx,
                    );
                }
                self.answer_rest(INTERRUPTED, &mut fx);
                self.go(from, kind, to, &mut fx);
                fx.push(Effect::Notice("interrupted".into()));
            }
        }
        Ok(fx)
    }

    fn go(&mut self, from: State, event: EventKind, to: State, fx: &mut Vec<Effect>) {
        self.state = to;
        fx.push(Effect::Transition { from, event, to });
    }

    fn record(&mut self, item: Item, fx: &mut Vec<Effect>) {
        fx.push(Effect::Save(item.clone()));
        self.history.push(item);
    }

    /// Answers the current call and moves to the next.
    fn answer_current(&mut self, content: String, is_error: bool, fx: &mut Vec<Effect>) {
        if let Some(c) = self.pending.pop_front() {
            self.record(
                Item::ToolResult {
                    call_id: c.id,
                    name: c.name,
                    content,
                    is_error,
                },
                fx,
            );
        }
    }

    /// Answers every call left with `text`.
    fn answer_rest(&mut self, text: &str, fx: &mut Vec<Effect>) {
        while !self.pending.is_empty() {
            self.answer_current(text.to_string(), true, fx);
        }
    }

    /// After a call: classify the next one, or ask the model again with the results.
    fn after_call(&mut self, fx: &mut Vec<Effect>) {
        match self.current() {
            Some(c) => fx.push(Effect::Classify(c.clone())),
            None => self.request(fx),
        }
    }

    /// The next model request, unless the turn has used its budget.
    fn request(&mut self, fx: &mut Vec<Effect>) {
        debug_assert!(answered(&self.history).is_ok());
        if self.requests >= self.max_turns {
            let from = self.state;
            if let Some(to) = next(from, E::TurnLimitReached) {
                self.go(from, E::TurnLimitReached, to, fx);
            }
            fx.push(Effect::Notice(format!(
                "stopped after {} model requests in this turn (--max-turns); say \"continue\" to go on",
                self.max_turns
            )));
            return;
        }
        self.requests += 1;
        fx.push(Effect::Request);
    }
}
