//! The task that keeps one upstream running: connect, list, follow, restart with backoff,
//! stop when idle or asked to.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{broadcast, mpsc, watch};
use toolsmith_core::upstream::{McpServer, Transport};

use super::conn::{self, Conn, Handler};
use super::{
    BACKOFF_MAX, Control, Event, RELIST_EVERY, START_TIMEOUT, Spawning, State, Status, Upstream,
    lock, now_ms,
};
use super::{asks, listen};

/// Creates an upstream and its supervising task (which starts it at once when enabled).
pub(crate) fn spawn(
    def: McpServer,
    spawning: Spawning,
    events: broadcast::Sender<Event>,
) -> Arc<Upstream> {
    let (control, rx) = mpsc::unbounded_channel();
    let enabled = def.enabled;
    let up = Arc::new(Upstream {
        def,
        state: Mutex::new(State {
            status: if enabled {
                Status::Starting
            } else {
                Status::Stopped
            },
            pid: None,
            restarts: 0,
            last_error: (!enabled).then(|| "the server is disabled".to_owned()),
            tools: None,
            offer: Default::default(),
            listed_at_ms: None,
            up_since: None,
            peer: None,
            last_used: Instant::now(),
        }),
        changed: watch::Sender::new(0),
        stderr: Mutex::default(),
        broken: Mutex::default(),
        watched: Mutex::default(),
        auth_challenge: Arc::default(),
        users: Mutex::default(),
        exchanges: Mutex::default(),
        control,
        events,
        spawning,
        progress: conn::ProgressRoutes::default(),
        elicit: asks::ElicitRoutes::default(),
        logs: Default::default(),
    });
    if enabled {
        tokio::spawn(run(up.clone(), rx));
    }
    up
}

/// How a connection's life ended.
enum Ended {
    /// It broke or exited: why.
    Failed(String),
    /// Asked to stop, or idle: wait for a start.
    Idle,
    /// Asked to stop for good.
    Stop,
}

async fn run(up: Arc<Upstream>, mut control: mpsc::UnboundedReceiver<Control>) {
    let mut backoff = Duration::from_secs(1);
    let mut started_once = false;
    // A config field its command, env, URL or headers name has no value yet: it waits for
    // one (a new definition starts a new supervisor).
    let unfilled = up.def.unfilled();
    if !unfilled.is_empty() {
        let why = format!(
            "needs a value for config field{} {}: fill {} in (its page in the web UI, or `config` in PUT /v1/servers/{})",
            if unfilled.len() == 1 { "" } else { "s" },
            unfilled
                .iter()
                .map(|f| format!("`{f}`"))
                .collect::<Vec<_>>()
                .join(", "),
            if unfilled.len() == 1 { "it" } else { "them" },
            up.def.name
        );
        up.update(|st| {
            st.status = Status::Failed;
            st.last_error = Some(why);
        });
        while let Some(c) = control.recv().await {
            if matches!(c, Control::Stop) {
                break;
            }
        }
        stopped(&up);
        return;
    }
    loop {
        if started_once {
            up.update(|st| st.restarts += 1);
        }
        started_once = true;
        up.update(|st| {
            st.status = Status::Starting;
            st.peer = None;
        });
        let (list_tx, list_rx) = mpsc::unbounded_channel();
        let handler = Handler {
            server: up.def.name.clone(),
            routes: up.progress.clone(),
            elicit: up.elicit.clone(),
            logs: up.logs.clone(),
            events: up.events.clone(),
            list_changed: list_tx,
        };
        let connected = tokio::select! {
            c = tokio::time::timeout(START_TIMEOUT, conn::connect(&up, handler, conn::Who::Shared, up.auth_challenge.clone())) => match c {
                Ok(c) => c,
                Err(_) => Err(format!("no answer to the MCP handshake within {} s", START_TIMEOUT.as_secs())),
            },
            Some(Control::Stop) = control.recv() => {
                stopped(&up);
                return;
            }
        };
        let ended = match connected {
            Ok(conn) => {
                let up_since = Instant::now();
                let ended = follow(&up, conn, list_rx, &mut control).await;
                if up_since.elapsed() > Duration::from_secs(30) {
                    backoff = Duration::from_secs(1);
                }
                ended
            }
            Err(e) => Ended::Failed(e),
        };
        match ended {
            Ended::Stop => {
                stopped(&up);
                return;
            }
            Ended::Idle => {
                stopped(&up);
                // Wait for a call (or a refresh) to need it again.
                loop {
                    match control.recv().await {
                        Some(Control::Start | Control::Refresh) => break,
                        Some(Control::Rewatch | Control::Refused(_)) => {}
                        Some(Control::Stop) | None => return,
                    }
                }
                started_once = false;
                continue;
            }
            Ended::Failed(why) => {
                // An OAuth server that refused toolsmith's token once a refresh could not
                // help (revoked, expired, another authorization server): it needs
                // authorization again, not an endless retry with the same token.
                let refused = why.contains("Auth required") || why.contains("Insufficient scope");
                let oauth = super::oauth::uses(&up).await;
                let why = match oauth
                    && refused
                    && !why.starts_with(super::oauth::NEEDS_AUTHORIZATION)
                {
                    true if up.exchange().is_some() => format!(
                        "{} MCP server `{}` refused the token the identity provider gave toolsmith for it (the server answered: {why})",
                        super::oauth::NEEDS_AUTHORIZATION,
                        up.def.name
                    ),
                    true => format!(
                        "{} (the server answered: {why})",
                        super::oauth::needs_authorization(&up.def.name)
                    ),
                    false => why,
                };
                // Waiting for a person: tried again only now and then (another replica may
                // have been connected; a dead refresh token was forgotten, so a try costs
                // the server one request and the authorization server none).
                // (An exchanging server's own token just expired: fetched anew at once.)
                if why.starts_with(super::oauth::NEEDS_AUTHORIZATION) && up.exchange().is_none() {
                    backoff = BACKOFF_MAX;
                }
                tracing::warn!(server = %up.def.name, "MCP server failed: {why}");
                up.update(|st| {
                    st.status = Status::Failed;
                    st.last_error = Some(why);
                    st.peer = None;
                    st.pid = None;
                    st.up_since = None;
                });
            }
        }
        // Wait out the backoff; a stop ends it, a refresh starts at once.
        tokio::select! {
            () = tokio::time::sleep(backoff) => {}
            c = control.recv() => match c {
                Some(Control::Stop) | None => {
                    stopped(&up);
                    return;
                }
                Some(Control::Refresh | Control::Start | Control::Rewatch | Control::Refused(_)) => {}
            },
        }
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
}

fn stopped(up: &Upstream) {
    up.update(|st| {
        st.status = Status::Stopped;
        st.peer = None;
        st.pid = None;
        st.up_since = None;
    });
}

/// Lists the tools (every page) and announces them.
async fn list(up: &Upstream, conn: &Conn) -> Result<(), String> {
    let tools = tokio::time::timeout(START_TIMEOUT, conn.service.peer().list_all_tools())
        .await
        .map_err(|_| {
            format!(
                "no answer to tools/list within {} s",
                START_TIMEOUT.as_secs()
            )
        })?
        .map_err(|e| format!("tools/list failed: {e}"))?;
    let tools: Vec<serde_json::Value> = tools
        .into_iter()
        .filter_map(|t| serde_json::to_value(t).ok())
        .collect();
    let offer = Arc::new(super::offer::list(&up.def.name, conn.service.peer()).await);
    up.update(|st| {
        st.tools = Some(tools.clone());
        st.offer = offer.clone();
        st.listed_at_ms = Some(now_ms());
    });
    let _ = up.events.send(Event::Listed {
        server: up.def.name.clone(),
        tools,
        offer,
    });
    Ok(())
}

/// Follows a live connection until it ends.
async fn follow(
    up: &Arc<Upstream>,
    mut conn: Conn,
    mut list_changed: mpsc::UnboundedReceiver<()>,
    control: &mut mpsc::UnboundedReceiver<Control>,
) -> Ended {
    if let Err(e) = list(up, &conn).await {
        return Ended::Failed(e);
    }
    up.update(|st| {
        st.status = Status::Ready;
        st.last_error = None;
        st.peer = Some(conn.service.peer().clone());
        st.up_since = Some(Instant::now());
        st.last_used = Instant::now();
    });
    let idle_after = match &up.def.transport {
        Transport::Stdio { .. } => up.def.idle_timeout_ms.map(Duration::from_millis),
        Transport::Http { .. } => None,
    };
    let modern = listen::modern(conn.service.peer());
    let watched = || lock(&up.watched).clone();
    let mut heard = match modern {
        true => listen::open(&up.def.name, conn.service.peer(), &watched()).await,
        false => None,
    };
    let mut relist = tokio::time::interval(RELIST_EVERY);
    relist.tick().await;
    let mut idle_check = tokio::time::interval(Duration::from_secs(1));
    loop {
        let (process, service) = (&mut conn.process, &conn.service);
        let exited = async {
            match process.as_mut() {
                Some(p) => p.exited().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            why = exited => {
                return Ended::Failed(why);
            }
            () = wait_closed(service) => {
                return Ended::Failed("the connection closed".into());
            }
            Some(()) = list_changed.recv() => {
                if let Err(e) = list(up, &conn).await {
                    return Ended::Failed(e);
                }
            }
            h = listen::next(&mut heard) => match h {
                listen::Heard::ListChanged => {
                    if let Err(e) = list(up, &conn).await {
                        return Ended::Failed(e);
                    }
                }
                listen::Heard::ResourceUpdated(uri) => {
                    let _ = up.events.send(Event::ResourceUpdated { server: up.def.name.clone(), uri });
                }
                listen::Heard::Other | listen::Heard::Ended => {}
            },
            _ = relist.tick() => {
                if let Err(e) = list(up, &conn).await {
                    return Ended::Failed(e);
                }
                if modern && heard.is_none() {
                    heard = listen::open(&up.def.name, conn.service.peer(), &watched()).await;
                }
            }
            c = control.recv() => match c {
                Some(Control::Refresh) => {
                    if let Err(e) = list(up, &conn).await {
                        return Ended::Failed(e);
                    }
                }
                Some(Control::Start) => {}
                Some(Control::Rewatch) => {
                    if modern {
                        if let Some(mut old) = heard.take() {
                            let _ = old.cancel().await;
                        }
                        heard = listen::open(&up.def.name, conn.service.peer(), &watched()).await;
                    }
                }
                Some(Control::Stop) | None => return Ended::Stop,
                Some(Control::Refused(why)) => return Ended::Failed(why),
            },
            _ = idle_check.tick(), if idle_after.is_some() => {
                let idle = lock(&up.state).last_used.elapsed();
                if idle_after.is_some_and(|after| idle >= after) {
                    tracing::info!(server = %up.def.name, "MCP server idle for {} s; stopping it", idle.as_secs());
                    return Ended::Idle;
                }
            }
        }
    }
}

/// Resolves when the MCP service ended (the transport closed).
async fn wait_closed(service: &rmcp::service::RunningService<rmcp::service::RoleClient, Handler>) {
    loop {
        if service.is_closed() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
