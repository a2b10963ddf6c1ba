//! Who is calling, once decided ([`crate::identity`] for static tokens, [`crate::jwt`] for
//! JWTs): a name, a role, the toolsets it is limited to and its rate limit.

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Read,
    Call,
    Admin,
}

impl Role {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "read" => Some(Self::Read),
            "call" => Some(Self::Call),
            "admin" => Some(Self::Admin),
            _ => None,
        }
    }
}

/// Who is calling.
#[derive(Debug, Clone)]
pub struct Caller {
    pub name: String,
    pub role: Role,
    /// Whether the server asks for tokens at all.
    pub auth_required: bool,
    /// How the caller proved who it is: `none` (no tokens asked), `token` (a static token)
    /// or `jwt`.
    pub kind: &'static str,
    /// The toolsets the caller is limited to (empty: not limited).
    pub toolsets: Vec<String>,
    /// Its own rate limit across tools (its token's or JWT's; else the server's default).
    pub rate_limit: Option<toolsmith_core::rate::RateLimit>,
    /// The JWT it presented (a JWT caller's), for upstreams that exchange it for one of their
    /// own (`connection: exchange`); never shown.
    pub jwt: Option<toolsmith_exec::upstream::SubjectToken>,
}

impl Caller {
    /// The name the execution log and sessions know the caller by: the token's name, with
    /// `jwt:` before a JWT subject (so a static token and a JWT subject of the same name
    /// stay apart).
    pub fn log_name(&self) -> String {
        match self.kind {
            "jwt" => format!("jwt:{}", self.name),
            _ => self.name.clone(),
        }
    }

    /// The caller of a server that asks for no token: an admin named `local`.
    pub fn local() -> Self {
        Self {
            name: "local".into(),
            role: Role::Admin,
            auth_required: false,
            kind: "none",
            toolsets: Vec::new(),
            rate_limit: None,
            jwt: None,
        }
    }
}

/// The toolsets of a caller whose token limits it to none (a JWT whose toolsets claim is
/// present but empty): no toolset has this name, so the caller sees no tool.
pub const NO_TOOLSETS: &str = "(none)";
