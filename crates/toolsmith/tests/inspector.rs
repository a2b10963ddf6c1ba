//! MCP Inspector — the official debugging client, npm `@modelcontextprotocol/inspector`
//! (pinned in `tests/upstream/package.json`) — against `serve` fronting
//! `@modelcontextprotocol/server-everything` (stdio): its one-shot CLI (`mcp-inspector --cli`)
//! lists and reads resources and templates (text and blob), lists and gets prompts, sets the
//! log level and calls a tool; its connection CLI (`mcpdo`, a private daemon) completes a
//! prompt argument and reads and gets again in both protocol eras (`--era legacy`, the
//! 2025-11-25 handshake; `--era modern`, 2026-07-28).
//!
//! Needs Node and the npm packages of `tests/upstream` (`npm ci` there): `#[ignore]`d so that
//! a plain `cargo test` lists it; `.ci/run` installs them and runs it with
//! `--include-ignored`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

fn upstream_bin(name: &str) -> PathBuf {
    let path = repo()
        .join("crates/toolsmith/tests/upstream/node_modules/.bin")
        .join(name);
    assert!(
        path.exists(),
        "{} is missing: run `npm ci` in crates/toolsmith/tests/upstream (.ci/run does)",
        path.display()
    );
    path
}

/// One Inspector command with its state kept under `home`; its stdout, which must be JSON.
fn inspector(home: &Path, program: &str, args: &[&str]) -> Value {
    let out = Command::new(upstream_bin(program))
        .args(args)
        .env("HOME", home)
        .env("MCP_CATALOG_PATH", home.join("catalog.json"))
        .output()
        .unwrap_or_else(|e| panic!("run {program}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{program} {args:?} failed ({}): {stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("{program} {args:?} did not print JSON ({e}): {stdout}"))
}

fn strings<'a>(v: &'a Value, list: &str, key: &str) -> Vec<&'a str> {
    v[list]
        .as_array()
        .unwrap_or_else(|| panic!("no {list} in {v}"))
        .iter()
        .filter_map(|i| i[key].as_str())
        .collect()
}

/// `mcpdo` with a private daemon of its own (its folder and token under `home`).
struct Mcpdo {
    home: PathBuf,
    daemon_dir: String,
    daemon_token: String,
}

impl Mcpdo {
    fn start(home: &Path) -> Self {
        let out = Command::new(upstream_bin("mcpdo"))
            .arg("private")
            .env("HOME", home)
            .output()
            .expect("run mcpdo private");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let export = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("export {name}=")))
                .map(|v| v.trim_matches('\'').to_owned())
                .unwrap_or_else(|| panic!("mcpdo private printed no {name}: {text}"))
        };
        Self {
            home: home.to_owned(),
            daemon_dir: export("MCP_INSPECTOR_DAEMON_DIR"),
            daemon_token: export("MCP_INSPECTOR_DAEMON_TOKEN"),
        }
    }

    fn run(&self, args: &[&str]) -> std::process::Output {
        Command::new(upstream_bin("mcpdo"))
            .args(args)
            .env("HOME", &self.home)
            .env("MCP_CATALOG_PATH", self.home.join("catalog.json"))
            .env("MCP_INSPECTOR_DAEMON_DIR", &self.daemon_dir)
            .env("MCP_INSPECTOR_DAEMON_TOKEN", &self.daemon_token)
            .output()
            .expect("run mcpdo")
    }

    /// A command on connection `conn`, answered in JSON.
    fn json(&self, conn: &str, args: &[&str]) -> Value {
        let out = self.run(&[&["--format", "json", "--connection", conn], args].concat());
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "mcpdo {args:?} failed: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("mcpdo {args:?} did not print JSON ({e}): {stdout}"))
    }
}

impl Drop for Mcpdo {
    fn drop(&mut self) {
        let _ = self.run(&["daemon", "stop"]);
    }
}

#[test]
#[ignore = "needs Node and the npm packages of crates/toolsmith/tests/upstream (npm ci there)"]
fn mcp_inspector_reads_resources_prompts_and_completions_through_serve() {
    let everything = repo().join(
        "crates/toolsmith/tests/upstream/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    );
    assert!(
        everything.exists(),
        "run `npm ci` in crates/toolsmith/tests/upstream"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let catalog = dir.path().join("servers.yaml");
    std::fs::write(
        &catalog,
        format!(
            "mcp_servers:\n  - name: everything\n    command: [node, {}, stdio]\n",
            everything.display()
        ),
    )
    .expect("write catalog");
    let db = dir.path().join("registry.db").display().to_string();
    let catalog = catalog.display().to_string();
    let (_serve, rest, mcp) = serve(&db, dir.path(), &["--catalog", &catalog]);
    let token = local_token(&rest).expect("the local admin token");
    let bearer = format!("Authorization: Bearer {token}");
    let cli = |args: &[&str]| {
        inspector(
            &home,
            "mcp-inspector",
            &[&["--cli", mcp.as_str(), "--header", bearer.as_str()], args].concat(),
        )
    };

    // The one-shot CLI: everything's resources, as it lists them, once the server is up.
    let started = Instant::now();
    let listed = loop {
        let v = cli(&["--method", "resources/list"]);
        if !strings(&v, "resources", "uri").is_empty() {
            break v;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no resources within 60 s: {v}"
        );
        std::thread::sleep(Duration::from_millis(250));
    };
    assert!(
        strings(&listed, "resources", "uri")
            .iter()
            .any(|u| u.starts_with("demo://resource/static/document/")),
        "{listed}"
    );
    let templates = cli(&["--method", "resources/templates/list"]);
    assert!(
        strings(&templates, "resourceTemplates", "uriTemplate")
            .contains(&"demo://resource/dynamic/blob/{resourceId}"),
        "{templates}"
    );
    let text = cli(&[
        "--method",
        "resources/read",
        "--uri",
        "demo://resource/dynamic/text/7",
    ]);
    assert!(
        text["contents"][0]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("Resource 7:")),
        "{text}"
    );
    let blob = cli(&[
        "--method",
        "resources/read",
        "--uri",
        "demo://resource/dynamic/blob/3",
    ]);
    assert!(blob["contents"][0]["blob"].is_string(), "{blob}");
    let prompts = cli(&["--method", "prompts/list"]);
    assert!(
        strings(&prompts, "prompts", "name").contains(&"everything__args-prompt"),
        "{prompts}"
    );
    let got = cli(&[
        "--method",
        "prompts/get",
        "--prompt-name",
        "everything__args-prompt",
        "--prompt-args",
        "city=Oslo",
        "state=Viken",
    ]);
    assert_eq!(
        got["messages"][0]["content"]["text"], "What's weather in Oslo, Viken?",
        "{got}"
    );
    let level = cli(&["--method", "logging/setLevel", "--log-level", "debug"]);
    assert!(level.as_object().is_some_and(|m| m.is_empty()), "{level}");
    let echoed = cli(&[
        "--method",
        "tools/call",
        "--tool-name",
        "everything__echo",
        "--tool-arg",
        "message=hi",
    ]);
    assert_eq!(echoed["content"][0]["text"], "Echo: hi", "{echoed}");

    // The connection CLI in each era: completion, a read and a prompt on one connection.
    let mcpdo = Mcpdo::start(&home);
    for era in ["legacy", "modern"] {
        let connect = mcpdo.run(&["connect", &mcp, "--header", &bearer, "--era", era]);
        let said = String::from_utf8_lossy(&connect.stdout);
        assert!(
            connect.status.success() && said.contains(&format!("Era: {era}")),
            "connect ({era}): {said}\n{}",
            String::from_utf8_lossy(&connect.stderr)
        );
        let conn = format!("@{mcp}");
        let completed = mcpdo.json(
            &conn,
            &[
                "prompts/complete",
                "--complete-ref-type",
                "ref/prompt",
                "--complete-ref",
                "everything__completable-prompt",
                "--complete-arg-name",
                "department",
                "--complete-arg-value",
                "E",
            ],
        );
        assert_eq!(
            completed["values"],
            serde_json::json!(["Engineering"]),
            "{era}: {completed}"
        );
        let read = mcpdo.json(&conn, &["resources/read", "demo://resource/dynamic/text/9"]);
        assert!(
            read["contents"][0]["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("Resource 9:")),
            "{era}: {read}"
        );
        let simple = mcpdo.json(&conn, &["prompts/get", "everything__simple-prompt"]);
        assert!(
            simple["messages"][0]["content"]["text"].is_string(),
            "{era}: {simple}"
        );
        let gone = mcpdo.run(&["disconnect", &conn]);
        assert!(gone.status.success(), "disconnect ({era})");
    }
}
