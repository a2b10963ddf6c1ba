//! The `toolsmith` binary, run for real: catalog files in, exit codes and output checked.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs the binary from the repository root (so `examples/catalog.yaml` is the default).
fn toolsmith(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolsmith"))
        .args(args)
        .current_dir(repo())
        .output()
        .expect("runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json_out(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}{}", stdout(o), stderr(o)))
}

#[test]
fn check_succeeds_on_every_example_with_a_summary() {
    let o = toolsmith(&["check", "examples/catalog.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "ok: examples/catalog.yaml — 13 tools (13 enabled; 6 command, 2 script, 5 builtin, 0 http) from 2 files\n"
    );
    for f in ["examples/delta.yaml", "examples/minimal.json"] {
        assert_eq!(toolsmith(&["check", f]).status.code(), Some(0), "{f}");
    }
    let o = toolsmith(&["check", "examples/catalog.yaml", "--json"]);
    assert_eq!(
        json_out(&o)["files"],
        json!(["catalog.yaml", "more/text.yaml"])
    );
}

#[test]
fn check_fails_with_every_error_and_exit_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("bad.yaml");
    std::fs::write(&file, "tools:\n  - {name: a, description: d, command: [ls], parameters: [{name: x, type: numbr}]}\n  - {name: b, command: [ls]}\n").expect("write");
    let o = toolsmith(&["check", file.to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stdout(&o), "");
    assert_eq!(
        stderr(&o),
        "error: 2 problems in the catalog:\n  \
         bad.yaml: tools[0].parameters[0].type: unknown type \"numbr\" (expected one of string, integer, number, boolean, enum, array, object)\n  \
         bad.yaml: tools[1].description: missing or empty; describe what the tool does, for the model\n"
    );
    let o = toolsmith(&["check", "no/such/file.yaml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).starts_with("error: cannot open catalog no/such/file.yaml:"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn symlinks_out_of_the_catalog_folder_are_refused() {
    let outside = tempfile::tempdir().expect("tempdir");
    std::fs::write(outside.path().join("secret.py"), "print('{}')").expect("write");
    let dir = tempfile::tempdir().expect("tempdir");
    std::os::unix::fs::symlink(outside.path().join("secret.py"), dir.path().join("link.py"))
        .expect("symlink");
    std::fs::write(
        dir.path().join("c.yaml"),
        "tools: [{name: s, description: d, script: {path: link.py}}]",
    )
    .expect("write");
    let o = toolsmith(&["check", dir.path().join("c.yaml").to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("outside the catalog's folder"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn list_and_show() {
    let o = toolsmith(&["list", "--json"]);
    let rows = json_out(&o);
    assert_eq!(rows.as_array().map(Vec::len), Some(13));
    assert_eq!(
        rows[3],
        json!({"name": "write_file", "title": null, "description": "Write text to a file inside the workspace, creating it or replacing its content.", "executor": "builtin", "danger": "dangerous", "enabled": true, "tags": ["files"]})
    );
    let table = stdout(&toolsmith(&["list"]));
    assert!(table.starts_with("NAME "), "{table}");
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("remove_files") && l.contains("dangerous")),
        "{table}"
    );

    let o = toolsmith(&["show", "git_log", "--json"]);
    let shown = json_out(&o);
    assert_eq!(
        shown["definition"]["command"],
        json!(["git", "log", "--oneline", "--no-color"])
    );
    assert_eq!(shown["input_schema"]["properties"]["limit"]["maximum"], 200);
    let o = toolsmith(&["show", "nope"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("no tool named \"nope\" in the catalog (tools: read_file, list_dir,"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn show_never_prints_a_secret() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("c.yaml");
    std::fs::write(&file, "tools: [{name: t, description: d, command: [curl], config_schema: [{name: token, secret: true}], config: {token: \"${TS_TEST_TOKEN}\"}}]").expect("write");
    let path = file.to_str().expect("utf-8");
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_toolsmith"))
            .args(args)
            .env("TS_TEST_TOKEN", "hunter2")
            .output()
            .expect("runs")
    };
    for args in [
        vec!["show", "t", "-c", path],
        vec!["show", "t", "-c", path, "--json"],
        vec!["call", "t", "-c", path, "--dry-run", "--json"],
        vec!["export", "-c", path, "-f", "mcp"],
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert!(
            !stdout(&o).contains("hunter2"),
            "{args:?} leaked the secret: {}",
            stdout(&o)
        );
    }
    let o = run(&["call", "t", "-c", path, "--dry-run", "--json"]);
    assert_eq!(json_out(&o)["data"]["env"], json!({"TOKEN": "***"}));
    let o = Command::new(env!("CARGO_BIN_EXE_toolsmith"))
        .args(["check", path])
        .env_remove("TS_TEST_TOKEN")
        .output()
        .expect("runs");
    assert!(
        stderr(&o)
            .contains("tools[0].config.token: environment variable \"TS_TEST_TOKEN\" is not set"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn export_every_format_matches_the_golden_files() {
    let golden = repo().join("crates/toolsmith-core/tests/golden/examples");
    for (format, strict, file) in [
        ("openai", false, "openai.json"),
        ("openai", true, "openai-strict.json"),
        ("openai-responses", false, "openai-responses.json"),
        ("openai-responses", true, "openai-responses-strict.json"),
        ("anthropic", false, "anthropic.json"),
        ("gemini", false, "gemini.json"),
        ("mcp", false, "mcp.json"),
        ("xml", false, "xml.xml"),
    ] {
        let mut args = vec!["export", "--format", format];
        if strict {
            args.push("--strict");
        }
        let o = toolsmith(&args);
        assert_eq!(o.status.code(), Some(0), "{format}: {}", stderr(&o));
        let expected = std::fs::read_to_string(golden.join(file)).expect("golden file");
        assert_eq!(stdout(&o), expected, "{format} strict={strict}");
    }
    let o = toolsmith(&["export", "-f", "anthropic", "--tag", "git", "--tag", "math"]);
    let names: Vec<String> = json_out(&o)
        .as_array()
        .expect("array")
        .iter()
        .map(|t| t["name"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(names, ["git_log", "convert_temperature"]);
    let o = toolsmith(&["export", "-f", "claude"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("unknown format \"claude\" (expected one of openai, openai-responses, anthropic, gemini, mcp, xml)"), "{}", stderr(&o));
}

#[test]
fn call_dry_run_prints_the_tool_result() {
    let o = toolsmith(&[
        "call",
        "git_log",
        "-a",
        "limit=3",
        "-a",
        "paths=src",
        "-a",
        "paths=-odd",
        "--dry-run",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut out = json_out(&o);
    // What this machine's kernel would enforce of the tool's (default) sandbox.
    let sandbox = out["meta"]
        .as_object_mut()
        .and_then(|m| m.remove("sandbox"))
        .expect("meta.sandbox");
    assert_eq!(sandbox["policy"], "workspace", "{sandbox}");
    assert!(sandbox["landlock_abi"].is_u64(), "{sandbox}");
    assert_eq!(
        out,
        json!({
            "success": true,
            "data": {
                "arguments": {"limit": 3, "paths": ["src", "-odd"]},
                "argv": ["git", "log", "--oneline", "--no-color", "--max-count=3", "--", "src", "-odd"],
                "stdin": null,
                "env": {}
            },
            "meta": {"tool": "git_log", "version": 1, "coerced": ["limit: string→integer"]}
        })
    );
    // --args with a JSON object, and raw JSON values with :=
    let o = toolsmith(&[
        "call",
        "sort_lines",
        "--args",
        r#"{"text": "b\na", "numeric": "true"}"#,
        "--dry-run",
        "--json",
    ]);
    assert_eq!(
        json_out(&o)["data"]["argv"],
        json!(["sort", "--numeric-sort"])
    );
    assert_eq!(json_out(&o)["data"]["stdin"], "b\na");
    let o = toolsmith(&[
        "call",
        "remove_files",
        "-a",
        "paths:=[\"a\", \"b\"]",
        "--dry-run",
        "--json",
    ]);
    assert_eq!(
        json_out(&o)["data"]["argv"],
        json!(["rm", "--force", "--", "a", "b"])
    );
    // Human output.
    let o = toolsmith(&[
        "call",
        "current_time",
        "-a",
        "timezone=Europe/Paris",
        "--dry-run",
    ]);
    assert_eq!(
        stdout(&o),
        "tool:      current_time (version 1)\narguments: {\"timezone\":\"Europe/Paris\"}\nargv:      date --iso-8601=seconds\nstdin:     (empty)\nenv:       TZ=Europe/Paris\n"
    );
}

#[test]
fn call_errors_exit_1_with_every_problem() {
    let o = toolsmith(&[
        "call",
        "search_text",
        "--args",
        r#"{"max_count": "lots", "pattern": ""}"#,
        "--dry-run",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let r = json_out(&o);
    assert_eq!(r["success"], false);
    assert_eq!(r["error"]["kind"], "invalid_arguments");
    assert_eq!(
        r["error"]["details"],
        json!([
            {"pointer": "/max_count", "message": "\"lots\" is not an integer"},
            {"pointer": "/pattern", "message": "\"\" is shorter than 1 character"},
        ])
    );
    let o = toolsmith(&["call", "search_text", "--args", "{not json", "--dry-run"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).starts_with("error (invalid_arguments): invalid arguments for tool `search_text`: arguments are not valid JSON: expected a key in double quotes at line 1 column 2."), "{}", stderr(&o));
    let o = toolsmith(&["call", "search_text", "-a", "oops", "--dry-run"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        "error: -a oops: expected key=value or key:=json\n"
    );
    let o = toolsmith(&[
        "call",
        "search_text",
        "--args",
        "{}",
        "-a",
        "x=1",
        "--dry-run",
    ]);
    assert_eq!(o.status.code(), Some(2), "--args and -a conflict");
}

#[test]
fn help_lists_the_commands_and_exit_codes() {
    let o = toolsmith(&["--help"]);
    let help = stdout(&o);
    for word in [
        "check",
        "list",
        "show",
        "export",
        "call",
        "Exit codes: 0 success, 1 the tool call returned an error result, 2 usage or catalog error.",
    ] {
        assert!(help.contains(word), "{word} missing from --help:\n{help}");
    }
    assert_eq!(toolsmith(&["frobnicate"]).status.code(), Some(2));
}

/// Runs the binary with stdin closed (not a terminal), from `dir`.
fn toolsmith_in(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolsmith"));
    cmd.args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("runs")
}

#[test]
fn call_runs_tools_for_real() {
    let catalog = repo().join("examples/catalog.yaml");
    let c = catalog.to_str().expect("utf-8");
    let ws = tempfile::tempdir().expect("tempdir");
    std::fs::write(ws.path().join("notes.txt"), "alpha\nbeta\n").expect("write");
    let o = toolsmith_in(
        ws.path(),
        &[
            "call",
            "read_file",
            "-c",
            c,
            "-a",
            "path=notes.txt",
            "-a",
            "offset=2",
            "--json",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(json_out(&o)["data"]["content"], "beta\n");
    let o = toolsmith_in(
        ws.path(),
        &[
            "call",
            "sort_lines",
            "-c",
            c,
            "-a",
            "text=b\na",
            "--workspace",
            ".",
        ],
        &[],
    );
    assert_eq!(stdout(&o), "a\nb\n");
    let o = toolsmith_in(
        ws.path(),
        &[
            "call",
            "word_stats",
            "-c",
            c,
            "-a",
            "text=a b a",
            "-a",
            "top=1",
            "--json",
        ],
        &[],
    );
    assert_eq!(
        json_out(&o)["data"]["top_words"],
        json!([{"word": "a", "count": 2}]),
        "{}",
        stderr(&o)
    );
    // A failing tool: exit 1 with the error kind.
    let o = toolsmith_in(
        ws.path(),
        &["call", "read_file", "-c", c, "-a", "path=../../etc/passwd"],
        &[],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("error (invalid_arguments): read_file: \"../../etc/passwd\" refused: `..` is not allowed"), "{}", stderr(&o));
    let o = toolsmith_in(
        ws.path(),
        &[
            "call",
            "read_file",
            "-c",
            c,
            "-a",
            "path=x",
            "--workspace",
            "no/such/dir",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--workspace: workspace no/such/dir:"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn dangerous_tools_need_yes_without_a_terminal() {
    let catalog = repo().join("examples/catalog.yaml");
    let c = catalog.to_str().expect("utf-8");
    let ws = tempfile::tempdir().expect("tempdir");
    let o = toolsmith_in(
        ws.path(),
        &[
            "call",
            "write_file",
            "-c",
            c,
            "-a",
            "path=out.txt",
            "-a",
            "content=hi",
            "--json",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(json_out(&o)["error"]["kind"], "needs_confirmation");
    assert!(!ws.path().join("out.txt").exists(), "nothing was written");
    let o = toolsmith_in(
        ws.path(),
        &[
            "call",
            "write_file",
            "-c",
            c,
            "-a",
            "path=out.txt",
            "-a",
            "content=hi",
            "--yes",
            "--json",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(ws.path().join("out.txt")).expect("written"),
        "hi"
    );
}

#[test]
fn runtime_setup_installs_the_curated_packages_and_script_tools_use_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rt = dir.path().join("rt");
    let rt_s = rt.to_str().expect("utf-8");
    let o = toolsmith_in(
        dir.path(),
        &["runtime", "status", "--dir", rt_s, "--json"],
        &[],
    );
    assert_eq!(json_out(&o)["exists"], false);
    let o = toolsmith_in(dir.path(), &["runtime", "setup", "--dir", rt_s], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("runtime: installing requests, httpx, jsonschema"),
        "{}",
        stderr(&o)
    );
    let o = toolsmith_in(
        dir.path(),
        &["runtime", "status", "--dir", rt_s, "--json"],
        &[],
    );
    let status = json_out(&o);
    assert_eq!(status["exists"], true);
    let names: Vec<String> = status["packages"]
        .as_array()
        .expect("list")
        .iter()
        .map(|p| p["name"].as_str().unwrap_or_default().to_lowercase())
        .collect();
    for p in ["requests", "httpx", "jsonschema"] {
        assert!(names.contains(&p.to_string()), "{p} missing from {names:?}");
    }
    // A script tool importing httpx runs with the runtime's Python.
    std::fs::write(dir.path().join("c.yaml"), "tools: [{name: v, description: d, script: {source: \"import httpx, json, sys; json.load(sys.stdin); print(json.dumps({'prefix': sys.prefix}))\"}}]").expect("write");
    let o = toolsmith_in(
        dir.path(),
        &["call", "v", "-c", "c.yaml", "--json"],
        &[("TOOLSMITH_RUNTIME", rt_s)],
    );
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert_eq!(json_out(&o)["data"]["prefix"], rt_s);
}

#[test]
fn ctrl_c_cancels_the_call_and_kills_its_processes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let id = std::process::id();
    std::fs::write(dir.path().join("c.yaml"), format!("tools: [{{name: hang, description: d, env: {{TS_MARK: ctrlc{id}}}, command: [sh, -c, 'sleep 30 & sleep 30']}}]")).expect("write");
    let child = Command::new(env!("CARGO_BIN_EXE_toolsmith"))
        .args(["call", "hang", "-c", "c.yaml", "--json"])
        .current_dir(dir.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let marker = format!("TS_MARK=ctrlc{id}");
    let running = || {
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| {
                std::fs::read(e.path().join("environ"))
                    .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == marker.as_bytes()))
            })
            .count()
    };
    for _ in 0..200 {
        if running() >= 2 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(running() >= 2, "the tool started");
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let o = child.wait_with_output().expect("wait");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(json_out(&o)["error"]["kind"], "cancelled");
    for _ in 0..100 {
        if running() == 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(running(), 0, "no process of the cancelled call survives");
}

#[test]
fn registry_import_history_restore_enable_disable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("reg.db");
    let db_s = db.to_str().expect("utf-8");
    let catalog = repo().join("examples/catalog.yaml");
    let c = catalog.to_str().expect("utf-8");
    let run = |args: &[&str]| {
        toolsmith_in(
            dir.path(),
            args,
            &[("TOOLSMITH_DB", db_s), ("USER", "tester")],
        )
    };
    let o = run(&["import", c, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(json_out(&o)["created"].as_array().map(Vec::len), Some(13));
    let o = run(&["import", c, "--json"]);
    assert_eq!(
        json_out(&o)["unchanged"].as_array().map(Vec::len),
        Some(13),
        "unchanged tools keep their version"
    );
    assert_eq!(
        stdout(&run(&["disable", "git_log"])),
        "git_log: disabled (version 2)\n"
    );
    assert_eq!(
        stdout(&run(&["enable", "git_log", "--author", "ops"])),
        "git_log: enabled (version 3)\n"
    );
    assert_eq!(
        stdout(&run(&["restore", "git_log", "2"])),
        "git_log: version 2 restored as version 4\n"
    );
    let o = run(&["history", "git_log", "--json"]);
    let h = json_out(&o);
    let rows: Vec<(u64, String, String, bool)> = h
        .as_array()
        .expect("list")
        .iter()
        .map(|v| {
            (
                v["version"].as_u64().unwrap_or(0),
                v["author"].as_str().unwrap_or_default().to_owned(),
                v["summary"].as_str().unwrap_or_default().to_owned(),
                v["definition"]["enabled"].as_bool().unwrap_or(false),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            (1, "tester".into(), "imported from catalog".into(), true),
            (2, "tester".into(), "disabled".into(), false),
            (3, "ops".into(), "enabled".into(), true),
            (4, "tester".into(), "restored version 2".into(), false),
        ]
    );
    let o = run(&["restore", "git_log", "99"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        "error: version 99 of tool \"git_log\" not found\n"
    );
    // --prune deletes what the catalog no longer has.
    std::fs::write(
        dir.path().join("one.yaml"),
        "tools: [{name: git_log, description: Only this one., command: [git, log]}]",
    )
    .expect("write");
    let o = run(&["import", "one.yaml", "--prune", "--json"]);
    let r = json_out(&o);
    assert_eq!(r["updated"], json!(["git_log"]));
    assert_eq!(r["deleted"].as_array().map(Vec::len), Some(12));
}

/// Starts `toolsmith serve` on a free port with the registry `db` and no catalog; returns it
/// and the API's base URL.
fn start_serve(dir: &Path, db: &Path) -> (common::Serve, String) {
    let (server, base, _) = common::serve(db.to_str().expect("utf-8"), dir, &["--no-catalog"]);
    (server, base)
}

fn http(method: &str, url: &str, body: Option<&Value>, if_match: Option<u64>) -> (u16, Value) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut b = ureq::http::Request::builder()
        .method(method)
        .uri(url)
        .header("content-type", "application/json");
    if let Some(token) = common::local_token(url) {
        b = b.header("authorization", format!("Bearer {token}"));
    }
    if let Some(v) = if_match {
        b = b.header("if-match", v.to_string());
    }
    let body = body.map(Value::to_string).unwrap_or_default();
    match agent.run(b.body(body.into_bytes()).expect("request")) {
        Ok(mut r) => (
            r.status().as_u16(),
            serde_json::from_str(&r.body_mut().read_to_string().unwrap_or_default())
                .unwrap_or(Value::Null),
        ),
        Err(_) => (0, Value::Null),
    }
}

#[test]
fn kill_9_during_a_burst_of_writes_loses_no_acknowledged_version() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("reg.db");
    let (mut server, base) = start_serve(dir.path(), &db);
    let def = |n: u64| json!({"name": "counter", "description": format!("edit {n}"), "command": ["true"]});
    assert_eq!(
        http("POST", &format!("{base}/tools"), Some(&def(1)), None).0,
        201
    );
    // Writers edit as fast as they can; the server is killed mid-burst.
    let acked = std::sync::Arc::new(std::sync::Mutex::new(Vec::<(u64, String)>::new()));
    let writer = {
        let (acked, base) = (acked.clone(), base.clone());
        std::thread::spawn(move || {
            let mut version = 1;
            loop {
                let (status, v) = http(
                    "PUT",
                    &format!("{base}/tools/counter"),
                    Some(&def(version + 1)),
                    Some(version),
                );
                if status != 200 {
                    return;
                }
                version = v["version"].as_u64().expect("version");
                acked.lock().expect("lock").push((
                    version,
                    v["definition"]["description"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                ));
            }
        })
    };
    while acked.lock().expect("lock").len() < 150 {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    server.0.kill().expect("kill -9");
    server.0.wait().expect("reaped");
    writer.join().expect("writer");
    let acked = acked.lock().expect("lock").clone();
    assert!(acked.len() >= 150);
    // Restart on the same file: every acknowledged version is there, as acknowledged.
    let (mut server, base) = start_serve(dir.path(), &db);
    let (_, history) = http("GET", &format!("{base}/tools/counter/versions"), None, None);
    let versions: Vec<u64> = history["versions"]
        .as_array()
        .expect("list")
        .iter()
        .map(|v| v["version"].as_u64().unwrap_or(0))
        .collect();
    for (version, description) in &acked {
        assert!(
            versions.contains(version),
            "acknowledged version {version} lost"
        );
        let (_, v) = http(
            "GET",
            &format!("{base}/tools/counter/versions/{version}"),
            None,
            None,
        );
        assert_eq!(
            v["definition"]["description"].as_str(),
            Some(description.as_str())
        );
    }
    let expected: Vec<u64> = (1..=*versions.last().expect("some")).collect();
    assert_eq!(
        versions, expected,
        "no gap and no duplicate version numbers"
    );
    server.0.kill().expect("stop");
    server.0.wait().expect("reaped");
}

#[test]
fn dry_run_of_a_disabled_tool_answers_disabled() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("c.yaml");
    std::fs::write(
        &file,
        "tools:\n  - {name: off, description: d, command: [echo], enabled: false}\n",
    )
    .expect("write");
    let f = file.to_str().expect("utf-8");
    for dry in [true, false] {
        let mut args = vec!["call", "off", "-c", f, "--json"];
        if dry {
            args.push("--dry-run");
        }
        let o = toolsmith(&args);
        assert_eq!(o.status.code(), Some(1), "dry run {dry}");
        assert_eq!(json_out(&o)["error"]["kind"], "disabled", "dry run {dry}");
    }
}

#[test]
fn mcp_takes_dash_c_like_every_command() {
    // With stdin closed the server starts, loads the catalog, and stops at the end of its
    // input, before any client said hello.
    let o = Command::new(env!("CARGO_BIN_EXE_toolsmith"))
        .args(["mcp", "-c", "examples/catalog.yaml", "--no-cgroups"])
        .current_dir(repo())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("runs");
    assert!(
        !stderr(&o).contains("unexpected argument"),
        "{}",
        stderr(&o)
    );
    assert!(
        stderr(&o).contains("starting MCP on stdio: connection closed"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_closed_output_pipe_ends_quietly() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("many.yaml");
    let mut text = String::from("tools:\n");
    for i in 0..5000 {
        text.push_str(&format!("  - {{name: tool_{i:05}, description: A tool with a long enough description to fill the pipe., command: [true]}}\n"));
    }
    std::fs::write(&file, text).expect("write");
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolsmith"))
        .args(["list", "-c", file.to_str().expect("utf-8")])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("a line");
    // The reader is gone, as when `head -1` exits.
    let o = child.wait_with_output().expect("wait");
    assert!(!first.is_empty());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
}

#[test]
fn secrets_stay_out_of_errors_and_dry_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("c.yaml");
    std::fs::write(
        &file,
        "tools:\n  - name: s\n    description: d\n    script: {source: \"print('{}')\"}\n    config_schema: [{name: key, secret: true, max_length: 100}]\n    config: {key: \"${TS_TEST_SECRET}\"}\n",
    )
    .expect("write");
    let f = file.to_str().expect("utf-8");
    let run = |secret: &str, args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_toolsmith"))
            .args(args)
            .env("TS_TEST_SECRET", secret)
            .current_dir(repo())
            .output()
            .expect("runs")
    };
    let o = run(
        "short-SECRET",
        &["call", "s", "-c", f, "--dry-run", "--json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stdout(&o).contains("SECRET"), "{}", stdout(&o));
    assert_eq!(
        json_out(&o)["data"]["stdin"],
        "{\"config\":{\"key\":\"***\"}}"
    );
    let long = format!("long-SECRET-{}", "x".repeat(200));
    let o = run(&long, &["check", f]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("config.key"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("SECRET"), "{}", stderr(&o));
}

#[test]
fn a_parameter_cannot_set_a_variable_the_operator_sets() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("c.yaml");
    std::fs::write(
        &file,
        "tools:\n  - name: s\n    description: d\n    command: [env]\n    env: {MODE: safe}\n    config_schema: [{name: key, secret: true, env_name: API_KEY}]\n    config: {key: k}\n    parameters:\n      - {name: k, inject_as: env, env_name: API_KEY}\n      - {name: mode, inject_as: env}\n",
    )
    .expect("write");
    let o = toolsmith(&["check", file.to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("tools[0].parameters[0].env_name: environment variable \"API_KEY\" is already set by the secret config field \"key\""), "{err}");
    assert!(err.contains("tools[0].parameters[1].env_name: environment variable \"MODE\" is already set by the tool's `env`"), "{err}");
}

#[test]
fn example_tools_stay_inside_the_workspace() {
    let ws = tempfile::tempdir().expect("tempdir");
    std::fs::write(ws.path().join("notes.txt"), "root of the matter\n").expect("write");
    std::os::unix::fs::symlink("/etc", ws.path().join("etc")).expect("symlink");
    let w = ws.path().to_str().expect("utf-8");
    let search = |path: &str| {
        toolsmith(&[
            "call",
            "search_text",
            "--workspace",
            w,
            "--json",
            "-a",
            "pattern=root",
            "-a",
            &format!("path={path}"),
        ])
    };
    for (path, rule) in [
        ("/etc/passwd", "rule: no absolute paths"),
        ("../../etc/passwd", "rule: no parent references"),
        ("etc/passwd", "rule: symlinks may not leave the workspace"),
        ("etc", "rule: symlinks may not leave the workspace"),
    ] {
        let o = search(path);
        assert_eq!(o.status.code(), Some(1), "{path}");
        let r = json_out(&o);
        assert_eq!(r["error"]["kind"], "invalid_arguments", "{path}: {r}");
        assert!(
            r["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .contains(rule),
            "{path}: {r}"
        );
        assert!(
            !stdout(&o).contains("root:x:0"),
            "{path} read the host's files"
        );
    }
    let o = search("notes.txt");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("root of the matter"));
    let o = toolsmith(&[
        "call",
        "remove_files",
        "--workspace",
        w,
        "--yes",
        "--json",
        "--args",
        "{\"paths\": [\"notes.txt\", \"/etc/hostname\"]}",
    ]);
    assert_eq!(json_out(&o)["error"]["details"][0]["pointer"], "/paths/1");
    assert!(ws.path().join("notes.txt").exists(), "nothing ran");
}

/// The web UI's unit tests load every example tool into the editor and back
/// (`ui/src/fixtures/examples.json`: each tool's definition and JSON Schema as the server
/// gives them). This keeps that file equal to what the catalog says now;
/// `UPDATE_EXPECT=1 cargo test -p toolsmith --test cli` rewrites it.
#[test]
fn the_ui_fixture_matches_the_example_catalog() {
    let list = json_out(&toolsmith(&["list", "--json"]));
    let tools: Vec<Value> = list
        .as_array()
        .expect("list")
        .iter()
        .map(|t| {
            let mut shown = json_out(&toolsmith(&[
                "show",
                t["name"].as_str().expect("name"),
                "--json",
            ]));
            // What this machine's kernel enforces is no part of the definition.
            shown.as_object_mut().map(|m| m.remove("sandbox"));
            shown
        })
        .collect();
    let fresh = format!("{}\n", serde_json::to_string_pretty(&tools).expect("json"));
    let path = repo().join("ui/src/fixtures/examples.json");
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, &fresh).expect("write");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == fresh,
        "{} is stale: run UPDATE_EXPECT=1 cargo test -p toolsmith --test cli the_ui_fixture",
        path.display()
    );
}

/// The execution log is written in the background, in batches; a clean stop (SIGTERM) still
/// leaves every answered call in it.
#[test]
fn a_clean_stop_keeps_every_answered_call_in_the_log() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("registry.db").display().to_string();
    let catalog = repo().join("examples/catalog.yaml");
    let (server, rest, _) = common::serve(
        &db,
        dir.path(),
        &["--catalog", catalog.to_str().expect("utf-8")],
    );
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    for i in 0..200 {
        let body = json!({"arguments": {"text": format!("line {i}")}}).to_string();
        let r = agent
            .post(format!("{rest}/tools/count_lines/call"))
            .header("content-type", "application/json")
            .header("authorization", common::bearer(&rest))
            .send(body)
            .expect("call");
        assert_eq!(r.status().as_u16(), 200);
    }
    let pid = server.0.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill")
            .success()
    );
    let mut server = server;
    let status = server.0.wait().expect("wait");
    assert!(status.success(), "{status:?}");
    let o = toolsmith(&["runs", "--db", &db, "--limit", "1000", "--json"]);
    let runs = json_out(&o);
    assert_eq!(
        runs.as_array().map(Vec::len),
        Some(200),
        "every answered call is in the log"
    );
}

#[test]
fn a_change_by_another_process_reaches_calls_through_a_running_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("registry.db").display().to_string();
    let catalog = repo().join("examples/catalog.yaml");
    let (_server, rest, _) = common::serve(
        &db,
        dir.path(),
        &["--catalog", catalog.to_str().expect("utf-8")],
    );
    let call = || {
        http(
            "POST",
            &format!("{rest}/tools/count_lines/call"),
            Some(&json!({"arguments": {"text": "a\nb\n"}})),
            None,
        )
        .1
    };
    // Called once, so the server holds the tool.
    assert_eq!(call()["success"], true);
    // Disabled by the CLI on the same registry file: the running server follows.
    let o = toolsmith(&["disable", "count_lines", "--db", &db]);
    assert!(o.status.success(), "{}", stderr(&o));
    let started = std::time::Instant::now();
    let kind = loop {
        let r = call();
        if r["success"] == false || started.elapsed() > std::time::Duration::from_secs(5) {
            break r["error"]["kind"].clone();
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(
        kind, "disabled",
        "the server saw the change within its polling interval"
    );
    // And enabled again.
    let o = toolsmith(&["enable", "count_lines", "--db", &db]);
    assert!(o.status.success(), "{}", stderr(&o));
    let started = std::time::Instant::now();
    while call()["success"] != true {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "enabled again"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The zygotes (warm Python runtimes) `parent` has started, by their command line.
fn zygotes_of(parent: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let status = std::fs::read_to_string(entry.path().join("status")).unwrap_or_default();
        let ppid = status
            .lines()
            .find_map(|l| l.strip_prefix("PPid:"))
            .and_then(|v| v.trim().parse::<u32>().ok());
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if ppid == Some(parent) && String::from_utf8_lossy(&cmdline).contains("toolsmith-zygote") {
            out.push(pid);
        }
    }
    out
}

fn wait_for_zygote(parent: u32) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    while std::time::Instant::now() < deadline {
        if !zygotes_of(parent).is_empty() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    false
}

#[test]
fn servers_of_a_registry_alone_start_its_python_tools_warm_runtime_before_any_call() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("reg.db");
    let db_s = db.to_str().expect("utf-8");
    let catalog = repo().join("examples/catalog.yaml");
    let run = |args: &[&str]| {
        let o = toolsmith_in(dir.path(), args, &[("TOOLSMITH_DB", db_s)]);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    };
    run(&["import", catalog.to_str().expect("utf-8")]);

    // With its Python tools disabled, a server starts no runtime for them.
    run(&["disable", "word_stats"]);
    run(&["disable", "convert_temperature"]);
    let (server, rest, _) = common::serve(db_s, dir.path(), &["--no-catalog"]);
    let (status, listed) = http("GET", &format!("{rest}/tools?limit=100"), None, None);
    assert_eq!(status, 200, "{listed}");
    assert!(listed.to_string().contains("read_file"), "{listed}");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert_eq!(zygotes_of(server.0.id()), Vec::<u32>::new());
    drop(server);

    // Enabled, `serve` and `mcp` on the registry (no catalog) each start one at once.
    run(&["enable", "word_stats"]);
    run(&["enable", "convert_temperature"]);
    let (server, _, _) = common::serve(db_s, dir.path(), &["--no-catalog"]);
    assert!(wait_for_zygote(server.0.id()), "serve started no zygote");
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(
        zygotes_of(server.0.id()).len(),
        1,
        "one per interpreter and sandbox base: both tools run on python3 under the default policy"
    );
    drop(server);

    let mcp = Command::new(env!("CARGO_BIN_EXE_toolsmith"))
        .args(["mcp", "--no-cgroups", "--db", db_s, "--workspace"])
        .arg(dir.path())
        .current_dir(dir.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn mcp");
    let mcp = common::Serve(mcp);
    assert!(wait_for_zygote(mcp.0.id()), "mcp started no zygote");
}

/// Finding 2 of the second hardening round: the gateway is not dumpable, so a tool it runs
/// as the same (non-root) user cannot read its environment — where tokens and API keys are.
/// Run as `nobody` when the tests run as root (root keeps CAP_SYS_PTRACE; see docs/security.md).
#[test]
fn a_tool_cannot_read_the_gateways_environment() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let file = dir.path().join("c.yaml");
    std::fs::write(
        &file,
        "tools:\n  - {name: peek, description: d, command: [sh, -c, 'tr \"\\0\" \"\\n\" < /proc/$PPID/environ | grep TS_GATEWAY_SECRET || echo DENIED']}\n",
    )
    .expect("write");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let root = std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"));
    let mut cmd = if root {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_toolsmith"));
        c
    } else {
        Command::new(env!("CARGO_BIN_EXE_toolsmith"))
    };
    let o = cmd
        .args(["call", "peek", "--no-cgroups", "--json", "-c"])
        .arg(&file)
        .current_dir(dir.path())
        .env("HOME", dir.path())
        .env("TS_GATEWAY_SECRET", "hunter22-gateway")
        .output()
        .expect("setpriv (util-linux) runs the test as nobody");
    let out = json_out(&o);
    assert_eq!(out["success"], true, "{out}");
    assert_eq!(out["data"]["stdout"], "DENIED\n", "{out}");
    assert!(!out.to_string().contains("hunter22"), "{out}");
}

/// A `tools/call` with its arguments as JSON text (a host passing on a model's
/// double-encoded output) is read as REST reads it; a shape nothing can read is -32602
/// naming the field. Over stdio and over HTTP.
#[test]
fn mcp_reads_arguments_sent_as_json_text() {
    use std::io::{BufRead, BufReader, Write};
    let calls = [
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "count_lines", "arguments": "{\"text\": \"a\\nb\\n\", \"lines_only\": \"true\"}"}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"arguments": {}}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
            "params": {"name": "count_lines", "arguments": 5}}),
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
            "params": {"name": "count_lines", "arguments": "{text: oops"}}),
    ];
    let check = |answers: &std::collections::BTreeMap<u64, Value>| {
        let ok = &answers[&2]["result"];
        assert_eq!(ok["isError"], false, "{ok}");
        assert_eq!(
            ok["content"][0]["text"].as_str().map(str::trim),
            Some("2"),
            "{ok}"
        );
        assert_eq!(answers[&3]["error"]["code"], -32602, "{}", answers[&3]);
        assert!(
            answers[&3]["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("params.name"))
        );
        assert_eq!(answers[&4]["error"]["code"], -32602, "{}", answers[&4]);
        assert!(
            answers[&4]["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("params.arguments") && m.contains("a number"))
        );
        let bad = &answers[&5]["result"];
        assert_eq!(bad["isError"], true, "{bad}");
        assert!(
            bad["content"][0]["text"]
                .as_str()
                .is_some_and(|t| t.contains("not valid JSON")),
            "{bad}"
        );
    };

    // stdio
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolsmith"))
        .args(["mcp", "-c", "examples/catalog.yaml", "--no-cgroups"])
        .current_dir(repo())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("runs");
    let mut stdin = child.stdin.take().expect("stdin");
    let hello = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    for m in [&hello, &initialized].into_iter().chain(calls.iter()) {
        writeln!(stdin, "{m}").expect("write");
    }
    let mut answers = std::collections::BTreeMap::new();
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    while answers.len() < 5 {
        let line = lines.next().expect("an answer").expect("line");
        let v: Value = serde_json::from_str(&line).expect("json");
        answers.insert(v["id"].as_u64().expect("id"), v);
    }
    drop(stdin);
    let _ = child.wait();
    check(&answers);

    // HTTP
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("registry.db");
    let catalog = repo().join("examples/catalog.yaml");
    let (_server, _, mcp) = common::serve(
        db.to_str().expect("utf-8"),
        dir.path(),
        &["--catalog", catalog.to_str().expect("utf-8")],
    );
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut answers = std::collections::BTreeMap::new();
    for m in &calls {
        let mut r = agent
            .post(&mcp)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .header("authorization", common::bearer(&mcp))
            .send(m.to_string())
            .expect("post");
        let v: Value =
            serde_json::from_str(&r.body_mut().read_to_string().expect("body")).expect("json");
        answers.insert(v["id"].as_u64().expect("id"), v);
    }
    answers.insert(1, Value::Null);
    check(&answers);
}

#[test]
fn a_held_openapi_entry_keeps_the_served_version_until_its_change_is_approved() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec =
        std::fs::read_to_string(repo().join("examples/more/petstore.openapi.yaml")).expect("spec");
    std::fs::write(dir.path().join("pets.yaml"), &spec).expect("spec copy");
    std::fs::write(
        dir.path().join("catalog.yaml"),
        "openapi:\n  - {spec: pets.yaml, prefix: pet_, on_change: hold}\n",
    )
    .expect("catalog");
    let db = dir.path().join("registry.db").display().to_string();
    let run = |args: &[&str]| toolsmith_in(dir.path(), args, &[]);
    let o = run(&["import", "catalog.yaml", "--db", &db]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("3 created"), "{}", stdout(&o));

    // The document changes a description: the import holds it.
    std::fs::write(
        dir.path().join("pets.yaml"),
        spec.replace("summary: List pets", "summary: List every pet"),
    )
    .expect("edit");
    let o = run(&["import", "catalog.yaml", "--db", &db]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("held 1 change(s) of openapi:pet until approved: pet_listPets"),
        "{out}"
    );
    let versions = |name: &str| {
        json_out(&run(&["history", name, "--db", &db, "--json"]))
            .as_array()
            .map_or(0, Vec::len)
    };
    assert_eq!(versions("pet_listPets"), 1, "a held change was saved");

    let changes = json_out(&run(&[
        "servers",
        "changes",
        "openapi:pet",
        "--db",
        &db,
        "--json",
    ]));
    let diff = changes[0]["diff"].to_string();
    assert!(diff.contains("List every pet"), "{changes}");
    let o = run(&["servers", "approve", "openapi:pet", "--db", &db]);
    assert!(
        o.status.success() && stdout(&o).contains("approved 1 change(s): pet_listPets"),
        "{}{}",
        stdout(&o),
        stderr(&o)
    );
    assert_eq!(versions("pet_listPets"), 2);
    let history = json_out(&run(&["history", "pet_listPets", "--db", &db, "--json"]));
    assert!(
        history[1].to_string().contains("List every pet"),
        "{history}"
    );
    assert!(
        !history[0].to_string().contains("List every pet"),
        "{history}"
    );
    // Nothing waits any more; the next import of the same document changes nothing.
    let o = run(&["import", "catalog.yaml", "--db", &db]);
    assert!(
        stdout(&o).contains("0 created, 0 updated, 3 unchanged"),
        "{}",
        stdout(&o)
    );
    assert!(!stdout(&o).contains("held"), "{}", stdout(&o));
}

/// Runs the binary on a pseudo-terminal (through Python's `pty`): what a person at a terminal
/// would receive, stdout and stderr together.
fn on_a_terminal(args: &[&str]) -> Vec<u8> {
    let script = r#"
import os, pty, subprocess, sys
main, side = pty.openpty()
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=side, stderr=side)
os.close(side)
seen = b""
while True:
    try:
        chunk = os.read(main, 65536)
    except OSError:
        break
    if not chunk:
        break
    seen += chunk
p.wait()
sys.stdout.buffer.write(seen)
"#;
    let o = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_toolsmith"))
        .args(args)
        .current_dir(repo())
        .output()
        .expect("python3 runs");
    assert!(o.status.success(), "{}", stderr(&o));
    o.stdout
}

#[test]
fn text_from_a_tool_cannot_drive_the_operators_terminal() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("evil.yaml");
    std::fs::write(
        &file,
        "tools:\n  - name: evil\n    description: prints escape sequences\n    command: [printf, '\\033]0;PWNED-TITLE\\007\\033]52;c;cHduZWQ=\\007\\033[31mRED\\033[0m\\n']\n",
    )
    .expect("write");
    let path = file.to_str().expect("utf-8");
    let seen = on_a_terminal(&["call", "evil", "-c", path]);
    let text = String::from_utf8_lossy(&seen);
    assert!(
        !seen.contains(&0x1b) && !seen.contains(&0x07),
        "raw controls reached the terminal: {text:?}"
    );
    assert!(
        text.contains(r"\x1b]52;c;cHduZWQ=\x07") && text.contains(r"\x1b]0;PWNED-TITLE"),
        "{text:?}"
    );
    // Into a pipe the bytes go as they are (a redirect keeps the tool's exact output).
    let o = toolsmith(&["call", "evil", "-c", path]);
    assert!(
        o.stdout.windows(5).any(|w| w == b"\x1b]52;"),
        "{}",
        stdout(&o)
    );
}

/// A catalog's OpenAPI entry, held or not, never takes over a tool another source made: an
/// operation named like a command tool of another catalog is skipped with a line saying so,
/// and that tool stays a command tool.
#[test]
fn a_catalogs_openapi_entry_never_takes_over_another_catalogs_tool() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec =
        std::fs::read_to_string(repo().join("examples/more/petstore.openapi.yaml")).expect("spec");
    std::fs::write(dir.path().join("pets.yaml"), &spec).expect("spec copy");
    std::fs::write(
        dir.path().join("local.yaml"),
        "tools:\n  - {name: pet_listPets, description: mine, command: [echo, local]}\n",
    )
    .expect("catalog");
    let db = dir.path().join("registry.db").display().to_string();
    let run = |args: &[&str]| toolsmith_in(dir.path(), args, &[]);
    let o = run(&["import", "local.yaml", "--db", &db]);
    assert!(o.status.success(), "{}", stderr(&o));
    for hold in ["", ", on_change: hold"] {
        std::fs::write(
            dir.path().join("docs.yaml"),
            format!("openapi:\n  - {{spec: pets.yaml, prefix: pet_{hold}}}\n"),
        )
        .expect("catalog");
        let o = run(&["import", "docs.yaml", "--db", &db]);
        assert!(o.status.success(), "{}", stderr(&o));
        let said = format!("{}{}", stdout(&o), stderr(&o));
        assert!(
            said.contains("openapi:pet: skipped pet_listPets: `pet_listPets` is a command tool"),
            "{said}"
        );
        let shown = json_out(&run(&["history", "pet_listPets", "--db", &db, "--json"]));
        let versions = shown.as_array().expect("versions");
        assert_eq!(versions.len(), 1, "{shown}");
        assert!(versions[0]["definition"]["command"].is_array(), "{shown}");
    }
}

/// `toolsmith check` warns of a tool whose program starts an interpreter (its `#!` line, or
/// what `#!/usr/bin/env NAME` finds — a pyenv shim under `$HOME`) that its sandbox cannot
/// read, naming the key to change; the program's own installation is readable, and a
/// policy that reads the interpreter, or no sandbox, is not warned about.
#[test]
fn check_warns_of_an_interpreter_the_sandbox_cannot_run() {
    use std::os::unix::fs::PermissionsExt;
    let here = tempfile::tempdir().expect("tempdir");
    let tools = tempfile::tempdir().expect("tempdir");
    let pythons = tempfile::tempdir().expect("tempdir");
    let executable = |path: &Path, text: &str| {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
        std::fs::write(path, text).expect("write");
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    };
    let interpreter = pythons.path().join("shims/mypython");
    executable(&interpreter, "#!/bin/sh\nexec sh \"$@\"\n");
    let direct = tools.path().join("bin/direct");
    executable(&direct, &format!("#!{}\necho hi\n", interpreter.display()));
    let via_env = tools.path().join("bin/via_env");
    executable(&via_env, "#!/usr/bin/env mypython\necho hi\n");
    let plain = tools.path().join("bin/plain");
    executable(&plain, "#!/bin/sh\necho hi\n");
    let root = pythons.path().display().to_string();
    let (d, e, p) = (direct.display(), via_env.display(), plain.display());
    std::fs::write(
        here.path().join("catalog.yaml"),
        format!(
            "tools:\n  - {{name: direct, description: d, command: [{d}]}}\n  - {{name: via_env, description: d, command: [{e}]}}\n  - {{name: plain, description: d, command: [{p}]}}\n  - {{name: let_in, description: d, command: [{d}], sandbox: {{preset: workspace, filesystem: {{read: [{root}]}}}}}}\n  - {{name: unsandboxed, description: d, command: [{d}], sandbox: none}}\n"
        ),
    )
    .expect("catalog");
    let path = format!(
        "{}:{}",
        interpreter.parent().expect("dir").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = toolsmith_in(
        here.path(),
        &["check", "catalog.yaml", "--json"],
        &[("PATH", &path)],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let warnings = json_out(&o)["warnings"].clone();
    let i = interpreter.display();
    let said = |tool: &str, program: &str| {
        format!(
            "tool `{tool}`: {program} starts {i} (its #! line), and the sandbox (policy workspace) does not let this tool run {i}: to allow it, add {root} (where it is installed) to `sandbox.filesystem.read`"
        )
    };
    assert_eq!(
        warnings,
        json!([
            said("direct", &d.to_string()),
            said("via_env", &e.to_string())
        ]),
        "{warnings}"
    );
    // Called anyway, the refusal says the same instead of a bare "Permission denied".
    let o = toolsmith_in(
        here.path(),
        &["call", "direct", "-c", "catalog.yaml"],
        &[("PATH", &path)],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!(
            "Permission denied (os error 13) — {d} starts {i} (its #! line)"
        )),
        "{}",
        stderr(&o)
    );
    let o = toolsmith_in(
        here.path(),
        &["call", "let_in", "-c", "catalog.yaml"],
        &[("PATH", &path)],
    );
    assert_eq!(stdout(&o), "hi\n", "{}", stderr(&o));
}
