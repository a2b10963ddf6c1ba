//! Where sessions live, kept in the registry so replicas sharing it can tell a caller where
//! a session is (SPEC §5.4).
//!
//! A session is processes of one server. Its id names the replica that holds it; the engine
//! reports starts, ends and a heartbeat of its live sessions here, and this writes them to
//! the registry's `sessions` table in order, off the call path. A replica that gets a call
//! for a session it does not hold asks [`Directory::locate`]: a session whose replica
//! reported it lately is `session_elsewhere`, one whose replica went silent (or, on this
//! host, whose server process is gone) is `session_lost`.
//!
//! Behind a load balancer a session's calls reach any replica. Each replica records with its
//! sessions the address it can be reached at (`serve --advertise-url`); a replica that gets a
//! call for a session another holds forwards it there ([`PEER_PATH`]), as the caller, and
//! answers with the holder's answer. Each forward carries a proof for that one request: an
//! HMAC under the registry's secret key (which every replica must hold) of the method, the
//! path, the time, a nonce and the body's digest. The holder refuses a proof outside a 30 s
//! clock window, or whose nonce any replica of the registry has seen (the nonces are kept in
//! the registry), so a forward captured on the network cannot be sent again — to the same
//! replica, to another, or later. The holder writes the call's run-log entry, under its
//! caller.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use std::sync::OnceLock;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use toolsmith_core::ToolResult;
use toolsmith_exec::session::{Directory, DirectoryEvent, Forward, HEARTBEAT, Located};
use toolsmith_store::{Registry, SessionNote, Store, now_ms};

/// Where a replica takes the session calls another forwards to it: no token is asked there;
/// the route checks a proof made for that one request ([`check_peer`]).
pub const PEER_PATH: &str = "/v1/peer/session";
/// The header carrying a forward's proof: `t=<ms>;n=<nonce>;s=<hmac>`.
pub const PEER_HEADER: &str = "x-toolsmith-peer";
/// How far a forward's time may be from the holder's clock.
const PROOF_WINDOW_MS: i64 = 30_000;
/// How long nonces are kept: past the window on either side, so a proof is refused for its
/// nonce for as long as its time would pass.
const NONCE_KEPT_MS: i64 = 3 * PROOF_WINDOW_MS;
/// The longest a forwarded call may take: a session call waits at most 30 s.
const FORWARD_TIMEOUT: Duration = Duration::from_secs(90);

/// A forwarded session call, as the holder receives it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PeerCall {
    pub tool: String,
    pub arguments: Map<String, Value>,
    /// Who called the replica the call reached; the session must be theirs.
    pub caller: String,
    pub admin: bool,
}

/// Why a forward was refused.
#[derive(Debug, thiserror::Error)]
pub enum PeerRefused {
    /// This registry has no secret key: no replica can prove itself, so the route is not
    /// there.
    #[error("no such route; the API lives under /v1")]
    NoKey,
    #[error(
        "only a replica sharing this registry's secret key may forward session calls here ({0})"
    )]
    Proof(&'static str),
    #[error("checking a forward's nonce in the registry: {0}")]
    Registry(toolsmith_store::StoreError),
}

/// Whether `shown` (the [`PEER_HEADER`]'s value) is a proof, made by a replica of this
/// registry for this request (`method`, `path`, `body`) and never seen before by any replica;
/// the nonce is taken.
pub async fn check_peer(
    store: &Registry,
    shown: Option<&str>,
    method: &str,
    path: &str,
    body: &[u8],
) -> Result<(), PeerRefused> {
    if !toolsmith_store::secrets::has_key() {
        return Err(PeerRefused::NoKey);
    }
    let shown = shown.ok_or(PeerRefused::Proof("no proof"))?;
    let field = |name: &str| {
        shown
            .split(';')
            .find_map(|part| part.trim().strip_prefix(name)?.strip_prefix('='))
    };
    let (Some(at_ms), Some(nonce), Some(proof)) = (
        field("t").and_then(|t| t.parse::<i64>().ok()),
        field("n").filter(|n| n.len() == 32 && n.bytes().all(|b| b.is_ascii_hexdigit())),
        field("s"),
    ) else {
        return Err(PeerRefused::Proof(
            "the proof is not t=<ms>;n=<nonce>;s=<hmac>",
        ));
    };
    if (now_ms() - at_ms).abs() > PROOF_WINDOW_MS {
        return Err(PeerRefused::Proof(
            "the proof is older than 30 s, or from a clock more than 30 s apart from this one's",
        ));
    }
    if !toolsmith_store::secrets::peer_proof_holds(method, path, at_ms, nonce, body, proof) {
        return Err(PeerRefused::Proof("the proof does not match this request"));
    }
    match store.claim_nonce(nonce, now_ms(), NONCE_KEPT_MS).await {
        Ok(true) => Ok(()),
        Ok(false) => Err(PeerRefused::Proof("this proof was used before")),
        Err(e) => Err(PeerRefused::Registry(e)),
    }
}

/// A replica whose heartbeat is older than this is taken for gone with its sessions.
pub const STALE_AFTER_MS: u64 = 3 * HEARTBEAT.as_millis() as u64;

/// The registry as the engine's session directory.
pub struct RegistryDirectory {
    store: Registry,
    /// `host:pid` of this server.
    place: String,
    notes: mpsc::UnboundedSender<SessionNote>,
    /// Where this replica can be reached, once said ([`Self::advertise`]).
    url: OnceLock<String>,
    http: OnceLock<reqwest::Client>,
}

impl RegistryDirectory {
    /// Starts the writer task (inside a Tokio runtime).
    pub fn start(store: Registry) -> Arc<Self> {
        let (notes, mut queue) = mpsc::unbounded_channel::<SessionNote>();
        let writer = store.clone();
        tokio::spawn(async move {
            while let Some(note) = queue.recv().await {
                if let Err(e) = writer.note_session(&note).await {
                    tracing::warn!("recording a session in the registry: {e}");
                }
            }
        });
        Arc::new(Self {
            store,
            place: format!("{}:{}", hostname(), std::process::id()),
            notes,
            url: OnceLock::new(),
            http: OnceLock::new(),
        })
    }

    /// Says where this replica can be reached (before it serves): other replicas forward
    /// calls for its sessions there.
    pub fn advertise(&self, url: &str) {
        let _ = self.url.set(url.trim_end_matches('/').to_owned());
    }

    /// Where this replica said it can be reached.
    pub fn advertised(&self) -> Option<&str> {
        self.url.get().map(String::as_str)
    }

    fn client(&self) -> Result<&reqwest::Client, ForwardError> {
        if let Some(c) = self.http.get() {
            return Ok(c);
        }
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(3))
            .timeout(FORWARD_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(ForwardError::Client)?;
        Ok(self.http.get_or_init(|| client))
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_default()
}

/// Whether `place` (`host:pid`) names a process of this host that is gone.
fn gone_from_this_host(place: &str) -> bool {
    match place.rsplit_once(':') {
        Some((host, pid)) if host == hostname() => {
            !std::path::Path::new(&format!("/proc/{pid}")).exists()
        }
        _ => false,
    }
}

impl Directory for RegistryDirectory {
    fn note(&self, event: DirectoryEvent) {
        let at_ms = now_ms();
        let note = match event {
            DirectoryEvent::Started {
                id,
                replica,
                owner,
                command,
            } => SessionNote::Started {
                id,
                replica,
                place: self.place.clone(),
                owner,
                command,
                at_ms,
                url: self.url.get().cloned().unwrap_or_default(),
            },
            DirectoryEvent::Ended { id, status } => SessionNote::Ended { id, status, at_ms },
            DirectoryEvent::Alive { replica, .. } => SessionNote::Alive { replica, at_ms },
        };
        let _ = self.notes.send(note);
    }

    fn locate<'a>(
        &'a self,
        id: &'a str,
    ) -> Pin<Box<dyn Future<Output = Option<Located>> + Send + 'a>> {
        Box::pin(async move {
            let row = match self.store.find_session(id).await {
                Ok(row) => row?,
                Err(e) => {
                    tracing::warn!("looking up session {id} in the registry: {e}");
                    return None;
                }
            };
            let last_seen_ms = row.last_seen_ms.max(0) as u64;
            let fresh = (now_ms().max(0) as u64).saturating_sub(last_seen_ms) < STALE_AFTER_MS;
            Some(Located {
                alive: row.status == "running" && fresh && !gone_from_this_host(&row.place),
                replica: format!("{} ({})", row.replica, row.place),
                owner: row.owner,
                status: row.status,
                last_seen_ms,
                url: Some(row.url).filter(|u| !u.is_empty()),
            })
        })
    }

    fn forward<'a>(
        &'a self,
        url: &'a str,
        call: Forward<'a>,
    ) -> Pin<Box<dyn Future<Output = Result<ToolResult, toolsmith_exec::BoxError>> + Send + 'a>>
    {
        Box::pin(async move { Ok(self.send(url, call).await?) })
    }
}

/// Why a session call could not be sent to the replica holding its session.
#[derive(Debug, thiserror::Error)]
pub enum ForwardError {
    #[error("the call could not be encoded: {0}")]
    Encode(serde_json::Error),
    #[error("this replica has no registry key to show the holder")]
    NoKey,
    #[error("the HTTP client could not start: {0}")]
    Client(reqwest::Error),
    #[error("{0}")]
    Send(reqwest::Error),
    /// The holder answered with an error status; the start of its body.
    #[error("HTTP {status}: {body}")]
    Status {
        status: reqwest::StatusCode,
        body: String,
    },
    #[error("its answer was not a result: {0}")]
    Answer(serde_json::Error),
}

impl RegistryDirectory {
    /// Sends `call` to the replica at `url`, signed with the registry's key.
    async fn send(&self, url: &str, call: Forward<'_>) -> Result<ToolResult, ForwardError> {
        let body = serde_json::to_vec(&PeerCall {
            tool: call.tool.to_owned(),
            arguments: call.arguments.clone(),
            caller: call.caller.to_owned(),
            admin: call.admin,
        })
        .map_err(ForwardError::Encode)?;
        let (at_ms, nonce) = (now_ms(), toolsmith_store::secrets::peer_nonce());
        let proof = toolsmith_store::secrets::peer_proof("POST", PEER_PATH, at_ms, &nonce, &body)
            .ok_or(ForwardError::NoKey)?;
        let answer = self
            .client()?
            .post(format!("{url}{PEER_PATH}"))
            .header(PEER_HEADER, format!("t={at_ms};n={nonce};s={proof}"))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body)
            .send()
            .await
            .map_err(ForwardError::Send)?;
        let status = answer.status();
        let text = answer.text().await.map_err(ForwardError::Send)?;
        if !status.is_success() {
            return Err(ForwardError::Status {
                status,
                body: text.chars().take(300).collect(),
            });
        }
        serde_json::from_str(&text).map_err(ForwardError::Answer)
    }
}
