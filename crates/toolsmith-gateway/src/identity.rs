//! Who is calling (SPEC §8, §14): bearer tokens with roles — `read` lists, shows, exports and
//! validates; `call` also calls; `admin` also edits — and the [`Caller`] a presented secret
//! makes. A token is a static one (`--token`, `--tokens-file`, optionally limited to toolsets)
//! or a JWT from the configured issuer ([`crate::jwt`]); both can be used side by side. With
//! neither configured (loopback only), the caller is an admin named `local` — when it
//! presents the local admin token `serve` keeps in toolsmith's data folder
//! ([`crate::Gateway::set_local_token`]), so that no process the gateway starts is that
//! admin.
//!
//! This module decides who a secret belongs to ([`Authenticator::authenticate`]); reading it
//! from a request and answering a refusal in a wire format is the front door's job.

use std::sync::{Arc, OnceLock};

pub use crate::caller::{Caller, NO_TOOLSETS, Role};
use crate::jwt::JwtVerifier;

#[derive(Debug, Clone)]
pub struct Token {
    pub name: String,
    pub secret: String,
    pub role: Role,
    /// The toolsets the token is limited to (empty: not limited).
    pub toolsets: Vec<String>,
    /// How often its holder may call tools (`rate_limit=100/1m` after the secret).
    pub rate_limit: Option<toolsmith_core::rate::RateLimit>,
}

/// Why a token's line was refused; never shows its secret.
#[derive(Debug, Clone, thiserror::Error)]
pub enum TokenError {
    /// Never quoted: a line without `=` may be the secret alone.
    #[error(
        "a token with no `=`: expected NAME[:ROLE][@TOOLSET,...]=SECRET [rate_limit=N/PER] (not shown: it may be the secret)"
    )]
    Shape,
    #[error("rate_limit: {0}")]
    RateLimit(String),
    #[error("token {0:?}: an unknown option after the secret (the only one is rate_limit=N/PER)")]
    UnknownOption(String),
    #[error(
        "token {0:?}: text after the secret that is not an option (secrets hold no spaces; options are rate_limit=N/PER)"
    )]
    NotAnOption(String),
    #[error(
        "token {who:?}: invalid toolset name {toolset:?} after `@` (1 to 64 letters, digits, `_` or `-`, separated by commas)"
    )]
    Toolset { who: String, toolset: String },
    #[error("token {who:?}: unknown role {role:?} (expected read, call or admin)")]
    Role { who: String, role: String },
    #[error("token {0:?}: a name and a secret of at least 8 characters are needed")]
    TooShort(String),
    /// In a tokens file: the line it is on.
    #[error("line {line}: {error}")]
    Line { line: usize, error: Box<TokenError> },
}

impl Token {
    /// `NAME[:ROLE][@TOOLSET[,TOOLSET...]]=SECRET [rate_limit=N/PER]`; the role is `admin`
    /// when not given.
    pub fn parse(line: &str) -> Result<Self, TokenError> {
        let (spec, options) = match line.split_once(char::is_whitespace) {
            Some((s, o)) => (s, o.trim()),
            None => (line, ""),
        };
        let (who, secret) = spec.split_once('=').ok_or(TokenError::Shape)?;
        let mut rate_limit = None;
        for option in options.split_whitespace() {
            match option.split_once('=') {
                Some(("rate_limit", v)) => {
                    rate_limit = Some(
                        toolsmith_core::rate::RateLimit::parse(v)
                            .map_err(|e| TokenError::RateLimit(e.to_string()))?,
                    );
                }
                // Never quoted: a secret written with a space would be shown.
                Some(_) => return Err(TokenError::UnknownOption(who.to_owned())),
                None => return Err(TokenError::NotAnOption(who.to_owned())),
            }
        }
        let (who, toolsets) = match who.split_once('@') {
            Some((who, sets)) => {
                let sets: Vec<String> = sets.split(',').map(|s| s.trim().to_owned()).collect();
                if let Some(bad) = sets
                    .iter()
                    .find(|s| !toolsmith_core::toolset::valid_name(s))
                {
                    return Err(TokenError::Toolset {
                        who: who.to_owned(),
                        toolset: bad.clone(),
                    });
                }
                (who, sets)
            }
            None => (who, Vec::new()),
        };
        let (name, role) = match who.split_once(':') {
            Some((n, r)) => (
                n,
                Role::parse(r).ok_or_else(|| TokenError::Role {
                    who: n.to_owned(),
                    role: r.to_owned(),
                })?,
            ),
            None => (who, Role::Admin),
        };
        if name.is_empty() || secret.len() < 8 {
            return Err(TokenError::TooShort(name.to_owned()));
        }
        Ok(Self {
            name: name.to_owned(),
            secret: secret.to_owned(),
            role,
            toolsets,
            rate_limit,
        })
    }
}

/// Tokens from a file: one `NAME[:ROLE][@TOOLSET,...]=SECRET` per line; blank lines and
/// lines starting with `#` are skipped. Errors name the line.
pub fn parse_tokens_file(text: &str) -> Result<Vec<Token>, TokenError> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
        .map(|(n, l)| {
            Token::parse(l).map_err(|e| TokenError::Line {
                line: n,
                error: Box::new(e),
            })
        })
        .collect()
}

/// The local admin's secret and the file it is kept in (named in refusals).
#[derive(Debug, Clone)]
pub struct LocalToken {
    pub secret: String,
    pub file: std::path::PathBuf,
}

/// Why a presented secret makes no caller; `why` is `None` when nothing was presented where
/// something is needed.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}", why.as_deref().unwrap_or("a valid bearer token is required"))]
pub struct Refused {
    pub why: Option<String>,
}

/// What decides who a presented secret belongs to: the static tokens, the JWT issuer and the
/// local admin's secret (the last two set once, at start).
#[derive(Default)]
pub struct Authenticator {
    tokens: Vec<Token>,
    jwt: OnceLock<Arc<JwtVerifier>>,
    local_token: OnceLock<LocalToken>,
}

impl Authenticator {
    pub fn new(tokens: Vec<Token>) -> Self {
        Self {
            tokens,
            ..Self::default()
        }
    }

    /// The static tokens.
    pub fn tokens(&self) -> &[Token] {
        &self.tokens
    }

    /// Accepts JWTs from `jwt`'s issuer besides the static tokens.
    pub fn set_jwt(&self, jwt: Arc<JwtVerifier>) {
        let _ = self.jwt.set(jwt);
    }

    pub fn jwt(&self) -> Option<&Arc<JwtVerifier>> {
        self.jwt.get()
    }

    /// With no tokens and no JWT issuer, asks every request for `token`.
    pub fn set_local_token(&self, token: LocalToken) {
        let _ = self.local_token.set(token);
    }

    pub fn local_token(&self) -> Option<&LocalToken> {
        self.local_token.get()
    }

    /// The caller `presented` (a bearer secret, when one came) makes.
    pub async fn authenticate(&self, presented: Option<&str>) -> Result<Caller, Refused> {
        let jwt = self.jwt.get();
        if self.tokens.is_empty() && jwt.is_none() {
            return match (self.local_token.get(), presented) {
                (None, _) => Ok(Caller::local()),
                (Some(local), Some(p))
                    if constant_time_eq(local.secret.as_bytes(), p.as_bytes()) =>
                {
                    Ok(Caller::local())
                }
                (Some(local), presented) => Err(Refused {
                    why: Some(format!(
                        "{} the local admin token: open the web UI at the address `toolsmith serve` printed, or send `Authorization: Bearer` with the token in {}",
                        match presented {
                            Some(_) => "this is not",
                            None => "this server asks for",
                        },
                        local.file.display()
                    )),
                }),
            };
        }
        let Some(presented) = presented else {
            return Err(Refused { why: None });
        };
        let token = self
            .tokens
            .iter()
            .find(|t| constant_time_eq(t.secret.as_bytes(), presented.as_bytes()));
        match (token, jwt) {
            (Some(token), _) => Ok(Caller {
                name: token.name.clone(),
                role: token.role,
                auth_required: true,
                kind: "token",
                toolsets: token.toolsets.clone(),
                rate_limit: token.rate_limit,
                jwt: None,
            }),
            (None, Some(jwt)) if presented.matches('.').count() == 2 => jwt
                .verify(presented)
                .await
                .map_err(|why| Refused { why: Some(why) }),
            (None, jwt) => Err(Refused {
                why: jwt.map(|_| "neither a known token nor a JWT".to_owned()),
            }),
        }
    }
}

/// Compares secrets without an early exit on the first difference.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
