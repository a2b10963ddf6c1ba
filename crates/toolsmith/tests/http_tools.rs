//! HTTP APIs as tools (SPEC §12) against real servers: a FastAPI application (PyPI) whose
//! every answer echoes the request it got, imported from its own `/openapi.json` and called
//! through REST and MCP; toolsmith's own OpenAPI description imported into a second
//! toolsmith; GitHub's published description (npm `@octokit/openapi`) imported whole and
//! called against Stoplight Prism (npm), which validates each request against it.
//!
//! The FastAPI and Python MCP pieces come from `TOOLSMITH_TEST_PYTHON`, the npm ones from
//! `npm ci` in `tests/upstream` (both set up by `.ci/run`); the tests that need them are
//! `#[ignore]`d so a plain `cargo test` lists them rather than passing them silently.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{call, error_kind, get, repo, serve};
use serde_json::{Value, json};

const TOKEN: &str = "tok-s3cret-bearer";
const KEY: &str = "key-s3cret-header";

/// A child process killed when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn python() -> String {
    std::env::var("TOOLSMITH_TEST_PYTHON").expect(
        "TOOLSMITH_TEST_PYTHON must name the python of a virtual environment with FastAPI and mcp (.ci/run sets it)",
    )
}

/// The FastAPI test application on a free port: the process and its base URL.
fn fastapi() -> (Running, String) {
    let script = repo().join("crates/toolsmith/tests/upstream/http_api.py");
    let mut child = Command::new(python())
        .arg(&script)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the FastAPI application");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("read its port");
    let port = line
        .strip_prefix("PORT ")
        .map(str::trim)
        .unwrap_or_else(|| panic!("the FastAPI application did not start: {line:?}"))
        .to_owned();
    let port: u16 = port.parse().expect("a port number");
    wait_for_port(port, 30);
    (Running(child), format!("http://127.0.0.1:{port}"))
}

/// Waits until something listens on `port` (at most `secs`).
fn wait_for_port(port: u16, secs: u64) {
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(secs),
            "nothing listens on {port}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `toolsmith` with `args` in `dir`, the credentials in its environment.
fn toolsmith(args: &[&str], dir: &Path) -> (bool, String, String) {
    common::toolsmith(
        args,
        &[("TS_TEST_TOKEN", TOKEN), ("TS_TEST_KEY", KEY)],
        Some(dir),
    )
}

/// Imports the application's description into `db`; returns the JSON report.
fn import_app(base: &str, db: &str, dir: &Path) -> Value {
    let spec = format!("{base}/openapi.json");
    let (ok, out, err) = toolsmith(
        &[
            "import",
            "--openapi",
            &spec,
            "--db",
            db,
            "--json",
            "--auth",
            "HTTPBearer=TS_TEST_TOKEN",
            "--auth",
            "APIKeyHeader=TS_TEST_KEY",
        ],
        dir,
    );
    assert!(ok, "import failed: {out}\n{err}");
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("report {out:?}: {e}"))
}

#[test]
#[ignore = "needs FastAPI (TOOLSMITH_TEST_PYTHON)"]
fn a_fastapi_application_is_imported_and_every_request_is_what_its_spec_says() {
    let (_app, base) = fastapi();
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("registry.db").display().to_string();
    let report = import_app(&base, &db, dir.path());
    let names: Vec<&str> = report["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for want in [
        "get_issue",
        "create_item",
        "search",
        "echo_segment",
        "redirect_here",
        "large",
        "text",
        "binary",
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    // The deprecated operation is listed with its reason, not dropped silently.
    let skipped = report["skipped"].as_array().expect("skipped");
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert_eq!(skipped[0]["operation"], "delete_item");
    assert!(
        skipped[0]["reason"]
            .as_str()
            .unwrap_or("")
            .contains("deprecated")
    );

    let (_serve, rest, _mcp) = serve(&db, dir.path(), &["--no-catalog"]);

    // Path, query (an array, repeated), bearer auth; a sloppy integer repaired first.
    let r = call(
        &rest,
        "get_issue",
        json!({"owner": "octo cat", "repo": "hello", "number": "7", "labels": ["a", "b c"]}),
    );
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(r["data"]["number"], 7);
    assert_eq!(
        r["data"]["seen"]["raw_path"],
        "/repos/octo%20cat/hello/issues/7"
    );
    assert_eq!(r["data"]["seen"]["query"], "labels=a&labels=b+c");
    // The server saw the token (it echoes it back); the caller sees it as `***`.
    assert_eq!(r["data"]["seen"]["authorization"], "Bearer ***");
    assert_eq!(r["meta"]["http"]["status"], 200);
    assert_eq!(r["meta"]["coerced"][0], "number: string→integer");

    // A 404's message reaches the model; the body is the output.
    let r = call(
        &rest,
        "get_issue",
        json!({"owner": "o", "repo": "r", "number": 404}),
    );
    assert_eq!(error_kind(&r), "http_status");
    let message = r["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("404") && message.contains("issue 404 of o/r not found"),
        "{message}"
    );

    // A JSON body with a nested object ($ref in the spec), an API key header; sloppy numbers
    // repaired; what the spec forbids refused before anything is sent.
    let r = call(
        &rest,
        "create_item",
        json!({"name": "box", "tags": ["x"], "dimensions": {"width": "2.5", "height": 3}}),
    );
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(
        r["data"]["created"]["dimensions"],
        json!({"width": 2.5, "height": 3.0})
    );
    assert_eq!(
        r["data"]["seen"]["x_api_key"], "***",
        "the key went, and comes back as ***"
    );
    assert_eq!(r["meta"]["http"]["status"], 201);
    let r = call(
        &rest,
        "create_item",
        json!({"name": "box", "dimensions": {"width": 0, "height": 1}}),
    );
    assert_eq!(error_kind(&r), "invalid_arguments", "{r}");
    let r = call(&rest, "search", json!({"limit": 100}));
    assert_eq!(error_kind(&r), "invalid_arguments", "{r}");
    let details = r["error"]["details"].to_string();
    assert!(
        details.contains("/q") && details.contains("/limit"),
        "{details}"
    );

    // A header parameter; a default filled in; a header value that would inject a header
    // refused.
    let r = call(&rest, "search", json!({"q": "bolts", "x-trace": "t-1"}));
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(r["data"]["trace"], "t-1");
    assert_eq!(r["data"]["seen"]["query"], "q=bolts&limit=10");
    let r = call(
        &rest,
        "search",
        json!({"q": "x", "x-trace": "a\r\nX-Evil: 1"}),
    );
    assert_eq!(error_kind(&r), "invalid_arguments", "{r}");

    // Path injection: a value is one segment whatever it holds.
    for (value, raw) in [
        ("../headers?x=1#f", "/echo/..%2Fheaders%3Fx%3D1%23f"),
        ("a/b", "/echo/a%2Fb"),
        ("%2F", "/echo/%252F"),
    ] {
        let r = call(&rest, "echo_segment", json!({"segment": value}));
        assert_eq!(r["success"], true, "{value}: {r}");
        assert_eq!(r["data"]["seen"]["raw_path"], raw, "{value}");
        assert_eq!(r["data"]["segment"], value);
    }
    for value in ["..", "."] {
        let r = call(&rest, "echo_segment", json!({"segment": value}));
        assert_eq!(error_kind(&r), "invalid_arguments", "{value}: {r}");
    }

    // A redirect on the same host is followed.
    let r = call(&rest, "redirect_here", json!({"to": "/echo/after"}));
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(r["data"]["segment"], "after");
    assert_eq!(r["meta"]["http"]["redirects"], 1);

    // Text, binary and oversized bodies.
    let r = call(&rest, "text", json!({}));
    assert_eq!(r["data"], "plain words", "{r}");
    let r = call(&rest, "binary", json!({}));
    assert_eq!(
        r["data"],
        json!({"binary": true, "content_type": "image/png", "bytes": 256}),
        "{r}"
    );
    let r = call(&rest, "large", json!({}));
    assert_eq!(error_kind(&r), "output_limit", "{r}");
    let r = call(&rest, "large", json!({"size": 1000}));
    assert_eq!(r["data"].as_str().map(str::len), Some(1000), "{r}");

    // The plan shows the request, credentials as ***.
    let (status, plan) = common::request(
        "POST",
        &format!("{rest}/tools/get_issue/plan"),
        Some(json!({"arguments": {"owner": "o", "repo": "r", "number": 1}})),
    );
    assert_eq!(status, 200, "{plan}");
    assert_eq!(
        plan["data"]["http"]["headers"]["authorization"], "***",
        "{plan}"
    );
    assert_eq!(
        plan["data"]["http"]["url"],
        format!("{base}/repos/o/r/issues/1")
    );

    // No secret in what toolsmith shows or keeps: definitions, runs, plans.
    let shown = [
        get(&rest, "/tools/get_issue").to_string(),
        get(&rest, "/tools/create_item").to_string(),
        get(&rest, "/runs?limit=200").to_string(),
        plan.to_string(),
    ];
    for text in shown {
        assert!(!text.contains("s3cret"), "a secret is shown: {text}");
    }

    // Through MCP: the Python MCP client calls the imported tools.
    let (_serve2, _rest2, mcp) = serve(&db, dir.path(), &["--no-catalog"]);
    let o = common::mcp_client_command(&python(), &["http-api", &mcp])
        .output()
        .expect("run the Python MCP client");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && out.trim_end().ends_with("ok"),
        "the MCP client failed:\n{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
#[ignore = "needs FastAPI (TOOLSMITH_TEST_PYTHON)"]
fn credentials_stay_on_their_host_and_hosts_are_policed() {
    let (_app, base) = fastapi();
    let other = base.replace("127.0.0.1", "localhost");
    let dir = tempfile::tempdir().expect("tempdir");
    let catalog = dir.path().join("catalog.yaml");
    std::fs::write(
        &catalog,
        format!(
            r#"tools:
  - name: follow
    description: Follows a redirect with a credential.
    http:
      url: "{base}/redirect"
      auth: {{bearer: token}}
    parameters: [{{name: to, inject_as: query}}]
    config_schema: [{{name: token, secret: true}}]
    config: {{token: "${{TS_TEST_TOKEN}}"}}
  - name: fenced
    description: May reach one host only.
    http:
      url: "{base}/redirect"
      allow_hosts: [127.0.0.1]
    parameters: [{{name: to, inject_as: query}}]
  - name: metadata
    description: The cloud metadata address.
    http: {{url: "http://169.254.169.254/latest/meta-data"}}
  - name: metadata_v6
    description: The cloud metadata address, IPv6.
    http: {{url: "http://[fd00:ec2::254]/latest"}}
"#
        ),
    )
    .expect("write catalog");
    let cat = catalog.display().to_string();
    let run = |tool: &str, args: Value| -> Value {
        let (_, out, err) = toolsmith(
            &[
                "call",
                "-c",
                &cat,
                tool,
                "--json",
                "--args",
                &args.to_string(),
            ],
            dir.path(),
        );
        serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{tool}: {out:?} {err}: {e}"))
    };
    // Same host: the credential goes along. Another host: it is dropped.
    let r = run("follow", json!({"to": "/headers"}));
    assert_eq!(r["data"]["authorization"], "Bearer ***", "{r}");
    let r = run("follow", json!({"to": format!("{other}/headers")}));
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(
        r["data"]["authorization"],
        Value::Null,
        "the credential followed a redirect to another host: {r}"
    );
    // A redirect to a host the tool may not reach is refused.
    let r = run("fenced", json!({"to": format!("{other}/headers")}));
    assert_eq!(error_kind(&r), "network", "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("allow_hosts"),
        "{r}"
    );
    let r = run("fenced", json!({"to": "/headers"}));
    assert_eq!(r["success"], true, "{r}");
    // Metadata addresses are refused before any connection.
    for tool in ["metadata", "metadata_v6"] {
        let r = run(tool, json!({}));
        assert_eq!(error_kind(&r), "network", "{r}");
        assert!(
            r["error"]["message"]
                .as_str()
                .unwrap_or("")
                .contains("metadata"),
            "{r}"
        );
    }
}

#[test]
fn toolsmith_imports_its_own_openapi_description_and_calls_through_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first_db = dir.path().join("first.db").display().to_string();
    let catalog = repo().join("examples/catalog.yaml").display().to_string();
    let (_first, first_rest, _) = serve(&first_db, dir.path(), &["--catalog", &catalog]);
    let spec = format!("{first_rest}/openapi.json");
    let second_db = dir.path().join("second.db").display().to_string();
    // The first server has no tokens: its tools are called with its local admin token, the
    // document's bearer scheme.
    let token = common::local_token(&first_rest).expect("the first server's local token");
    let (ok, out, err) = common::toolsmith(
        &[
            "import",
            "--openapi",
            &spec,
            "--db",
            &second_db,
            "--json",
            "--prefix",
            "ts_",
            "--auth",
            "bearer=TS_FIRST_TOKEN",
        ],
        &[("TS_FIRST_TOKEN", &token)],
        Some(dir.path()),
    );
    assert!(ok, "{out}\n{err}");
    let report: Value = serde_json::from_str(out.trim()).expect("report");
    let names: Vec<&str> = report["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(names.contains(&"ts_list"), "{names:?}");
    assert!(names.iter().all(|n| n.starts_with("ts_")), "{names:?}");

    let (_second, second_rest, _) = serve(&second_db, dir.path(), &["--no-catalog"]);
    let r = call(&second_rest, "ts_list", json!({"limit": "3"}));
    assert_eq!(r["success"], true, "{r}");
    let items = r["data"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("a page of the first server's tools: {r}"));
    assert_eq!(items.len(), 3, "{r}");
    let first_names: Vec<String> = get(&first_rest, "/tools?limit=3")["tools"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect();
    let through: Vec<String> = items
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(through, first_names);
    // Writes are dangerous by their method.
    let t = get(&second_rest, "/tools/ts_create");
    assert_eq!(t["definition"]["danger"], "dangerous", "{t}");
}

/// GitHub's description from `@octokit/openapi`, installed by `npm ci` in `tests/upstream`.
fn octokit_spec() -> String {
    let path = repo().join("crates/toolsmith/tests/upstream/node_modules/@octokit/openapi/generated/api.github.com.json");
    assert!(
        path.exists(),
        "{} is missing: run `npm ci` in crates/toolsmith/tests/upstream (.ci/run does)",
        path.display()
    );
    path.display().to_string()
}

#[test]
#[ignore = "needs @octokit/openapi and @stoplight/prism-cli (npm ci in tests/upstream)"]
fn githubs_description_is_imported_whole_and_prism_accepts_the_requests() {
    let spec = octokit_spec();
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("registry.db").display().to_string();
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let (ok, out, err) = toolsmith(
        &[
            "import",
            "--openapi",
            &spec,
            "--db",
            &db,
            "--json",
            "--base-url",
            &base,
            "--include-deprecated",
        ],
        dir.path(),
    );
    assert!(ok, "{out}\n{err}");
    let report: Value = serde_json::from_str(out.trim()).expect("report");
    let tools = report["tools"].as_array().expect("tools").len();
    let skipped = report["skipped"].as_array().expect("skipped");
    eprintln!(
        "GitHub: {tools} tools, {} skipped, {} notes, {:.2} s",
        skipped.len(),
        report["notes"].as_array().map_or(0, Vec::len),
        report["seconds"].as_f64().unwrap_or(0.0)
    );
    assert!(tools > 1000, "only {tools} tools");
    for s in skipped {
        assert!(
            !s["reason"].as_str().unwrap_or("").is_empty(),
            "a skip without a reason: {s}"
        );
    }

    let prism = repo().join("crates/toolsmith/tests/upstream/node_modules/.bin/prism");
    let _mock = Running(
        Command::new(&prism)
            .args([
                "mock",
                "--errors",
                "--port",
                &port.to_string(),
                "--host",
                "127.0.0.1",
                &spec,
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start prism"),
    );
    wait_for_port(port, 120);
    // Prism does check: a request that breaks the description is refused.
    let (status, body) = common::request(
        "GET",
        &format!("{base}/repos/octocat/hello-world/issues?per_page=many"),
        None,
    );
    assert_eq!(status, 422, "Prism accepted per_page=many: {body}");
    let (_serve, rest, _) = serve(&db, dir.path(), &["--no-catalog"]);
    // With `--errors`, Prism answers a request that breaks the description with a 4xx; a
    // violation of its own made-up response (GitHub's examples do not all meet the schemas)
    // is a 500 naming the response only. No call may break the request.
    let calls = [
        (
            "repos_get",
            json!({"owner": "octocat", "repo": "hello-world"}),
        ),
        (
            "issues_get",
            json!({"owner": "octocat", "repo": "hello-world", "issue_number": "1"}),
        ),
        (
            "issues_list_for_repo",
            json!({"owner": "octocat", "repo": "hello-world", "state": "open", "labels": "bug,ui", "per_page": 5}),
        ),
        (
            "issues_create",
            json!({"owner": "octocat", "repo": "hello-world", "title": "Found a bug", "labels": ["bug"]}),
        ),
        (
            "repos_create_or_update_file_contents",
            json!({"owner": "octocat", "repo": "hello-world", "path": "docs/a b.md", "message": "m", "content": "aGk="}),
        ),
        (
            "search_repos",
            json!({"q": "tetris language:assembly", "sort": "stars"}),
        ),
    ];
    for (tool, args) in calls {
        let r = call(&rest, tool, args.clone());
        if r["success"] == true {
            continue;
        }
        assert_eq!(
            r["meta"]["http"]["status"], 500,
            "{tool} {args}: Prism refused the request: {r}"
        );
        assert!(r["error"]["output"]["validation"].is_array(), "{tool}: {r}");
        let violations = request_violations(&r["error"]["output"]);
        assert!(
            violations.is_empty(),
            "{tool} {args}: Prism found the request breaks GitHub's description: {violations:?}"
        );
    }
}

/// The violations of a Prism error body that are about the request (not Prism's response).
fn request_violations(body: &Value) -> Vec<Value> {
    body["validation"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v["location"][0] != "response")
        .cloned()
        .collect()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}
