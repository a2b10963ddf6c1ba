//! Scale-out (SPEC §9, §15): calls per second through a real HAProxy in front of one
//! replica and in front of three replicas of a PostgreSQL registry, the same load, in
//! alternating rounds; and what forwarding a session call to the replica holding it costs
//! (`session_exec` sent to the holder against sent to another replica).
//!
//! Two loads: a `true` tool (the work is the server's own: CPU-bound, and this machine has 2
//! cores for every replica, HAProxy, PostgreSQL and the load generator), and a tool that
//! waits 20 ms with `max_concurrency: 2` (a tool capped per replica, as a licence or an
//! upstream's limit would: the bound is per replica, so replicas add capacity).
//!
//! Needs `TOOLSMITH_TEST_POSTGRES` and Debian's haproxy (prints why and stops without them).
//! Run with `cargo bench -p toolsmith --bench scaleout` (`BENCH_SECONDS` per round,
//! `BENCH_ROUNDS` rounds).

use std::time::Instant;

#[path = "cluster.rs"]
mod cluster;
#[path = "common.rs"]
mod common;

use cluster::Cluster;
use common::{env, ms, pct};

const CATALOG: &str = "\
tools:
  - {name: yes, description: Succeeds., command: ['true']}
  - {name: capped, description: Waits 20 ms; two at a time per replica., command: [sleep, '0.02'], max_concurrency: 2}
  - {name: session_start, builtin: session_start}
  - {name: session_exec, builtin: session_exec}
";

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into()
}

fn schema(url: &str, name: &str) -> String {
    let schema = format!("{name}_{}", std::process::id());
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(toolsmith_store::postgres::PgStore::open_in_schema(
            url,
            Some(&schema),
        ))
        .expect("schema");
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}options[search_path]={schema}")
}

fn post(base: &str, tool: &str, arguments: serde_json::Value) -> serde_json::Value {
    let mut r = agent()
        .post(format!("{base}/tools/{tool}/call"))
        .header("content-type", "application/json")
        .header(
            "authorization",
            format!("Bearer {}", cluster::admin_token()),
        )
        .send(serde_json::json!({"arguments": arguments, "confirm": true}).to_string())
        .expect("call");
    serde_json::from_str(&r.body_mut().read_to_string().expect("body")).expect("json")
}

fn main() {
    let Ok(pg) = std::env::var("TOOLSMITH_TEST_POSTGRES") else {
        println!("scaleout: skipped: needs TOOLSMITH_TEST_POSTGRES (a PostgreSQL database)");
        return;
    };
    if !cluster::haproxy_available() {
        println!("scaleout: skipped: needs haproxy (Debian's package)");
        return;
    }
    let bin = env!("CARGO_BIN_EXE_toolsmith");
    let seconds = env("BENCH_SECONDS", 3) as f64;
    let rounds = env("BENCH_ROUNDS", 3) as usize;
    let dirs = [
        tempfile::tempdir().expect("dir"),
        tempfile::tempdir().expect("dir"),
    ];
    let clusters: Vec<(usize, Cluster)> = [1, 3]
        .into_iter()
        .zip(&dirs)
        .map(|(n, dir)| {
            let catalog = dir.path().join("catalog.yaml");
            std::fs::write(&catalog, CATALOG).expect("catalog");
            let db = schema(&pg, &format!("bench_scaleout_{n}"));
            (n, Cluster::start(bin, dir.path(), &db, &catalog, n, &[]))
        })
        .collect();
    for (tool, in_flight) in [("yes", 8), ("capped", 12)] {
        for (_, c) in &clusters {
            common::rate(
                &c.lb,
                &format!("Bearer {}", cluster::admin_token()),
                tool,
                in_flight,
                1.0,
            );
        }
        let mut rates = vec![Vec::new(); clusters.len()];
        for _ in 0..rounds {
            for (i, (_, c)) in clusters.iter().enumerate() {
                rates[i].push(common::rate(
                    &c.lb,
                    &format!("Bearer {}", cluster::admin_token()),
                    tool,
                    in_flight,
                    seconds,
                ));
            }
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let one = median(&mut rates[0]);
        let three = median(&mut rates[1]);
        println!(
            "{tool}: {in_flight} in flight through HAProxy, {rounds} rounds of {seconds} s: 1 replica {one:.0} calls/s, 3 replicas {three:.0} calls/s (×{:.2})",
            three / one
        );
    }

    // A session on replica 0 of the three: its calls sent to it, and sent to replica 1
    // (which forwards them), alternating.
    let c = &clusters[1].1;
    let started = post(&c.replicas[0].base, "session_start", serde_json::json!({}));
    let id = started["data"]["session_id"]
        .as_str()
        .expect("id")
        .to_owned();
    let n = env("BENCH_SESSION_CALLS", 200) as usize;
    let (mut direct, mut forwarded) = (Vec::new(), Vec::new());
    let exec = serde_json::json!({"session_id": id, "command": "true"});
    for _ in 0..n {
        for (base, times) in [
            (&c.replicas[0].base, &mut direct),
            (&c.replicas[1].base, &mut forwarded),
        ] {
            let t = Instant::now();
            let r = post(base, "session_exec", exec.clone());
            times.push(t.elapsed());
            assert_eq!(r["success"], true, "{r}");
        }
    }
    println!(
        "session_exec `true`, {n} calls each: to the holder p50 {} p99 {}; forwarded by another replica p50 {} p99 {}",
        ms(pct(&mut direct, 0.5)),
        ms(pct(&mut direct, 0.99)),
        ms(pct(&mut forwarded, 0.5)),
        ms(pct(&mut forwarded, 0.99)),
    );
}
