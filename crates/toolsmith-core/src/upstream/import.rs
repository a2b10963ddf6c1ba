//! The MCP configuration files people already have, read into servers: Claude Desktop's
//! `claude_desktop_config.json` and Claude Code's or Cursor's `.mcp.json` (`mcpServers`), and
//! VS Code's `mcp.json` (`servers`).
//!
//! Each entry is a stdio server (`command`, `args`, `env`) or a Streamable HTTP one (`type:
//! "http"` or `"streamable-http"`, `url`, `headers`). Values that look secret — environment
//! variables and headers whose names speak of keys, tokens, secrets, passwords or
//! authorization — become secret config fields (shown as `***` everywhere; a header keeps a
//! `{field}` placeholder). A VS Code `${input:ID}` prompt becomes a config field to fill in
//! (described by the file's `inputs`; secret for a password), written `{field}` where the
//! prompt was: the server waits for its value. An entry toolsmith cannot serve (legacy SSE, an
//! unknown field) is skipped with the reason, never dropped silently.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::{DEFAULT_TIMEOUT_MS, McpServer, OnChange, Transport};
use crate::model::Parameter;

/// What a configuration file gave.
#[derive(Debug, Default)]
pub struct Imported {
    pub servers: Vec<McpServer>,
    /// `(entry name, why it was skipped)`.
    pub skipped: Vec<(String, String)>,
    /// `(entry name, the server name it got)` where the entry's name was not a valid one.
    pub renamed: Vec<(String, String)>,
}

const STDIO_KEYS: &[&str] = &["type", "command", "args", "env", "disabled"];
const HTTP_KEYS: &[&str] = &["type", "url", "headers", "disabled"];

/// Reads a configuration file's JSON. `var` reads an environment variable, for values written
/// `${NAME}` or `${env:NAME}`.
pub fn from_mcp_config(
    doc: &Value,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<Imported, NotAClientConfig> {
    let entries = doc
        .get("mcpServers")
        .or_else(|| doc.get("servers"))
        .and_then(Value::as_object)
        .ok_or(NotAClientConfig)?;
    // VS Code's `inputs`: what its `${input:ID}` prompts ask for, by id.
    let inputs: Map<String, Value> = doc
        .get("inputs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|i| Some((i.get("id")?.as_str()?.to_owned(), i.clone())))
        .collect();
    let mut out = Imported::default();
    for (entry, v) in entries {
        let name = server_name(entry);
        if name != *entry {
            out.renamed.push((entry.clone(), name.clone()));
        }
        match server(&name, v, var, &inputs) {
            Ok(s) => out.servers.push(s),
            Err(why) => out.skipped.push((entry.clone(), why)),
        }
    }
    Ok(out)
}

/// A file with no servers mapping a client's configuration has (each entry's own problem is
/// in [`Imported::skipped`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("no `mcpServers` (Claude Desktop, .mcp.json) or `servers` (VS Code) mapping in the file")]
pub struct NotAClientConfig;

/// A valid server name for an entry (`[A-Za-z0-9_-]{1,64}`): other characters become `-`.
fn server_name(entry: &str) -> String {
    let mut name: String = entry
        .chars()
        .map(
            |c| match c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                true => c,
                false => '-',
            },
        )
        .take(64)
        .collect();
    if name.is_empty() {
        name = "server".into();
    }
    name
}

/// Whether a variable or header name speaks of a secret.
pub fn looks_secret(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    [
        "key",
        "token",
        "secret",
        "password",
        "passwd",
        "auth",
        "credential",
        "cookie",
        "session",
    ]
    .iter()
    .any(|w| n.contains(w))
}

/// A VS Code `${input:ID}`: a value the user is asked for, which becomes a config field to fill
/// in (its `inputs` entry gives its description and whether it is a password).
struct Asked<'a> {
    /// The file's `inputs`, by id.
    inputs: &'a Map<String, Value>,
    /// The fields asked for so far in this entry.
    fields: Vec<Parameter>,
}

impl Asked<'_> {
    /// The `{field}` written where `${input:id}` was; `key` is the variable or header it is
    /// the value of (a name that speaks of a secret makes the field secret too).
    fn field(&mut self, id: &str, key: Option<&str>) -> String {
        let name = field_name(id);
        let input = self.inputs.get(id);
        let secret = input.and_then(|i| i["password"].as_bool()).unwrap_or(false)
            || key.is_some_and(looks_secret);
        match self.fields.iter_mut().find(|p| p.name == name) {
            Some(p) => p.secret |= secret,
            None => self.fields.push(Parameter {
                name: name.clone(),
                description: input
                    .and_then(|i| i["description"].as_str())
                    .map(str::to_owned)
                    .or_else(|| Some(format!("asked for by VS Code's `${{input:{id}}}`"))),
                secret,
                ..Parameter::default()
            }),
        }
        format!("{{{name}}}")
    }
}

/// `${NAME}` or `${env:NAME}` read; a VS Code `${input:ID}` becomes `{field}`, a config field
/// to fill in (`key`: the variable or header whose value this is).
fn expand(
    text: &str,
    var: &dyn Fn(&str) -> Option<String>,
    asked: &mut Asked<'_>,
    key: Option<&str>,
) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find("${") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let close = after
            .find('}')
            .ok_or_else(|| format!("an unclosed `${{` in {text:?}"))?;
        let inner = &after[..close];
        if let Some(id) = inner.strip_prefix("input:") {
            out.push_str(&asked.field(id, key));
        } else {
            let name = inner.strip_prefix("env:").unwrap_or(inner);
            let value =
                var(name).ok_or_else(|| format!("environment variable {name:?} is not set"))?;
            out.push_str(&value);
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Whether a value asks VS Code to prompt for it.
fn asks(text: &str) -> bool {
    text.contains("${input:")
}

fn server(
    name: &str,
    v: &Value,
    var: &dyn Fn(&str) -> Option<String>,
    inputs: &Map<String, Value>,
) -> Result<McpServer, String> {
    let mut asked = Asked {
        inputs,
        fields: Vec::new(),
    };
    let map = v.as_object().ok_or("not a mapping")?;
    let kind = map
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or(if map.contains_key("url") {
            "http"
        } else {
            "stdio"
        });
    let known = match kind {
        "stdio" => STDIO_KEYS,
        "http" | "streamable-http" | "streamableHttp" => HTTP_KEYS,
        "sse" => return Err("a legacy SSE server: toolsmith speaks Streamable HTTP only".into()),
        other => return Err(format!("an unknown server type {other:?}")),
    };
    if let Some(unknown) = map.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(format!(
            "the field {unknown:?} is not one toolsmith knows for a {kind} server (known: {})",
            known.join(", ")
        ));
    }
    let mut config_schema = Vec::new();
    let mut config = Map::new();
    let mut secret = |field: String, env_name: Option<String>, value: String| {
        config_schema.push(Parameter {
            name: field.clone(),
            secret: true,
            env_name,
            ..Parameter::default()
        });
        config.insert(field, json!(value));
    };
    let transport = if kind == "stdio" {
        let program = map
            .get("command")
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty())
            .ok_or("no `command`")?;
        let mut command = vec![expand(program, var, &mut asked, None)?];
        for a in map
            .get("args")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let text = match a {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            command.push(expand(&text, var, &mut asked, None)?);
        }
        let mut env = BTreeMap::new();
        for (k, val) in map
            .get("env")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let raw = val.as_str().map_or_else(|| val.to_string(), str::to_owned);
            let text = expand(&raw, var, &mut asked, Some(k))?;
            if asks(&raw) {
                // A value to fill in: the field it names (secret where the variable sounds so).
                env.insert(k.clone(), text);
            } else if looks_secret(k) {
                secret(field_name(k), Some(k.clone()), text);
            } else {
                env.insert(k.clone(), text);
            }
        }
        Transport::Stdio {
            command,
            env,
            // What programs started this way expect to find (npx, uvx, node, python).
            env_allowlist: vec!["PATH".into(), "HOME".into(), "LANG".into()],
            working_dir: None,
            sandbox: None,
        }
    } else {
        let url = map.get("url").and_then(Value::as_str).ok_or("no `url`")?;
        let mut headers = BTreeMap::new();
        for (k, val) in map
            .get("headers")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let raw = val.as_str().map_or_else(|| val.to_string(), str::to_owned);
            if asks(&raw) {
                headers.insert(k.clone(), expand(&raw, var, &mut asked, Some(k))?);
            } else if looks_secret(k) {
                // `Bearer <secret>`: the scheme stays in the header, the secret is the field.
                let (scheme, rest) = match raw.split_once(' ') {
                    Some((s, r))
                        if ["bearer", "basic", "token"]
                            .contains(&s.to_ascii_lowercase().as_str()) =>
                    {
                        (format!("{s} "), r.to_owned())
                    }
                    _ => (String::new(), raw.clone()),
                };
                let field = field_name(k);
                headers.insert(k.clone(), format!("{scheme}{{{field}}}"));
                secret(field, None, expand(&rest, var, &mut asked, Some(k))?);
            } else {
                headers.insert(k.clone(), expand(&raw, var, &mut asked, Some(k))?);
            }
        }
        Transport::Http {
            url: expand(url, var, &mut asked, None)?,
            headers,
            auth: None,
        }
    };
    config_schema.extend(asked.fields);
    Ok(McpServer {
        name: name.to_owned(),
        transport,
        prefix: None,
        include: Vec::new(),
        exclude: Vec::new(),
        tools: BTreeMap::new(),
        on_change: OnChange::Hold,
        on_suspicious: Default::default(),
        protocol: Default::default(),
        results: Default::default(),
        timeout_ms: DEFAULT_TIMEOUT_MS,
        idle_timeout_ms: None,
        enabled: map.get("disabled") != Some(&Value::Bool(true)),
        config_schema,
        config,
    })
}

/// A config field's name for a variable or header name: lower case, `_` for the rest.
pub(crate) fn field_name(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| match c.is_ascii_alphanumeric() {
            true => c.to_ascii_lowercase(),
            false => '_',
        })
        .collect();
    if !out.starts_with(|c: char| c.is_ascii_alphabetic()) {
        out.insert_str(0, "f_");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        (name == "GH").then(|| "ghp_secret".to_owned())
    }

    #[test]
    fn claude_desktop_and_vs_code_shapes() {
        let doc = json!({"mcpServers": {
            "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
                "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GH}", "LOG_LEVEL": "info"}},
            "remote": {"type": "http", "url": "https://mcp.example.com/mcp",
                "headers": {"Authorization": "Bearer ${env:GH}", "X-Team": "a"}},
            "old": {"type": "sse", "url": "https://x/sse"},
            "odd": {"command": "x", "cwd": "/srv"},
            "vs": {"type": "stdio", "command": "node", "args": ["${input:path}"]},
            "my server.v2": {"command": "true"}
        }});
        let got = from_mcp_config(&doc, &env).expect("read");
        let names: Vec<&str> = got.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            ["github", "remote", "vs", "my-server-v2"],
            "in file order"
        );
        let skipped: Vec<&str> = got.skipped.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(skipped, ["old", "odd"]);
        assert!(got.skipped[1].1.contains("\"cwd\""), "{:?}", got.skipped);
        assert!(got.skipped[0].1.contains("SSE"), "{:?}", got.skipped);
        assert_eq!(
            got.renamed,
            [("my server.v2".to_owned(), "my-server-v2".to_owned())]
        );
        let gh = &got.servers[0];
        assert_eq!(gh.config["github_personal_access_token"], "ghp_secret");
        assert!(gh.config_schema[0].secret);
        let Transport::Stdio { env, .. } = &gh.transport else {
            panic!("stdio")
        };
        assert_eq!(env.get("LOG_LEVEL").map(String::as_str), Some("info"));
        assert!(!env.contains_key("GITHUB_PERSONAL_ACCESS_TOKEN"));
        let remote = &got.servers[1];
        assert_eq!(
            remote.resolved_headers()["Authorization"],
            "Bearer ghp_secret"
        );
        let shown = remote
            .to_catalog_value(crate::model::Secrets::Redact)
            .to_string();
        assert!(!shown.contains("ghp_secret"), "{shown}");
        // VS Code's prompt: a config field to fill in; the server waits for it.
        let vs = &got.servers[2];
        assert_eq!(vs.config_schema[0].name, "path");
        assert_eq!(vs.unfilled(), ["path"]);
        let mut filled = vs.clone();
        filled.config.insert("path".into(), json!("/srv/app.js"));
        assert!(filled.unfilled().is_empty());
        assert_eq!(filled.resolved_command(), ["node", "/srv/app.js"]);
    }

    #[test]
    fn vs_code_inputs_become_config_fields_to_fill_in() {
        let doc = json!({
            "inputs": [
                {"type": "promptString", "id": "api-key", "description": "Your Acme API key", "password": true},
                {"type": "promptString", "id": "region", "description": "Which region"}
            ],
            "servers": {
                "acme": {"type": "stdio", "command": "acme-mcp", "args": ["--region", "${input:region}"],
                    "env": {"ACME_KEY": "${input:api-key}", "ACME_URL": "https://${input:region}.acme.example"}},
                "web": {"type": "http", "url": "https://mcp.acme.example/${input:region}",
                    "headers": {"Authorization": "Bearer ${input:api-key}"}}
            }
        });
        let got = from_mcp_config(&doc, &env).expect("read");
        assert!(got.skipped.is_empty(), "{:?}", got.skipped);
        let acme = &got.servers[0];
        let fields: Vec<(&str, bool, Option<&str>)> = acme
            .config_schema
            .iter()
            .map(|p| (p.name.as_str(), p.secret, p.description.as_deref()))
            .collect();
        assert_eq!(
            fields,
            [
                ("region", false, Some("Which region")),
                ("api_key", true, Some("Your Acme API key")),
            ]
        );
        assert!(acme.config.is_empty(), "nothing to fill them with yet");
        assert_eq!(acme.unfilled(), ["region", "api_key"]);
        let mut filled = acme.clone();
        filled.config.insert("region".into(), json!("eu"));
        filled.config.insert("api_key".into(), json!("k-123"));
        assert_eq!(filled.resolved_command(), ["acme-mcp", "--region", "eu"]);
        assert_eq!(filled.resolved_env()["ACME_KEY"], "k-123");
        assert_eq!(filled.resolved_env()["ACME_URL"], "https://eu.acme.example");
        let web = &got.servers[1];
        assert_eq!(
            web.unfilled(),
            ["api_key", "region"],
            "in the order they were met"
        );
        let mut web = web.clone();
        web.config.insert("region".into(), json!("eu"));
        web.config.insert("api_key".into(), json!("k-123"));
        assert_eq!(
            web.resolved_url().as_deref(),
            Some("https://mcp.acme.example/eu")
        );
        assert_eq!(web.resolved_headers()["Authorization"], "Bearer k-123");
        // Stored and read back as the catalog form: the fields, no values, still to fill.
        let form = acme.to_catalog_value(crate::model::Secrets::Keep);
        let again = crate::catalog::parse_server(&form, &crate::catalog::TextSource(String::new()))
            .expect("reads back");
        assert_eq!(again.unfilled(), ["region", "api_key"]);
    }
}
