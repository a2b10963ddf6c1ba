//! OAuth 2.1 to HTTP upstreams (`auth: oauth`, SPEC §11), on rmcp's authorization client:
//! discovery from the server's 401 (`WWW-Authenticate`, RFC 9728 protected resource
//! metadata, RFC 8414 / OpenID authorization server metadata, issuer checks), client
//! registration (a pre-registered id and secret, a Client ID Metadata Document, or dynamic
//! registration), authorization code with PKCE S256 and the `resource` indicator, scopes from
//! the challenge then the metadata, refresh.
//!
//! An authorization is [`begin`]: it yields the URL a person opens to consent; the
//! authorization server sends the browser back to toolsmith's callback, which [`Begun::finish`]
//! turns into tokens. The tokens are kept through a [`TokenStore`] (the registry, sealed with
//! its key) under the server's name and a subject (`""`: the server's shared connection), and
//! read back by every connection ([`authorized`]), which sends them, refreshes them before
//! they expire and once on a 401, and otherwise fails with [`needs_authorization`]'s message.

use std::sync::Arc;

use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationRequest, AuthorizationSession, CredentialStore,
    StoredCredentials,
};
use toolsmith_core::upstream::McpServer;

/// Where OAuth connections' credentials are kept: the registry, sealed with its key.
#[async_trait::async_trait]
pub trait TokenStore: Send + Sync {
    /// The credentials (rmcp's stored form, JSON) of `server` for `subject`.
    async fn load(&self, server: &str, subject: &str) -> Result<Option<String>, String>;
    async fn save(&self, server: &str, subject: &str, credentials: &str) -> Result<(), String>;
    async fn clear(&self, server: &str, subject: &str) -> Result<(), String>;
}

impl std::fmt::Debug for dyn TokenStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenStore")
    }
}

/// One connection's credentials in a [`TokenStore`], as rmcp's credential store.
struct Kept {
    tokens: Arc<dyn TokenStore>,
    server: String,
    subject: String,
}

fn store_error(e: String) -> AuthError {
    AuthError::CredentialStoreError(e)
}

#[async_trait::async_trait]
impl CredentialStore for Kept {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let Some(text) = self
            .tokens
            .load(&self.server, &self.subject)
            .await
            .map_err(store_error)?
        else {
            return Ok(None);
        };
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| store_error(format!("stored credentials of {}: {e}", self.server)))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let text = serde_json::to_string(&credentials)
            .map_err(|e| store_error(format!("credentials of {}: {e}", self.server)))?;
        self.tokens
            .save(&self.server, &self.subject, &text)
            .await
            .map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.tokens
            .clear(&self.server, &self.subject)
            .await
            .map_err(store_error)
    }
}

/// What a connection without tokens fails with (the words the status and errors carry).
pub fn needs_authorization(server: &str) -> String {
    format!(
        "needs authorization: MCP server `{server}` uses OAuth and has not been connected (`toolsmith servers connect {server}`, or Connect on its page in the web UI)"
    )
}

/// A manager for `def`'s server whose credentials are `subject`'s in `tokens`.
async fn manager(
    def: &McpServer,
    tokens: Arc<dyn TokenStore>,
    subject: &str,
) -> Result<AuthorizationManager, String> {
    let url = def.resolved_url().unwrap_or_default();
    // Hosts named by the metadata may be private (or loopback) addresses only when the
    // server's own URL is one of the same kind (rmcp's resolver checks each).
    let mut manager = AuthorizationManager::new(url.as_str())
        .await
        .map_err(|e| format!("OAuth for {}: {e}", def.name))?;
    manager.set_credential_store(Kept {
        tokens,
        server: def.name.clone(),
        subject: subject.to_owned(),
    });
    Ok(manager)
}

/// A manager holding `subject`'s tokens for `def`'s server, ready to send them; the
/// [`needs_authorization`] message when there are none.
pub(crate) async fn authorized(
    def: &McpServer,
    tokens: Arc<dyn TokenStore>,
    subject: &str,
) -> Result<AuthorizationManager, String> {
    let mut manager = manager(def, tokens, subject).await?;
    match manager.initialize_from_store().await {
        Ok(true) => Ok(manager),
        Ok(false) => Err(needs_authorization(&def.name)),
        Err(e) => Err(format!(
            "OAuth for {}: its authorization server could not be read ({e})",
            def.name
        )),
    }
}

/// An authorization begun for one server and subject: the URL to open, and what the
/// callback needs to finish it.
pub struct Begun {
    pub server: String,
    pub subject: String,
    /// Where the person consents (the authorization server's page).
    pub url: String,
    /// The `state` the callback comes back with.
    pub state: String,
    session: AuthorizationSession,
}

impl std::fmt::Debug for Begun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Begun")
            .field("server", &self.server)
            .field("subject", &self.subject)
            .finish_non_exhaustive()
    }
}

/// The `state` parameter of an authorization URL.
pub(crate) fn state_of(url: &str) -> Option<String> {
    let url = url::Url::parse(url).ok()?;
    url.query_pairs()
        .find(|(k, _)| k == "state")
        .map(|(_, v)| v.into_owned())
}

/// The server's challenge to a request without a token: its `WWW-Authenticate` (the scope
/// it asks for, where its metadata is), `None` when it did not answer 401.
async fn challenge(def: &McpServer) -> Option<String> {
    let url = def.resolved_url()?;
    let client = reqwest::Client::builder()
        .connect_timeout(std::time::Duration::from_secs(10))
        .timeout(std::time::Duration::from_secs(30))
        .user_agent(concat!("toolsmith/", env!("CARGO_PKG_VERSION")))
        .build()
        .ok()?;
    let mut request = client
        .post(url)
        .header("Accept", "application/json, text/event-stream")
        .header("Content-Type", "application/json");
    for (k, v) in def.resolved_headers() {
        request = request.header(k, v);
    }
    let body = serde_json::json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "toolsmith", "version": env!("CARGO_PKG_VERSION")}},
    });
    let response = request.body(body.to_string()).send().await.ok()?;
    (response.status() == reqwest::StatusCode::UNAUTHORIZED)
        .then(|| {
            response
                .headers()
                .get(reqwest::header::WWW_AUTHENTICATE)?
                .to_str()
                .ok()
                .map(str::to_owned)
        })
        .flatten()
}

/// Begins an authorization of `subject` with `def`'s server: discovery, registration, and
/// the URL to open. The authorization server sends the browser back to `redirect_uri`.
/// `client_metadata_url` is where toolsmith's Client ID Metadata Document is served (an https
/// URL), used when the server accepts one and no client id is configured.
pub async fn begin(
    def: &McpServer,
    tokens: Arc<dyn TokenStore>,
    subject: &str,
    redirect_uri: &str,
    client_metadata_url: Option<&str>,
) -> Result<Begun, String> {
    let Some(oauth) = def.resolved_oauth() else {
        return Err(format!(
            "MCP server `{}` does not use OAuth (give it `auth: oauth`)",
            def.name
        ));
    };
    let mut manager = manager(def, tokens, subject).await?;
    let challenge = challenge(def).await;
    let resolution = manager
        .resolve_metadata_from_challenge(challenge.as_deref())
        .await
        .map_err(|e| {
            format!(
                "OAuth for {}: its authorization server could not be found ({e})",
                def.name
            )
        })?;
    manager.set_metadata(resolution.metadata);
    let mut request = AuthorizationRequest::new(redirect_uri).with_client_name("toolsmith");
    if !oauth.scopes.is_empty() {
        request = request.with_scopes(oauth.scopes.iter().cloned());
    }
    if let Some(id) = oauth.client_id.filter(|id| !id.is_empty()) {
        request = request.with_preregistered_client(id);
        if let Some(secret) = oauth.client_secret.filter(|s| !s.is_empty()) {
            request = request.with_client_secret(secret);
        }
    } else if let Some(url) = client_metadata_url {
        request = request.with_client_metadata_url(url);
    }
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, e)| format!("OAuth for {}: {e}", def.name))?;
    let url = session.get_authorization_url().to_owned();
    let state = state_of(&url)
        .ok_or_else(|| format!("OAuth for {}: the authorization URL has no state", def.name))?;
    Ok(Begun {
        server: def.name.clone(),
        subject: subject.to_owned(),
        url,
        state,
        session,
    })
}

impl Begun {
    /// The callback's `code` (and `iss`, RFC 9207, when the server sends one) exchanged for
    /// tokens, which are kept.
    pub async fn finish(&self, code: &str, iss: Option<&str>) -> Result<(), String> {
        self.session
            .handle_callback_with_issuer(code, &self.state, iss)
            .await
            .map(|_| ())
            .map_err(|e| format!("OAuth for {}: {e}", self.server))
    }
}
