//! One zygote: handing it a call (the script's name and four pipes over its socket), waiting
//! for its child's status within the call's deadline, and cleaning up after it; and whether
//! its runtime changed since it started.

use super::socket::message;
use super::*;

impl Drop for Zygote {
    fn drop(&mut self) {
        while !self.confined.is_empty() {
            self.let_go(0);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(mut cg) = self.cgroup.take() {
            cg.set_resident(None);
            // Its spares (and its confined runtimes') exit a moment after it: the slot is
            // emptied here, not by a sweep that may not outlive a stopping engine.
            cg.release_waiting();
        }
        self.alive.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Kills the call's child and group, and sweeps the slot, when dropped or finished.
struct ChildGuard<'a> {
    pid: u32,
    cgroup: Option<&'a CallCgroup>,
}

impl ChildGuard<'_> {
    fn kill(&mut self) -> bool {
        if !self.signal() {
            return false;
        }
        self.cgroup.is_some_and(CallCgroup::sweep)
    }

    /// Kills the child and its group, without the sweep; false when done already.
    fn signal(&mut self) -> bool {
        if self.pid == 0 {
            return false;
        }
        limits::kill_group(self.pid);
        if let Some(pid) = i32::try_from(self.pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
        {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
        self.pid = 0;
        true
    }
}

impl Drop for ChildGuard<'_> {
    fn drop(&mut self) {
        self.kill();
    }
}

fn stamps(paths: &[PathBuf]) -> Vec<Option<FileStamp>> {
    use std::os::unix::fs::MetadataExt;
    paths
        .iter()
        .map(|p| {
            std::fs::metadata(p)
                .ok()
                .map(|m| (m.mtime(), m.mtime_nsec(), m.ino()))
        })
        .collect()
}

impl Zygote {
    /// Whether its runtime changed since it started (its imports may be stale): looked at
    /// once every [`RUNTIME_CHECK`] at most.
    pub(super) fn runtime_changed(&mut self) -> bool {
        if self.checked.elapsed() < RUNTIME_CHECK {
            return false;
        }
        self.checked = Instant::now();
        let changed = stamps(&self.runtime_paths) != self.runtime;
        if changed {
            tracing::info!(
                "warm runtime {}: its interpreter or a folder on its sys.path changed; replacing it",
                self.kind.interpreter.display()
            );
        }
        changed
    }

    pub(super) async fn recv(&self) -> Result<Value, String> {
        message(&self.sock).await
    }

    pub(super) fn send(&self, header: &[u8], fds: &[&OwnedFd]) -> Result<(), String> {
        super::socket::send_on(&self.sock, header, fds)
    }

    pub(super) async fn run(&mut self, call: &Call<'_>) -> Attempt {
        // Before anything else runs in the slot (a confined runtime's start reads the
        // zygote's socket too): spares known and residents.
        if let Err(e) = self.settle_spares().await {
            return Attempt::NotStarted(e);
        }
        let cap = call.limits.output_bytes.unwrap_or(1024 * 1024) as usize;
        let pipes = (|| {
            let flags = rustix::pipe::PipeFlags::CLOEXEC;
            Ok::<_, rustix::io::Errno>((
                rustix::pipe::pipe_with(flags)?,
                rustix::pipe::pipe_with(flags)?,
                rustix::pipe::pipe_with(flags)?,
                rustix::pipe::pipe_with(flags)?,
            ))
        })();
        let Ok(((in_r, in_w), (out_r, out_w), (err_r, err_w), (setup_r, setup_w))) = pipes else {
            return Attempt::NotStarted("no pipes for the call".into());
        };
        let mut rlimits = serde_json::Map::new();
        for (key, value) in [
            ("as", call.limits.memory_bytes),
            ("fsize", call.limits.file_size_bytes),
            ("cpu", call.limits.cpu_seconds),
        ] {
            if let Some(v) = value {
                rlimits.insert(key.into(), json!(v));
            }
        }
        // The zygote sees only which script runs; the call's setup (its environment holds
        // secrets) goes through a pipe of its own that only the forked child reads, so no
        // call's data enters the memory every later child inherits.
        // The zygote builds each confinement's Landlock ruleset once and keeps it: a child
        // confined alike only restricts itself to it (building one costs ~0.1 ms in a
        // child, COW faults of ctypes included). Its rules are paths and rights — nothing of
        // the call's data.
        let mut header = json!({"script": call.script});
        let mut new_ruleset = None;
        let ruleset = match call.sandbox.filter(|c| c.has_landlock()) {
            None => None,
            Some(c) => {
                let identity = c.identity();
                match self.rulesets.get(&identity) {
                    Some(id) => Some(*id),
                    None => {
                        let id = self.next_ruleset;
                        self.next_ruleset += 1;
                        header["rules"] = c.ruleset_for_zygote();
                        if self.rulesets.len() >= MAX_RULESETS {
                            self.rulesets.clear();
                            self.uses.clear();
                            header["reset"] = json!(true);
                        }
                        new_ruleset = Some((identity, id));
                        Some(id)
                    }
                }
            }
        };
        header["ruleset"] = json!(ruleset);
        let header = header.to_string();
        // A confinement served before goes to its confined runtime (`confined`).
        let mut via = match (ruleset, &new_ruleset) {
            (Some(id), None) => self.confined_for(id).await,
            (Some(id), Some(_)) => {
                self.uses.insert(id, 1);
                None
            }
            _ => None,
        };
        let setup = json!({
            "script": call.script,
            "cwd": call.cwd,
            "env": call.env,
            "rlimits": rlimits,
            "nice": call.niceness,
            // What the child checks before any user code: its runtime's base, and the
            // ruleset it restricts itself to (or was born inside).
            "sandbox": call.sandbox.map(|_| json!({"ruleset": ruleset, "base": call.base.label()})),
        })
        .to_string()
        .into_bytes();
        // The runtime's spare becomes the call's process; the call's process limit, over
        // the slot's residents (the zygote, its confined runtimes — one maybe just started —
        // and their other spares).
        let mut spare = self.take_spare(via);
        if let Some(cg) = &mut self.cgroup {
            cg.set_cap(call.limits.processes);
        }
        let fds = [&in_r, &out_w, &err_w, &setup_r];
        if let Some(i) = via
            && super::socket::send_on(&self.confined[i].sock, header.as_bytes(), &fds).is_err()
        {
            // Gone (idle too long, or killed): the zygote takes the call itself.
            self.let_go(i);
            via = None;
            spare = self.take_spare(None);
            if let Some(cg) = &mut self.cgroup {
                cg.set_cap(call.limits.processes);
            }
        }
        if via.is_none()
            && let Err(e) = self.send(header.as_bytes(), &fds)
        {
            return Attempt::NotStarted(e);
        }
        // The zygote itself exits after its idle time without a message: while calls go to
        // its confined runtimes, it hears from the gateway now and then.
        let quiet = !self.idle_after.is_zero() && self.pinged.elapsed() > self.idle_after / 2;
        if via.is_some() && quiet {
            let _ = self.send(br#"{"ping": true}"#, &[]);
        }
        if via.is_none() || quiet {
            self.pinged = Instant::now();
        }
        let sock = via.map_or(&self.sock, |i| &self.confined[i].sock);
        drop((in_r, out_w, err_w, setup_r));
        if let Ok(mut pipe) = tokio::net::unix::pipe::Sender::from_owned_fd(setup_w) {
            // Most setups fit the pipe at once; a larger one is written as the child reads.
            let sent = pipe.try_write(&setup).unwrap_or(0);
            if sent < setup.len() {
                tokio::spawn(async move {
                    let _ = pipe.write_all(&setup[sent..]).await;
                });
            }
        }
        self.calls += 1;
        let started = match tokio::time::timeout(ANSWER_TIMEOUT, message(sock)).await {
            Ok(Ok(v)) => v,
            Ok(Err(e)) => return Attempt::NotStarted(e),
            Err(_) => return Attempt::NotStarted("it did not fork within 5 s".into()),
        };
        let Some(pid) = started["pid"].as_u64().and_then(|p| u32::try_from(p).ok()) else {
            // Nothing started: its spare is still there.
            self.put_back_spare(via, spare);
            // A ruleset it could not build (or had let go of) is made anew next time.
            self.rulesets.clear();
            self.uses.clear();
            return match started["cold"].as_str() {
                Some(why) => Attempt::Cold(why.to_owned()),
                None => Attempt::NotStarted(format!("unexpected answer {started}")),
            };
        };
        if let Some((identity, id)) = new_ruleset {
            self.rulesets.insert(identity, id);
        }
        let mut guard = ChildGuard {
            pid,
            cgroup: self.cgroup.as_ref(),
        };
        if let Some(talk) = call.talk {
            if let Ok(stdin) = tokio::net::unix::pipe::Sender::from_owned_fd(in_w) {
                talk.feed(call.stdin, stdin);
            }
        } else if let Some(text) = call.stdin {
            let bytes = text.as_bytes().to_vec();
            if let Ok(mut stdin) = tokio::net::unix::pipe::Sender::from_owned_fd(in_w) {
                tokio::spawn(async move {
                    let _ = stdin.write_all(&bytes).await;
                });
            }
        } else {
            drop(in_w);
        }
        let reader = |fd: OwnedFd| {
            tokio::net::unix::pipe::Receiver::from_owned_fd(fd)
                .ok()
                .map(|r| tokio::spawn(read_capped(r, cap)))
        };
        let stdout = match call.talk {
            Some(talk) => tokio::net::unix::pipe::Receiver::from_owned_fd(out_r)
                .ok()
                .map(|r| talk.listen(r, cap)),
            None => reader(out_r),
        };
        // A talking program may answer before it exits (`talk::DONE`): its stderr is then read
        // as far as it was written.
        let said_done = call.talk.and_then(crate::talk::Talk::said_done);
        let (stop_stderr, stderr) = match &said_done {
            Some(_) => {
                let (stop, until) = tokio::sync::oneshot::channel();
                let task = tokio::net::unix::pipe::Receiver::from_owned_fd(err_r)
                    .ok()
                    .map(|r| {
                        tokio::spawn(read_capped_until(r, cap, async {
                            let _ = until.await;
                        }))
                    });
                (Some(stop), task)
            }
            None => (None, reader(err_r)),
        };
        let deadline = tokio::time::Instant::now() + call.timeout;
        let ended = tokio::select! {
            biased;
            status = tokio::time::timeout_at(deadline, recv_status(sock)) => Ok(status),
            Some(output) = answered(said_done) => Err(output),
        };
        let (status, timed_out, healthy) = match ended {
            Ok(Ok(Ok(s))) => (Some(s), false, true),
            Ok(Ok(Err(_))) => (None, false, false),
            Ok(Err(_)) => {
                guard.kill();
                match tokio::time::timeout(ANSWER_TIMEOUT, recv_status(sock)).await {
                    Ok(Ok(s)) => (Some(s), true, true),
                    _ => (None, true, false),
                }
            }
            Err(stdout) => {
                // Its answer is complete: it goes now. What is left of the program is
                // killed, and its slot swept after the answer ([`Self::settle`]).
                guard.signal();
                drop(guard);
                if let Some(stop) = stop_stderr {
                    let _ = stop.send(());
                }
                let stderr = join_capture(stderr, deadline).await;
                let finished = Finished {
                    stdout,
                    stderr,
                    exit_code: Some(0),
                    signal: None,
                    timed_out: false,
                    contained: false,
                    settled: None,
                };
                return Attempt::Answered(finished, via);
            }
        };
        let contained = guard.kill();
        drop(guard);
        let (contained, healthy) = self
            .clean_up(via, contained, healthy && status.is_some())
            .await;
        let drain_until = deadline.max(tokio::time::Instant::now() + crate::process::DRAIN_GRACE);
        let stdout = join_capture(stdout, drain_until).await;
        let stderr = join_capture(stderr, drain_until).await;
        // A raw wait status: exited (low 7 bits 0) or killed by a signal.
        let (exit_code, signal) = match status {
            Some(s) if s >= 0 && s & 0x7f == 0 => (Some((s >> 8) & 0xff), None),
            Some(s) if s > 0 => (None, Some(s & 0x7f)),
            _ => (None, None),
        };
        Attempt::Done(
            Finished {
                stdout,
                stderr,
                exit_code: exit_code.map(|c| c as i32),
                signal: signal.map(|s| s as i32),
                timed_out,
                contained,
                settled: None,
            },
            healthy,
        )
    }

    /// After a call that answered early ([`Attempt::Answered`]; its process was killed
    /// then): reads its runtime's report of it and cleans the slot. Whether every process of
    /// the call is gone, and whether the zygote is fit for another call.
    pub(super) async fn settle(&mut self, via: Option<usize>) -> (bool, bool) {
        let sock = via.map_or(&self.sock, |i| &self.confined[i].sock);
        let reported = matches!(
            tokio::time::timeout(ANSWER_TIMEOUT, recv_status(sock)).await,
            Ok(Ok(_))
        );
        let contained = self.cgroup.as_ref().is_some_and(CallCgroup::sweep);
        self.clean_up(via, contained, reported).await
    }

    /// The end of every call: what it left running was killed, and a killed process leaves
    /// the cgroup only once its memory is released — waited for (a few ms) rather than throw
    /// away a sound zygote and make the next call wait for a new one's start. A zygote whose
    /// slot is clean and whose child was reported (`reported`) forks the next call's child
    /// now, between calls. Whether the call is contained, and whether the zygote is fit.
    async fn clean_up(
        &mut self,
        via: Option<usize>,
        mut contained: bool,
        reported: bool,
    ) -> (bool, bool) {
        if let Some(cg) = self.cgroup.as_ref().filter(|_| !contained) {
            let until = tokio::time::Instant::now() + SWEEP_WAIT;
            while !contained && tokio::time::Instant::now() < until {
                tokio::time::sleep(Duration::from_millis(2)).await;
                contained = cg.sweep();
            }
        }
        let healthy = reported && (self.cgroup.is_none() || contained);
        if healthy && self.spares {
            self.ask_spare(via);
        }
        (contained, healthy)
    }
}

/// The output of a talking program once it says it is done; `None` when it ends without
/// saying so (or does not talk).
async fn answered(said: Option<tokio::sync::oneshot::Receiver<Captured>>) -> Option<Captured> {
    match said {
        Some(said) => said.await.ok(),
        None => std::future::pending().await,
    }
}

/// The child's raw wait status, the zygote's second answer.
async fn recv_status(sock: &UnixDatagram) -> Result<i64, String> {
    let v = message(sock).await?;
    v["status"]
        .as_i64()
        .ok_or_else(|| format!("expected a status, got {v}"))
}

impl Warm {
    /// Starts a zygote in a cgroup slot of its own. `alive` already counts it.
    pub(super) async fn start(
        &self,
        kind: &Kind,
        cgroups: Option<&Arc<Cgroups>>,
    ) -> Result<Zygote, String> {
        self.starts.fetch_add(1, Ordering::Relaxed);
        let began = Instant::now();
        let alive = self.alive.clone();
        let undo = scopeguard(move || {
            alive.fetch_sub(1, Ordering::Relaxed);
        });
        let (sock, theirs) = super::socket::socket_pair()?;
        crate::signals::default_for_children();
        let interpreter = &kind.interpreter;
        // Its base: the seccomp program its children need (hex; empty: none), and its name,
        // which says whether it drops its capabilities too.
        let filter = match kind.base.filter {
            true => self
                .filters
                .get(usize::from(kind.base.rule))
                .cloned()
                .flatten(),
            false => None,
        };
        let mut cmd = Command::new(interpreter);
        cmd.arg("-I")
            .arg(&self.source)
            .arg(format!("{:.3}", self.idle_after.as_secs_f64()))
            .arg(filter.unwrap_or_default())
            .arg(kind.base.label())
            .env_clear()
            .env("LANG", "C.UTF-8")
            .env("TZ", "UTC")
            .current_dir("/")
            .stdin(Stdio::from(theirs))
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .process_group(0);
        let spawned = match cgroups.and_then(|c| c.create(None, None)) {
            Some(cg) => cg
                .spawn_inside(
                    move |cg| (cmd.spawn(), Some(cg)),
                    |(c, _)| c.as_ref().ok().map(Child::id),
                )
                .await
                .map_err(|_| "the spawning thread went away".to_string())?,
            None => (cmd.spawn(), None),
        };
        let (child, mut cgroup) = spawned;
        let child = match child {
            Ok(c) => c,
            Err(e) => {
                if let Some(cg) = cgroup {
                    cg.release();
                }
                return Err(format!("starting {}: {e}", interpreter.display()));
            }
        };
        if let Some(cg) = &mut cgroup {
            cg.set_resident(Some(child.id()));
        }
        std::mem::forget(undo);
        let mut z = Zygote {
            kind: kind.clone(),
            sock,
            child,
            cgroup,
            calls: 0,
            born: Instant::now(),
            last: Instant::now(),
            runtime_paths: Vec::new(),
            runtime: Vec::new(),
            checked: Instant::now(),
            alive: self.alive.clone(),
            rulesets: HashMap::new(),
            next_ruleset: 0,
            confined: Vec::new(),
            uses: HashMap::new(),
            pinged: Instant::now(),
            idle_after: self.idle_after,
            spare: Spare::None,
            spares: self.spares,
        };
        let ready = tokio::time::timeout(START_TIMEOUT, z.recv())
            .await
            .map_err(|_| format!("did not start within {} s", START_TIMEOUT.as_secs()))??;
        if ready["ready"] != true {
            return Err(format!("unexpected first message {ready}"));
        }
        self.interpreters
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(kind.clone())
            .or_default()
            .last_start = Some(began.elapsed());
        z.runtime_paths = std::iter::once(interpreter.to_path_buf())
            .chain(
                ready["paths"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|p| p.as_str().map(PathBuf::from)),
            )
            .collect();
        z.runtime = stamps(&z.runtime_paths);
        if ready["threads"] != 1 {
            return Err(format!(
                "it has {} threads after its imports; a zygote must have one",
                ready["threads"]
            ));
        }
        Ok(z)
    }
}
