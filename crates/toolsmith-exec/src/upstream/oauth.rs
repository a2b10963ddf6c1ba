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
//! they expire and once on a 401, and otherwise fails with [`needs_authorization`]'s message
//! — the server's own challenge kept for the next authorization to start from.

use std::sync::Arc;

use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationRequest, AuthorizationSession,
    CredentialRefreshGuard, CredentialStore, StoredCredentials,
};
use toolsmith_core::upstream::McpServer;

/// Where OAuth connections' credentials are kept: the registry, sealed with its key.
#[async_trait::async_trait]
pub trait TokenStore: Send + Sync {
    /// The credentials (rmcp's stored form, JSON) of `server` for `subject`.
    async fn load(&self, server: &str, subject: &str) -> Result<Option<String>, String>;
    async fn save(&self, server: &str, subject: &str, credentials: &str) -> Result<(), String>;
    async fn clear(&self, server: &str, subject: &str) -> Result<(), String>;
    /// Holds the refresh of `server`'s credentials for `subject` until the returned value is
    /// dropped: one refresh at a time — in this process and, where the store is shared, on
    /// every replica — each reading what the one before it saved (a refresh token is good
    /// once). `None`: no coordination.
    async fn lock(&self, _server: &str, _subject: &str) -> Result<Option<Box<dyn Send>>, String> {
        Ok(None)
    }
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

    /// The authorization server refused the refresh token for good (revoked, expired): the
    /// credentials are forgotten, so the connection needs authorization — and nothing tries
    /// the dead token again. (Called under the refresh guard; credentials another refresh
    /// replaced since are left alone.)
    async fn on_refresh_token_rejected(
        &self,
        credentials: &StoredCredentials,
    ) -> Result<(), AuthError> {
        // (Read from the stored form: the token type's accessors are oauth2's.)
        let refresh = |c: &StoredCredentials| {
            serde_json::to_value(c)
                .ok()
                .map(|v| v["token_response"]["refresh_token"].clone())
        };
        if let Some(now) = self.load().await?
            && refresh(&now) == refresh(credentials)
        {
            tracing::warn!(server = %self.server, "the authorization server refused the refresh token: the connection needs authorization again");
            self.clear().await?;
        }
        Ok(())
    }

    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        Ok(self
            .tokens
            .lock(&self.server, &self.subject)
            .await
            .map_err(store_error)?
            .map(CredentialRefreshGuard::new))
    }
}

impl super::Upstreams {
    /// Keeps OAuth connections' tokens in `tokens` (once; later calls change nothing).
    pub fn set_token_store(&self, tokens: Arc<dyn TokenStore>) {
        let _ = self.inner.spawning.tokens.set(tokens);
    }

    /// Begins an authorization of `subject` (`""`: the shared connection) with the OAuth
    /// server `name`: the URL to open. The browser comes back to `redirect_uri`.
    pub async fn begin_authorization(
        &self,
        name: &str,
        subject: &str,
        redirect_uri: &str,
        client_metadata_url: Option<&str>,
    ) -> Result<Begun, String> {
        let def = self
            .definition(name)
            .ok_or_else(|| format!("no MCP server named `{name}`"))?;
        let tokens = self.token_store()?;
        let challenge = self
            .get(name)
            .and_then(|up| super::lock(&up.auth_challenge).clone());
        begin(
            &def,
            tokens,
            subject,
            redirect_uri,
            client_metadata_url,
            challenge,
        )
        .await
    }

    /// Whether server `name` authorizes with OAuth: `auth: oauth`, or found so — its 401
    /// named its protected resource metadata (RFC 9728), or it has been connected.
    pub async fn uses_oauth(&self, name: &str) -> bool {
        let Some(up) = self.get(name) else {
            return false;
        };
        uses(&up).await
    }

    fn token_store(&self) -> Result<Arc<dyn TokenStore>, String> {
        self.inner
            .spawning
            .tokens
            .get()
            .cloned()
            .ok_or_else(|| "no place to keep OAuth tokens (this engine has no registry)".into())
    }
}

/// Whether `up` authorizes with OAuth: `auth: oauth`, or [`found`] so.
pub(crate) async fn uses(up: &super::Upstream) -> bool {
    up.def.resolved_oauth().is_some() || found(up).await
}

/// Whether an HTTP server given no `auth: oauth` turned out to use it: its 401 named its
/// protected resource metadata, or it has tokens (it was connected so). Never one given its
/// own `Authorization` header.
async fn found(up: &super::Upstream) -> bool {
    let toolsmith_core::upstream::Transport::Http { headers, .. } = &up.def.transport else {
        return false;
    };
    if headers
        .keys()
        .any(|k| k.eq_ignore_ascii_case("authorization"))
    {
        return false;
    }
    if super::lock(&up.auth_challenge)
        .as_deref()
        .is_some_and(|c| c.contains("resource_metadata"))
    {
        return true;
    }
    match up.spawning.tokens.get() {
        Some(tokens) => matches!(tokens.load(&up.def.name, "").await, Ok(Some(_))),
        None => false,
    }
}

/// A call's failure when the server refused a request for want of scope (403
/// `insufficient_scope`, which ends the connection): it needs authorization, with more.
pub(crate) fn wants_more_scope(up: &super::Upstream) -> Option<super::UpstreamError> {
    let challenge = super::lock(&up.auth_challenge).clone()?;
    if !challenge.contains("insufficient_scope") {
        return None;
    }
    let scope = scope_of(&challenge)
        .map(|s| format!(" ({s})"))
        .unwrap_or_default();
    Some(super::UpstreamError::NeedsAuthorization(format!(
        "{}: the server asks for more scope{scope} than toolsmith was granted; connecting it again asks for it",
        needs_authorization(&up.def.name)
    )))
}

/// What [`needs_authorization`]'s message starts with.
pub(crate) const NEEDS_AUTHORIZATION: &str = "needs authorization:";

/// The `scope` a `WWW-Authenticate` challenge asks for.
pub(crate) fn scope_of(challenge: &str) -> Option<String> {
    let at = challenge.find("scope=")? + "scope=".len();
    let rest = &challenge[at..];
    let value = match rest.strip_prefix('"') {
        Some(quoted) => &quoted[..quoted.find('"')?],
        None => rest.split([',', ' ']).next()?,
    };
    (!value.is_empty()).then(|| value.to_owned())
}

/// What a connection without tokens fails with (the words the status and errors carry).
pub fn needs_authorization(server: &str) -> String {
    format!(
        "{NEEDS_AUTHORIZATION} MCP server `{server}` uses OAuth and has not been connected (`toolsmith servers connect {server}`, or Connect on its page in the web UI)"
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

/// A manager holding `subject`'s tokens for `def`'s server, ready to send them — or none,
/// when there are none (or they were for another authorization server): requests then go
/// without a token, and the server's 401 is the connection's [`needs_authorization`].
pub(crate) async fn authorized(
    def: &McpServer,
    tokens: Arc<dyn TokenStore>,
    subject: &str,
) -> Result<AuthorizationManager, String> {
    let mut manager = manager(def, tokens, subject).await?;
    match manager.initialize_from_store().await {
        Ok(_) => Ok(manager),
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

/// The HTTP client of an HTTP upstream: its connection's, and the OAuth probe of its 401.
pub(super) fn http_client() -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .connect_timeout(std::time::Duration::from_secs(10))
        .user_agent(concat!("toolsmith/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("the HTTP client could not start: {e}"))
}

/// The server's challenge to a request without a token: its `WWW-Authenticate` (the scope
/// it asks for, where its metadata is), `None` when it did not answer 401. Asked as the
/// handshake of the server's era would be (a server may check the request's protocol
/// headers before its token).
async fn challenge(def: &McpServer) -> Option<String> {
    use toolsmith_core::upstream::Protocol;
    let url = def.resolved_url()?;
    let client = http_client().ok()?;
    let client_info =
        serde_json::json!({"name": "toolsmith", "version": env!("CARGO_PKG_VERSION")});
    let initialize = (
        "2025-11-25",
        "initialize",
        serde_json::json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": client_info}),
    );
    let discover = (
        "2026-07-28",
        "server/discover",
        serde_json::json!({"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": client_info,
            "io.modelcontextprotocol/clientCapabilities": {},
        }}),
    );
    let probes = match def.protocol {
        Protocol::Modern => vec![discover],
        Protocol::Legacy => vec![initialize],
        Protocol::Auto => vec![initialize, discover],
    };
    for (version, method, params) in probes {
        let mut request = client
            .post(&url)
            .timeout(std::time::Duration::from_secs(30))
            .header("Accept", "application/json, text/event-stream")
            .header("Content-Type", "application/json")
            .header("MCP-Protocol-Version", version)
            .header("Mcp-Method", method);
        for (k, v) in def.resolved_headers() {
            request = request.header(k, v);
        }
        let body =
            serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": method, "params": params});
        let Ok(response) = request.body(body.to_string()).send().await else {
            continue;
        };
        if response.status() == reqwest::StatusCode::UNAUTHORIZED {
            return response
                .headers()
                .get(reqwest::header::WWW_AUTHENTICATE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
        }
    }
    None
}

/// Begins an authorization of `subject` with `def`'s server: discovery, registration, and
/// the URL to open. The authorization server sends the browser back to `redirect_uri`.
/// `client_metadata_url` is where toolsmith's Client ID Metadata Document is served (an https
/// URL), used when the server accepts one and no client id is configured; `step_up` is the
/// server's `WWW-Authenticate` refusing a call for want of scope, when it did.
pub async fn begin(
    def: &McpServer,
    tokens: Arc<dyn TokenStore>,
    subject: &str,
    redirect_uri: &str,
    client_metadata_url: Option<&str>,
    step_up: Option<String>,
) -> Result<Begun, String> {
    // `auth: oauth` as written, or found so (the caller checked): the defaults.
    let oauth = def.resolved_oauth().unwrap_or_default();
    let mut manager = manager(def, tokens.clone(), subject).await?;
    // The server's refusal for want of scope, else its answer to a request without a token.
    let stepping_up = step_up.clone();
    let challenge = match step_up {
        Some(c) => Some(c),
        None => challenge(def).await,
    };
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
    } else if let Some(wanted) = stepping_up.as_deref().and_then(scope_of) {
        // More scope: what was granted before and what the server asks for now (a new
        // authorization replaces the old one, which must not lose what it allowed).
        let mut scopes = match tokens.load(&def.name, subject).await {
            Ok(Some(text)) => serde_json::from_str::<StoredCredentials>(&text)
                .map(|c| c.granted_scopes)
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        for s in wanted.split_whitespace() {
            if !scopes.iter().any(|g| g == s) {
                scopes.push(s.to_owned());
            }
        }
        request = request.with_scopes(scopes);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scope_a_challenge_asks_for() {
        assert_eq!(
            scope_of(r#"Bearer scope="mcp:write files:read", error="insufficient_scope""#)
                .as_deref(),
            Some("mcp:write files:read")
        );
        assert_eq!(
            scope_of("Bearer scope=repo, realm=x").as_deref(),
            Some("repo")
        );
        assert_eq!(scope_of(r#"Bearer resource_metadata="https://x/y""#), None);
        assert_eq!(scope_of(r#"Bearer scope="""#), None);
    }

    #[test]
    fn the_state_of_an_authorization_url() {
        assert_eq!(
            state_of("https://as.example/authorize?client_id=a&state=s%2B1&x=y").as_deref(),
            Some("s+1")
        );
        assert_eq!(state_of("https://as.example/authorize?client_id=a"), None);
    }
}
