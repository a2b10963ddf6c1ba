//! `servers` — upstream MCP servers in the registry (list, show, changes, approve, reject,
//! refresh) — and `import --mcp-config`, which reads the MCP configuration files people
//! already have. Decisions are made on the registry directly (a running server follows within
//! a moment); live status and refresh go through a running server's REST API (`--url`).

use std::collections::BTreeMap;
use std::time::Duration;

use clap::Args;
use serde_json::json;
use toolsmith_core::model::Secrets;
use toolsmith_core::upstream::{McpServer, Transport, from_mcp_config};
use toolsmith_store::{UpstreamStore, held, import_servers};

use super::registry::registry;
use super::*;

#[derive(Debug, Subcommand)]
pub enum ServersCommand {
    /// Every server: kind, status (when a server answers at --url), tools, pending changes.
    List {
        #[command(flatten)]
        args: ServersArgs,
    },
    /// One server: its definition (secrets as ***), status, tools and pending changes.
    Show {
        name: String,
        #[command(flatten)]
        args: ServersArgs,
    },
    /// The changes upstreams made to their tools, prompts and templates, waiting for a
    /// decision, with what differs and what the guardrail scanner finds in them.
    Changes {
        /// Only this server's.
        name: Option<String>,
        #[command(flatten)]
        args: ServersArgs,
    },
    /// Approve pending changes of a server, or of an OpenAPI source (`openapi:NAME`: changes
    /// an import held) — all, or those of the named tools: the new definitions become new
    /// versions and are served.
    Approve {
        name: String,
        /// Upstream tool names (all pending when none).
        tools: Vec<String>,
        /// Approve definitions the guardrail scanner holds too (see their findings with
        /// `servers changes`); the approval records who allowed them.
        #[arg(long)]
        allow: bool,
        #[command(flatten)]
        args: ServersArgs,
    },
    /// Reject pending changes: the approved definitions stay served.
    Reject {
        name: String,
        tools: Vec<String>,
        #[command(flatten)]
        args: ServersArgs,
    },
    /// Ask the running server to list a server's tools again (needs `toolsmith serve`).
    Refresh {
        name: String,
        #[command(flatten)]
        args: ServersArgs,
    },
    /// Connect an `auth: oauth` server's shared connection (needs `toolsmith serve`): prints
    /// the URL to open in a browser, then waits until the consent comes back to the running
    /// server and the server is connected.
    Connect {
        name: String,
        /// How long to wait for the consent, in seconds.
        #[arg(long, default_value_t = 900, value_name = "SECONDS")]
        wait: u64,
        #[command(flatten)]
        args: ServersArgs,
    },
    /// Forget an `auth: oauth` server's shared tokens (needs `toolsmith serve`): it needs
    /// authorization again.
    Disconnect {
        name: String,
        #[command(flatten)]
        args: ServersArgs,
    },
}

#[derive(Debug, Args, Default)]
pub struct ServersArgs {
    #[command(flatten)]
    db: DbArg,
    #[command(flatten)]
    live: Live,
}

/// How a command reaches a running toolsmith server.
#[derive(Debug, Args, Default)]
pub struct Live {
    /// A running toolsmith server, for live status and refresh [default: $TOOLSMITH_URL,
    /// else http://127.0.0.1:7700].
    #[arg(long, value_name = "URL")]
    url: Option<String>,
    /// Its token [default: $TOOLSMITH_TOKEN, else the local admin token of a server
    /// started without tokens by this user].
    #[arg(long, value_name = "SECRET")]
    token: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

impl Live {
    pub(super) fn base(&self) -> String {
        let url = self
            .url
            .clone()
            .or_else(|| std::env::var("TOOLSMITH_URL").ok())
            .unwrap_or_else(|| "http://127.0.0.1:7700".into());
        format!("{}/v1", url.trim_end_matches('/').trim_end_matches("/v1"))
    }

    /// One request to the running server: its JSON, or why there is none.
    pub(super) fn live(&self, method: &str, path: &str) -> Result<Value, String> {
        self.live_within(method, path, Duration::from_secs(5))
    }

    /// [`Self::live`] with its own deadline (beginning an authorization reads the
    /// authorization server's metadata and may register toolsmith with it).
    pub(super) fn live_within(
        &self,
        method: &str,
        path: &str,
        within: Duration,
    ) -> Result<Value, String> {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(within))
            .build()
            .into();
        let url = format!("{}{path}", self.base());
        let mut req = ureq::http::Request::builder().method(method).uri(&url);
        if let Some(t) = self
            .token
            .clone()
            .or_else(|| std::env::var("TOOLSMITH_TOKEN").ok())
            .or_else(crate::local_admin::read)
        {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        let req = req.body(Vec::new()).map_err(|e| format!("{url}: {e}"))?;
        let mut resp = agent
            .run(req)
            .map_err(|e| format!("no toolsmith server answered at {url} ({e})"))?;
        let status = resp.status().as_u16();
        let text = resp.body_mut().read_to_string().unwrap_or_default();
        let v: Value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        match status {
            200..=299 => Ok(v),
            _ => Err(format!(
                "{url}: HTTP {status}: {}",
                v["error"]["message"].as_str().unwrap_or("no message")
            )),
        }
    }

    /// Prints where to consent for an authorization begun (`started`, as the server
    /// answered), then polls until `connected` says the consent came back (within `wait`
    /// seconds); `again` is the command that begins it anew.
    pub(super) fn await_consent(
        &self,
        started: &Value,
        wait: u64,
        connected: impl Fn(&Self) -> bool,
        (name, again): (&str, &str),
    ) -> ExitCode {
        let url = started["authorization_url"].as_str().unwrap_or_default();
        if self.json {
            outln!("{started}");
        } else {
            outln!(
                "Open this in a browser and consent (it comes back to this server):\n\n  {url}\n"
            );
            eprintln!(
                "waiting for the consent (up to {wait} s; Ctrl-C stops waiting, not the authorization)…"
            );
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(wait);
        while std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(500));
            if connected(self) {
                if !self.json {
                    outln!("{name}: connected");
                }
                return ExitCode::SUCCESS;
            }
        }
        eprintln!("{name}: no consent came back within {wait} s; run `{again}` again");
        ExitCode::FAILURE
    }
}

impl std::ops::Deref for ServersArgs {
    type Target = Live;
    fn deref(&self) -> &Live {
        &self.live
    }
}

impl ServersArgs {
    /// Live status by server name, when a server answers.
    fn statuses(&self) -> BTreeMap<String, Value> {
        self.live("GET", "/servers")
            .ok()
            .and_then(|v| v["servers"].as_array().cloned())
            .into_iter()
            .flatten()
            .filter_map(|s| Some((s["name"].as_str()?.to_owned(), s["status"].clone())))
            .filter(|(_, st)| !st.is_null())
            .collect()
    }
}

pub(super) fn run(command: Option<ServersCommand>, args: ServersArgs) -> Result<ExitCode> {
    match command.unwrap_or(ServersCommand::List { args }) {
        ServersCommand::List { args } => list(args),
        ServersCommand::Show { name, args } => show(name, args),
        ServersCommand::Changes { name, args } => changes(name, args),
        ServersCommand::Approve {
            name,
            tools,
            allow,
            args,
        } => decide(name, tools, args, true, allow),
        ServersCommand::Reject { name, tools, args } => decide(name, tools, args, false, false),
        ServersCommand::Refresh { name, args } => {
            let v = args
                .live("POST", &format!("/servers/{name}/refresh"))
                .map_err(|e| anyhow::anyhow!("refresh asks the running server: {e}"))?;
            if args.json {
                outln!("{v}");
            } else {
                outln!(
                    "{name}: asked to list its tools again; see `toolsmith servers changes {name}`"
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        ServersCommand::Connect { name, wait, args } => connect(name, wait, args),
        ServersCommand::Disconnect { name, args } => {
            let v = args
                .live("DELETE", &format!("/servers/{name}/connect"))
                .map_err(|e| anyhow::anyhow!("disconnect asks the running server: {e}"))?;
            if args.json {
                outln!("{v}");
            } else if v["disconnected"] == true {
                outln!("{name}: tokens forgotten; it needs authorization again");
            } else {
                outln!("{name}: was not connected");
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `servers connect`: begins the authorization, prints where to consent, and waits for the
/// running server to say the connection is made.
fn connect(name: String, wait: u64, args: ServersArgs) -> Result<ExitCode> {
    let started = args
        .live_within(
            "POST",
            &format!("/servers/{name}/connect"),
            Duration::from_secs(60),
        )
        .map_err(|e| anyhow::anyhow!("connect asks the running server: {e}"))?;
    let path = format!("/servers/{name}");
    Ok(args.await_consent(
        &started,
        wait,
        |live| {
            live.live("GET", &path)
                .is_ok_and(|v| v["oauth"]["connected"] == true)
        },
        (&name, &format!("toolsmith servers connect {name}")),
    ))
}

fn list(args: ServersArgs) -> Result<ExitCode> {
    let live = args.statuses();
    let json = args.json;
    registry(&args.db, |store, _| async move {
        let mut rows = Vec::new();
        for r in store.servers().await? {
            let pending = store
                .changes(Some(&r.server.name))
                .await?
                .iter()
                .filter(|c| c.status == "pending")
                .count();
            rows.push(json!({
                "name": r.server.name,
                "kind": r.server.transport.kind(),
                "version": r.version,
                "enabled": r.server.enabled,
                "pending": pending,
                "status": live.get(&r.server.name).cloned(),
            }));
        }
        if json {
            outln!("{}", Value::Array(rows));
            return Ok(ExitCode::SUCCESS);
        }
        if rows.is_empty() {
            outln!(
                "no MCP servers in the registry (add one with `mcp_servers:` in a catalog, or `toolsmith import --mcp-config FILE`)"
            );
        }
        for r in &rows {
            let status = match &r["status"] {
                Value::Null => "(no server answers at the URL)".to_owned(),
                st => format!(
                    "{} ({} tools, {} restarts{})",
                    st["status"].as_str().unwrap_or("?"),
                    st["tools"],
                    st["restarts"],
                    st["last_error"]
                        .as_str()
                        .map(|e| format!("; {}", short(e)))
                        .unwrap_or_default()
                ),
            };
            outln!(
                "{:<20} {:<6} v{:<3} {:>2} pending  {status}",
                r["name"].as_str().unwrap_or_default(),
                r["kind"].as_str().unwrap_or_default(),
                r["version"],
                r["pending"]
            );
        }
        Ok(ExitCode::SUCCESS)
    })
}

fn short(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    match line.chars().count() > 100 {
        true => format!("{}…", line.chars().take(100).collect::<String>()),
        false => line.to_owned(),
    }
}

fn show(name: String, args: ServersArgs) -> Result<ExitCode> {
    let live = args.statuses();
    let log = args
        .live("GET", &format!("/servers/{name}/log"))
        .ok()
        .and_then(|v| v["log"].as_str().map(str::to_owned));
    let (json, base) = (args.json, args.base());
    registry(&args.db, |store, _| async move {
        let r = store.get_server(&name).await?;
        let tools: Vec<String> = store
            .search_all(toolsmith_store::Query {
                include_disabled: true,
                ..toolsmith_store::Query::default()
            })
            .await?
            .into_iter()
            .filter(|t| t.tool.executor.upstream().is_some_and(|m| m.server == name))
            .map(|t| t.tool.name.to_string())
            .collect();
        let pending = store
            .changes(Some(&name))
            .await?
            .iter()
            .filter(|c| c.status == "pending")
            .count();
        let v = json!({
            "name": name,
            "version": r.version,
            "updated_by": r.updated_by,
            "definition": r.server.to_catalog_value(Secrets::Redact),
            "status": live.get(&name).cloned(),
            "tools": tools,
            "changes": pending,
        });
        if json {
            outln!("{v}");
            return Ok(ExitCode::SUCCESS);
        }
        outln!("{name} (version {}, by {})", r.version, r.updated_by);
        outln!(
            "{}",
            serde_yaml_ng::to_string(&v["definition"])
                .unwrap_or_default()
                .trim_end()
        );
        match live.get(&name) {
            Some(st) => outln!("status: {st}"),
            None => outln!("status: (no toolsmith server answers at {base})"),
        }
        outln!("tools ({}): {}", tools.len(), tools.join(", "));
        outln!("changes waiting: {pending} (toolsmith servers changes {name})");
        if let Some(log) = log.filter(|l| !l.is_empty()) {
            outln!("stderr (its end):\n{}", log.trim_end());
        }
        Ok(ExitCode::SUCCESS)
    })
}

fn changes(name: Option<String>, args: ServersArgs) -> Result<ExitCode> {
    let json = args.json;
    registry(&args.db, |store, _| async move {
        let list = store.changes(name.as_deref()).await?;
        let mut pins: BTreeMap<String, BTreeMap<String, Value>> = BTreeMap::new();
        let mut out = Vec::new();
        let mut others = BTreeMap::new();
        for c in &list {
            if !others.contains_key(&c.server) {
                let names =
                    toolsmith_gateway::guardrails::foreign_names(&store, Some(&c.server)).await?;
                others.insert(c.server.clone(), names);
            }
            if !pins.contains_key(&c.server) {
                let p = store.pins(&c.server).await?;
                pins.insert(
                    c.server.clone(),
                    p.into_iter().map(|p| (p.tool, p.pinned)).collect(),
                );
            }
            let (before, after) = match held::is_openapi_source(&c.server) {
                // A held OpenAPI change: the served definition against the document's.
                true => held::sides(&store, c).await,
                false => (
                    pins[&c.server].get(&c.tool).cloned().unwrap_or(Value::Null),
                    c.pinned.clone().unwrap_or(Value::Null),
                ),
            };
            let findings = match held::is_openapi_source(&c.server) {
                true => Vec::new(),
                false => toolsmith_gateway::guardrails::scan_key(
                    &c.tool,
                    c.pinned.as_ref(),
                    &others[&c.server],
                ),
            };
            out.push(json!({
                "server": c.server, "tool": c.tool, "kind": c.kind, "status": c.status,
                "detected_at_ms": c.detected_at_ms,
                "diff": toolsmith_store::diff(&before, &after),
                "findings": findings,
            }));
        }
        if json {
            outln!("{}", Value::Array(out));
            return Ok(ExitCode::SUCCESS);
        }
        if out.is_empty() {
            outln!("no changes waiting");
        }
        for c in &out {
            outln!(
                "{} {}: {} ({})",
                c["server"].as_str().unwrap_or_default(),
                c["tool"].as_str().unwrap_or_default(),
                c["kind"].as_str().unwrap_or_default(),
                c["status"].as_str().unwrap_or_default()
            );
            for d in c["diff"].as_array().into_iter().flatten() {
                outln!(
                    "  {}: {} → {}",
                    d["path"].as_str().unwrap_or_default(),
                    short(&d["from"].to_string()),
                    short(&d["to"].to_string())
                );
            }
            for f in c["findings"].as_array().into_iter().flatten() {
                outln!("{}", crate::output::finding_line(f));
            }
        }
        Ok(ExitCode::SUCCESS)
    })
}

fn decide(
    name: String,
    tools: Vec<String>,
    args: ServersArgs,
    approve: bool,
    allow: bool,
) -> Result<ExitCode> {
    let json = args.json;
    registry(&args.db, |store, author| async move {
        // An OpenAPI source's held changes (`openapi:NAME`), or an upstream server's.
        let done = match (held::is_openapi_source(&name), approve) {
            (true, true) => held::approve_held(&store, &name, &tools, &author).await?,
            (true, false) => held::reject_held(&store, &name, &tools).await?,
            (false, true) => {
                toolsmith_gateway::federation::approve(&store, &name, &tools, &author, allow)
                    .await
                    .map_err(anyhow::Error::msg)?
            }
            (false, false) => toolsmith_gateway::federation::reject(&store, &name, &tools)
                .await
                .map_err(anyhow::Error::msg)?,
        };
        let verb = if approve { "approved" } else { "rejected" };
        if json {
            outln!("{}", json!({ verb: done }));
        } else if done.is_empty() {
            outln!("{name}: no changes waiting");
        } else {
            outln!(
                "{name}: {verb} {} change(s): {}",
                done.len(),
                done.join(", ")
            );
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// `import --mcp-config FILE`: the servers of an MCP client's configuration into the
/// registry (or, with `print`, as catalog YAML on stdout).
pub(super) fn import_config(
    file: &std::path::Path,
    print: bool,
    db: &DbArg,
    json: bool,
) -> Result<ExitCode> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let doc: Value =
        serde_json::from_str(&text).with_context(|| format!("{}: not JSON", file.display()))?;
    let imported = match print {
        // Printed, a secret is a reference to the variable it came from (or one to set).
        true => from_mcp_config(&doc, &|name: &str| Some(format!("${{{name}}}"))),
        false => from_mcp_config(&doc, &|name: &str| std::env::var(name).ok()),
    }
    .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    for (entry, name) in &imported.renamed {
        eprintln!(
            "{}: server {entry:?} is named {name:?} here",
            file.display()
        );
    }
    for (entry, why) in &imported.skipped {
        eprintln!("{}: server {entry:?} skipped: {why}", file.display());
    }
    let mut imported = imported;
    for server in &mut imported.servers {
        let folders = toolsmith_exec::sandbox::propose_writes(server);
        if !folders.is_empty() {
            eprintln!(
                "{}: server {:?} is given folders to work in: {} — its sandbox lets it write them (sandbox.filesystem.write; by default a server reads everything but writes only its package caches)",
                file.display(),
                server.name,
                folders.join(", ")
            );
        }
    }
    if print {
        let servers: Vec<Value> = imported.servers.iter().map(printable).collect();
        out!(
            "{}",
            serde_yaml_ng::to_string(&json!({"mcp_servers": servers})).unwrap_or_default()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let servers = imported.servers;
    let skipped = imported.skipped;
    let file = file.to_path_buf();
    // The servers that wait for values (a VS Code `${input:…}`): said, with where to give them.
    let waiting: Vec<(String, Vec<String>)> = servers
        .iter()
        .map(|s| (s.name.clone(), s.unfilled()))
        .filter(|(_, fields)| !fields.is_empty())
        .collect();
    registry(db, |store, author| async move {
        let r = import_servers(&store, &servers, &author).await?;
        if json {
            outln!(
                "{}",
                json!({"created": r.created, "updated": r.updated, "unchanged": r.unchanged,
                    "waiting": waiting.iter().map(|(n, f)| json!({"name": n, "fields": f})).collect::<Vec<_>>(),
                    "skipped": skipped.iter().map(|(n, w)| json!({"name": n, "why": w}))
                        .chain(r.skipped.iter().map(|w| json!({"why": w})))
                        .collect::<Vec<_>>()})
            );
        } else {
            outln!(
                "{}: {} MCP server(s) created, {} updated, {} unchanged, {} skipped",
                file.display(),
                r.created.len(),
                r.updated.len(),
                r.unchanged.len(),
                skipped.len() + r.skipped.len()
            );
            for why in &r.skipped {
                outln!("  skipped {why}");
            }
            for (name, fields) in &waiting {
                outln!(
                    "  {name} waits for {}: fill them in on its page in the web UI, or with `config` in PUT /v1/servers/{name}",
                    fields.join(", ")
                );
            }
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// A server for `--print`: secret config values as `${VAR}` (the variable a stdio server's
/// secret came from, or `<SERVER>_<FIELD>` to set for a header's).
fn printable(s: &McpServer) -> Value {
    let mut v = s.to_catalog_value(Secrets::Keep);
    if let Some(config) = v.get_mut("config").and_then(Value::as_object_mut) {
        for p in s.config_schema.iter().filter(|p| p.secret) {
            // A reference to a variable is printed as it is; a value never is.
            let reference = config
                .get(&p.name)
                .and_then(Value::as_str)
                .is_some_and(|v| {
                    v.starts_with("${")
                        && v.ends_with('}')
                        && v[2..v.len() - 1]
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_')
                });
            if reference {
                continue;
            }
            let var = match (&s.transport, &p.env_name) {
                (Transport::Stdio { .. }, Some(env)) => env.clone(),
                _ => format!("{}_{}", s.name, p.name)
                    .to_ascii_uppercase()
                    .replace('-', "_"),
            };
            config.insert(p.name.clone(), json!(format!("${{{var}}}")));
        }
    }
    v
}
