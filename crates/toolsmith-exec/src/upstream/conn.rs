//! One connection to an upstream: a stdio process started in a cgroup slot and a process
//! group of its own, or a Streamable HTTP client; the MCP client handler that routes the
//! upstream's progress to the calls that asked for it and notes its `list_changed`.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use rmcp::ClientHandler;
#[allow(deprecated)] // Sampling is deprecated by 2026-07-28 (SEP-2577), still in use.
use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult, ErrorCode,
    ProgressNotificationParam, ProgressToken, ProtocolVersion,
};
use rmcp::service::RequestContext;
use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use tokio::io::AsyncReadExt;
use tokio::process::{Child, Command};
use tokio::sync::mpsc;
use toolsmith_core::upstream::{McpServer, Protocol, Transport};

use super::asks::{ElicitRoutes, ask};
use super::session_http::SessionAware;
use super::{Progress, Spawning, Upstream, lock};
use crate::limits::{self, CallCgroup};

/// Progress channels of the calls in flight, by progress token.
#[derive(Clone, Default)]
pub(crate) struct ProgressRoutes(
    Arc<Mutex<HashMap<ProgressToken, mpsc::UnboundedSender<Progress>>>>,
);

/// Removes a call's route when dropped.
pub(crate) struct Route {
    routes: ProgressRoutes,
    token: ProgressToken,
}

impl Drop for Route {
    fn drop(&mut self) {
        lock(&self.routes.0).remove(&self.token);
    }
}

impl ProgressRoutes {
    pub(crate) fn add(&self, token: ProgressToken, tx: mpsc::UnboundedSender<Progress>) -> Route {
        lock(&self.0).insert(token.clone(), tx);
        Route {
            routes: self.clone(),
            token,
        }
    }
}

/// The client side toolsmith presents to an upstream.
#[derive(Clone)]
pub(crate) struct Handler {
    /// The server's name, for what is logged here.
    pub server: String,
    pub routes: ProgressRoutes,
    pub elicit: ElicitRoutes,
    pub logs: super::logs::LogRoutes,
    /// Where it is announced that the upstream said a resource changed.
    pub events: tokio::sync::broadcast::Sender<super::Event>,
    /// Told when the upstream says its tools, resources or prompts changed.
    pub list_changed: mpsc::UnboundedSender<()>,
}

impl ClientHandler for Handler {
    fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        if let Some(tx) = lock(&self.routes.0).get(&params.progress_token) {
            let _ = tx.send(Progress {
                progress: params.progress,
                total: params.total,
                message: params.message.clone(),
            });
        }
        std::future::ready(())
    }

    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        let _ = self.list_changed.send(());
        std::future::ready(())
    }

    #[allow(deprecated)] // Logging is deprecated by 2026-07-28 (SEP-2577), still in use.
    fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        if let Ok(message) = serde_json::to_value(&params) {
            self.logs.deliver(&self.server, message);
        }
        std::future::ready(())
    }

    fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        let _ = self.events.send(super::Event::ResourceUpdated {
            server: self.server.clone(),
            uri: params.uri,
        });
        std::future::ready(())
    }

    fn on_resource_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        let _ = self.list_changed.send(());
        std::future::ready(())
    }

    fn on_prompt_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        let _ = self.list_changed.send(());
        std::future::ready(())
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let elicit = self.elicit.of(&context).await.and_then(|a| a.elicit);
        let params = serde_json::to_value(&request).unwrap_or_default();
        Ok(ask(elicit.as_ref(), params).await)
    }

    /// Passed on to the model of the call's caller when it can sample; refused otherwise.
    #[allow(deprecated)] // Sampling is deprecated by 2026-07-28 (SEP-2577), still in use.
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, rmcp::ErrorData> {
        let sample = self.elicit.of(&context).await.and_then(|a| a.sample);
        let refused = |why: String| rmcp::ErrorData::new(ErrorCode::INVALID_REQUEST, why, None);
        let Some(sample) = sample else {
            return Err(refused(
                "the caller of this tool cannot answer sampling requests (its client did not declare sampling)".into(),
            ));
        };
        let answer = (sample.0)(serde_json::to_value(&params).unwrap_or_default())
            .await
            .map_err(|e| refused(format!("the caller's client did not answer: {e}")))?;
        serde_json::from_value(answer).map_err(|e| {
            refused(format!(
                "the caller's client answered sampling with something else: {e}"
            ))
        })
    }

    /// The roots of the call's caller, as its client lists them (none without one).
    #[allow(deprecated)] // Roots are deprecated by 2026-07-28 (SEP-2577), still in use.
    async fn list_roots(
        &self,
        context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, rmcp::ErrorData> {
        let roots = self.elicit.of(&context).await.and_then(|a| a.roots);
        let answer = super::asks::roots(roots.as_ref()).await;
        Ok(serde_json::from_value(answer).unwrap_or_default())
    }

    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut info = rmcp::model::ClientConfig::default();
        // Questions are passed on to the downstream client when it can ask its user.
        // Form and URL mode: a URL-mode question for a caller whose client cannot show one
        // is declined for it.
        info.capabilities.elicitation =
            serde_json::from_value(serde_json::json!({"form": {}, "url": {}})).ok();
        // Sampling requests go to the model of the caller whose call made them, when its
        // client can sample (and are refused for the others).
        info.capabilities.sampling = serde_json::from_value(serde_json::json!({})).ok();
        // Roots are the caller's: its client lists them during its call.
        info.capabilities.roots = serde_json::from_value(serde_json::json!({})).ok();
        info.client_info.name = "toolsmith".into();
        info.client_info.version = env!("CARGO_PKG_VERSION").into();
        info
    }
}

/// A live connection; dropping it ends the process (its group and cgroup).
pub(crate) struct Conn {
    pub service: RunningService<RoleClient, Handler>,
    pub process: Option<Process>,
}

/// A stdio upstream's process: killed with its group and cgroup when dropped.
pub(crate) struct Process {
    pub child: Child,
    pub pid: u32,
    pub cgroup: Option<CallCgroup>,
    /// A folder of its own, when the definition names none.
    _folder: Option<tempfile::TempDir>,
}

impl Drop for Process {
    fn drop(&mut self) {
        limits::kill_group(self.pid);
        let _ = self.child.start_kill();
        if let Some(cg) = self.cgroup.take() {
            cg.release();
        }
    }
}

impl Process {
    /// The process's exit, as words; waits for it.
    pub async fn exited(&mut self) -> String {
        match self.child.wait().await {
            Ok(status) => match (
                status.code(),
                std::os::unix::process::ExitStatusExt::signal(&status),
            ) {
                (Some(code), _) => format!("the process exited with status {code}"),
                (None, Some(sig)) => format!("the process was killed by signal {sig}"),
                _ => "the process ended".into(),
            },
            Err(e) => format!("waiting for the process: {e}"),
        }
    }
}

/// Connects to `def`: starts its process (stdio) or opens its client (HTTP), then the MCP
/// handshake of the era its `protocol` says — under `auto` the `initialize` handshake, and
/// `server/discover` (started afresh) when the server refuses that handshake. An OAuth
/// server's connection goes as `who` says; its refusal of a token is noted in `challenge`.
pub(crate) async fn connect(
    up: &Arc<Upstream>,
    handler: Handler,
    who: Who<'_>,
    challenge: Arc<Mutex<Option<String>>>,
) -> Result<Conn, String> {
    let modes = lifecycles(&up.def);
    let last = modes.len() - 1;
    let who = (who, &challenge);
    for (i, mode) in modes.into_iter().enumerate() {
        match connect_with(up, handler.clone(), mode, who).await {
            Ok(conn) => return Ok(conn),
            Err(Refused::Handshake(why)) if i < last => {
                tracing::info!(server = %up.def.name, "MCP server refused the initialize handshake ({why}); trying server/discover (2026-07-28)");
            }
            Err(Refused::Handshake(why) | Refused::Other(why)) => return Err(why),
        }
    }
    Err("no handshake to try".into())
}

/// Whose a connection is, and so what it sends an OAuth server.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Who<'a> {
    /// The server's shared connection: its tokens (a `connection: exchange` server's:
    /// toolsmith's own, by client credentials).
    Shared,
    /// One user's: the tokens that user connected with.
    User(&'a str),
    /// One user's, with a token exchanged for them.
    Bearer(&'a str),
}

/// Why a connection did not start.
enum Refused {
    /// The server answered the handshake, but with an error or no version in common: one of
    /// the other era may work.
    Handshake(String),
    /// Anything else (no process, no answer, a broken transport).
    Other(String),
}

impl Refused {
    fn of(e: rmcp::service::ClientInitializeError, tail: String) -> Self {
        use rmcp::service::ClientInitializeError as E;
        let why = format!("{e}{tail}");
        match e {
            E::JsonRpcError(_) | E::NoCompatibleProtocolVersion { .. } => Self::Handshake(why),
            _ => Self::Other(why),
        }
    }
}

/// One attempt of [`connect`] with one handshake.
async fn connect_with(
    up: &Arc<Upstream>,
    handler: Handler,
    mode: ClientLifecycleMode,
    (who, challenge): (Who<'_>, &Arc<Mutex<Option<String>>>),
) -> Result<Conn, Refused> {
    match &up.def.transport {
        Transport::Stdio { .. } => {
            let (mut process, stdin, stdout) =
                spawn(&up.def, &up.spawning).await.map_err(Refused::Other)?;
            up.update(|st| st.pid = Some(process.pid));
            drain_stderr(up, &mut process);
            *lock(&up.broken) = None;
            let stdout = LineGuard {
                read: stdout,
                line: 0,
                up: up.clone(),
            };
            match handler.serve_with_lifecycle((stdout, stdin), mode).await {
                Ok(service) => Ok(Conn {
                    service,
                    process: Some(process),
                }),
                Err(e) => {
                    // The handshake failed: the process may have said why before exiting.
                    let exited = tokio::time::timeout(
                        std::time::Duration::from_millis(500),
                        process.exited(),
                    )
                    .await
                    .unwrap_or_else(|_| "it did not answer the MCP handshake".into());
                    Err(Refused::of(e, format!(" ({exited})")))
                }
            }
        }
        Transport::Http { .. } => {
            let url = up.def.resolved_url().unwrap_or_default();
            let _ = rustls::crypto::ring::default_provider().install_default();
            let mut headers = HashMap::new();
            for (k, v) in up.def.resolved_headers() {
                let name = reqwest::header::HeaderName::from_bytes(k.as_bytes())
                    .map_err(|e| Refused::Other(format!("header {k:?}: {e}")))?;
                let value = reqwest::header::HeaderValue::from_str(&v).map_err(|_| {
                    Refused::Other(format!("header {k:?}: not a valid header value"))
                })?;
                headers.insert(name, value);
            }
            let client = super::oauth::http_client().map_err(Refused::Other)?;
            let mut config = rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(url.as_str())
                .custom_headers(headers);
            // A token exchanged for the user, or toolsmith's own for an exchanging server.
            let bearer = match who {
                Who::Bearer(token) => Some(token.to_owned()),
                Who::Shared if up.exchange().is_some() => Some(
                    up.exchanged("", None)
                        .await
                        .map_err(|e| Refused::Other(e.to_string()))?,
                ),
                _ => None,
            };
            let subject = match who {
                Who::User(subject) => subject,
                _ => "",
            };
            let service = if let Some(bearer) = bearer {
                config = config.auth_header(bearer);
                let transport = rmcp::transport::StreamableHttpClientTransport::with_client(
                    SessionAware(client, challenge.clone()),
                    config,
                );
                handler.serve_with_lifecycle(transport, mode).await
            } else if super::oauth::uses(up).await {
                // OAuth: the connection's tokens (shared or the user's), sent, refreshed before they expire
                // and once on a 401. Without tokens the requests go without one: the server's
                // 401 says what the authorization needs (noted by SessionAware).
                let tokens = up.spawning.tokens.get().cloned().ok_or_else(|| {
                    Refused::Other(
                        "no place to keep OAuth tokens (this engine has no registry)".into(),
                    )
                })?;
                let manager = super::oauth::authorized(&up.def, tokens, subject)
                    .await
                    .map_err(Refused::Other)?;
                let transport = rmcp::transport::StreamableHttpClientTransport::with_client(
                    rmcp::transport::AuthClient::new(
                        SessionAware(client, challenge.clone()),
                        manager,
                    ),
                    config,
                );
                handler.serve_with_lifecycle(transport, mode).await
            } else {
                let transport = rmcp::transport::StreamableHttpClientTransport::with_client(
                    SessionAware(client, challenge.clone()),
                    config,
                );
                handler.serve_with_lifecycle(transport, mode).await
            }
            .map_err(|e| Refused::of(e, String::new()))?;
            Ok(Conn {
                service,
                process: None,
            })
        }
    }
}

/// The handshakes to try, in order, by the server's `protocol`: under `auto` the
/// `initialize` handshake first — the era in which an upstream can ask its caller during a
/// call (servers written against the older SDK interfaces ask only that way) — then
/// `server/discover` for a server that speaks only 2026-07-28.
fn lifecycles(def: &McpServer) -> Vec<ClientLifecycleMode> {
    let modern = || ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    match def.protocol {
        Protocol::Auto => vec![ClientLifecycleMode::Initialize, modern()],
        Protocol::Modern => vec![modern()],
        Protocol::Legacy => vec![ClientLifecycleMode::Initialize],
    }
}

/// The environment of a stdio upstream: the allowlisted variables of the server's own, its
/// `env`, and its config fields' `env_name`s.
fn environment(def: &McpServer) -> BTreeMap<String, String> {
    let Transport::Stdio { env_allowlist, .. } = &def.transport else {
        return BTreeMap::new();
    };
    let mut out = crate::sandbox::inherited(env_allowlist.iter().map(String::as_str));
    out.extend(def.resolved_env());
    for p in &def.config_schema {
        if let Some(v) = def.config.get(&p.name) {
            let name = p
                .env_name
                .clone()
                .unwrap_or_else(|| toolsmith_core::model::default_env_name(&p.name));
            let text = match v {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            out.insert(name, text);
        }
    }
    out
}

type Spawned = (
    Process,
    tokio::process::ChildStdin,
    tokio::process::ChildStdout,
);

/// Starts a stdio upstream's process in a cgroup slot (where the machine has them) and a
/// process group of its own, with the engine's rlimits and niceness.
async fn spawn(def: &McpServer, spawning: &Spawning) -> Result<Spawned, String> {
    let Transport::Stdio {
        working_dir,
        sandbox,
        ..
    } = &def.transport
    else {
        return Err("not a stdio server".into());
    };
    let command = def.resolved_command();
    let (program, args) = command.split_first().ok_or("the command is empty")?;
    let env = environment(def);
    let path = env
        .get("PATH")
        .cloned()
        .unwrap_or_else(|| crate::programs::DEFAULT_PATH.to_owned());
    let resolved = crate::programs::resolve_program(program, Some(&path))
        .ok_or_else(|| format!("program {program:?} not found in PATH={path}"))?;
    let (cwd, folder): (PathBuf, Option<tempfile::TempDir>) = match working_dir {
        Some(dir) => (spawning.workspace.join(dir), None),
        None => {
            let dir = tempfile::Builder::new()
                .prefix("toolsmith-upstream-")
                .tempdir()
                .map_err(|e| format!("making a folder for it: {e}"))?;
            (dir.path().to_path_buf(), Some(dir))
        }
    };
    let mut cmd = Command::new(&resolved);
    cmd.arg0(program)
        .args(args)
        .env_clear()
        .envs(&env)
        .current_dir(&cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let cx = crate::sandbox::Context {
        workdir: &cwd,
        program: Some(&resolved),
        files: Vec::new(),
    };
    let confined = spawning
        .sandbox
        .confine_as(spawning.sandbox.server_policy(sandbox.as_ref()), &cx)
        .map_err(|e| format!("not started: {e}"))?;
    let (child, cgroup) = limits::spawn_contained(
        cmd,
        spawning.cgroups.as_deref(),
        spawning.limits,
        spawning.niceness,
        confined.confinement,
    )
    .await?;
    let mut child = child.map_err(|e| format!("starting {program:?}: {e}"))?;
    let pid = child.id().unwrap_or(0);
    let stdin = child.stdin.take().ok_or("no stdin")?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    Ok((
        Process {
            child,
            pid,
            cgroup,
            _folder: folder,
        },
        stdin,
        stdout,
    ))
}

/// The largest message (one line of its stdout) an upstream may send: rmcp's own limit.
const MAX_MESSAGE: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

/// An upstream's stdout, read through: a line longer than [`MAX_MESSAGE`] ends the connection
/// with the reason recorded, so the calls waiting on it fail at once naming it (rmcp alone
/// would drop the line and leave its call waiting for its whole timeout).
struct LineGuard<R> {
    read: R,
    /// Bytes since the last newline.
    line: usize,
    up: Arc<Upstream>,
}

impl<R: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for LineGuard<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = std::pin::Pin::new(&mut self.read).poll_read(cx, buf);
        if let std::task::Poll::Ready(Ok(())) = &polled {
            let mut line = self.line;
            for b in &buf.filled()[before..] {
                line = if *b == b'\n' { 0 } else { line + 1 };
                if line > MAX_MESSAGE {
                    let why = format!(
                        "sent a message over {MAX_MESSAGE} bytes (one line of its stdout); toolsmith closed the connection, and the server restarts"
                    );
                    *lock(&self.up.broken) = Some(why.clone());
                    return std::task::Poll::Ready(Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        why,
                    )));
                }
            }
            self.line = line;
        }
        polled
    }
}

/// Reads the process's stderr into the upstream's ring, keeping the last
/// [`super::STDERR_KEPT`] bytes whatever it writes.
fn drain_stderr(up: &Arc<Upstream>, process: &mut Process) {
    let Some(mut stderr) = process.child.stderr.take() else {
        return;
    };
    let up = up.clone();
    tokio::spawn(async move {
        let mut buf = vec![0u8; 8192];
        loop {
            match stderr.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    let mut ring = lock(&up.stderr);
                    ring.extend(&buf[..n]);
                    let excess = ring.len().saturating_sub(super::STDERR_KEPT);
                    ring.drain(..excess);
                }
            }
        }
    });
}
