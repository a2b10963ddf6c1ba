//! OAuth connections to upstream MCP servers (SPEC §11, `auth: oauth`): an admin connects a
//! server once (its shared connection) — [`Gateway::connect`] begins the authorization and
//! answers the URL where a person consents; the authorization server sends the browser back
//! to `/oauth/callback`, which [`Gateway::finish_authorization`] turns into tokens, kept in
//! the registry sealed with its key ([`RegistryTokens`]), and the server is connected again
//! with them. [`Gateway::disconnect`] forgets them.
//!
//! An authorization waits for its callback in this process ([`Authorizations`], at most
//! [`WAIT`]): behind a load balancer the callback must reach the replica that began it
//! (sticky routing for `/oauth/`), or the connect is simply begun again. The tokens
//! themselves are in the registry, shared by every replica.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Value, json};
use toolsmith_exec::upstream::{Begun, TokenStore};
use toolsmith_store::{Registry, UpstreamStore};

use crate::Gateway;

/// How long an authorization begun waits for its callback.
pub const WAIT: Duration = Duration::from_secs(15 * 60);

/// Where the authorization server sends the browser back, under the server's public URL.
pub const CALLBACK_PATH: &str = "/oauth/callback";

/// Where toolsmith's OAuth client metadata document is served (a Client ID Metadata
/// Document: its URL is toolsmith's client id where the authorization server accepts one).
pub const CLIENT_METADATA_PATH: &str = "/oauth/client-metadata.json";

/// The registry as the place OAuth tokens are kept (sealed with its key), and the locks that
/// make their refreshes take turns: one per connection in this process, then the registry's
/// across replicas.
pub struct RegistryTokens(pub Registry, Mutex<RefreshLocks>);

/// One lock per connection (server, subject) in this process.
type RefreshLocks = HashMap<(String, String), Arc<tokio::sync::Mutex<()>>>;

impl RegistryTokens {
    pub fn new(registry: Registry) -> Self {
        Self(registry, Mutex::default())
    }
}

#[async_trait::async_trait]
impl TokenStore for RegistryTokens {
    async fn load(&self, server: &str, subject: &str) -> Result<Option<String>, String> {
        self.0
            .connection(server, subject)
            .await
            .map_err(|e| e.to_string())
    }

    async fn save(&self, server: &str, subject: &str, credentials: &str) -> Result<(), String> {
        self.0
            .put_connection(server, subject, credentials)
            .await
            .map_err(|e| e.to_string())
    }

    async fn clear(&self, server: &str, subject: &str) -> Result<(), String> {
        self.0
            .drop_connection(server, subject)
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    async fn lock(&self, server: &str, subject: &str) -> Result<Option<Box<dyn Send>>, String> {
        let here = {
            let mut locks = self.1.lock().unwrap_or_else(|e| e.into_inner());
            locks
                .entry((server.to_owned(), subject.to_owned()))
                .or_default()
                .clone()
        };
        let here = here.lock_owned().await;
        let everywhere =
            self.0.lock_connection(server, subject).await.map_err(|e| {
                format!("locking the OAuth connection of {server} for a refresh: {e}")
            })?;
        Ok(Some(Box::new((here, everywhere))))
    }
}

/// The authorizations begun here, by their `state`; and how browsers reach this server when
/// no public URL is set (its listening address).
#[derive(Default)]
pub(crate) struct Authorizations(
    Mutex<HashMap<String, (Arc<Begun>, Instant)>>,
    std::sync::OnceLock<String>,
);

impl Authorizations {
    fn put(&self, begun: Begun) -> Arc<Begun> {
        let begun = Arc::new(begun);
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        map.retain(|_, (_, at)| at.elapsed() < WAIT);
        map.insert(begun.state.clone(), (begun.clone(), Instant::now()));
        begun
    }

    /// The URL of an authorization begun for `subject` with `server` that waits still (for
    /// at least a few minutes more): a call that needs it again is given the same.
    fn waiting(&self, server: &str, subject: &str) -> Option<String> {
        let map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        map.values()
            .filter(|(b, at)| {
                b.server == server
                    && b.subject == subject
                    && at.elapsed() + Duration::from_secs(300) < WAIT
            })
            .map(|(b, _)| b.url.clone())
            .next()
    }

    /// The authorization `state` names (taken: a callback is used once).
    fn take(&self, state: &str) -> Option<Arc<Begun>> {
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        map.remove(state)
            .filter(|(_, at)| at.elapsed() < WAIT)
            .map(|(b, _)| b)
    }
}

/// An authorization begun: where to send the person who consents.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Started {
    pub server: String,
    /// Open this in a browser: the authorization server's consent page.
    pub authorization_url: String,
    /// Where the authorization server sends the browser back (register it with a
    /// pre-registered client).
    pub redirect_uri: String,
    /// How long the authorization waits for that, in seconds.
    pub expires_in: u64,
}

/// Why a connection could not begin or finish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConnectError {
    /// No server of that name.
    Unknown(String),
    /// The server does not use OAuth.
    NotOAuth(String),
    /// A user connected a server that has one shared connection (an admin's).
    Shared(String),
    /// The server takes each caller's identity provider token (exchanged or forwarded):
    /// nobody connects it.
    Exchanging(String),
    /// The callback names no authorization begun here (or it expired).
    NoSuchAuthorization,
    /// Discovery, registration, the consent or the token exchange failed: why.
    Failed(String),
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unknown(name) => write!(f, "no MCP server named `{name}`"),
            Self::NotOAuth(name) => write!(
                f,
                "MCP server `{name}` does not use OAuth (its answers name no authorization server; give it `auth: oauth` if it does)"
            ),
            Self::Shared(name) => write!(
                f,
                "MCP server `{name}` has one shared connection, which an admin connects (`toolsmith servers connect {name}`); give it `connection: per_user` for each user to connect their own account"
            ),
            Self::Exchanging(name) => write!(
                f,
                "MCP server `{name}` is reached with each caller's own identity provider token (`connection: exchange` or `forward`): there is nothing to connect"
            ),
            Self::NoSuchAuthorization => f.write_str(
                "no authorization waits for this callback here (it was used, it expired after 15 minutes, or another replica began it): connect again",
            ),
            Self::Failed(why) => f.write_str(why),
        }
    }
}

/// That a server's OAuth connection exists (never its tokens).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ConnectionInfo {
    pub server: String,
    /// `""`: the server's shared connection.
    pub subject: String,
    /// When it was connected or last refreshed (ms since the epoch).
    pub at_ms: i64,
}

impl Gateway {
    /// Begins the authorization of `subject`'s connection (`""`: the shared one) to the OAuth
    /// server `name`; `base` is how browsers reach this server (its public URL).
    pub async fn connect(
        &self,
        name: &str,
        subject: &str,
        base: &str,
    ) -> Result<Started, ConnectError> {
        let upstreams = self.engine.upstreams();
        let def = upstreams
            .definition(name)
            .ok_or_else(|| ConnectError::Unknown(name.to_owned()))?;
        if !upstreams.uses_oauth(name).await {
            return Err(ConnectError::NotOAuth(name.to_owned()));
        }
        if def.resolved_oauth().is_some_and(|o| o.exchange.is_some()) {
            return Err(ConnectError::Exchanging(name.to_owned()));
        }
        let oauth = def.resolved_oauth().unwrap_or_default();
        let base = base.trim_end_matches('/');
        let redirect_uri = format!("{base}{CALLBACK_PATH}");
        // A Client ID Metadata Document must be served over https: the one the operator
        // hosts, else the one served here.
        let metadata_url = oauth.client_metadata_url.or_else(|| {
            base.starts_with("https://")
                .then(|| format!("{base}{CLIENT_METADATA_PATH}"))
        });
        let begun = upstreams
            .begin_authorization(name, subject, &redirect_uri, metadata_url.as_deref())
            .await
            .map_err(ConnectError::Failed)?;
        let begun = self.authorizations.put(begun);
        tracing::info!(server = name, "OAuth authorization begun");
        Ok(Started {
            server: name.to_owned(),
            authorization_url: begun.url.clone(),
            redirect_uri,
            expires_in: WAIT.as_secs(),
        })
    }

    /// The callback of an authorization begun here: its `code` exchanged for tokens (kept),
    /// and the server connected with them. The server's name.
    pub async fn finish_authorization(
        &self,
        state: &str,
        code: Option<&str>,
        error: Option<&str>,
        iss: Option<&str>,
    ) -> Result<String, ConnectError> {
        let begun = self
            .authorizations
            .take(state)
            .ok_or(ConnectError::NoSuchAuthorization)?;
        if let Some(error) = error {
            return Err(ConnectError::Failed(format!(
                "the authorization server refused: {error}"
            )));
        }
        let code = code.ok_or_else(|| {
            ConnectError::Failed("the callback carries no authorization code".into())
        })?;
        begun
            .finish(code, iss)
            .await
            .map_err(ConnectError::Failed)?;
        tracing::info!(server = %begun.server, "OAuth connection made");
        match begun.subject.as_str() {
            "" => {
                self.engine.upstreams().restart(&begun.server);
            }
            subject => self
                .engine
                .upstreams()
                .drop_user_connection(&begun.server, subject),
        }
        Ok(begun.server.clone())
    }

    /// Whether server `name` authorizes with OAuth (`auth: oauth`, or found so).
    pub async fn uses_oauth(&self, name: &str) -> bool {
        self.engine.upstreams().uses_oauth(name).await
    }

    /// Forgets `subject`'s tokens for server `name` (`""`: the shared connection, after
    /// which the server needs authorization again): whether there were any.
    pub async fn disconnect(&self, name: &str, subject: &str) -> Result<bool, ConnectError> {
        let dropped = self
            .store
            .drop_connection(name, subject)
            .await
            .map_err(|e| ConnectError::Failed(e.to_string()))?;
        match subject {
            "" if dropped => {
                self.engine.upstreams().restart(name);
            }
            "" => {}
            subject => self.engine.upstreams().drop_user_connection(name, subject),
        }
        Ok(dropped)
    }

    /// The OAuth connections of server `name` (or every server) that exist.
    pub async fn connections(
        &self,
        name: Option<&str>,
    ) -> Result<Vec<ConnectionInfo>, crate::GatewayError> {
        Ok(self
            .store
            .connections(name)
            .await?
            .into_iter()
            .map(|c| ConnectionInfo {
                server: c.server,
                subject: c.subject,
                at_ms: c.at_ms,
            })
            .collect())
    }
}

/// One per-user server as one user sees it: whether that user's own connection is made.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MyConnection {
    pub server: String,
    /// Whether this user's tokens are kept (their calls go as them).
    pub connected: bool,
    /// When it was connected or last refreshed (ms since the epoch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at_ms: Option<i64>,
}

impl Gateway {
    /// How browsers reach this server when no public URL is set: its listening address
    /// (`http://127.0.0.1:7790`), set once by `serve`.
    pub fn set_local_url(&self, url: String) {
        let _ = self.authorizations.1.set(url);
    }

    /// Where an authorization's callback is reached: the public URL, else the listening
    /// address.
    pub fn callback_base(&self) -> Option<String> {
        self.public_url()
            .map(str::to_owned)
            .or_else(|| self.authorizations.1.get().cloned())
    }

    /// Begins `subject`'s authorization of its own connection to the per-user server `name`.
    pub async fn connect_user(
        &self,
        name: &str,
        subject: &str,
        base: &str,
    ) -> Result<Started, ConnectError> {
        let upstreams = self.engine.upstreams();
        // (An unknown server is `connect`'s to say.)
        if upstreams.definition(name).is_some() && !upstreams.per_user(name) {
            return Err(ConnectError::Shared(name.to_owned()));
        }
        self.connect(name, subject, base).await
    }

    /// The per-user servers (`connection: per_user`), each with whether `subject` connected
    /// its own account.
    pub async fn my_connections(
        &self,
        subject: &str,
    ) -> Result<Vec<MyConnection>, crate::GatewayError> {
        let upstreams = self.engine.upstreams();
        let mine: HashMap<String, i64> = self
            .store
            .connections(None)
            .await?
            .into_iter()
            .filter(|c| c.subject == subject)
            .map(|c| (c.server, c.at_ms))
            .collect();
        Ok(upstreams
            .names()
            .into_iter()
            .filter(|name| upstreams.per_user(name))
            .map(|server| MyConnection {
                connected: mine.contains_key(&server),
                at_ms: mine.get(&server).copied(),
                server,
            })
            .collect())
    }

    /// A call's `needs_authorization` on a per-user server, with the URL where its caller
    /// connects their own account (an authorization begun for them) when this server knows
    /// how browsers reach it.
    pub(crate) async fn with_authorization_url(
        &self,
        server: &str,
        subject: &str,
        result: toolsmith_core::ToolResult,
    ) -> toolsmith_core::ToolResult {
        let Some(base) = self.callback_base() else {
            return result;
        };
        let url = match self.authorizations.waiting(server, subject) {
            Some(url) => Ok(url),
            None => self
                .connect_user(server, subject, &base)
                .await
                .map(|s| s.authorization_url),
        };
        match url {
            Ok(url) => {
                let mut result = result;
                if let Some(error) = result.error.as_mut() {
                    error.message = format!("{}; open {url} to connect yours", error.message);
                }
                result.with_output(json!({ "authorization_url": url }))
            }
            Err(e) => {
                tracing::info!(
                    server,
                    "no authorization URL for a call that needs one: {e}"
                );
                result
            }
        }
    }
}

/// toolsmith's OAuth client metadata (a Client ID Metadata Document) as served under
/// `base`: a public client using the authorization code with PKCE, sent back to the callback.
pub fn client_metadata(base: &str) -> Value {
    let base = base.trim_end_matches('/');
    json!({
        "client_id": format!("{base}{CLIENT_METADATA_PATH}"),
        "client_name": "toolsmith",
        "client_uri": base,
        "redirect_uris": [format!("{base}{CALLBACK_PATH}")],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": "web",
    })
}
