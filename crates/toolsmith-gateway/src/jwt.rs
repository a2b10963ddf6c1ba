//! JWT bearer tokens (SPEC §14): tokens an organisation's OpenID provider issues, verified
//! against the issuer's published keys (JWKS) with `jsonwebtoken`.
//!
//! Checked: the algorithm against an allowlist (RS256, ES256, EdDSA by default; never
//! `none`; HS256 only with a configured shared secret, and then only with that secret — a
//! JWKS key is never used as an HMAC secret), the signature with the key the header's `kid`
//! names, `iss`, `aud`, `exp`, `nbf` and `iat` (60 s leeway). The caller's name comes from
//! `sub` (or a configured claim), the role from a claim (`toolsmith_role`) or OAuth scopes
//! (`toolsmith:read|call|admin`, the highest wins), the toolsets from a claim
//! (`toolsmith_toolsets`, a list or a comma-separated string), a rate limit from
//! `toolsmith_rate_limit` (`100/1m`).
//!
//! Keys are fetched at start (from `--jwks-url`, or the `jwks_uri` of the issuer's
//! `/.well-known/openid-configuration`), again after an hour, and again when a token names a
//! key not in the set — at most once per refresh interval, so a flood of unknown `kid`s
//! cannot hammer the issuer.

use std::time::{Duration, Instant};

use base64::Engine as _;
pub use jsonwebtoken::Algorithm;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{DecodingKey, Validation};
use serde_json::Value;
use tokio::sync::{Mutex, RwLock};

use crate::caller::{Caller, Role};

/// How a server checks JWTs.
#[derive(Debug, Clone)]
pub struct JwtConfig {
    /// `iss` must equal this.
    pub issuer: String,
    /// `aud` must contain this.
    pub audience: String,
    /// Where the keys are; `None`: from the issuer's OpenID configuration.
    pub jwks_url: Option<String>,
    /// Algorithms accepted.
    pub algorithms: Vec<Algorithm>,
    /// The HS256 secret, when HS256 is accepted.
    pub hs256_secret: Option<Vec<u8>>,
    /// The claim naming the caller.
    pub name_claim: String,
    pub role_claim: String,
    pub toolsets_claim: String,
    /// The claim giving the caller's rate limit (`100/1m`).
    pub rate_limit_claim: String,
    /// The least time between two key fetches caused by unknown `kid`s.
    pub refresh_interval: Duration,
}

impl JwtConfig {
    /// An issuer and audience with every other setting at its default.
    pub fn new(issuer: &str, audience: &str) -> Self {
        Self {
            issuer: issuer.to_owned(),
            audience: audience.to_owned(),
            jwks_url: None,
            algorithms: DEFAULT_ALGORITHMS.to_vec(),
            hs256_secret: None,
            name_claim: "sub".into(),
            role_claim: "toolsmith_role".into(),
            toolsets_claim: "toolsmith_toolsets".into(),
            rate_limit_claim: "toolsmith_rate_limit".into(),
            refresh_interval: Duration::from_secs(30),
        }
    }
}

/// The algorithms accepted when none are configured.
pub const DEFAULT_ALGORITHMS: [Algorithm; 3] =
    [Algorithm::RS256, Algorithm::ES256, Algorithm::EdDSA];

/// Keys are fetched again after this long, even when every `kid` is known.
const KEYS_MAX_AGE: Duration = Duration::from_secs(3600);
/// Clock skew allowed for `exp`, `nbf` and `iat`.
const LEEWAY_S: u64 = 60;

/// Why a JWT verifier could not be set up.
#[derive(Debug, Clone, thiserror::Error)]
pub enum JwtError {
    #[error("`none` is never accepted: an unsigned token proves nothing")]
    NoneAlgorithm,
    #[error(
        "unknown JWT algorithm {0:?} (RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, EdDSA, HS256)"
    )]
    UnknownAlgorithm(String),
    #[error("{what} {url:?}: {why}")]
    BadUrl {
        what: &'static str,
        url: String,
        why: String,
    },
    #[error("{what} {url:?}: keys must come over https (http only on the loopback interface)")]
    NotHttps { what: &'static str, url: String },
    #[error("the HTTP client could not start: {0}")]
    Client(String),
}

/// An algorithm name (`RS256`, `ES256`, `EdDSA`, ...).
pub fn parse_algorithm(name: &str) -> Result<Algorithm, JwtError> {
    if name.eq_ignore_ascii_case("none") {
        return Err(JwtError::NoneAlgorithm);
    }
    name.parse::<Algorithm>()
        .map_err(|_| JwtError::UnknownAlgorithm(name.to_owned()))
}

/// The keys as last fetched.
struct Keys {
    set: JwkSet,
    fetched: Option<Instant>,
}

/// Verifies JWTs for one issuer.
pub struct JwtVerifier {
    pub config: JwtConfig,
    http: reqwest::Client,
    keys: RwLock<Keys>,
    /// Held while fetching; the time of the last fetch tried.
    fetching: Mutex<Option<Instant>>,
    /// How many times the keys were fetched (for tests and logs).
    fetches: std::sync::atomic::AtomicU64,
}

/// Why a token was refused, for `error_description`.
pub type Refusal = String;

impl JwtVerifier {
    /// A verifier; the keys are fetched now (a failure is logged and tried again at the
    /// first token, so a server can start while its issuer is briefly away).
    pub async fn start(config: JwtConfig) -> Result<Self, JwtError> {
        check_url("--jwt-issuer", &config.issuer)?;
        if let Some(u) = &config.jwks_url {
            check_url("--jwks-url", u)?;
        }
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| JwtError::Client(e.to_string()))?;
        let verifier = Self {
            config,
            http,
            keys: RwLock::new(Keys {
                set: JwkSet { keys: Vec::new() },
                fetched: None,
            }),
            fetching: Mutex::new(None),
            fetches: Default::default(),
        };
        if let Err(e) = verifier.refresh(true).await {
            tracing::warn!("fetching the issuer's keys: {e}; trying again at the first token");
        }
        Ok(verifier)
    }

    /// How many times the keys were fetched.
    pub fn fetches(&self) -> u64 {
        self.fetches.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Fetches the keys again, unless another fetch happened within the refresh interval
    /// (`force` skips that check: at start).
    async fn refresh(&self, force: bool) -> Result<bool, String> {
        let mut last = self.fetching.lock().await;
        if !force && last.is_some_and(|t| t.elapsed() < self.config.refresh_interval) {
            return Ok(false);
        }
        *last = Some(Instant::now());
        self.fetches
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let url = match &self.config.jwks_url {
            Some(u) => u.clone(),
            None => {
                let discovery = format!(
                    "{}/.well-known/openid-configuration",
                    self.config.issuer.trim_end_matches('/')
                );
                let doc = self.get_json(&discovery).await?;
                let uri = doc["jwks_uri"]
                    .as_str()
                    .ok_or_else(|| format!("{discovery} has no `jwks_uri`"))?
                    .to_owned();
                check_url("jwks_uri", &uri).map_err(|e| e.to_string())?;
                uri
            }
        };
        let set: JwkSet = serde_json::from_value(self.get_json(&url).await?)
            .map_err(|e| format!("{url}: not a JWK set: {e}"))?;
        *self.keys.write().await = Keys {
            set,
            fetched: Some(Instant::now()),
        };
        Ok(true)
    }

    async fn get_json(&self, url: &str) -> Result<Value, String> {
        let resp = self
            .http
            .get(url)
            .send()
            .await
            .map_err(|e| format!("{url}: {e}"))?;
        if !resp.status().is_success() {
            return Err(format!("{url}: HTTP {}", resp.status()));
        }
        let body = resp.bytes().await.map_err(|e| format!("{url}: {e}"))?;
        serde_json::from_slice(&body).map_err(|e| format!("{url}: not JSON: {e}"))
    }

    /// The caller a token stands for, or why it is refused.
    pub async fn verify(&self, token: &str) -> Result<Caller, Refusal> {
        let (alg, kid) = header_of(token)?;
        let shared = alg == Algorithm::HS256 && self.config.hs256_secret.is_some();
        if !(self.config.algorithms.contains(&alg) || shared) {
            return Err(format!(
                "algorithm {alg:?} is not accepted (accepted: {})",
                self.accepted().join(", ")
            ));
        }
        let key = match alg {
            Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512 => {
                match &self.config.hs256_secret {
                    Some(secret) if alg == Algorithm::HS256 => DecodingKey::from_secret(secret),
                    _ => return Err(format!("algorithm {alg:?} is not accepted")),
                }
            }
            _ => self.key(kid.as_deref(), alg).await?,
        };
        let mut validation = Validation::new(alg);
        validation.leeway = LEEWAY_S;
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.config.issuer]);
        validation.set_audience(&[&self.config.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        let data = jsonwebtoken::decode::<Value>(token, &key, &validation).map_err(|e| {
            use jsonwebtoken::errors::ErrorKind as K;
            match e.kind() {
                K::ExpiredSignature => "the token has expired".to_owned(),
                K::ImmatureSignature => "the token is not valid yet (nbf)".to_owned(),
                K::InvalidAudience => {
                    format!("wrong audience: expected {:?}", self.config.audience)
                }
                K::InvalidIssuer => format!("wrong issuer: expected {:?}", self.config.issuer),
                K::InvalidSignature => "the signature does not verify".to_owned(),
                K::InvalidAlgorithm => "the algorithm does not match the key".to_owned(),
                K::MissingRequiredClaim(c) => format!("the `{c}` claim is missing"),
                other => format!("the token could not be verified: {other:?}"),
            }
        })?;
        let claims = data.claims;
        if let Some(iat) = claims["iat"].as_u64() {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0);
            if iat > now + LEEWAY_S {
                return Err("the token was issued in the future (iat)".into());
            }
        }
        let mut caller = self.caller(&claims)?;
        caller.jwt = Some(toolsmith_exec::upstream::SubjectToken(token.into()));
        Ok(caller)
    }

    fn accepted(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .config
            .algorithms
            .iter()
            .map(|a| format!("{a:?}"))
            .collect();
        if self.config.hs256_secret.is_some() && !self.config.algorithms.contains(&Algorithm::HS256)
        {
            names.push("HS256".into());
        }
        names
    }

    /// The key `kid` names, fetching the keys again (rate-limited) when it is unknown or
    /// they are old.
    async fn key(&self, kid: Option<&str>, alg: Algorithm) -> Result<DecodingKey, Refusal> {
        let stale = self
            .keys
            .read()
            .await
            .fetched
            .is_none_or(|t| t.elapsed() > KEYS_MAX_AGE);
        if stale {
            let _ = self.refresh(false).await;
        }
        if let Some(k) = self.find(kid, alg).await? {
            return Ok(k);
        }
        match self.refresh(false).await {
            Ok(true) => {}
            Ok(false) => {
                return Err(format!(
                    "unknown key {}: not in the issuer's key set (fetched again at most every {} s)",
                    kid.unwrap_or("(no kid)"),
                    self.config.refresh_interval.as_secs()
                ));
            }
            Err(e) => return Err(format!("the issuer's keys could not be fetched: {e}")),
        }
        self.find(kid, alg).await?.ok_or_else(|| {
            format!(
                "unknown key {}: not in the issuer's key set",
                kid.unwrap_or("(no kid)")
            )
        })
    }

    /// The key for `kid` (or the only key fit for `alg` when the token names none).
    async fn find(
        &self,
        kid: Option<&str>,
        alg: Algorithm,
    ) -> Result<Option<DecodingKey>, Refusal> {
        let keys = self.keys.read().await;
        let fits = |k: &&Jwk| {
            // A symmetric key in a JWKS is never used: that is the algorithm-confusion door.
            !matches!(
                k.algorithm,
                jsonwebtoken::jwk::AlgorithmParameters::OctetKey(_)
            ) && k
                .common
                .key_algorithm
                .is_none_or(|ka| format!("{ka:?}") == format!("{alg:?}"))
        };
        let jwk = match kid {
            Some(kid) => keys
                .set
                .keys
                .iter()
                .filter(fits)
                .find(|k| k.common.key_id.as_deref() == Some(kid)),
            None => {
                let mut fit = keys.set.keys.iter().filter(fits);
                match (fit.next(), fit.next()) {
                    (Some(one), None) => Some(one),
                    _ => None,
                }
            }
        };
        jwk.map(|j| {
            DecodingKey::from_jwk(j).map_err(|e| format!("the issuer's key is unusable: {e}"))
        })
        .transpose()
    }

    /// The caller the claims describe.
    fn caller(&self, claims: &Value) -> Result<Caller, Refusal> {
        let name = claims[&self.config.name_claim]
            .as_str()
            .filter(|s| !s.is_empty())
            .ok_or_else(|| {
                format!(
                    "the `{}` claim (the caller's name) is missing",
                    self.config.name_claim
                )
            })?;
        let role = match claims.get(&self.config.role_claim).and_then(Value::as_str) {
            Some(r) => Role::parse(r).ok_or_else(|| {
                format!("the `{}` claim {r:?} is not read, call or admin", self.config.role_claim)
            })?,
            None => scopes_role(claims).ok_or_else(|| {
                format!(
                    "the token grants no toolsmith role: give the `{}` claim or a scope toolsmith:read, toolsmith:call or toolsmith:admin",
                    self.config.role_claim
                )
            })?,
        };
        // Absent: not limited by the token. Present, it limits — to no tool when it names
        // none (an identity provider mapping groups to toolsets gives a user without groups
        // an empty list: that user gets nothing, not everything).
        let claim = &self.config.toolsets_claim;
        let toolsets = match claims.get(claim) {
            None => Vec::new(),
            Some(Value::Null) => vec![crate::caller::NO_TOOLSETS.to_owned()],
            Some(Value::String(s)) => s
                .split(',')
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
                .collect(),
            Some(Value::Array(a)) => a
                .iter()
                .map(|v| {
                    v.as_str().map(str::to_owned).ok_or_else(|| {
                        format!("the `{claim}` claim must list toolset names as text, not {v}")
                    })
                })
                .collect::<Result<Vec<_>, _>>()?,
            Some(_) => {
                return Err(format!(
                    "the `{claim}` claim must be a list of toolset names"
                ));
            }
        };
        let toolsets = match (claims.get(claim), toolsets.is_empty()) {
            (Some(_), true) => vec![crate::caller::NO_TOOLSETS.to_owned()],
            _ => toolsets,
        };
        let rate_limit = match claims.get(&self.config.rate_limit_claim) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(
                toolsmith_core::rate::RateLimit::parse(s)
                    .map_err(|e| format!("the `{}` claim: {e}", self.config.rate_limit_claim))?,
            ),
            Some(_) => {
                return Err(format!(
                    "the `{}` claim must be text such as 100/1m",
                    self.config.rate_limit_claim
                ));
            }
        };
        Ok(Caller {
            name: name.to_owned(),
            role,
            auth_required: true,
            kind: "jwt",
            toolsets,
            rate_limit,
            jwt: None,
        })
    }
}

/// The highest `toolsmith:*` scope (`scope` as a space-separated string, or `scp` as a list).
fn scopes_role(claims: &Value) -> Option<Role> {
    let mut scopes: Vec<&str> = claims["scope"]
        .as_str()
        .map(|s| s.split_whitespace().collect())
        .unwrap_or_default();
    if let Some(list) = claims["scp"].as_array() {
        scopes.extend(list.iter().filter_map(Value::as_str));
    }
    scopes
        .iter()
        .filter_map(|s| s.strip_prefix("toolsmith:"))
        .filter_map(Role::parse)
        .max()
}

/// A token's algorithm and key id, read before anything else so that `none` and unknown
/// algorithms get a clear refusal.
fn header_of(token: &str) -> Result<(Algorithm, Option<String>), Refusal> {
    let head = token.split('.').next().unwrap_or_default();
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(head.trim_end_matches('='))
        .map_err(|_| "not a JWT: the header is not base64url".to_owned())?;
    let header: Value = serde_json::from_slice(&bytes)
        .map_err(|_| "not a JWT: the header is not JSON".to_owned())?;
    let alg = header["alg"]
        .as_str()
        .ok_or_else(|| "the header names no algorithm".to_owned())?;
    let alg = parse_algorithm(alg).map_err(|e| format!("algorithm {alg:?} refused: {e}"))?;
    // RFC 7515 §4.1.11: extensions named critical must be understood; toolsmith understands
    // none (and an empty list is not allowed either).
    if let Some(crit) = header.get("crit") {
        return Err(format!(
            "the header's `crit` names extensions toolsmith does not understand ({crit})"
        ));
    }
    Ok((alg, header["kid"].as_str().map(str::to_owned)))
}

/// Issuer and key URLs must be https, except on the loopback interface (tests, a local IdP).
fn check_url(what: &'static str, url: &str) -> Result<(), JwtError> {
    let parsed = reqwest::Url::parse(url).map_err(|e| JwtError::BadUrl {
        what,
        url: url.to_owned(),
        why: e.to_string(),
    })?;
    let host = parsed
        .host_str()
        .unwrap_or_default()
        .trim_start_matches('[')
        .trim_end_matches(']');
    let loopback = host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    match parsed.scheme() {
        "https" => Ok(()),
        "http" if loopback => Ok(()),
        _ => Err(JwtError::NotHttps {
            what,
            url: url.to_owned(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn none_and_unknown_algorithms_are_refused_by_name() {
        let none = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(br#"{"alg":"none"}"#);
        let e = header_of(&format!("{none}.e30.")).expect_err("none refused");
        assert!(e.contains("none") && e.contains("never"), "{e}");
        assert!(header_of("%%%.e30.x").is_err());
        assert!(check_url("--jwt-issuer", "http://idp.example").is_err());
        assert!(check_url("--jwt-issuer", "http://127.0.0.1:9/").is_ok());
    }

    /// HS256 is accepted only with the configured secret, and then never with a JWKS key.
    #[tokio::test]
    async fn hs256_takes_only_its_shared_secret() {
        let mut config = JwtConfig::new("http://127.0.0.1:9", "aud");
        config.jwks_url = Some("http://127.0.0.1:9/jwks".into());
        config.hs256_secret = Some(b"0123456789abcdef0123456789abcdef".to_vec());
        let verifier = JwtVerifier::start(config)
            .await
            .expect("starts without its keys");
        let claims = serde_json::json!({"iss": "http://127.0.0.1:9", "aud": "aud", "sub": "s", "exp": 4_000_000_000u64, "toolsmith_role": "call"});
        let sign = |secret: &[u8]| {
            jsonwebtoken::encode(
                &jsonwebtoken::Header::new(Algorithm::HS256),
                &claims,
                &jsonwebtoken::EncodingKey::from_secret(secret),
            )
            .expect("sign")
        };
        let caller = verifier
            .verify(&sign(b"0123456789abcdef0123456789abcdef"))
            .await
            .expect("the shared secret verifies");
        assert_eq!((caller.name.as_str(), caller.role), ("s", Role::Call));
        let e = verifier
            .verify(&sign(b"another secret of the same length!!"))
            .await
            .expect_err("another secret is refused");
        assert!(e.contains("signature"), "{e}");
        // HS384 is not HS256.
        let other = jsonwebtoken::encode(
            &jsonwebtoken::Header::new(Algorithm::HS384),
            &claims,
            &jsonwebtoken::EncodingKey::from_secret(b"0123456789abcdef0123456789abcdef"),
        )
        .expect("sign");
        assert!(verifier.verify(&other).await.is_err());
    }

    #[test]
    fn roles_come_from_the_highest_scope() {
        let c = serde_json::json!({"scope": "openid toolsmith:read toolsmith:call"});
        assert_eq!(scopes_role(&c), Some(Role::Call));
        let c = serde_json::json!({"scp": ["toolsmith:admin"]});
        assert_eq!(scopes_role(&c), Some(Role::Admin));
        assert_eq!(scopes_role(&serde_json::json!({"scope": "openid"})), None);
    }
}
