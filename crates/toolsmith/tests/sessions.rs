//! Sessions through the real binary: REST calls to `toolsmith serve`, replicas sharing a
//! registry (a session's calls forwarded to the replica holding it, as their caller; a
//! holder that cannot be reached; a session lost with its replica), a server killed with SIGKILL and
//! the next one sweeping what its sessions left, and `toolsmith call` refusing them.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{BIN, Serve, processes_with, repo, serve_contained, serve_in_tmp};
use serde_json::{Value, json};

/// `toolsmith serve` with the session catalog and a registry in `dir`, cgroups on, and
/// `extra` arguments; returns it with its API and MCP URLs.
fn serve_with(dir: &Path, extra: &[&str]) -> (Serve, String, String) {
    let catalog = repo().join("examples/sessions.yaml");
    let db = dir.join("registry.db");
    let args = [&["--catalog", catalog.to_str().expect("utf-8")], extra].concat();
    serve_contained(db.to_str().expect("utf-8"), dir, &args)
}

fn serve(dir: &Path) -> (Serve, String) {
    let (s, rest, _) = serve_with(dir, &[]);
    (s, rest)
}

/// Calls `tool` confirmed; returns the ToolResult.
fn call(base: &str, tool: &str, arguments: Value) -> Value {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let body = json!({"arguments": arguments, "confirm": true}).to_string();
    let mut r = agent
        .post(format!("{base}/tools/{tool}/call"))
        .header("content-type", "application/json")
        .header("authorization", common::bearer(base))
        .send(body)
        .expect("request");
    assert_eq!(r.status().as_u16(), 200);
    serde_json::from_str(&r.body_mut().read_to_string().expect("body")).expect("json")
}

fn get(base: &str, path: &str) -> Value {
    let mut r = ureq::get(format!("{base}{path}"))
        .header("authorization", common::bearer(base))
        .call()
        .expect("request");
    serde_json::from_str(&r.body_mut().read_to_string().expect("body")).expect("json")
}

fn data(r: &Value) -> &Value {
    assert_eq!(r["success"], true, "{r}");
    &r["data"]
}

fn error(r: &Value) -> String {
    assert_eq!(r["error"]["kind"], "session", "{r}");
    r["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn wait_until_gone(marker: &str) -> Vec<u32> {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(5) {
        if processes_with(marker).is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    processes_with(marker)
}

#[test]
fn sessions_over_rest_across_replicas_and_after_a_killed_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("app")).expect("mkdir");
    let marker = format!("TS_KILLED_SERVER={}", std::process::id());
    let (name, value) = marker.split_once('=').expect("marker");
    let (mut a, base_a) = serve(dir.path());

    // An agent's round: a shell in a folder, a command, a background job that escapes its
    // process group, the list, the log.
    let started = call(
        &base_a,
        "session_start",
        json!({"cwd": "app", "env": {name: value}}),
    );
    let id = data(&started)["session_id"]
        .as_str()
        .expect("id")
        .to_owned();
    let r = call(
        &base_a,
        "session_exec",
        json!({"session_id": id, "command": "export N=41; echo $((N+1)) in $(basename $PWD)"}),
    );
    assert_eq!(data(&r)["stdout"], "42 in app\n", "{r}");
    let r = call(
        &base_a,
        "session_exec",
        json!({"session_id": id, "command": "setsid sleep 300 & sleep 301 & echo spawned"}),
    );
    assert_eq!(data(&r)["status"], "completed", "{r}");
    let list = call(&base_a, "session_list", json!({}));
    assert_eq!(data(&list)["sessions"][0]["session_id"], id.as_str());
    let runs = get(&base_a, "/runs?tool=session_exec");
    let entries = runs["runs"].as_array().expect("runs");
    assert_eq!(entries.len(), 2, "{runs}");
    assert!(
        entries
            .iter()
            .all(|e| e["caller"] == "local" && e["kind"] == "ok"),
        "{runs}"
    );

    // A second replica on the same registry forwards the session's calls to the first,
    // which holds it (each advertises the address it listens on).
    let (b, base_b) = serve(dir.path());
    let r = call(
        &base_b,
        "session_exec",
        json!({"session_id": id, "command": "echo $N in $(basename $PWD)"}),
    );
    assert_eq!(data(&r)["stdout"], "41 in app\n", "{r}");
    let holder = r["meta"]["forwarded_to"].as_str().unwrap_or_default();
    let replica_a = id.split('-').nth(1).expect("replica in the id");
    assert!(holder.starts_with(replica_a), "{r}");

    // The first server dies without a chance to clean up: the shell ends with its input, the
    // two sleeps are left…
    a.0.kill().expect("SIGKILL");
    a.0.wait().expect("reaped");
    assert!(
        processes_with(&marker).len() >= 2,
        "{:?}",
        processes_with(&marker)
    );
    // …the other replica says the session was lost with it…
    let r = call(
        &base_b,
        "session_exec",
        json!({"session_id": id, "command": "true"}),
    );
    let m = error(&r);
    assert!(m.starts_with("session_lost:"), "{m}");
    // …and the next server to start on this machine sweeps them, setsid escapee included.
    let (_c, _) = serve(dir.path());
    assert_eq!(wait_until_gone(&marker), Vec::<u32>::new());
    drop(b);
}

/// A session call through `base` as the token's holder.
fn call_as(base: &str, token: &str, tool: &str, arguments: Value) -> Value {
    let (status, r) = common::request_as(
        "POST",
        &format!("{base}/tools/{tool}/call"),
        Some(json!({"arguments": arguments, "confirm": true})),
        Some(token),
    );
    assert_eq!(status, 200, "{r}");
    r
}

/// A relay on 127.0.0.1 that passes each connection on to `target` (learnt once it is
/// known) and keeps every byte clients sent: it stands for the network path between two
/// replicas. Returns its port and what it saw.
fn relay(
    target: std::sync::mpsc::Receiver<String>,
) -> (u16, std::sync::Arc<std::sync::Mutex<Vec<u8>>>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("relay");
    let port = listener.local_addr().expect("addr").port();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = seen.clone();
    std::thread::spawn(move || {
        let target = target.recv().expect("the relay's target");
        for client in listener.incoming() {
            let Ok(client) = client else { continue };
            let server = std::net::TcpStream::connect(&target).expect("relay to the holder");
            let (mut from_client, mut to_client) = (client.try_clone().expect("clone"), client);
            let (mut to_server, mut from_server) = (server.try_clone().expect("clone"), server);
            let kept = kept.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 8192];
                while let Ok(n) = from_client.read(&mut buf) {
                    if n == 0 || to_server.write_all(&buf[..n]).is_err() {
                        break;
                    }
                    kept.lock().expect("lock").extend_from_slice(&buf[..n]);
                }
            });
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut from_server, &mut to_client);
            });
        }
    });
    (port, seen)
}

/// The first HTTP request in `bytes`: its header value `name` and its body.
fn captured(bytes: &[u8], name: &str) -> (String, Vec<u8>) {
    let text = String::from_utf8_lossy(bytes);
    let head_end = text.find("\r\n\r\n").expect("a whole request was relayed");
    let header = |n: &str| {
        text[..head_end].lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(n).then(|| v.trim().to_owned())
        })
    };
    let length: usize = header("content-length")
        .expect("content-length")
        .parse()
        .expect("a length");
    let body = bytes[head_end + 4..head_end + 4 + length].to_vec();
    (header(name).expect("the header"), body)
}

/// Sends a forward as another replica would, with `proof` as its proof header.
fn send_forward(base: &str, proof: &str, body: &[u8]) -> (u16, String) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut r = agent
        .post(format!("{}/peer/session", base.trim_end_matches('/')))
        .header("content-type", "application/json")
        .header("x-toolsmith-peer", proof)
        .send(body)
        .expect("request");
    let status = r.status().as_u16();
    (status, r.body_mut().read_to_string().expect("body"))
}

#[test]
fn a_session_answers_through_any_replica_as_its_caller() {
    let dir = tempfile::tempdir().expect("tempdir");
    let key_file = dir.path().join("secret.key");
    let key_text = "5a".repeat(32);
    std::fs::write(&key_file, &key_text).expect("key");
    let keyed = [
        "--token",
        "alice:call=alice-secret",
        "--token",
        "bob:call=bob-secret",
        "--secret-key-file",
        key_file.to_str().expect("utf-8"),
    ];
    // A advertises the relay's address: B's forwards to A cross it, and it keeps them.
    let (to_a, target) = std::sync::mpsc::channel();
    let (relay_port, relayed) = relay(target);
    let relay_url = format!("http://127.0.0.1:{relay_port}");
    let (_a, base_a) = {
        let args = [&keyed[..], &["--advertise-url", &relay_url]].concat();
        let (s, rest, _) = serve_with(dir.path(), &args);
        (s, rest)
    };
    let a_host = base_a
        .trim_start_matches("http://")
        .split('/')
        .next()
        .expect("host")
        .to_owned();
    to_a.send(a_host).expect("relay");
    let (_b, base_b) = {
        let (s, rest, _) = serve_with(dir.path(), &keyed);
        (s, rest)
    };
    let r = call_as(&base_a, "alice-secret", "session_start", json!({}));
    let id = data(&r)["session_id"].as_str().expect("id").to_owned();
    // At once through the other replica (its start is recorded off the call path).
    let r = call_as(
        &base_b,
        "alice-secret",
        "session_exec",
        json!({"session_id": id, "command": "X=7; echo set"}),
    );
    assert_eq!(data(&r)["stdout"], "set\n", "{r}");
    assert!(r["meta"]["forwarded_to"].is_string(), "{r}");
    // The shell is the same one: what B's call set, A's sees.
    let r = call_as(
        &base_a,
        "alice-secret",
        "session_exec",
        json!({"session_id": id, "command": "echo $X"}),
    );
    assert_eq!(data(&r)["stdout"], "7\n", "{r}");
    assert!(r["meta"].get("forwarded_to").is_none(), "{r}");
    // Another caller is told nothing about it: no such session, no replica, place or URL.
    let r = call_as(
        &base_b,
        "bob-secret",
        "session_read",
        json!({"session_id": id}),
    );
    let m = error(&r);
    assert!(m.starts_with("session_unknown:"), "{r}");
    assert!(r["meta"].get("forwarded_to").is_none(), "{r}");
    for told in ["127.0.0.1", &relay_port.to_string(), "replica"] {
        assert!(!m.contains(told), "{told} in {m}");
    }
    // The forwarded call is in the log once, written by the holder under its caller.
    let (_, runs) = common::request_as(
        "GET",
        &format!("{base_b}/runs?tool=session_exec"),
        None,
        Some("alice-secret"),
    );
    let exec_runs = runs["runs"].as_array().expect("runs");
    assert_eq!(exec_runs.len(), 2, "{runs}");
    assert!(exec_runs.iter().all(|r| r["caller"] == "alice"), "{runs}");

    // A forward seen on the network cannot be sent again: not to the holder, not to another
    // replica, not changed, not with a proof older than the clock window.
    let (proof, body) = captured(&relayed.lock().expect("lock"), "x-toolsmith-peer");
    assert!(proof.starts_with("t="), "{proof}");
    for base in [&base_a, &base_b] {
        let (status, answer) = send_forward(base, &proof, &body);
        assert_eq!(status, 401, "{answer}");
        assert!(answer.contains("used before"), "{answer}");
    }
    let changed = String::from_utf8(body.clone())
        .expect("utf-8")
        .replace("\"alice\"", "\"mallory\"");
    let (status, answer) = send_forward(&base_a, &proof, changed.as_bytes());
    assert_eq!(status, 401, "{answer}");
    assert!(answer.contains("does not match"), "{answer}");
    toolsmith_store::secrets::use_key(Some(
        toolsmith_store::secrets::SecretKey::from_text(&key_text).expect("key"),
    ));
    let sign = |at_ms: i64| {
        let nonce = toolsmith_store::secrets::peer_nonce();
        let s =
            toolsmith_store::secrets::peer_proof("POST", "/v1/peer/session", at_ms, &nonce, &body)
                .expect("proof");
        format!("t={at_ms};n={nonce};s={s}")
    };
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as i64;
    let (status, answer) = send_forward(&base_a, &sign(now_ms - 61_000), &body);
    assert_eq!(status, 401, "{answer}");
    assert!(answer.contains("older than 30 s"), "{answer}");
    // The same proof made now is taken (so the refusals above were for what they say).
    let (status, answer) = send_forward(&base_a, &sign(now_ms), &body);
    assert_eq!(status, 200, "{answer}");
    // Without a proof, or with a caller's token, the door is shut.
    let forged = json!({"tool": "session_read", "arguments": {"session_id": id}, "caller": "alice", "admin": true});
    for token in [None, Some("alice-secret")] {
        let (status, body) = common::request_as(
            "POST",
            &format!("{}/peer/session", base_a.trim_end_matches('/')),
            Some(forged.clone()),
            token,
        );
        assert_eq!(status, 401, "{body}");
    }
    let r = call_as(
        &base_b,
        "alice-secret",
        "session_end",
        json!({"session_id": id}),
    );
    assert_eq!(r["success"], true, "{r}");
    let tokens = &keyed;

    // A replica that advertises an address where nothing answers: its session is reported
    // lost by the replica that could not reach it, never hung on.
    let (_c, base_c) = {
        let (s, rest, _) = serve_with(
            dir.path(),
            &[&tokens[..], &["--advertise-url", "http://127.0.0.1:9"]].concat(),
        );
        (s, rest)
    };
    let r = call_as(&base_c, "alice-secret", "session_start", json!({}));
    let id = data(&r)["session_id"].as_str().expect("id").to_owned();
    let r = call_as(
        &base_a,
        "alice-secret",
        "session_read",
        json!({"session_id": id}),
    );
    let m = error(&r);
    assert!(
        m.starts_with("session_lost:") && m.contains("did not answer at http://127.0.0.1:9"),
        "{m}"
    );
    // To another caller the same id is a session that does not exist.
    let r = call_as(
        &base_a,
        "bob-secret",
        "session_read",
        json!({"session_id": id}),
    );
    let m = error(&r);
    assert!(
        m.starts_with("session_unknown:") && !m.contains("127.0.0.1"),
        "{m}"
    );
}

#[test]
fn without_cgroups_the_next_server_ends_what_a_killed_server_left() {
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = format!("TS_KILLED_UNCONTAINED={}", std::process::id());
    let (name, value) = marker.split_once('=').expect("marker");
    // A temporary folder of their own: another test's server starting meanwhile would
    // otherwise end what this one's killed server left before the test looks.
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).expect("mkdir");
    let catalog = repo().join("examples/sessions.yaml");
    let db = dir.path().join("registry.db");
    let args = [
        "--no-cgroups",
        "--catalog",
        catalog.to_str().expect("utf-8"),
    ];
    let start = || serve_in_tmp(db.to_str().expect("utf-8"), dir.path(), &args, &tmp);
    let (mut a, base, _) = start();
    // A dev server (a process session) and a shell with a background job.
    let r = call(
        &base,
        "session_start",
        json!({"command": ["sleep", "300"], "env": {name: value}}),
    );
    data(&r);
    let r = call(&base, "session_start", json!({"env": {name: value}}));
    let shell = data(&r)["session_id"].as_str().expect("id").to_owned();
    let r = call(
        &base,
        "session_exec",
        json!({"session_id": shell, "command": "sleep 301 & echo spawned"}),
    );
    assert_eq!(data(&r)["status"], "completed", "{r}");
    // Killed outright, with no cgroup to hold its sessions: the shell ends with its input,
    // the dev server and the background job run on.
    a.0.kill().expect("SIGKILL");
    a.0.wait().expect("reaped");
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        processes_with(&marker).len(),
        2,
        "{:?}",
        processes_with(&marker)
    );
    // The next server on this machine ends them, from the killed one's ledger.
    let (_b, _, _) = start();
    assert_eq!(wait_until_gone(&marker), Vec::<u32>::new());
}

#[test]
fn a_stopped_server_ends_its_sessions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = format!("TS_STOPPED_SERVER={}", std::process::id());
    let (name, value) = marker.split_once('=').expect("marker");
    let (mut s, base) = serve(dir.path());
    let r = call(
        &base,
        "session_start",
        json!({"command": ["sleep", "300"], "env": {name: value}}),
    );
    data(&r);
    // (A process just started can briefly show no environment, more so with other tests'
    // servers busy beside this one: look again, for up to 5 s.)
    let started = Instant::now();
    while processes_with(&marker).is_empty() && started.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(processes_with(&marker).len(), 1);
    let kill = Command::new("kill")
        .args(["-TERM", &s.0.id().to_string()])
        .status()
        .expect("kill");
    assert!(kill.success());
    let status = s.0.wait().expect("exit");
    assert!(status.success(), "{status:?}");
    assert_eq!(processes_with(&marker), Vec::<u32>::new());
}

#[test]
fn toolsmith_call_explains_that_sessions_need_a_server() {
    let o = Command::new(BIN)
        .args(["call", "session_start", "-c"])
        .arg(repo().join("examples/sessions.yaml"))
        .args(["--yes", "--json"])
        .output()
        .expect("run");
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("sessions_unavailable") && out.contains("toolsmith serve"),
        "{out}"
    );
}

/// One stateless JSON-RPC `tools/call` to `/mcp` with a bearer token; the tool's structured
/// result (or its error text).
fn mcp_call(mcp: &str, token: &str, tool: &str, arguments: Value) -> Value {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments}});
    let mut r = agent
        .post(mcp)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .header("authorization", format!("Bearer {token}"))
        .send(body.to_string())
        .expect("request");
    let text = r.body_mut().read_to_string().expect("body");
    let json = text
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .unwrap_or(&text);
    let v: Value = serde_json::from_str(json).unwrap_or_else(|_| panic!("{text}"));
    let result = &v["result"];
    match result["isError"].as_bool() {
        Some(true) => Value::String(
            result["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .into(),
        ),
        _ => result["structuredContent"].clone(),
    }
}

#[test]
fn over_mcp_each_token_sees_only_its_own_sessions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_s, _, mcp) = serve_with(
        dir.path(),
        &[
            "--token",
            "alice:call=alice-secret-1",
            "--token",
            "bob:call=bob-secret-22",
            "--token",
            "ops:admin=ops-secret-333",
            "--allow-dangerous",
        ],
    );
    let started = mcp_call(&mcp, "alice-secret-1", "session_start", json!({}));
    let id = started["session_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{started}"))
        .to_owned();
    let bob = mcp_call(
        &mcp,
        "bob-secret-22",
        "session_exec",
        json!({"session_id": id, "command": "id"}),
    );
    assert!(
        bob.as_str().is_some_and(|m| m.contains("session_unknown")),
        "{bob}"
    );
    let listed = mcp_call(&mcp, "bob-secret-22", "session_list", json!({}));
    assert_eq!(listed["sessions"], json!([]), "{listed}");
    let alice = mcp_call(
        &mcp,
        "alice-secret-1",
        "session_exec",
        json!({"session_id": id, "command": "echo mine"}),
    );
    assert_eq!(alice["stdout"], "mine\n", "{alice}");
    let ops = mcp_call(&mcp, "ops-secret-333", "session_list", json!({}));
    assert_eq!(ops["sessions"][0]["owner"], "mcp:alice", "{ops}");
}

/// This server's cgroup folders (`toolsmith-<pid>-*` under its own pids cgroup, with what
/// they hold).
fn cgroup_folders_of(pid: u32) -> Vec<std::path::PathBuf> {
    let own = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
    let base = own
        .lines()
        .find_map(|l| {
            let mut parts = l.splitn(3, ':');
            let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            controllers
                .split(',')
                .any(|c| c == "pids")
                .then(|| Path::new("/sys/fs/cgroup/pids").join(path.trim_start_matches('/')))
        })
        .unwrap_or_else(|| Path::new("/sys/fs/cgroup/pids").to_path_buf());
    let mut out = Vec::new();
    for e in std::fs::read_dir(&base).into_iter().flatten().flatten() {
        if e.file_name()
            .to_string_lossy()
            .starts_with(&format!("toolsmith-{pid}-"))
        {
            out.extend(
                std::fs::read_dir(e.path())
                    .into_iter()
                    .flatten()
                    .flatten()
                    .filter(|c| c.path().is_dir())
                    .map(|c| c.path()),
            );
            out.push(e.path());
        }
    }
    out
}

/// Finding 10 of the second hardening round: after SIGTERM no cgroup folder of the server is
/// left — not the pool's idle slots, a warm zygote's, a live session's, nor their parent.
#[test]
fn a_clean_stop_leaves_no_cgroup_folder() {
    let dir = tempfile::tempdir().expect("tempdir");
    let catalog = dir.path().join("catalog.yaml");
    std::fs::write(
        &catalog,
        "tools:\n  - {name: session_start, builtin: session_start}\n  - {name: py, description: d, script: {source: \"print(1)\"}}\n  - {name: t, description: d, command: [\"true\"]}\n",
    )
    .expect("write");
    let db = dir.path().join("registry.db");
    let (server, base, _) = serve_contained(
        db.to_str().expect("utf-8"),
        dir.path(),
        &["--catalog", catalog.to_str().expect("utf-8")],
    );
    data(&call(&base, "py", json!({})));
    data(&call(&base, "t", json!({})));
    data(&call(&base, "session_start", json!({})));
    let pid = server.0.id();
    let folders = cgroup_folders_of(pid);
    assert!(
        folders.iter().any(|f| f.ends_with("slot-0")),
        "the server runs in pids cgroups of its own (this test needs a writable pids cgroup): {folders:?}"
    );
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .expect("kill")
            .success()
    );
    let mut server = server;
    assert!(server.0.wait().expect("wait").success());
    let left = cgroup_folders_of(pid);
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// A process's peak resident memory (`VmHWM`), in KiB.
fn peak_rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Finding 4 of the second hardening round: 200 MB of one unterminated OSC string on a
/// terminal session leave the gateway's peak memory bounded, and the text after it arrives.
#[test]
fn a_terminal_fed_200_mb_of_one_escape_string_stays_small() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (server, base) = serve(dir.path());
    let pid = server.0.id();
    let before = peak_rss_kib(pid);
    let script = "printf '\\033]0;'; head -c 200000000 /dev/zero | tr '\\0' a; printf '\\007after the string\\n'; sleep 30";
    let started = call(
        &base,
        "session_start",
        json!({"command": ["sh", "-c", script], "tty": true}),
    );
    let id = data(&started)["session_id"]
        .as_str()
        .expect("id")
        .to_owned();
    let mut seen = String::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !seen.contains("after the string") && Instant::now() < deadline {
        let r = call(
            &base,
            "session_read",
            json!({"session_id": id, "timeout_ms": 5000, "until": "after the string"}),
        );
        seen.push_str(data(&r)["stdout"].as_str().unwrap_or_default());
    }
    assert!(seen.contains("after the string"), "{seen}");
    assert!(
        seen.contains("an escape sequence longer than 64 KiB was dropped"),
        "{seen}"
    );
    let peak = peak_rss_kib(pid);
    assert!(
        peak < before + 64 * 1024,
        "the gateway's peak memory grew from {before} KiB to {peak} KiB"
    );
    call(
        &base,
        "session_end",
        json!({"session_id": id, "grace_ms": 100}),
    );
}

/// A signal's hex mask (`SigIgn:`, `SigBlk:` of /proc/PID/status) in `status`.
fn signal_mask(status: &str, field: &str) -> u64 {
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or_else(|| panic!("no {field} in {status}"))
}

/// `toolsmith serve &` in a script, a container's entrypoint or a CI step runs with SIGINT
/// and SIGQUIT ignored (POSIX, for a non-interactive shell's background jobs): the processes
/// it starts must not inherit that — nor a blocked signal. Started that way (and with SIGUSR1
/// blocked), a tool sees default dispositions and an empty mask, and a session's Ctrl-C
/// interrupts its command.
#[test]
fn children_start_with_default_signals_whatever_the_gateway_inherited() {
    let dir = tempfile::tempdir().expect("tempdir");
    let catalog = dir.path().join("catalog.yaml");
    std::fs::copy(
        repo().join("examples/sessions.yaml"),
        dir.path().join("sessions.yaml"),
    )
    .expect("copy");
    std::fs::write(
        &catalog,
        "imports: [sessions.yaml]\ntools:\n  - {name: signals, description: d, command: [grep, -E, '^Sig(Ign|Blk)', /proc/self/status]}\n",
    )
    .expect("catalog");
    let wrapper = "import os, signal, sys\n\
        signal.signal(signal.SIGINT, signal.SIG_IGN)\n\
        signal.signal(signal.SIGQUIT, signal.SIG_IGN)\n\
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})\n\
        os.execv(sys.argv[1], sys.argv[1:])\n";
    let mut child = Command::new("python3")
        .args([
            "-c",
            wrapper,
            BIN,
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--catalog",
        ])
        .arg(&catalog)
        .arg("--db")
        .arg(dir.path().join("registry.db"))
        .arg("--workspace")
        .arg(dir.path())
        .current_dir(dir.path())
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("serve");
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(
        child.stderr.take().expect("stderr"),
    ));
    let (base, _) = common::read_addresses(&mut lines);
    std::thread::spawn(move || lines.for_each(drop));
    let server = Serve(child);
    // What it was started with (so the test could fail): SIGINT (bit 1) and SIGQUIT (bit 2)
    // ignored, SIGUSR1 (bit 9) blocked.
    let own = std::fs::read_to_string(format!("/proc/{}/status", server.0.id())).expect("status");
    assert_eq!(signal_mask(&own, "SigIgn:") & 0b110, 0b110, "{own}");
    assert_ne!(signal_mask(&own, "SigBlk:") & (1 << 9), 0, "{own}");

    let r = call(&base, "signals", json!({}));
    let seen = data(&r)["stdout"].as_str().unwrap_or_default().to_owned();
    assert_eq!(
        signal_mask(&seen, "SigIgn:") & 0b110,
        0,
        "a tool inherited them: {seen}"
    );
    assert_eq!(
        signal_mask(&seen, "SigBlk:"),
        0,
        "a tool inherited the mask: {seen}"
    );

    let r = call(&base, "session_start", json!({}));
    let id = data(&r)["session_id"].as_str().expect("id").to_owned();
    let r = call(
        &base,
        "session_exec",
        json!({"session_id": id, "command": "sleep 30; echo rc=$?", "timeout_ms": 200}),
    );
    assert_eq!(data(&r)["status"], "running", "{r}");
    call(
        &base,
        "session_exec",
        json!({"session_id": id, "keys": ["C-c"], "timeout_ms": 0}),
    );
    let r = call(
        &base,
        "session_read",
        json!({"session_id": id, "cursor": "o0.e0", "until": "rc=", "timeout_ms": 20000}),
    );
    assert_eq!(data(&r)["stdout"], "rc=130\n", "{r}");
    drop(server);
}
