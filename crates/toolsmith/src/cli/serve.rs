//! `serve` (REST, MCP over HTTP and the web UI) and `mcp` (MCP over stdio).

use super::*;
use toolsmith_gateway::Gateway;
use toolsmith_gateway::start::Startup;

pub(super) fn serve(args: ServeArgs) -> Result<ExitCode> {
    let _telemetry = crate::telemetry::init_logging(args.log_format, &args.traces)?;
    let mut tokens = args
        .tokens
        .iter()
        .map(|t| Token::parse(t))
        .collect::<Result<Vec<_>, _>>()
        .map_err(anyhow::Error::msg)?;
    if let Some(file) = &args.tokens_file {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("--tokens-file {}", file.display()))?;
        let more = toolsmith_gateway::identity::parse_tokens_file(&text)
            .map_err(|e| anyhow::anyhow!("--tokens-file {}: {e}", file.display()))?;
        tokens.extend(more);
    }
    if let Ok(secret) = std::env::var("TOOLSMITH_TOKEN") {
        tokens.push(
            Token::parse(&format!("env={secret}"))
                .map_err(|e| anyhow::anyhow!("TOOLSMITH_TOKEN: {e}"))?,
        );
    }
    toolsmith_server::check_bind(args.addr, &tokens, args.jwt.jwt_issuer.is_some())
        .map_err(anyhow::Error::msg)?;
    scrub_command_line(&args, &tokens);
    let local_token = match tokens.is_empty() && args.jwt.jwt_issuer.is_none() {
        true => Some(crate::local_admin::load_or_create()?),
        false => None,
    };
    let catalog = match (&args.catalog, args.no_catalog) {
        (_, true) => None,
        (Some(file), _) => Some(file.clone()),
        (None, false) => Some(PathBuf::from("examples/catalog.yaml")).filter(|p| p.exists()),
    };
    let catalog = catalog
        .map(|file| load_catalog(&file).map(|c| (file, c)))
        .transpose()?;
    let mut protected = crate::options::registry_files(&args.db.address());
    protected.extend(args.tokens_file.iter().cloned());
    protected.extend(args.db.secret_key_file.iter().cloned());
    let config = args.run.engine_config(&args.workspace, protected);
    let engine = Arc::new(Engine::new(config).map_err(|e| anyhow::anyhow!("--workspace: {e}"))?);
    crate::options::say_sandbox(&engine);
    let author = args.db.author("serve");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    rt.block_on(async move {
        let jwt = args.jwt.verifier().await?;
        let store = args.db.open().await?;
        if let Some((file, catalog)) = catalog {
            let (r, held) =
                toolsmith_store::held::import_catalog(&store, &catalog, args.prune, &author)
                    .await?;
            say!(
                "imported {}: {} created, {} updated, {} unchanged, {} deleted",
                file.display(),
                r.created.len(),
                r.updated.len(),
                r.unchanged.len(),
                r.deleted.len()
            );
            crate::output::say_held(&held, true);
            if !catalog.servers.is_empty() {
                let r = toolsmith_store::import_servers(&store, &catalog.servers, &author).await?;
                say!(
                    "MCP servers of {}: {} created, {} updated, {} unchanged",
                    file.display(),
                    r.created.len(),
                    r.updated.len(),
                    r.unchanged.len()
                );
                for why in &r.skipped {
                    say!("skipped {why}");
                }
            }
            if !catalog.toolsets.is_empty() {
                let r =
                    toolsmith_store::import_toolsets(&store, &catalog.toolsets, &author).await?;
                say!(
                    "toolsets of {}: {} created, {} updated, {} unchanged",
                    file.display(),
                    r.created.len(),
                    r.updated.len(),
                    r.unchanged.len()
                );
            }
        }
        let listener = tokio::net::TcpListener::bind(args.addr)
            .await
            .with_context(|| format!("listening on {}", args.addr))?;
        let local = listener.local_addr()?;
        let no_token = tokens.is_empty() && jwt.is_none();
        say!(
            "registry {} ({}); REST API on http://{local}/v1 and MCP on http://{local}/mcp ({})",
            crate::output::redact_url(&args.db.address()),
            store.backend(),
            match (&jwt, no_token) {
                (_, true) => format!(
                    "no token given: loopback only, as the local admin with the token in {}",
                    crate::local_admin::file().display()
                ),
                (Some(j), false) => format!(
                    "{} token(s), JWTs from {} for {}",
                    tokens.len(),
                    j.config.issuer,
                    j.config.audience
                ),
                (None, false) => format!("{} token(s)", tokens.len()),
            }
        );
        match &local_token {
            Some(secret) => say!("web UI: http://{local}/#token={secret}"),
            None => say!("web UI: http://{local}/"),
        }
        let mut advertise = args
            .advertise_url
            .clone()
            .or_else(|| (!local.ip().is_unspecified()).then(|| format!("http://{local}")));
        if let Some(url) = advertise.as_deref().filter(|u| super::plain_http_off_loopback(u)) {
            if args.plain_http_peers {
                say!(
                    "warning: replicas forward session calls to {url} in clear (--plain-http-peers): \
                     anyone on the network path reads their input and output"
                );
            } else {
                say!(
                    "not advertising {url}: forwarded session calls would cross the network in \
                     clear; advertise an https:// URL (a TLS proxy in front of this replica), or \
                     add --plain-http-peers to accept it"
                );
                advertise = None;
            }
        }
        let mut allow_hosts = args.allow_hosts.clone();
        if let Some(host) = args
            .advertise_url
            .as_deref()
            .and_then(|u| u.split_once("://"))
            .map(|(_, host)| host.trim_end_matches('/').to_owned())
        {
            allow_hosts.push(host);
        }
        if advertise.is_none() && args.advertise_url.is_none() {
            say!(
                "listening on every address with no --advertise-url: replicas of this registry \
                 cannot forward calls for this one's sessions (they answer session_elsewhere)"
            );
        }
        let state = Gateway::start(
            store,
            engine,
            Startup {
                tokens,
                run_retention: args.run_retention,
                local_token: local_token.map(|secret| toolsmith_gateway::LocalToken {
                    secret,
                    file: crate::local_admin::file(),
                }),
                jwt,
                public_url: args.jwt.public_url.clone(),
                rate_limit: args.rate_limit,
                advertise,
                code_limits: Some(args.code.limits()),
            },
        );
        // Where a browser comes back to after consenting to an OAuth connection, when no
        // --public-url says: this address (loopback when listening on every address).
        state.set_local_url(match local.ip().is_unspecified() {
            true => format!("http://127.0.0.1:{}", local.port()),
            false => format!("http://{local}"),
        });
        let gateway = state.clone();
        let metrics_on = args.metrics == "on";
        if let (true, Some(addr)) = (metrics_on, args.metrics_addr) {
            toolsmith_server::check_bind(addr, state.tokens(), state.jwt().is_some())
                .map_err(|e| anyhow::anyhow!("--metrics-addr: {e}"))?;
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("--metrics-addr: listening on {addr}"))?;
            say!("metrics on http://{}/metrics", listener.local_addr()?);
            let metrics = toolsmith_server::metrics::app(state.clone());
            tokio::spawn(async move {
                let shutdown = std::future::pending::<()>();
                let grace = std::time::Duration::from_secs(1);
                if let Err(e) = toolsmith_server::serve(listener, metrics, shutdown, grace).await {
                    tracing::error!("the metrics listener stopped: {e}");
                }
            });
        }
        let app = toolsmith_server::app_with(
            state,
            toolsmith_server::HttpOptions {
                allow_dangerous: args.allow_dangerous,
                allowed_hosts: allow_hosts,
                allowed_origins: args.allow_origins,
                listen: Some(local),
                no_metrics: !metrics_on || args.metrics_addr.is_some(),
            },
        );
        toolsmith_server::serve_with(
            listener,
            app,
            shutdown_signal(),
            std::time::Duration::from_secs(30),
            toolsmith_server::ConnectionLimits {
                max_connections: args.max_connections.max(1),
                ..Default::default()
            },
        )
        .await?;
        // No session outlives the server; every call answered is in the execution log
        // before the process ends.
        gateway.stop(SESSION_GRACE).await;
        say!("stopped");
        Ok(ExitCode::SUCCESS)
    })
}

/// Overwrites the secrets given on the command line (`--token` values, a password in
/// `--db`) where `/proc/PID/cmdline` shows them to every process of the machine, and warns
/// about tokens given there ([`crate::argv`]).
fn scrub_command_line(args: &ServeArgs, tokens: &[Token]) {
    let given: Vec<&str> = tokens
        .iter()
        .filter(|t| args.tokens.iter().any(|line| line.contains(&t.secret)))
        .map(|t| t.secret.as_str())
        .collect();
    let mut secrets = given.clone();
    let address = args.db.address();
    secrets.extend(crate::argv::url_password(&address));
    if let Err(e) = crate::argv::scrub(&secrets) {
        say!("WARNING: could not remove secrets from this process's command line: {e}");
    }
    if !given.is_empty() {
        say!(
            "WARNING: {} token(s) given with --token: the command line is readable by every process of this machine (overwritten now, but visible until this point, and kept in shell history); give tokens with --tokens-file FILE or TOOLSMITH_TOKEN",
            given.len()
        );
    }
}

/// How long sessions get to exit after TERM when the server stops.
const SESSION_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

pub(super) fn mcp(args: McpArgs) -> Result<ExitCode> {
    let _telemetry = crate::telemetry::init_logging(args.log_format, &args.traces)?;
    let catalog = args
        .catalog
        .as_ref()
        .map(|file| load_catalog(file).map(|c| (file.clone(), c)))
        .transpose()?;
    let mut protected = crate::options::registry_files(&args.db.address());
    protected.extend(args.db.secret_key_file.iter().cloned());
    let config = args.run.engine_config(&args.workspace, protected);
    let engine = Arc::new(Engine::new(config).map_err(|e| anyhow::anyhow!("--workspace: {e}"))?);
    crate::options::say_sandbox(&engine);
    let author = args.db.author("mcp");
    // One client on a pipe: a single-threaded runtime answers it with fewer cross-thread
    // wake-ups than a pool would (measured: 0.05 ms less per proxied upstream call; see
    // bench/README.md). Tool processes, SQLite and the warm runtime work off this thread.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    rt.block_on(async move {
        let key = args.db.secret_key_file.as_deref();
        // A catalog alone is served from a registry of its own that lives as long as the
        // server.
        let (store, private) = match (&catalog, &args.db.db) {
            (Some((file, catalog)), None) => {
                let (store, dir) =
                    crate::seed::private_registry(file, catalog, key, &author).await?;
                (store, Some(dir))
            }
            (catalog, _) => {
                let store = crate::secret_key::open_registry(&args.db.address(), key).await?;
                if let Some((file, catalog)) = catalog {
                    crate::seed::import_catalog(&store, file, catalog, &author).await?;
                }
                (store, None)
            }
        };
        let state = Gateway::start(
            store,
            engine,
            Startup {
                code_limits: Some(args.code.limits()),
                ..Startup::default()
            },
        );
        let gateway = state.clone();
        let handler = toolsmith_server::mcp::McpServer::new(
            state,
            toolsmith_server::mcp::McpOptions {
                allow_dangerous: args.allow_dangerous,
                notify_changes: true,
                caller: "mcp-stdio".into(),
                toolset: args.toolset.clone(),
            },
        );
        let service = rmcp::ServiceExt::serve(
            handler,
            (
                toolsmith_server::mcp::params::repaired_stdin(),
                tokio::io::stdout(),
            ),
        )
        .await
        .context("starting MCP on stdio")?;
        tokio::select! {
            r = service.waiting() => { r.context("MCP on stdio")?; }
            _ = shutdown_signal() => {}
        }
        gateway.stop(SESSION_GRACE).await;
        drop(private);
        Ok(ExitCode::SUCCESS)
    })
}

/// Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
}
