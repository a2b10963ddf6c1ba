//! Sessions (SPEC §5.4, seed 000): processes that outlive one call — a shell whose folder
//! and variables persist, a dev server started once and read later, a REPL on a terminal.
//!
//! The five built-ins `session_start`, `session_exec`, `session_read`, `session_end` and
//! `session_list` are served here. The shape follows ../shared/research/sessions.md:
//! - **Kinds**: `shell` (bash over pipes; each `session_exec` command runs with stdin from
//!   /dev/null and completes when the shell itself reports `<nonce> <seq> <status> <folder>`
//!   back through its stdin socket, checked by the kernel's sender credentials — never by
//!   scraping a prompt, never by end-of-file), `process` (any argv
//!   over pipes) and `terminal` (any argv on a PTY, output stripped of escape sequences).
//! - **Containment**: each session is one process group born in its own pids cgroup slot,
//!   held for its life; ending, expiry, the leader's exit and the engine's drop kill the
//!   group and empty the cgroup. A server killed outright leaves its cgroups to the sweep
//!   of the next engine that starts, and — for machines without cgroups — its [`ledger`] of
//!   process groups, which the next engine's sessions end.
//! - **Output** is drained as it arrives into a ring per stream ([`ring`]), addressed by
//!   absolute cursors that survive the ring dropping old bytes (`dropped_bytes`).
//! - **Limits**: sessions per server and per caller (a new one is refused, listing the
//!   caller's; none is killed to make room), idle expiry and a lifetime, after which a
//!   tombstone answers for a while with the exit status and the output's tail.
//! - **Owners**: a session is visible only to the identity that started it; admins see all.
//! - **Replicas**: ids name the replica that holds the session; a [`Directory`] (the
//!   registry, given by the server) says where another replica's session lives.
//!
//! A call only waits on a session: dropping the call (a cancelled request) stops the wait
//! and leaves the session running.

mod ledger;
mod ring;
mod spawn;
mod term;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant, SystemTime};

use regex::Regex;
use serde_json::{Map, Value, json};
use tokio::io::AsyncWriteExt;
use tokio::sync::watch;
use toolsmith_core::model::{Limits, Tool};

use crate::limits::{CallCgroup, Cgroups, kill_group};
use crate::workspace::Workspace;
use ring::{Cursor, Ring, Slice};
use spawn::Input;

/// How many sessions may run, and for how long tombstones answer.
#[derive(Debug, Clone, Copy)]
pub struct SessionLimits {
    /// Sessions running at once on this server.
    pub max_total: usize,
    /// Sessions running at once per caller.
    pub max_per_caller: usize,
    /// How long an ended session's tombstone answers.
    pub tombstone_for: Duration,
    /// Tombstones kept at most.
    pub max_tombstones: usize,
}

impl Default for SessionLimits {
    fn default() -> Self {
        Self {
            max_total: 32,
            max_per_caller: 8,
            tombstone_for: Duration::from_secs(15 * 60),
            max_tombstones: 100,
        }
    }
}

/// The longest a session call waits.
pub const MAX_WAIT: Duration = Duration::from_secs(30);

/// Where sessions of other replicas live: the registry, as the server keeps it.
pub trait Directory: Send + Sync + 'static {
    /// Something happened to a session of this replica.
    fn note(&self, event: DirectoryEvent);
    /// Where the session `id` lives, if the registry knows it.
    fn locate<'a>(
        &'a self,
        id: &'a str,
    ) -> Pin<Box<dyn Future<Output = Option<Located>> + Send + 'a>>;
}

/// A change to record in the directory.
#[derive(Debug, Clone)]
pub enum DirectoryEvent {
    Started {
        id: String,
        replica: String,
        owner: String,
        command: String,
    },
    Ended {
        id: String,
        status: String,
    },
    /// These sessions of `replica` are alive (sent every [`HEARTBEAT`]).
    Alive {
        replica: String,
        ids: Vec<String>,
    },
}

/// How often the live sessions are reported to the directory.
pub const HEARTBEAT: Duration = Duration::from_secs(30);

/// A session as the directory knows it.
#[derive(Debug, Clone)]
pub struct Located {
    pub replica: String,
    /// Whether its replica reported it within the last few heartbeats.
    pub alive: bool,
    pub status: String,
    pub last_seen_ms: u64,
}

/// Who calls, and what the call may use.
pub struct Ctx<'a> {
    pub caller: &'a str,
    /// May see and use every caller's sessions.
    pub admin: bool,
    pub workspace: &'a Workspace,
    pub tool: &'a Tool,
    pub limits: Limits,
    pub niceness: i32,
    pub cgroups: Option<&'a Arc<Cgroups>>,
}

/// Why a session call failed.
#[derive(Debug)]
pub enum SessionError {
    /// The arguments do not make sense for this session.
    Invalid(String),
    /// The session cannot be used: the code (`session_unknown`, …) and a message.
    Session(&'static str, String),
}

impl SessionError {
    fn session(code: &'static str, message: impl Into<String>) -> Self {
        Self::Session(code, message.into())
    }
}

type Result<T> = std::result::Result<T, SessionError>;

/// Every session of one engine.
#[derive(Clone)]
pub struct Sessions {
    inner: Arc<Inner>,
}

struct Inner {
    /// This engine's part of every id it hands out.
    replica: String,
    /// Why sessions cannot run here, if they cannot (a process that makes one call).
    unavailable: Option<String>,
    limits: SessionLimits,
    live: Mutex<HashMap<String, Arc<Session>>>,
    /// Sessions admitted but not live yet, per owner: counted against the limits, so
    /// starts racing each other cannot pass them together.
    starting: Mutex<HashMap<String, usize>>,
    tombs: Mutex<VecDeque<Tomb>>,
    directory: Mutex<Option<Arc<dyn Directory>>>,
    reaper: std::sync::Once,
    /// The sessions' process groups on disk, for the next engine to end should this
    /// process be killed outright where no cgroup holds them ([`ledger`]).
    ledger: Option<Arc<ledger::Ledger>>,
}

/// A session admitted and still starting: its place under the limits, given back on drop.
struct Admitted<'a> {
    starting: &'a Mutex<HashMap<String, usize>>,
    owner: String,
}

impl Drop for Admitted<'_> {
    fn drop(&mut self) {
        let mut starting = lock(self.starting);
        if let Some(n) = starting.get_mut(&self.owner) {
            *n -= 1;
            if *n == 0 {
                starting.remove(&self.owner);
            }
        }
    }
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions")
            .field("replica", &self.inner.replica)
            .field("live", &lock(&self.inner.live).len())
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    // getrandom(2) fails only on kernels older than 3.17; the time is a weak fallback.
    if rustix::rand::getrandom(&mut buf, rustix::rand::GetRandomFlags::empty()).is_err() {
        let t = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        for (i, b) in buf.iter_mut().enumerate() {
            *b = (t >> ((i % 16) * 8)) as u8 ^ (std::process::id() as u8);
        }
    }
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

/// A session's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Shell,
    Process,
    Terminal,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Self::Shell => "shell",
            Self::Process => "process",
            Self::Terminal => "terminal",
        }
    }
}

/// One running (or exited, not yet ended) session.
pub(crate) struct Session {
    id: String,
    owner: String,
    kind: Kind,
    command: Vec<String>,
    pid: u32,
    started_ms: u64,
    started: Instant,
    idle_timeout: Duration,
    lifetime: Duration,
    state: Mutex<State>,
    changed: watch::Sender<u64>,
    input: tokio::sync::Mutex<Input>,
    cgroup: Mutex<Option<CallCgroup>>,
    /// The secret in the shell's marker records and here-document delimiters.
    nonce: String,
    /// Where its process group is recorded until it is killed.
    ledger: Option<Arc<ledger::Ledger>>,
}

struct State {
    out: Ring,
    err: Ring,
    /// The cursor the last call returned: where a read without one starts.
    read: Cursor,
    last_used: Instant,
    /// When output last arrived.
    last_output: Option<Instant>,
    /// The shell's folder after its last command.
    cwd: PathBuf,
    seq: u64,
    running: Option<Running>,
    done: Option<Done>,
    exit: Option<Exit>,
    /// Why the session is being ended, once someone ends it.
    ending: Option<&'static str>,
}

/// A shell command in flight.
struct Running {
    seq: u64,
    command: String,
    started: Instant,
    from: Cursor,
}

/// The last shell command that completed.
struct Done {
    seq: u64,
    code: i32,
    upto: Cursor,
}

#[derive(Debug, Clone)]
struct Exit {
    code: Option<i32>,
    signal: Option<i32>,
    at_ms: u64,
}

impl State {
    fn ends(&self) -> Cursor {
        Cursor {
            out: self.out.end(),
            err: self.err.end(),
        }
    }

    fn status(&self) -> &'static str {
        match (&self.exit, &self.running) {
            (Some(_), _) => "exited",
            (None, Some(_)) => "busy",
            (None, None) => "running",
        }
    }

    /// The output after `from` (up to `upto`), and the cursor it ends at remembered as
    /// where the next read without a cursor starts.
    fn output(
        &mut self,
        from: Cursor,
        upto: Option<Cursor>,
        max: usize,
        tail: bool,
    ) -> (Slice, Slice) {
        let finished = self.exit.is_some();
        let upto = upto.unwrap_or(Cursor {
            out: u64::MAX,
            err: u64::MAX,
        });
        let out = self.out.read(from.out, upto.out, max, tail, finished);
        let err = self.err.read(from.err, upto.err, max, tail, finished);
        self.read = Cursor {
            out: out.next,
            err: err.next,
        };
        self.last_used = Instant::now();
        (out, err)
    }
}

impl Session {
    fn bump(&self) {
        self.changed.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// Output arrived on stdout, or stderr when `err`.
    pub(crate) fn push(&self, err: bool, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        {
            let mut st = lock(&self.state);
            match err {
                false => st.out.push(bytes),
                true => st.err.push(bytes),
            }
            st.last_output = Some(Instant::now());
        }
        self.bump();
    }

    /// A completion record the shell wrote: `<nonce> <seq> <status> <folder>`.
    pub(crate) fn marker(&self, record: &str) {
        let mut parts = record.splitn(4, ' ');
        let (Some(nonce), Some(seq), Some(code), Some(cwd)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return;
        };
        if nonce != self.nonce {
            return;
        }
        let (Ok(seq), Ok(code)) = (seq.parse::<u64>(), code.parse::<i32>()) else {
            return;
        };
        {
            let mut st = lock(&self.state);
            if st.running.as_ref().is_some_and(|r| r.seq == seq) {
                st.running = None;
            }
            st.cwd = PathBuf::from(cwd);
            let upto = st.ends();
            st.done = Some(Done { seq, code, upto });
        }
        self.bump();
    }

    /// The leader exited and the output ended (or its grace passed).
    pub(crate) fn exited(&self, status: Option<std::process::ExitStatus>) {
        use std::os::unix::process::ExitStatusExt;
        {
            let mut st = lock(&self.state);
            st.exit = Some(Exit {
                code: status.and_then(|s| s.code()),
                signal: status.and_then(|s| s.signal()),
                at_ms: now_ms(),
            });
        }
        self.kill_all();
        self.bump();
    }

    /// Kills the session's process group and empties its cgroup.
    pub(crate) fn kill_all(&self) {
        kill_group(self.pid);
        if let Some(cg) = lock(&self.cgroup).take() {
            cg.release();
        }
        if let Some(l) = &self.ledger {
            l.remove(self.pid);
        }
    }

    fn exit(&self) -> Option<Exit> {
        lock(&self.state).exit.clone()
    }

    /// Waits until `check` holds (it may also name a time to look again), or `deadline`.
    async fn wait(
        &self,
        deadline: tokio::time::Instant,
        mut check: impl FnMut(&State) -> Check,
    ) -> bool {
        let mut rx = self.changed.subscribe();
        loop {
            let wake = match check(&lock(&self.state)) {
                Check::Done => return true,
                Check::Again(at) => at.map_or(deadline, |a| a.min(deadline)),
                Check::Pending => deadline,
            };
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::select! {
                r = rx.changed() => if r.is_err() { return false },
                _ = tokio::time::sleep_until(wake) => {}
            }
        }
    }

    /// Signals every process of the session but the shell (a shell's running command), or
    /// the whole group (any other session).
    fn signal_job(&self, sig: rustix::process::Signal) {
        use rustix::process::{Pid, kill_process, kill_process_group};
        if self.kind == Kind::Shell {
            let cg = lock(&self.cgroup);
            for pid in spawn::members(cg.as_ref(), self.pid) {
                if let Some(p) = Pid::from_raw(pid) {
                    let _ = kill_process(p, sig);
                }
            }
        } else if let Some(p) = i32::try_from(self.pid).ok().and_then(Pid::from_raw) {
            let _ = kill_process_group(p, sig);
        }
    }

    fn touch(&self) {
        lock(&self.state).last_used = Instant::now();
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // However the session goes (the engine dropped, its task dropped with the runtime),
        // its processes go too.
        if self.exit().is_none() {
            self.kill_all();
        }
    }
}

enum Check {
    Done,
    Pending,
    /// Not yet; look again at this time even if nothing changes.
    Again(Option<tokio::time::Instant>),
}

/// What is left of an ended session, for a while.
#[derive(Debug, Clone)]
struct Tomb {
    id: String,
    owner: String,
    kind: Kind,
    command: Vec<String>,
    /// `ended` (session_end), `expired` (idle or lifetime), `exited` (ended by itself and
    /// then collected).
    how: &'static str,
    at_ms: u64,
    at: Instant,
    exit: Option<Exit>,
    stdout_tail: String,
    stderr_tail: String,
    cursor: Cursor,
}

/// Bytes of each stream a tombstone keeps.
const TOMB_TAIL: usize = 4096;

/// After the first new output of an `input`, how long the output must stay quiet before
/// the call returns.
const SETTLE: Duration = Duration::from_millis(100);

fn exit_json(e: Option<&Exit>) -> (Value, Value) {
    (
        e.and_then(|e| e.code).map_or(Value::Null, Value::from),
        e.and_then(|e| e.signal).map_or(Value::Null, Value::from),
    )
}

fn str_arg<'a>(args: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

fn u64_arg(args: &Map<String, Value>, key: &str, default: u64) -> u64 {
    args.get(key).and_then(Value::as_u64).unwrap_or(default)
}

fn until_arg(args: &Map<String, Value>) -> Result<Option<Regex>> {
    match str_arg(args, "until") {
        None => Ok(None),
        Some(p) => Regex::new(p).map(Some).map_err(|e| {
            SessionError::Invalid(format!("until: {p:?} is not a regular expression: {e}"))
        }),
    }
}

/// Whether the output after `from` matches `re` (looking at most at the last 256 KiB).
fn matched(st: &State, re: &Regex, from: Cursor) -> bool {
    const WINDOW: u64 = 256 * 1024;
    let look = |r: &Ring, from: u64| {
        let from = from.max(r.end().saturating_sub(WINDOW));
        r.end() > from && re.is_match(&r.read(from, u64::MAX, usize::MAX, false, true).text)
    };
    look(&st.out, from.out) || look(&st.err, from.err)
}

impl Sessions {
    /// Sessions of a new engine; `unavailable` says why none may start (a process that
    /// makes one call and exits).
    pub fn new(limits: SessionLimits, unavailable: Option<String>) -> Self {
        // Sessions can run here: first end what a killed server left, then keep our own
        // record.
        let ledger = unavailable
            .is_none()
            .then(|| ledger::Ledger::open(&ledger::Ledger::default_dir()))
            .flatten()
            .map(Arc::new);
        Self {
            inner: Arc::new(Inner {
                replica: random_hex(4),
                unavailable,
                limits,
                live: Mutex::default(),
                starting: Mutex::default(),
                tombs: Mutex::default(),
                directory: Mutex::default(),
                reaper: std::sync::Once::new(),
                ledger,
            }),
        }
    }

    /// This engine's replica id, the middle of its session ids.
    pub fn replica(&self) -> &str {
        &self.inner.replica
    }

    /// Records sessions in `directory` from now on.
    pub fn set_directory(&self, directory: Arc<dyn Directory>) {
        *lock(&self.inner.directory) = Some(directory);
    }

    /// Sessions held now, exited ones included.
    pub fn count(&self) -> usize {
        lock(&self.inner.live).len()
    }

    /// Ends every session (TERM, then KILL after `grace`): the server is stopping.
    pub async fn shutdown(&self, grace: Duration) {
        let all: Vec<Arc<Session>> = lock(&self.inner.live).values().cloned().collect();
        let ends = all.iter().map(|s| {
            self.inner
                .end(s, rustix::process::Signal::TERM, grace, "ended")
        });
        for end in ends {
            end.await;
        }
    }

    /// Runs the session built-in `name`.
    pub async fn call(&self, name: &str, args: &Map<String, Value>, ctx: Ctx<'_>) -> Result<Value> {
        if let Some(why) = &self.inner.unavailable {
            return Err(SessionError::session("sessions_unavailable", why.clone()));
        }
        let max_wait = MAX_WAIT.min(Duration::from_millis(ctx.tool.timeout_ms));
        match name {
            "session_start" => self.start(args, &ctx, max_wait).await,
            "session_exec" => self.exec(args, &ctx, max_wait).await,
            "session_read" => self.read(args, &ctx, max_wait).await,
            "session_end" => self.end(args, &ctx).await,
            "session_list" => Ok(self.list(&ctx)),
            other => Err(SessionError::Invalid(format!(
                "unknown session tool {other:?}"
            ))),
        }
    }

    fn start_reaper(&self) {
        self.inner.reaper.call_once(|| {
            let weak = Arc::downgrade(&self.inner);
            tokio::spawn(reap(weak));
        });
    }

    fn note(&self, event: DirectoryEvent) {
        if let Some(d) = lock(&self.inner.directory).clone() {
            d.note(event);
        }
    }

    async fn start(
        &self,
        args: &Map<String, Value>,
        ctx: &Ctx<'_>,
        max_wait: Duration,
    ) -> Result<Value> {
        let config = &ctx.tool.config;
        let command: Option<Vec<String>> = args.get("command").and_then(Value::as_array).map(|a| {
            a.iter()
                .map(|v| v.as_str().unwrap_or_default().to_owned())
                .collect()
        });
        let tty = args.get("tty").and_then(Value::as_bool).unwrap_or(false);
        let kind = match (&command, tty) {
            (None, false) => Kind::Shell,
            (_, true) => Kind::Terminal,
            (Some(_), false) => Kind::Process,
        };
        let argv = command.clone().unwrap_or_else(|| {
            let mut shell = vec!["bash".to_string(), "--noprofile".into(), "--norc".into()];
            if tty {
                shell.push("-i".into());
            }
            shell
        });
        let until = until_arg(args)?;
        let cwd_arg = str_arg(args, "cwd").unwrap_or(".");
        let cwd = ctx
            .workspace
            .resolve(cwd_arg, true)
            .map_err(|e| SessionError::Invalid(format!("cwd: {e}")))?;
        if !cwd.is_dir() {
            return Err(SessionError::Invalid(format!(
                "cwd: {cwd_arg:?} is not a folder"
            )));
        }
        let env = environment(ctx.tool, args.get("env"))?;
        let admitted = self.admit(ctx)?;

        let ring_bytes = u64_arg(config, "ring_bytes", 1 << 20) as usize;
        let idle_timeout =
            Duration::from_millis(u64_arg(config, "idle_timeout_ms", 30 * 60 * 1000));
        let lifetime = Duration::from_millis(u64_arg(config, "max_lifetime_ms", 8 * 3600 * 1000));
        let size = (
            u64_arg(args, "cols", 120).min(1000) as u16,
            u64_arg(args, "rows", 40).min(1000) as u16,
        );
        let spec = spawn::Spec {
            argv: &argv,
            env,
            cwd: &cwd,
            tty: tty.then_some(size),
            limits: ctx.limits,
            niceness: ctx.niceness,
            shell: kind == Kind::Shell,
        };
        let started = spawn::start(spec, ctx.cgroups)
            .await
            .map_err(|e| SessionError::Invalid(format!("cannot start the session: {e}")))?;
        let id = format!("s-{}-{}", self.inner.replica, random_hex(16));
        let session = Arc::new(Session {
            id: id.clone(),
            owner: ctx.caller.to_owned(),
            kind,
            command: argv.clone(),
            pid: started.pid,
            started_ms: now_ms(),
            started: Instant::now(),
            idle_timeout,
            lifetime,
            state: Mutex::new(State {
                out: Ring::new(ring_bytes),
                err: Ring::new(ring_bytes),
                read: Cursor::default(),
                last_used: Instant::now(),
                last_output: None,
                cwd: cwd.clone(),
                seq: 0,
                running: None,
                done: None,
                exit: None,
                ending: None,
            }),
            changed: watch::Sender::new(0),
            input: tokio::sync::Mutex::new(started.input),
            cgroup: Mutex::new(started.cgroup),
            nonce: random_hex(16),
            ledger: self.inner.ledger.clone(),
        });
        // Written down before the pump can see the leader exit and strike it off.
        if let Some(l) = &self.inner.ledger {
            l.add(session.pid);
        }
        tokio::spawn(spawn::pump(
            session.clone(),
            started.child,
            started.out,
            started.err,
            started.records,
            started.replies,
        ));
        lock(&self.inner.live).insert(id.clone(), session.clone());
        drop(admitted);
        self.start_reaper();
        self.note(DirectoryEvent::Started {
            id: id.clone(),
            replica: self.inner.replica.clone(),
            owner: ctx.caller.to_owned(),
            command: argv.join(" "),
        });
        tracing::info!(session = %id, owner = ctx.caller, command = %argv.join(" "), "session started");

        let wait = Duration::from_millis(u64_arg(args, "wait_ms", 0)).min(max_wait);
        if !wait.is_zero() {
            let deadline = tokio::time::Instant::now() + wait;
            let from = Cursor::default();
            session
                .wait(deadline, |st| match &until {
                    _ if st.exit.is_some() => Check::Done,
                    Some(re) if matched(st, re, from) => Check::Done,
                    Some(_) => Check::Pending,
                    None if st.ends() != from => Check::Done,
                    None => Check::Pending,
                })
                .await;
        }
        let mut st = lock(&session.state);
        let (out, err) = st.output(Cursor::default(), None, 65536, false);
        let mut v = json!({
            "session_id": id,
            "kind": kind.name(),
            "command": argv,
            "pid": session.pid,
            "cwd": cwd.to_string_lossy(),
            "status": st.status(),
            "expires": {
                "idle_ms": idle_timeout.as_millis() as u64,
                "at_ms": session.started_ms + lifetime.as_millis() as u64,
            },
        });
        put_output(&mut v, kind, &out, &err);
        put_exit(&mut v, st.exit.as_ref());
        Ok(v)
    }

    /// Refuses a new session over the limits, naming the caller's sessions; otherwise holds
    /// its place (counted with the running ones) until the returned value is dropped —
    /// once the session is live, or failed to start.
    fn admit(&self, ctx: &Ctx<'_>) -> Result<Admitted<'_>> {
        let live = lock(&self.inner.live);
        let mut starting = lock(&self.inner.starting);
        let running: Vec<&Arc<Session>> = live.values().filter(|s| s.exit().is_none()).collect();
        let mine: Vec<&&Arc<Session>> = running.iter().filter(|s| s.owner == ctx.caller).collect();
        let mine_starting = starting.get(ctx.caller).copied().unwrap_or(0);
        let all_starting: usize = starting.values().sum();
        let list = || {
            mine.iter()
                .map(|s| {
                    format!(
                        "{} ({}, idle {} s)",
                        s.id,
                        s.command.join(" "),
                        lock(&s.state).last_used.elapsed().as_secs()
                    )
                })
                .collect::<Vec<_>>()
                .join("; ")
        };
        let limits = self.inner.limits;
        if mine.len() + mine_starting >= limits.max_per_caller {
            return Err(SessionError::session(
                "session_limit",
                format!(
                    "you have {} sessions running, the most one caller may have; end one with session_end first: {}",
                    mine.len() + mine_starting,
                    list()
                ),
            ));
        }
        if running.len() + all_starting >= limits.max_total {
            return Err(SessionError::session(
                "session_limit",
                format!(
                    "this server runs {} sessions, its limit; none is ended to make room. Your sessions: {}",
                    running.len() + all_starting,
                    if mine.is_empty() {
                        "none".to_string()
                    } else {
                        list()
                    }
                ),
            ));
        }
        *starting.entry(ctx.caller.to_owned()).or_default() += 1;
        Ok(Admitted {
            starting: &self.inner.starting,
            owner: ctx.caller.to_owned(),
        })
    }

    /// The caller's session `id`, or why it cannot be had.
    async fn find(&self, args: &Map<String, Value>, ctx: &Ctx<'_>) -> Result<Found> {
        let id = str_arg(args, "session_id").unwrap_or_default().trim();
        let visible = |owner: &str| ctx.admin || owner == ctx.caller;
        if let Some(s) = lock(&self.inner.live).get(id).filter(|s| visible(&s.owner)) {
            s.touch();
            return Ok(Found::Live(s.clone()));
        }
        if let Some(t) = lock(&self.inner.tombs)
            .iter()
            .find(|t| t.id == id && visible(&t.owner))
        {
            return Ok(Found::Tomb(t.clone()));
        }
        let replica = id.strip_prefix("s-").and_then(|r| r.split('-').next());
        let directory = lock(&self.inner.directory).clone();
        if let (Some(r), Some(d)) = (replica, directory)
            && r != self.inner.replica
            && let Some(at) = d.locate(id).await
        {
            return Err(match at.alive {
                _ if at.status != "running" => SessionError::session(
                    "session_ended",
                    format!(
                        "session {id} lived on replica {} and has {} (this is replica {}); start a new one",
                        at.replica, at.status, self.inner.replica
                    ),
                ),
                true => SessionError::session(
                    "session_elsewhere",
                    format!(
                        "session {id} lives on replica {} (this is replica {}); its calls must reach that server — route by the replica in the id",
                        at.replica, self.inner.replica
                    ),
                ),
                false => SessionError::session(
                    "session_lost",
                    format!(
                        "session {id} lived on replica {}, which stopped reporting it (last seen {} s ago, status {}); its processes ended with it — start a new session",
                        at.replica,
                        now_ms().saturating_sub(at.last_seen_ms) / 1000,
                        at.status
                    ),
                ),
            });
        }
        let mine: Vec<String> = lock(&self.inner.live)
            .values()
            .filter(|s| visible(&s.owner))
            .map(|s| s.id.clone())
            .collect();
        Err(SessionError::session(
            "session_unknown",
            format!(
                "no session {id:?} here (ids come from session_start on this server and end with it); your sessions: {}",
                if mine.is_empty() {
                    "none".into()
                } else {
                    mine.join(", ")
                }
            ),
        ))
    }

    async fn exec(
        &self,
        args: &Map<String, Value>,
        ctx: &Ctx<'_>,
        max_wait: Duration,
    ) -> Result<Value> {
        let s = match self.find(args, ctx).await? {
            Found::Live(s) => s,
            Found::Tomb(t) => return Err(t.gone()),
        };
        let until = until_arg(args)?;
        let command = str_arg(args, "command");
        let input = str_arg(args, "input");
        let keys: Vec<&str> = args
            .get("keys")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let eof = args.get("eof").and_then(Value::as_bool).unwrap_or(false);
        let given = [command.is_some(), input.is_some(), !keys.is_empty(), eof];
        if given.iter().filter(|g| **g).count() != 1 {
            return Err(SessionError::Invalid(
                "give exactly one of `command`, `input`, `keys` or `eof`".into(),
            ));
        }
        let wait = Duration::from_millis(u64_arg(args, "timeout_ms", 10_000)).min(max_wait);
        let max_bytes = u64_arg(args, "max_bytes", 65536) as usize;
        let started = Instant::now();
        let deadline = tokio::time::Instant::now() + wait;
        if let Some(ex) = s.exit() {
            return Err(SessionError::session(
                "session_ended",
                format!(
                    "session {} has exited ({}); read its output with session_read, or end it and start another",
                    s.id,
                    describe_exit(Some(&ex))
                ),
            ));
        }
        if let Some(command) = command {
            return self
                .run_command(&s, command, until.as_ref(), deadline, max_bytes, started)
                .await;
        }
        let from = lock(&s.state).ends();
        if let Some(text) = input {
            write_input(&s, text.as_bytes()).await?;
        } else if eof {
            close_input(&s).await?;
        } else {
            send_keys(&s, &keys).await?;
        }
        // Return on exit, on `until`, or once output that began after the input settles.
        s.wait(deadline, |st| {
            if st.exit.is_some() {
                return Check::Done;
            }
            if let Some(re) = &until {
                return match matched(st, re, from) {
                    true => Check::Done,
                    false => Check::Pending,
                };
            }
            if st.ends() == from {
                return Check::Pending;
            }
            match st.last_output {
                Some(t) if t.elapsed() >= SETTLE => Check::Done,
                Some(t) => Check::Again(Some(tokio::time::Instant::from_std(t + SETTLE))),
                None => Check::Again(Some(tokio::time::Instant::now() + SETTLE)),
            }
        })
        .await;
        let mut st = lock(&s.state);
        let (out, err) = st.output(from, None, max_bytes, false);
        let mut v = json!({
            "session_id": s.id,
            "status": st.status(),
            "elapsed_ms": started.elapsed().as_millis() as u64,
        });
        put_output(&mut v, s.kind, &out, &err);
        put_exit(&mut v, st.exit.as_ref());
        Ok(v)
    }

    async fn run_command(
        &self,
        s: &Arc<Session>,
        command: &str,
        until: Option<&Regex>,
        deadline: tokio::time::Instant,
        max_bytes: usize,
        started: Instant,
    ) -> Result<Value> {
        if s.kind != Kind::Shell {
            return Err(SessionError::Invalid(format!(
                "session {} runs `{}`, not a shell: send it `input` (with a newline to submit a line) or `keys` instead of a `command`",
                s.id,
                s.command.join(" ")
            )));
        }
        if command.contains('\0') {
            return Err(SessionError::Invalid(
                "command: contains a NUL character".into(),
            ));
        }
        // A command whose output has all arrived may be a moment from its completion record:
        // give it that moment before calling the session busy.
        let moment = tokio::time::Instant::now() + Duration::from_millis(250);
        s.wait(moment.min(deadline), |st| {
            match st.running.is_none() || st.exit.is_some() {
                true => Check::Done,
                false => Check::Pending,
            }
        })
        .await;
        let (seq, from) = {
            let mut st = lock(&s.state);
            if let Some(r) = &st.running {
                let out = st.out.read(r.from.out, u64::MAX, 2000, true, false);
                return Err(SessionError::session(
                    "session_busy",
                    format!(
                        "session {} is still running `{}` (for {} s; a shell session runs one command at a time). Wait with session_read, or interrupt it with session_exec keys [\"C-c\"]. Its output so far ends with: {}",
                        s.id,
                        r.command,
                        r.started.elapsed().as_secs(),
                        out.text
                    ),
                ));
            }
            st.seq += 1;
            let from = st.ends();
            st.running = Some(Running {
                seq: st.seq,
                command: command.chars().take(200).collect(),
                started: Instant::now(),
                from,
            });
            (st.seq, from)
        };
        let script = spawn::wrap(command, &s.nonce, seq);
        if let Err(e) = write_input(s, script.as_bytes()).await {
            lock(&s.state).running = None;
            return Err(e);
        }
        s.wait(deadline, |st| {
            let done = st.exit.is_some() || st.done.as_ref().is_some_and(|d| d.seq == seq);
            match until {
                _ if done => Check::Done,
                Some(re) if matched(st, re, from) => Check::Done,
                _ => Check::Pending,
            }
        })
        .await;
        let mut st = lock(&s.state);
        let done = st
            .done
            .as_ref()
            .filter(|d| d.seq == seq)
            .map(|d| (d.code, d.upto));
        let upto = done.map(|(_, u)| u);
        let (out, err) = st.output(from, upto, max_bytes, false);
        let mut v = json!({
            "session_id": s.id,
            "elapsed_ms": started.elapsed().as_millis() as u64,
        });
        let m = v.as_object_mut().expect("object");
        match (done, &st.exit) {
            (Some((code, _)), _) => {
                m.insert("status".into(), "completed".into());
                m.insert("exit_code".into(), code.into());
                m.insert("cwd".into(), st.cwd.to_string_lossy().into());
            }
            (None, Some(ex)) => {
                m.insert("status".into(), "session_ended".into());
                let (code, signal) = exit_json(Some(ex));
                m.insert("exit_code".into(), code);
                m.insert("signal".into(), signal);
                m.insert(
                    "hint".into(),
                    "the shell exited (`exit`, or `set -e` and a failing command): start a new session".into(),
                );
            }
            (None, None) => {
                m.insert("status".into(), "running".into());
                m.insert(
                    "hint".into(),
                    "still running: call session_read with this cursor (and a timeout_ms) to wait for more, or session_exec with keys [\"C-c\"] to interrupt it".into(),
                );
            }
        }
        put_output(&mut v, s.kind, &out, &err);
        Ok(v)
    }

    async fn read(
        &self,
        args: &Map<String, Value>,
        ctx: &Ctx<'_>,
        max_wait: Duration,
    ) -> Result<Value> {
        let s = match self.find(args, ctx).await? {
            Found::Live(s) => s,
            Found::Tomb(t) => return Ok(t.json()),
        };
        let until = until_arg(args)?;
        let from = match str_arg(args, "cursor") {
            Some(c) => Cursor::parse(c).map_err(SessionError::Invalid)?,
            None => lock(&s.state).read,
        };
        let tail = args.get("tail").and_then(Value::as_bool).unwrap_or(false);
        let max_bytes = u64_arg(args, "max_bytes", 65536) as usize;
        let wait = Duration::from_millis(u64_arg(args, "timeout_ms", 0)).min(max_wait);
        if !wait.is_zero() {
            let deadline = tokio::time::Instant::now() + wait;
            s.wait(deadline, |st| match &until {
                _ if st.exit.is_some() => Check::Done,
                Some(re) if matched(st, re, from) => Check::Done,
                Some(_) => Check::Pending,
                None if st.ends().out > from.out || st.ends().err > from.err => Check::Done,
                None => Check::Pending,
            })
            .await;
        }
        let mut st = lock(&s.state);
        let (out, err) = st.output(from, None, max_bytes, tail);
        let mut v = json!({"session_id": s.id, "status": st.status()});
        if let Some(r) = &st.running {
            v["running_command"] = r.command.clone().into();
        }
        put_output(&mut v, s.kind, &out, &err);
        put_exit(&mut v, st.exit.as_ref());
        Ok(v)
    }

    async fn end(&self, args: &Map<String, Value>, ctx: &Ctx<'_>) -> Result<Value> {
        let s = match self.find(args, ctx).await? {
            Found::Live(s) => s,
            Found::Tomb(t) => {
                let mut v = t.json();
                v["already_ended"] = true.into();
                return Ok(v);
            }
        };
        let sig = match str_arg(args, "signal").unwrap_or("TERM") {
            "INT" => rustix::process::Signal::INT,
            "HUP" => rustix::process::Signal::HUP,
            "KILL" => rustix::process::Signal::KILL,
            _ => rustix::process::Signal::TERM,
        };
        let grace = Duration::from_millis(u64_arg(args, "grace_ms", 2000)).min(MAX_WAIT);
        Ok(self.inner.end(&s, sig, grace, "ended").await.json())
    }

    fn list(&self, ctx: &Ctx<'_>) -> Value {
        let live: Vec<Arc<Session>> = lock(&self.inner.live)
            .values()
            .filter(|s| ctx.admin || s.owner == ctx.caller)
            .cloned()
            .collect();
        let mut rows: Vec<Value> = live
            .iter()
            .map(|s| {
                let st = lock(&s.state);
                let mut v = json!({
                    "session_id": s.id,
                    "kind": s.kind.name(),
                    "command": s.command,
                    "cwd": st.cwd.to_string_lossy(),
                    "pid": s.pid,
                    "status": st.status(),
                    "started_ms": s.started_ms,
                    "idle_ms": st.last_used.elapsed().as_millis() as u64,
                    "buffered_bytes": st.out.len() + st.err.len(),
                    "cursor": st.ends().render(),
                });
                if ctx.admin {
                    v["owner"] = s.owner.clone().into();
                }
                if let Some(r) = &st.running {
                    v["running_command"] = r.command.clone().into();
                }
                put_exit(&mut v, st.exit.as_ref());
                v
            })
            .collect();
        rows.sort_by_key(|r| r["started_ms"].as_u64());
        let limits = self.inner.limits;
        json!({
            "sessions": rows,
            "limits": {"per_caller": limits.max_per_caller, "per_server": limits.max_total},
            "replica": self.inner.replica,
        })
    }
}

enum Found {
    Live(Arc<Session>),
    Tomb(Tomb),
}

fn put_output(v: &mut Value, kind: Kind, out: &Slice, err: &Slice) {
    let m = v.as_object_mut().expect("object");
    m.insert("stdout".into(), out.text.clone().into());
    if kind != Kind::Terminal {
        m.insert("stderr".into(), err.text.clone().into());
    }
    m.insert(
        "cursor".into(),
        Cursor {
            out: out.next,
            err: err.next,
        }
        .render()
        .into(),
    );
    m.insert("dropped_bytes".into(), (out.dropped + err.dropped).into());
    m.insert("more".into(), (out.more || err.more).into());
    if out.lossy || err.lossy {
        m.insert("lossy".into(), true.into());
    }
}

fn put_exit(v: &mut Value, exit: Option<&Exit>) {
    if let Some(e) = exit {
        let (code, signal) = exit_json(Some(e));
        v["exit_code"] = code;
        v["signal"] = signal;
        v["exited_ms"] = e.at_ms.into();
    }
}

fn describe_exit(e: Option<&Exit>) -> String {
    match e {
        Some(Exit { code: Some(c), .. }) => format!("exit status {c}"),
        Some(Exit {
            signal: Some(s), ..
        }) => format!("killed by signal {s}"),
        _ => "no exit status".into(),
    }
}

impl Tomb {
    fn gone(&self) -> SessionError {
        let code = match self.how {
            "expired" => "session_expired",
            _ => "session_ended",
        };
        SessionError::session(
            code,
            format!(
                "session {} {} at {} ms since the epoch ({}); start a new one. Its output ended with: {}",
                self.id,
                self.how,
                self.at_ms,
                describe_exit(self.exit.as_ref()),
                crate::tail(&self.stdout_tail, 500)
            ),
        )
    }

    fn json(&self) -> Value {
        let mut v = json!({
            "session_id": self.id,
            "kind": self.kind.name(),
            "command": self.command,
            "status": self.how,
            "ended_ms": self.at_ms,
            "stdout_tail": self.stdout_tail,
            "cursor": self.cursor.render(),
            "message": format!("session {} {} at {} ms since the epoch ({})", self.id, self.how, self.at_ms, describe_exit(self.exit.as_ref())),
        });
        if self.kind != Kind::Terminal {
            v["stderr_tail"] = self.stderr_tail.clone().into();
        }
        let (code, signal) = exit_json(self.exit.as_ref());
        v["exit_code"] = code;
        v["signal"] = signal;
        v
    }
}

impl Inner {
    /// Ends `s`: `sig` to its group, KILL after `grace`, its output drained; it becomes a
    /// tombstone. Whoever ends it first decides `how`.
    async fn end(
        &self,
        s: &Arc<Session>,
        sig: rustix::process::Signal,
        grace: Duration,
        how: &'static str,
    ) -> Tomb {
        let how = {
            let mut st = lock(&s.state);
            *st.ending.get_or_insert(how)
        };
        if s.exit().is_none() {
            if let Some(p) = i32::try_from(s.pid)
                .ok()
                .and_then(rustix::process::Pid::from_raw)
            {
                let _ = rustix::process::kill_process_group(p, sig);
            }
            let deadline = tokio::time::Instant::now() + grace;
            if !s
                .wait(deadline, |st| {
                    if st.exit.is_some() {
                        Check::Done
                    } else {
                        Check::Pending
                    }
                })
                .await
            {
                s.kill_all();
                // The pump reports the exit once the output is drained (at most its grace).
                let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
                s.wait(deadline, |st| {
                    if st.exit.is_some() {
                        Check::Done
                    } else {
                        Check::Pending
                    }
                })
                .await;
            }
        }
        s.kill_all();
        self.bury(s, how)
    }

    /// Moves `s` from the live sessions to the tombstones.
    fn bury(&self, s: &Arc<Session>, how: &'static str) -> Tomb {
        let st = lock(&s.state);
        let tail = |r: &Ring| r.read(0, u64::MAX, TOMB_TAIL, true, true).text;
        let tomb = Tomb {
            id: s.id.clone(),
            owner: s.owner.clone(),
            kind: s.kind,
            command: s.command.clone(),
            how,
            at_ms: now_ms(),
            at: Instant::now(),
            exit: st.exit.clone(),
            stdout_tail: tail(&st.out),
            stderr_tail: tail(&st.err),
            cursor: st.ends(),
        };
        drop(st);
        let removed = lock(&self.live).remove(&s.id).is_some();
        if removed {
            let mut tombs = lock(&self.tombs);
            tombs.push_back(tomb.clone());
            while tombs.len() > self.limits.max_tombstones {
                tombs.pop_front();
            }
            drop(tombs);
            if let Some(d) = lock(&self.directory).clone() {
                d.note(DirectoryEvent::Ended {
                    id: s.id.clone(),
                    status: how.into(),
                });
            }
            tracing::info!(session = %s.id, how, "session ended");
        }
        tomb
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        for s in lock(&self.live).values() {
            s.kill_all();
        }
    }
}

/// Ends idle and old sessions, forgets old tombstones, and reports the live sessions to the
/// directory; stops when the engine is gone.
async fn reap(inner: Weak<Inner>) {
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_beat = Instant::now();
    loop {
        tick.tick().await;
        let Some(inner) = inner.upgrade() else { return };
        let all: Vec<Arc<Session>> = lock(&inner.live).values().cloned().collect();
        for s in &all {
            let (idle, ending) = {
                let st = lock(&s.state);
                (st.last_used.elapsed(), st.ending.is_some())
            };
            if !ending && (idle >= s.idle_timeout || s.started.elapsed() >= s.lifetime) {
                lock(&s.state).ending.get_or_insert("expired");
                let inner = inner.clone();
                let s = s.clone();
                tokio::spawn(async move {
                    inner
                        .end(
                            &s,
                            rustix::process::Signal::TERM,
                            Duration::from_secs(1),
                            "expired",
                        )
                        .await;
                });
            }
        }
        let keep = inner.limits.tombstone_for;
        lock(&inner.tombs).retain(|t| t.at.elapsed() < keep);
        if last_beat.elapsed() >= HEARTBEAT {
            last_beat = Instant::now();
            if let Some(d) = lock(&inner.directory).clone() {
                d.note(DirectoryEvent::Alive {
                    replica: inner.replica.clone(),
                    ids: all.iter().map(|s| s.id.clone()).collect(),
                });
            }
        }
    }
}

/// The session's environment: PATH, HOME and the user's names from the server's, the tool's
/// allowlisted variables and `env`, settings that keep programs from paging or colouring,
/// then the caller's `env`.
fn environment(tool: &Tool, extra: Option<&Value>) -> Result<BTreeMap<String, String>> {
    let mut env: BTreeMap<String, String> = ["PATH", "HOME", "USER", "LOGNAME"]
        .iter()
        .chain(
            tool.env_allowlist
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>()
                .iter(),
        )
        .filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v)))
        .collect();
    env.entry("PATH".into())
        .or_insert_with(|| crate::process::DEFAULT_PATH.into());
    env.extend(tool.env.clone());
    for (k, v) in [
        ("TERM", "dumb"),
        ("NO_COLOR", "1"),
        ("PAGER", "cat"),
        ("GIT_PAGER", "cat"),
        ("GH_PAGER", "cat"),
        ("HISTFILE", "/dev/null"),
    ] {
        env.insert(k.into(), v.into());
    }
    if !env.contains_key("LANG") && !env.contains_key("LC_ALL") {
        env.insert("LANG".into(), "C.UTF-8".into());
    }
    if let Some(Value::Object(extra)) = extra {
        for (k, v) in extra {
            let Some(v) = v.as_str() else {
                return Err(SessionError::Invalid(format!("env.{k}: values are text")));
            };
            if k.is_empty() || k.contains(['=', '\0']) || v.contains('\0') {
                return Err(SessionError::Invalid(format!(
                    "env.{k}: names are non-empty without `=`, and neither holds a NUL"
                )));
            }
            env.insert(k.clone(), v.to_owned());
        }
    }
    Ok(env)
}

async fn write_input(s: &Session, bytes: &[u8]) -> Result<()> {
    let mut input = s.input.lock().await;
    let r = match &mut *input {
        Input::Pipe(Some(w)) => w.write_all(bytes).await,
        Input::Shell(w) => w.write_all(bytes).await,
        Input::Pipe(None) => {
            return Err(SessionError::Invalid(format!(
                "session {}'s input was closed (eof)",
                s.id
            )));
        }
        Input::Terminal(w) => w.write_all(bytes).await,
    };
    r.map_err(|e| {
        SessionError::session(
            "session_ended",
            format!("session {}: writing its input: {e}", s.id),
        )
    })
}

async fn close_input(s: &Session) -> Result<()> {
    if s.kind == Kind::Shell {
        return Err(SessionError::Invalid(
            "a shell session's input carries its commands; end it with session_end".into(),
        ));
    }
    let mut input = s.input.lock().await;
    match &mut *input {
        Input::Pipe(w) => {
            w.take();
            Ok(())
        }
        Input::Shell(_) => Err(SessionError::Invalid(
            "a shell session's input carries its commands; end it with session_end".into(),
        )),
        Input::Terminal(w) => w.write_all(&[4]).await.map_err(|e| {
            SessionError::session("session_ended", format!("writing to the terminal: {e}"))
        }),
    }
}

async fn send_keys(s: &Session, keys: &[&str]) -> Result<()> {
    use rustix::process::Signal;
    for key in keys {
        let bytes = term::key_bytes(key).ok_or_else(|| {
            SessionError::Invalid(format!(
                "keys: unknown key {key:?} (known: C-c, C-d, C-z, C-\\, C-<letter>, Enter, Tab, Esc, Backspace, Up, Down, Left, Right, Home, End, PageUp, PageDown, Delete)"
            ))
        })?;
        if s.kind == Kind::Terminal {
            write_input(s, &bytes).await?;
            continue;
        }
        // Without a terminal, control keys become what a terminal would make of them.
        match bytes.as_slice() {
            [3] => s.signal_job(Signal::INT),
            [0x1c] => s.signal_job(Signal::QUIT),
            [0x1a] => s.signal_job(Signal::TSTP),
            [4] => close_input(s).await?,
            [b'\r'] if s.kind != Kind::Shell => write_input(s, b"\n").await?,
            _ if s.kind == Kind::Shell => {
                return Err(SessionError::Invalid(format!(
                    "keys: a shell session takes only C-c, C-\\ and C-z (its commands read no input); {key:?} needs a process or tty session"
                )));
            }
            _ => write_input(s, &bytes).await?,
        }
    }
    Ok(())
}
