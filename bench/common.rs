//! Helpers the server benchmarks share (`serve.rs`, `mcp.rs`, `toolsets.rs`,
//! `operations.rs`): settings from the environment, percentiles, and child servers that are
//! killed when the bench ends. Not every bench uses every helper.

#![allow(dead_code)]

use std::process::Child;
use std::time::Duration;

/// A number from the environment variable `name`, or `default`.
pub fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The `q` quantile (0.5, 0.99) of `v`, which it sorts.
pub fn pct(v: &mut [Duration], q: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 * q) as usize).min(v.len() - 1)]
}

pub fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

/// A loopback port nothing listens on right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port()
}

/// The `Authorization` value for a server started without tokens by this user: its local
/// admin token, from toolsmith's data folder (empty when there is none).
pub fn bearer() -> String {
    let data = std::env::var_os("XDG_DATA_HOME")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".local/share")
        });
    std::fs::read_to_string(data.join("toolsmith/local-admin.token"))
        .map(|t| format!("Bearer {}", t.trim()))
        .unwrap_or_default()
}

/// A child process killed (and reaped) when dropped.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits until the server at `base` (`http://.../v1`) answers its health check.
pub fn wait_healthy(base: &str) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let started = std::time::Instant::now();
    while agent.get(format!("{base}/health")).call().is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "serve did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Calls per second of `tool` over REST at `base` (`http://.../v1`) with `in_flight` clients
/// calling for `seconds`, each request with the `Authorization` value `auth`; every answer
/// must be a 200.
pub fn rate(base: &str, auth: &str, tool: &str, in_flight: usize, seconds: f64) -> f64 {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let clients: Vec<_> = (0..in_flight)
        .map(|_| {
            let (stop, done) = (stop.clone(), done.clone());
            let url = format!("{base}/tools/{tool}/call");
            let auth = auth.to_owned();
            std::thread::spawn(move || {
                let agent: ureq::Agent = ureq::Agent::config_builder()
                    .http_status_as_error(false)
                    .build()
                    .into();
                while !stop.load(Ordering::Relaxed) {
                    let r = agent
                        .post(&url)
                        .header("content-type", "application/json")
                        .header("authorization", &auth)
                        .send(r#"{"arguments": {}}"#)
                        .expect("call");
                    assert_eq!(r.status().as_u16(), 200);
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let started = std::time::Instant::now();
    std::thread::sleep(Duration::from_secs_f64(seconds));
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.join().expect("client");
    }
    done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
}
