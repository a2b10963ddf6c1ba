//! RFC 8693 token exchange (`auth: {type: oauth, connection: exchange, token_endpoint}`): an
//! upstream that trusts the same identity provider as toolsmith's callers is reached, for each
//! call, with a token the identity provider issued for that upstream in exchange for the
//! caller's own JWT — the upstream sees the caller (its subject), with itself as the audience,
//! and never the token the caller gave toolsmith. The shared connection, which lists, carries
//! toolsmith's own token from the same endpoint (client credentials).
//!
//! `connection: forward` sends the caller's own JWT instead, only when its audience includes
//! the server's (issued for the server too, never a token meant for toolsmith alone).
//!
//! Tokens are kept in memory only, per caller, until 30 seconds before they expire, and only
//! for the JWT they were exchanged for (a caller with a new JWT gets a new exchange).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use toolsmith_core::upstream::{OAuth, TokenExchange};

use super::{SubjectToken, Upstream, UpstreamError, lock};

/// How long before it expires an exchanged token is exchanged again.
const EARLY: Duration = Duration::from_secs(30);

/// The token exchanged for each caller (`""`: toolsmith's own).
pub(crate) type Exchanges = Mutex<HashMap<String, Exchanged>>;

/// One exchanged token: what it is, until when it is used, and a digest of the JWT it was
/// exchanged for.
pub(crate) struct Exchanged {
    token: String,
    until: Instant,
    from: u64,
}

/// RFC 8693's names.
const GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS_TOKEN: &str = "urn:ietf:params:oauth:token-type:access_token";

impl Upstream {
    /// The exchange settings of a `connection: exchange` server.
    pub(crate) fn exchange(&self) -> Option<(OAuth, TokenExchange)> {
        let oauth = self.def.resolved_oauth()?;
        let exchange = oauth.exchange.clone()?;
        Some((oauth, exchange))
    }

    /// The token a request of `subject` carries: `token` (the caller's JWT) exchanged at the
    /// identity provider, or — for the shared connection (`""`) — toolsmith's own by client
    /// credentials; the one kept while it lasts.
    pub(crate) async fn exchanged(
        &self,
        subject: &str,
        token: Option<&SubjectToken>,
    ) -> Result<String, UpstreamError> {
        let (oauth, exchange) = self.exchange().ok_or_else(|| {
            UpstreamError::Failed(format!(
                "MCP server `{}` exchanges no tokens",
                self.def.name
            ))
        })?;
        if exchange.forward && !subject.is_empty() {
            return self.forwarded(subject, token, &exchange);
        }
        let from = digest(token.map_or("", |t| &t.0));
        if let Some(kept) = lock(&self.exchanges).get(subject)
            && kept.from == from
            && Instant::now() < kept.until
        {
            return Ok(kept.token.clone());
        }
        let audience = exchange
            .audience
            .clone()
            .or_else(|| self.def.resolved_url())
            .unwrap_or_default();
        let mut form = vec![("audience", audience)];
        if !oauth.scopes.is_empty() {
            form.push(("scope", oauth.scopes.join(" ")));
        }
        match (subject, token) {
            ("", _) => form.push(("grant_type", "client_credentials".to_owned())),
            (_, Some(token)) => form.extend([
                ("grant_type", GRANT.to_owned()),
                ("subject_token", token.0.to_string()),
                ("subject_token_type", ACCESS_TOKEN.to_owned()),
                ("requested_token_type", ACCESS_TOKEN.to_owned()),
            ]),
            (subject, None) => {
                return Err(UpstreamError::NeedsAuthorization(format!(
                    "{} MCP server `{}` is reached as each caller with their own identity provider's token (RFC 8693 token exchange), and {subject} called without one: call it with a JWT from that identity provider",
                    super::oauth::NEEDS_AUTHORIZATION,
                    self.def.name
                )));
            }
        }
        let (access, lasts) = request(&exchange.token_endpoint, &oauth, &form)
            .await
            .map_err(|why| {
                let whose = match subject {
                    "" => "toolsmith's own token".to_owned(),
                    s => format!("{s}'s token"),
                };
                UpstreamError::NeedsAuthorization(format!(
                    "{} the identity provider did not exchange {whose} for MCP server `{}`: {why}",
                    super::oauth::NEEDS_AUTHORIZATION,
                    self.def.name
                ))
            })?;
        let until = Instant::now()
            + lasts
                .unwrap_or(Duration::from_secs(300))
                .saturating_sub(EARLY);
        lock(&self.exchanges).insert(
            subject.to_owned(),
            Exchanged {
                token: access.clone(),
                until,
                from,
            },
        );
        Ok(access)
    }
}

impl Upstream {
    /// A `connection: forward` server's token for `subject`: its own JWT, when it was issued
    /// for the server too (its `aud` includes the server's audience) — never a token meant
    /// for toolsmith alone.
    fn forwarded(
        &self,
        subject: &str,
        token: Option<&SubjectToken>,
        exchange: &TokenExchange,
    ) -> Result<String, UpstreamError> {
        let name = &self.def.name;
        let audience = exchange.audience.as_deref().unwrap_or_default();
        let refused = |why: String| {
            UpstreamError::NeedsAuthorization(format!(
                "{} MCP server `{name}` is sent each caller's own token when it is for the server too, and {why}",
                super::oauth::NEEDS_AUTHORIZATION
            ))
        };
        let Some(token) = token else {
            return Err(refused(format!("{subject} called without a JWT")));
        };
        let audiences = audiences_of(&token.0);
        if !audiences.iter().any(|a| a == audience) {
            let given = match audiences.as_slice() {
                [] => "not given".to_owned(),
                all => all
                    .iter()
                    .map(|a| format!("`{a}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
            };
            return Err(refused(format!(
                "{subject}'s token is not (its audience is {given}, not `{audience}`)"
            )));
        }
        Ok(token.0.to_string())
    }
}

/// The `aud` of a JWT (one or many), read from its payload: toolsmith verified the token's
/// signature when the caller presented it.
fn audiences_of(jwt: &str) -> Vec<String> {
    use base64::Engine as _;
    let claims = jwt
        .split('.')
        .nth(1)
        .and_then(|p| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(p)
                .ok()
        })
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .unwrap_or_default();
    match &claims["aud"] {
        serde_json::Value::String(a) => vec![a.clone()],
        serde_json::Value::Array(all) => all
            .iter()
            .filter_map(|a| a.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

/// One token request: the access token and how long it lasts.
async fn request(
    endpoint: &str,
    oauth: &OAuth,
    form: &[(&str, String)],
) -> Result<(String, Option<Duration>), String> {
    let client = super::oauth::http_client()?;
    let mut request = client
        .post(endpoint)
        .timeout(Duration::from_secs(30))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .header("Accept", "application/json");
    let mut form = form.to_vec();
    match (&oauth.client_id, &oauth.client_secret) {
        (Some(id), Some(secret)) => request = request.basic_auth(id, Some(secret)),
        (Some(id), None) => form.push(("client_id", id.clone())),
        _ => {}
    }
    let body = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form)
        .finish();
    let response = request
        .body(body)
        .send()
        .await
        .map_err(|e| format!("its token endpoint did not answer ({e})"))?;
    let status = response.status();
    let text = response
        .text()
        .await
        .map_err(|e| format!("its answer could not be read ({e})"))?;
    let answer: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    if !status.is_success() {
        return Err(format!(
            "HTTP {status}: {}",
            answer["error_description"]
                .as_str()
                .or(answer["error"].as_str())
                .unwrap_or("no error said")
        ));
    }
    let token = answer["access_token"]
        .as_str()
        .filter(|t| !t.is_empty())
        .ok_or("its answer has no access_token")?;
    let lasts = answer["expires_in"].as_u64().map(Duration::from_secs);
    Ok((token.to_owned(), lasts))
}

/// A hash of a JWT (what a kept token is good for; the JWT itself is not kept).
fn digest(token: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    token.hash(&mut h);
    h.finish()
}
