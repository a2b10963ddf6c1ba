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
//!
//! Here: the engine-facing API and the types; [`start`] `session_start`; [`shell`]
//! `session_exec` (the shell protocol, input and keys); [`expiry`] `session_read`,
//! `session_end`, `session_list`, the reaper and tombstones; [`admit`] limits and owners;
//! [`state`] one session's output, completion, exit and waits; [`spawn`] the processes and
//! their pump; [`ring`], [`term`] and [`ledger`] as below.

mod admit;
mod expiry;
mod ledger;
mod ring;
mod shell;
mod spawn;
mod start;
mod state;
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
use toolsmith_core::result::ToolResult;

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
    /// Runs `call` at the replica reachable at `url`, which holds its session: the holder's
    /// answer, or why it could not be reached.
    fn forward<'a>(
        &'a self,
        url: &'a str,
        call: Forward<'a>,
    ) -> Pin<Box<dyn Future<Output = std::result::Result<ToolResult, crate::BoxError>> + Send + 'a>>;
}

/// A session call for the replica that holds its session, made as its caller.
#[derive(Debug, Clone, Copy)]
pub struct Forward<'a> {
    /// `session_exec`, `session_read` or `session_end`.
    pub tool: &'a str,
    pub arguments: &'a Map<String, Value>,
    pub caller: &'a str,
    pub admin: bool,
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
    /// Who started it: only they (and admins) learn where it lives.
    pub owner: String,
    /// Whether its replica reported it within the last few heartbeats.
    pub alive: bool,
    pub status: String,
    pub last_seen_ms: u64,
    /// Where its replica can be reached, when it gave an address.
    pub url: Option<String>,
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
    pub sandbox: &'a crate::sandbox::Sandboxes,
    /// Another replica forwarded this call here: it is answered here, never sent on.
    pub forwarded: bool,
}

/// Why a session call failed.
#[derive(Debug)]
pub enum SessionError {
    /// The arguments do not make sense for this session.
    Invalid(String),
    /// The session cannot be used: the code (`session_unknown`, …) and a message.
    Session(&'static str, String),
    /// The replica holding the session (named here) answered the call.
    Answered(Box<ToolResult>, String),
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

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions")
            .field("replica", &self.inner.replica)
            .field("live", &lock(&self.inner.live).len())
            .finish()
    }
}

/// Where engines record their sessions' process groups (no sandboxed process reaches it).
pub fn ledger_dir() -> std::path::PathBuf {
    ledger::Ledger::default_dir()
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// `bytes` random bytes as hex, from getrandom(2).
pub fn random_hex(bytes: usize) -> String {
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

    /// Sessions held now by kind (`shell`, `process`, `terminal`), exited ones included.
    pub fn count_by_kind(&self) -> [(&'static str, usize); 3] {
        let live = lock(&self.inner.live);
        let count = |kind: Kind| live.values().filter(|s| s.kind == kind).count();
        [
            ("shell", count(Kind::Shell)),
            ("process", count(Kind::Process)),
            ("terminal", count(Kind::Terminal)),
        ]
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
        if matches!(name, "session_exec" | "session_read" | "session_end")
            && let Some(answer) = self.forward(name, args, &ctx).await
        {
            return answer;
        }
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

    fn note(&self, event: DirectoryEvent) {
        if let Some(d) = lock(&self.inner.directory).clone() {
            d.note(event);
        }
    }
}

enum Found {
    Live(Arc<Session>),
    Tomb(Tomb),
}
