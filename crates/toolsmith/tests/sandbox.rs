//! The escape corpus (SPEC §13): a real `toolsmith serve`, with a registry, a key file, a
//! tokens file, a transcript and a sessions ledger, whose tools try to reach them — and the
//! gateway, other calls, the network — through every kind of process toolsmith starts: a
//! command tool, a cold and a warm Python script, a shell session, a stdio upstream MCP
//! server and a code-mode program (`POST /v1/code/run`). Every attempt must fail; a tool with `sandbox: none` shows the same attempts
//! succeed, so the harness can tell. Run as root (capabilities dropped) and, where the test
//! runs as root, again as `nobody` (setpriv), where a setuid binary is tried too.

mod common;

use std::io::{BufRead, BufReader};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// What every door tries (under its default policy).
const FILES_AND_PROCESSES: &[&str] = &[
    "read_registry",
    "read_key",
    "read_tokens",
    "read_transcript",
    "list_data",
    "write_data",
    "read_ledger",
    "other_call_folder",
    "proc_environ",
    "proc_fd",
    "proc_mem",
    "proc_root",
    "proc_self_root",
    "write_bashrc",
    "write_tmp",
    "symlink_in_workspace",
    "make_hardlink",
    "dotdot_after_cd",
    "setuid_binary",
    "signal_gateway",
    "signal_other_call",
    "ptrace_gateway",
    "io_uring",
    "abstract_socket",
    "unix_path_socket",
    "keyring",
    "user_namespace",
    "clone_namespace",
    "clone3_namespace",
    "gateway_cmdline_token",
    "gateway_api_admin",
];

/// What a door with `network: none` tries.
const NETWORK: &[&str] = &[
    "net_connect_loopback",
    "net_udp",
    "net_resolve",
    "unix_path_socket",
];

const NOBODY: u32 = 65534;

struct Gateway {
    child: Child,
    rest: String,
    token: String,
    base: PathBuf,
    /// Removed when the gateway goes, even when the test fails.
    _dir: tempfile::TempDir,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Gateway {
    fn request(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        common::request_as(
            method,
            &format!("{}{path}", self.rest),
            body,
            Some(&self.token),
        )
    }

    fn call(&self, tool: &str, arguments: Value) -> Value {
        let (status, v) = self.request(
            "POST",
            &format!("/tools/{tool}/call"),
            Some(json!({"arguments": arguments, "confirm": true})),
        );
        assert_eq!(status, 200, "{tool}: {v}");
        v
    }

    /// One attempt through one door: the attempt's own report.
    fn attempt(&self, door: &Door, name: &str) -> Value {
        let r = match door {
            Door::Session(id) => self.call(
                "session_exec",
                json!({"session_id": id, "command": format!("/usr/bin/python3 {}/ws/escape.py {name}", self.base.display()), "timeout_ms": 20000}),
            ),
            Door::Tool(tool) => self.call(tool, json!({"name": name})),
            // Code mode: the attempt as a program's own code (read-only, no network).
            Door::Code => {
                let code = format!(
                    "import sys\nsys.path.insert(0, {:?})\nimport escape\nescape.attempt({name:?})",
                    self.base.join("ws").display().to_string()
                );
                let (status, ran) =
                    self.request("POST", "/code/run", Some(json!({"code": code})));
                assert_eq!(status, 200, "run_code {name}: {ran}");
                let data = &ran["result"]["data"];
                assert!(data["error"].is_null(), "run_code {name}: {ran}");
                return data["value"].clone();
            }
        };
        assert_eq!(r["success"], true, "{door:?} {name}: {r}");
        let data = &r["data"];
        let text = data["stdout"]
            .as_str()
            .or_else(|| data["content"][0]["text"].as_str())
            .map(str::to_owned);
        match text {
            Some(t) => serde_json::from_str(t.trim())
                .unwrap_or_else(|e| panic!("{door:?} {name}: {e}: {t:?} ({r})")),
            None => data.clone(),
        }
    }
}

#[derive(Debug)]
enum Door {
    Tool(&'static str),
    Session(String),
    /// A program of code mode (`POST /v1/code/run`).
    Code,
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// A gateway in a fresh folder, run as `uid` (0 or nobody), with its catalog of doors, a
/// tokens file and a token on its command line.
fn gateway(uid: u32, env: &[(&str, &str)]) -> Gateway {
    gateway_with(uid, env, true)
}

/// [`gateway`]; without `tokens`, a gateway given none (asking for its local admin token).
fn gateway_with(uid: u32, env: &[(&str, &str)], tokens: bool) -> Gateway {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = dir.path().to_path_buf();
    std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let data = base.join("xdg/toolsmith");
    let ws = base.join("ws");
    for d in [
        &data.join("chats"),
        &ws,
        &base.join("home"),
        &base.join("tmp"),
    ] {
        std::fs::create_dir_all(d).expect("mkdir");
    }
    let token = format!("tok-{}-{}", std::process::id(), uid);
    write(
        &data.join("chats/c1.jsonl"),
        "{\"transcript\": \"private\"}\n",
    );
    write(&base.join("tokens"), &format!("tester:admin={token}\n"));
    write(&base.join("home/.bashrc"), "# the user's\n");
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sandbox");
    for f in ["escape.py", "upstream.py"] {
        std::fs::copy(here.join(f), ws.join(f)).expect("copy");
    }
    let registry = data.join("registry.db");
    std::os::unix::fs::symlink(&registry, ws.join("link-to-registry")).expect("symlink");
    let stub = format!(
        "import sys; sys.path.insert(0, {:?}); import escape; escape.main_stdin()",
        ws.display().to_string()
    );
    let arg = "parameters: [{name: name, type: string, inject_as: argument}]";
    let param = "parameters: [{name: name, type: string}]";
    let cmd = format!("command: [/usr/bin/python3, {}/escape.py]", ws.display());
    let port_tool = "{connect: [PORT]}";
    // A named Unix socket in a folder no sandboxed process may read.
    let sock_dir = base.join("sock");
    std::fs::create_dir_all(&sock_dir).expect("mkdir");
    let sock = sock_dir.join("u.sock");
    let unix_tool = format!("{{unix_sockets: [{}]}}", sock.display());
    let catalog = format!(
        "tools:
  - {{name: cmd, description: d, {cmd}, {arg}}}
  - {{name: cold, description: d, script: {{interpreter: /usr/bin/python3, warm: false, source: {stub:?}}}, {param}}}
  - {{name: warm, description: d, script: {{interpreter: /usr/bin/python3, warm: true, source: {stub:?}}}, {param}}}
  - {{name: cmd_nonet, description: d, sandbox: {{network: none}}, {cmd}, {arg}}}
  - {{name: cold_nonet, description: d, sandbox: {{network: none}}, script: {{interpreter: /usr/bin/python3, warm: false, source: {stub:?}}}, {param}}}
  - {{name: warm_nonet, description: d, sandbox: {{network: none}}, script: {{interpreter: /usr/bin/python3, warm: true, source: {stub:?}}}, {param}}}
  - {{name: cmd_port, description: d, sandbox: {{network: {port_tool}}}, {cmd}, {arg}}}
  - {{name: warm_port, description: d, sandbox: {{network: {port_tool}}}, script: {{interpreter: /usr/bin/python3, warm: true, source: {stub:?}}}, {param}}}
  - {{name: cmd_ro, description: d, sandbox: read-only, {cmd}, {arg}}}
  - {{name: warm_ro, description: d, sandbox: read-only, script: {{interpreter: /usr/bin/python3, warm: true, source: {stub:?}}}, {param}}}
  - {{name: cmd_required, description: d, sandbox: {{enforce: required}}, {cmd}, {arg}}}
  - {{name: cmd_none, description: d, sandbox: none, {cmd}, {arg}}}
  - {{name: cmd_unix, description: d, sandbox: {unix_tool}, {cmd}, {arg}}}
  - {{name: warm_unix, description: d, sandbox: {unix_tool}, script: {{interpreter: /usr/bin/python3, warm: true, source: {stub:?}}}, {param}}}
  - {{name: holder, description: d, command: [sh, -c, 'echo HOLDER > secret.txt; echo $$ > {ws}/holder.pid; sleep 60']}}
  - {{name: session_start, description: d, builtin: session_start}}
  - {{name: session_start_nonet, description: d, builtin: session_start, sandbox: {{network: none}}}}
  - {{name: session_exec, description: d, builtin: session_exec}}
mcp_servers:
  - {{name: up, command: [/usr/bin/python3, {ws}/upstream.py], working_dir: .}}
  - {{name: upnonet, command: [/usr/bin/python3, {ws}/upstream.py], working_dir: ., sandbox: {{network: none}}}}
",
        ws = ws.display()
    );
    // The allowed port is the gateway's own: known only once it listens, so it is picked
    // here and handed to `serve`.
    let port = free_port();
    write(
        &ws.join("catalog.yaml"),
        &catalog.replace("PORT", &port.to_string()),
    );
    let bin = base.join("toolsmith");
    // Where the unprivileged user can reach it (a link, else a copy).
    std::fs::hard_link(common::BIN, &bin)
        .or_else(|_| std::fs::copy(common::BIN, &bin).map(drop))
        .expect("the binary");
    if uid != 0 {
        chown_tree(&base, uid);
        // A root-only file and a setuid-root `cat` that could read it.
        write(&ws.join("root_only"), "ROOTONLY\n");
        std::os::unix::fs::chown(ws.join("root_only"), Some(0), Some(0)).expect("chown");
        std::fs::set_permissions(ws.join("root_only"), std::fs::Permissions::from_mode(0o600))
            .expect("chmod");
        std::fs::copy("/usr/bin/cat", ws.join("suidcat")).expect("copy cat");
        std::os::unix::fs::chown(ws.join("suidcat"), Some(0), Some(0)).expect("chown");
        std::fs::set_permissions(ws.join("suidcat"), std::fs::Permissions::from_mode(0o4755))
            .expect("chmod");
    }
    // Listening before the folder is handed to `uid`; anyone may connect (0777), so only the
    // sandbox stands between a tool and it.
    let unix_listener = std::os::unix::net::UnixListener::bind(&sock).expect("unix listener");
    std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    std::fs::set_permissions(&sock_dir, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    if uid != 0 {
        std::os::unix::fs::chown(&sock_dir, Some(uid), Some(uid)).expect("chown");
    }
    let cli_token = format!("CLITOKEN-{}-{uid}", std::process::id());
    let marker = format!("gateway-secret-{}", std::process::id());
    let mut command = if uid == 0 {
        Command::new(&bin)
    } else {
        let mut c = Command::new("setpriv");
        c.args([
            "--reuid",
            &uid.to_string(),
            "--regid",
            &uid.to_string(),
            "--clear-groups",
            "--",
        ])
        .arg(&bin);
        c
    };
    // As root, with per-call cgroups (the default): processes are spawned by the slots'
    // threads and their helpers, which keep whole confinements between calls; as nobody,
    // without (a helper per filter, Landlock per call).
    command
        .args(["serve", "--addr", &format!("127.0.0.1:{port}")])
        .args((uid != 0).then_some("--no-cgroups"))
        .arg("--db")
        .arg(&registry)
        .args(match tokens {
            true => vec![
                "--tokens-file".into(),
                base.join("tokens").display().to_string(),
                "--token".into(),
                format!("cli:admin={cli_token}"),
            ],
            false => Vec::new(),
        })
        .arg("--catalog")
        .arg(ws.join("catalog.yaml"))
        .arg("--workspace")
        .arg(&ws)
        .current_dir(&ws)
        .env("HOME", base.join("home"))
        .env("XDG_DATA_HOME", base.join("xdg"))
        .env("TMPDIR", base.join("tmp"))
        .env("TS_GATEWAY_SECRET", &marker)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("spawn serve");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let mut said = String::new();
    let mut rest = None;
    let mut token = token;
    loop {
        let line = lines
            .next()
            .unwrap_or_else(|| panic!("serve ended: {said}"))
            .expect("line");
        said.push_str(&line);
        said.push('\n');
        if let Some(after) = line.split("REST API on ").nth(1) {
            rest = Some(after.split_whitespace().next().expect("url").to_owned());
        }
        if let Some(ui) = line.split("web UI: ").nth(1) {
            if let Some((_, local)) = ui.trim().split_once("#token=") {
                token = local.to_owned();
            }
            break;
        }
    }
    let rest = rest.expect("serve said its REST address");
    assert_eq!(
        said.contains("given with --token"),
        tokens,
        "serve warns about a token on its command line: {said}"
    );
    // The corpus needs a kernel with Landlock (CI's has ABI 7): never passes without one.
    let forced_off = env
        .iter()
        .any(|(k, _)| *k == toolsmith_exec::sandbox::ABI_VARIABLE);
    assert!(
        said.contains("sandbox: Landlock ABI") || forced_off,
        "serve says what the sandbox is, and this kernel must have Landlock: {said}"
    );
    std::thread::spawn(move || lines.for_each(drop));
    let g = Gateway {
        child,
        rest,
        token,
        base: base.clone(),
        _dir: dir,
    };
    let other = std::net::TcpListener::bind("127.0.0.1:0").expect("listener");
    static GATEWAYS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let abstract_name = format!(
        "toolsmith-escape-{}-{uid}-{}",
        std::process::id(),
        GATEWAYS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    let abs = std::os::unix::net::UnixListener::bind_addr(
        &std::os::unix::net::SocketAddr::from_abstract_name(abstract_name.as_bytes())
            .expect("abstract"),
    )
    .expect("abstract listener");
    let paths = json!({
        "gateway_pid": g.child.id(),
        "gateway_marker": marker,
        "registry": registry,
        "key": data.join("secret.key"),
        "tokens": base.join("tokens"),
        "token_secret": g.token,
        "transcript": data.join("chats/c1.jsonl"),
        "data": data,
        "ledger": base.join(format!("tmp/toolsmith-sessions-{uid}")),
        "tmp": base.join("tmp"),
        "home": base.join("home"),
        "tmp_probe": format!("/tmp/toolsmith-escape-{}-{uid}", std::process::id()),
        "workspace": ws,
        "root_only": ws.join("root_only"),
        "abstract": abstract_name,
        "port": port,
        "other_port": other.local_addr().expect("addr").port(),
        "unix_socket": sock,
        "cli_token": cli_token,
    });
    write(&ws.join("paths.json"), &paths.to_string());
    if uid != 0 {
        std::os::unix::fs::chown(ws.join("paths.json"), Some(uid), Some(uid)).expect("chown");
    }
    // Both listeners live as long as the process (leaked on purpose: the test ends with it).
    std::mem::forget((other, abs, unix_listener));
    g
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port()
}

fn chown_tree(dir: &Path, uid: u32) {
    std::os::unix::fs::chown(dir, Some(uid), Some(uid)).expect("chown");
    for entry in std::fs::read_dir(dir).expect("read_dir").flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            chown_tree(&path, uid);
        } else if path.file_name().is_some_and(|n| n == "toolsmith") {
            // The binary (perhaps a link to the build's): only read and run.
        } else {
            std::os::unix::fs::lchown(&path, Some(uid), Some(uid)).expect("chown");
        }
    }
}

/// Runs the whole corpus against a gateway running as `uid`; returns how many attempts ran.
fn corpus(uid: u32) -> usize {
    let g = gateway(uid, &[]);
    // A concurrent call whose folder and process the others try to reach.
    let holder = {
        let (rest, token) = (g.rest.clone(), g.token.clone());
        std::thread::spawn(move || {
            let agent: ureq::Agent = ureq::Agent::config_builder()
                .http_status_as_error(false)
                .build()
                .into();
            let _ = agent
                .post(format!("{rest}/tools/holder/call"))
                .header("authorization", format!("Bearer {token}"))
                .header("content-type", "application/json")
                .send(json!({"arguments": {}, "confirm": true}).to_string());
        })
    };
    let ws = g.base.join("ws");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !ws.join("holder.pid").exists() || !upstreams_listed(&g) {
        assert!(
            Instant::now() < deadline,
            "the holder call and the upstreams started"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let session = g.call("session_start", json!({}));
    let session_id = session["data"]["session_id"]
        .as_str()
        .expect("session")
        .to_owned();
    assert_eq!(
        session["data"]["sandbox"]["filesystem"], "enforced",
        "{session}"
    );
    let nonet = g.call("session_start_nonet", json!({}));
    let nonet_id = nonet["data"]["session_id"]
        .as_str()
        .expect("session")
        .to_owned();
    assert!(
        g.base
            .join(format!("tmp/toolsmith-sessions-{uid}"))
            .is_dir(),
        "the sessions ledger exists, so reading it is a real attempt"
    );

    let mut ran = 0;
    let mut escaped = Vec::new();
    let mut check = |door: &Door, name: &str, expect_escape: bool| {
        let v = g.attempt(door, name);
        ran += 1;
        if v["escaped"].as_bool() != Some(expect_escape) {
            escaped.push(format!("{door:?} {name}: {v}"));
        }
    };
    let doors = [
        Door::Tool("cmd"),
        Door::Tool("cold"),
        Door::Tool("warm"),
        Door::Session(session_id),
        Door::Tool("up__attempt"),
        Door::Code,
    ];
    for door in &doors {
        for name in FILES_AND_PROCESSES {
            check(door, name, false);
        }
    }
    for door in [
        Door::Tool("cmd_nonet"),
        Door::Tool("cold_nonet"),
        Door::Tool("warm_nonet"),
        Door::Session(nonet_id),
        Door::Tool("upnonet__attempt"),
        Door::Code,
    ] {
        for name in NETWORK {
            check(&door, name, false);
        }
    }
    for door in [Door::Tool("cmd_port"), Door::Tool("warm_port")] {
        check(&door, "net_allowed_port", true);
        check(&door, "net_other_port", false);
        check(&door, "net_udp", false);
    }
    for door in [Door::Tool("cmd_ro"), Door::Tool("warm_ro"), Door::Code] {
        check(&door, "write_workspace", false);
    }
    // A policy naming a Unix socket reaches it (any named socket: the kernel cannot filter
    // by path), cold and warm.
    for door in [Door::Tool("cmd_unix"), Door::Tool("warm_unix")] {
        check(&door, "unix_path_socket", true);
        check(&door, "keyring", false);
    }
    // The controls: the same harness sees an unsandboxed tool get through.
    check(&Door::Tool("cmd"), "write_workspace", true);
    for name in [
        "read_registry",
        "read_key",
        "read_tokens",
        "write_tmp",
        "net_udp",
        "write_bashrc",
        "unix_path_socket",
    ] {
        check(&Door::Tool("cmd_none"), name, true);
    }
    assert!(escaped.is_empty(), "as uid {uid}:\n{}", escaped.join("\n"));
    let _ = std::fs::remove_file(format!(
        "/tmp/toolsmith-escape-{}-{uid}",
        std::process::id()
    ));

    // What was enforced is in the plan, the tool's view and the run log as in each call.
    let (status, plan) = g.request(
        "POST",
        "/tools/cmd_ro/plan",
        Some(json!({"arguments": {"name": "x"}})),
    );
    assert_eq!(status, 200, "{plan}");
    assert_eq!(plan["meta"]["sandbox"]["policy"], "read-only", "{plan}");
    assert_eq!(plan["meta"]["sandbox"]["filesystem"], "enforced", "{plan}");
    let (_, view) = g.request("GET", "/tools/cmd_nonet", None);
    assert_eq!(view["sandbox"]["network"], "enforced", "{view}");
    let (_, view) = g.request("GET", "/tools/up__attempt", None);
    assert!(
        view.get("sandbox").is_none(),
        "an upstream tool starts no process: {view}"
    );
    let (_, runs) = g.request("GET", "/runs?tool=cmd_none&limit=1", None);
    assert_eq!(runs["runs"][0]["sandbox"]["policy"], "none", "{runs}");
    let (_, runs) = g.request("GET", "/runs?tool=warm&limit=1", None);
    assert_eq!(
        runs["runs"][0]["sandbox"]["filesystem"], "enforced",
        "{runs}"
    );

    // A hard link to a protected file, placed by someone outside the sandbox: sandboxed
    // calls are refused while it exists (Landlock judges paths), unsandboxed ones run.
    let data = g.base.join("xdg/toolsmith");
    std::fs::hard_link(data.join("secret.key"), ws.join("key-link")).expect("hard link");
    let r = g.call("cmd", json!({"name": "read_key"}));
    assert_eq!(common::error_kind(&r), "sandbox", "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("hard link"),
        "{r}"
    );
    assert_eq!(
        g.call("cmd_none", json!({"name": "read_key"}))["success"],
        true
    );
    std::fs::remove_file(ws.join("key-link")).expect("unlink");
    let r = g.call("cmd", json!({"name": "read_key"}));
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(r["meta"]["sandbox"]["filesystem"], "enforced", "{r}");
    assert_eq!(r["meta"]["sandbox"]["seccomp"], true, "{r}");
    drop(g);
    let _ = holder.join();
    ran
}

fn upstreams_listed(g: &Gateway) -> bool {
    ["up__attempt", "upnonet__attempt"]
        .iter()
        .all(|t| g.request("GET", &format!("/tools/{t}"), None).0 == 200)
}

/// This process's effective user id.
fn euid() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|u| u.parse().ok())
        .expect("euid")
}

#[test]
fn no_attempt_of_the_escape_corpus_gets_through_any_door() {
    let ran = corpus(euid());
    assert!(ran >= 190, "{ran} attempts");
}

#[test]
fn the_escape_corpus_holds_for_an_unprivileged_gateway_too() {
    if euid() != 0 {
        // Already unprivileged: the test above is this one.
        return;
    }
    let ran = corpus(NOBODY);
    assert!(ran >= 190, "{ran} attempts");
}

/// A gateway given no token asks for its local admin token, which no process it starts can
/// find: each door's tool reaches the port (the default policy allows TCP) and is refused,
/// with no token and with whatever its command line holds; the token's file is out of reach.
#[test]
fn no_process_the_gateway_starts_is_its_local_admin() {
    let g = gateway_with(euid(), &[], false);
    assert!(g.token.len() >= 32, "the local admin token: {}", g.token);
    let (status, who) = g.request("GET", "/whoami", None);
    assert_eq!((status, &who["name"]), (200, &json!("local")), "{who}");
    // Without it: 401, saying where it is.
    let (status, v) = common::request_as("GET", &format!("{}/whoami", g.rest), None, None);
    assert_eq!(status, 401, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("local-admin.token"),
        "{v}"
    );
    // Liveness answers anyone.
    let (status, _) = common::request_as("GET", &format!("{}/health", g.rest), None, None);
    assert_eq!(status, 200);
    let session = g.call("session_start", json!({}));
    let id = session["data"]["session_id"]
        .as_str()
        .expect("session")
        .to_owned();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !upstreams_listed(&g) {
        assert!(Instant::now() < deadline, "the upstreams started");
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut escaped = Vec::new();
    for door in [
        Door::Tool("cmd"),
        Door::Tool("cold"),
        Door::Tool("warm"),
        Door::Session(id),
        Door::Tool("up__attempt"),
    ] {
        for name in ["gateway_api_admin", "read_local_token"] {
            let v = g.attempt(&door, name);
            if v["escaped"] != false {
                escaped.push(format!("{door:?} {name}: {v}"));
            }
        }
    }
    assert!(escaped.is_empty(), "{}", escaped.join("\n"));
    // The control: an unsandboxed tool reads the file (so the refusal above is the sandbox's).
    let v = g.attempt(&Door::Tool("cmd_none"), "read_local_token");
    assert_eq!(v["escaped"], true, "{v}");
}

/// A kernel without Landlock (forced): best-effort tools run and say nothing was enforced
/// on files; a tool saying `enforce: required` is refused, naming what is missing.
#[test]
fn without_landlock_best_effort_runs_and_says_so_and_required_is_refused() {
    let g = gateway(euid(), &[(toolsmith_exec::sandbox::ABI_VARIABLE, "0")]);
    let r = g.call("cmd", json!({"name": "write_workspace"}));
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(r["meta"]["sandbox"]["filesystem"], "not enforced", "{r}");
    assert_eq!(r["meta"]["sandbox"]["landlock_abi"], 0, "{r}");
    assert_eq!(r["meta"]["sandbox"]["enforced"], false, "{r}");
    let r = g.call("cmd_required", json!({"name": "write_workspace"}));
    assert_eq!(common::error_kind(&r), "sandbox", "{r}");
    let message = r["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("enforce: required") && message.contains("Landlock"),
        "{message}"
    );
    // Seccomp still holds where Landlock is missing.
    let v = g.attempt(&Door::Tool("cmd_nonet"), "net_udp");
    assert_eq!(v["escaped"], false, "{v}");
}
