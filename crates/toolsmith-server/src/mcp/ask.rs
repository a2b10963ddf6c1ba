//! An upstream's questions (elicitation, and sampling for a client that can sample) for an
//! MCP client on the 2026-07-28 protocol, where a server does not ask during a call: the call is parked — it keeps running, its upstream waiting for the
//! answer — and the client gets "input required" with the question; the answer comes with the
//! call sent again (its `requestState` names the parked call), and the call goes on to its
//! result or to its next question.
//!
//! Parked calls live in this process: a call sent again to another replica answers that the
//! question is gone, and one left unanswered for [`KEEP`] is dropped (which cancels it
//! upstream). The names are 128 random bits, so one client cannot answer another's question.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{InputRequest, InputRequiredResult};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use toolsmith_core::ToolResult;
use toolsmith_gateway::upstream::{BoxFuture, Elicitor};

/// How long a question waits for its answer.
pub const KEEP: Duration = Duration::from_secs(600);
/// What a parked call's `requestState` starts with.
pub const STATE_PREFIX: &str = "toolsmith-asked:";
/// The key of the upstream's question among the input requests.
pub const QUESTION_KEY: &str = "upstream_question";

/// What a call does next.
enum Step {
    /// Its upstream asks (`method`: `elicitation/create`, `sampling/createMessage`); the
    /// answer goes to `reply`.
    Ask {
        method: &'static str,
        params: Value,
        reply: oneshot::Sender<Value>,
    },
    Done(Box<ToolResult>),
}

/// A call waiting for an answer.
struct Parked {
    reply: oneshot::Sender<Value>,
    steps: mpsc::UnboundedReceiver<Step>,
    _call: AbortOnDrop,
}

/// Ends the call's task when the parked call is dropped (answered elsewhere never, expired).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Who a parked call's upstream asks: the client's user and the client's model, each
/// question turned into "input required".
pub struct Askers {
    pub elicit: Elicitor,
    pub sample: Elicitor,
}

/// The end of a step: the call's result, or a question for the client.
pub enum Next {
    Done(Box<ToolResult>),
    Ask(InputRequiredResult),
}

/// The parked calls of one server.
#[derive(Clone, Default)]
pub struct Parking(Arc<Mutex<HashMap<String, Parked>>>);

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Why a parked call's question got no answer.
#[derive(Debug, thiserror::Error)]
enum Unasked {
    #[error("the call is over")]
    CallOver,
    #[error("the question was not answered")]
    NoAnswer,
}

impl Parking {
    /// Runs `call` — given the elicitor that brings its questions here — until its result or
    /// its first question.
    pub async fn start<F>(&self, call: impl FnOnce(Askers) -> F) -> Next
    where
        F: Future<Output = ToolResult> + Send + 'static,
    {
        let (tx, steps) = mpsc::unbounded_channel();
        let asker = |method: &'static str| {
            let asker = tx.clone();
            Elicitor(Arc::new(move |params: Value| -> BoxFuture<_> {
                let asker = asker.clone();
                Box::pin(async move {
                    let (reply, answer) = oneshot::channel();
                    asker
                        .send(Step::Ask {
                            method,
                            params,
                            reply,
                        })
                        .map_err(|_| Unasked::CallOver)?;
                    Ok(answer.await.map_err(|_| Unasked::NoAnswer)?)
                })
            }))
        };
        let askers = Askers {
            elicit: asker("elicitation/create"),
            sample: asker("sampling/createMessage"),
        };
        let running = call(askers);
        let task = tokio::spawn(async move {
            let result = running.await;
            let _ = tx.send(Step::Done(Box::new(result)));
        });
        self.next(steps, AbortOnDrop(task)).await
    }

    /// Whether `state` names a call of this server's kind (parked here or not).
    pub fn names_a_question(state: Option<&str>) -> bool {
        state.is_some_and(|s| s.starts_with(STATE_PREFIX))
    }

    /// Gives the parked call named `state` its `answer` and runs it to its result or next
    /// question; `None` when no such call is parked here.
    pub async fn resume(&self, state: &str, answer: Value) -> Option<Next> {
        let parked = lock(&self.0).remove(state)?;
        let _ = parked.reply.send(answer);
        Some(self.next(parked.steps, parked._call).await)
    }

    async fn next(&self, mut steps: mpsc::UnboundedReceiver<Step>, call: AbortOnDrop) -> Next {
        match steps.recv().await {
            Some(Step::Done(result)) => Next::Done(result),
            Some(Step::Ask {
                method,
                params,
                reply,
            }) => {
                let state = format!("{STATE_PREFIX}{}", toolsmith_gateway::random_hex(16));
                let ask = json!({"method": method, "params": params});
                let Ok(request) = serde_json::from_value::<InputRequest>(ask) else {
                    // A question this server cannot pass on is declined.
                    let _ = reply.send(json!({"action": "decline"}));
                    return Box::pin(self.next(steps, call)).await;
                };
                lock(&self.0).insert(
                    state.clone(),
                    Parked {
                        reply,
                        steps,
                        _call: call,
                    },
                );
                let parked = self.0.clone();
                let key = state.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(KEEP).await;
                    lock(&parked).remove(&key);
                });
                let mut asked = InputRequiredResult::from_input_requests(
                    [(QUESTION_KEY.to_owned(), request)].into_iter().collect(),
                );
                asked.request_state = Some(state);
                Next::Ask(asked)
            }
            None => Next::Done(Box::new(ToolResult::err(
                toolsmith_core::result::ErrorKind::Internal,
                "the call ended without a result",
                Vec::new(),
                toolsmith_core::result::Meta::default(),
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use toolsmith_core::result::Meta;

    use super::*;

    fn question(next: Next) -> InputRequiredResult {
        match next {
            Next::Ask(asked) => asked,
            Next::Done(r) => panic!("finished early: {r:?}"),
        }
    }

    #[tokio::test]
    async fn a_call_asks_twice_and_finishes_with_both_answers() {
        let parking = Parking::default();
        let next = parking
            .start(|askers| async move {
                let ask = askers.elicit;
                let a = (ask.0)(json!({"mode": "form", "message": "first?", "requestedSchema": {"type": "object", "properties": {}}})).await;
                let b = (ask.0)(json!({"mode": "form", "message": "second?", "requestedSchema": {"type": "object", "properties": {}}})).await;
                ToolResult::ok(json!([a.ok(), b.ok()]), Meta::default())
            })
            .await;
        let first = question(next);
        let state = first.request_state.clone().expect("state");
        assert!(state.starts_with(STATE_PREFIX) && state.len() > STATE_PREFIX.len() + 30);
        let asked = serde_json::to_value(&first).expect("json");
        assert_eq!(
            asked["inputRequests"][QUESTION_KEY]["params"]["message"], "first?",
            "{asked}"
        );
        // A made-up state answers nothing.
        assert!(
            parking
                .resume("toolsmith-asked:0000", json!({}))
                .await
                .is_none()
        );
        let second = question(
            parking
                .resume(&state, json!({"action": "accept", "content": {"n": 1}}))
                .await
                .expect("parked"),
        );
        let state2 = second.request_state.clone().expect("state");
        assert_ne!(state, state2);
        // The first state was used up.
        assert!(parking.resume(&state, json!({})).await.is_none());
        match parking.resume(&state2, json!({"action": "decline"})).await {
            Some(Next::Done(r)) => assert_eq!(
                r.data,
                Some(json!([{"action": "accept", "content": {"n": 1}}, {"action": "decline"}]))
            ),
            _ => panic!("no result"),
        }
    }
}
