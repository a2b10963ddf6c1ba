//! The model, over HTTP: OpenAI-compatible Chat Completions (`POST {base}/chat/completions`:
//! OpenAI, vLLM, llama.cpp, Ollama's `/v1`, OpenRouter…) and Anthropic Messages
//! (`POST {base}/v1/messages`), always streamed.
//!
//! Rate limits and server errors (429, 5xx) and failed connections are retried with
//! exponential backoff, honouring `Retry-After`; any other refusal (401, 403, 404, 400) is an
//! error quoting the provider's own message. A stream that goes quiet for `idle_timeout` is an
//! error. The API key is sent in a header and never kept anywhere else.

use std::time::Duration;

use serde_json::{Value, json};
use toolsmith_core::agent::history::{Item, anthropic_messages, openai_messages};
use toolsmith_core::agent::sse::Decoder;
use toolsmith_core::agent::stream::{self, Assembler, Delta, Response, StreamError};

/// Which wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    OpenAi,
    Anthropic,
}

impl Kind {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "openai" => Some(Kind::OpenAi),
            "anthropic" => Some(Kind::Anthropic),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::OpenAi => "openai",
            Kind::Anthropic => "anthropic",
        }
    }

    /// The format toolsmith renders tools in for this provider.
    pub fn format(self) -> toolsmith_core::Format {
        match self {
            Kind::OpenAi => toolsmith_core::Format::Openai,
            Kind::Anthropic => toolsmith_core::Format::Anthropic,
        }
    }

    pub fn default_base_url(self) -> &'static str {
        match self {
            Kind::OpenAi => "https://api.openai.com/v1",
            Kind::Anthropic => "https://api.anthropic.com",
        }
    }

    pub fn default_key_env(self) -> &'static str {
        match self {
            Kind::OpenAi => "OPENAI_API_KEY",
            Kind::Anthropic => "ANTHROPIC_API_KEY",
        }
    }

    pub fn default_model(self) -> &'static str {
        match self {
            Kind::OpenAi => "gpt-4o-mini",
            Kind::Anthropic => "claude-sonnet-4-5",
        }
    }
}

/// Why the model could not answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProviderError {
    /// The provider refused the request: its status and its own message.
    Refused { status: u16, message: String },
    /// No answer after the retries: the last reason.
    Unavailable(String),
    /// The stream broke or made no sense.
    Stream(String),
}

impl std::fmt::Display for ProviderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProviderError::Refused { status, message } => {
                let hint = match status {
                    401 | 403 => {
                        " — check the API key (--api-key-env names the variable holding it)"
                    }
                    404 => " — check --base-url and --model",
                    _ => "",
                };
                write!(
                    f,
                    "the provider refused the request (HTTP {status}): {message}{hint}"
                )
            }
            ProviderError::Unavailable(m) => write!(f, "the provider did not answer: {m}"),
            ProviderError::Stream(m) => f.write_str(m),
        }
    }
}

/// A model endpoint.
#[derive(Debug, Clone)]
pub struct Provider {
    pub kind: Kind,
    pub base_url: String,
    pub model: String,
    api_key: Option<String>,
    http: reqwest::Client,
    /// Attempts after the first for 429/5xx/connection failures.
    pub retries: u32,
    /// The first backoff; it doubles each time (at most 8 s), unless `Retry-After` says.
    pub backoff: Duration,
    /// A stream silent this long is given up.
    pub idle_timeout: Duration,
    /// Anthropic's `max_tokens`.
    pub max_tokens: u32,
}

/// What the caller hears while an answer streams.
pub trait Listener {
    fn delta(&mut self, delta: &Delta);
    /// A retry is coming after `wait` because of `why`.
    fn retrying(&mut self, why: &str, wait: Duration);
}

impl Provider {
    pub fn new(
        kind: Kind,
        base_url: &str,
        model: &str,
        api_key: Option<String>,
    ) -> Result<Self, ProviderError> {
        // reqwest is built without a crypto provider of its own: ring, installed once.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .user_agent(concat!("toolsmith/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| {
                ProviderError::Unavailable(format!("the HTTP client could not start: {e}"))
            })?;
        Ok(Self {
            kind,
            base_url: base_url.trim_end_matches('/').to_owned(),
            model: model.to_owned(),
            api_key,
            http,
            retries: 4,
            backoff: Duration::from_millis(500),
            idle_timeout: Duration::from_secs(120),
            max_tokens: 4096,
        })
    }

    fn url(&self) -> String {
        match self.kind {
            Kind::OpenAi => format!("{}/chat/completions", self.base_url),
            Kind::Anthropic => format!("{}/v1/messages", self.base_url),
        }
    }

    /// The request body for this conversation and these tools (already in the provider's
    /// format).
    pub fn body(&self, system: Option<&str>, history: &[Item], tools: &Value) -> Value {
        let has_tools = tools.as_array().is_some_and(|t| !t.is_empty());
        match self.kind {
            Kind::OpenAi => {
                let mut b = json!({
                    "model": self.model,
                    "messages": openai_messages(system, history),
                    "stream": true,
                    "stream_options": {"include_usage": true},
                });
                if has_tools {
                    b["tools"] = tools.clone();
                }
                b
            }
            Kind::Anthropic => {
                let mut b = json!({
                    "model": self.model,
                    "max_tokens": self.max_tokens,
                    "messages": anthropic_messages(history),
                    "stream": true,
                });
                if let Some(s) = system {
                    b["system"] = json!(s);
                }
                if has_tools {
                    b["tools"] = tools.clone();
                }
                b
            }
        }
    }

    /// Streams the model's answer to `history`, telling `listener` each piece of text.
    /// Every message of the provider's that reaches the caller — a refusal, a retry's reason,
    /// a broken stream — has the API key replaced by `***` first: providers quote a wrong key
    /// back ("Incorrect API key provided: sk-…").
    pub async fn answer(
        &self,
        system: Option<&str>,
        history: &[Item],
        tools: &Value,
        listener: &mut dyn Listener,
    ) -> Result<Response, ProviderError> {
        let mut scrubbing = Scrubbing {
            inner: listener,
            key: self.api_key.as_deref(),
        };
        self.answer_raw(system, history, tools, &mut scrubbing)
            .await
            .map_err(|e| match e {
                ProviderError::Refused { status, message } => ProviderError::Refused {
                    status,
                    message: redact_key(&message, self.api_key.as_deref()),
                },
                ProviderError::Unavailable(m) => {
                    ProviderError::Unavailable(redact_key(&m, self.api_key.as_deref()))
                }
                ProviderError::Stream(m) => {
                    ProviderError::Stream(redact_key(&m, self.api_key.as_deref()))
                }
            })
    }

    async fn answer_raw(
        &self,
        system: Option<&str>,
        history: &[Item],
        tools: &Value,
        listener: &mut dyn Listener,
    ) -> Result<Response, ProviderError> {
        let body = self.body(system, history, tools);
        let mut attempt = 0;
        let response = loop {
            let mut req = self
                .http
                .post(self.url())
                .header("content-type", "application/json")
                .header("accept", "text/event-stream")
                .body(body.to_string());
            if let Some(key) = &self.api_key {
                req = match self.kind {
                    Kind::OpenAi => req.header("authorization", format!("Bearer {key}")),
                    Kind::Anthropic => req.header("x-api-key", key),
                };
            }
            if self.kind == Kind::Anthropic {
                req = req.header("anthropic-version", "2023-06-01");
            }
            let failure = match req.send().await {
                Ok(r) if r.status().is_success() => break r,
                Ok(r) => {
                    let status = r.status().as_u16();
                    let retry_after = r
                        .headers()
                        .get("retry-after")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.trim().parse::<f64>().ok())
                        .map(|s| Duration::from_secs_f64(s.clamp(0.0, 60.0)));
                    let message = provider_message(&r.text().await.unwrap_or_default());
                    if status == 429 || status >= 500 {
                        (format!("HTTP {status}: {message}"), retry_after)
                    } else {
                        return Err(ProviderError::Refused { status, message });
                    }
                }
                Err(e) => (plain_error(&e), None),
            };
            if attempt >= self.retries {
                return Err(ProviderError::Unavailable(failure.0));
            }
            let wait = failure
                .1
                .unwrap_or_else(|| (self.backoff * 2u32.pow(attempt)).min(Duration::from_secs(8)));
            listener.retrying(&failure.0, wait);
            tokio::time::sleep(wait).await;
            attempt += 1;
        };
        self.read(response, listener).await
    }

    async fn read(
        &self,
        mut response: reqwest::Response,
        listener: &mut dyn Listener,
    ) -> Result<Response, ProviderError> {
        let mut assembler: Box<dyn Assembler + Send> = match self.kind {
            Kind::OpenAi => Box::new(stream::OpenAi::default()),
            Kind::Anthropic => Box::new(stream::Anthropic::default()),
        };
        let mut decoder = Decoder::new();
        let fail = |e: StreamError| ProviderError::Stream(e.to_string());
        loop {
            let chunk = tokio::time::timeout(self.idle_timeout, response.chunk())
                .await
                .map_err(|_| {
                    ProviderError::Stream(format!(
                        "the provider's stream was silent for {} s",
                        self.idle_timeout.as_secs()
                    ))
                })?
                .map_err(|e| {
                    ProviderError::Stream(format!("the stream broke: {}", plain_error(&e)))
                })?;
            let events = match &chunk {
                Some(bytes) => decoder.push(bytes),
                None => decoder.finish(),
            };
            for event in events {
                for d in assembler.event(&event).map_err(fail)? {
                    listener.delta(&d);
                }
            }
            if chunk.is_none() || assembler.done() {
                // A stream may end without `[DONE]`: what arrived is the answer.
                return Ok(assembler.response());
            }
        }
    }
}

/// `text` with `key` (and so `Bearer <key>`) replaced by `***`. Keys shorter than 4
/// characters are left alone: they would blank ordinary words, and no provider issues them.
pub fn redact_key(text: &str, key: Option<&str>) -> String {
    match key {
        Some(k) => toolsmith_core::secrets::scrub(text, &[k.to_owned()]),
        None => text.to_owned(),
    }
}

/// A listener whose retry reasons are told without the key.
struct Scrubbing<'a> {
    inner: &'a mut dyn Listener,
    key: Option<&'a str>,
}

impl Listener for Scrubbing<'_> {
    fn delta(&mut self, delta: &Delta) {
        self.inner.delta(delta);
    }
    fn retrying(&mut self, why: &str, wait: Duration) {
        self.inner.retrying(&redact_key(why, self.key), wait);
    }
}

/// The provider's own words from an error body (`{"error": {"message"}}`), else the text.
fn provider_message(body: &str) -> String {
    let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let m = v["error"]["message"]
        .as_str()
        .or_else(|| v["error"].as_str())
        .or_else(|| v["message"].as_str());
    match m {
        Some(m) => m.to_owned(),
        None => {
            let t: String = body.trim().chars().take(300).collect();
            if t.is_empty() {
                "(no message)".into()
            } else {
                t
            }
        }
    }
}

/// A reqwest error without its URL's query or credentials.
fn plain_error(e: &reqwest::Error) -> String {
    let mut text = if e.is_timeout() {
        "timed out".to_string()
    } else if e.is_connect() {
        "could not connect".to_string()
    } else {
        "request failed".to_string()
    };
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(&format!(": {s}"));
        source = s.source();
    }
    text
}
