//! Running one process: spawn (never through a shell), feed stdin, capture bounded output,
//! enforce the deadline, and kill the whole process group whatever happens — on exit, on
//! timeout, and when the caller goes away (the [`GroupGuard`] runs on drop).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::process::Command;
use tokio::time::Instant;
use toolsmith_core::model::Limits;

use crate::capture::{Captured, read_capped};
use crate::limits::{self, CallCgroup, Cgroups};

/// What to run.
pub struct Spec<'a> {
    pub argv: &'a [String],
    /// `argv[0]` as found by [`crate::programs::resolve_program`] on the operator's PATH (the allowlisted one
    /// and the tool's `env`, never one a parameter set), by the caller, which also sandboxes
    /// by it; `None`: not found.
    pub program: Option<PathBuf>,
    pub stdin: Option<&'a str>,
    pub env: BTreeMap<String, String>,
    pub cwd: PathBuf,
    pub timeout: Duration,
    pub limits: Limits,
    pub niceness: i32,
    /// The kernel sandbox the process starts in; `None`: none.
    pub confinement: Option<crate::sandbox::Confinement>,
    /// A conversation with the program over its stdin and stdout ([`crate::talk`]).
    pub talk: Option<Arc<crate::talk::Talk>>,
}

/// How a process ended.
#[derive(Debug)]
pub struct Finished {
    pub stdout: Captured,
    pub stderr: Captured,
    /// `None` when killed by a signal.
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    /// Every process of the call is known to be gone (its cgroup was emptied).
    pub contained: bool,
    /// A warm call answered before its process ended (a talking program said it was done:
    /// [`crate::talk::DONE`]): told whether every process of it is gone once its slot is
    /// cleaned, after the answer (`contained` is false until then).
    pub settled: Option<tokio::sync::oneshot::Receiver<bool>>,
}

#[derive(Debug)]
pub enum SpawnError {
    NotFound(String),
    /// The sandbox could not be applied; nothing ran.
    Sandbox(String),
    Other(String),
}

/// Kills the call's process group (and empties its cgroup) when dropped.
struct GroupGuard {
    pgid: u32,
    cgroup: Option<CallCgroup>,
}

impl GroupGuard {
    /// Kills the group and empties the cgroup; says whether every process of the call is
    /// known to be gone (only a cgroup emptied here can say so).
    fn finish(&mut self) -> bool {
        if self.pgid == 0 {
            return false;
        }
        limits::kill_group(self.pgid);
        self.pgid = 0;
        self.cgroup.take().is_some_and(CallCgroup::release)
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.finish();
    }
}

/// How long output readers may run on after the process exited, at least: they also get the
/// rest of the call's deadline. (Pipes close when the group dies, so readers normally end at
/// once; only a process that left the group with `setsid`, where no cgroup catches it, can
/// hold them open, and then the call ends at its deadline.)
pub(crate) const DRAIN_GRACE: Duration = Duration::from_secs(2);

pub async fn run(spec: Spec<'_>, cgroups: Option<&Arc<Cgroups>>) -> Result<Finished, SpawnError> {
    crate::signals::default_for_children();
    let cap = spec.limits.output_bytes.unwrap_or(1024 * 1024) as usize;
    let Some((program, args)) = spec.argv.split_first() else {
        return Err(SpawnError::Other("empty command".into()));
    };
    // A program given by name was looked up in the tool's own PATH: std spawns with
    // `posix_spawn` only for a program given as a path once PATH is set, and falls back to
    // `fork` otherwise — far slower from a large gateway (bench/README.md).
    let resolved = spec
        .program
        .clone()
        .ok_or_else(|| SpawnError::NotFound(program.clone()))?;
    let mut cmd = Command::new(&resolved);
    cmd.arg0(program);
    cmd.args(args)
        .env_clear()
        .envs(&spec.env)
        .current_dir(&spec.cwd)
        .stdin(if spec.stdin.is_some() || spec.talk.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let (limits, niceness, confinement) = (spec.limits, spec.niceness, spec.confinement);
    // What a cgroup slot needs to count the sandbox helper this spawn may start.
    let key = confinement
        .as_ref()
        .filter(|_| cgroups.is_some())
        .map(crate::sandbox::Confinement::identity);
    // The guard is made where the child is, so whoever drops the result kills the group —
    // even a caller that went away while the spawn was in flight.
    let start = move |mut cmd: Command, cgroup: Option<CallCgroup>| {
        let child =
            crate::sandbox::run_confined(confinement, move || cmd.spawn()).map_err(|e| {
                std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    format!("sandbox: {e}"),
                )
            })??;
        let pid = child.id().unwrap_or(0);
        let guard = GroupGuard { pgid: pid, cgroup };
        let _ = limits::apply_rlimits(pid, &limits, niceness);
        Ok::<_, std::io::Error>((child, guard))
    };
    let spawned = match cgroups.and_then(|c| c.create(limits.processes, key.as_deref())) {
        Some(cg) => cg
            .spawn_inside(
                move |cg| start(cmd, Some(cg)),
                |r| r.as_ref().ok().and_then(|(c, _)| c.id()),
            )
            .await
            .map_err(|_| SpawnError::Other(format!("{program}: the spawning thread went away")))?,
        None => start(cmd, None),
    };
    let (mut child, guard) = spawned.map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => SpawnError::NotFound(program.clone()),
        std::io::ErrorKind::PermissionDenied if e.to_string().starts_with("sandbox: ") => {
            SpawnError::Sandbox(e.to_string())
        }
        _ => SpawnError::Other(format!("{program}: {e}")),
    })?;
    let mut guard = guard;
    let pid = guard.pgid;

    if let Some(talk) = &spec.talk {
        if let Some(stdin) = child.stdin.take() {
            talk.feed(spec.stdin, stdin);
        }
    } else if let (Some(text), Some(mut stdin)) = (spec.stdin, child.stdin.take()) {
        let bytes = text.as_bytes().to_vec();
        tokio::spawn(async move {
            // A tool that does not read its stdin closes the pipe; that is not an error.
            let _ = stdin.write_all(&bytes).await;
        });
    }
    let stdout = child.stdout.take().map(|s| match &spec.talk {
        Some(talk) => talk.listen(s, cap),
        None => tokio::spawn(read_capped(s, cap)),
    });
    let stderr = child
        .stderr
        .take()
        .map(|s| tokio::spawn(read_capped(s, cap)));

    let deadline = Instant::now() + spec.timeout;
    let (status, timed_out) = match tokio::time::timeout_at(deadline, child.wait()).await {
        Ok(status) => (status.ok(), false),
        Err(_) => {
            limits::kill_group(pid);
            (child.wait().await.ok(), true)
        }
    };
    // Whatever the tool left running in its group goes with it.
    let contained = guard.finish();
    let drain_until = deadline.max(Instant::now() + DRAIN_GRACE);
    let stdout = join_capture(stdout, drain_until).await;
    let stderr = join_capture(stderr, drain_until).await;
    use std::os::unix::process::ExitStatusExt;
    Ok(Finished {
        stdout,
        stderr,
        exit_code: status.and_then(|s| s.code()),
        signal: status.and_then(|s| s.signal()),
        timed_out,
        contained,
        settled: None,
    })
}

pub(crate) async fn join_capture(
    task: Option<tokio::task::JoinHandle<Captured>>,
    until: Instant,
) -> Captured {
    let empty = || Captured {
        text: String::new(),
        total: 0,
        truncated: false,
        lossy: false,
    };
    let Some(mut task) = task else { return empty() };
    match tokio::time::timeout_at(until, &mut task).await {
        Ok(Ok(c)) => c,
        _ => {
            task.abort();
            let mut c = empty();
            c.text =
                "[output not collected: a process outside the tool's group kept it open]".into();
            c
        }
    }
}
