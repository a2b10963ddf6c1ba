//! Upstream MCP servers (SPEC §11): their declaration, and the pure rules that turn what an
//! upstream lists into toolsmith tools — names, danger, filters, overrides — and say what
//! changed between two listings.
//!
//! An upstream tool is read from its MCP `Tool` object as JSON. What the upstream *says* about
//! a tool — description, title, input and output schema, annotations — is its pinned part
//! ([`pinned`]): the registry keeps the version the operator approved, and a listing whose
//! pinned part differs is a change to approve, never served before that (`on_change: hold`).

mod import;

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

pub(crate) use import::field_name;
pub use import::{Imported, NotAClientConfig, from_mcp_config, looks_secret};

use crate::model::{
    Annotations, Danger, Executor, Limits, McpTarget, NameRule, OutputMode, Parameter, Secrets,
    Tool, ToolName,
};

/// Separates the prefix from the upstream tool's name: `github__search_code`.
pub const SEPARATOR: &str = "__";

/// An upstream MCP server as declared (catalog `mcp_servers:`, REST, or an imported config).
#[derive(Debug, Clone, PartialEq)]
pub struct McpServer {
    /// `[A-Za-z0-9_-]{1,64}`.
    pub name: String,
    pub transport: Transport,
    /// Put before each tool's name with [`SEPARATOR`]; `None`: the server's name; `""`: none.
    pub prefix: Option<String>,
    /// Upstream tool names (or `*`/`?` globs) served; empty: all.
    pub include: Vec<String>,
    /// Upstream tool names (or globs) never served.
    pub exclude: Vec<String>,
    /// Per-tool overrides, by upstream tool name.
    pub tools: BTreeMap<String, ToolOverride>,
    pub on_change: OnChange,
    /// What happens to a definition the guardrail scanner holds ([`crate::guard`]).
    pub on_suspicious: OnSuspicious,
    /// Which protocol era toolsmith speaks to it.
    pub protocol: Protocol,
    /// `max_result_bytes` and `scrub` of its tools' results.
    pub results: crate::guard::result::ResultPolicy,
    /// Each call's timeout, unless a tool's override says otherwise.
    pub timeout_ms: u64,
    /// A stdio upstream unused this long is stopped (started again on the next call).
    pub idle_timeout_ms: Option<u64>,
    pub enabled: bool,
    /// Config fields (secrets among them) for the server: reach a stdio server as environment
    /// variables (`env_name`) and an HTTP one through `{field}` in header values.
    pub config_schema: Vec<Parameter>,
    pub config: Map<String, Value>,
}

/// How toolsmith reaches an upstream.
#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    /// A program speaking MCP on its stdin and stdout.
    Stdio {
        /// Program then arguments, never through a shell.
        command: Vec<String>,
        /// Fixed variables, on top of `env_allowlist` and the config fields' `env_name`s.
        env: BTreeMap<String, String>,
        /// Variables passed through from the server's environment.
        env_allowlist: Vec<String>,
        /// Relative to the workspace; `None`: a folder of its own.
        working_dir: Option<String>,
        /// The kernel sandbox the server's process runs in; `None`: the server's default.
        sandbox: Option<crate::sandbox::Sandbox>,
    },
    /// Streamable HTTP.
    Http {
        url: String,
        /// Sent with every request; `{field}` in a value is replaced by that config field.
        headers: BTreeMap<String, String>,
        /// `auth: oauth`: toolsmith authorizes with the server's OAuth 2.1 authorization
        /// server and sends the access token it is granted.
        auth: Option<OAuth>,
    },
}

/// OAuth 2.1 to an HTTP upstream (`auth: oauth`, or a mapping with `type: oauth`): how
/// toolsmith identifies itself to the authorization server. Without a client id it registers
/// itself (a Client ID Metadata Document under an https `--public-url`, else dynamic
/// registration). `{field}` in the id or secret is replaced by that config field.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OAuth {
    /// A client id registered with the authorization server beforehand.
    pub client_id: Option<String>,
    /// Its secret (a confidential client); write it as a secret config field's `{field}`.
    pub client_secret: Option<String>,
    /// The scopes to ask for; empty: the server's challenge, then its metadata, say which.
    pub scopes: Vec<String>,
    /// Where toolsmith's Client ID Metadata Document is hosted (an https URL, its client id
    /// where the authorization server accepts one); `None`: the one toolsmith serves under an
    /// https `--public-url`.
    pub client_metadata_url: Option<String>,
    /// `connection: per_user`: each caller connects its own account and its calls carry its
    /// own token (the server's shared connection, an admin's, only lists what it offers);
    /// `false` (`shared`): every call goes as the one shared connection.
    pub per_user: bool,
    /// `connection: exchange`: each call goes as its caller, with a token the identity
    /// provider exchanged the caller's JWT for (RFC 8693); the shared connection lists with
    /// toolsmith's own (client credentials) token from the same endpoint.
    pub exchange: Option<TokenExchange>,
}

/// RFC 8693 token exchange at the identity provider the server and toolsmith's callers both
/// trust: where, and for which audience.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TokenExchange {
    /// The identity provider's token endpoint.
    pub token_endpoint: String,
    /// The audience the exchanged tokens are for; `None`: the server's URL.
    pub audience: Option<String>,
    /// `connection: forward`: no exchange — the caller's own JWT is sent, when its audience
    /// includes `audience` (issued for the server too); the endpoint serves only the shared
    /// connection's own token.
    pub forward: bool,
}

impl OAuth {
    /// The catalog form: `oauth`, or a mapping when something is set.
    pub fn to_value(&self) -> Value {
        if *self == Self::default() {
            return json!("oauth");
        }
        let mut m = Map::new();
        m.insert("type".into(), json!("oauth"));
        if let Some(id) = &self.client_id {
            m.insert("client_id".into(), json!(id));
        }
        if let Some(secret) = &self.client_secret {
            m.insert("client_secret".into(), json!(secret));
        }
        if !self.scopes.is_empty() {
            m.insert("scopes".into(), json!(self.scopes));
        }
        if let Some(url) = &self.client_metadata_url {
            m.insert("client_metadata_url".into(), json!(url));
        }
        if self.per_user {
            m.insert("connection".into(), json!("per_user"));
        }
        if let Some(x) = &self.exchange {
            m.insert(
                "connection".into(),
                json!(if x.forward { "forward" } else { "exchange" }),
            );
            m.insert("token_endpoint".into(), json!(x.token_endpoint));
            if let Some(audience) = &x.audience {
                m.insert("audience".into(), json!(audience));
            }
        }
        Value::Object(m)
    }
}

impl Transport {
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Stdio { .. } => "stdio",
            Self::Http { .. } => "http",
        }
    }
}

/// What the operator changes about one upstream tool.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolOverride {
    pub name: Option<String>,
    pub description: Option<String>,
    pub danger: Option<Danger>,
    pub tags: Option<Vec<String>>,
    pub enabled: Option<bool>,
    pub timeout_ms: Option<u64>,
}

/// What happens when an upstream's tools change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnChange {
    /// Recorded as a pending change; the approved definition is served until approved.
    #[default]
    Hold,
    /// Applied at once, as a new version authored `upstream:<server>`.
    Accept,
}

impl OnChange {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Hold => "hold",
            Self::Accept => "accept",
        }
    }
}

/// What happens to an upstream definition (tool, prompt, resource template) the guardrail
/// scanner finds suspicious at `hold` severity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnSuspicious {
    /// Kept out of service — even in the server's first listing — and recorded as a
    /// pending change with its findings, until a person approves it with `allow`.
    #[default]
    Hold,
    /// Served as listed; its findings are shown and counted.
    Warn,
}

impl OnSuspicious {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Hold => "hold",
            Self::Warn => "warn",
        }
    }
}

/// Which protocol era toolsmith speaks to an upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// The `initialize` handshake (2025-11-25), in which a server can ask its caller during a
    /// call; `server/discover` (2026-07-28) for a server that refuses it.
    #[default]
    Auto,
    /// 2026-07-28 only (`server/discover`, per-request `_meta`).
    Modern,
    /// The `initialize` handshake (2025-11-25 and before).
    Legacy,
}

impl Protocol {
    /// The catalog's words for each.
    pub const WORDS: [&'static str; 3] = ["auto", "2026-07-28", "2025-11-25"];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => Self::WORDS[0],
            Self::Modern => Self::WORDS[1],
            Self::Legacy => Self::WORDS[2],
        }
    }

    /// The era a catalog word names.
    pub fn from_word(word: &str) -> Option<Self> {
        [Self::Auto, Self::Modern, Self::Legacy]
            .into_iter()
            .find(|p| p.as_str() == word)
    }
}

/// The default timeout of an upstream's calls.
pub const DEFAULT_TIMEOUT_MS: u64 = 60_000;

impl McpServer {
    /// The prefix its tools' names start with (before [`SEPARATOR`]); empty for none.
    pub fn prefix(&self) -> &str {
        self.prefix.as_deref().unwrap_or(&self.name)
    }

    /// Whether the upstream tool `name` is served (`include`, then `exclude`).
    pub fn serves(&self, name: &str) -> bool {
        (self.include.is_empty() || self.include.iter().any(|g| glob(g, name)))
            && !self.exclude.iter().any(|g| glob(g, name))
    }

    /// The toolsmith name of the upstream tool `upstream`: the override's, else the prefix,
    /// [`SEPARATOR`] and the upstream name mapped to the portable rule ([`portable`]).
    pub fn tool_name(&self, upstream: &str) -> Result<ToolName, UpstreamToolError> {
        if let Some(name) = self.tools.get(upstream).and_then(|o| o.name.as_deref()) {
            return ToolName::new(name, NameRule::Portable).map_err(|error| {
                UpstreamToolError::OverrideName {
                    tool: upstream.to_owned(),
                    error,
                }
            });
        }
        let full = match self.prefix() {
            "" => upstream.to_owned(),
            p => format!("{p}{SEPARATOR}{upstream}"),
        };
        Ok(ToolName::new(&portable(&full), NameRule::Portable)?)
    }

    /// The toolsmith tool an upstream tool (its MCP `Tool` object) becomes, the overrides
    /// applied. The definition passes the catalog loader's rules.
    pub fn tool_from(&self, upstream: &Value) -> Result<Tool, UpstreamToolError> {
        let upstream_name = upstream
            .get("name")
            .and_then(Value::as_str)
            .ok_or(UpstreamToolError::NoName)?;
        let name = self.tool_name(upstream_name)?;
        let over = self.tools.get(upstream_name).cloned().unwrap_or_default();
        let hints = upstream.get("annotations").cloned().unwrap_or(Value::Null);
        let hint = |key: &str| hints.get(key).and_then(Value::as_bool);
        let title = upstream
            .get("title")
            .or_else(|| hints.get("title"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let description = over
            .description
            .clone()
            .or_else(|| {
                upstream
                    .get("description")
                    .and_then(Value::as_str)
                    .filter(|d| !d.trim().is_empty())
                    .map(str::to_owned)
            })
            .unwrap_or_else(|| {
                format!(
                    "{} (tool `{upstream_name}` of MCP server `{}`, which gave no description)",
                    title.as_deref().unwrap_or(upstream_name),
                    self.name
                )
            });
        // The MCP spec's defaults: a tool is destructive unless it says otherwise.
        let safe = hint("readOnlyHint") == Some(true) || hint("destructiveHint") == Some(false);
        let danger = over.danger.unwrap_or(match safe {
            true => Danger::Safe,
            false => Danger::Dangerous,
        });
        let mut input_schema = upstream
            .get("inputSchema")
            .cloned()
            .unwrap_or_else(|| json!({"type": "object"}));
        if input_schema.get("type").is_none()
            && let Some(map) = input_schema.as_object_mut()
        {
            map.insert("type".into(), json!("object"));
        }
        Ok(Tool {
            name,
            title,
            description,
            danger,
            annotations: Annotations {
                read_only: hint("readOnlyHint"),
                idempotent: hint("idempotentHint"),
                open_world: hint("openWorldHint"),
            },
            timeout_ms: over.timeout_ms.unwrap_or(self.timeout_ms),
            tags: over.tags.clone().unwrap_or_else(|| vec![self.name.clone()]),
            enabled: over.enabled.unwrap_or(true),
            strict_arguments: false,
            end_of_options: None,
            env_allowlist: Vec::new(),
            env: BTreeMap::new(),
            working_dir: None,
            max_concurrency: None,
            sandbox: None,
            rate_limit: None,
            results: self.results.clone(),
            limits: Limits::default(),
            output: OutputMode::Text,
            parameters: Vec::new(),
            config_schema: Vec::new(),
            config: Map::new(),
            input_schema: Some(input_schema),
            output_schema: upstream.get("outputSchema").cloned(),
            formats: BTreeMap::new(),
            executor: Executor::Mcp(McpTarget {
                server: self.name.clone(),
                tool: upstream_name.to_owned(),
            }),
        })
    }

    /// The catalog form (what the registry stores, and what `mcp_servers:` entries are);
    /// secret config values as `***` unless `secrets` keeps them.
    pub fn to_catalog_value(&self, secrets: Secrets) -> Value {
        let mut m = Map::new();
        m.insert("name".into(), json!(self.name));
        match &self.transport {
            Transport::Stdio {
                command,
                env,
                env_allowlist,
                working_dir,
                sandbox,
            } => {
                m.insert("command".into(), json!(command));
                if let Some(sandbox) = sandbox {
                    m.insert("sandbox".into(), sandbox.to_value());
                }
                if !env.is_empty() {
                    m.insert("env".into(), json!(env));
                }
                if !env_allowlist.is_empty() {
                    m.insert("env_allowlist".into(), json!(env_allowlist));
                }
                if let Some(dir) = working_dir {
                    m.insert("working_dir".into(), json!(dir));
                }
            }
            Transport::Http { url, headers, auth } => {
                m.insert("url".into(), json!(url));
                if !headers.is_empty() {
                    m.insert("headers".into(), json!(headers));
                }
                if let Some(auth) = auth {
                    m.insert("auth".into(), auth.to_value());
                }
            }
        }
        if let Some(p) = &self.prefix {
            m.insert("prefix".into(), json!(p));
        }
        if !self.include.is_empty() {
            m.insert("include".into(), json!(self.include));
        }
        if !self.exclude.is_empty() {
            m.insert("exclude".into(), json!(self.exclude));
        }
        if !self.tools.is_empty() {
            let tools: Map<String, Value> = self
                .tools
                .iter()
                .map(|(k, o)| (k.clone(), override_value(o)))
                .collect();
            m.insert("tools".into(), Value::Object(tools));
        }
        if self.on_change != OnChange::Hold {
            m.insert("on_change".into(), json!(self.on_change.as_str()));
        }
        if self.on_suspicious != OnSuspicious::Hold {
            m.insert("on_suspicious".into(), json!(self.on_suspicious.as_str()));
        }
        if self.protocol != Protocol::Auto {
            m.insert("protocol".into(), json!(self.protocol.as_str()));
        }
        self.results.write(&mut m);
        if self.timeout_ms != DEFAULT_TIMEOUT_MS {
            m.insert("timeout_ms".into(), json!(self.timeout_ms));
        }
        if let Some(t) = self.idle_timeout_ms {
            m.insert("idle_timeout_ms".into(), json!(t));
        }
        if !self.enabled {
            m.insert("enabled".into(), json!(false));
        }
        if !self.config_schema.is_empty() {
            m.insert("config_schema".into(), json!(self.config_schema));
        }
        if !self.config.is_empty() {
            let mut config = self.config.clone();
            if secrets == Secrets::Redact {
                for p in self.config_schema.iter().filter(|p| p.secret) {
                    if let Some(v) = config.get_mut(&p.name) {
                        *v = json!(crate::model::REDACTED);
                    }
                }
            }
            m.insert("config".into(), Value::Object(config));
        }
        Value::Object(m)
    }

    /// The header values of an HTTP upstream, each `{field}` replaced by that config value.
    pub fn resolved_headers(&self) -> BTreeMap<String, String> {
        let Transport::Http { headers, .. } = &self.transport else {
            return BTreeMap::new();
        };
        headers
            .iter()
            .map(|(k, v)| (k.clone(), fill(v, &self.config)))
            .collect()
    }

    /// The URL of an HTTP upstream, each `{field}` replaced by that config value.
    pub fn resolved_url(&self) -> Option<String> {
        match &self.transport {
            Transport::Http { url, .. } => Some(fill(url, &self.config)),
            Transport::Stdio { .. } => None,
        }
    }

    /// The OAuth settings of an HTTP upstream that authorizes with OAuth, each `{field}` of
    /// its client id and secret replaced by that config value.
    pub fn resolved_oauth(&self) -> Option<OAuth> {
        let Transport::Http {
            auth: Some(auth), ..
        } = &self.transport
        else {
            return None;
        };
        Some(OAuth {
            client_id: auth.client_id.as_deref().map(|v| fill(v, &self.config)),
            client_secret: auth.client_secret.as_deref().map(|v| fill(v, &self.config)),
            scopes: auth.scopes.clone(),
            client_metadata_url: auth.client_metadata_url.clone(),
            per_user: auth.per_user,
            exchange: auth.exchange.clone(),
        })
    }

    /// The `env` of a stdio upstream, each `{field}` replaced by that config value.
    pub fn resolved_env(&self) -> BTreeMap<String, String> {
        let Transport::Stdio { env, .. } = &self.transport else {
            return BTreeMap::new();
        };
        env.iter()
            .map(|(k, v)| (k.clone(), fill(v, &self.config)))
            .collect()
    }

    /// The command of a stdio upstream, each `{field}` replaced by that config value.
    pub fn resolved_command(&self) -> Vec<String> {
        match &self.transport {
            Transport::Stdio { command, .. } => {
                command.iter().map(|a| fill(a, &self.config)).collect()
            }
            Transport::Http { .. } => Vec::new(),
        }
    }

    /// The config fields a `{field}` in its command, `env`, URL or headers names that have no
    /// value yet (a VS Code `${input:…}` imported, say): it cannot start until they do.
    pub fn unfilled(&self) -> Vec<String> {
        let texts: Vec<&String> = match &self.transport {
            Transport::Stdio { command, env, .. } => command.iter().chain(env.values()).collect(),
            Transport::Http { url, headers, .. } => {
                std::iter::once(url).chain(headers.values()).collect()
            }
        };
        let mut out: Vec<String> = self
            .config_schema
            .iter()
            .filter(|p| !self.config.contains_key(&p.name))
            .filter(|p| {
                let placeholder = format!("{{{}}}", p.name);
                texts.iter().any(|t| t.contains(&placeholder))
            })
            .map(|p| p.name.clone())
            .collect();
        out.dedup();
        out
    }

    /// Every secret config value, for scrubbing text (stderr, errors) before it is shown.
    pub fn secret_values(&self) -> Vec<String> {
        let mut out = Vec::new();
        for p in self.config_schema.iter().filter(|p| p.secret) {
            if let Some(v) = self.config.get(&p.name) {
                match v {
                    Value::String(s) => out.push(s.clone()),
                    other => out.push(other.to_string()),
                }
            }
        }
        out
    }
}

/// An upstream tool that cannot become a toolsmith tool.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UpstreamToolError {
    #[error("an upstream tool without a name")]
    NoName,
    /// The server's `tools.<tool>.name` override is not a portable name.
    #[error("tools.{tool}.name: {error}")]
    OverrideName {
        tool: String,
        error: crate::model::NameError,
    },
    /// The name made of the prefix and the upstream's (mapped to the portable rule) is not
    /// one: only a name too long to shorten.
    #[error(transparent)]
    Name(#[from] crate::model::NameError),
}

fn override_value(o: &ToolOverride) -> Value {
    let mut m = Map::new();
    if let Some(v) = &o.name {
        m.insert("name".into(), json!(v));
    }
    if let Some(v) = &o.description {
        m.insert("description".into(), json!(v));
    }
    if let Some(v) = o.danger {
        m.insert("danger".into(), json!(v));
    }
    if let Some(v) = &o.tags {
        m.insert("tags".into(), json!(v));
    }
    if let Some(v) = o.enabled {
        m.insert("enabled".into(), json!(v));
    }
    if let Some(v) = o.timeout_ms {
        m.insert("timeout_ms".into(), json!(v));
    }
    Value::Object(m)
}

/// `text` with each `{field}` naming a config field replaced by its value (text as is,
/// other values as JSON); other braces are kept.
pub fn fill(text: &str, config: &Map<String, Value>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find('}').map(|close| (&after[..close], close)) {
            Some((name, close)) if config.contains_key(name) => {
                match &config[name] {
                    Value::String(s) => out.push_str(s),
                    other => out.push_str(&other.to_string()),
                }
                rest = &after[close + 1..];
            }
            _ => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// `name` mapped to the portable naming rule (`^[A-Za-z][A-Za-z0-9_]{0,63}$`), predictably:
/// every other character becomes `_`, a name not starting with a letter gets `t_` before
/// it, and one longer than 64 keeps its first 55 characters and a hash of the whole (so two
/// long names sharing a head stay apart).
pub fn portable(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| match c.is_ascii_alphanumeric() || c == '_' {
            true => c,
            false => '_',
        })
        .collect();
    if !out.starts_with(|c: char| c.is_ascii_alphabetic()) {
        out.insert_str(0, "t_");
    }
    if out.len() > 64 {
        let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        out.truncate(55);
        out.push_str(&format!("_{:08x}", hash as u32));
    }
    out
}

/// `*` (any run) and `?` (one character) globs, whole-name.
pub fn glob(pattern: &str, name: &str) -> bool {
    fn go(p: &[char], n: &[char]) -> bool {
        match p.split_first() {
            None => n.is_empty(),
            Some(('*', rest)) => (0..=n.len()).any(|i| go(rest, &n[i..])),
            Some(('?', rest)) => !n.is_empty() && go(rest, &n[1..]),
            Some((c, rest)) => n.first() == Some(c) && go(rest, &n[1..]),
        }
    }
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    go(&p, &n)
}

/// The pinned part of an upstream tool (its MCP `Tool` object): what a change is judged on.
pub fn pinned(upstream: &Value) -> Value {
    let mut m = Map::new();
    for key in [
        "name",
        "title",
        "description",
        "inputSchema",
        "outputSchema",
        "annotations",
    ] {
        if let Some(v) = upstream.get(key).filter(|v| !v.is_null()) {
            m.insert(key.into(), v.clone());
        }
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server() -> McpServer {
        McpServer {
            name: "gh".into(),
            transport: Transport::Http {
                url: "http://x".into(),
                headers: BTreeMap::from([("Authorization".into(), "Bearer {token}".into())]),
                auth: None,
            },
            prefix: None,
            include: vec![],
            exclude: vec!["delete_*".into()],
            tools: BTreeMap::new(),
            on_change: OnChange::Hold,
            on_suspicious: OnSuspicious::Hold,
            protocol: Protocol::Auto,
            results: Default::default(),
            timeout_ms: DEFAULT_TIMEOUT_MS,
            idle_timeout_ms: None,
            enabled: true,
            config_schema: vec![],
            config: Map::from_iter([("token".to_string(), json!("s3cret"))]),
        }
    }

    #[test]
    fn names_are_prefixed_and_mapped_predictably() {
        let s = server();
        assert_eq!(s.tool_name("search").expect("name").as_str(), "gh__search");
        assert_eq!(
            s.tool_name("get-file.v2").expect("name").as_str(),
            "gh__get_file_v2"
        );
        let mut bare = server();
        bare.prefix = Some(String::new());
        assert_eq!(bare.tool_name("2fa").expect("name").as_str(), "t_2fa");
        let long = "x".repeat(80);
        let a = bare.tool_name(&long).expect("name");
        let b = bare.tool_name(&format!("{long}y")).expect("name");
        assert_eq!(a.as_str().len(), 64);
        assert_ne!(a, b, "long names keep apart");
    }

    #[test]
    fn filters_and_danger_from_annotations() {
        let s = server();
        assert!(s.serves("search") && !s.serves("delete_repo"));
        let t = |ann: Value| {
            s.tool_from(&json!({"name": "t", "description": "d", "inputSchema": {"type": "object"}, "annotations": ann}))
                .expect("tool")
                .danger
        };
        assert_eq!(t(json!({"readOnlyHint": true})), Danger::Safe);
        assert_eq!(t(json!({"destructiveHint": false})), Danger::Safe);
        assert_eq!(t(json!({})), Danger::Dangerous);
        assert_eq!(t(Value::Null), Danger::Dangerous);
    }

    #[test]
    fn headers_fill_config_fields() {
        assert_eq!(
            server().resolved_headers()["Authorization"],
            "Bearer s3cret"
        );
        let config = Map::new();
        assert_eq!(fill("{not a field} {}", &config), "{not a field} {}");
    }

    #[test]
    fn globs() {
        assert!(glob("a*c", "abbc") && glob("a?c", "abc") && glob("*", ""));
        assert!(!glob("a?c", "ac") && !glob("abc", "abcd"));
    }
}
