//! The execution engine with real processes: every fault of SPEC §5.5 is a test.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolsmith_core::catalog;
use toolsmith_core::{CompiledTool, ErrorKind, ToolResult};
use toolsmith_exec::{CallOptions, Engine, EngineConfig};

mod common;
use common::{Text, processes_with, wait_until_gone};

/// One tool from YAML (a mapping, without the leading `- `).
fn tool(yaml: &str) -> CompiledTool {
    let text = format!(
        "defaults: {{env_allowlist: [PATH]}}\ntools:\n  - {}",
        yaml.trim().replace('\n', "\n    ")
    );
    let c = catalog::load("c.yaml", &Text(text)).unwrap_or_else(|e| panic!("{e}"));
    CompiledTool::new(c.tools.into_iter().next().expect("one tool"), 1).expect("compiles")
}

fn engine_in(dir: &Path) -> Engine {
    warm_engine_in(dir, false)
}

/// An engine that runs every Python script tool in the warm runtime when `warm`.
fn warm_engine_in(dir: &Path, warm: bool) -> Engine {
    let mut config = EngineConfig::new(dir);
    config.runtime_python = None;
    config.warm_python = warm;
    Engine::new(config).expect("engine")
}

/// A cold and a warm fixture: script tests run on both.
fn both() -> [Fixture; 2] {
    [false, true].map(|warm| {
        let dir = tempfile::tempdir().expect("tempdir");
        let engine = warm_engine_in(dir.path(), warm);
        Fixture { dir, engine }
    })
}

struct Fixture {
    dir: tempfile::TempDir,
    engine: Engine,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = engine_in(dir.path());
    Fixture { dir, engine }
}

impl Fixture {
    async fn call(&self, t: &CompiledTool, args: Value) -> ToolResult {
        self.engine
            .call(t, args, CallOptions::new("test", true))
            .await
    }
}

/// A failed result's message (empty for a success).
fn error_message(r: &ToolResult) -> String {
    r.error
        .as_ref()
        .map(|e| e.message.clone())
        .unwrap_or_default()
}

fn kind(r: &ToolResult) -> Option<ErrorKind> {
    r.error.as_ref().map(|e| e.kind)
}

#[tokio::test]
async fn a_command_runs_with_its_argv_and_stdin() {
    let f = fixture();
    let t = tool(
        "{name: t, description: d, command: [sh, -c, 'cat; echo \" $0 $1\"', x], parameters: [{name: input, inject_as: stdin}, {name: word}]}",
    );
    let r = f
        .call(&t, json!({"input": "from stdin", "word": "$(rm -rf /)"}))
        .await;
    assert!(r.success, "{r:?}");
    let data = r.data.expect("data");
    assert_eq!(
        data["stdout"], "from stdin x $(rm -rf /)\n",
        "arguments are never interpreted by a shell"
    );
    assert_eq!(data["exit_code"], 0);
    assert_eq!(r.meta.stdout_bytes, Some(25));
}

#[tokio::test]
async fn a_hung_tool_times_out_and_its_whole_group_dies() {
    let f = fixture();
    let marker = format!("TS_MARK=hang{}", std::process::id());
    let t = tool(&format!(
        "{{name: t, description: d, timeout_ms: 500, env: {{TS_MARK: hang{}}}, command: [sh, -c, 'echo started; sleep 30 & sleep 30 & sleep 30']}}",
        std::process::id()
    ));
    let started = Instant::now();
    let r = f.call(&t, json!({})).await;
    assert_eq!(kind(&r), Some(ErrorKind::Timeout), "{r:?}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    let out = r.error.and_then(|e| e.output).expect("partial output");
    assert_eq!(out["stdout"], "started\n", "the partial output is kept");
    assert_eq!(
        wait_until_gone(&marker).await,
        Vec::<u32>::new(),
        "no process of the group survives"
    );
}

#[tokio::test]
async fn background_grandchildren_are_killed_when_the_tool_exits() {
    let f = fixture();
    let id = std::process::id();
    let t = tool(&format!(
        "{{name: t, description: d, env: {{TS_MARK: bg{id}}}, command: [sh, -c, '(sleep 30 &) ; sleep 30 > /dev/null 2>&1 & echo done']}}"
    ));
    let r = f.call(&t, json!({})).await;
    assert!(r.success, "{r:?}");
    assert_eq!(r.data.expect("data")["stdout"], "done\n");
    assert_eq!(
        wait_until_gone(&format!("TS_MARK=bg{id}")).await,
        Vec::<u32>::new()
    );
}

#[tokio::test]
async fn cancelling_a_call_kills_its_processes() {
    let f = Arc::new(fixture());
    let id = std::process::id();
    let t = Arc::new(tool(&format!(
        "{{name: t, description: d, env: {{TS_MARK: cancel{id}}}, command: [sh, -c, 'sleep 30 & sleep 30']}}"
    )));
    let (f2, t2) = (f.clone(), t.clone());
    let call = tokio::spawn(async move { f2.call(&t2, json!({})).await });
    let marker = format!("TS_MARK=cancel{id}");
    for _ in 0..100 {
        if processes_with(&marker).len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(processes_with(&marker).len() >= 2, "the tool started");
    call.abort();
    let _ = call.await;
    assert_eq!(
        wait_until_gone(&marker).await,
        Vec::<u32>::new(),
        "the caller went away: the group is gone"
    );
}

#[tokio::test]
async fn output_is_capped_keeping_head_and_tail() {
    let f = fixture();
    let t = tool(
        "{name: t, description: d, limits: {output_bytes: 1000}, command: [sh, -c, 'echo BEGIN; head -c 5000000 /dev/zero | tr \"\\\\0\" x; echo; echo END']}",
    );
    let r = f.call(&t, json!({})).await;
    assert!(r.success, "{r:?}");
    assert_eq!(r.meta.truncated, Some(true));
    assert_eq!(r.meta.stdout_bytes, Some(6 + 5_000_000 + 1 + 4));
    let out = r.data.expect("data")["stdout"]
        .as_str()
        .expect("text")
        .to_owned();
    assert!(out.starts_with("BEGIN\nxxx"), "{}", &out[..20]);
    assert!(out.ends_with("xxx\nEND\n"), "{}", &out[out.len() - 20..]);
    assert!(out.contains("bytes omitted]"));
    assert!(out.len() < 1100, "{} bytes kept", out.len());
}

#[tokio::test]
async fn binary_output_is_kept_lossily_and_flagged() {
    let f = fixture();
    let t = tool("{name: t, description: d, command: [printf, '\\377\\376ok']}");
    let r = f.call(&t, json!({})).await;
    assert!(r.success, "{r:?}");
    assert_eq!(r.meta.lossy, Some(true));
    assert_eq!(r.data.expect("data")["stdout"], "\u{FFFD}\u{FFFD}ok");
}

#[tokio::test]
async fn missing_programs_and_failing_commands() {
    let f = fixture();
    let r = f
        .call(
            &tool("{name: t, description: d, command: [no-such-program-ts]}"),
            json!({}),
        )
        .await;
    assert_eq!(kind(&r), Some(ErrorKind::SpawnFailed));
    let msg = r.error.expect("error").message;
    assert!(
        msg.contains("program \"no-such-program-ts\" not found in the tool's PATH="),
        "{msg}"
    );
    let r = f
        .call(
            &tool("{name: t, description: d, command: [nope-ts], env: {PATH: /opt/x:/opt/y}}"),
            json!({}),
        )
        .await;
    let msg = r.error.expect("error").message;
    assert!(
        msg.contains("not found in the tool's PATH=/opt/x:/opt/y"),
        "the PATH searched, not the server's: {msg}"
    );

    let r = f
        .call(
            &tool(
                "{name: t, description: d, command: [sh, -c, 'echo out; echo oops >&2; exit 3']}",
            ),
            json!({}),
        )
        .await;
    assert_eq!(kind(&r), Some(ErrorKind::ExitStatus));
    assert_eq!(r.meta.exit_code, Some(3));
    let e = r.error.expect("error");
    assert_eq!(e.message, "tool `t` exited with status 3; stderr: oops");
    assert_eq!(e.output.expect("output")["stdout"], "out\n");
}

#[tokio::test]
async fn the_environment_is_only_the_allowlist() {
    // Cargo runs tests with CARGO_* variables set: they are in the gateway's environment and
    // not in the allowlist, so none may reach the tool.
    let gateway: Vec<String> = std::env::vars()
        .map(|(k, _)| k)
        .filter(|k| k.starts_with("CARGO"))
        .collect();
    assert!(!gateway.is_empty(), "cargo sets CARGO_* for tests");
    let f = fixture();
    let t = tool(
        "{name: t, description: d, env: {FIXED: yes}, command: [env], parameters: [{name: level, type: integer, inject_as: env}]}",
    );
    let r = f.call(&t, json!({"level": "3"})).await;
    let out = r.data.expect("data")["stdout"]
        .as_str()
        .expect("text")
        .to_owned();
    let mut names: Vec<&str> = out.lines().filter_map(|l| l.split('=').next()).collect();
    names.sort();
    assert_eq!(names, ["FIXED", "LEVEL", "PATH"], "{out}");
    assert!(out.contains("LEVEL=3\n") && out.contains("FIXED=yes\n"));
}

#[tokio::test]
async fn every_call_gets_a_fresh_working_folder_removed_afterwards() {
    let f = fixture();
    let t = tool("{name: t, description: d, command: [sh, -c, 'pwd; touch here']}");
    let a = f.call(&t, json!({})).await.data.expect("data")["stdout"]
        .as_str()
        .expect("text")
        .trim()
        .to_owned();
    let b = f.call(&t, json!({})).await.data.expect("data")["stdout"]
        .as_str()
        .expect("text")
        .trim()
        .to_owned();
    assert_ne!(a, b);
    assert!(a.contains("toolsmith-call-"), "{a}");
    assert!(!Path::new(&a).exists(), "{a} was removed");
    // A folder left untouched may serve a later call — empty and private, as new.
    let look = tool("{name: t, description: d, command: [sh, -c, 'pwd; ls -A; stat -c %a .']}");
    let mut seen = Vec::new();
    for _ in 0..3 {
        let out = f.call(&look, json!({})).await.data.expect("data")["stdout"]
            .as_str()
            .expect("text")
            .to_owned();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines.len(),
            2,
            "only the folder and its mode, no files: {out}"
        );
        assert_eq!(lines[1], "700", "{out}");
        seen.push(lines[0].to_owned());
    }
    if f.engine.has_cgroups() {
        assert_eq!(seen[0], seen[2], "an untouched folder is reused");
    }
    std::fs::create_dir(f.dir.path().join("sub")).expect("mkdir");
    let t = tool("{name: t, description: d, working_dir: sub, command: [pwd]}");
    let r = f.call(&t, json!({})).await;
    let expected = f.dir.path().canonicalize().expect("canonical").join("sub");
    assert_eq!(
        r.data.expect("data")["stdout"],
        format!("{}\n", expected.display())
    );
}

#[tokio::test]
async fn scripts_get_json_in_and_must_print_json() {
    for f in both() {
        scripts_in(&f).await;
    }
}

async fn scripts_in(f: &Fixture) {
    let ok = tool(
        "{name: s, description: d, script: {source: 'import json,sys; a=json.load(sys.stdin); print(json.dumps({\"twice\": a[\"n\"]*2, \"cfg\": a[\"config\"][\"k\"]}))'}, config_schema: [{name: k, default: v}], parameters: [{name: n, type: integer}]}",
    );
    let r = f.call(&ok, json!({"n": "21"})).await;
    assert!(r.success, "{r:?}");
    assert_eq!(r.data, Some(json!({"twice": 42, "cfg": "v"})));

    let bad = tool("{name: s, description: d, script: {source: 'print(\"not json at all\")'}}");
    let r = f.call(&bad, json!({})).await;
    assert_eq!(kind(&r), Some(ErrorKind::BadOutput));
    assert!(
        r.error
            .expect("error")
            .message
            .contains("it printed: \"not json at all\\n\"")
    );

    let fails = tool(
        "{name: s, description: d, script: {source: 'import sys; sys.stderr.write(\"line1\\nTraceback: boom\\n\"); sys.exit(2)'}}",
    );
    let r = f.call(&fails, json!({})).await;
    assert_eq!(kind(&r), Some(ErrorKind::ExitStatus));
    assert_eq!(
        r.error.expect("error").message,
        "tool `s` exited with status 2; stderr: line1\nTraceback: boom"
    );

    let node_like = tool("{name: s, description: d, script: {interpreter: sh, source: 'cat'}}");
    let r = f.call(&node_like, json!({})).await;
    assert_eq!(
        r.data,
        Some(json!({})),
        "any interpreter; the JSON on stdin came back"
    );

    let missing =
        tool("{name: s, description: d, script: {interpreter: no-such-interp, source: x}}");
    let r = f.call(&missing, json!({})).await;
    assert_eq!(kind(&r), Some(ErrorKind::SpawnFailed));
}

#[tokio::test]
async fn dangerous_tools_need_confirmation_and_disabled_tools_do_not_run() {
    let f = fixture();
    let t = tool(
        "{name: t, description: d, danger: dangerous, command: [touch, made], working_dir: .}",
    );
    let r = f
        .engine
        .call(&t, json!({}), CallOptions::new("test", false))
        .await;
    assert_eq!(kind(&r), Some(ErrorKind::NeedsConfirmation));
    assert!(!f.dir.path().join("made").exists(), "nothing ran");
    let r = f.call(&t, json!({})).await;
    assert!(r.success, "{r:?}");
    assert!(f.dir.path().join("made").exists());
    let off = tool("{name: t, description: d, enabled: false, command: [true]}");
    assert_eq!(
        kind(&f.call(&off, json!({})).await),
        Some(ErrorKind::Disabled)
    );
}

#[tokio::test]
async fn option_injection_is_refused_before_anything_runs() {
    let f = fixture();
    let t = tool(
        "{name: t, description: d, command: [touch], working_dir: ., parameters: [{name: file}]}",
    );
    let r = f.call(&t, json!({"file": "--help"})).await;
    assert_eq!(kind(&r), Some(ErrorKind::InvalidArguments));
    assert!(r.meta.exit_code.is_none(), "no process ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_short_calls_all_succeed() {
    let f = Arc::new(fixture());
    let t = Arc::new(tool(
        "{name: t, description: d, command: [echo], parameters: [{name: n, type: integer}]}",
    ));
    let calls: Vec<_> = (0..1000)
        .map(|i| {
            let (f, t) = (f.clone(), t.clone());
            tokio::spawn(async move { f.call(&t, json!({"n": i})).await })
        })
        .collect();
    let mut ok = 0;
    for (i, c) in calls.into_iter().enumerate() {
        let r = c.await.expect("joined");
        assert!(r.success, "call {i}: {:?}", r.error);
        assert_eq!(r.data.expect("data")["stdout"], format!("{i}\n"));
        ok += 1;
    }
    assert_eq!(ok, 1000);
}

#[tokio::test]
async fn the_queue_is_bounded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = EngineConfig::new(dir.path());
    config.queue_timeout = Duration::from_millis(200);
    let engine = Arc::new(Engine::new(config).expect("engine"));
    let t = Arc::new(tool(
        "{name: slow, description: d, max_concurrency: 1, command: [sleep, '1']}",
    ));
    let (e2, t2) = (engine.clone(), t.clone());
    let first = tokio::spawn(async move { e2.call(&t2, json!({}), CallOptions::default()).await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let second = engine.call(&t, json!({}), CallOptions::default()).await;
    assert_eq!(kind(&second), Some(ErrorKind::Timeout));
    assert_eq!(
        second.error.expect("error").message,
        "tool `slow` waited 200 ms for a free slot (at most 1024 calls at once, 1 of this tool); try again later"
    );
    assert!(first.await.expect("joined").success);
}

#[tokio::test]
async fn a_memory_bomb_fails_inside_the_tool() {
    let t = tool(
        "{name: t, description: d, limits: {memory_bytes: 268435456}, script: {source: 'x = bytearray(2 * 1024 ** 3); print(\"{}\")'}}",
    );
    for f in both() {
        let r = f.call(&t, json!({})).await;
        assert_eq!(kind(&r), Some(ErrorKind::ExitStatus), "{r:?}");
        assert!(r.error.expect("error").message.contains("MemoryError"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_bomb_is_contained() {
    let f = fixture();
    let id = std::process::id();
    let marker = format!("TS_MARK=bomb{id}");
    // A real bomb only where a pids cgroup can cap it; elsewhere a bounded tree of forks,
    // to check the group kill without endangering the machine.
    let script = if f.engine.has_cgroups() {
        "b() { b | b & }; b; sleep 2"
    } else {
        "for i in 1 2 3 4 5 6 7 8; do sleep 30 & done; sleep 2"
    };
    let t = tool(&format!(
        "{{name: t, description: d, timeout_ms: 3000, env: {{TS_MARK: bomb{id}}}, limits: {{processes: 50}}, command: [sh, -c, '{script}']}}"
    ));
    // Watch the bomb's processes while it runs.
    let watching = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let (w, m) = (watching.clone(), marker.clone());
    let peak = tokio::task::spawn_blocking(move || {
        let mut peak = 0;
        while w.load(std::sync::atomic::Ordering::Relaxed) {
            peak = peak.max(processes_with(&m).len());
            std::thread::sleep(Duration::from_millis(20));
        }
        peak
    });
    let started = Instant::now();
    let r = f.call(&t, json!({})).await;
    watching.store(false, std::sync::atomic::Ordering::Relaxed);
    let peak = peak.await.expect("joined");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        wait_until_gone(&marker).await,
        Vec::<u32>::new(),
        "every process of the bomb is gone"
    );
    if f.engine.has_cgroups() {
        // The cap bound: forks were refused (the shell says so), and never more than 50 ran.
        let stderr = r.data.as_ref().map(|d| d["stderr"].clone()).or_else(|| {
            r.error
                .as_ref()
                .and_then(|e| e.output.as_ref())
                .map(|o| o["stderr"].clone())
        });
        let stderr = stderr
            .and_then(|s| s.as_str().map(str::to_owned))
            .unwrap_or_default();
        assert!(stderr.contains("Cannot fork"), "{r:?}");
        assert!(peak <= 50, "peak {peak} processes");
    } else {
        // Without a pids cgroup the process cap cannot bind (RLIMIT_NPROC counts the whole
        // user and root ignores it): the README documents this gap. The deadline and the
        // group kill still end the bomb, as checked above.
        eprintln!("no pids cgroup here: peak {peak} processes, ended by the group kill");
    }
    // The machine kept working: processes still start.
    let ok = f
        .call(
            &tool("{name: t, description: d, command: [true]}"),
            json!({}),
        )
        .await;
    assert!(ok.success);
}

#[tokio::test]
async fn file_builtins_are_confined_to_the_workspace() {
    let f = fixture();
    let ws = f.dir.path();
    std::fs::write(ws.join("inside.txt"), "one\ntwo\nthree\n").expect("write");
    let outside = tempfile::tempdir().expect("tempdir");
    std::fs::write(outside.path().join("secret.txt"), "secret").expect("write");
    std::os::unix::fs::symlink(outside.path(), ws.join("escape_dir")).expect("symlink");
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), ws.join("escape_file"))
        .expect("symlink");
    let read = tool("{name: r, builtin: read_file}");
    let write = tool("{name: w, builtin: write_file}");
    let list = tool("{name: l, builtin: list_dir}");
    let glob = tool("{name: g, builtin: glob}");
    let secret = outside.path().join("secret.txt").display().to_string();
    let cases: Vec<(&CompiledTool, Value, &str)> = vec![
        (&read, json!({"path": "../x"}), "rule: no parent references"),
        (
            &read,
            json!({"path": secret}),
            "rule: absolute paths must be inside the workspace",
        ),
        (
            &read,
            json!({"path": "escape_file"}),
            "rule: symlinks may not leave the workspace",
        ),
        (
            &read,
            json!({"path": "escape_dir/secret.txt"}),
            "rule: symlinks may not leave the workspace",
        ),
        (
            &write,
            json!({"path": "../x", "content": "x"}),
            "rule: no parent references",
        ),
        (
            &write,
            json!({"path": "escape_dir/new.txt", "content": "x"}),
            "rule: symlinks may not leave the workspace",
        ),
        (
            &write,
            json!({"path": "escape_file", "content": "x"}),
            "rule: symlinks may not leave the workspace",
        ),
        (
            &list,
            json!({"path": "escape_dir"}),
            "rule: symlinks may not leave the workspace",
        ),
        (
            &list,
            json!({"path": "/"}),
            "rule: absolute paths must be inside the workspace",
        ),
        (
            &glob,
            json!({"pattern": "*", "base": "escape_dir"}),
            "rule: symlinks may not leave the workspace",
        ),
        (
            &glob,
            json!({"pattern": "*", "base": "a/../.."}),
            "rule: no parent references",
        ),
    ];
    for (t, args, rule) in cases {
        let r = f.call(t, args.clone()).await;
        let msg = r.error.map(|e| e.message).unwrap_or_default();
        assert!(msg.contains(rule), "{} {args}: {msg}", t.tool.name);
    }
    assert_eq!(
        std::fs::read_to_string(outside.path().join("secret.txt")).expect("read"),
        "secret",
        "nothing outside changed"
    );
    assert!(!outside.path().join("new.txt").exists());

    let r = f
        .call(
            &read,
            json!({"path": "inside.txt", "offset": 2, "limit": 1}),
        )
        .await;
    assert_eq!(r.data.expect("data")["content"], "two\n");
    let abs = ws
        .canonicalize()
        .expect("canonical")
        .join("inside.txt")
        .display()
        .to_string();
    assert!(
        f.call(&read, json!({"path": abs})).await.success,
        "absolute paths inside are fine"
    );
    let r = f
        .call(
            &write,
            json!({"path": "new/deep/file.txt", "content": "hi"}),
        )
        .await;
    assert_eq!(r.data.expect("data")["created"], true);
    assert_eq!(
        std::fs::read_to_string(ws.join("new/deep/file.txt")).expect("read"),
        "hi"
    );
}

#[tokio::test]
async fn glob_respects_gitignore_and_list_dir_describes_entries() {
    let f = fixture();
    let ws = f.dir.path();
    std::fs::create_dir_all(ws.join("src/deep")).expect("mkdir");
    std::fs::create_dir_all(ws.join("target")).expect("mkdir");
    for p in ["src/a.rs", "src/deep/b.rs", "src/c.txt", "target/gen.rs"] {
        std::fs::write(ws.join(p), "x").expect("write");
    }
    std::fs::write(ws.join(".gitignore"), "target/\n").expect("write");
    let glob = tool("{name: g, builtin: glob}");
    let r = f.call(&glob, json!({"pattern": "**/*.rs"})).await;
    assert_eq!(
        r.data.expect("data")["paths"],
        json!(["src/a.rs", "src/deep/b.rs"])
    );
    let r = f
        .call(&glob, json!({"pattern": "*.rs", "base": "src"}))
        .await;
    assert_eq!(
        r.data.expect("data")["paths"],
        json!(["src/a.rs"]),
        "`*` does not cross folders"
    );
    let list = tool("{name: l, builtin: list_dir}");
    let r = f.call(&list, json!({"path": "src"})).await;
    assert_eq!(
        r.data.expect("data")["entries"],
        json!([
            {"name": "a.rs", "kind": "file", "size": 1},
            {"name": "c.txt", "kind": "file", "size": 1},
            {"name": "deep", "kind": "dir"},
        ])
    );
}

#[tokio::test]
async fn http_request_talks_to_a_local_server() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let (mut sock, _) = listener.accept().await.expect("accept");
        let mut buf = vec![0u8; 4096];
        let n = sock.read(&mut buf).await.expect("read");
        let request = String::from_utf8_lossy(&buf[..n]).to_string();
        let body = format!(
            "{{\"saw_header\": {}}}",
            request.to_ascii_lowercase().contains("x-test: yes")
        );
        let reply = format!(
            "HTTP/1.1 201 Created\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        sock.write_all(reply.as_bytes()).await.expect("write");
    });
    let f = fixture();
    let t = tool("{name: h, builtin: http_request}");
    let r = f.call(&t, json!({"url": format!("http://{addr}/x"), "method": "POST", "headers": {"X-Test": "yes"}, "body": "hi"})).await;
    assert!(r.success, "{r:?}");
    let data = r.data.expect("data");
    assert_eq!(data["status"], 201);
    assert_eq!(data["body"], "{\"saw_header\": true}");
    let r = f.call(&t, json!({"url": "file:///etc/passwd"})).await;
    assert_eq!(r.error.map(|e| e.kind), Some(ErrorKind::InvalidArguments));
    // The engine's one HTTP client refuses metadata addresses for the built-in too.
    let r = f
        .call(
            &t,
            json!({"url": "http://169.254.169.254/latest/meta-data"}),
        )
        .await;
    let e = r.error.expect("refused");
    assert_eq!(e.kind, ErrorKind::Network);
    assert!(e.message.contains("metadata"), "{}", e.message);
}

#[tokio::test]
async fn write_file_never_follows_a_dangling_symlink_out() {
    let f = fixture();
    let ws = f.dir.path();
    let outside = tempfile::tempdir().expect("tempdir");
    std::os::unix::fs::symlink(outside.path().join("new"), ws.join("abs")).expect("symlink");
    std::os::unix::fs::symlink("../../outside-new", ws.join("rel")).expect("symlink");
    std::fs::create_dir(ws.join("sub")).expect("mkdir");
    std::os::unix::fs::symlink(outside.path(), ws.join("sub/dir")).expect("symlink");
    let write = tool("{name: w, builtin: write_file}");
    for path in ["abs", "rel", "sub/dir/new", "sub/dir/deeper/new"] {
        for append in [false, true] {
            let r = f
                .call(
                    &write,
                    json!({"path": path, "content": "x", "append": append}),
                )
                .await;
            let msg = r.error.map(|e| e.message).unwrap_or_default();
            assert!(
                msg.contains("rule: symlinks may not leave the workspace"),
                "{path}: {msg}"
            );
        }
    }
    assert_eq!(
        std::fs::read_dir(outside.path()).expect("list").count(),
        0,
        "nothing was created outside"
    );
    // A symlink that stays inside is followed.
    std::fs::write(ws.join("real.txt"), "old").expect("write");
    std::os::unix::fs::symlink("real.txt", ws.join("alias")).expect("symlink");
    let r = f
        .call(&write, json!({"path": "alias", "content": "new"}))
        .await;
    assert!(r.success, "{:?}", r.error);
    assert_eq!(
        std::fs::read_to_string(ws.join("real.txt")).expect("read"),
        "new"
    );
    // A hard link would write a file elsewhere: refused.
    std::fs::write(ws.join("linked.txt"), "a").expect("write");
    std::fs::hard_link(ws.join("linked.txt"), ws.join("twin.txt")).expect("link");
    let r = f
        .call(&write, json!({"path": "twin.txt", "content": "b"}))
        .await;
    let msg = r.error.map(|e| e.message).unwrap_or_default();
    assert!(msg.contains("hard links"), "{msg}");
    assert_eq!(
        std::fs::read_to_string(ws.join("linked.txt")).expect("read"),
        "a"
    );
}

#[tokio::test]
async fn file_builtins_refuse_what_is_not_a_regular_file_without_blocking() {
    let f = fixture();
    let ws = f.dir.path();
    let made = std::process::Command::new("mkfifo")
        .arg(ws.join("pipe"))
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let read = tool("{name: r, builtin: read_file, timeout_ms: 60000}");
    let write = tool("{name: w, builtin: write_file, timeout_ms: 60000}");
    // Many more than the blocking pool has threads: none may hang.
    let calls = (0..600).map(|_| f.call(&read, json!({"path": "pipe"})));
    for r in futures_join_all(calls).await {
        let msg = r.error.map(|e| e.message).unwrap_or_default();
        assert!(msg.contains("is a FIFO"), "{msg}");
    }
    let r = f
        .call(&write, json!({"path": "pipe", "content": "x"}))
        .await;
    let msg = r.error.map(|e| e.message).unwrap_or_default();
    assert!(
        msg.contains("FIFO") || msg.contains("not a regular file"),
        "{msg}"
    );
    let r = f.call(&read, json!({"path": "/dev/null"})).await;
    assert!(!r.success, "outside the workspace anyway");
}

/// Runs futures at once and collects their outputs in order.
async fn futures_join_all<F: std::future::Future>(
    futures: impl Iterator<Item = F>,
) -> Vec<F::Output> {
    let mut set = Vec::new();
    for f in futures {
        set.push(f);
    }
    let mut out = Vec::with_capacity(set.len());
    let mut pinned: Vec<_> = set.into_iter().map(Box::pin).collect();
    for f in pinned.iter_mut() {
        out.push(f.await);
    }
    out
}

#[tokio::test]
async fn a_read_past_its_deadline_times_out() {
    let f = fixture();
    let ws = f.dir.path();
    // 20 GB of holes: no newline, nothing on disk, minutes of reading.
    let file = std::fs::File::create(ws.join("sparse")).expect("create");
    file.set_len(20 << 30).expect("set_len");
    let read = tool("{name: r, builtin: read_file, timeout_ms: 300}");
    let r = f
        .call(&read, json!({"path": "sparse", "offset": 1000000}))
        .await;
    assert_eq!(kind(&r), Some(ErrorKind::Timeout), "{:?}", r.error);
    // (That the blocking thread then stops, rather than reading on for minutes, is checked
    // by the built-ins' own tests, where the thread can be watched.)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_swapped_for_a_symlink_mid_call_leads_nowhere() {
    let f = fixture();
    let ws = f.dir.path().to_path_buf();
    let outside = tempfile::tempdir().expect("tempdir");
    std::fs::write(outside.path().join("f.txt"), "OUTSIDE").expect("write");
    std::fs::write(outside.path().join("secret_name.txt"), "x").expect("write");
    std::fs::create_dir(ws.join("d")).expect("mkdir");
    std::fs::write(ws.join("d/f.txt"), "inside").expect("write");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (ws, out, stop) = (ws.clone(), outside.path().to_path_buf(), stop.clone());
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = std::fs::rename(ws.join("d"), ws.join("d_real"));
                let _ = std::os::unix::fs::symlink(&out, ws.join("d"));
                std::thread::yield_now();
                let _ = std::fs::remove_file(ws.join("d"));
                let _ = std::fs::rename(ws.join("d_real"), ws.join("d"));
                swaps += 1;
            }
            swaps
        })
    };
    let read = tool("{name: r, builtin: read_file}");
    let list = tool("{name: l, builtin: list_dir}");
    let glob = tool("{name: g, builtin: glob}");
    let write = tool("{name: w, builtin: write_file}");
    let started = std::time::Instant::now();
    let (mut calls, mut ok) = (0u64, 0u64);
    while started.elapsed() < std::time::Duration::from_secs(3) {
        for (t, args) in [
            (&read, json!({"path": "d/f.txt"})),
            (&list, json!({"path": "d"})),
            (&glob, json!({"pattern": "**/*.txt"})),
            (&write, json!({"path": "d/written.txt", "content": "w"})),
        ] {
            let r = f.call(t, args).await;
            calls += 1;
            let text = r.data.as_ref().map(Value::to_string).unwrap_or_default();
            assert!(
                !text.contains("OUTSIDE") && !text.contains("secret_name"),
                "{}: read outside the workspace: {text}",
                t.tool.name
            );
            ok += u64::from(r.success);
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let swaps = swapper.join().expect("swapper");
    assert!(
        !outside.path().join("written.txt").exists(),
        "wrote outside"
    );
    assert!(
        swaps > 100 && ok > 0,
        "the race ran: {swaps} swaps, {ok}/{calls} calls succeeded"
    );
}

#[tokio::test]
async fn arguments_and_variables_up_to_the_kernel_limit_spawn() {
    let f = fixture();
    let most = toolsmith_core::plan::MAX_ARG_BYTES - 1;
    let t = tool(
        "{name: t, description: d, command: [printf, '%s'], parameters: [{name: a}, {name: e, inject_as: env, required: false}]}",
    );
    let r = f.call(&t, json!({"a": "x".repeat(most)})).await;
    assert!(r.success, "{:?}", r.error);
    assert_eq!(
        r.data.expect("data")["stdout"].as_str().map(str::len),
        Some(most)
    );
    let r = f.call(&t, json!({"a": "x".repeat(most + 1)})).await;
    assert_eq!(
        kind(&r),
        Some(ErrorKind::InvalidArguments),
        "refused before spawning"
    );
    let r = f
        .call(&t, json!({"a": "", "e": "y".repeat(most - 2)}))
        .await;
    assert!(r.success, "E=... at the limit spawns: {:?}", r.error);
}

/// A warm script tool printing what a call can see of its process and interpreter.
fn observer(extra: &str) -> CompiledTool {
    tool(&format!(
        "{{name: w, description: d, {extra} script: {{warm: true, source: \"import json, os, random, sys\\nimport json as j\\na = json.load(sys.stdin)\\nprev = getattr(j, 'leak', None)\\nj.leak = 'yes'\\nprint(json.dumps({{'prev': prev, 'r': random.random(), 'cwd': os.getcwd(), 'env': dict(os.environ), 'ppid': os.getppid(), 'pgid': os.getpgid(0), 'pid': os.getpid(), 'argv': sys.argv, 'name': __name__, 'fds': sorted(int(f) for f in os.listdir('/proc/self/fd')), 'limit': __import__('resource').getrlimit(__import__('resource').RLIMIT_FSIZE)[0]}}))\"}}}}"
    ))
}

#[tokio::test]
async fn warm_calls_see_nothing_of_each_other() {
    let f = fixture();
    let t = observer("env: {TOOL_VAR: x}, limits: {file_size_bytes: 1048576},");
    let mut seen = Vec::new();
    for _ in 0..3 {
        let r = f.call(&t, json!({})).await;
        assert!(r.success, "{r:?}");
        seen.push(r.data.expect("data"));
    }
    assert!(f.engine.warm_runtimes() >= 1, "the calls ran warm");
    for d in &seen {
        assert_eq!(
            d["prev"],
            Value::Null,
            "module state of one call is gone: {d}"
        );
        assert_eq!(d["name"], "__main__");
        assert_eq!(d["pgid"], d["pid"], "a process group of its own");
        assert!(
            d["cwd"]
                .as_str()
                .is_some_and(|c| c.contains("toolsmith-call-")),
            "{d}"
        );
        assert_eq!(
            d["fds"],
            json!([0, 1, 2, 3]),
            "only stdio (and the listing's own fd)"
        );
        assert_eq!(d["limit"], 1_048_576, "rlimits apply");
        let env = d["env"].as_object().expect("env");
        assert_eq!(env.get("TOOL_VAR"), Some(&json!("x")));
        let mut keys: Vec<&str> = env.keys().map(String::as_str).collect();
        keys.sort_unstable();
        // (LC_CTYPE: Python's own coercion of the C locale, as in a cold start.)
        assert_eq!(
            keys,
            ["LC_CTYPE", "PATH", "TOOL_VAR"],
            "exactly the tool's environment"
        );
    }
    // The first call's child is the zygote's; the confinement's next ones are its confined
    // runtime's (a copy of the zygote inside the confinement's domain), one resident.
    assert_eq!(
        seen[1]["ppid"], seen[2]["ppid"],
        "forked by one resident runtime"
    );
    assert_ne!(seen[0]["r"], seen[1]["r"], "random is reseeded per call");
    // The same tool cold sees the same environment.
    let cold = f
        .call(&tool("{name: w, description: d, env: {TOOL_VAR: x}, script: {source: \"import json, os; print(json.dumps(sorted(os.environ)))\"}}"), json!({}))
        .await;
    assert_eq!(cold.data, Some(json!(["LC_CTYPE", "PATH", "TOOL_VAR"])));
}

#[tokio::test]
async fn warm_failures_look_like_cold_ones() {
    let scripts = [
        (
            "import os; os._exit(3)",
            ErrorKind::ExitStatus,
            "exited with status 3",
        ),
        (
            "import sys; sys.exit('bye')",
            ErrorKind::ExitStatus,
            "exited with status 1; stderr: bye",
        ),
        (
            "raise ValueError('nope')",
            ErrorKind::ExitStatus,
            "ValueError: nope",
        ),
        (
            "import ctypes; ctypes.string_at(0)",
            ErrorKind::ExitStatus,
            "killed by signal 11",
        ),
        ("x = (", ErrorKind::ExitStatus, "SyntaxError"),
        ("print('half", ErrorKind::ExitStatus, "SyntaxError"),
    ];
    for warm in [false, true] {
        let dir = tempfile::tempdir().expect("tempdir");
        let f = Fixture {
            engine: warm_engine_in(dir.path(), warm),
            dir,
        };
        for (source, kind_, text) in scripts {
            let t = tool(&format!(
                "{{name: s, description: d, script: {{source: {}}}}}",
                serde_json::to_string(source).expect("json")
            ));
            let r = f.call(&t, json!({})).await;
            assert_eq!(kind(&r), Some(kind_), "warm {warm}: {source}: {r:?}");
            let message = r.error.expect("error").message;
            assert!(message.contains(text), "warm {warm}: {source}: {message}");
        }
        // And the runtime still serves.
        let r = f.call(&observer(""), json!({})).await;
        assert!(r.success, "warm {warm}: {r:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_warm_script_is_killed_with_everything_it_started() {
    let f = fixture();
    let id = std::process::id();
    let t = tool(&format!(
        "{{name: h, description: d, timeout_ms: 700, env: {{TS_MARK: warmhang{id}}}, script: {{warm: true, source: \"import os, subprocess, time\\nsubprocess.Popen(['sleep', '30'])\\nsubprocess.Popen(['sleep', '30'], start_new_session=True)\\nprint('started', flush=True)\\ntime.sleep(30)\"}}}}"
    ));
    let started = Instant::now();
    let r = f.call(&t, json!({})).await;
    assert_eq!(kind(&r), Some(ErrorKind::Timeout), "{r:?}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let marker = format!("TS_MARK=warmhang{id}");
    let deadline = Instant::now() + Duration::from_secs(3);
    while !processes_with(&marker).is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    if f.engine.has_cgroups() {
        assert_eq!(
            processes_with(&marker),
            Vec::<u32>::new(),
            "nothing left, setsid included"
        );
    }
    // The runtime serves the next call.
    let r = f.call(&observer(""), json!({})).await;
    assert!(r.success, "{r:?}");
}

/// Sends `sig` (as `kill` spells it) to process `pid`.
fn signal(sig: &str, pid: i64) {
    let status = std::process::Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .expect("kill");
    assert!(status.success(), "kill {sig} {pid}");
}

#[tokio::test]
async fn a_killed_zygote_is_replaced() {
    let f = fixture();
    let t = observer("");
    let first = f.call(&t, json!({})).await.data.expect("data");
    let zygote = first["ppid"].as_i64().expect("ppid");
    signal("-9", zygote);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let r = f.call(&t, json!({})).await;
    assert!(r.success, "{r:?}");
    assert_ne!(r.data.expect("data")["ppid"], zygote, "a new zygote");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_concurrent_warm_calls_all_succeed() {
    let f = Arc::new(fixture());
    let t = Arc::new(tool(
        "{name: s, description: d, parameters: [{name: n, type: integer}], script: {warm: true, source: \"import json, sys\\na = json.load(sys.stdin)\\nprint(json.dumps({'n': a['n'] * 2}))\"}}",
    ));
    let calls: Vec<_> = (0..200)
        .map(|n| {
            let (f, t) = (f.clone(), t.clone());
            tokio::spawn(async move { (n, f.call(&t, json!({"n": n})).await) })
        })
        .collect();
    for c in calls {
        let (n, r) = c.await.expect("join");
        assert_eq!(r.data, Some(json!({"n": n * 2})), "{r:?}");
    }
    assert!(f.engine.warm_runtimes() >= 1);
    // More calls than zygotes: the others queue for one coming back rather than all paying a
    // cold start at once (they would run cold only after waiting about a cold start's time).
    let warm = f.engine.warm_calls();
    eprintln!(
        "warm calls: {warm} of 200, zygotes started: {}",
        f.engine.warm_starts()
    );
    assert!(warm >= 150, "only {warm} of 200 ran warm");
}

#[tokio::test]
async fn a_call_finding_every_zygote_busy_with_long_calls_runs_cold_without_waiting_for_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = warm_engine_in(dir.path(), true);
    let f = Arc::new(Fixture { dir, engine });
    let long = Arc::new(tool(
        "{name: l, description: d, timeout_ms: 60000, script: {source: \"import json, time\\ntime.sleep(8)\\nprint(json.dumps('done'))\"}}",
    ));
    let longs: Vec<_> = (0..8)
        .map(|_| {
            let (f, t) = (f.clone(), long.clone());
            tokio::spawn(async move { f.call(&t, json!({})).await })
        })
        .collect();
    // Every zygote the pool may hold is busy with one of them.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while f.engine.warm_runtimes() < 8 || f.engine.warm_ready() > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "8 zygotes busy: {} alive, {} idle",
            f.engine.warm_runtimes(),
            f.engine.warm_ready()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let r = f.call(&parent_printer(""), json!({})).await;
    assert_eq!(
        r.data,
        Some(Value::from(std::process::id())),
        "it ran cold: {r:?}"
    );
    assert!(
        longs.iter().all(|l| !l.is_finished()),
        "it did not wait for the long calls to end"
    );
    for l in longs {
        assert_eq!(l.await.expect("join").data, Some(json!("done")));
    }
    assert_eq!(f.engine.warm_calls(), 8);
}

#[tokio::test]
async fn a_full_pool_of_one_interpreter_makes_room_for_another() {
    // Two interpreters by path (the same program under two names: two runtimes here).
    let b = "/usr/bin/python3";
    let a = std::fs::canonicalize(b).expect("python3 is installed");
    let a = a.to_str().expect("utf-8");
    assert_ne!(a, b, "/usr/bin/python3 is a link to a versioned python");
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = Arc::new(warm_engine_in(dir.path(), true));
    let on = |interpreter: &str, source: &str| {
        Arc::new(tool(&format!(
            "{{name: t, description: d, script: {{interpreter: {interpreter}, source: {}}}}}",
            serde_json::to_string(source).expect("json")
        )))
    };
    // Eight calls at once on A leave the pool full of A's zygotes, idle.
    let a_tool = on(
        a,
        "import json, os, time\ntime.sleep(0.5)\nprint(json.dumps(os.getppid()))",
    );
    let calls: Vec<_> = (0..8)
        .map(|_| {
            let (e, t) = (engine.clone(), a_tool.clone());
            tokio::spawn(async move { e.call(&t, json!({}), CallOptions::new("t", true)).await })
        })
        .collect();
    for c in calls {
        let r = c.await.expect("join");
        assert_ne!(
            r.data,
            Some(Value::from(std::process::id())),
            "ran warm: {r:?}"
        );
    }
    assert_eq!((engine.warm_runtimes(), engine.warm_ready()), (8, 8));
    // A call on B, no call waiting for A: one of A's idle zygotes makes room, and B runs warm.
    let r = engine
        .call(
            &on(b, "import json, os\nprint(json.dumps(os.getppid()))"),
            json!({}),
            CallOptions::new("t", true),
        )
        .await;
    assert_ne!(
        r.data,
        Some(Value::from(std::process::id())),
        "ran warm: {r:?}"
    );
    assert_eq!(engine.warm_calls(), 9);
    assert_eq!(engine.warm_runtimes(), 8);
}

#[tokio::test]
async fn a_mixed_burst_of_two_interpreters_does_not_thrash_the_pool() {
    let b = "/usr/bin/python3";
    let a = std::fs::canonicalize(b).expect("python3 is installed");
    let a = a.to_str().expect("utf-8");
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = Arc::new(warm_engine_in(dir.path(), true));
    let on = |interpreter: &str| {
        Arc::new(tool(&format!(
            "{{name: t, description: d, parameters: [{{name: n, type: integer}}], script: {{interpreter: {interpreter}, source: \"import json, sys\\nprint(json.dumps(json.load(sys.stdin)['n'] * 2))\"}}}}"
        )))
    };
    let (ta, tb) = (on(a), on(b));
    let calls: Vec<_> = (0..96)
        .map(|n| {
            let (e, t) = (
                engine.clone(),
                if n % 2 == 0 { ta.clone() } else { tb.clone() },
            );
            tokio::spawn(async move {
                (
                    n,
                    e.call(&t, json!({"n": n}), CallOptions::new("t", true))
                        .await,
                )
            })
        })
        .collect();
    for c in calls {
        let (n, r) = c.await.expect("join");
        assert_eq!(r.data, Some(json!(n * 2)), "{r:?}");
    }
    let (warm, starts) = (engine.warm_calls(), engine.warm_starts());
    eprintln!("mixed: {warm} warm of 96, {starts} zygotes started");
    assert!(warm >= 72, "only {warm} of 96 ran warm");
    assert!(
        starts <= 12,
        "{starts} zygotes started for 96 calls on 2 interpreters"
    );
}

/// A script printing its parent's pid: the test process when it ran cold, a zygote when warm.
fn parent_printer(declared: &str) -> CompiledTool {
    tool(&format!(
        "{{name: p, description: d, script: {{{declared} source: \"import json, os; print(json.dumps(os.getppid()))\"}}}}"
    ))
}

#[tokio::test]
async fn python_scripts_run_warm_unless_they_say_warm_false() {
    let me = Value::from(std::process::id());
    // (engine default, what the tool says, runs warm)
    for (default, declared, warm) in [
        (true, "", true),
        (true, "warm: false,", false),
        (false, "", false),
        (false, "warm: true,", true),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let engine = warm_engine_in(dir.path(), default);
        let r = engine
            .call(
                &parent_printer(declared),
                json!({}),
                CallOptions::new("t", true),
            )
            .await;
        let parent = r.data.expect("data");
        assert_eq!(
            parent != me,
            warm,
            "default {default}, `{declared}`: parent {parent}"
        );
        assert_eq!(engine.warm_runtimes(), usize::from(warm));
    }
    // Not Python: always cold, `warm: false` accepted, `warm: true` a catalog error.
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = warm_engine_in(dir.path(), true);
    let sh = tool(
        "{name: s, description: d, script: {interpreter: bash, warm: false, source: 'echo $PPID'}}",
    );
    let r = engine
        .call(&sh, json!({}), CallOptions::new("t", true))
        .await;
    assert_eq!(r.data, Some(me));
    let e = catalog::load(
        "c.yaml",
        &Text("tools:\n  - {name: s, description: d, script: {interpreter: bash, warm: true, source: 'true'}}".into()),
    )
    .expect_err("refused");
    assert!(e.to_string().contains("warm runtime is for Python"), "{e}");
}

/// The state letter of `/proc/<pid>/stat` ('Z' for a zombie), or `None` once it is gone.
fn process_state(pid: i64) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ")?.1.chars().next()
}

#[tokio::test]
async fn an_idle_zygote_exits_and_the_next_call_starts_another() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = EngineConfig::new(dir.path());
    config.runtime_python = None;
    config.warm_idle = Duration::from_millis(1500);
    let engine = Engine::new(config).expect("engine");
    let t = parent_printer("");
    let call = || engine.call(&t, json!({}), CallOptions::new("t", true));
    let first = call().await.data.expect("data").as_i64().expect("pid");
    assert_eq!(engine.warm_runtimes(), 1);
    assert!(
        process_state(first).is_some_and(|s| s != 'Z'),
        "the zygote {first} is alive after the call"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while process_state(first).is_some_and(|s| s != 'Z') && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        process_state(first).is_none_or(|s| s == 'Z'),
        "the idle zygote {first} exited"
    );
    let second = call().await.data.expect("data").as_i64().expect("pid");
    assert_ne!(second, first, "a new zygote");
    assert_eq!(process_state(first), None, "the old one is reaped");
    assert_eq!(engine.warm_runtimes(), 1, "the exited one is let go");
}

/// A zygote that exits after its idle time is reaped without another call: no `<defunct>`
/// process stays behind while the server stops calling, and the pool lets it go.
#[tokio::test]
async fn an_idle_zygote_that_exits_is_reaped_without_another_call() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = EngineConfig::new(dir.path());
    config.runtime_python = None;
    config.warm_idle = Duration::from_millis(1000);
    let engine = Engine::new(config).expect("engine");
    let t = parent_printer("");
    let first = engine
        .call(&t, json!({}), CallOptions::new("t", true))
        .await
        .data
        .expect("data")
        .as_i64()
        .expect("pid");
    assert!(
        process_state(first).is_some_and(|s| s != 'Z'),
        "alive after the call"
    );
    // It exits after a second idle, then the pool reaps it within a few seconds.
    let deadline = Instant::now() + Duration::from_secs(60);
    while process_state(first).is_some() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(
        process_state(first),
        None,
        "the exited zygote {first} is still there (a zombie until reaped)"
    );
    assert_eq!(engine.warm_runtimes(), 0, "the pool let it go");
}

/// What a result says, for comparing a warm run with a cold one: success, the error's kind
/// and message, the data, and whether output was cut.
fn outcome(r: &ToolResult) -> Value {
    json!({
        "success": r.success,
        "kind": kind(r),
        "message": r.error.as_ref().map(|e| e.message.clone()),
        "data": r.data,
        "truncated": r.meta.truncated,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_soak_of_mixed_calls_answers_warm_exactly_as_cold() {
    let id = std::process::id();
    let marker = format!("TS_MARK=soak{id}");
    // Every kind of ending a script has, each with the marker its grandchildren inherit.
    let scripts: Vec<(&str, &str, &str)> = vec![
        (
            "ok",
            "",
            "import json, sys\\na = json.load(sys.stdin)\\nprint(json.dumps({'n': a['n'] * 2}))",
        ),
        (
            "unicode",
            "",
            "import json, sys\\na = json.load(sys.stdin)\\nprint(json.dumps({'s': 'héllo ✓ ' + str(a['n'])}, ensure_ascii=False))",
        ),
        (
            "exit3",
            "",
            "import sys\\nprint('partial', file=sys.stderr)\\nsys.exit(3)",
        ),
        ("raise", "", "raise KeyError('missing')"),
        ("os_exit", "", "import os\\nos._exit(7)"),
        ("not_json", "", "print('plain text')"),
        ("nothing", "", "pass"),
        (
            "big",
            "limits: {output_bytes: 10000},",
            "import sys\\nsys.stdout.write('x' * 2000000)",
        ),
        (
            "memory",
            "limits: {memory_bytes: 300000000},",
            "b = bytearray(2000000000)\\nprint(len(b))",
        ),
        (
            "grandchild",
            "",
            "import json, subprocess\\nsubprocess.Popen(['sleep', '20'])\\nprint(json.dumps('left one'))",
        ),
        (
            "setsid",
            "",
            "import json, subprocess\\nsubprocess.Popen(['sleep', '20'], start_new_session=True, stdout=subprocess.DEVNULL)\\nprint(json.dumps('escaped'))",
        ),
        (
            "thread",
            "",
            "import json, threading\\nout = []\\nt = threading.Thread(target=lambda: out.append(41 + 1))\\nt.start(); t.join()\\nprint(json.dumps(out))",
        ),
        (
            "timeout",
            "timeout_ms: 400,",
            "import time\\ntime.sleep(20)",
        ),
        (
            "signal",
            "",
            "import os, signal\\nos.kill(os.getpid(), signal.SIGTERM)",
        ),
        ("syntax", "", "x = (\\nprint(1)"),
        ("nul_byte", "", "print(1)\\0"),
    ];
    let tools: Vec<(&str, CompiledTool)> = scripts
        .iter()
        .map(|(name, extra, source)| {
            (
                *name,
                tool(&format!(
                    "{{name: {name}, description: d, {extra} env: {{TS_MARK: soak{id}}}, parameters: [{{name: n, type: integer, default: 1}}], script: {{source: \"{source}\"}}}}"
                )),
            )
        })
        .collect();
    let [cold, warm] = both();
    let mut expected = Vec::new();
    for (name, t) in &tools {
        let r = cold.call(t, json!({"n": 5})).await;
        expected.push(outcome(&r));
        if *name == "ok" {
            assert_eq!(r.data, Some(json!({"n": 10})), "{r:?}");
        }
    }
    assert_eq!(cold.engine.warm_runtimes(), 0);

    // 20 rounds of every script in turn, 8 calls at a time: as many as zygotes may live, so
    // every call finds one (a call finding all of them busy would run cold).
    let warm = Arc::new(warm);
    let tools = Arc::new(tools);
    let gate = Arc::new(tokio::sync::Semaphore::new(8));
    let rounds = 20;
    let mut calls = Vec::new();
    for i in 0..rounds * tools.len() {
        let k = i % tools.len();
        let (warm, tools, gate) = (warm.clone(), tools.clone(), gate.clone());
        calls.push(tokio::spawn(async move {
            let _slot = gate.acquire().await.expect("gate");
            let r = warm.call(&tools[k].1, json!({"n": 5})).await;
            (k, r)
        }));
    }
    let mut seen = 0;
    for c in calls {
        let (k, r) = c.await.expect("join");
        assert_eq!(
            outcome(&r),
            expected[k],
            "warm {} answered unlike cold",
            tools[k].0
        );
        seen += 1;
    }
    assert_eq!(seen, rounds * tools.len());
    // Every call ran warm but those of the two scripts that do not compile: the zygote hands
    // them back and they run cold, where Python reports them as it always does.
    assert_eq!(
        warm.engine.warm_calls(),
        (seen - 2 * rounds) as u64,
        "every call that could ran warm"
    );
    let zygotes = warm.engine.warm_runtimes();
    assert!((1..=8).contains(&zygotes), "{zygotes} zygotes");
    // No zygote was thrown away: not for a call that left processes behind (they are killed
    // and waited for), nor for any other ending.
    assert_eq!(
        warm.engine.warm_starts(),
        zygotes as u64,
        "zygotes started, against those alive"
    );
    // Nothing a call started is left: no grandchild, `setsid` included, and in the cgroups
    // only the zygotes themselves.
    assert_eq!(wait_until_gone(&marker).await, Vec::<u32>::new());
    // (The zygotes and their confined runtimes, which are copies of them.)
    if warm.engine.has_cgroups() {
        let left = warm.engine.contained_processes();
        assert!(left.len() >= zygotes, "{left:?}");
        for pid in &left {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            assert!(
                String::from_utf8_lossy(&cmdline).contains("toolsmith-zygote"),
                "{pid} is no warm runtime: {}",
                String::from_utf8_lossy(&cmdline)
            );
        }
    }
}

#[tokio::test]
async fn prewarm_starts_the_zygote_the_first_call_then_uses() {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = warm_engine_in(dir.path(), true);
    let (warm, cold, command) = (
        parent_printer(""),
        parent_printer("warm: false,"),
        tool("{name: c, description: d, command: [true]}"),
    );
    // Only the tool that runs warm asks for a zygote; two of them share one interpreter.
    assert_eq!(engine.prewarm([&cold.tool, &command.tool]), 0);
    assert_eq!(engine.prewarm([&warm.tool, &warm.tool, &cold.tool]), 1);
    let deadline = Instant::now() + Duration::from_secs(20);
    while engine.warm_ready() == 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(engine.warm_ready(), 1, "started before any call");
    let r = engine
        .call(&warm, json!({}), CallOptions::new("t", true))
        .await;
    assert_ne!(r.data, Some(Value::from(std::process::id())), "ran warm");
    assert_eq!(
        engine.warm_starts(),
        1,
        "the first call used the prewarmed zygote"
    );
    // With one idle already, prewarming again starts nothing more.
    engine.prewarm([&warm.tool]);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(engine.warm_starts(), 1);
}

#[tokio::test]
async fn a_zygote_is_replaced_when_its_runtime_changes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let venv = dir.path().join("venv");
    let made = std::process::Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv)
        .status()
        .expect("python3 -m venv");
    assert!(made.success());
    let mut config = EngineConfig::new(dir.path());
    config.runtime_python = Some(venv.join("bin/python"));
    let engine = Engine::new(config).expect("engine");
    // Unconfined, so that every call's parent is the zygote itself (a confined tool's later
    // calls come from its confined runtime).
    let t = tool(
        "{name: p, description: d, sandbox: none, script: {source: \"import json, os; print(json.dumps(os.getppid()))\"}}",
    );
    let zygote = || async {
        let r = engine
            .call(&t, json!({}), CallOptions::new("t", true))
            .await;
        r.data.expect("data").as_i64().expect("pid")
    };
    let first = zygote().await;
    // Unchanged (looked at again after a second): the same zygote.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(zygote().await, first);
    // A package installed into the runtime: the next call after the check interval is
    // served by a new zygote, and the old one is gone.
    let site = std::fs::read_dir(venv.join("lib"))
        .expect("lib")
        .flatten()
        .map(|e| e.path().join("site-packages"))
        .find(|p| p.is_dir())
        .expect("site-packages");
    std::fs::write(site.join("newly_installed.py"), "VALUE = 1\n").expect("write");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let second = zygote().await;
    assert_ne!(second, first, "a new zygote after the runtime changed");
    assert_eq!(process_state(first), None, "the old zygote is gone");
    assert_eq!(engine.warm_starts(), 2);
}

#[tokio::test]
async fn a_hung_zygote_is_replaced_and_the_call_still_runs() {
    let f = fixture();
    let t = observer("");
    let first = f.call(&t, json!({})).await.data.expect("data");
    let zygote = first["ppid"].as_i64().expect("ppid");
    // Stopped: it neither forks nor answers, nor dies.
    signal("-STOP", zygote);
    let started = Instant::now();
    let r = f.call(&t, json!({})).await;
    assert!(r.success, "{r:?}");
    assert_ne!(r.data.expect("data")["ppid"], zygote, "a new zygote");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "given up on after the answer timeout: {:?}",
        started.elapsed()
    );
    // The hung one was killed, not left stopped.
    let deadline = Instant::now() + Duration::from_secs(5);
    while process_state(zygote).is_some() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(process_state(zygote), None);
}

/// Finding 5 of the second hardening round: a program named without a path is found on the
/// operator's PATH, never on one a parameter set (here one the catalog let it set).
#[tokio::test]
async fn the_program_is_found_on_the_operators_path_not_a_parameters() {
    use std::os::unix::fs::PermissionsExt;
    let f = fixture();
    let evil = f.dir.path().join("evil");
    std::fs::create_dir(&evil).expect("mkdir");
    let fake = evil.join("printenv");
    std::fs::write(&fake, "#!/bin/sh\necho EVIL\n").expect("write");
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let text = "tools:\n  - {name: t, description: d, command: [printenv, PATH], parameters: [{name: p, inject_as: env, env_name: PATH, allow_dangerous_env: true}]}";
    let c = catalog::load("c.yaml", &Text(text.into())).unwrap_or_else(|e| panic!("{e}"));
    let t = CompiledTool::new(c.tools.into_iter().next().expect("one tool"), 1).expect("compiles");
    let r = f.call(&t, json!({"p": evil.display().to_string()})).await;
    assert!(r.success, "{r:?}");
    assert_eq!(
        r.data.expect("data")["stdout"],
        format!("{}\n", evil.display()),
        "the real printenv ran, with the parameter's PATH as its environment"
    );
}

/// Finding 6 of the second hardening round: what one call leaves on its working folder
/// besides files — an extended attribute, an inode flag — never reaches a later call: the
/// folder is replaced, and a folder made immutable is still removed.
#[tokio::test]
async fn attributes_and_flags_of_a_working_folder_do_not_cross_calls() {
    let f = fixture();
    let python = |name: &str, code: &str| {
        tool(&format!(
            "{{name: {name}, description: d, command: [python3, -c, {code:?}]}}"
        ))
    };
    let mark = python(
        "mark",
        "import os; os.setxattr('.', 'user.left', b'by-a-caller')",
    );
    let look = python(
        "look",
        "import os; print(sorted(os.listxattr('.')), len(os.listdir('.'))); open('f', 'w').write('x'); os.remove('f')",
    );
    // Sandboxed, a tool has no CAP_LINUX_IMMUTABLE: only one running without a sandbox can
    // freeze its folder, and even then the folder goes.
    let freeze = tool("{name: freeze, description: d, sandbox: none, command: [chattr, +i, .]}");
    for round in 0..5 {
        let r = f.call(&mark, json!({})).await;
        assert!(r.success, "{r:?}");
        if rustix::process::geteuid().is_root() {
            let r = f.call(&freeze, json!({})).await;
            assert!(r.success, "{r:?}");
        }
        for _ in 0..3 {
            let r = f.call(&look, json!({})).await;
            assert!(r.success, "round {round}: {r:?}");
            assert_eq!(r.data.expect("data")["stdout"], "[] 0\n", "round {round}");
        }
    }
    // Nothing immutable is left behind in the temporary folder.
    let tmp = std::env::temp_dir();
    let stuck: Vec<_> = std::fs::read_dir(&tmp)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("toolsmith-call-")
        })
        .filter(|e| {
            std::process::Command::new("lsattr")
                .args(["-d"])
                .arg(e.path())
                .output()
                .is_ok_and(|o| {
                    String::from_utf8_lossy(&o.stdout)
                        .split_whitespace()
                        .next()
                        .is_some_and(|f| f.contains('i'))
                })
        })
        .map(|e| e.path())
        .collect();
    assert!(stuck.is_empty(), "immutable folders left: {stuck:?}");
}

/// A warm Python script tool running `source` (a Python program, as written).
fn warm_script(name: &str, extra: &str, source: &str) -> CompiledTool {
    tool(&format!(
        "{{name: {name}, description: d, {extra} script: {{warm: true, source: {source:?}}}}}"
    ))
}

/// Finding 2 of the second hardening round: a warm call can neither read nor write its
/// zygote's memory, nor take its descriptors — as root too (the child gives up
/// CAP_SYS_PTRACE; the zygote is not dumpable).
#[tokio::test]
async fn a_warm_call_cannot_reach_into_its_zygote() {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = warm_engine_in(dir.path(), true);
    let probe = warm_script(
        "probe",
        "",
        r#"import ctypes, json, os
ppid = os.getppid()
out = {"warm": ppid != int(os.environ.get("ENGINE_PID", "0"))}
for mode in ("rb", "r+b"):
    try:
        with open(f"/proc/{ppid}/mem", mode) as f:
            out[mode] = "opened"
    except OSError as e:
        out[mode] = e.errno
libc = ctypes.CDLL(None, use_errno=True)
pidfd = os.pidfd_open(ppid)
got = [libc.syscall(438, pidfd, fd, 0) for fd in range(3, 8)]
out["getfd"] = "got" if any(r >= 0 for r in got) else ctypes.get_errno()
print(json.dumps(out))"#,
    );
    for _ in 0..3 {
        let r = engine
            .call(&probe, json!({}), CallOptions::new("t", true))
            .await;
        let out = r.data.unwrap_or_else(|| panic!("{:?}", r.error));
        assert_eq!(out["warm"], true, "{out}");
        for key in ["rb", "r+b", "getfd"] {
            assert!(
                out[key].as_i64().is_some_and(|e| e == 1 || e == 13),
                "{key}: the zygote was reachable: {out}"
            );
        }
    }
}

/// Finding 3 of the second hardening round: what one warm call received (its environment,
/// with a secret in it) is nowhere in the memory of a later warm call of another tool, and a
/// script walking its frames or the garbage collector finds nothing of the zygote's.
#[tokio::test]
async fn a_warm_call_finds_nothing_of_earlier_calls_in_its_memory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = warm_engine_in(dir.path(), true);
    let nonce = format!("{:x}", std::process::id() as u64 * 7919 + 17);
    let holder = warm_script(
        "holder",
        &format!("env: {{TOKEN: ZZSECRET-{nonce}}},"),
        "import json, os\nprint(json.dumps(len(os.environ['TOKEN'])))",
    );
    // The pattern is split so the scanner's own code does not hold the secret's prefix.
    let scanner = warm_script(
        "scanner",
        "",
        r#"import gc, json, re, sys
pattern = re.compile(rb"ZZSECRE[T]-[0-9a-f]+")
found = 0
with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
    for line in maps:
        fields = line.split()
        if "r" not in fields[1] or (len(fields) > 5 and fields[5] in ("[vvar]", "[vsyscall]")):
            continue
        start, end = (int(x, 16) for x in fields[0].split("-"))
        try:
            mem.seek(start)
            found += len(pattern.findall(mem.read(end - start)))
        except (OSError, ValueError, OverflowError):
            pass
frames, f = [], sys._getframe()
while f is not None:
    frames.append(sorted(k for k in f.f_globals if not k.startswith("__")))
    f = f.f_back
caches = [o for o in gc.get_objects() if isinstance(o, dict)
          and any(isinstance(k, str) and "toolsmith-scripts" in k for k in o)]
print(json.dumps({"found": found, "frames": frames, "caches": len(caches)}))"#,
    );
    for _ in 0..3 {
        let r = engine
            .call(&holder, json!({}), CallOptions::new("t", true))
            .await;
        assert!(r.success, "{r:?}");
    }
    for _ in 0..3 {
        let r = engine
            .call(&scanner, json!({}), CallOptions::new("t", true))
            .await;
        let out = r.data.unwrap_or_else(|| panic!("{:?}", r.error));
        assert_eq!(
            out["found"], 0,
            "an earlier call's secret is in memory: {out}"
        );
        assert_eq!(
            out["caches"], 0,
            "the zygote's script cache is reachable: {out}"
        );
        let frames = out["frames"].to_string();
        for name in ["compiled", "sock", "code_of", "send"] {
            assert!(
                !frames.contains(&format!("\"{name}\"")),
                "{name} reachable: {frames}"
            );
        }
    }
    assert!(engine.warm_calls() >= 6, "the calls ran warm");
}

/// SPEC §13: the default sandbox (`workspace`) keeps ordinary programs working — git with
/// the user's configuration, grep over the workspace, Python from PATH, and a script run by a
/// virtual environment's interpreter that lives outside the workspace, importing what is
/// installed there, Python scripts warm and cold — while every call says what was enforced.
#[tokio::test]
async fn ordinary_programs_work_under_the_default_sandbox() {
    let f = fixture();
    let run = |yaml: &str| tool(yaml);
    let git = |name: &str, args: &str| {
        run(&format!(
            "{{name: {name}, description: d, working_dir: ., env_allowlist: [PATH, HOME], command: [git, {args}]}}"
        ))
    };
    for (name, args) in [
        ("init", "init, -q, repo"),
        (
            "commit",
            "-C, repo, -c, user.email=t@example.com, -c, user.name=t, commit, --allow-empty, -qm, first",
        ),
    ] {
        let r = f.call(&git(name, args), json!({})).await;
        assert!(r.success, "{name}: {r:?}");
    }
    let r = f
        .call(&git("log", "-C, repo, log, --oneline"), json!({}))
        .await;
    assert!(r.success, "{r:?}");
    assert!(
        r.data.expect("data")["stdout"]
            .as_str()
            .unwrap_or("")
            .contains("first")
    );
    let sandbox = r.meta.sandbox.expect("meta.sandbox");
    assert_eq!(sandbox["policy"], "workspace", "{sandbox}");
    assert_eq!(sandbox["filesystem"], "enforced", "{sandbox}");

    std::fs::write(f.dir.path().join("notes.txt"), "needle\n").expect("write");
    let r = f
        .call(
            &run("{name: g, description: d, working_dir: ., command: [grep, -rl, needle, .]}"),
            json!({}),
        )
        .await;
    assert_eq!(r.data.expect("data")["stdout"], "./notes.txt\n");

    let r = f
        .call(&run("{name: p, description: d, command: [python3, -c, 'import json, sqlite3; print(json.dumps(1))']}"), json!({}))
        .await;
    assert!(r.success, "{r:?}");

    // A virtual environment outside the workspace, with a module of its own.
    let venvs = tempfile::tempdir().expect("tempdir");
    let venv = venvs.path().join("env");
    let made = std::process::Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv)
        .status()
        .expect("python3 -m venv");
    assert!(made.success());
    let site = std::process::Command::new(venv.join("bin/python"))
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ])
        .output()
        .expect("site-packages");
    let site = String::from_utf8_lossy(&site.stdout).trim().to_owned();
    std::fs::write(Path::new(&site).join("installed_here.py"), "VALUE = 42\n").expect("module");
    let t = run(&format!(
        "{{name: v, description: d, command: [{}, -c, 'import installed_here; print(installed_here.VALUE)']}}",
        venv.join("bin/python").display()
    ));
    let r = f.call(&t, json!({})).await;
    assert_eq!(r.data.expect("data")["stdout"], "42\n");
    // A script tool whose interpreter is the environment's runs in it, warm and cold.
    for warm in [false, true] {
        let t = run(&format!(
            "{{name: v, description: d, script: {{interpreter: {}, warm: {warm}, source: 'import json, installed_here; print(json.dumps(installed_here.VALUE))'}}}}",
            venv.join("bin/python").display()
        ));
        let r = f.call(&t, json!({})).await;
        assert_eq!(r.data, Some(json!(42)), "warm {warm}: {r:?}");
    }
    // Warm and cold Python scripts read the interpreter's own library.
    for warm in [false, true] {
        let t = run(&format!(
            "{{name: w, description: d, script: {{warm: {warm}, source: 'import json, sqlite3, decimal; print(json.dumps(str(decimal.Decimal(1) / 4)))'}}}}"
        ));
        let r = f.call(&t, json!({})).await;
        assert_eq!(r.data, Some(json!("0.25")), "warm {warm}: {r:?}");
    }
}

/// SPEC §13: a tool the sandbox refused says so, naming the key to change — not only the
/// program's own "Permission denied" — and a program a shell could not run from outside
/// what the policy reads is named too.
#[tokio::test]
async fn a_refusal_by_the_sandbox_names_the_key_to_change() {
    let f = fixture();
    let outside = tempfile::tempdir().expect("tempdir");
    let target = outside.path().join("out.txt");
    let write = tool(&format!(
        "{{name: w, description: d, command: [sh, -c, 'echo x > {}']}}",
        target.display()
    ));
    let r = f.call(&write, json!({})).await;
    assert_eq!(kind(&r), Some(ErrorKind::ExitStatus), "{r:?}");
    let message = error_message(&r);
    assert!(
        message.contains("Permission denied")
            && message.contains("the sandbox (policy workspace)")
            && message.contains("sandbox.filesystem.write"),
        "{message}"
    );
    // A program in a folder the policy cannot read, run by name through the tool's PATH.
    let bin = outside.path().join("bin");
    std::fs::create_dir_all(&bin).expect("mkdir");
    std::fs::copy("/bin/true", bin.join("mytool")).expect("copy");
    let run = tool(&format!(
        "{{name: r, description: d, env: {{PATH: '{}:/usr/bin:/bin'}}, command: [sh, -c, mytool]}}",
        bin.display()
    ));
    let r = f.call(&run, json!({})).await;
    let message = error_message(&r);
    assert!(
        message.contains("sandbox.filesystem.read")
            && message.contains("mytool")
            && message.contains(&format!(
                "add {} (where it is installed)",
                outside.path().display()
            )),
        "{r:?}"
    );
    // Unsandboxed, the same tools run: the refusals above were the sandbox's.
    let open = tool(&format!(
        "{{name: w2, description: d, sandbox: none, command: [sh, -c, 'echo x > {}']}}",
        target.display()
    ));
    assert!(f.call(&open, json!({})).await.success);
}

/// SPEC §13: calls of one tool in one folder (its `working_dir`) have the same confinement,
/// which a cgroup slot's helper keeps between calls — yet two such calls running at once are
/// two domains: one cannot signal the other. Run many times in a row, the kept domain serves
/// each call alike.
#[tokio::test]
async fn concurrent_calls_of_one_tool_are_separate_domains() {
    let f = fixture();
    let t = tool(
        "{name: t, description: d, working_dir: ., parameters: [{name: mode, inject_as: argument}], command: [sh, -c, 'if [ \"$1\" = hold ]; then echo $$ > holder.pid; while [ ! -e stop ]; do sleep 0.05; done; elif kill -0 $(cat holder.pid); then echo REACHED; else echo REFUSED; fi', t]}",
    );
    for _ in 0..5 {
        let r = f.call(&t, json!({"mode": "probe"})).await;
        assert_eq!(
            r.data.expect("data")["stdout"],
            "REFUSED\n",
            "no holder yet"
        );
    }
    let open = tool(
        "{name: o, description: d, working_dir: ., sandbox: none, command: [sh, -c, 'kill -0 $(cat holder.pid) && echo REACHED']}",
    );
    let probe = async {
        let pid = f.dir.path().join("holder.pid");
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::fs::read_to_string(&pid).map_or(true, |p| p.trim().is_empty()) {
            assert!(Instant::now() < deadline, "the holder started");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let sandboxed = f.call(&t, json!({"mode": "probe"})).await;
        let unsandboxed = f.call(&open, json!({})).await;
        std::fs::write(f.dir.path().join("stop"), "").expect("stop");
        (sandboxed, unsandboxed)
    };
    let (held, (sandboxed, unsandboxed)) = tokio::join!(f.call(&t, json!({"mode": "hold"})), probe);
    assert!(held.success, "{held:?}");
    assert_eq!(sandboxed.data.expect("data")["stdout"], "REFUSED\n");
    // Outside any sandbox the same probe reaches it (so the refusal is the sandbox's).
    assert_eq!(
        unsandboxed.data.expect("data")["stdout"],
        "REACHED\n",
        "{:?}",
        unsandboxed.error
    );
}

/// SPEC §13: a kept confinement is never another policy's. With a protected file inside the
/// workspace the static rules are made per call (carved around it), so two tools alike but
/// for their preset — one may write the workspace, one may not — called one after the other
/// (in working folders handed out again) must each get their own rules.
#[tokio::test]
async fn a_kept_confinement_is_never_another_policys() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("registry.db"), "protected").expect("write");
    std::fs::create_dir(dir.path().join("sub")).expect("mkdir");
    let mut config = EngineConfig::new(dir.path());
    config.runtime_python = None;
    config.sandbox.protected = vec![dir.path().join("registry.db")];
    let f = Fixture {
        engine: Engine::new(config).expect("engine"),
        dir,
    };
    let sub = f.dir.path().join("sub");
    let write = |name: &str, preset: &str| {
        tool(&format!(
            "{{name: {name}, description: d, sandbox: {preset}, command: [sh, -c, 'echo x > {}/out-$$ && echo WROTE']}}",
            sub.display()
        ))
    };
    let (rw, ro) = (write("rw", "workspace"), write("ro", "read-only"));
    for _ in 0..5 {
        let r = f.call(&rw, json!({})).await;
        assert!(r.success, "{r:?}");
        let r = f.call(&ro, json!({})).await;
        assert!(!r.success, "a read-only tool wrote the workspace: {r:?}");
    }
}

/// SPEC §5.5: `limits.processes` counts the tool's processes only — the slot's own thread and
/// the sandbox helpers it keeps live in the same pids cgroup and are not the tool's — and
/// stays exact whether the call's confinement is kept already or new.
#[tokio::test]
async fn a_process_limit_counts_the_tools_processes_only() {
    let f = fixture();
    let one = tool("{name: one, description: d, limits: {processes: 1}, command: [\"true\"]}");
    let script = |name: &str, n: u32| {
        tool(&format!(
            "{{name: {name}, description: d, limits: {{processes: {n}}}, command: [sh, -c, 'sleep 0.2 & sleep 0.2 & wait; echo done']}}"
        ))
    };
    let (two, three) = (script("two", 2), script("three", 3));
    // The first call starts the helper that keeps its confinement, the others find it.
    for i in 0..4 {
        let r = f.call(&one, json!({})).await;
        assert!(r.success, "one process is allowed one (call {i}): {r:?}");
    }
    // A shell and two children are three: allowed three, they run; allowed two, the shell
    // cannot start its second child.
    let r = f.call(&three, json!({})).await;
    assert!(r.success, "{r:?}");
    assert_eq!(r.data.expect("data")["stdout"], "done\n");
    let r = f.call(&two, json!({})).await;
    assert_eq!(
        kind(&r),
        Some(ErrorKind::ExitStatus),
        "the shell ran: {r:?}"
    );
    assert!(
        error_message(&r).contains("Cannot fork"),
        "a third process started: {r:?}"
    );
}

/// A warm engine on a workspace holding a folder `sub` (its path as text).
fn warm_engine_with_sub() -> (tempfile::TempDir, Engine, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).expect("mkdir");
    let engine = warm_engine_in(dir.path(), true);
    (dir, engine, sub.display().to_string())
}

/// The warm runtime builds each confinement's Landlock ruleset once and keeps it: two warm
/// tools of one interpreter whose policies differ — one may write the workspace, one may not
/// — called in turn on the same zygote, each get their own; and so on past the number of
/// rulesets a zygote keeps (each call touches its working folder, so every call is a new
/// confinement and the zygote lets go of its rulesets and builds them again).
#[tokio::test]
async fn a_warm_child_restricts_itself_to_its_own_ruleset_only() {
    let (_dir, engine, sub) = warm_engine_with_sub();
    let source = format!(
        r#"import json, os
open("touched", "w").write("x")
try:
    with open({:?} + f"/out-{{os.getpid()}}", "w") as f:
        f.write("x")
    print(json.dumps({{"wrote": True}}))
except PermissionError:
    print(json.dumps({{"wrote": False}}))"#,
        sub
    );
    let (rw, ro) = (
        warm_script("rw", "sandbox: workspace,", &source),
        warm_script("ro", "sandbox: read-only,", &source),
    );
    let starts = engine.warm_starts();
    for i in 0..70 {
        for (t, wrote) in [(&rw, true), (&ro, false)] {
            let r = engine.call(t, json!({}), CallOptions::new("t", true)).await;
            let out = r.data.unwrap_or_else(|| panic!("call {i}: {:?}", r.error));
            assert_eq!(out["wrote"], wrote, "call {i} of {}: {out}", t.tool.name);
        }
    }
    assert_eq!(engine.warm_calls(), 140, "every call ran warm");
    assert_eq!(
        engine.warm_starts() - starts,
        1,
        "one zygote served them all"
    );
}

/// A warm runtime is born under its children's seccomp filter and, for confined children
/// as root, without capabilities: an unconfined (`sandbox: none`) tool of the same
/// interpreter runs in a runtime of its own, keeping what it is allowed, and each runs warm.
#[tokio::test]
async fn confined_and_unconfined_warm_children_run_in_runtimes_of_their_own() {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = warm_engine_in(dir.path(), true);
    let source = r#"import json, socket
caps = [l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff")][0]
try:
    socket.socket(socket.AF_UNIX).close()
    unix = True
except PermissionError:
    unix = False
print(json.dumps({"caps": caps, "unix": unix}))"#;
    let (open, boxed) = (
        warm_script("open", "sandbox: none,", source),
        warm_script("boxed", "", source),
    );
    let root = rustix::process::geteuid().is_root();
    for i in 0..3 {
        let r = engine
            .call(&boxed, json!({}), CallOptions::new("t", true))
            .await;
        let out = r.data.unwrap_or_else(|| panic!("call {i}: {:?}", r.error));
        assert_eq!(out["caps"], "0000000000000000", "{out}");
        assert_eq!(out["unix"], false, "a Unix socket was made: {out}");
        let r = engine
            .call(&open, json!({}), CallOptions::new("t", true))
            .await;
        let out = r.data.unwrap_or_else(|| panic!("call {i}: {:?}", r.error));
        assert_eq!(out["unix"], true, "{out}");
        if root {
            assert_ne!(
                out["caps"], "0000000000000000",
                "root's capabilities went: {out}"
            );
        }
    }
    assert_eq!(engine.warm_calls(), 6, "every call ran warm");
    assert_eq!(engine.warm_starts(), 2, "one runtime for each base");
}

/// A confinement whose warm calls come again gets a confined runtime: a copy of the zygote
/// already inside the confinement's Landlock domain, whose children are born there (so none
/// makes a domain of its own). Each confinement has its own; each still holds its policy;
/// a process limit still counts the tool's processes only (the runtimes are the slot's
/// residents); nothing is left once the engine goes.
#[tokio::test]
async fn a_confinement_called_again_runs_in_a_confined_runtime_of_its_own() {
    let (_dir, engine, sub) = warm_engine_with_sub();
    let source = format!(
        r#"import json, os
try:
    with open({:?} + f"/out-{{os.getpid()}}", "w") as f:
        f.write("x")
    wrote = True
except PermissionError:
    wrote = False
print(json.dumps({{"wrote": wrote, "parent": os.getppid()}}))"#,
        sub
    );
    let (rw, ro) = (
        warm_script("rw", "sandbox: workspace, limits: {processes: 1},", &source),
        warm_script("ro", "sandbox: read-only,", &source),
    );
    let mut parents: [Vec<i64>; 2] = Default::default();
    for i in 0..6 {
        for (k, (t, wrote)) in [(&rw, true), (&ro, false)].into_iter().enumerate() {
            let r = engine.call(t, json!({}), CallOptions::new("t", true)).await;
            let out = r.data.unwrap_or_else(|| panic!("call {i}: {:?}", r.error));
            assert_eq!(out["wrote"], wrote, "call {i} of {}: {out}", t.tool.name);
            parents[k].push(out["parent"].as_i64().expect("parent"));
        }
    }
    assert_eq!(engine.warm_calls(), 12, "every call ran warm");
    assert_eq!(engine.warm_starts(), 1, "one zygote");
    let zygote = parents[0][0];
    assert_eq!(parents[1][0], zygote, "a first call is the zygote's child");
    for (k, p) in parents.iter().enumerate() {
        let confined = p[1];
        assert_ne!(confined, zygote, "tool {k}'s second call: {p:?}");
        assert!(
            p[1..].iter().all(|x| *x == confined),
            "tool {k}'s later calls share one confined runtime: {p:?}"
        );
    }
    assert_ne!(parents[0][1], parents[1][1], "one runtime per confinement");
    let runtime = parents[0][1];
    let status = std::fs::read_to_string(format!("/proc/{runtime}/status")).expect("status");
    assert!(
        status
            .lines()
            .any(|l| l.starts_with("PPid:") && l.ends_with(&zygote.to_string())),
        "the confined runtime is the zygote's child: {status}"
    );
    drop(engine);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::path::Path::new(&format!("/proc/{runtime}")).exists()
        && !std::fs::read_to_string(format!("/proc/{runtime}/status"))
            .unwrap_or_default()
            .contains("State:\tZ")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the confined runtime outlived its engine"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A warm call's child is forked ahead of it (a spare, asked for once the last call's cleanup
/// is done): a call made a while after the last one runs in a process that already existed —
/// here its confined runtime's spare — yet is confined, limited and answers as any fresh
/// child does. A tool's process limit still counts its own processes only.
#[tokio::test]
async fn a_warm_call_runs_in_a_child_forked_before_it() {
    let (_dir, engine, sub) = warm_engine_with_sub();
    let source = format!(
        r#"import json, os, subprocess
ticks = os.sysconf("SC_CLK_TCK")
with open("/proc/self/stat") as f:
    started = int(f.read().rsplit(")", 1)[1].split()[19]) / ticks
try:
    open({:?} + "/x", "w").close()
    wrote = True
except PermissionError:
    wrote = False
try:
    subprocess.run(["true"], check=True)
    spawned = True
except OSError:
    spawned = False
print(json.dumps({{"started": started, "parent": os.getppid(), "wrote": wrote, "spawned": spawned}}))"#,
        sub
    );
    let tool = warm_script(
        "ahead",
        "sandbox: read-only, limits: {processes: 1},",
        &source,
    );
    let uptime = || -> f64 {
        let text = std::fs::read_to_string("/proc/uptime").expect("uptime");
        text.split_whitespace()
            .next()
            .and_then(|s| s.parse().ok())
            .expect("seconds")
    };
    let mut ahead = Vec::new();
    let mut parents = Vec::new();
    for i in 0..4 {
        // Long enough after the last call for its spare to be forked, and for a clock tick
        // (10 ms) to tell "before" from "at".
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        let asked = uptime();
        let r = engine
            .call(&tool, json!({}), CallOptions::new("t", true))
            .await;
        let out = r.data.unwrap_or_else(|| panic!("call {i}: {:?}", r.error));
        assert_eq!(
            out["wrote"], false,
            "call {i} wrote outside its sandbox: {out}"
        );
        assert_eq!(
            out["spawned"], false,
            "call {i} started a second process under a limit of one: {out}"
        );
        let started = out["started"].as_f64().expect("started");
        ahead.push(started < asked - 0.05);
        parents.push(out["parent"].as_i64().expect("parent"));
    }
    assert_eq!(engine.warm_calls(), 4, "every call ran warm");
    // The zygote forks the first call's child; the second goes to the confined runtime
    // started for it, which forks its child too; every later call finds its spare waiting.
    assert_eq!(ahead, [false, false, true, true], "parents {parents:?}");
    assert_ne!(parents[1], parents[0], "{parents:?}");
    assert!(parents[1..].iter().all(|p| *p == parents[1]), "{parents:?}");
}

/// A zygote whose calls all go to a confined runtime still hears from the gateway within its
/// idle time, so it does not exit under a busy confinement (which would throw away the
/// runtime and make the next call wait for a new zygote).
#[tokio::test]
async fn a_zygote_serving_through_a_confined_runtime_stays() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = EngineConfig::new(dir.path());
    config.runtime_python = None;
    config.warm_python = true;
    config.warm_idle = std::time::Duration::from_secs(2);
    let engine = Engine::new(config).expect("engine");
    let t = warm_script("t", "", "import os, json\nprint(json.dumps(os.getppid()))");
    let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let mut parents = Vec::new();
    while std::time::Instant::now() < until {
        let r = engine
            .call(&t, json!({}), CallOptions::new("t", true))
            .await;
        parents.push(r.data.unwrap_or_else(|| panic!("{:?}", r.error)));
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(engine.warm_starts(), 1, "the zygote stayed: {parents:?}");
    assert!(
        parents[1..].windows(2).all(|w| w[0] == w[1]),
        "one confined runtime served them: {parents:?}"
    );
}
