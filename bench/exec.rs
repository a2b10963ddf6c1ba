//! Execution benchmarks (SPEC §5.5, §10), each side by side with its baseline in one run.
//! Run with `cargo bench -p toolsmith-exec --bench exec`; figures go to bench/README.md.
//!
//! 1. Gateway overhead: a `true` command tool through the engine vs a bare spawn + wait of
//!    /bin/true — with std's `posix_spawn` path and with the `fork` path that a `pre_exec`
//!    hook would force, from a small and from a large (512 MiB) parent.
//! 2. 1000 concurrent `sleep 1` tool calls: wall time and failures.
//! 3. A Python script tool (JSON in, JSON out) vs `python3 script.py < in.json` run directly
//!    with the same interpreter binary.
//! 4. The warm Python runtime (`BENCH_VENV_PYTHON`).
//! 5. Sessions: `session_exec` of `true` in a warm shell session vs a `true` tool through
//!    the engine, interleaved; then 32 sessions streaming 20 MB each at once, with this
//!    process's resident memory before and after (bounded by the output rings).
//! 6. A soak of the warm runtime (`BENCH_SOAK` calls, default 10 000): mixed scripts 8 at a
//!    time, every answer compared with the same script's cold answer; zygote memory and
//!    anything left running reported.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use toolsmith_core::CompiledTool;
use toolsmith_core::catalog::{self, TextSource};
use toolsmith_exec::{CallOptions, Engine, EngineConfig};

fn tool(yaml: &str) -> CompiledTool {
    let c = catalog::load(
        "c.yaml",
        &TextSource(format!(
            "defaults: {{env_allowlist: [PATH]}}\ntools:\n  - {yaml}"
        )),
    )
    .expect("bench catalog");
    CompiledTool::new(c.tools.into_iter().next().expect("tool"), 1).expect("compiles")
}

struct Stats {
    p50: Duration,
    p99: Duration,
}

fn stats(mut v: Vec<Duration>) -> Stats {
    v.sort();
    Stats {
        p50: v[v.len() / 2],
        p99: v[(v.len() * 99 / 100).min(v.len() - 1)],
    }
}

fn us(d: Duration) -> String {
    format!("{:.0} µs", d.as_secs_f64() * 1e6)
}

fn row(name: &str, s: &Stats) {
    println!("| {name} | {} | {} |", us(s.p50), us(s.p99));
}

fn time(n: usize, mut f: impl FnMut()) -> Stats {
    for _ in 0..n / 10 {
        f();
    }
    stats(
        (0..n)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .collect(),
    )
}

fn bare(fork_path: bool) -> impl FnMut() {
    move || {
        let mut c = Command::new("/bin/true");
        if fork_path {
            // Setting the uid (to our own) makes std use fork+exec, as a pre_exec hook would.
            c.uid(rustix::process::getuid().as_raw());
        }
        let s = c.status().expect("spawn /bin/true");
        assert!(s.success());
    }
}

fn main() {
    let n = env_or("BENCH_N", 2000);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let ws = tempfile::tempdir().expect("tempdir");
    let mut config = EngineConfig::new(ws.path());
    config.runtime_python = None;
    config.use_cgroups = std::env::var("BENCH_NO_CGROUP").is_err();
    if let Some(n) = std::env::var("BENCH_NICE")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        config.tool_niceness = n;
    }
    let engine = Arc::new(Engine::new(config).expect("engine"));
    println!("cgroups in use: {}", engine.has_cgroups());

    let only = std::env::var("BENCH_ONLY").unwrap_or_default();
    let skip = |section: &str| !only.is_empty() && only != section;
    // 1. Gateway overhead.
    let t = tool("{name: t, description: d, command: [true]}");
    let through_engine = |engine: &Engine| {
        let r = rt.block_on(engine.call(&t, json!({}), CallOptions::default()));
        assert!(r.success, "{r:?}");
    };
    if !skip("1") {
        println!("\n## 1. a `true` tool, {n} sequential calls");
        println!("| what | p50 | p99 |\n|---|---|---|");
        let spawn_small = time(n, bare(false));
        row("bare posix_spawn + wait of /bin/true", &spawn_small);
        let fork_small = time(n, bare(true));
        row("bare fork + exec + wait (the pre_exec path)", &fork_small);
        let eng = time(n, || through_engine(&engine));
        row(
            "toolsmith engine: pipeline, plan, spawn, limits, cgroup, capture",
            &eng,
        );
        println!(
            "\nengine vs bare posix_spawn: +{} at p50 ({:.2}×), +{} at p99 ({:.2}×)",
            us(eng.p50.saturating_sub(spawn_small.p50)),
            eng.p50.as_secs_f64() / spawn_small.p50.as_secs_f64(),
            us(eng.p99.saturating_sub(spawn_small.p99)),
            eng.p99.as_secs_f64() / spawn_small.p99.as_secs_f64()
        );
        // The same from a large parent: fork copies its page tables, posix_spawn does not.
        let ballast: Vec<u8> = vec![1u8; 512 << 20];
        std::hint::black_box(&ballast);
        let big_spawn = time(n / 4, bare(false));
        let big_fork = time(n / 4, bare(true));
        let big_eng = time(n / 4, || through_engine(&engine));
        println!("\nfrom a parent with 512 MiB resident:");
        println!("| what | p50 | p99 |\n|---|---|---|");
        row("bare posix_spawn + wait", &big_spawn);
        row("bare fork + exec + wait", &big_fork);
        row("toolsmith engine", &big_eng);
        drop(ballast);
    }

    // 2. 1000 concurrent sleep 1.
    if !skip("2") {
        let sleep = Arc::new(tool("{name: s, description: d, command: [sleep, '1']}"));
        let started = Instant::now();
        let failures = rt.block_on(async {
            let calls: Vec<_> = (0..1000)
                .map(|_| {
                    let (e, t) = (engine.clone(), sleep.clone());
                    tokio::spawn(async move { e.call(&t, json!({}), CallOptions::default()).await })
                })
                .collect();
            let mut failures = 0;
            for c in calls {
                if !c.await.map(|r| r.success).unwrap_or(false) {
                    failures += 1;
                }
            }
            failures
        });
        println!(
            "\n## 2. 1000 concurrent `sleep 1` calls: wall {:.2} s, failures {failures}",
            started.elapsed().as_secs_f64()
        );
    }

    if !skip("3") {
        python_section(&rt, &engine, n);
    }
    if !skip("4") {
        warm_section(&rt, n);
    }
    if !skip("5") {
        session_section(&rt, &engine, n);
    }
    if !skip("6") {
        soak_section(&rt);
    }
    if !skip("7") {
        burst_section(&rt);
    }
}

/// A number from the environment variable `name`, else `default`.
fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// An engine in `dir` whose Python script tools run warm by default when `warm` (cgroups
/// unless `BENCH_NO_CGROUP`).
fn python_engine(dir: &std::path::Path, warm: bool) -> Arc<Engine> {
    let mut config = EngineConfig::new(dir);
    config.warm_python = warm;
    config.use_cgroups = std::env::var("BENCH_NO_CGROUP").is_err();
    Arc::new(Engine::new(config).expect("engine"))
}

/// 7. Bursts of concurrent calls of one Python script, more than the pool has zygotes.
fn burst_section(rt: &tokio::runtime::Runtime) {
    let rounds = env_or("BENCH_ROUNDS", 10);
    let ws = tempfile::tempdir().expect("tempdir");
    let engine = |warm: bool| python_engine(ws.path(), warm);
    let t = Arc::new(tool(
        "{name: py, description: d, script: {source: \"import json, sys\\na = json.load(sys.stdin)\\nprint(json.dumps(a['n'] * 2))\"}, parameters: [{name: n, type: integer}]}",
    ));
    println!(
        "\n## 7. bursts of concurrent calls of a JSON script ({rounds} bursts each, a fresh engine per row)"
    );
    println!(
        "| calls at once | engine | call p50 | call p99 | burst p50 | warm calls | zygotes started |\n|---|---|---|---|---|---|---|"
    );
    for at_once in [8usize, 32, 128] {
        for warm in [false, true] {
            let engine = engine(warm);
            if warm {
                let _inside = rt.enter();
                engine.prewarm([&t.tool]);
                while engine.warm_ready() == 0 {
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
            let (mut calls, mut bursts) = (Vec::new(), Vec::new());
            for _ in 0..rounds {
                let started = Instant::now();
                let times = rt.block_on(async {
                    let tasks: Vec<_> = (0..at_once)
                        .map(|i| {
                            let (e, t) = (engine.clone(), t.clone());
                            tokio::spawn(async move {
                                let s = Instant::now();
                                let r = e.call(&t, json!({"n": i}), CallOptions::default()).await;
                                assert_eq!(r.data, Some(json!(i * 2)), "{r:?}");
                                s.elapsed()
                            })
                        })
                        .collect();
                    let mut times = Vec::new();
                    for task in tasks {
                        times.push(task.await.expect("call"));
                    }
                    times
                });
                bursts.push(started.elapsed());
                calls.extend(times);
            }
            let (c, b) = (stats(calls), stats(bursts));
            println!(
                "| {at_once} | {} | {:.1} ms | {:.1} ms | {:.1} ms | {} of {} | {} |",
                if warm { "warm" } else { "cold" },
                c.p50.as_secs_f64() * 1e3,
                c.p99.as_secs_f64() * 1e3,
                b.p50.as_secs_f64() * 1e3,
                engine.warm_calls(),
                at_once * rounds,
                engine.warm_starts()
            );
        }
    }
}

/// The resident memory of process `pid`, from /proc (0 when it is gone).
fn rss_of(pid: i32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |kib| kib / 1024.0)
}

/// 6. Many mixed warm calls, each answer compared with the cold one.
fn soak_section(rt: &tokio::runtime::Runtime) {
    let total = env_or("BENCH_SOAK", 10_000);
    let ws = tempfile::tempdir().expect("tempdir");
    let engine = |warm: bool| python_engine(ws.path(), warm);
    let (cold, warm) = (engine(false), engine(true));
    let scripts = [
        (
            "",
            "import json, sys\\na = json.load(sys.stdin)\\nprint(json.dumps({'n': a['n'] * 2}))",
        ),
        (
            "",
            "import json, sys\\na = json.load(sys.stdin)\\nprint(json.dumps('héllo ✓ ' * a['n'], ensure_ascii=False))",
        ),
        (
            "",
            "import sys\\nprint('partial', file=sys.stderr)\\nsys.exit(3)",
        ),
        ("", "import json\\njson.loads('{')"),
        ("", "import os\\nos._exit(7)"),
        ("", "print('plain text')"),
        (
            "limits: {output_bytes: 10000},",
            "import sys\\nsys.stdout.write('x' * 200000)",
        ),
        (
            "limits: {memory_bytes: 300000000},",
            "b = bytearray(2000000000)",
        ),
        (
            "",
            "import json, subprocess\\nsubprocess.Popen(['sleep', '5'])\\nprint(json.dumps('left one'))",
        ),
        (
            "",
            "import json, threading\\nout = []\\nt = threading.Thread(target=lambda: out.append(42))\\nt.start(); t.join()\\nprint(json.dumps(out))",
        ),
        ("", "x = (\\nprint(1)"),
        (
            "",
            "import json, random, re, datetime\\nprint(json.dumps(len(re.findall('a', 'banana')) + random.randint(0, 0)))",
        ),
    ];
    let tools: Arc<Vec<CompiledTool>> = Arc::new(
        scripts
            .iter()
            .map(|(extra, source)| {
                tool(&format!(
                    "{{name: s, description: d, {extra} parameters: [{{name: n, type: integer}}], script: {{source: \"{source}\"}}}}"
                ))
            })
            .collect(),
    );
    let outcome = |r: &toolsmith_core::ToolResult| {
        json!([
            r.success,
            r.error.as_ref().map(|e| (e.kind, &e.message)),
            r.data,
            r.meta.truncated
        ])
    };
    let expected: Arc<Vec<serde_json::Value>> = Arc::new(
        tools
            .iter()
            .map(|t| outcome(&rt.block_on(cold.call(t, json!({"n": 3}), CallOptions::default()))))
            .collect(),
    );
    let zygote_rss = |engine: &Engine| -> (usize, f64) {
        let pids = engine.contained_processes();
        (pids.len(), pids.into_iter().map(rss_of).sum())
    };
    let gate = Arc::new(tokio::sync::Semaphore::new(8));
    let started = Instant::now();
    let mut early = (0, 0.0);
    let mut per_script: Vec<Vec<Duration>> = vec![Vec::new(); tools.len()];
    let mismatches = rt.block_on(async {
        let mut tasks = Vec::with_capacity(total);
        for i in 0..total {
            let (warm, tools, expected, gate) =
                (warm.clone(), tools.clone(), expected.clone(), gate.clone());
            tasks.push(tokio::spawn(async move {
                let _slot = gate.acquire().await.expect("gate");
                let k = i % tools.len();
                let t = Instant::now();
                let r = warm
                    .call(&tools[k], json!({"n": 3}), CallOptions::default())
                    .await;
                let took = t.elapsed();
                let differs = outcome(&r) != expected[k];
                if differs && std::env::var("BENCH_SOAK_SHOW").is_ok() {
                    eprintln!("call {i}: warm {}\n  cold {}", outcome(&r), expected[k]);
                }
                (k, differs, took)
            }));
        }
        let mut mismatches = 0;
        for (i, t) in tasks.into_iter().enumerate() {
            let (k, differs, took) = t.await.expect("join");
            mismatches += usize::from(differs);
            per_script[k].push(took);
            if i == total / 10 {
                early = zygote_rss(&warm);
            }
        }
        mismatches
    });
    let wall = started.elapsed();
    std::thread::sleep(Duration::from_millis(300));
    let late = zygote_rss(&warm);
    println!(
        "\n## 6. soak: {total} mixed warm calls, 8 at a time, in {:.1} s ({:.0} calls/s)\n\
         answers unlike the cold run: {mismatches}; ran warm: {}; zygotes started: {}, alive at the end: {}\n\
         processes in the cgroups (the zygotes, nothing else expected): {} after 10% of the calls ({:.0} MiB resident), {} at the end ({:.0} MiB)",
        wall.as_secs_f64(),
        total as f64 / wall.as_secs_f64(),
        warm.warm_calls(),
        warm.warm_starts(),
        warm.warm_runtimes(),
        early.0,
        early.1,
        late.0,
        late.1,
    );
    println!("\n| script (8 calls in flight on 2 cores) | p50 | p99 |\n|---|---|---|");
    for ((_, source), times) in scripts.iter().zip(per_script) {
        let first = source.split("\\n").last().unwrap_or_default();
        row(
            &format!("`{}`", first.chars().take(60).collect::<String>()),
            &stats(times),
        );
    }
}

/// This process's resident memory, from /proc.
fn rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |kib| kib / 1024.0)
}

fn session_section(rt: &tokio::runtime::Runtime, engine: &Arc<Engine>, n: usize) {
    let start = tool("{name: session_start, builtin: session_start}");
    let exec = Arc::new(tool("{name: session_exec, builtin: session_exec}"));
    let end = tool("{name: session_end, builtin: session_end}");
    let truth = tool("{name: t, description: d, command: [true]}");
    // An admin may use every caller's sessions; each caller may start 8.
    let opts = || CallOptions {
        admin: true,
        ..CallOptions::new("bench", true)
    };
    let begin = |caller: usize| {
        let r = rt.block_on(engine.call(
            &start,
            json!({}),
            CallOptions::new(format!("bench-{caller}"), true),
        ));
        r.data.expect("session started")["session_id"]
            .as_str()
            .expect("id")
            .to_owned()
    };
    let id = begin(0);
    let (mut spawned, mut in_session) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n + n / 10 {
        let t = Instant::now();
        let r = rt.block_on(engine.call(&truth, json!({}), CallOptions::default()));
        let a = t.elapsed();
        assert!(r.success, "{r:?}");
        let t = Instant::now();
        let r =
            rt.block_on(engine.call(&exec, json!({"session_id": id, "command": "true"}), opts()));
        let b = t.elapsed();
        assert_eq!(r.data.expect("data")["status"], "completed");
        if i >= n / 10 {
            spawned.push(a);
            in_session.push(b);
        }
    }
    let (spawned, in_session) = (stats(spawned), stats(in_session));
    println!("\n## 5. sessions: `true`, {n} calls each, interleaved");
    println!("| what | p50 | p99 |\n|---|---|---|");
    row(
        "a `true` command tool through the engine (a fresh process)",
        &spawned,
    );
    row("session_exec `true` in a warm shell session", &in_session);
    println!(
        "\nsession_exec vs a fresh spawn: {:.2}× at p50, {:.2}× at p99",
        in_session.p50.as_secs_f64() / spawned.p50.as_secs_f64(),
        in_session.p99.as_secs_f64() / spawned.p99.as_secs_f64()
    );
    let end_it = |id: &str| {
        rt.block_on(engine.call(&end, json!({"session_id": id, "grace_ms": 200}), opts()));
    };
    end_it(&id);

    let ids: Vec<String> = (0..32).map(|i| begin(i / 8)).collect();
    let before = rss_mib();
    let started = Instant::now();
    let streamed = rt.block_on(async {
        let calls: Vec<_> = ids
            .iter()
            .map(|id| {
                let (e, t, id) = (engine.clone(), exec.clone(), id.clone());
                tokio::spawn(async move {
                    let args = json!({"session_id": id, "timeout_ms": 30000, "max_bytes": 1024,
                        "command": "head -c 20000000 /dev/zero | tr '\\0' a"});
                    let opts = CallOptions {
                        admin: true,
                        ..CallOptions::new("bench", true)
                    };
                    e.call(&t, args, opts).await
                })
            })
            .collect();
        let mut completed = 0;
        for c in calls {
            let r = c.await.expect("joined");
            if r.data.is_some_and(|d| d["status"] == "completed") {
                completed += 1;
            }
        }
        completed
    });
    let after = rss_mib();
    println!(
        "\n32 sessions streaming 20 MB each at once: {streamed}/32 completed in {:.2} s; \
         resident memory {before:.0} MiB before, {after:.0} MiB after (rings: 2 × 1 MiB per session = 64 MiB at most)",
        started.elapsed().as_secs_f64()
    );
    for id in &ids {
        end_it(id);
    }
}

/// A Python script with `source` fed `input` on stdin, run directly by `python`.
fn direct_run(python: &str, source: &str, input: &str) -> impl FnMut() + use<> {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("script.py");
    std::fs::write(&path, source).expect("write script");
    let (python, input) = (python.to_owned(), input.to_owned());
    move || {
        let _keep = &dir;
        let mut child = Command::new(&python)
            .arg(&path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input.as_bytes())
            .expect("write");
        let out = child.wait_with_output().expect("wait");
        assert!(out.status.success());
    }
}

/// 4. The warm runtime against cold runs of the same scripts in the same virtual environment.
fn warm_section(rt: &tokio::runtime::Runtime, n: usize) {
    let venv = std::env::var("BENCH_VENV_PYTHON").ok().or_else(|| {
        toolsmith_exec::runtime::Runtime::default_location()
            .python()
            .filter(|p| p.exists())
            .map(|p| p.display().to_string())
    });
    let Some(venv) = venv else {
        println!(
            "\n## 4. warm runtime: skipped (set BENCH_VENV_PYTHON to a venv's python with requests, or run `toolsmith runtime setup`)"
        );
        return;
    };
    let ws = tempfile::tempdir().expect("tempdir");
    let mut config = EngineConfig::new(ws.path());
    config.runtime_python = Some(venv.clone().into());
    config.use_cgroups = std::env::var("BENCH_NO_CGROUP").is_err();
    // The same without spares (each call's child forked when the call comes): the baseline
    // of what forking ahead saves.
    let mut unspared = config.clone();
    unspared.warm_spares = false;
    let engine = Engine::new(config).expect("engine");
    let unspared = Engine::new(unspared).expect("engine");
    let sum = "import json, sys\nargs = json.load(sys.stdin)\nprint(json.dumps({'sum': sum(args['numbers'])}))\n";
    let get = "import json, sys\nimport requests\nargs = json.load(sys.stdin)\nprint(json.dumps({'sum': sum(args['numbers']), 'requests': requests.__version__}))\n";
    let script = |source: &str, warm: bool| {
        tool(&format!(
            "{{name: py, description: d, script: {{warm: {warm}, source: {}}}, parameters: [{{name: numbers, type: array, items: number}}]}}",
            serde_json::to_string(source).expect("json")
        ))
    };
    let input = json!({"numbers": [1, 2, 3.5]});
    let through = |t: CompiledTool| warm_call(rt, &engine, t, input.clone());
    let m = (n / 10).max(100);
    let text = input.to_string();
    type Variant<'a> = (&'static str, Box<dyn FnMut() + 'a>);
    let mut variants: Vec<Variant> = vec![
        (
            "baseline: venv `python script.py` directly (JSON script)",
            Box::new(direct_run(&venv, sum, &text)),
        ),
        (
            "toolsmith, cold (`python -I`, per-call cgroup)",
            Box::new(through(script(sum, false))),
        ),
        ("**toolsmith, warm**", Box::new(through(script(sum, true)))),
        (
            "toolsmith, warm, without spares (each child forked when its call comes)",
            Box::new(warm_call(rt, &unspared, script(sum, true), input.clone())),
        ),
        (
            "venv `python script.py` directly (script importing requests)",
            Box::new(direct_run(&venv, get, &text)),
        ),
        (
            "**toolsmith, warm, script importing requests**",
            Box::new(through(script(get, true))),
        ),
    ];
    for (_, f) in variants.iter_mut() {
        f();
    }
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); variants.len()];
    for _ in 0..m {
        for (i, (_, f)) in variants.iter_mut().enumerate() {
            let t = Instant::now();
            f();
            times[i].push(t.elapsed());
        }
    }
    println!("\n## 4. the warm runtime ({venv}), {m} calls of each, interleaved");
    println!("| what | p50 | p99 |\n|---|---|---|");
    let stats: Vec<Stats> = times.into_iter().map(stats).collect();
    for ((name, _), s) in variants.iter().zip(&stats) {
        row(name, s);
    }
    println!(
        "\nwarm vs cold venv run: {:.3}× at p50; warm requests script vs its cold run: {:.3}× ({:.0}× faster)",
        stats[2].p50.as_secs_f64() / stats[0].p50.as_secs_f64(),
        stats[5].p50.as_secs_f64() / stats[4].p50.as_secs_f64(),
        stats[4].p50.as_secs_f64() / stats[5].p50.as_secs_f64()
    );
    println!(
        "warm with spares vs without: {:.3}× at p50 ({} saved)",
        stats[2].p50.as_secs_f64() / stats[3].p50.as_secs_f64(),
        us(stats[3].p50.saturating_sub(stats[2].p50))
    );
}

/// One call of `t` on `engine` with `input`, checked (its sum is 6.5).
fn warm_call<'a>(
    rt: &'a tokio::runtime::Runtime,
    engine: &'a Engine,
    t: CompiledTool,
    input: serde_json::Value,
) -> impl FnMut() + 'a {
    move || {
        let r = rt.block_on(engine.call(&t, input.clone(), CallOptions::default()));
        assert_eq!(
            r.data.as_ref().map(|d| &d["sum"]),
            Some(&json!(6.5)),
            "{r:?}"
        );
    }
}

/// 3. A Python script tool vs the same script run directly.
fn python_section(rt: &tokio::runtime::Runtime, engine: &Engine, n: usize) {
    let source = "import json, sys\nargs = json.load(sys.stdin)\nprint(json.dumps({'sum': sum(args['numbers'])}))\n";
    let allow = std::env::var("BENCH_ALLOW").unwrap_or_else(|_| "PATH".into());
    let script = tool(&format!(
        "{{name: py, description: d, env_allowlist: [{allow}], script: {{warm: false, source: {}}}, parameters: [{{name: numbers, type: array, items: number}}]}}",
        serde_json::to_string(source).expect("json")
    ));
    let input = json!({"numbers": [1, 2, 3.5]}).to_string();
    let real_python = String::from_utf8(
        Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .expect("python3")
            .stdout,
    )
    .expect("utf-8")
    .trim()
    .to_owned();
    let m = (n / 20).max(30);
    println!("\n## 3. a Python script tool, {m} calls of each, interleaved");
    println!("| what | p50 | p99 |\n|---|---|---|");
    let (mut run_direct, mut run_shim) = (
        direct_run(&real_python, source, &input),
        direct_run("python3", source, &input),
    );
    let mut run_engine = || {
        let r = rt.block_on(engine.call(
            &script,
            json!({"numbers": [1, 2, 3.5]}),
            CallOptions::default(),
        ));
        assert_eq!(r.data, Some(json!({"sum": 6.5})), "{r:?}");
    };
    let (mut d, mut s, mut e) = (Vec::new(), Vec::new(), Vec::new());
    run_engine();
    for _ in 0..m {
        for (f, out) in [
            (&mut run_direct as &mut dyn FnMut(), &mut d),
            (&mut run_shim, &mut s),
            (&mut run_engine, &mut e),
        ] {
            let t = Instant::now();
            f();
            out.push(t.elapsed());
        }
    }
    let (py_direct, py_shim, py_engine) = (stats(d), stats(s), stats(e));
    row(
        &format!("python3 script.py < in.json, directly ({real_python})"),
        &py_direct,
    );
    row(
        "python3 script.py < in.json through PATH (a pyenv shim here)",
        &py_shim,
    );
    row("toolsmith script tool", &py_engine);
    println!(
        "\nscript tool vs direct: {:.2}× at p50",
        py_engine.p50.as_secs_f64() / py_direct.p50.as_secs_f64()
    );
}
