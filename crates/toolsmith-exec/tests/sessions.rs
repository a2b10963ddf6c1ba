//! Sessions (SPEC §5.4) with real processes: shells, programs on pipes and on terminals,
//! their limits, expiry and cleanup.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolsmith_core::catalog;
use toolsmith_core::{CompiledTool, ErrorKind, ToolResult};
use toolsmith_exec::session::SessionLimits;
use toolsmith_exec::{CallOptions, Engine, EngineConfig};

mod common;
use common::{Text, contained_after_settling, processes_with, wait_until_gone};

struct Fixture {
    _dir: tempfile::TempDir,
    engine: Engine,
    tools: Vec<CompiledTool>,
}

/// An engine and the five session tools; `start_config` is session_start's `config`.
fn fixture_with(start_config: &str, limits: SessionLimits) -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("sub")).expect("mkdir");
    let yaml = format!(
        "tools:\n  - {{name: session_start, builtin: session_start, config: {start_config}}}\n  \
         - {{name: session_exec, builtin: session_exec}}\n  - {{name: session_read, builtin: session_read}}\n  \
         - {{name: session_end, builtin: session_end}}\n  - {{name: session_list, builtin: session_list}}\n"
    );
    let c = catalog::load("c.yaml", &Text(yaml)).unwrap_or_else(|e| panic!("{e}"));
    let tools = c
        .tools
        .into_iter()
        .map(|t| CompiledTool::new(t, 1).expect("compiles"))
        .collect();
    let mut config = EngineConfig::new(dir.path());
    config.session_limits = limits;
    let engine = Engine::new(config).expect("engine");
    Fixture {
        _dir: dir,
        engine,
        tools,
    }
}

fn fixture() -> Fixture {
    fixture_with("{}", SessionLimits::default())
}

impl Fixture {
    fn root(&self) -> &Path {
        self.engine.workspace().root()
    }

    async fn call_as(&self, caller: &str, name: &str, args: Value) -> ToolResult {
        let t = self
            .tools
            .iter()
            .find(|t| t.tool.name.as_str() == name)
            .expect("tool");
        self.engine
            .call(t, args, CallOptions::new(caller, true))
            .await
    }

    /// Calls `name` as `test` and returns its data, failing the test on an error.
    async fn ok(&self, name: &str, args: Value) -> Value {
        let r = self.call_as("test", name, args.clone()).await;
        assert!(r.success, "{name} {args}: {:?}", r.error);
        r.data.expect("data")
    }

    async fn start(&self, args: Value) -> String {
        let v = self.ok("session_start", args).await;
        v["session_id"].as_str().expect("id").to_owned()
    }

    async fn exec(&self, id: &str, command: &str) -> Value {
        self.ok(
            "session_exec",
            json!({"session_id": id, "command": command}),
        )
        .await
    }
}

fn message(r: &ToolResult) -> String {
    r.error
        .as_ref()
        .map(|e| e.message.clone())
        .unwrap_or_default()
}

fn unique(name: &str) -> String {
    format!(
        "TS_SESSION_TEST={name}-{}-{:?}",
        std::process::id(),
        Instant::now()
    )
}

#[tokio::test]
async fn a_shell_keeps_its_folder_and_variables_between_commands() {
    let f = fixture();
    let id = f.start(json!({})).await;
    assert!(
        id.starts_with(&format!("s-{}-", f.engine.sessions().replica())),
        "{id}"
    );
    assert_eq!(id.len(), 2 + 8 + 1 + 32, "{id}");

    let r = f.exec(&id, "cd sub && export GREETING=hello").await;
    assert_eq!(r["status"], "completed", "{r}");
    assert_eq!(r["exit_code"], 0);
    let sub = f.root().join("sub").canonicalize().expect("canonical");
    assert_eq!(r["cwd"], sub.to_string_lossy().as_ref());

    let r = f
        .exec(
            &id,
            "pwd; echo \"$GREETING world\"; echo oops >&2; ls /nonexistent",
        )
        .await;
    assert_eq!(r["status"], "completed", "{r}");
    assert_eq!(r["exit_code"], 2, "{r}");
    assert_eq!(
        r["stdout"].as_str().expect("stdout"),
        format!("{}\nhello world\n", sub.display())
    );
    let stderr = r["stderr"].as_str().expect("stderr");
    assert!(
        stderr.starts_with("oops\n") && stderr.contains("nonexistent"),
        "{stderr}"
    );

    // Commands read no input: a reader gets end-of-file instead of hanging.
    let r = f.exec(&id, "cat; echo after-cat $?").await;
    assert_eq!(r["stdout"], "after-cat 0\n", "{r}");
    // A syntax error is the command's failure; the shell goes on.
    let r = f.exec(&id, "if then fi '").await;
    assert_eq!(r["exit_code"], 2, "{r}");
    let r = f.exec(&id, "echo still $GREETING").await;
    assert_eq!(r["stdout"], "still hello\n");
    // A here-document inside the command travels intact.
    let r = f
        .exec(&id, "cat <<'EOF'\n  two  spaces \\n kept\nEOF")
        .await;
    assert_eq!(r["stdout"], "  two  spaces \\n kept\n", "{r}");
    f.ok("session_end", json!({"session_id": id})).await;
}

#[tokio::test]
async fn strict_mode_and_exit_end_a_shell_cleanly() {
    let f = fixture();
    let id = f.start(json!({})).await;
    let r = f.exec(&id, "set -euo pipefail").await;
    assert_eq!(r["exit_code"], 0, "{r}");
    // Strict mode survives the wrapper: an unset variable is still an error…
    let r = f.exec(&id, "echo fine").await;
    assert_eq!(r["stdout"], "fine\n", "{r}");
    // …and a failing command ends the shell, reported as such.
    let r = f.exec(&id, "echo before; false; echo never").await;
    assert_eq!(r["status"], "session_ended", "{r}");
    assert_eq!(r["exit_code"], 1, "{r}");
    assert_eq!(r["stdout"], "before\n");
    let again = f
        .call_as(
            "test",
            "session_exec",
            json!({"session_id": id, "command": "true"}),
        )
        .await;
    assert_eq!(
        again.error.as_ref().map(|e| e.kind),
        Some(ErrorKind::Session)
    );
    assert!(
        message(&again).starts_with("session_ended:"),
        "{}",
        message(&again)
    );

    let id = f.start(json!({})).await;
    let r = f.exec(&id, "exit 3").await;
    assert_eq!(
        (r["status"].as_str(), r["exit_code"].as_i64()),
        (Some("session_ended"), Some(3)),
        "{r}"
    );
    let read = f.ok("session_read", json!({"session_id": id})).await;
    assert_eq!(
        (read["status"].as_str(), read["exit_code"].as_i64()),
        (Some("exited"), Some(3)),
        "{read}"
    );
}

#[tokio::test]
async fn output_that_looks_like_the_marker_does_not_complete_a_command() {
    let f = fixture();
    let id = f.start(json!({})).await;
    let started = Instant::now();
    let r = f
        .exec(
            &id,
            "printf '__TS_0 1 0 /\\0'; printf '__TS_0 1 0 /\\0' >&2; sleep 0.4; echo done",
        )
        .await;
    assert_eq!(r["status"], "completed", "{r}");
    assert!(
        r["stdout"].as_str().expect("out").ends_with("done\n"),
        "{r}"
    );
    assert!(started.elapsed() >= Duration::from_millis(400));
}

#[tokio::test]
async fn background_processes_do_not_block_completion_and_all_die_with_the_session() {
    let f = fixture();
    let marker = unique("orphans");
    let (name, value) = marker.split_once('=').expect("marker");
    let id = f.start(json!({"env": {name: value}})).await;
    let started = Instant::now();
    // Each of these holds the shell's stdout or escapes its process group.
    for command in [
        "sleep 300 &",
        "nohup sleep 301 >/dev/null 2>&1 &",
        "setsid sleep 302 &",
        "exec 4> >(sleep 303)",
        "(sleep 304 &) ; echo started",
    ] {
        let r = f.exec(&id, command).await;
        assert_eq!(r["status"], "completed", "{command}: {r}");
    }
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    // (A process in the middle of exec can briefly show no environment, and on a loaded
    // machine one may still be starting: look again, for up to 5 s.)
    // Judge the look that found them all: a second look can again catch one mid-exec.
    let mut seen = Vec::new();
    for _ in 0..250 {
        seen = processes_with(&marker);
        if seen.len() >= 6 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(seen.len() >= 6, "{seen:?}");
    if f.engine.has_cgroups() {
        let inside = f.engine.contained_processes();
        assert!(inside.len() >= 6, "{inside:?}");
    }
    let end = f.ok("session_end", json!({"session_id": id})).await;
    assert_eq!(end["status"], "ended", "{end}");
    assert_eq!(wait_until_gone(&marker).await, Vec::<u32>::new());
    // The session's cgroup is empty too.
    assert_eq!(contained_after_settling(&f.engine).await, Vec::<i32>::new());
    // Ending is idempotent.
    let again = f.ok("session_end", json!({"session_id": id})).await;
    assert_eq!(again["already_ended"], true, "{again}");
}

#[tokio::test]
async fn ten_megabytes_of_output_are_read_from_old_cursors_with_dropped_bytes() {
    let f = fixture();
    let id = f.start(json!({})).await;
    let r = f
        .ok(
            "session_exec",
            json!({"session_id": id, "command": "head -c 10000000 /dev/zero | tr '\\0' a; echo; echo end", "timeout_ms": 30000, "max_bytes": 1000}),
        )
        .await;
    assert_eq!(r["status"], "completed", "{}", r["status"]);
    // The first bytes of the command's output are gone from the 1 MiB ring.
    assert_eq!(
        r["dropped_bytes"],
        10_000_005 - (1 << 20),
        "{}",
        r["dropped_bytes"]
    );
    assert_eq!(r["stdout"].as_str().expect("out").len(), 1000);
    assert_eq!(r["more"], true);
    let read = f
        .ok(
            "session_read",
            json!({"session_id": id, "cursor": "o0.e0", "tail": true, "max_bytes": 10}),
        )
        .await;
    assert_eq!(read["stdout"], "aaaaa\nend\n", "{read}");
    assert_eq!(read["cursor"], "o10000005.e0");
    // An old cursor again: idempotent.
    let again = f
        .ok(
            "session_read",
            json!({"session_id": id, "cursor": "o9999995.e0"}),
        )
        .await;
    assert_eq!(again["stdout"], "aaaaa\nend\n");
    assert_eq!(again["dropped_bytes"], 0);
    // Nothing new since the last cursor returned.
    let none = f.ok("session_read", json!({"session_id": id})).await;
    assert_eq!(
        (none["stdout"].as_str(), none["cursor"].as_str()),
        (Some(""), Some("o10000005.e0"))
    );
}

#[tokio::test]
async fn a_python_repl_on_a_terminal_answers_and_takes_ctrl_c() {
    let f = fixture();
    let id = f
        .start(json!({"command": ["python3", "-q", "-i"], "tty": true, "wait_ms": 3000, "until": ">>> "}))
        .await;
    let r = f
        .ok(
            "session_exec",
            json!({"session_id": id, "input": "print(1+1)\n", "until": "2"}),
        )
        .await;
    assert!(r["stdout"].as_str().expect("out").contains('2'), "{r}");
    assert!(!r["stdout"].as_str().expect("out").contains('\x1b'), "{r}");
    let r = f
        .ok(
            "session_exec",
            json!({"session_id": id, "input": "import time; time.sleep(60)\n", "timeout_ms": 300}),
        )
        .await;
    assert_eq!(r["status"], "running", "{r}");
    let started = Instant::now();
    let r = f
        .ok(
            "session_exec",
            json!({"session_id": id, "keys": ["C-c"], "until": "KeyboardInterrupt", "timeout_ms": 5000}),
        )
        .await;
    assert!(
        r["stdout"]
            .as_str()
            .expect("out")
            .contains("KeyboardInterrupt"),
        "{r}"
    );
    assert!(started.elapsed() < Duration::from_secs(4));
    // The REPL lives on.
    let r = f
        .ok(
            "session_exec",
            json!({"session_id": id, "input": "print(6*7)\n", "until": "42"}),
        )
        .await;
    assert!(r["stdout"].as_str().expect("out").contains("42"), "{r}");
    let end = f
        .ok("session_end", json!({"session_id": id, "grace_ms": 500}))
        .await;
    assert_eq!(end["status"], "ended");
}

#[tokio::test]
async fn a_process_on_pipes_takes_input_and_end_of_input() {
    let f = fixture();
    let id = f
        .start(json!({"command": ["python3", "-u", "-c", "import sys\nfor l in sys.stdin: print(l.strip().upper(), flush=True)\nprint('bye')"]}))
        .await;
    let r = f
        .ok(
            "session_exec",
            json!({"session_id": id, "input": "hello\n"}),
        )
        .await;
    assert_eq!(r["stdout"], "HELLO\n", "{r}");
    let r = f
        .ok("session_exec", json!({"session_id": id, "eof": true}))
        .await;
    assert_eq!(
        (r["status"].as_str(), r["exit_code"].as_i64()),
        (Some("exited"), Some(0)),
        "{r}"
    );
    assert_eq!(r["stdout"], "bye\n");
}

#[tokio::test]
async fn ctrl_c_interrupts_a_shell_command_and_the_shell_goes_on() {
    let f = fixture();
    let id = f.start(json!({})).await;
    let r = f
        .ok(
            "session_exec",
            json!({"session_id": id, "command": "sleep 30; echo rc=$?", "timeout_ms": 200}),
        )
        .await;
    assert_eq!(r["status"], "running", "{r}");
    // A second command while one runs is refused, not queued.
    let busy = f
        .call_as(
            "test",
            "session_exec",
            json!({"session_id": id, "command": "true"}),
        )
        .await;
    assert!(
        message(&busy).starts_with("session_busy:"),
        "{}",
        message(&busy)
    );
    f.ok(
        "session_exec",
        json!({"session_id": id, "keys": ["C-c"], "timeout_ms": 0}),
    )
    .await;
    let read = f
        .ok(
            "session_read",
            json!({"session_id": id, "cursor": "o0.e0", "until": "rc=", "timeout_ms": 5000}),
        )
        .await;
    assert_eq!(read["stdout"], "rc=130\n", "{read}");
    let r = f.exec(&id, "echo alive").await;
    assert_eq!(r["stdout"], "alive\n");
}

#[tokio::test]
async fn an_idle_session_expires_and_leaves_a_tombstone() {
    let f = fixture_with("{idle_timeout_ms: 700}", SessionLimits::default());
    let marker = unique("expiry");
    let (name, value) = marker.split_once('=').expect("marker");
    let id = f.start(json!({"env": {name: value}})).await;
    f.exec(&id, "sleep 300 & echo last words").await;
    assert!(!processes_with(&marker).is_empty());
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(wait_until_gone(&marker).await, Vec::<u32>::new());
    assert_eq!(contained_after_settling(&f.engine).await, Vec::<i32>::new());
    let read = f.ok("session_read", json!({"session_id": id})).await;
    assert_eq!(read["status"], "expired", "{read}");
    assert!(
        read["stdout_tail"]
            .as_str()
            .expect("tail")
            .contains("last words"),
        "{read}"
    );
    assert!(
        read["message"]
            .as_str()
            .expect("message")
            .contains("expired at"),
        "{read}"
    );
    let exec = f
        .call_as(
            "test",
            "session_exec",
            json!({"session_id": id, "command": "true"}),
        )
        .await;
    assert!(
        message(&exec).starts_with("session_expired:"),
        "{}",
        message(&exec)
    );
    let list = f.ok("session_list", json!({})).await;
    assert_eq!(list["sessions"], json!([]));
}

#[tokio::test]
async fn the_thirty_third_session_is_refused_and_nobody_is_killed_for_it() {
    let f = fixture();
    let mut ids = Vec::new();
    for caller in 0..4 {
        for _ in 0..8 {
            let r = f
                .call_as(
                    &format!("c{caller}"),
                    "session_start",
                    json!({"command": ["sleep", "60"]}),
                )
                .await;
            assert!(r.success, "{:?}", r.error);
            ids.push((
                caller,
                r.data.expect("data")["session_id"]
                    .as_str()
                    .expect("id")
                    .to_owned(),
            ));
        }
    }
    // A ninth for one caller: refused with that caller's list.
    let r = f
        .call_as("c0", "session_start", json!({"command": ["sleep", "60"]}))
        .await;
    assert!(message(&r).starts_with("session_limit:"), "{}", message(&r));
    assert!(message(&r).contains(&ids[0].1), "{}", message(&r));
    // The 33rd, from a new caller: refused, and all 32 still run.
    let r = f
        .call_as("c9", "session_start", json!({"command": ["sleep", "60"]}))
        .await;
    assert_eq!(r.error.as_ref().map(|e| e.kind), Some(ErrorKind::Session));
    assert!(message(&r).contains("32 sessions"), "{}", message(&r));
    for (caller, id) in &ids {
        let r = f
            .call_as(
                &format!("c{caller}"),
                "session_read",
                json!({"session_id": id}),
            )
            .await;
        assert_eq!(
            r.data.as_ref().map(|d| d["status"].clone()),
            Some(json!("running")),
            "{:?}",
            r.error
        );
    }
    f.engine
        .sessions()
        .shutdown(Duration::from_millis(500))
        .await;
    assert_eq!(f.engine.sessions().count(), 0);
}

#[tokio::test]
async fn sessions_belong_to_their_caller() {
    let f = fixture();
    let r = f.call_as("alice", "session_start", json!({})).await;
    let id = r.data.expect("data")["session_id"]
        .as_str()
        .expect("id")
        .to_owned();
    let bob = f
        .call_as(
            "bob",
            "session_exec",
            json!({"session_id": id, "command": "id"}),
        )
        .await;
    assert!(
        message(&bob).starts_with("session_unknown:"),
        "{}",
        message(&bob)
    );
    let list = f.call_as("bob", "session_list", json!({})).await;
    assert_eq!(list.data.expect("data")["sessions"], json!([]));
    let list = f.call_as("alice", "session_list", json!({})).await;
    let rows = list.data.expect("data")["sessions"].clone();
    assert_eq!(rows[0]["session_id"], id.as_str());
    assert_eq!(rows[0]["kind"], "shell");
    // An admin sees and uses every caller's sessions.
    let t = f
        .tools
        .iter()
        .find(|t| t.tool.name.as_str() == "session_exec")
        .expect("tool");
    let mut opts = CallOptions::new("root", true);
    opts.admin = true;
    let r = f
        .engine
        .call(t, json!({"session_id": id, "command": "echo admin"}), opts)
        .await;
    assert_eq!(r.data.expect("data")["stdout"], "admin\n");
}

#[tokio::test]
async fn a_cancelled_call_leaves_its_session_running() {
    let f = std::sync::Arc::new(fixture());
    let id = f.start(json!({})).await;
    let (f2, id2) = (f.clone(), id.clone());
    let call = tokio::spawn(async move {
        f2.ok(
            "session_exec",
            json!({"session_id": id2, "command": "sleep 1; echo finished", "timeout_ms": 10000}),
        )
        .await
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    call.abort();
    assert!(call.await.is_err(), "the call was cancelled");
    let read = f
        .ok(
            "session_read",
            json!({"session_id": id, "cursor": "o0.e0", "until": "finished", "timeout_ms": 5000}),
        )
        .await;
    assert_eq!(read["stdout"], "finished\n", "{read}");
    let r = f.exec(&id, "echo next").await;
    assert_eq!(r["stdout"], "next\n");
}

#[tokio::test]
async fn a_dev_server_is_started_read_later_and_waited_for() {
    let f = fixture();
    let id = f
        .start(json!({
            "command": ["sh", "-c", "echo booting; sleep 0.3; echo 'Listening on 8000'; while sleep 0.1; do echo tick; done"],
            "wait_ms": 5000, "until": "Listening on"
        }))
        .await;
    let read = f
        .ok("session_read", json!({"session_id": id, "cursor": "o0.e0"}))
        .await;
    assert!(
        read["stdout"]
            .as_str()
            .expect("out")
            .starts_with("booting\nListening on 8000\n"),
        "{read}"
    );
    let more = f
        .ok(
            "session_read",
            json!({"session_id": id, "timeout_ms": 2000}),
        )
        .await;
    assert!(
        more["stdout"].as_str().expect("out").starts_with("tick"),
        "{more}"
    );
    let end = f
        .ok("session_end", json!({"session_id": id, "grace_ms": 500}))
        .await;
    assert_eq!(end["status"], "ended");
    assert!(end["stdout_tail"].as_str().expect("tail").contains("tick"));
}

#[tokio::test]
async fn bad_session_arguments_are_explained() {
    let f = fixture();
    let id = f.start(json!({"command": ["cat"]})).await;
    for (args, expect) in [
        (json!({"session_id": id, "command": "ls"}), "not a shell"),
        (json!({"session_id": id}), "exactly one of"),
        (json!({"session_id": id, "keys": ["F13"]}), "unknown key"),
        (
            json!({"session_id": id, "input": "x", "until": "("}),
            "regex",
        ),
    ] {
        let r = f.call_as("test", "session_exec", args.clone()).await;
        assert!(message(&r).contains(expect), "{args}: {}", message(&r));
    }
    let r = f
        .call_as(
            "test",
            "session_read",
            json!({"session_id": id, "cursor": "12"}),
        )
        .await;
    assert!(message(&r).contains("copy it verbatim"), "{}", message(&r));
    let r = f
        .call_as("test", "session_start", json!({"cwd": "../.."}))
        .await;
    assert!(!r.success && message(&r).contains("cwd"), "{}", message(&r));
    let r = f
        .call_as(
            "test",
            "session_start",
            json!({"command": ["no-such-program-xyz"]}),
        )
        .await;
    assert!(message(&r).contains("not found"), "{}", message(&r));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_starts_never_exceed_the_limits() {
    let f = Arc::new(fixture());
    // Twelve starts at once by one caller (limit 8), then twelve by as many callers for the
    // rest of the 32: the limits hold whatever the timing.
    let starts = |callers: Vec<String>| {
        let f = f.clone();
        async move {
            let calls: Vec<_> = callers
                .into_iter()
                .map(|caller| {
                    let f = f.clone();
                    tokio::spawn(async move {
                        f.call_as(
                            &caller,
                            "session_start",
                            json!({"command": ["sleep", "60"]}),
                        )
                        .await
                    })
                })
                .collect();
            let mut ok = 0;
            for c in calls {
                let r = c.await.expect("join");
                if r.success {
                    ok += 1;
                } else {
                    assert!(message(&r).starts_with("session_limit:"), "{}", message(&r));
                }
            }
            ok
        }
    };
    assert_eq!(
        starts(vec!["one".to_owned(); 12]).await,
        8,
        "one caller's limit"
    );
    assert_eq!(f.engine.sessions().count(), 8);
    let many = (0..40).map(|i| format!("c{}", i % 20)).collect();
    assert_eq!(starts(many).await, 24, "the server's limit");
    assert_eq!(f.engine.sessions().count(), 32);
    f.engine
        .sessions()
        .shutdown(Duration::from_millis(500))
        .await;
}

/// A background job that forges the shell's completion records: it reads the nonce and the
/// sequence number of the running command from the shell's memory, and writes a record
/// claiming success in `/forged` through every channel it can find — a marker FIFO named in
/// the shell's memory, and the shell's stdin taken with pidfd_getfd.
const FORGER: &str = r#"import ctypes, os, re, sys, time
shell = int(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
delimiter = re.compile(rb"__TS_([0-9a-f]+)_([0-9]+)")
fifo = re.compile(rb"(/[^'\s]*toolsmith-session-[^/'\s]*/marker)")
sent = 0
end = time.time() + 6
while time.time() < end:
    time.sleep(0.25)
    best, fifos = None, set()
    try:
        with open(f"/proc/{shell}/maps") as maps, open(f"/proc/{shell}/mem", "rb", 0) as mem:
            for line in maps:
                f = line.split()
                if "rw" not in f[1]:
                    continue
                a, b = (int(x, 16) for x in f[0].split("-"))
                try:
                    mem.seek(a)
                    chunk = mem.read(b - a)
                except (OSError, ValueError, OverflowError):
                    continue
                for m in delimiter.finditer(chunk):
                    if best is None or int(m.group(2)) > best[1]:
                        best = (m.group(1).decode(), int(m.group(2)))
                fifos.update(x.decode() for x in fifo.findall(chunk))
    except OSError:
        continue
    if best is None:
        continue
    record = f"{best[0]} {best[1]} 0 /forged\0".encode()
    for path in fifos:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            os.write(fd, record)
            os.close(fd)
            sent += 1
        except OSError:
            pass
    try:
        pidfd = os.pidfd_open(shell)
        fd = libc.syscall(438, pidfd, 0, 0)
        if fd >= 0:
            os.write(fd, record)
            os.close(fd)
            sent += 1
        os.close(pidfd)
    except OSError:
        pass
open("forger.sent.part", "w").write(str(sent))
os.rename("forger.sent.part", "forger.sent")
"#;

/// Finding 7 of the second hardening round: a session's own background job cannot forge the
/// completion of a later command, even knowing the nonce and holding the shell's channel.
#[tokio::test]
async fn a_forged_completion_record_is_not_accepted() {
    // Without a sandbox the forger reaches the shell's channel (pidfd_getfd) and the
    // protocol must hold; sandboxed, it cannot even take the channel (seccomp).
    for (sandbox, reaches) in [("none", true), ("workspace", false)] {
        forge(
            &fixture_with(
                &format!("{{}}, sandbox: {sandbox}"),
                SessionLimits::default(),
            ),
            reaches,
        )
        .await;
    }
}

async fn forge(f: &Fixture, reaches: bool) {
    std::fs::write(f.root().join("forger.py"), FORGER).expect("write");
    let id = f.start(json!({})).await;
    // The system's Python: one from a pyenv shim in the server's PATH is outside what the
    // sandboxed session may run (the forger would never start, and prove nothing).
    let r = f
        .exec(
            &id,
            "/usr/bin/python3 forger.py $$ >/dev/null 2>forger.err &",
        )
        .await;
    assert_eq!(r["exit_code"], 0, "{r}");
    let started = Instant::now();
    let r = f
        .ok(
            "session_exec",
            json!({"session_id": id, "command": "sleep 4; (exit 3)", "timeout_ms": 20000}),
        )
        .await;
    assert_eq!(r["status"], "completed", "{r}");
    assert_eq!(r["exit_code"], 3, "a forged record was taken: {r}");
    assert_ne!(r["cwd"], "/forged", "{r}");
    assert!(started.elapsed() >= Duration::from_secs(4), "{r}");
    // The forger did try (it found the nonce and a channel). It says how often when it ends
    // (about 6 s after it started; later on a busy machine).
    let report = f.root().join("forger.sent");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !report.exists() {
        if Instant::now() > deadline {
            let r = f.exec(&id, "ls -la; cat forger.err; jobs").await;
            panic!("the forger did not finish (reaches {reaches}): {r}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let sent: u32 = std::fs::read_to_string(&report)
        .unwrap_or_default()
        .trim()
        .parse()
        .unwrap_or(0);
    std::fs::remove_file(&report).expect("the report, read");
    assert_eq!(sent > 0, reaches, "the forger sent {sent} records");
    let r = f.exec(&id, "pwd").await;
    assert_eq!(r["exit_code"], 0, "{r}");
    f.ok("session_end", json!({"session_id": id})).await;
}
