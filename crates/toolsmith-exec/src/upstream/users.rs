//! What a call goes over ([`Link`]): the server's shared connection, or — for an OAuth
//! server that connects each user's own account (`connection: per_user`) — the calling
//! user's own connection, opened on the first call with that user's tokens (kept in the
//! registry under the server's name and the user's name) — or, on an exchanging server, with
//! a token exchanged for them — and kept while it works and is used (closed after ten idle
//! minutes; the next request opens it again).
//!
//! A user's connection is its own MCP session with its own routes for progress, questions
//! and log messages (request ids and progress tokens are per connection). A user without
//! tokens, or whose tokens the server refuses once a refresh could not help, gets
//! `needs_authorization` naming that user — never another user's connection, and never the
//! shared one. What the server lists is read on the shared connection (an admin's), which
//! carries no user's calls.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::service::{RoleClient, RunningService, ServiceError};

use super::conn::{self, Handler, ProgressRoutes};
use super::{Upstream, UpstreamError, asks::ElicitRoutes, lock, logs::LogRoutes};

/// The subject of a call made by no one in particular (a server that asks for no token).
pub const LOCAL_SUBJECT: &str = "local";

/// What one call goes over: a connection's peer, where its progress, questions and log
/// messages go, and where the server's refusal of a token is noted.
pub(crate) struct Link {
    pub peer: rmcp::Peer<RoleClient>,
    pub progress: ProgressRoutes,
    pub elicit: ElicitRoutes,
    pub logs: LogRoutes,
    pub challenge: Arc<Mutex<Option<String>>>,
    /// Whose own connection it is (`None`: the shared one).
    pub subject: Option<String>,
}

/// One user's own connection to a per-user (or exchanging) server.
pub(crate) struct UserConn {
    service: RunningService<RoleClient, Handler>,
    handler: Handler,
    challenge: Arc<Mutex<Option<String>>>,
    /// The token exchanged for the user that it sends (`connection: exchange`).
    bearer: Option<String>,
    /// When a request last went over it.
    used: std::time::Instant,
}

/// How long a user's own connection is kept unused before it is closed (the next request
/// opens it again).
const USER_IDLE: Duration = Duration::from_secs(600);

/// Whom a request to an upstream is for: the caller's name (none: `local`), and its own JWT
/// for a server that exchanges it (`connection: exchange`).
#[derive(Debug, Clone, Copy, Default)]
pub struct OnBehalf<'a> {
    pub subject: Option<&'a str>,
    pub token: Option<&'a super::SubjectToken>,
}

impl<'a> OnBehalf<'a> {
    /// Whom `downstream`'s call is for.
    pub fn of(downstream: &'a super::Downstream) -> Self {
        Self {
            subject: downstream.subject.as_deref(),
            token: downstream.subject_token.as_ref(),
        }
    }
}

impl std::fmt::Display for UpstreamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unknown(name) => write!(f, "no MCP server named `{name}`"),
            Self::Down(why) | Self::Failed(why) | Self::NeedsAuthorization(why) => f.write_str(why),
            Self::Timeout(after) => write!(f, "no answer within {} ms", after.as_millis()),
            Self::Rpc { code, message, .. } => write!(f, "error {code}: {message}"),
        }
    }
}

/// The users' own connections of one server, by user.
pub(crate) type UserConns = Mutex<HashMap<String, Arc<tokio::sync::Mutex<Option<UserConn>>>>>;

impl Upstream {
    /// Whether calls go as each caller's own connection (`connection: per_user`).
    pub(crate) fn per_user(&self) -> bool {
        self.def.resolved_oauth().is_some_and(|o| o.per_user)
    }

    /// What a request on behalf of `on` goes over: the caller's own connection on a
    /// per-user or exchanging server (opened now when it has none, or when the token
    /// exchanged for it changed), else the shared one once ready.
    pub(crate) async fn link(
        self: &Arc<Self>,
        timeout: Duration,
        on: OnBehalf<'_>,
    ) -> Result<Link, UpstreamError> {
        let exchanging = self.exchange().is_some();
        if !self.per_user() && !exchanging {
            return Ok(Link {
                peer: self.ready_peer(timeout).await?,
                progress: self.progress.clone(),
                elicit: self.elicit.clone(),
                logs: self.logs.clone(),
                challenge: self.auth_challenge.clone(),
                subject: None,
            });
        }
        let subject = on.subject.unwrap_or(LOCAL_SUBJECT);
        let bearer = match exchanging {
            true => Some(self.exchanged(subject, on.token).await?),
            false => None,
        };
        self.close_idle_users();
        let slot = lock(&self.users)
            .entry(subject.to_owned())
            .or_default()
            .clone();
        let mut slot = slot.lock().await;
        if let Some(c) = slot.as_mut()
            && !c.service.is_closed()
            && c.bearer == bearer
        {
            c.used = std::time::Instant::now();
            return Ok(c.link(subject));
        }
        *slot = None;
        let open = self.open(subject, bearer);
        let conn = tokio::time::timeout(timeout.min(super::START_TIMEOUT), open)
            .await
            .map_err(|_| {
                UpstreamError::Down(format!(
                    "MCP server `{}` did not answer the MCP handshake of {subject}'s connection within {} ms",
                    self.def.name,
                    timeout.min(super::START_TIMEOUT).as_millis()
                ))
            })??;
        let link = conn.link(subject);
        *slot = Some(conn);
        Ok(link)
    }

    /// Opens `subject`'s own connection — with `bearer` (exchanged for it), else with the
    /// tokens it connected with; `needs_authorization` when it has none or the server
    /// refuses them.
    async fn open(
        self: &Arc<Self>,
        subject: &str,
        bearer: Option<String>,
    ) -> Result<UserConn, UpstreamError> {
        if bearer.is_none() {
            let tokens = self.spawning.tokens.get().cloned().ok_or_else(|| {
                UpstreamError::Down(
                    "no place to keep OAuth tokens (this engine has no registry)".into(),
                )
            })?;
            match tokens.load(&self.def.name, subject).await {
                Ok(Some(_)) => {}
                Ok(None) => return Err(self.user_needs_authorization(subject, None)),
                Err(e) => {
                    return Err(UpstreamError::Down(format!(
                        "the OAuth tokens of {subject} for MCP server `{}` could not be read: {e}",
                        self.def.name
                    )));
                }
            }
        }
        let handler = Handler {
            server: self.def.name.clone(),
            routes: ProgressRoutes::default(),
            elicit: ElicitRoutes::default(),
            logs: LogRoutes::default(),
            events: self.events.clone(),
            // What the server lists is followed on the shared connection.
            list_changed: tokio::sync::mpsc::unbounded_channel().0,
        };
        let challenge: Arc<Mutex<Option<String>>> = Arc::default();
        let who = match &bearer {
            Some(token) => conn::Who::Bearer(token),
            None => conn::Who::User(subject),
        };
        match conn::connect(self, handler.clone(), who, challenge.clone()).await {
            Ok(conn) => Ok(UserConn {
                service: conn.service,
                handler,
                challenge,
                bearer,
                used: std::time::Instant::now(),
            }),
            Err(why) if lock(&challenge).is_some() => {
                Err(self.user_needs_authorization(subject, Some(&why)))
            }
            Err(why) => Err(UpstreamError::Down(format!(
                "MCP server `{}` (the connection of {subject}): {}",
                self.def.name,
                toolsmith_core::secrets::scrub(&why, &self.def.secret_values())
            ))),
        }
    }

    /// `needs_authorization` for `subject` on this per-user server: how that user connects.
    fn user_needs_authorization(&self, subject: &str, answered: Option<&str>) -> UpstreamError {
        let name = &self.def.name;
        let answered = answered
            .map(|a| format!(" (the server answered: {a})"))
            .unwrap_or_default();
        UpstreamError::NeedsAuthorization(format!(
            "{} MCP server `{name}` connects each user's own account, and {subject} has not connected theirs{answered} (`toolsmith connections connect {name}`, POST /v1/connections/{name}, or Connect under My connections in the web UI)",
            super::oauth::NEEDS_AUTHORIZATION
        ))
    }

    /// Closes the users' connections that ended or were not used for [`USER_IDLE`] (one in
    /// use, or being opened, is left alone): a server many people used keeps open only
    /// what is used.
    fn close_idle_users(&self) {
        for slot in lock(&self.users).values() {
            if let Ok(mut slot) = slot.try_lock()
                && slot
                    .as_ref()
                    .is_some_and(|c| c.service.is_closed() || c.used.elapsed() >= USER_IDLE)
            {
                *slot = None;
            }
        }
    }

    /// Closes `subject`'s own connection (its tokens were forgotten or replaced): the next
    /// call opens it again with what is kept now.
    pub(crate) fn drop_user(&self, subject: &str) {
        if let Some(slot) = lock(&self.users).remove(subject)
            && let Ok(mut slot) = slot.try_lock()
        {
            *slot = None;
        }
    }

    /// An error of a request over `link` as the caller sees it. A user's connection that
    /// broke is closed (the next call opens it again); refused for its token, it needs that
    /// user's authorization.
    pub(crate) fn failure(&self, link: &Link, e: ServiceError) -> UpstreamError {
        match e {
            ServiceError::McpError(e) => UpstreamError::Rpc {
                code: e.code.0,
                message: e.message.to_string(),
                data: e.data,
            },
            ServiceError::Timeout { timeout } => UpstreamError::Timeout(timeout),
            other => {
                if let Some(subject) = &link.subject {
                    self.drop_user(subject);
                    if let Some(c) = lock(&link.challenge).clone() {
                        return self.user_needs_authorization(subject, Some(&c));
                    }
                    return UpstreamError::Failed(format!(
                        "MCP server `{}` (the connection of {subject}): {other}",
                        self.def.name
                    ));
                }
                // The shared connection's token refused, a refresh not helping (revoked):
                // the connection ends and says it needs authorization.
                let why = other.to_string();
                if why.contains("Auth required") {
                    let _ = self.control.send(super::Control::Refused(why));
                    return UpstreamError::NeedsAuthorization(super::oauth::needs_authorization(
                        &self.def.name,
                    ));
                }
                super::oauth::wants_more_scope(self).unwrap_or_else(|| {
                    match lock(&self.broken).clone() {
                        Some(why) => {
                            UpstreamError::Failed(format!("MCP server `{}` {why}", self.def.name))
                        }
                        None => UpstreamError::Failed(format!(
                            "MCP server `{}`: {other}{}",
                            self.def.name,
                            self.stderr_tail()
                        )),
                    }
                })
            }
        }
    }
}

impl UserConn {
    fn link(&self, subject: &str) -> Link {
        Link {
            peer: self.service.peer().clone(),
            progress: self.handler.routes.clone(),
            elicit: self.handler.elicit.clone(),
            logs: self.handler.logs.clone(),
            challenge: self.challenge.clone(),
            subject: Some(subject.to_owned()),
        }
    }
}

impl super::Upstreams {
    /// Closes `subject`'s own connection to server `name` (its tokens were forgotten or
    /// replaced), so the next call opens it with what is kept now.
    pub fn drop_user_connection(&self, name: &str, subject: &str) {
        if let Some(up) = self.get(name) {
            up.drop_user(subject);
        }
    }

    /// Whether server `name` connects each caller's own account (`connection: per_user`).
    pub fn per_user(&self, name: &str) -> bool {
        self.get(name).is_some_and(|up| up.per_user())
    }
}
