//! OAuth 2.1 to an HTTP upstream (`auth: oauth`) against a real authorization server: the
//! official MCP Python SDK's (`tests/upstream/oauth_server.py`: metadata, dynamic registration,
//! authorization with PKCE, tokens and refresh tokens, bearer checks on /mcp). `serve` finds
//! that the server needs authorization from its 401, an admin connects it (the consent page
//! redirects back to serve's callback), calls carry the token, the tokens are sealed in the
//! registry, refreshed when they expire, kept across a restart, and forgotten on disconnect.
//! Per-user connections (two users, each call with its own token; over REST, MCP, the CLI),
//! refreshes taking turns across two replicas on PostgreSQL, and RFC 8693 token exchange at
//! an identity provider written for the test (`tests/upstream/exchange_idp.py`).
//!
//! Needs the Python of `.ci/requirements.txt` (`TOOLSMITH_TEST_PYTHON`; one test PostgreSQL
//! too): `#[ignore]`d so that a plain `cargo test` lists them instead of passing them
//! silently; `.ci/run` runs them.

mod common;

use std::time::{Duration, Instant};

use common::{call, error_kind, get, listening_with, python, request, serve};
use serde_json::Value;

/// Waits (up to a minute) until `GET {base}/servers/guarded` satisfies `ok`; the last answer.
fn server_until(base: &str, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
    named_until(base, "guarded", what, ok)
}

/// [`server_until`] for the server `name`.
fn named_until(base: &str, name: &str, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
    let started = Instant::now();
    loop {
        let v = get(base, &format!("/servers/{name}"));
        if ok(&v) {
            return v;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{name} is not {what} after 60 s: {v}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn needs_authorization(v: &Value) -> bool {
    v["status"]["last_error"]
        .as_str()
        .is_some_and(|e| e.starts_with("needs authorization"))
}

fn ready(v: &Value) -> bool {
    v["status"]["status"] == "ready" && !v["tools"].as_array().is_none_or(|t| t.is_empty())
}

/// What `g__whoami` answers: the calling token's client, scopes, the token, grant counts.
fn whoami(base: &str) -> Value {
    let r = call(base, "g__whoami", serde_json::json!({}));
    assert_eq!(r["success"], true, "{r}");
    let data = &r["data"];
    data.get("structuredContent")
        .filter(|v| v.get("client_id").is_some())
        .or_else(|| data.get("structuredContent").and_then(|v| v.get("result")))
        .cloned()
        .or_else(|| {
            data["content"][0]["text"]
                .as_str()
                .and_then(|t| serde_json::from_str(t).ok())
        })
        .unwrap_or_else(|| panic!("whoami answered no identity: {r}"))
}

/// The browser's part of a consent: the authorization URL (the fixture consents at once and
/// redirects), then serve's callback; the callback's status and page.
fn consent(authorization_url: &str) -> (u16, String) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .into();
    let mut url = authorization_url.to_owned();
    for _ in 0..5 {
        let mut resp = agent.get(&url).call().expect("the browser's request");
        let status = resp.status().as_u16();
        match resp.headers().get("location").and_then(|l| l.to_str().ok()) {
            Some(next) if (300..400).contains(&status) => url = next.to_owned(),
            _ => return (status, resp.body_mut().read_to_string().unwrap_or_default()),
        }
    }
    panic!("too many redirects from {authorization_url}")
}

/// Every byte of the registry's files (the database and its write-ahead log).
fn registry_bytes(db: &std::path::Path) -> Vec<u8> {
    let mut all = Vec::new();
    for suffix in ["", "-wal"] {
        let path = format!("{}{suffix}", db.display());
        if let Ok(bytes) = std::fs::read(&path) {
            all.extend(bytes);
        }
    }
    all
}

/// The OAuth fixture (its environment `env`) and a registry whose catalog has one server
/// in front of it: `entry` is the rest of its `mcp_servers` entry after `url`.
struct Setup {
    _fixture: common::Upstream,
    dir: tempfile::TempDir,
}

impl Setup {
    fn new(env: &[(&str, &str)], name: &str, entry: &str) -> Self {
        let fixture = listening_with(
            &python(),
            "upstream/oauth_server.py",
            "the OAuth fixture",
            env,
        );
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join("catalog.yaml"),
            format!(
                "mcp_servers:\n  - name: {name}\n    url: http://127.0.0.1:{}/mcp\n{entry}",
                fixture.1
            ),
        )
        .expect("catalog");
        std::fs::create_dir(dir.path().join("workspace")).expect("workspace");
        Self {
            _fixture: fixture,
            dir,
        }
    }

    fn db(&self) -> std::path::PathBuf {
        self.dir.path().join("registry.db")
    }

    /// `serve` on the registry (again, after a restart): it and its REST base.
    fn serve(&self) -> (common::Serve, String) {
        let catalog = self.dir.path().join("catalog.yaml");
        let (serve, base, _) = serve(
            self.db().to_str().expect("utf-8"),
            &self.dir.path().join("workspace"),
            &["--catalog", catalog.to_str().expect("utf-8")],
        );
        (serve, base)
    }
}

#[test]
#[ignore = "needs the official MCP Python SDK (TOOLSMITH_TEST_PYTHON)"]
fn an_oauth_server_is_connected_once_its_tokens_sealed_refreshed_kept_and_forgotten() {
    // Tokens that expire after 3 s: the refresh is seen within the test.
    let setup = Setup::new(
        &[("OAUTH_TTL", "3")],
        "guarded",
        "    auth: oauth\n    prefix: g\n    on_change: accept\n",
    );
    let db = setup.db();
    let (serve1, base) = setup.serve();

    // Before any connection: the server's own 401 says it needs authorization.
    let v = server_until(&base, "asking for authorization", needs_authorization);
    assert_eq!(v["oauth"]["connected"], false, "{v}");

    // An admin connects it: the consent comes back to serve's callback.
    let (status, started) = request("POST", &format!("{base}/servers/guarded/connect"), None);
    assert_eq!(status, 200, "{started}");
    let url = started["authorization_url"].as_str().expect("a URL");
    assert!(
        url.contains("code_challenge_method=S256") && url.contains("resource="),
        "PKCE and the resource indicator: {url}"
    );
    let redirect = started["redirect_uri"].as_str().expect("redirect_uri");
    assert!(
        redirect.ends_with("/oauth/callback"),
        "the callback: {redirect}"
    );
    let (status, page) = consent(url);
    assert_eq!(status, 200, "the callback: {page}");
    assert!(page.contains("Connected"), "{page}");
    // A callback used once is not used again.
    let (again, _) = consent(url);
    assert_eq!(again, 400, "a second callback with the same state");

    let v = server_until(&base, "ready with its tools", ready);
    assert_eq!(v["oauth"]["connected"], true, "{v}");
    let me = whoami(&base);
    assert!(
        me["client_id"].as_str().is_some_and(|c| !c.is_empty()),
        "{me}"
    );
    assert_eq!(me["granted"]["authorization_code"], 1, "{me}");
    let token = me["token"].as_str().expect("the token").to_owned();

    // Sealed at rest, and never shown.
    let bytes = registry_bytes(&db);
    assert!(
        !bytes.windows(token.len()).any(|w| w == token.as_bytes()),
        "the access token is in the registry's files in the clear"
    );
    assert!(
        !get(&base, "/servers/guarded").to_string().contains(&token),
        "the server's page shows the token"
    );
    assert!(
        !common::serve_log(&base).contains(&token),
        "the access token is in serve's log"
    );

    // The token expires after 3 s: a later call carries a refreshed one.
    let started = Instant::now();
    let refreshed = loop {
        let me = whoami(&base);
        if me["granted"]["refresh_token"].as_u64().unwrap_or(0) >= 1 {
            break me;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no refresh after 60 s: {me}"
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    assert_ne!(refreshed["token"], token, "{refreshed}");
    assert_eq!(refreshed["granted"]["authorization_code"], 1, "{refreshed}");

    // Kept across a restart: serve starts connected.
    drop(serve1);
    let (_serve2, base) = setup.serve();
    let v = server_until(&base, "ready again after a restart", ready);
    assert_eq!(v["oauth"]["connected"], true, "{v}");
    assert_eq!(whoami(&base)["granted"]["authorization_code"], 1);

    // Forgotten: the server needs authorization again, and calls say so.
    let (status, v) = request("DELETE", &format!("{base}/servers/guarded/connect"), None);
    assert_eq!(
        (status, &v["disconnected"]),
        (200, &Value::Bool(true)),
        "{v}"
    );
    server_until(&base, "asking for authorization again", needs_authorization);
    let r = call(&base, "g__whoami", serde_json::json!({}));
    assert_eq!(error_kind(&r), "needs_authorization", "{r}");
    let (status, v) = request("DELETE", &format!("{base}/servers/guarded/connect"), None);
    assert_eq!(
        (status, &v["disconnected"]),
        (200, &Value::Bool(false)),
        "{v}"
    );
}

#[test]
#[ignore = "needs the official MCP Python SDK (TOOLSMITH_TEST_PYTHON)"]
fn a_server_whose_401_names_its_authorization_server_is_found_to_use_oauth() {
    // No `auth:`: as a server pasted from a client's configuration would be.
    let setup = Setup::new(&[], "found", "    prefix: f\n    on_change: accept\n");
    let (_serve, base) = setup.serve();
    let v = named_until(
        &base,
        "found",
        "found to need authorization",
        needs_authorization,
    );
    assert_eq!(v["oauth"]["connected"], false, "{v}");
    // Connected from the CLI: it prints the consent URL and waits until it came back.
    let token = common::local_token(&base).expect("the local admin token");
    let mut cli = std::process::Command::new(common::BIN)
        .args([
            "servers", "connect", "found", "--url", &base, "--token", &token,
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("toolsmith servers connect");
    let mut out = std::io::BufReader::new(cli.stdout.take().expect("stdout"));
    let url = loop {
        let mut line = String::new();
        let n = std::io::BufRead::read_line(&mut out, &mut line).expect("its output");
        assert!(n > 0, "servers connect printed no URL");
        if let Some(url) = line.trim().strip_prefix("http") {
            break format!("http{url}");
        }
    };
    let (status, page) = consent(&url);
    assert_eq!(status, 200, "{page}");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).expect("its output");
    let done = cli.wait().expect("servers connect ends");
    assert!(
        done.success() && rest.contains("found: connected"),
        "{rest}"
    );
    let v = named_until(&base, "found", "ready with its tools", ready);
    assert_eq!(v["oauth"]["connected"], true, "{v}");
    let r = call(&base, "f__whoami", serde_json::json!({}));
    assert_eq!(r["success"], true, "{r}");
}

#[test]
fn connecting_a_server_without_oauth_says_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    let catalog = dir.path().join("catalog.yaml");
    std::fs::write(
        &catalog,
        "mcp_servers:\n  - name: plain\n    url: http://127.0.0.1:9/mcp\n",
    )
    .expect("catalog");
    let db = dir.path().join("registry.db");
    let (_serve, base, _) = serve(
        db.to_str().expect("utf-8"),
        dir.path(),
        &["--catalog", catalog.to_str().expect("utf-8")],
    );
    let (status, v) = request("POST", &format!("{base}/servers/plain/connect"), None);
    assert_eq!(status, 409, "{v}");
    assert!(v.to_string().contains("does not use OAuth"), "{v}");
    let (status, v) = request("POST", &format!("{base}/servers/nope/connect"), None);
    assert_eq!(status, 404, "{v}");
    // A callback that names no authorization begun here.
    let root = base.trim_end_matches("/v1");
    let (status, page) = request(
        "GET",
        &format!("{root}/oauth/callback?code=x&state=made-up"),
        None,
    );
    assert_eq!(status, 400, "{page}");
    assert!(page.to_string().contains("connect again"), "{page}");
}

/// `GET {base}{path}` as the holder of `token`: the JSON (status 200 asserted).
fn get_as(base: &str, path: &str, token: &str) -> Value {
    let (status, v) = common::request_as("GET", &format!("{base}{path}"), None, Some(token));
    assert_eq!(status, 200, "GET {path}: {v}");
    v
}

/// `u__whoami` called over REST as the holder of `token`: the ToolResult.
fn whoami_as(base: &str, token: &str) -> Value {
    let (status, v) = common::request_as(
        "POST",
        &format!("{base}/tools/u__whoami/call"),
        Some(serde_json::json!({"arguments": {}})),
        Some(token),
    );
    assert_eq!(status, 200, "{v}");
    v
}

/// What a fixture's `whoami` answered (its structured answer, or its text as JSON), from a
/// successful ToolResult.
fn identity_of(r: &Value) -> Value {
    assert_eq!(r["success"], true, "{r}");
    let data = &r["data"];
    data.get("structuredContent")
        .filter(|v| v.get("token").is_some())
        .cloned()
        .or_else(|| {
            data["content"][0]["text"]
                .as_str()
                .and_then(|t| serde_json::from_str(t).ok())
        })
        .unwrap_or_else(|| panic!("whoami answered no identity: {r}"))
}

/// The token `whoami` reports.
fn token_of(r: &Value) -> String {
    identity_of(r)["token"]
        .as_str()
        .expect("a token")
        .to_owned()
}

#[test]
#[ignore = "needs the official MCP Python SDK (TOOLSMITH_TEST_PYTHON)"]
fn each_user_connects_their_own_account_and_their_calls_carry_their_own_token() {
    let setup = Setup::new(
        &[],
        "each",
        "    auth: {type: oauth, connection: per_user}\n    prefix: u\n    on_change: accept\n    tools:\n      whoami: {danger: safe}\ntoolsets:\n  - name: elsewhere\n    include: {names: [\"nothing_here\"]}\n",
    );
    let catalog = setup.dir.path().join("catalog.yaml");
    let (_serve, base, _) = serve(
        setup.db().to_str().expect("utf-8"),
        &setup.dir.path().join("workspace"),
        &[
            "--catalog",
            catalog.to_str().expect("utf-8"),
            "--token",
            "root:admin=root-secret",
            "--token",
            "alice:call=alice-secret",
            "--token",
            "bob:call=bob-secret",
            "--token",
            "dan:call@elsewhere=dan-secret",
        ],
    );
    let (admin, alice, bob) = ("root-secret", "alice-secret", "bob-secret");

    // The shared connection (an admin's) lists the tools; it carries no user's calls.
    let started = Instant::now();
    let (status, shared) = common::request_as(
        "POST",
        &format!("{base}/servers/each/connect"),
        None,
        Some(admin),
    );
    assert_eq!(status, 200, "{shared}");
    assert_eq!(
        consent(shared["authorization_url"].as_str().expect("URL")).0,
        200
    );
    let v = loop {
        let v = get_as(&base, "/servers/each", admin);
        if ready(&v) {
            break v;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "not ready: {v}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(v["oauth"]["per_user"], true, "{v}");
    assert_eq!(v["oauth"]["users"], 0, "{v}");

    // A user who has not connected: needs_authorization naming them, with the URL to open.
    let r = whoami_as(&base, alice);
    assert_eq!(error_kind(&r), "needs_authorization", "{r}");
    let message = r["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("alice has not connected"), "{message}");
    let url = r["error"]["output"]["authorization_url"]
        .as_str()
        .unwrap_or_else(|| panic!("no authorization URL: {r}"))
        .to_owned();
    assert!(message.contains(&url), "{message}");
    // Asked again before consenting: the same authorization, not a new registration.
    let again = whoami_as(&base, alice);
    assert_eq!(again["error"]["output"]["authorization_url"], url.as_str());
    let mine = get_as(&base, "/connections", alice);
    assert_eq!(mine["subject"], "alice", "{mine}");
    assert_eq!(mine["servers"][0]["server"], "each", "{mine}");
    assert_eq!(mine["servers"][0]["connected"], false, "{mine}");
    let (status, page) = consent(&url);
    assert_eq!(status, 200, "{page}");
    let alice_token = token_of(&whoami_as(&base, alice));
    assert_eq!(
        get_as(&base, "/connections", alice)["servers"][0]["connected"],
        true
    );

    // Bob connects through the connections API (as the CLI and the web UI do).
    let (status, started) =
        common::request_as("POST", &format!("{base}/connections/each"), None, Some(bob));
    assert_eq!(status, 200, "{started}");
    assert_eq!(
        consent(started["authorization_url"].as_str().expect("URL")).0,
        200
    );
    let bob_token = token_of(&whoami_as(&base, bob));
    assert_ne!(
        alice_token, bob_token,
        "each user's calls carry their own token"
    );
    assert_eq!(token_of(&whoami_as(&base, alice)), alice_token);
    // Over MCP too, as the token's holder.
    let (status, answer) = common::post_mcp(
        &base.replace("/v1", "/mcp"),
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "u__whoami", "arguments": {}}}),
        Some(bob),
    );
    assert_eq!(status, 200, "{answer}");
    assert!(answer.to_string().contains(&bob_token), "{answer}");
    assert!(!answer.to_string().contains(&alice_token), "{answer}");
    // The CLI lists them as bob sees them.
    let (ok, out, err) =
        common::toolsmith(&["connections", "--url", &base, "--token", bob], &[], None);
    assert!(
        ok && out.contains("each") && out.contains("connected as bob"),
        "{out}{err}"
    );

    // An admin sees which connections exist — never a token; a user may not list them all.
    let all = get_as(&base, "/connections?all=true", admin);
    let subjects: Vec<&str> = all["all"]
        .as_array()
        .expect("all")
        .iter()
        .filter_map(|c| c["subject"].as_str())
        .collect();
    assert!(
        subjects.contains(&"alice") && subjects.contains(&"bob") && subjects.contains(&""),
        "{all}"
    );
    let log = common::serve_log(&base);
    for token in [&alice_token, &bob_token] {
        assert!(!all.to_string().contains(token.as_str()), "{all}");
        assert!(
            !log.contains(token.as_str()),
            "a user's token is in serve's log"
        );
        let bytes = registry_bytes(&setup.db());
        assert!(
            !bytes.windows(token.len()).any(|w| w == token.as_bytes()),
            "a user's access token is in the registry's files in the clear"
        );
    }
    let (status, _) = common::request_as(
        "GET",
        &format!("{base}/connections?all=true"),
        None,
        Some(alice),
    );
    assert_eq!(status, 403);
    assert_eq!(get_as(&base, "/servers/each", admin)["oauth"]["users"], 2);

    // Alice forgets hers: her calls need authorization again; Bob's still go as him.
    let (status, v) = common::request_as(
        "DELETE",
        &format!("{base}/connections/each"),
        None,
        Some(alice),
    );
    assert_eq!(
        (status, &v["disconnected"]),
        (200, &Value::Bool(true)),
        "{v}"
    );
    assert_eq!(error_kind(&whoami_as(&base, alice)), "needs_authorization");
    assert_eq!(token_of(&whoami_as(&base, bob)), bob_token);
    // An MCP client that can open a page for its user gets the URL as a URL-mode
    // elicitation (-32042); one that cannot gets the result whose message carries it.
    let mcp = base.replace("/v1", "/mcp");
    let whoami_call = serde_json::json!({"name": "u__whoami", "arguments": {}});
    let (status, answer) = common::ask(
        &mcp,
        alice,
        "tools/call",
        whoami_call.clone(),
        serde_json::json!({"elicitation": {"url": {}}}),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["error"]["code"], -32042, "{answer}");
    let asked = &answer["error"]["data"]["elicitations"][0];
    assert_eq!(asked["mode"], "url", "{answer}");
    assert!(
        asked["url"]
            .as_str()
            .is_some_and(|u| u.contains("code_challenge="))
            && asked["elicitationId"]
                .as_str()
                .is_some_and(|id| !id.is_empty()),
        "{answer}"
    );
    let (_, answer) = common::ask(
        &mcp,
        alice,
        "tools/call",
        whoami_call,
        serde_json::json!({}),
    );
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(
        answer
            .to_string()
            .contains(asked["url"].as_str().unwrap_or("?")),
        "{answer}"
    );
    // A caller limited to a toolset without the server's tools neither sees nor connects it.
    let dans = get_as(&base, "/connections", "dan-secret");
    assert_eq!(dans["servers"], serde_json::json!([]), "{dans}");
    let (status, v) = common::request_as(
        "POST",
        &format!("{base}/connections/each"),
        None,
        Some("dan-secret"),
    );
    assert_eq!(status, 404, "{v}");
    // A server with one shared connection is not connected per user.
    let (status, v) =
        common::request_as("POST", &format!("{base}/connections/nope"), None, Some(bob));
    assert_eq!(status, 404, "{v}");
}

#[test]
#[ignore = "needs PostgreSQL (TOOLSMITH_TEST_POSTGRES) and the official MCP Python SDK (TOOLSMITH_TEST_PYTHON)"]
fn replicas_refresh_a_connection_in_turn_and_never_spend_a_refresh_token_twice() {
    // Tokens that last 2 s: every request refreshes first (rmcp refreshes within 30 s of
    // the expiry), and each of the fixture's refresh tokens is good once — two refreshes
    // racing with the same one would fail the second and lose the connection.
    let setup = Setup::new(
        &[("OAUTH_TTL", "2")],
        "guarded",
        "    auth: oauth\n    prefix: g\n    on_change: accept\n    tools:\n      whoami: {danger: safe}\n",
    );
    let registry = common::postgres_registry("oauth_refresh");
    let catalog = setup.dir.path().join("catalog.yaml");
    let workspace = setup.dir.path().join("workspace");
    let args = ["--catalog", catalog.to_str().expect("utf-8")];
    let (_a, base_a, _) = serve(&registry, &workspace, &args);
    let (_b, base_b, _) = serve(&registry, &workspace, &args);
    server_until(&base_a, "asking for authorization", needs_authorization);
    let (status, started) = request("POST", &format!("{base_a}/servers/guarded/connect"), None);
    assert_eq!(status, 200, "{started}");
    assert_eq!(
        consent(started["authorization_url"].as_str().expect("URL")).0,
        200
    );
    server_until(&base_a, "ready on the first replica", ready);
    // The other replica reads the tokens from the registry when it connects again.
    let (status, v) = request("POST", &format!("{base_b}/servers/guarded/restart"), None);
    assert_eq!(status, 200, "{v}");
    server_until(&base_b, "ready on the second replica", ready);

    // Two callers on each replica at once, each call refreshing first.
    let failures: Vec<Value> = std::thread::scope(|s| {
        let callers: Vec<_> = [&base_a, &base_a, &base_b, &base_b]
            .into_iter()
            .map(|base| {
                s.spawn(move || {
                    (0..12)
                        .map(|_| call(base, "g__whoami", serde_json::json!({})))
                        .filter(|r| r["success"] != true)
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        callers
            .into_iter()
            .flat_map(|c| c.join().expect("a caller"))
            .collect()
    });
    assert!(failures.is_empty(), "calls failed: {failures:?}");
    let me = whoami(&base_b);
    assert!(
        me["granted"]["refresh_token"].as_u64().unwrap_or(0) >= 10,
        "the tokens were refreshed as they expired: {me}"
    );
    assert_eq!(me["granted"]["authorization_code"], 1, "{me}");
}

#[test]
#[ignore = "needs the official MCP Python SDK (TOOLSMITH_TEST_PYTHON)"]
fn a_callers_jwt_is_exchanged_or_forwarded_and_the_upstream_sees_the_caller() {
    // An identity provider and an MCP server that trusts only its tokens for its own URL.
    let idp = listening_with(
        &python(),
        "upstream/exchange_idp.py",
        "the identity provider",
        &[],
    );
    let origin = format!("http://127.0.0.1:{}", idp.1);
    let dir = tempfile::tempdir().expect("tempdir");
    let catalog = dir.path().join("catalog.yaml");
    std::fs::write(
        &catalog,
        format!(
            "mcp_servers:\n  - name: idp\n    url: {origin}/mcp\n    prefix: x\n    on_change: accept\n    auth:\n      type: oauth\n      connection: exchange\n      token_endpoint: {origin}/token\n      client_id: toolsmith\n      client_secret: idp-secret\n  - name: fwd\n    url: {origin}/mcp\n    prefix: f\n    on_change: accept\n    auth:\n      type: oauth\n      connection: forward\n      audience: {origin}/mcp\n      token_endpoint: {origin}/token\n      client_id: toolsmith\n      client_secret: idp-secret\n"
        ),
    )
    .expect("catalog");
    let db = dir.path().join("registry.db");
    let (_serve, base, _) = serve(
        db.to_str().expect("utf-8"),
        dir.path(),
        &[
            "--catalog",
            catalog.to_str().expect("utf-8"),
            "--jwt-issuer",
            &origin,
            "--jwt-audience",
            "toolsmith-test",
            "--token",
            "root:admin=root-secret",
        ],
    );
    // The shared connections list with toolsmith's own token (client credentials).
    let started = Instant::now();
    for server in ["idp", "fwd"] {
        loop {
            let v = get_as(&base, &format!("/servers/{server}"), "root-secret");
            if ready(&v) {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "not ready: {v}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    let mint = |query: &str| -> String {
        let (status, v) = request("GET", &format!("{origin}/mint?sub={query}"), None);
        assert_eq!(status, 200, "{v}");
        v["token"].as_str().expect("a token").to_owned()
    };
    let call_as = |tool: &str, token: &str| -> Value {
        let (status, r) = common::request_as(
            "POST",
            &format!("{base}/tools/{tool}/call"),
            Some(serde_json::json!({"arguments": {}})),
            Some(token),
        );
        assert_eq!(status, 200, "{r}");
        r
    };
    let whoami_with = |token: &str| -> Value {
        let (status, r) = common::request_as(
            "POST",
            &format!("{base}/tools/x__whoami/call"),
            Some(serde_json::json!({"arguments": {}})),
            Some(token),
        );
        assert_eq!(status, 200, "{r}");
        identity_of(&r)
    };
    let alice = mint("alice");
    let me = whoami_with(&alice);
    assert_eq!(me["sub"], "alice", "the upstream sees the caller: {me}");
    assert_eq!(
        me["aud"],
        format!("{origin}/mcp"),
        "issued for the upstream: {me}"
    );
    // (Her own token, for toolsmith's audience, would not be accepted upstream at all.)
    assert_eq!(
        me["act"]["sub"], "toolsmith",
        "toolsmith acts for her: {me}"
    );
    // Kept while it lasts: her next call makes no new exchange.
    let again = whoami_with(&alice);
    assert_eq!(again["exchanges"]["alice"], 1, "{again}");
    let bob = whoami_with(&mint("bob"));
    assert_eq!(bob["sub"], "bob", "{bob}");
    assert_eq!(
        bob["exchanges"],
        serde_json::json!({"alice": 1, "bob": 1}),
        "{bob}"
    );
    // Forwarded (`connection: forward`): a caller's own token goes on only when it was
    // issued for the server too; one for toolsmith alone is refused, naming its audience.
    let carol = mint(&format!("carol&aud=toolsmith-test&aud={origin}/mcp"));
    let forwarded = identity_of(&call_as("f__whoami", &carol));
    assert_eq!(forwarded["sub"], "carol", "{forwarded}");
    assert!(
        forwarded["act"].is_null(),
        "her own token, not an exchanged one: {forwarded}"
    );
    let r = call_as("f__whoami", &alice);
    assert_eq!(error_kind(&r), "needs_authorization", "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("its audience is `toolsmith-test`")),
        "{r}"
    );
    // Nobody connects such a server.
    let (status, v) = common::request_as(
        "POST",
        &format!("{base}/servers/idp/connect"),
        None,
        Some("root-secret"),
    );
    assert_eq!(status, 409, "{v}");
    assert!(v.to_string().contains("nothing to connect"), "{v}");
    // A caller with a static token has no JWT to exchange: it is told so, and nothing runs.
    let (_, r) = common::request_as(
        "POST",
        &format!("{base}/tools/x__whoami/call"),
        Some(serde_json::json!({"arguments": {}})),
        Some("root-secret"),
    );
    assert_eq!(error_kind(&r), "needs_authorization", "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("called without one")),
        "{r}"
    );
}

#[test]
#[ignore = "needs the official MCP Python SDK (TOOLSMITH_TEST_PYTHON)"]
fn a_refresh_token_revoked_at_the_provider_turns_into_needs_authorization_not_endless_retries() {
    let setup = Setup::new(
        &[("OAUTH_TTL", "2")],
        "guarded",
        "    auth: oauth\n    prefix: g\n    on_change: accept\n",
    );
    let (_serve, base) = setup.serve();
    server_until(&base, "asking for authorization", needs_authorization);
    let (status, started) = request("POST", &format!("{base}/servers/guarded/connect"), None);
    assert_eq!(status, 200, "{started}");
    assert_eq!(
        consent(started["authorization_url"].as_str().expect("URL")).0,
        200
    );
    server_until(&base, "ready", ready);
    assert_eq!(whoami(&base)["granted"]["authorization_code"], 1);

    // The user revokes toolsmith's access at the provider.
    let origin = format!("http://127.0.0.1:{}", setup._fixture.1);
    let (status, v) = request("POST", &format!("{origin}/revoke-all"), None);
    assert_eq!(status, 200, "{v}");
    // The next call finds the token refused and the refresh token dead.
    let started = Instant::now();
    let r = loop {
        let r = call(&base, "g__whoami", serde_json::json!({}));
        if r["success"] != true {
            break r;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "still answering: {r}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(
        ["needs_authorization", "upstream"].contains(&error_kind(&r).as_str()),
        "{r}"
    );
    let v = server_until(&base, "asking for authorization again", needs_authorization);
    assert_eq!(
        v["oauth"]["connected"], false,
        "the dead tokens are forgotten: {v}"
    );
    let r = call(&base, "g__whoami", serde_json::json!({}));
    assert_eq!(error_kind(&r), "needs_authorization", "{r}");
    // And nothing presents the dead refresh token again.
    let refused = |origin: &str| get_stats(origin)["refused"]["refresh_token"].as_u64();
    let before = refused(&origin);
    let until = Instant::now() + Duration::from_secs(4);
    while Instant::now() < until {
        let _ = call(&base, "g__whoami", serde_json::json!({}));
        std::thread::sleep(Duration::from_millis(250));
    }
    assert_eq!(
        refused(&origin),
        before,
        "the revoked refresh token was tried again"
    );
}

/// The OAuth fixture's counts: grants, and refresh tokens refused.
fn get_stats(origin: &str) -> Value {
    let (status, v) = request("GET", &format!("{origin}/stats"), None);
    assert_eq!(status, 200, "{v}");
    v
}

#[test]
#[ignore = "needs the official MCP Python SDK (TOOLSMITH_TEST_PYTHON)"]
fn no_token_reaches_the_traces() {
    let setup = Setup::new(
        &[],
        "guarded",
        "    auth: oauth\n    prefix: g\n    on_change: accept\n",
    );
    let receiver = common::otlp_receiver(setup.dir.path());
    let catalog = setup.dir.path().join("catalog.yaml");
    let (mut serve, base, _) = serve(
        setup.db().to_str().expect("utf-8"),
        &setup.dir.path().join("workspace"),
        &[
            "--catalog",
            catalog.to_str().expect("utf-8"),
            "--otlp-endpoint",
            &receiver.url,
        ],
    );
    server_until(&base, "asking for authorization", needs_authorization);
    let (status, started) = request("POST", &format!("{base}/servers/guarded/connect"), None);
    assert_eq!(status, 200, "{started}");
    assert_eq!(
        consent(started["authorization_url"].as_str().expect("URL")).0,
        200
    );
    server_until(&base, "ready", ready);
    let token = whoami(&base)["token"]
        .as_str()
        .expect("the token")
        .to_owned();
    // Stopped: what is still queued is exported before the process ends.
    let stopped = std::process::Command::new("kill")
        .args(["-TERM", &serve.0.id().to_string()])
        .status()
        .expect("kill");
    assert!(stopped.success());
    serve.0.wait().expect("serve stopped");
    let spans = common::read_spans(&receiver.spans);
    assert!(
        spans.iter().any(|s| s.to_string().contains("g__whoami")),
        "the call was traced: {} spans",
        spans.len()
    );
    for span in &spans {
        assert!(
            !span.to_string().contains(&token),
            "a span carries the token: {span}"
        );
    }
}
