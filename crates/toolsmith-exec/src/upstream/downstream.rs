//! What a caller offers an upstream tool's call ([`Downstream`]): where the upstream's
//! progress and log messages go, who answers its questions, and — for a caller on the
//! 2026-07-28 protocol that answers "input required" itself — its capabilities and the
//! answers it sends back ([`Resume`]).

use std::sync::Arc;

use serde_json::{Map, Value};
use tokio::sync::mpsc;

use super::Progress;

/// What the caller of an upstream tool offers the upstream: where its progress goes, and
/// who answers its questions during the call. The default offers nothing: questions are
/// declined.
#[derive(Debug, Clone, Default)]
pub struct Downstream {
    pub progress: Option<mpsc::UnboundedSender<Progress>>,
    pub elicit: Option<Elicitor>,
    /// Who answers the upstream's sampling requests during the call (a
    /// `sampling/createMessage`'s params in, a `CreateMessageResult` out); none: they are
    /// refused.
    pub sample: Option<Elicitor>,
    /// Who answers the upstream's `roots/list` during the call (no params in, a
    /// `ListRootsResult` out): the caller's client; none: no roots.
    pub roots: Option<Elicitor>,
    /// Where the upstream's log messages during the call go (each a
    /// `LoggingMessageNotificationParam` as JSON); none: they are not passed on.
    pub log: Option<mpsc::UnboundedSender<Value>>,
    /// The caller answers an upstream's "input required" itself (a client on the 2026-07-28
    /// protocol): the result is handed back as it came (`resultType: input_required`, its
    /// requests and state) instead of being answered here.
    pub relay_inputs: bool,
    /// The caller's answers to such a result, sent with the call: its `inputResponses` and
    /// the upstream's own `requestState`.
    pub resume: Option<Resume>,
    /// The caller's client capabilities (JSON), declared to a 2026-07-28 upstream in the
    /// call's `_meta` in place of toolsmith's, so it asks only what the caller can answer.
    pub client_capabilities: Option<Value>,
    /// Who the call is for, where a server connects each user's own account (`connection:
    /// per_user`): the caller's name (a token's; `jwt:` and a JWT's subject); none: `local`.
    pub subject: Option<String>,
    /// The caller's own JWT, for a server that exchanges it for one of its own
    /// (`connection: exchange`, RFC 8693); none: the caller presented none.
    pub subject_token: Option<SubjectToken>,
}

/// A caller's JWT as it presented it: never shown (its `Debug` is `***`).
#[derive(Clone)]
pub struct SubjectToken(pub Arc<str>);

impl std::fmt::Debug for SubjectToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SubjectToken(***)")
    }
}

/// A relayed call sent again with the caller's answers.
#[derive(Debug, Clone, Default)]
pub struct Resume {
    /// `inputResponses`, by the upstream's keys.
    pub input_responses: Map<String, Value>,
    /// The upstream's `requestState`, as it gave it.
    pub request_state: Option<String>,
}

/// MCP's "missing required client capability" error (2026-07-28, SEP-2575).
pub const MISSING_CLIENT_CAPABILITY: i32 = -32021;
/// Where a failed upstream call's output holds an error that is the client's own (its
/// `code`, `message` and `data` as the upstream gave them).
pub const CLIENT_ERROR: &str = "clientError";

/// Asks a downstream client what an upstream asks during a call (an `elicitation/create` of
/// its user, a `sampling/createMessage` of its model, a `roots/list` of the client): the
/// request's params as JSON in, the answer as JSON out. A call without one has every question declined.
#[derive(Clone)]
pub struct Elicitor(
    pub Arc<dyn Fn(Value) -> BoxFuture<Result<Value, crate::BoxError>> + Send + Sync>,
);

/// A boxed future that can move between threads.
pub type BoxFuture<T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send>>;

impl std::fmt::Debug for Elicitor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Elicitor")
    }
}

impl Elicitor {
    /// Answers each form question with its own defaults, for a caller that cannot be asked
    /// but has said to take them (REST's `"questions": "defaults"`): accepted with every
    /// field's `default` when each required field has one, else declined; a URL-mode
    /// question (a page to visit) is always declined.
    pub fn defaults() -> Self {
        Self(Arc::new(|params: Value| -> BoxFuture<_> {
            Box::pin(async move { Ok(with_defaults(&params)) })
        }))
    }
}

/// The answer [`Elicitor::defaults`] gives to an `elicitation/create`'s `params`.
pub fn with_defaults(params: &Value) -> Value {
    let decline = serde_json::json!({"action": "decline"});
    if params.get("mode").and_then(Value::as_str) == Some("url") {
        return decline;
    }
    let Some(schema) = params.get("requestedSchema") else {
        return decline;
    };
    let content: Map<String, Value> = schema
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(name, field)| Some((name.clone(), field.get("default")?.clone())))
        .collect();
    let required = schema.get("required").and_then(Value::as_array);
    let covered = required
        .into_iter()
        .flatten()
        .all(|r| r.as_str().is_some_and(|r| content.contains_key(r)));
    if !covered {
        return decline;
    }
    serde_json::json!({"action": "accept", "content": content})
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_answer_a_form_only_when_they_cover_what_it_requires() {
        let form = |required: Value| {
            json!({"message": "m", "requestedSchema": {"type": "object", "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "email": {"type": "string"}}, "required": required}})
        };
        assert_eq!(
            with_defaults(&form(json!(["name"]))),
            json!({"action": "accept", "content": {"name": "John Doe", "age": 30}})
        );
        assert_eq!(
            with_defaults(&form(json!(["name", "email"]))),
            json!({"action": "decline"})
        );
        let url = json!({"mode": "url", "message": "m", "url": "https://x", "elicitationId": "e"});
        assert_eq!(with_defaults(&url), json!({"action": "decline"}));
    }
}
