//! Toolsets against a real `serve`: `/v1/toolsets` (versioned CRUD, members with why),
//! narrowing by header and query on REST, tokens limited to toolsets (nothing outside them
//! leaks, narrowing cannot widen them, a limited admin edits only members), and — with the
//! official MCP Python client — `/mcp/{toolset}`, narrowing on `/mcp`, `list_changed` for
//! members only and search mode over a registry of 1000+ tools.

mod common;

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use common::{BIN, post_mcp, repo, request_as, serve};

/// Toolsets and tools the tests use beside the example catalog (whose toolsets are `files`
/// and `text`), and 1000 bulk tools.
const EXTRA: &str = r#"
toolsets:
  - name: weather
    include: {tags: [weather]}
  - name: everything
    description: Every tool but the secret one, found by search.
    include: {}
    exclude: {names: [secret_tool]}
    discovery: search
tools:
  - name: barometer
    description: Reports the barometric air pressure in a city.
    tags: [weather]
    command: [echo, "pressure in"]
    parameters:
      - {name: city, type: string, description: The city.}
  - name: secret_tool
    description: Outside every toolset but the whole registry.
    command: ["true"]
"#;

fn fill(db: &str, dir: &Path) {
    let extra = dir.join("extra.yaml");
    std::fs::write(&extra, EXTRA).expect("write extra");
    let bulk = dir.join("bulk.yaml");
    let mut text = String::from("tools:\n");
    for i in 0..1000 {
        text.push_str(&format!(
            "  - {{name: bulk_{i:04}, description: Bulk tool number {i} for the token count., command: [\"true\"], parameters: [{{name: n, type: integer, description: A number.}}]}}\n"
        ));
    }
    std::fs::write(&bulk, text).expect("write bulk");
    common::import_all(db, &[repo().join("examples/catalog.yaml"), extra, bulk]);
}

/// A GET with headers; status and JSON.
fn get_with(url: &str, token: Option<&str>, headers: &[(&str, &str)]) -> (u16, Value) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut req = ureq::http::Request::builder().method("GET").uri(url);
    let local = token.is_none().then(|| common::local_token(url)).flatten();
    if let Some(t) = token.or(local.as_deref()) {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let mut resp = agent
        .run(req.body(Vec::new()).expect("request"))
        .expect("send");
    let status = resp.status().as_u16();
    let text = resp.body_mut().read_to_string().unwrap_or_default();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn names(v: &Value) -> Vec<String> {
    v["tools"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|t| t["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Every tool name `tools/list` gives at `url` (all pages), and the bytes it took.
fn mcp_list(url: &str, token: Option<&str>) -> (Vec<String>, usize) {
    let (mut all, mut bytes, mut cursor) = (Vec::new(), 0, None::<String>);
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let (status, v) = post_mcp(
            url,
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params}),
            token,
        );
        assert_eq!(status, 200, "{v}");
        bytes += v["result"].to_string().len();
        all.extend(names(&v["result"]));
        match v["result"]["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return (all, bytes),
        }
    }
}

#[test]
fn toolsets_are_versioned_narrow_requests_and_limit_tokens() {
    let dir = tempfile::tempdir().expect("tempdir");
    let registry = tempfile::tempdir().expect("tempdir");
    let db = registry.path().join("r.db").display().to_string();
    fill(&db, dir.path());
    let (_serve, base, mcp) = serve(
        &db,
        dir.path(),
        &[
            "--no-catalog",
            "--token",
            "root=root-secret-1",
            "--token",
            "sup:call@files=sup-secret-1",
            "--token",
            "lead:admin@files=lead-secret-1",
        ],
    );
    let root = Some("root-secret-1");
    let sup = Some("sup-secret-1");
    let lead = Some("lead-secret-1");

    // CRUD, versioned like tools.
    let (status, created) = request_as(
        "POST",
        &format!("{base}/toolsets"),
        Some(
            json!({"name": "ops", "include": {"kinds": ["command"], "tags": ["git", "text"]}, "exclude": {"danger": "dangerous"}}),
        ),
        root,
    );
    assert_eq!(status, 201, "{created}");
    let members: Vec<(&str, &str)> = created["members"]
        .as_array()
        .expect("members")
        .iter()
        .map(|m| {
            (
                m["name"].as_str().unwrap_or(""),
                m["why"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        members,
        [
            ("count_lines", "tag text, kind command"),
            ("git_log", "tag git, kind command"),
            ("sort_lines", "tag text, kind command")
        ],
        "{created}"
    );
    let (status, bad) = request_as(
        "POST",
        &format!("{base}/toolsets"),
        Some(json!({"name": "x", "include": {"kinds": ["lambda"]}})),
        root,
    );
    assert_eq!(status, 422, "{bad}");
    assert_eq!(
        bad["error"]["details"][0]["path"], "include.kinds[0]",
        "{bad}"
    );
    let edit = json!({"name": "ops", "include": {"names": ["git_*"]}});
    let (status, _) = request_as(
        "PUT",
        &format!("{base}/toolsets/ops"),
        Some(edit.clone()),
        root,
    );
    assert_eq!(status, 428, "an edit names its base version");
    let (status, v2) = request_as(
        "PUT",
        &format!("{base}/toolsets/ops?base_version=1"),
        Some(edit.clone()),
        root,
    );
    assert_eq!((status, v2["version"].as_u64()), (200, Some(2)), "{v2}");
    let (status, _) = request_as(
        "PUT",
        &format!("{base}/toolsets/ops?base_version=1"),
        Some(edit),
        root,
    );
    assert_eq!(status, 409, "a stale edit is refused");
    // The path names the toolset: a body without a name is that one's, one naming another is
    // refused (renaming is creating), as for tools and servers.
    let (status, v3) = request_as(
        "PUT",
        &format!("{base}/toolsets/ops?base_version=2&summary=tags"),
        Some(json!({"include": {"tags": ["git"]}})),
        root,
    );
    assert_eq!(
        (status, v3["version"].as_u64(), v3["name"].as_str()),
        (200, Some(3), Some("ops")),
        "{v3}"
    );
    let (status, renamed) = request_as(
        "PUT",
        &format!("{base}/toolsets/ops?base_version=3"),
        Some(json!({"name": "other", "include": {"tags": ["git"]}})),
        root,
    );
    assert_eq!(status, 400, "{renamed}");
    assert_eq!(
        renamed["error"]["message"],
        "the body names toolset \"other\", the path \"ops\"; rename by creating a new toolset"
    );
    let (_, versions) = request_as("GET", &format!("{base}/toolsets/ops/versions"), None, root);
    let summaries: Vec<&str> = versions
        .as_array()
        .expect("versions")
        .iter()
        .map(|v| v["summary"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(summaries, ["created", "edited", "tags"], "{versions}");
    let (status, _) = request_as("DELETE", &format!("{base}/toolsets/ops"), None, root);
    assert_eq!(status, 204);
    let (status, _) = request_as("GET", &format!("{base}/toolsets/ops"), None, root);
    assert_eq!(status, 404);

    // Narrowing REST by query and header; an unknown toolset names the known ones.
    let (_, v) = get_with(&format!("{base}/tools?toolset=files"), root, &[]);
    assert_eq!(
        names(&v),
        ["find_files", "list_dir", "read_file", "search_text"]
    );
    let (_, v) = get_with(
        &format!("{base}/tools"),
        root,
        &[("x-toolsmith-toolset", "files,text")],
    );
    assert!(
        names(&v).is_empty(),
        "toolsets narrow together (an intersection): {v}"
    );
    let (_, v) = get_with(
        &format!("{base}/tools?limit=3"),
        root,
        &[("x-toolsmith-tools", "bulk_00*")],
    );
    assert_eq!(names(&v), ["bulk_0000", "bulk_0001", "bulk_0002"], "{v}");
    let cursor = v["next_cursor"].as_str().expect("a next page");
    let (_, v) = get_with(
        &format!("{base}/tools?limit=200&cursor={cursor}"),
        root,
        &[("x-toolsmith-tools", "bulk_00*")],
    );
    assert_eq!(
        names(&v).len(),
        97,
        "pages of a narrowed list follow on: {v}"
    );
    let (status, v) = get_with(&format!("{base}/tools?toolset=nope"), root, &[]);
    assert_eq!(status, 400);
    assert_eq!(
        v["error"]["message"],
        "unknown toolset \"nope\"; the toolsets are: everything, files, text, weather"
    );
    let (_, v) = get_with(
        &format!("{base}/export?format=openai&toolset=text"),
        root,
        &[],
    );
    assert_eq!(v.as_array().map(Vec::len), Some(4), "{v}");

    // A token limited to `files` sees its members only, everywhere, and cannot widen.
    let (_, v) = get_with(&format!("{base}/tools"), sup, &[]);
    assert_eq!(
        names(&v),
        ["find_files", "list_dir", "read_file", "search_text"]
    );
    let (_, v) = get_with(&format!("{base}/tools"), sup, &[("x-toolsmith-tools", "*")]);
    assert_eq!(
        names(&v).len(),
        4,
        "a glob cannot widen a limited token: {v}"
    );
    let (status, v) = get_with(&format!("{base}/tools?toolset=text"), sup, &[]);
    assert_eq!(status, 400);
    assert_eq!(
        v["error"]["message"], "unknown toolset \"text\"; the toolsets are: files",
        "other toolsets are not named"
    );
    let (status, hidden) = get_with(&format!("{base}/tools/word_stats"), sup, &[]);
    let (_, missing) = get_with(&format!("{base}/tools/no_such_tool"), sup, &[]);
    assert_eq!(status, 404);
    assert_eq!(
        hidden["error"]["message"]
            .as_str()
            .map(|m| m.replace("word_stats", "X")),
        missing["error"]["message"]
            .as_str()
            .map(|m| m.replace("no_such_tool", "X")),
        "a hidden tool answers as a missing one"
    );
    let (status, _) = request_as(
        "POST",
        &format!("{base}/tools/word_stats/call"),
        Some(json!({"arguments": {"text": "a"}})),
        sup,
    );
    assert_eq!(status, 404);
    let (status, r) = request_as(
        "POST",
        &format!("{base}/tools/list_dir/call"),
        Some(json!({"arguments": {"path": "."}})),
        sup,
    );
    assert_eq!((status, r["success"].as_bool()), (200, Some(true)), "{r}");
    request_as(
        "POST",
        &format!("{base}/tools/word_stats/call"),
        Some(json!({"arguments": {"text": "a"}})),
        root,
    );
    let (_, runs) = get_with(&format!("{base}/runs"), sup, &[]);
    let tools: Vec<&str> = runs["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .filter_map(|r| r["tool"].as_str())
        .collect();
    assert_eq!(
        tools,
        ["list_dir"],
        "runs of hidden tools are hidden: {runs}"
    );
    let (_, v) = get_with(&format!("{base}/toolsets"), sup, &[]);
    assert_eq!(
        v["toolsets"]
            .as_array()
            .map(|a| a.iter().map(|t| t["name"].clone()).collect::<Vec<_>>()),
        Some(vec![json!("files")])
    );
    let (listed, _) = mcp_list(&mcp, sup);
    assert_eq!(
        listed,
        ["find_files", "list_dir", "read_file", "search_text"]
    );
    let (status, _) = post_mcp(
        &mcp.replace("/mcp", "/mcp/text"),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        sup,
    );
    assert_eq!(
        status, 404,
        "another toolset's endpoint is unknown to a limited token"
    );

    // A limited admin edits members only, and cannot move a tool out of its toolsets.
    let (_, current) = get_with(&format!("{base}/tools/list_dir"), lead, &[]);
    let mut def = current["definition"].clone();
    def["description"] = json!("Lists a folder.");
    let (status, v) = request_as(
        "PUT",
        &format!("{base}/tools/list_dir?base_version=1"),
        Some(def.clone()),
        lead,
    );
    assert_eq!(status, 200, "{v}");
    def["tags"] = json!(["other"]);
    let (status, v) = request_as(
        "PUT",
        &format!("{base}/tools/list_dir?base_version=2"),
        Some(def),
        lead,
    );
    assert_eq!(status, 403, "{v}");
    let new = json!({"name": "lead_tool", "description": "d", "command": ["true"]});
    let (status, _) = request_as("POST", &format!("{base}/tools"), Some(new), lead);
    assert_eq!(status, 403, "a new tool outside the toolsets is refused");
    let new =
        json!({"name": "lead_tool", "description": "d", "tags": ["files"], "command": ["true"]});
    let (status, v) = request_as("POST", &format!("{base}/tools"), Some(new), lead);
    assert_eq!(status, 201, "{v}");
    // Nor can it widen what a member's processes reach: that would make it root of the host
    // and an unlimited admin (a `sandbox: none` tool reads the key and the tokens file).
    for (widening, named) in [
        (json!({"sandbox": "none"}), "sandbox: none"),
        (
            json!({"sandbox": {"filesystem": {"read": ["/root"]}}}),
            "sandbox.filesystem",
        ),
        (
            json!({"sandbox": {"unix_sockets": ["/var/run/docker.sock"]}}),
            "sandbox.unix_sockets",
        ),
        (
            json!({"sandbox": {"enforce": "best_effort"}}),
            "best_effort",
        ),
        (
            json!({"env_allowlist": ["AWS_SECRET_ACCESS_KEY"]}),
            "AWS_SECRET_ACCESS_KEY",
        ),
    ] {
        let mut def =
            json!({"name": "lead_esc", "description": "d", "tags": ["files"], "command": ["true"]});
        def.as_object_mut()
            .expect("object")
            .extend(widening.as_object().cloned().unwrap_or_default());
        let (status, v) = request_as("POST", &format!("{base}/tools"), Some(def.clone()), lead);
        assert_eq!(status, 403, "{def}: {v}");
        let message = v["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(named), "{message}");
        // An unlimited admin may.
        let (status, v) = request_as("POST", &format!("{base}/tools"), Some(def), root);
        assert_eq!(status, 201, "{v}");
        let (status, _) = request_as("DELETE", &format!("{base}/tools/lead_esc"), None, root);
        assert_eq!(status, 204);
    }
    // A narrower policy and safe variables are fine; restoring a wider version is not.
    let narrow = json!({"name": "lead_narrow", "description": "d", "tags": ["files"], "command": ["true"],
        "sandbox": {"preset": "read-only", "network": "none", "enforce": "required"}, "env_allowlist": ["PATH", "LANG"]});
    let (status, v) = request_as("POST", &format!("{base}/tools"), Some(narrow.clone()), lead);
    assert_eq!(status, 201, "{v}");
    let mut wide = narrow.clone();
    wide["sandbox"] = json!("none");
    let (status, v) = request_as(
        "PUT",
        &format!("{base}/tools/lead_narrow?base_version=1"),
        Some(wide),
        root,
    );
    assert_eq!(status, 200, "{v}");
    let (status, v) = request_as(
        "PUT",
        &format!("{base}/tools/lead_narrow?base_version=2"),
        Some(narrow),
        root,
    );
    assert_eq!(status, 200, "{v}");
    let (status, v) = request_as(
        "POST",
        &format!("{base}/tools/lead_narrow/restore/2"),
        None,
        lead,
    );
    assert_eq!(status, 403, "{v}");
    let (status, _) = request_as(
        "POST",
        &format!("{base}/tools/word_stats/disable"),
        None,
        lead,
    );
    assert_eq!(status, 404);
    // Upstream servers and OpenAPI imports span toolsets: not for a limited caller.
    let (status, _) = request_as("GET", &format!("{base}/servers"), None, lead);
    assert_eq!(status, 403);
    let spec = json!({"spec": {"openapi": "3.1.0", "info": {"title": "t", "version": "1"}, "paths": {}}, "base_url": "http://127.0.0.1:9"});
    let (status, _) = request_as("POST", &format!("{base}/openapi/import"), Some(spec), lead);
    assert_eq!(status, 403);

    // What search mode saves a client of a big registry (all pages of tools/list).
    let (all, full) = mcp_list(&mcp, root);
    let (two, search) = mcp_list(&mcp.replace("/mcp", "/mcp/everything"), root);
    assert!(
        all.len() > 1000 && two == ["search_tools", "call_tool"],
        "{} {two:?}",
        all.len()
    );
    eprintln!(
        "tools/list of {} tools: {full} bytes (about {} tokens); search mode: {search} bytes (about {} tokens)",
        all.len(),
        full / 4,
        search / 4
    );
    assert!(
        search * 100 < full,
        "search mode lists a fraction: {search} of {full}"
    );

    // The CLI shows members and why.
    let o = Command::new(BIN)
        .args(["toolsets", "show", "weather", "--json", "--db", &db])
        .output()
        .expect("toolsets show");
    let shown: Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(
        shown["members"],
        json!([{"name": "barometer", "why": "tag weather"}]),
        "{shown}"
    );
}

#[test]
#[ignore = "needs the MCP Python client (TOOLSMITH_TEST_PYTHON)"]
fn python_client_sees_toolsets_narrowing_and_search_mode() {
    let python = common::python();
    let dir = tempfile::tempdir().expect("tempdir");
    let registry = tempfile::tempdir().expect("tempdir");
    let db = registry.path().join("r.db").display().to_string();
    fill(&db, dir.path());
    let (_serve, base, mcp) = serve(&db, dir.path(), &["--no-catalog"]);
    let workspace = dir.path().display().to_string();
    common::mcp_client(&python, &["toolsets", &mcp, &base, &workspace]);
}

/// `toolsmith mcp --toolset` over stdio: only the members are listed and callable; an
/// unknown toolset is an error naming the known ones.
#[test]
fn stdio_mcp_serves_one_toolset() {
    use std::io::{BufRead, BufReader, Write};
    let dir = tempfile::tempdir().expect("tempdir");
    let catalog = repo().join("examples/catalog.yaml");
    let session = |toolset: &str, requests: &[Value]| -> Vec<Value> {
        let mut child = Command::new(BIN)
            .args(["mcp", "--no-cgroups", "--toolset", toolset, "--catalog"])
            .arg(&catalog)
            .arg("--workspace")
            .arg(dir.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("mcp");
        let mut stdin = child.stdin.take().expect("stdin");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut send = |v: Value| writeln!(stdin, "{v}").expect("write");
        send(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        );
        let _ = lines.next();
        send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        let answers = requests
            .iter()
            .map(|r| {
                send(r.clone());
                serde_json::from_str(&lines.next().expect("an answer").expect("line"))
                    .expect("json")
            })
            .collect();
        let _ = child.kill();
        let _ = child.wait();
        answers
    };
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "word_stats", "arguments": {"text": "a"}}});
    let answers = session("text", &[list.clone(), call]);
    let mut listed = names(&answers[0]["result"]);
    listed.sort();
    assert_eq!(
        listed,
        [
            "convert_temperature",
            "count_lines",
            "sort_lines",
            "word_stats"
        ],
        "{}",
        answers[0]
    );
    assert_eq!(answers[1]["result"]["isError"], false, "{}", answers[1]);
    let answers = session(
        "files",
        &[
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "word_stats", "arguments": {"text": "a"}}}),
        ],
    );
    assert!(
        answers[0]["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("unknown tool")),
        "{}",
        answers[0]
    );
    let answers = session("nope", &[list]);
    assert_eq!(
        answers[0]["error"]["message"], "unknown toolset \"nope\"; the toolsets are: files, text",
        "{}",
        answers[0]
    );
}
