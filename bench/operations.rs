//! What operations cost (SPEC §16): calls per second of a `true` command tool over REST with
//! 8 calls in flight, against two real `toolsmith serve` processes side by side — one with
//! metrics on (the default), one with `--metrics off` — in alternating rounds, so both see
//! the same machine. Also the cost of a rate-limited caller (`--rate-limit` high enough never
//! to refuse) against none, and of exporting traces (`--otlp-endpoint`, to a local receiver
//! that reads each export and answers 200) against none.
//!
//! Run with `cargo bench -p toolsmith --bench operations` (`BENCH_SECONDS` per round,
//! `BENCH_ROUNDS` rounds).

use std::process::{Command, Stdio};

#[path = "common.rs"]
mod common;

use common::{Killed, env, free_port};

const IN_FLIGHT: usize = 8;

fn start(dir: &std::path::Path, name: &str, extra: &[&str]) -> (Killed, String) {
    let port = free_port();
    let catalog = dir.join("catalog.yaml");
    let server = Killed(
        Command::new(env!("CARGO_BIN_EXE_toolsmith"))
            .args([
                "serve",
                "--no-cgroups",
                "--addr",
                &format!("127.0.0.1:{port}"),
            ])
            .arg("--catalog")
            .arg(&catalog)
            .arg("--db")
            .arg(dir.join(format!("{name}.db")))
            .arg("--workspace")
            .arg(dir)
            .args(extra)
            .stderr(Stdio::null())
            .spawn()
            .expect("serve"),
    );
    let base = format!("http://127.0.0.1:{port}/v1");
    common::wait_healthy(&base);
    (server, base)
}

fn main() {
    let seconds = env("BENCH_SECONDS", 3) as f64;
    let rounds = env("BENCH_ROUNDS", 5) as usize;
    let dir = tempfile::tempdir().expect("tempdir");
    let sink = otlp_sink();
    std::fs::write(
        dir.path().join("catalog.yaml"),
        "tools:\n  - {name: yes, description: Succeeds., command: [\"true\"]}\n",
    )
    .expect("catalog");
    let servers = [
        (
            "metrics off",
            start(dir.path(), "off", &["--metrics", "off"]),
        ),
        ("metrics on (default)", start(dir.path(), "on", &[])),
        (
            "metrics on, --rate-limit 1000000/1s",
            start(dir.path(), "limited", &["--rate-limit", "1000000/1s"]),
        ),
        (
            "metrics on, traces to a local receiver",
            start(dir.path(), "traced", &["--otlp-endpoint", &sink]),
        ),
    ];
    for (_, (_, base)) in &servers {
        common::rate(base, &common::bearer(), "yes", IN_FLIGHT, 1.0);
    }
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); servers.len()];
    for _ in 0..rounds {
        for (i, (_, (_, base))) in servers.iter().enumerate() {
            rates[i].push(common::rate(
                base,
                &common::bearer(),
                "yes",
                IN_FLIGHT,
                seconds,
            ));
        }
    }
    println!(
        "REST calls of a `true` tool, {IN_FLIGHT} in flight, {rounds} rounds of {seconds} s, alternating:"
    );
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let base = median(&mut rates[0].clone());
    for (i, (name, _)) in servers.iter().enumerate() {
        let m = median(&mut rates[i]);
        println!(
            "  {name:<40} median {m:>7.0} calls/s  (rounds {:?})  {:+.1} %",
            rates[i]
                .iter()
                .map(|r| r.round() as u64)
                .collect::<Vec<_>>(),
            (m / base - 1.0) * 100.0
        );
    }
}

/// A local OTLP/HTTP endpoint that reads each request and answers 200 with an empty body
/// (an empty `ExportTraceServiceResponse`); its URL.
fn otlp_sink() -> String {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                let mut out = stream;
                loop {
                    let mut length = 0usize;
                    let mut line = String::new();
                    loop {
                        line.clear();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        if let Some((k, v)) = line.split_once(':')
                            && k.eq_ignore_ascii_case("content-length")
                        {
                            length = v.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    let answer = "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
                    if out.write_all(answer.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    url
}
