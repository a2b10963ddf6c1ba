//! Upstream MCP servers (SPEC §11): one connection per server per engine, shared by every
//! call, supervised.
//!
//! A stdio upstream is one process born in a cgroup slot and a process group of its own (as a
//! session is), with the engine's rlimits and niceness; its stderr goes to a bounded ring. An
//! HTTP upstream is a Streamable HTTP client. Each has a task ([`supervise`]) that connects
//! (the MCP handshake within [`START_TIMEOUT`]), lists the tools, and then follows the
//! connection: a `list_changed` notification, a refresh asked for, or the periodic re-list
//! lists again; an exit or a broken connection is reported (`failed`, the last error and the
//! stderr tail) and followed by a restart after an exponential backoff (1 s doubling, at most
//! [`BACKOFF_MAX`]). A stdio upstream with an idle timeout is stopped when unused and started
//! again by the next call. What an upstream lists is announced on [`Upstreams::subscribe`]:
//! the registry side decides what of it is served (pinning).
//!
//! A call runs on the shared connection (concurrent calls multiplexed), forwards the
//! upstream's progress to the caller's channel, and — dropped before its answer — sends
//! `notifications/cancelled` upstream. While an upstream is down a call answers at once with
//! its last error. What a server offers besides tools — resources, templates, prompts — is
//! listed with its tools and reached through [`offer`].

mod asks;
mod conn;
mod downstream;
mod exchange;
mod listen;
mod logs;
mod oauth;
mod offer;
mod probe;
mod session_http;
mod supervise;
mod tasks;
mod users;

pub use downstream::{
    BoxFuture, CLIENT_ERROR, Downstream, Elicitor, MISSING_CLIENT_CAPABILITY, Resume, SubjectToken,
};
pub use oauth::{Begun, TokenStore, needs_authorization};
pub use offer::{Offer, ServerOffer};
pub use probe::ProbeError;
pub use tasks::TaskRequest;
pub use users::{LOCAL_SUBJECT, OnBehalf};

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotification, CancelledNotificationParam,
    ClientRequest, ServerResult,
};
use rmcp::service::{PeerRequestOptions, RequestHandle, RoleClient, ServiceError};
use serde_json::{Map, Value};
use tokio::sync::{broadcast, mpsc, watch};
use toolsmith_core::model::Limits;
use toolsmith_core::upstream::McpServer;

use crate::limits::Cgroups;

/// How long a connection may take to start and answer the MCP handshake.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest wait between two restarts of a failing upstream.
pub const BACKOFF_MAX: Duration = Duration::from_secs(60);
/// How often a ready upstream's tools are listed again (besides `list_changed` and refresh).
pub const RELIST_EVERY: Duration = Duration::from_secs(300);
/// Bytes of an upstream's stderr kept.
pub const STDERR_KEPT: usize = 64 * 1024;

/// Where an upstream is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Starting,
    Ready,
    Failed,
    /// Not running: disabled, stopped after its idle time, or the engine is stopping.
    Stopped,
}

/// What the status of one upstream says.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ServerStatus {
    pub name: String,
    /// `stdio` or `http`.
    pub kind: &'static str,
    pub status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    pub restarts: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Tools in its last listing.
    pub tools: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listed_at_ms: Option<u64>,
    /// Since it last became ready.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub up_ms: Option<u64>,
}

/// Something an upstream did that the registry side follows.
#[derive(Debug, Clone)]
pub enum Event {
    /// Its tools, as listed (MCP `Tool` objects), on start, refresh, `list_changed` or the
    /// periodic re-list.
    Listed {
        server: String,
        tools: Vec<Value>,
        /// Its resources, templates and prompts of the same listing.
        offer: Arc<Offer>,
    },
    /// Its status changed.
    Status { server: String },
    /// It said a resource changed (`notifications/resources/updated`), one toolsmith
    /// subscribed to for a client.
    ResourceUpdated { server: String, uri: String },
}

/// Where a 2026-07-28 request opts in to the server's log messages (SEP-2575).
const LOG_LEVEL_META: &str = "io.modelcontextprotocol/logLevel";

/// How many times one call may answer "input required" before it is given up.
const MAX_INPUT_ROUNDS: usize = 8;

/// A progress notification of an upstream call, for the caller.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
}

/// Why an upstream call got no result.
#[derive(Debug, Clone, PartialEq)]
pub enum UpstreamError {
    /// No server of that name here.
    Unknown(String),
    /// The server is down (or stopped): its last error.
    Down(String),
    /// No answer within the timeout (a cancellation was sent).
    Timeout(Duration),
    /// The server answered with a JSON-RPC error.
    Rpc {
        code: i32,
        message: String,
        data: Option<Value>,
    },
    /// The connection broke during the call, or the answer made no sense.
    Failed(String),
    /// An OAuth server toolsmith is not (or not enough) authorized for: how to connect it.
    NeedsAuthorization(String),
}

/// How an engine spawns its upstreams' processes.
#[derive(Debug, Clone)]
pub(crate) struct Spawning {
    pub cgroups: Option<Arc<Cgroups>>,
    pub workspace: PathBuf,
    pub limits: Limits,
    pub niceness: i32,
    pub sandbox: Arc<crate::sandbox::Sandboxes>,
    /// Where OAuth connections' tokens are kept (set once by whoever owns the registry).
    pub tokens: Arc<std::sync::OnceLock<Arc<dyn oauth::TokenStore>>>,
}

/// Every upstream of one engine.
#[derive(Clone)]
pub struct Upstreams {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Upstreams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstreams")
            .field("servers", &lock(&self.inner.servers).len())
            .finish()
    }
}

struct Inner {
    servers: Mutex<BTreeMap<String, Arc<Upstream>>>,
    spawning: Spawning,
    events: broadcast::Sender<Event>,
}

/// One upstream: its definition, its state and its supervising task.
pub(crate) struct Upstream {
    pub def: McpServer,
    pub state: Mutex<State>,
    /// Bumped on every state change, so calls can wait for `ready`.
    pub changed: watch::Sender<u64>,
    pub stderr: Mutex<VecDeque<u8>>,
    pub control: mpsc::UnboundedSender<Control>,
    pub events: broadcast::Sender<Event>,
    pub spawning: Spawning,
    /// Progress channels of calls in flight, by progress token.
    pub progress: conn::ProgressRoutes,
    /// Who answers the upstream's questions for each call in flight, by request id.
    pub elicit: asks::ElicitRoutes,
    /// The calls in flight and where their log messages go.
    pub logs: logs::LogRoutes,
    /// Why the connection was closed by toolsmith, when it was (a message over the size
    /// limit): what the calls it ended are told.
    pub broken: Mutex<Option<String>>,
    /// The resources toolsmith's clients watch here, for a 2026-07-28 upstream (whose
    /// `subscriptions/listen` filter names them: [`listen`]).
    pub watched: Mutex<std::collections::BTreeSet<String>>,
    /// An OAuth server's `WWW-Authenticate` when it refused a request — without a token
    /// (401) or for want of scope (403 `insufficient_scope`): calls answer that it needs
    /// authorization, and the next authorization starts from what it said.
    pub auth_challenge: Arc<Mutex<Option<String>>>,
    /// The users' own connections, where calls go as each caller (`connection: per_user`).
    pub users: users::UserConns,
    /// The tokens exchanged for its callers (`connection: exchange`).
    pub exchanges: exchange::Exchanges,
}

pub(crate) struct State {
    pub status: Status,
    pub pid: Option<u32>,
    pub restarts: u32,
    pub last_error: Option<String>,
    pub tools: Option<Vec<Value>>,
    /// Its resources, templates and prompts as last listed.
    pub offer: Arc<Offer>,
    pub listed_at_ms: Option<u64>,
    pub up_since: Option<Instant>,
    pub peer: Option<rmcp::Peer<RoleClient>>,
    pub last_used: Instant,
}

/// What the supervising task is asked to do.
#[derive(Debug)]
pub(crate) enum Control {
    /// List the tools again.
    Refresh,
    /// Start (a stopped upstream a call needs).
    Start,
    /// Stop for good.
    Stop,
    /// The watched resources changed: open the subscription again with them.
    Rewatch,
    /// A request found the connection's token refused (once a refresh could not help): the
    /// connection ends, saying why.
    Refused(String),
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Upstreams {
    pub(crate) fn new(spawning: Spawning) -> Self {
        Self {
            inner: Arc::new(Inner {
                servers: Mutex::default(),
                spawning,
                events: broadcast::channel(256).0,
            }),
        }
    }

    /// What upstreams do from now on: listings and status changes.
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.inner.events.subscribe()
    }

    /// Makes `servers` the upstreams: new ones start (in the background), removed ones stop
    /// with everything they spawned, changed ones restart.
    pub fn set(&self, servers: Vec<McpServer>) {
        let mut live = lock(&self.inner.servers);
        let wanted: BTreeMap<String, McpServer> =
            servers.into_iter().map(|s| (s.name.clone(), s)).collect();
        live.retain(|name, up| {
            let keep = wanted.get(name).is_some_and(|def| *def == up.def);
            if !keep {
                let _ = up.control.send(Control::Stop);
            }
            keep
        });
        for (name, def) in wanted {
            if live.contains_key(&name) {
                continue;
            }
            let up = supervise::spawn(def, self.inner.spawning.clone(), self.inner.events.clone());
            live.insert(name, up);
        }
    }

    /// The names of the upstreams.
    pub fn names(&self) -> Vec<String> {
        lock(&self.inner.servers).keys().cloned().collect()
    }

    /// The status of every upstream, by name.
    pub fn status(&self) -> Vec<ServerStatus> {
        lock(&self.inner.servers)
            .values()
            .map(|u| u.status())
            .collect()
    }

    /// The status of one.
    pub fn status_of(&self, name: &str) -> Option<ServerStatus> {
        self.get(name).map(|u| u.status())
    }

    /// Its definition as the engine runs it.
    pub fn definition(&self, name: &str) -> Option<McpServer> {
        self.get(name).map(|u| u.def.clone())
    }

    /// Its last listing (MCP `Tool` objects), if it listed.
    pub fn tools_of(&self, name: &str) -> Option<Vec<Value>> {
        self.get(name).and_then(|u| lock(&u.state).tools.clone())
    }

    /// The end of its stderr (secret config values replaced by `***`).
    pub fn log(&self, name: &str) -> Option<String> {
        let up = self.get(name)?;
        let bytes: Vec<u8> = lock(&up.stderr).iter().copied().collect();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        Some(toolsmith_core::secrets::scrub(
            &text,
            &up.def.secret_values(),
        ))
    }

    /// Asks it to list its tools again; the listing arrives as an [`Event::Listed`].
    pub fn refresh(&self, name: &str) -> bool {
        match self.get(name) {
            Some(up) => {
                let _ = up.control.send(match lock(&up.state).status {
                    Status::Stopped => Control::Start,
                    _ => Control::Refresh,
                });
                true
            }
            None => false,
        }
    }

    /// Stops it (with everything it spawned) and starts it afresh, as an operator's restart:
    /// its restart count starts over.
    pub fn restart(&self, name: &str) -> bool {
        let mut live = lock(&self.inner.servers);
        let Some(old) = live.get(name).cloned() else {
            return false;
        };
        let _ = old.control.send(Control::Stop);
        let up = supervise::spawn(
            old.def.clone(),
            self.inner.spawning.clone(),
            self.inner.events.clone(),
        );
        live.insert(name.to_owned(), up);
        true
    }

    /// Stops every upstream and waits (at most `grace`) for their processes to end.
    pub async fn shutdown(&self, grace: Duration) {
        let all: Vec<Arc<Upstream>> = std::mem::take(&mut *lock(&self.inner.servers))
            .into_values()
            .collect();
        for up in &all {
            let _ = up.control.send(Control::Stop);
        }
        let until = tokio::time::Instant::now() + grace;
        for up in &all {
            let mut rx = up.changed.subscribe();
            while lock(&up.state).pid.is_some() && tokio::time::Instant::now() < until {
                let _ = tokio::time::timeout_at(until, rx.changed()).await;
            }
        }
    }

    fn get(&self, name: &str) -> Option<Arc<Upstream>> {
        lock(&self.inner.servers).get(name).cloned()
    }

    /// Calls `tool` of `server` with `arguments`, waiting at most the server's timeout as its
    /// definition says now (the tool's override, else the server's `timeout_ms` — a `PUT`
    /// applies to the next call, whatever the listing the tool came from said); the
    /// upstream's `CallToolResult` as JSON. Progress goes to `progress`; dropping the future
    /// before the answer sends `notifications/cancelled` upstream.
    pub async fn call(
        &self,
        server: &str,
        tool: &str,
        arguments: Map<String, Value>,
        downstream: &Downstream,
    ) -> Result<Value, UpstreamError> {
        let up = self
            .get(server)
            .ok_or_else(|| UpstreamError::Unknown(server.to_owned()))?;
        let timeout = Duration::from_millis(
            up.def
                .tools
                .get(tool)
                .and_then(|o| o.timeout_ms)
                .unwrap_or(up.def.timeout_ms),
        );
        let deadline = tokio::time::Instant::now() + timeout;
        let mut params = CallToolRequestParams::new(tool.to_owned());
        params.arguments = Some(arguments);
        // The caller's trace goes on upstream (SPEC §15).
        if let Some((parent, state)) = crate::trace::current() {
            let meta = params.meta.get_or_insert_with(Default::default);
            meta.insert("traceparent".into(), Value::from(parent));
            if let Some(state) = state {
                meta.insert("tracestate".into(), Value::from(state));
            }
        }
        // A caller that takes log messages opts in to all of them (a 2026-07-28 upstream
        // sends none without; the caller's own level is applied where they reach it).
        if downstream.log.is_some() {
            params
                .meta
                .get_or_insert_with(Default::default)
                .insert(LOG_LEVEL_META.into(), Value::from("debug"));
        }
        if let Some(resume) = &downstream.resume {
            params.input_responses =
                serde_json::from_value(Value::Object(resume.input_responses.clone())).ok();
            params.request_state = resume.request_state.clone();
        }
        // An upstream on the 2026-07-28 protocol asks for input by answering "input
        // required": handed back to a caller that answers it itself, else answered here
        // (asked through `elicit`, or declined) and the call sent again, a few rounds at most.
        for _ in 0..MAX_INPUT_ROUNDS {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match self
                .call_once(&up, params.clone(), left, downstream)
                .await
                .map_err(|e| match e {
                    // Said as the server's timeout, not what was left of it.
                    UpstreamError::Timeout(_) => UpstreamError::Timeout(timeout),
                    e => e,
                })? {
                ServerResult::CallToolResult(result) => {
                    return serde_json::to_value(result)
                        .map_err(|e| UpstreamError::Failed(e.to_string()));
                }
                ServerResult::InputRequiredResult(asked) if downstream.relay_inputs => {
                    return serde_json::to_value(asked)
                        .map_err(|e| UpstreamError::Failed(e.to_string()));
                }
                // A task (the tasks extension, which only a relaying caller can declare):
                // handed back as it came (`resultType: task`), for the caller to follow.
                ServerResult::CreateTaskResult(task) if downstream.relay_inputs => {
                    return serde_json::to_value(task)
                        .map_err(|e| UpstreamError::Failed(e.to_string()));
                }
                ServerResult::InputRequiredResult(asked) => {
                    params.input_responses =
                        Some(asks::answer_inputs(asked.input_requests, downstream).await);
                    params.request_state = asked.request_state;
                }
                other => {
                    return Err(UpstreamError::Failed(format!(
                        "an unexpected answer to tools/call: {}",
                        serde_json::to_string(&other).unwrap_or_default()
                    )));
                }
            }
        }
        Err(UpstreamError::Failed(format!(
            "tool `{tool}` asked for input {MAX_INPUT_ROUNDS} times without finishing"
        )))
    }

    /// One `tools/call` round trip, its progress, questions and log messages routed to
    /// `downstream` while it is in flight.
    async fn call_once(
        &self,
        up: &Arc<Upstream>,
        params: CallToolRequestParams,
        timeout: Duration,
        downstream: &Downstream,
    ) -> Result<ServerResult, UpstreamError> {
        let link = up.link(timeout, users::OnBehalf::of(downstream)).await?;
        let peer = link.peer.clone();
        let in_flight = link.logs.enter(downstream.log.clone());
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = peer
            .send_request_with_option(request, request_options(timeout, downstream))
            .await
            .map_err(|e| up.failure(&link, e))?;
        let route = (downstream.progress.clone())
            .map(|tx| link.progress.add(handle.progress_token.clone(), tx));
        // Registered even when the caller answers nothing, so its questions are declined at
        // once rather than waited for.
        let _asks = link.elicit.add(
            handle.id.clone(),
            asks::Askers::of(downstream).unwrap_or_default(),
        );
        let guard = CancelOnDrop {
            peer: Some(peer.clone()),
            id: handle.id.clone(),
        };
        let answer = await_answer(handle).await;
        guard.disarm();
        if route.is_some() || downstream.log.is_some() {
            // rmcp hands each notification to a task of its own, so the upstream's last
            // progress or log message, sent just before its result, may still be on its way
            // to the routes: a few turns of the scheduler let it through before they close.
            for _ in 0..8 {
                tokio::task::yield_now().await;
            }
        }
        drop((route, in_flight));
        match answer {
            Ok(result) => Ok(result),
            Err(ServiceError::Timeout { timeout }) => Err(UpstreamError::Timeout(timeout)),
            Err(e) => Err(up.failure(&link, e)),
        }
    }
}

/// A call's request options: its timeout, and the caller's client capabilities in place of
/// toolsmith's when it answers the upstream's questions itself.
fn request_options(timeout: Duration, downstream: &Downstream) -> PeerRequestOptions {
    let mut options = PeerRequestOptions::with_timeout(timeout);
    if let Some(Value::Object(caps)) = &downstream.client_capabilities {
        let meta = serde_json::json!({ CLIENT_CAPABILITIES_META: caps });
        options.meta = serde_json::from_value(meta).ok();
    }
    options
}

/// Where a 2026-07-28 request declares its client's capabilities (SEP-2575).
const CLIENT_CAPABILITIES_META: &str = "io.modelcontextprotocol/clientCapabilities";

async fn await_answer(handle: RequestHandle<RoleClient>) -> Result<ServerResult, ServiceError> {
    handle.await_response().await
}

/// Sends `notifications/cancelled` for a request whose caller went away.
struct CancelOnDrop {
    peer: Option<rmcp::Peer<RoleClient>>,
    id: rmcp::model::RequestId,
}

impl CancelOnDrop {
    fn disarm(mut self) {
        self.peer = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(peer) = self.peer.take() else {
            return;
        };
        let id = self.id.clone();
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let notification = CancelledNotification::new(CancelledNotificationParam::new(
                    Some(id),
                    Some("the caller went away".into()),
                ));
                let _ = peer.send_notification(notification.into()).await;
            });
        }
    }
}

impl Upstream {
    pub(crate) fn status(&self) -> ServerStatus {
        let st = lock(&self.state);
        ServerStatus {
            name: self.def.name.clone(),
            kind: self.def.transport.kind(),
            status: st.status,
            pid: st.pid,
            restarts: st.restarts,
            last_error: st
                .last_error
                .as_ref()
                .map(|e| toolsmith_core::secrets::scrub(e, &self.def.secret_values())),
            tools: st.tools.as_ref().map_or(0, Vec::len),
            listed_at_ms: st.listed_at_ms,
            up_ms: st.up_since.map(|t| t.elapsed().as_millis() as u64),
        }
    }

    /// Updates the state and wakes whoever waits on it.
    pub(crate) fn update(&self, f: impl FnOnce(&mut State)) {
        f(&mut lock(&self.state));
        self.changed.send_modify(|n| *n += 1);
        let _ = self.events.send(Event::Status {
            server: self.def.name.clone(),
        });
    }

    /// The connection, once ready: waits while it starts (at most `timeout`, and
    /// [`START_TIMEOUT`]); answers at once while it is down.
    pub(crate) async fn ready_peer(
        &self,
        timeout: Duration,
    ) -> Result<rmcp::Peer<RoleClient>, UpstreamError> {
        let deadline = tokio::time::Instant::now() + timeout.min(START_TIMEOUT);
        let mut rx = self.changed.subscribe();
        let mut asked = false;
        loop {
            {
                let mut st = lock(&self.state);
                st.last_used = Instant::now();
                match (st.status, &st.peer) {
                    (Status::Ready, Some(peer)) => return Ok(peer.clone()),
                    (Status::Failed, _) => {
                        let message = self.down_message(&st);
                        return Err(
                            match st
                                .last_error
                                .as_deref()
                                .is_some_and(|e| e.starts_with(oauth::NEEDS_AUTHORIZATION))
                            {
                                true => UpstreamError::NeedsAuthorization(message),
                                false => UpstreamError::Down(message),
                            },
                        );
                    }
                    (Status::Stopped, _) if !asked => {
                        asked = true;
                        let _ = self.control.send(Control::Start);
                    }
                    _ => {}
                }
            }
            if tokio::time::timeout_at(deadline, rx.changed())
                .await
                .is_err()
            {
                let st = lock(&self.state);
                return Err(UpstreamError::Down(format!(
                    "MCP server `{}` is still {} after {} ms{}",
                    self.def.name,
                    match st.status {
                        Status::Starting => "starting",
                        _ => "not ready",
                    },
                    timeout.min(START_TIMEOUT).as_millis(),
                    self.stderr_tail()
                )));
            }
        }
    }

    /// "MCP server `x` is down: its last error; stderr: …".
    /// Why it cannot answer now; its last error, like its stderr, with secret values `***`
    /// (as `status` shows it): this reaches callers of its tools, resources and prompts.
    fn down_message(&self, st: &State) -> String {
        let why = st.last_error.as_deref().unwrap_or("it is not running");
        format!(
            "MCP server `{}` is down: {}{}",
            self.def.name,
            toolsmith_core::secrets::scrub(why, &self.def.secret_values()),
            self.stderr_tail()
        )
    }

    /// `; stderr ends with: …` (its last 500 bytes), or nothing.
    pub(crate) fn stderr_tail(&self) -> String {
        let bytes: Vec<u8> = {
            let ring = lock(&self.stderr);
            let skip = ring.len().saturating_sub(500);
            ring.iter().skip(skip).copied().collect()
        };
        let text = String::from_utf8_lossy(&bytes);
        let text = text.trim();
        match text.is_empty() {
            true => String::new(),
            false => format!(
                "; its stderr ends with: {}",
                toolsmith_core::secrets::scrub(text, &self.def.secret_values())
            ),
        }
    }
}
