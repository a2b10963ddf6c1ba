//! Replicas of one PostgreSQL registry behind a real HAProxy (Debian's package), for the
//! scale-out test (`crates/toolsmith/tests/scaleout.rs`) and bench (`bench/scaleout.rs`):
//! each replica is a `toolsmith serve` on its own loopback port with the same secret key;
//! HAProxy balances round robin over them, checks `/v1/health` every 200 ms, and sends a
//! request whose connection to a replica failed to another (`option redispatch`; never a
//! request a replica may have started: HAProxy's default `retry-on conn-failure`). The
//! replicas share an admin token (a tokens file), as a real deployment's do: the health
//! check needs none.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A loopback port nothing listens on right now.
pub fn port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port()
}

/// The replicas' admin token (one per process that starts clusters).
pub fn admin_token() -> String {
    format!("cluster-admin-{}", std::process::id())
}

/// Whether HAProxy can be started here.
pub fn haproxy_available() -> bool {
    Command::new("haproxy")
        .arg("-v")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// One replica: its port, its REST base (`http://127.0.0.1:P/v1`) and its process while up.
pub struct Replica {
    pub port: u16,
    pub base: String,
    child: Option<Child>,
}

/// Replicas and the load balancer in front of them; everything is killed when dropped.
pub struct Cluster {
    pub replicas: Vec<Replica>,
    /// The balancer's REST base, `http://127.0.0.1:P/v1`.
    pub lb: String,
    /// The balancer's MCP endpoint.
    pub lb_mcp: String,
    /// The replicas' admin token.
    pub token: String,
    haproxy: Child,
    dir: PathBuf,
    args: Vec<String>,
}

impl Cluster {
    /// `n` replicas of the registry `db` importing `catalog`, with `extra` serve arguments,
    /// their logs and HAProxy's configuration in `dir`.
    pub fn start(
        bin: &str,
        dir: &Path,
        db: &str,
        catalog: &Path,
        n: usize,
        extra: &[&str],
    ) -> Self {
        let key = dir.join("secret.key");
        std::fs::write(&key, "7".repeat(64)).expect("key");
        let token = admin_token();
        let tokens = dir.join("tokens");
        std::fs::write(&tokens, format!("admin:admin={token}\n")).expect("tokens");
        let mut args: Vec<String> = vec![
            "serve".into(),
            "--no-cgroups".into(),
            "--db".into(),
            db.into(),
            "--secret-key-file".into(),
            key.display().to_string(),
            "--tokens-file".into(),
            tokens.display().to_string(),
            "--catalog".into(),
            catalog.display().to_string(),
            "--workspace".into(),
            dir.display().to_string(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let mut replicas = Vec::new();
        // One after another: the first imports the catalog, the rest find it unchanged.
        for _ in 0..n {
            let port = port();
            let mut r = Replica {
                port,
                base: format!("http://127.0.0.1:{port}/v1"),
                child: None,
            };
            r.child = Some(spawn(bin, dir, &args, port, replicas.len()));
            wait_healthy(&r.base, Duration::from_secs(60));
            replicas.push(r);
        }
        let lb_port = port();
        let config = dir.join("haproxy.cfg");
        let servers: String = replicas
            .iter()
            .enumerate()
            .map(|(i, r)| format!("  server r{i} 127.0.0.1:{} check\n", r.port))
            .collect();
        std::fs::write(
            &config,
            format!(
                "global\n  maxconn 4096\n\
                 defaults\n  mode http\n  timeout connect 1s\n  timeout client 120s\n  timeout server 120s\n  retries 3\n  option redispatch\n\
                 frontend toolsmith\n  bind 127.0.0.1:{lb_port}\n  default_backend replicas\n\
                 backend replicas\n  balance roundrobin\n  option httpchk\n  http-check send meth GET uri /v1/health ver HTTP/1.1 hdr Host 127.0.0.1\n  http-check expect status 200\n  default-server inter 200ms fall 2 rise 2\n{servers}"
            ),
        )
        .expect("haproxy.cfg");
        let haproxy = Command::new("haproxy")
            .arg("-db")
            .arg("-f")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("haproxy.log")).expect("log"))
            .spawn()
            .expect("haproxy (Debian's package haproxy)");
        let lb = format!("http://127.0.0.1:{lb_port}/v1");
        wait_healthy(&lb, Duration::from_secs(20));
        Self {
            replicas,
            lb_mcp: format!("http://127.0.0.1:{lb_port}/mcp"),
            lb,
            token,
            haproxy,
            dir: dir.to_owned(),
            args,
        }
    }

    /// Kills replica `i` with SIGKILL (no chance to clean up) and reaps it.
    pub fn kill(&mut self, i: usize) {
        if let Some(mut child) = self.replicas[i].child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts replica `i` again on its port and waits for it to answer.
    pub fn restart(&mut self, bin: &str, i: usize) {
        let port = self.replicas[i].port;
        self.replicas[i].child = Some(spawn(bin, &self.dir, &self.args, port, i));
        wait_healthy(&self.replicas[i].base, Duration::from_secs(60));
    }

    /// Replica `i`'s log so far.
    pub fn log(&self, i: usize) -> String {
        std::fs::read_to_string(self.dir.join(format!("replica-{i}.log"))).unwrap_or_default()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.haproxy.kill();
        let _ = self.haproxy.wait();
        for i in 0..self.replicas.len() {
            self.kill(i);
        }
    }
}

fn spawn(bin: &str, dir: &Path, args: &[String], port: u16, i: usize) -> Child {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(format!("replica-{i}.log")))
        .expect("log");
    Command::new(bin)
        .args(args)
        .args(["--addr", &format!("127.0.0.1:{port}")])
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("serve")
}

/// Waits until `base` answers its health check.
pub fn wait_healthy(base: &str, within: Duration) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(2)))
        .build()
        .into();
    let started = Instant::now();
    loop {
        if let Ok(r) = agent.get(format!("{base}/health")).call()
            && r.status() == 200
        {
            return;
        }
        assert!(started.elapsed() < within, "{base} did not become healthy");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The value of the first sample of `series` (a full name with labels) in a scrape.
pub fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        l.strip_prefix(series)?
            .strip_prefix(' ')?
            .trim()
            .parse()
            .ok()
    })
}
