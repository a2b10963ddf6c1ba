//! `mcp_servers:` — upstream MCP servers (SPEC §11): a program speaking MCP on stdio, or a
//! Streamable HTTP URL; which of its tools are served and under what names; what happens when
//! they change; its secrets, as config fields.

use super::settings::read_env;
use super::*;

const SERVER_KEYS: &[&str] = &[
    "name",
    "command",
    "env",
    "env_allowlist",
    "working_dir",
    "url",
    "headers",
    "auth",
    "prefix",
    "include",
    "exclude",
    "tools",
    "on_change",
    "on_suspicious",
    "protocol",
    "max_result_bytes",
    "scrub",
    "timeout_ms",
    "idle_timeout_ms",
    "enabled",
    "config_schema",
    "config",
    "sandbox",
];

const OVERRIDE_KEYS: &[&str] = &[
    "name",
    "description",
    "danger",
    "tags",
    "enabled",
    "timeout_ms",
];

/// `[A-Za-z0-9_-]{1,64}`: a server's name, part of its tools' names and of URLs.
pub(crate) fn valid_server_name(name: &str) -> bool {
    crate::toolset::valid_name(name)
}

/// Reads one server definition given as a JSON value (the registry's and the REST API's
/// way in); `${VAR}` config values are read through `src`.
pub fn parse_server(value: &Value, src: &dyn CatalogSource) -> Result<McpServer, CatalogErrors> {
    read_one("server", |e| {
        Loader::new(src).server(value, "", &Default::default(), e)
    })
}

/// Reads a server definition as the registry stored it: as it was read when it was written
/// (a `${NAME}` kept from before such values were lifted into config fields stays text, as
/// it was served then, rather than making the stored server unreadable).
pub fn parse_stored_server(
    value: &Value,
    src: &dyn CatalogSource,
) -> Result<McpServer, CatalogErrors> {
    read_one("server", |e| {
        let mut loader = Loader::new(src);
        loader.lift_variables = false;
        loader.server(value, "", &Default::default(), e)
    })
}

impl Loader<'_> {
    /// Reads the `mcp_servers:` list of one file.
    pub(super) fn servers(
        &mut self,
        list: &[Value],
        file: &str,
        results: &crate::guard::result::ResultPolicy,
        e: &mut Errs,
    ) {
        for (i, v) in list.iter().enumerate() {
            let at = format!("mcp_servers[{i}]");
            if let Some(name) = v.get("name").and_then(Value::as_str) {
                self.server_names
                    .push((name.to_owned(), file.to_owned(), at.clone()));
            }
            if let Some(server) = self.server(v, &at, results, e) {
                self.servers.push(server);
            }
        }
    }

    /// Two servers of one name, across every file.
    pub(super) fn check_server_names(&mut self) {
        let mut seen: HashMap<&str, (&str, &str)> = HashMap::new();
        for (name, file, at) in &self.server_names {
            if let Some((first_file, first_at)) = seen.insert(name, (file, at)) {
                self.errors.push(CatalogError {
                    file: file.clone(),
                    path: format!("{at}.name"),
                    message: format!(
                        "duplicate server name {name:?} (first declared at {first_file}: {first_at})"
                    ),
                });
            }
        }
    }

    fn server(
        &self,
        v: &Value,
        at: &str,
        results_default: &crate::guard::result::ResultPolicy,
        e: &mut Errs,
    ) -> Option<McpServer> {
        let lifted = match self.lift_variables {
            true => super::variables::lift(v, at, self.src, e),
            false => None,
        };
        let f = Fields::new(lifted.as_ref().unwrap_or(v), at, SERVER_KEYS, e)?;
        let errors_before = e.list.len();
        let name = f.string("name", e);
        match &name {
            Some(n) if !valid_server_name(n) => e.push(
                &f.at("name"),
                format!("invalid server name {n:?}: 1 to 64 letters, digits, `_` or `-`"),
            ),
            None if !f.has("name") => e.push(&f.at("name"), "missing; every server needs a name"),
            _ => {}
        }
        let transport = match (f.has("command"), f.has("url")) {
            (true, true) => {
                e.push(
                    &f.path,
                    "give either `command` (a program speaking MCP on stdio) or `url` (Streamable HTTP), not both",
                );
                None
            }
            (false, false) => {
                e.push(
                    &f.path,
                    "no transport: give `command` (a program speaking MCP on stdio) or `url` (Streamable HTTP)",
                );
                None
            }
            (true, false) => self.stdio(&f, e),
            (false, true) => http(&f, e),
        };
        let prefix = f.string("prefix", e);
        if let Some(p) = &prefix
            && !p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            e.push(
                &f.at("prefix"),
                format!("invalid prefix {p:?}: letters, digits and `_` (or \"\" for none)"),
            );
        }
        let include = f.strings("include", e).unwrap_or_default();
        let exclude = f.strings("exclude", e).unwrap_or_default();
        let tools = overrides(&f, e);
        let on_change = f
            .choice(
                "on_change",
                "change policy",
                &["hold", "accept"],
                |s| match s {
                    "hold" => Some(OnChange::Hold),
                    "accept" => Some(OnChange::Accept),
                    _ => None,
                },
                e,
            )
            .unwrap_or_default();
        let on_suspicious = f
            .choice(
                "on_suspicious",
                "guardrail policy",
                &["hold", "warn"],
                |s| match s {
                    "hold" => Some(OnSuspicious::Hold),
                    "warn" => Some(OnSuspicious::Warn),
                    _ => None,
                },
                e,
            )
            .unwrap_or_default();
        let protocol = f
            .choice(
                "protocol",
                "protocol era",
                &crate::upstream::Protocol::WORDS,
                crate::upstream::Protocol::from_word,
                e,
            )
            .unwrap_or_default();
        let results = super::defaults::read_results(&f, e).or(results_default);
        let timeout_ms = f
            .uint("timeout_ms", e)
            .unwrap_or(crate::upstream::DEFAULT_TIMEOUT_MS);
        if !(1..=MAX_TIMEOUT_MS).contains(&timeout_ms) {
            e.push(
                &f.at("timeout_ms"),
                format!("{timeout_ms} is outside 1..={MAX_TIMEOUT_MS} (one day)"),
            );
        }
        let idle_timeout_ms = f.uint("idle_timeout_ms", e);
        if idle_timeout_ms.is_some_and(|t| t < 1000) {
            e.push(&f.at("idle_timeout_ms"), "at least 1000 (one second)");
        }
        let config_schema = match f.list("config_schema", e) {
            Some(list) => parse_list(list, &f.at("config_schema"), Place::Config, e),
            None => Vec::new(),
        };
        let config = self.config(&f, &config_schema, e);
        if let Some(Transport::Http { headers, auth, .. }) = &transport {
            let oauth = auth.iter().flat_map(|a| {
                [
                    ("client_id", &a.client_id),
                    ("client_secret", &a.client_secret),
                ]
                .into_iter()
                .filter_map(|(k, v)| Some((join("auth", k), v.as_deref()?)))
            });
            let places = headers
                .iter()
                .map(|(k, v)| (join("headers", k), v.as_str()))
                .chain(oauth)
                .collect::<Vec<_>>();
            for (place, value) in places {
                for field in placeholders(value) {
                    if !config_schema.iter().any(|p| p.name == field) {
                        let known: Vec<&str> =
                            config_schema.iter().map(|p| p.name.as_str()).collect();
                        e.push(
                            &join(&f.path, &place),
                            format!(
                                "{{{field}}} names no config field (known: {})",
                                if known.is_empty() {
                                    "none".to_owned()
                                } else {
                                    known.join(", ")
                                }
                            ),
                        );
                    }
                }
            }
        }
        if e.list.len() != errors_before {
            return None;
        }
        Some(McpServer {
            name: name?,
            transport: transport?,
            prefix,
            include,
            exclude,
            tools,
            on_change,
            on_suspicious,
            protocol,
            results,
            timeout_ms,
            idle_timeout_ms,
            enabled: f.boolean("enabled", e).unwrap_or(true),
            config_schema,
            config,
        })
    }

    fn stdio(&self, f: &Fields<'_>, e: &mut Errs) -> Option<Transport> {
        let given = serde_json::json!({"command": f.get("command")});
        let Executor::Command(command) = executor::read_command(&given, &f.at("command"), e)?
        else {
            return None;
        };
        let working_dir = super::settings::read_working_dir(f, e);
        Some(Transport::Stdio {
            command: command.argv,
            env: read_env(f, e),
            env_allowlist: super::env::read_allowlist(f, e).unwrap_or_default(),
            working_dir,
            sandbox: f
                .get("sandbox")
                .and_then(|v| crate::sandbox::read(v, &f.at("sandbox"), e)),
        })
    }
}

fn http(f: &Fields<'_>, e: &mut Errs) -> Option<Transport> {
    for key in ["env", "env_allowlist", "working_dir", "sandbox"] {
        if f.has(key) {
            e.push(
                &f.at(key),
                format!("`{key}` applies to stdio servers (`command`), not to `url`"),
            );
        }
    }
    let url = f.string("url", e)?;
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"));
    if rest.is_none_or(|r| r.is_empty() || r.starts_with('/')) || url.contains(char::is_whitespace)
    {
        e.push(
            &f.at("url"),
            format!("{url:?} is not an http:// or https:// URL (Streamable HTTP; legacy SSE-only servers are not supported)"),
        );
        return None;
    }
    let mut headers = BTreeMap::new();
    match f.get("headers") {
        None => {}
        Some(Value::Object(map)) => {
            for (k, v) in map {
                match v.as_str() {
                    Some(text) if !text.contains(['\r', '\n', '\0']) => {
                        headers.insert(k.clone(), text.to_owned());
                    }
                    _ => e.push(&join(&f.at("headers"), k), "expected one line of text"),
                }
            }
        }
        Some(_) => e.push(
            &f.at("headers"),
            "expected a mapping of header names to values",
        ),
    }
    let auth = f.get("auth").and_then(|v| oauth(v, &f.at("auth"), e));
    Some(Transport::Http { url, headers, auth })
}

/// `auth:` of an HTTP server: `oauth`, or `{type: oauth, client_id, client_secret, scopes,
/// client_metadata_url, connection}`.
fn oauth(v: &Value, at: &str, e: &mut Errs) -> Option<OAuth> {
    const WHAT: &str = "expected `oauth` or a mapping with `type: oauth` (and `client_id`, `client_secret`, `scopes`, `client_metadata_url`, `connection`, `token_endpoint`, `audience`)";
    match v {
        Value::String(s) if s == "oauth" => Some(OAuth::default()),
        Value::Object(_) => {
            let f = Fields::new(
                v,
                at,
                &[
                    "type",
                    "client_id",
                    "client_secret",
                    "scopes",
                    "client_metadata_url",
                    "connection",
                    "token_endpoint",
                    "audience",
                ],
                e,
            )?;
            if f.string("type", e).as_deref() != Some("oauth") {
                e.push(&f.at("type"), WHAT);
                return None;
            }
            let client_id = f.string("client_id", e);
            let client_secret = f.string("client_secret", e);
            if client_secret.is_some() && client_id.is_none() {
                e.push(
                    &f.at("client_secret"),
                    "a client secret belongs to a pre-registered `client_id`; give both",
                );
            }
            let scopes = f.strings("scopes", e).unwrap_or_default();
            if let Some(bad) = scopes
                .iter()
                .find(|s| s.is_empty() || s.contains(char::is_whitespace))
            {
                e.push(
                    &f.at("scopes"),
                    format!("{bad:?} is not a scope (one word each)"),
                );
            }
            let client_metadata_url = f.string("client_metadata_url", e);
            if let Some(url) = &client_metadata_url
                && !url::Url::parse(url).is_ok_and(|u| u.scheme() == "https" && u.path() != "/")
            {
                e.push(
                    &f.at("client_metadata_url"),
                    format!("{url:?} is not an https URL with a path (a Client ID Metadata Document's address is its client id)"),
                );
            }
            let connection = f.string("connection", e);
            let per_user = connection.as_deref() == Some("per_user");
            let token_endpoint = f.string("token_endpoint", e);
            let audience = f.string("audience", e);
            let exchange = match connection.as_deref() {
                None | Some("shared" | "per_user") => None,
                Some(mode @ ("exchange" | "forward")) => match &token_endpoint {
                    Some(_) if mode == "forward" && audience.is_none() => {
                        e.push(
                            &f.at("connection"),
                            "`forward` needs the `audience` a caller's token must include to be sent on (the server's)",
                        );
                        None
                    }
                    Some(url)
                        if url::Url::parse(url)
                            .is_ok_and(|u| matches!(u.scheme(), "http" | "https")) =>
                    {
                        Some(TokenExchange {
                            token_endpoint: url.clone(),
                            audience: audience.clone(),
                            forward: mode == "forward",
                        })
                    }
                    Some(url) => {
                        e.push(
                            &f.at("token_endpoint"),
                            format!("{url:?} is not an http(s) URL"),
                        );
                        None
                    }
                    None => {
                        e.push(
                            &f.at("connection"),
                            format!("`{mode}` needs the identity provider's `token_endpoint` (where callers' tokens are exchanged, RFC 8693, and toolsmith's own is asked for)"),
                        );
                        None
                    }
                },
                Some(other) => {
                    e.push(
                        &f.at("connection"),
                        format!("{other:?} is not a connection mode (`shared`: one connection for every caller; `per_user`: each caller connects its own account; `exchange`: each caller's JWT exchanged for the server, RFC 8693; `forward`: each caller's JWT sent on when it is for the server too)"),
                    );
                    None
                }
            };
            if !matches!(connection.as_deref(), Some("exchange" | "forward"))
                && (token_endpoint.is_some() || audience.is_some())
            {
                e.push(
                    &f.at(if token_endpoint.is_some() {
                        "token_endpoint"
                    } else {
                        "audience"
                    }),
                    "belongs to `connection: exchange` or `forward`",
                );
            }
            Some(OAuth {
                client_id,
                client_secret,
                scopes,
                client_metadata_url,
                per_user,
                exchange,
            })
        }
        _ => {
            e.push(at, WHAT);
            None
        }
    }
}

/// The `{field}` names in a header value (identifiers only: other braces are text).
fn placeholders(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close)
                if close > 0
                    && after[..close]
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_') =>
            {
                out.push(after[..close].to_owned());
                rest = &after[close + 1..];
            }
            _ => rest = after,
        }
    }
    out
}

fn overrides(f: &Fields<'_>, e: &mut Errs) -> BTreeMap<String, ToolOverride> {
    let mut out = BTreeMap::new();
    let Some(v) = f.get("tools") else { return out };
    let Value::Object(map) = v else {
        e.push(
            &f.at("tools"),
            "expected a mapping of upstream tool names to overrides",
        );
        return out;
    };
    for (tool, v) in map {
        let at = join(&f.at("tools"), tool);
        let Some(o) = Fields::new(v, &at, OVERRIDE_KEYS, e) else {
            continue;
        };
        let name = o.string("name", e);
        if let Some(n) = &name
            && let Err(m) = ToolName::new(n, NameRule::Portable)
        {
            e.push(&o.at("name"), m);
        }
        let danger = danger(&o, e);
        let timeout_ms = o.uint("timeout_ms", e);
        if timeout_ms.is_some_and(|t| !(1..=MAX_TIMEOUT_MS).contains(&t)) {
            e.push(&o.at("timeout_ms"), format!("outside 1..={MAX_TIMEOUT_MS}"));
        }
        out.insert(
            tool.clone(),
            ToolOverride {
                name,
                description: o.string("description", e),
                danger,
                tags: o.strings("tags", e),
                enabled: o.boolean("enabled", e),
                timeout_ms,
            },
        );
    }
    out
}
