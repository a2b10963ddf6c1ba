//! The kernel sandbox's cost (SPEC §13, issue 24), side by side in one run, interleaved call
//! by call on one engine:
//!
//! 1. A `true` command tool under the default policy (`workspace`: Landlock, seccomp,
//!    no_new_privs, capabilities dropped as root) against the same tool with
//!    `sandbox: none`, and a bare `posix_spawn` of /bin/true as the floor.
//! 2. A warm Python script call, sandboxed (the child confines itself before the script)
//!    against the same with `sandbox: none`.
//!
//! `cargo bench -p toolsmith-exec --bench sandbox`; `BENCH_CALLS` (default 2000) calls per
//! series; `BENCH_ONLY="2. 1"` makes only the second series' second variant's calls (for a
//! profiler).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use toolsmith_core::CompiledTool;
use toolsmith_core::catalog::{self, TextSource};
use toolsmith_exec::{CallOptions, Engine, EngineConfig};

fn tool(yaml: &str) -> CompiledTool {
    let c = catalog::load("b.yaml", &TextSource(format!("tools:\n  - {yaml}\n")))
        .unwrap_or_else(|e| panic!("{e}"));
    CompiledTool::new(c.tools.into_iter().next().expect("tool"), 1).expect("compiles")
}

fn p(v: &mut [Duration], q: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 * q) as usize).min(v.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

/// A named way of making one call.
type Variant<'a> = (&'a str, Box<dyn FnMut() + 'a>);

/// Runs each variant once per round, `n` rounds (the order turned around every other round,
/// so neither always goes first); prints p50/p99, the second variant's p50 over the first's,
/// and the median of the paired differences (each round's second call minus its first:
/// calls made moments apart share the machine's slow and quick spells, so it is the steadier
/// figure on a busy machine).
fn interleave(title: &str, n: usize, variants: &mut [Variant<'_>]) {
    // `BENCH_ONLY=<title's first word> <variant>`: that variant alone, `n` times, nothing
    // printed — for a profiler (`perf record`).
    if let Ok(only) = std::env::var("BENCH_ONLY") {
        let (section, index) = only.split_once(' ').unwrap_or((&only, "0"));
        if title.starts_with(section) {
            let f = &mut variants[index.parse::<usize>().expect("BENCH_ONLY's index")].1;
            for _ in 0..n {
                f();
            }
        }
        return;
    }
    for (_, f) in variants.iter_mut() {
        for _ in 0..20 {
            f();
        }
    }
    let mut times = vec![Vec::with_capacity(n); variants.len()];
    for round in 0..n {
        let order: Vec<usize> = match round % 2 {
            0 => (0..variants.len()).collect(),
            _ => (0..variants.len()).rev().collect(),
        };
        for i in order {
            let t = Instant::now();
            (variants[i].1)();
            times[i].push(t.elapsed());
        }
    }
    let mut paired: Vec<f64> = times[0]
        .iter()
        .zip(&times[1])
        .map(|(a, b)| b.as_secs_f64() - a.as_secs_f64())
        .collect();
    paired.sort_by(f64::total_cmp);
    println!("\n## {title}, {n} calls of each, interleaved");
    println!("| what | p50 | p99 |\n|---|---|---|");
    let mut p50s = Vec::new();
    for ((name, _), t) in variants.iter().zip(times.iter_mut()) {
        let (a, b) = (p(t, 0.5), p(t, 0.99));
        p50s.push(a);
        println!("| {name} | {} | {} |", ms(a), ms(b));
    }
    println!(
        "\nsandboxed vs unsandboxed: +{} at p50; median of the paired differences {:+.3} ms",
        ms(p50s[1].saturating_sub(p50s[0])),
        paired[paired.len() / 2] * 1e3
    );
}

fn main() {
    let n: usize = std::env::var("BENCH_CALLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let ws = tempfile::tempdir().expect("tempdir");
    let mut config = EngineConfig::new(ws.path());
    config.use_cgroups = std::env::var("BENCH_NO_CGROUP").is_err();
    let engine = Engine::new(config).expect("engine");
    println!("{}", engine.sandbox().kernel().describe());
    {
        let dir = tempfile::tempdir().expect("tempdir");
        let cx = toolsmith_exec::sandbox::Context {
            workdir: dir.path(),
            program: Some(std::path::Path::new("/usr/bin/true")),
            files: Vec::new(),
        };
        let t = Instant::now();
        for _ in 0..n {
            let c = engine.sandbox().confine(None, &cx).expect("confine");
            std::hint::black_box(c);
        }
        println!(
            "computing a confinement: {:.1} µs",
            t.elapsed().as_secs_f64() * 1e6 / n as f64
        );
        let t = Instant::now();
        for _ in 0..n {
            toolsmith_exec::sandbox::run_confined(None, || ()).expect("run");
        }
        println!(
            "no confinement: {:.1} µs",
            t.elapsed().as_secs_f64() * 1e6 / n as f64
        );
        let t = Instant::now();
        for _ in 0..n {
            let c = engine.sandbox().confine(None, &cx).expect("confine");
            toolsmith_exec::sandbox::run_confined(c.confinement, || ()).expect("run");
        }
        println!(
            "computing one and applying it (the helper's thread, then Landlock on a fresh thread): {:.1} µs",
            t.elapsed().as_secs_f64() * 1e6 / n as f64
        );
        let t = Instant::now();
        for _ in 0..n {
            std::thread::scope(|s| s.spawn(|| ()).join()).expect("thread");
        }
        println!(
            "a bare thread: {:.1} µs",
            t.elapsed().as_secs_f64() * 1e6 / n as f64
        );
    }
    let call = |t: &CompiledTool, want_sandboxed: bool| {
        let r = rt.block_on(engine.call(t, json!({}), CallOptions::default()));
        assert!(r.success, "{r:?}");
        let enforced = r
            .meta
            .sandbox
            .as_ref()
            .is_some_and(|s| s["policy"] != "none");
        assert_eq!(enforced, want_sandboxed, "{r:?}");
    };
    let open = tool("{name: t, description: d, sandbox: none, command: [true]}");
    let boxed = tool("{name: t, description: d, command: [true]}");
    interleave(
        "1. a `true` command tool",
        n,
        &mut [
            (
                "toolsmith, `sandbox: none`",
                Box::new(|| call(&open, false)),
            ),
            (
                "**toolsmith, default sandbox (`workspace`)**",
                Box::new(|| call(&boxed, true)),
            ),
            (
                "bare posix_spawn + wait of /bin/true (the floor)",
                Box::new(|| {
                    let s = Command::new("/bin/true")
                        .stdin(Stdio::null())
                        .status()
                        .expect("spawn");
                    assert!(s.success());
                }),
            ),
        ],
    );
    let source =
        "import json, sys\\nargs = json.load(sys.stdin)\\nprint(json.dumps({'ok': True}))\\n";
    let open = tool(&format!(
        "{{name: py, description: d, sandbox: none, script: {{warm: true, source: \"{source}\"}}}}"
    ));
    let boxed = tool(&format!(
        "{{name: py, description: d, script: {{warm: true, source: \"{source}\"}}}}"
    ));
    interleave(
        "2. a warm Python script call",
        (n / 4).max(200),
        &mut [
            (
                "toolsmith warm, `sandbox: none`",
                Box::new(|| call(&open, false)),
            ),
            (
                "**toolsmith warm, default sandbox**",
                Box::new(|| call(&boxed, true)),
            ),
        ],
    );
}
