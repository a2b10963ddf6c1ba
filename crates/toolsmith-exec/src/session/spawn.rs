//! Starting a session's processes and draining their output.
//!
//! A session is one process group, born in a pids cgroup slot it holds for its life, spawned
//! with `posix_spawn` like every tool process (no `fork` of the gateway, no `pre_exec`):
//! - pipe sessions (a shell, or any program): stdin, stdout and stderr are pipes and the
//!   program leads a new process group;
//! - terminal sessions: a PTY made with rustix, its peer as the program's stdio, launched
//!   through util-linux `setsid --ctty`, which makes the program a session leader with the
//!   PTY as its controlling terminal (so Ctrl-C reaches its foreground job).
//!
//! One task per session ([`pump`]) drains every stream into the session's rings as output
//! arrives, reads the shell's completion records, and notices the leader's exit.
//!
//! A shell session's stdin is one end of a stream socket pair ([`Records`]): the gateway
//! writes the commands into it and the shell writes its completion records back through it
//! (`>&0`). The kernel tells the reader which process wrote each piece (`SCM_CREDENTIALS`),
//! and only what the shell process itself wrote counts: a job of the session that gets hold
//! of the socket — an inherited copy, `pidfd_getfd`, — and knows the nonce still cannot
//! forge a completion. (A process that can ptrace the shell, or root with CAP_SYS_ADMIN,
//! which may claim another pid, still can.)

use std::collections::BTreeMap;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use toolsmith_core::model::Limits;

use super::Session;
use super::term::Filter;
use crate::limits::{self, CallCgroup, Cgroups};
use crate::programs::resolve_program;

/// What to start.
pub struct Spec<'a> {
    pub argv: &'a [String],
    /// `argv[0]` as found on the session's PATH (by the caller, which sandboxes by it).
    pub program: &'a Path,
    pub env: BTreeMap<String, String>,
    pub cwd: &'a Path,
    /// Columns and rows of a terminal session.
    pub tty: Option<(u16, u16)>,
    pub limits: Limits,
    pub niceness: i32,
    /// A shell: stdin is a socket that also carries its completion records (see [`Records`]).
    pub shell: bool,
    /// The kernel sandbox its processes run in.
    pub confinement: Option<crate::sandbox::Confinement>,
}

/// Where a session's input goes.
pub enum Input {
    Pipe(Option<ChildStdin>),
    /// A shell's stdin, the gateway's end of its socket.
    Shell(tokio::net::unix::OwnedWriteHalf),
    Terminal(pipe::Sender),
}

/// The gateway's end of a shell's socket, read for completion records: only bytes the shell
/// process itself wrote are returned; anything another process wrote is dropped.
pub struct Records {
    sock: tokio::net::unix::OwnedReadHalf,
    shell: i32,
    /// Bytes dropped because another process wrote them.
    pub forged: u64,
}

impl Records {
    /// The next bytes the shell wrote; 0 at end of stream.
    pub async fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};
        use std::io::IoSliceMut;
        use std::mem::MaybeUninit;
        let stream: &tokio::net::UnixStream = self.sock.as_ref();
        loop {
            stream.readable().await?;
            let got = stream.try_io(tokio::io::Interest::READABLE, || {
                let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmCredentials(1))];
                let mut control = RecvAncillaryBuffer::new(&mut space);
                let msg = rustix::net::recvmsg(
                    stream,
                    &mut [IoSliceMut::new(buf)],
                    &mut control,
                    RecvFlags::CMSG_CLOEXEC,
                )?;
                let pid = control.drain().find_map(|m| match m {
                    RecvAncillaryMessage::ScmCredentials(c) => Some(c.pid.as_raw_nonzero().get()),
                    _ => None,
                });
                Ok((msg.bytes, pid))
            });
            match got {
                Ok((0, _)) => return Ok(0),
                Ok((n, Some(pid))) if pid == self.shell => return Ok(n),
                Ok((n, pid)) => {
                    self.forged += n as u64;
                    tracing::warn!(
                        shell = self.shell,
                        writer = ?pid,
                        "a shell session's completion channel got {n} bytes from another process; dropped"
                    );
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// A stream socket pair for a shell: the gateway's end (credentials passed with every
/// message) and the shell's.
fn shell_socket() -> Result<(tokio::net::UnixStream, OwnedFd), String> {
    use rustix::net::{AddressFamily, SocketFlags, SocketType};
    let (ours, theirs) = rustix::net::socketpair(
        AddressFamily::UNIX,
        SocketType::STREAM,
        SocketFlags::CLOEXEC,
        None,
    )
    .map_err(|e| format!("making the shell's socket: {e}"))?;
    rustix::net::sockopt::set_socket_passcred(&ours, true)
        .map_err(|e| format!("SO_PASSCRED on the shell's socket: {e}"))?;
    let std = std::os::unix::net::UnixStream::from(ours);
    std.set_nonblocking(true)
        .map_err(|e| format!("the shell's socket: {e}"))?;
    let ours =
        tokio::net::UnixStream::from_std(std).map_err(|e| format!("the shell's socket: {e}"))?;
    Ok((ours, theirs))
}

/// A started session's ends, for [`pump`].
pub struct Started {
    pub child: Child,
    pub pid: u32,
    pub input: Input,
    pub out: Output,
    pub err: Option<ChildStderr>,
    /// Where answers to a terminal's queries are written.
    pub replies: Option<pipe::Sender>,
    pub cgroup: Option<CallCgroup>,
    /// A shell's completion records.
    pub records: Option<Records>,
}

/// The stream a session's main output comes from.
pub enum Output {
    Pipe(ChildStdout),
    Terminal(pipe::Receiver),
}

impl Output {
    async fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Self::Pipe(p) => p.read(buf).await,
            Self::Terminal(t) => t.read(buf).await,
        }
    }

    fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        match self {
            Self::Pipe(p) => p.as_fd(),
            Self::Terminal(t) => t.as_fd(),
        }
    }
}

/// Starts `spec` inside a cgroup of `cgroups` (when there are any), with the engine's rlimits
/// and niceness.
pub async fn start(spec: Spec<'_>, cgroups: Option<&Arc<Cgroups>>) -> Result<Started, String> {
    let (program, args) = spec.argv.split_first().ok_or("the command is empty")?;
    let resolved = spec.program;
    let mut terminal = None;
    let mut socket = None;
    let mut cmd = match spec.tty {
        None => {
            let mut cmd = Command::new(resolved);
            let stdin = match spec.shell {
                true => {
                    let (ours, theirs) = shell_socket()?;
                    socket = Some(ours);
                    Stdio::from(theirs)
                }
                false => Stdio::piped(),
            };
            cmd.arg0(program)
                .args(args)
                .stdin(stdin)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .process_group(0);
            cmd
        }
        Some((cols, rows)) => {
            let (master, peer) =
                open_pty(cols, rows).map_err(|e| format!("opening a terminal: {e}"))?;
            let setsid = resolve_program("setsid", Some(crate::programs::DEFAULT_PATH)).ok_or(
                "terminal sessions need util-linux `setsid` (package util-linux), which is not installed",
            )?;
            let mut cmd = Command::new(setsid);
            // Not in a group of its own: a group leader cannot call setsid.
            cmd.arg("--ctty")
                .arg(resolved)
                .args(args)
                .stdin(Stdio::from(dup(&peer)?))
                .stdout(Stdio::from(dup(&peer)?))
                .stderr(Stdio::from(peer));
            terminal = Some(master);
            cmd
        }
    };
    cmd.env_clear().envs(&spec.env).current_dir(spec.cwd);
    let (child, cgroup) = limits::spawn_contained(
        cmd,
        cgroups.map(|c| &**c),
        spec.limits,
        spec.niceness,
        spec.confinement,
    )
    .await?;
    let mut child = child.map_err(|e| format!("starting {program:?}: {e}"))?;
    let pid = child.id().unwrap_or(0);
    let mut records = None;
    let (input, out, err, replies) = match terminal {
        None => (
            match socket {
                Some(sock) => {
                    let (read, write) = sock.into_split();
                    records = Some(Records {
                        sock: read,
                        shell: pid as i32,
                        forged: 0,
                    });
                    Input::Shell(write)
                }
                None => Input::Pipe(child.stdin.take()),
            },
            Output::Pipe(child.stdout.take().ok_or("no stdout")?),
            child.stderr.take(),
            None,
        ),
        Some(master) => {
            let io = |e: std::io::Error| format!("terminal: {e}");
            let writer = pipe::Sender::from_owned_fd_unchecked(dup(&master)?).map_err(io)?;
            let replies = pipe::Sender::from_owned_fd_unchecked(dup(&master)?).map_err(io)?;
            let reader = pipe::Receiver::from_owned_fd_unchecked(master).map_err(io)?;
            (
                Input::Terminal(writer),
                Output::Terminal(reader),
                None,
                Some(replies),
            )
        }
    };
    Ok(Started {
        child,
        pid,
        input,
        out,
        err,
        replies,
        cgroup,
        records,
    })
}

fn dup(fd: &OwnedFd) -> Result<OwnedFd, String> {
    fd.try_clone().map_err(|e| format!("dup: {e}"))
}

/// A PTY: the non-blocking master, and its peer with echo off and the given size.
fn open_pty(cols: u16, rows: u16) -> rustix::io::Result<(OwnedFd, OwnedFd)> {
    use rustix::pty::{OpenptFlags, grantpt, ioctl_tiocgptpeer, openpt, unlockpt};
    use rustix::termios::{
        LocalModes, OptionalActions, Winsize, tcgetattr, tcsetattr, tcsetwinsize,
    };
    let flags = OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC;
    let master = openpt(flags)?;
    grantpt(&master)?;
    unlockpt(&master)?;
    let peer = ioctl_tiocgptpeer(&master, flags)?;
    let mut t = tcgetattr(&peer)?;
    // The model knows what it typed; programs that echo by themselves (readline) still do.
    t.local_modes.remove(LocalModes::ECHO);
    tcsetattr(&peer, OptionalActions::Now, &t)?;
    tcsetwinsize(
        &peer,
        Winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        },
    )?;
    rustix::fs::fcntl_setfl(&master, rustix::fs::OFlags::NONBLOCK)?;
    Ok((master, peer))
}

/// Reads what a non-blocking stream holds right now, without waiting.
fn drain_now(fd: std::os::fd::BorrowedFd<'_>, mut sink: impl FnMut(&[u8])) {
    let mut buf = [0u8; 64 * 1024];
    loop {
        match rustix::io::read(fd, &mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => sink(&buf[..n]),
        }
    }
}

/// After the leader exits, how long output may keep arriving (from what it left behind,
/// which is being killed) before the session is reported ended.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// Drains a session's streams into its rings until its leader has exited and its output
/// ended, then records the exit. Runs as the session's own task.
pub async fn pump(
    session: Arc<Session>,
    mut child: Child,
    mut out: Output,
    mut err: Option<ChildStderr>,
    mut marker: Option<Records>,
    mut replies: Option<pipe::Sender>,
) {
    let mut filter = matches!(out, Output::Terminal(_)).then(Filter::default);
    let (mut out_buf, mut err_buf, mut marker_buf) =
        (vec![0u8; 64 * 1024], vec![0u8; 64 * 1024], vec![0u8; 4096]);
    let mut records: Vec<u8> = Vec::new();
    let (mut out_open, mut err_open) = (true, err.is_some());
    let mut status = None;
    let mut drain_until = None;
    let mut push_out =
        |session: &Session, bytes: &[u8], replies: &mut Option<pipe::Sender>| match &mut filter {
            None => session.push(false, bytes),
            Some(f) => {
                let (text, answer) = f.feed(bytes);
                session.push(false, &text);
                if let Some(r) = replies.as_mut().filter(|_| !answer.is_empty()) {
                    let _ = r.try_write(&answer);
                }
            }
        };
    loop {
        if status.is_some() && !out_open && !err_open {
            break;
        }
        tokio::select! {
            r = out.read(&mut out_buf), if out_open => match r {
                Ok(n) if n > 0 => push_out(&session, &out_buf[..n], &mut replies),
                // A terminal's master reads EIO once no process holds the terminal.
                _ => out_open = false,
            },
            r = read_opt(&mut err, &mut err_buf), if err_open => match r {
                Ok(n) if n > 0 => session.push(true, &err_buf[..n]),
                _ => err_open = false,
            },
            r = read_records(&mut marker, &mut marker_buf) => match r {
                Ok(n) if n > 0 => {
                    records.extend_from_slice(&marker_buf[..n]);
                    while let Some(end) = records.iter().position(|b| *b == 0) {
                        let record: Vec<u8> = records.drain(..=end).collect();
                        // Everything the command wrote is in the pipes by now: take it first.
                        drain_now(out.fd(), |b| push_out(&session, b, &mut replies));
                        if let Some(e) = &err {
                            drain_now(e.as_fd(), |b| session.push(true, b));
                        }
                        session.marker(&String::from_utf8_lossy(&record[..end]));
                    }
                }
                _ => marker = None,
            },
            s = child.wait(), if status.is_none() => {
                status = Some(s.ok());
                // What the leader left behind goes with it.
                session.kill_all();
                drain_until = Some(tokio::time::Instant::now() + DRAIN_GRACE);
            },
            _ = sleep_opt(drain_until) => break,
        }
    }
    session.exited(status.flatten());
}

/// Reads from `s`, or waits forever when there is no stream.
async fn read_opt<R: tokio::io::AsyncRead + Unpin>(
    s: &mut Option<R>,
    buf: &mut [u8],
) -> std::io::Result<usize> {
    match s {
        Some(s) => s.read(buf).await,
        None => std::future::pending().await,
    }
}

/// Reads a shell's records, or waits forever when there are none.
async fn read_records(s: &mut Option<Records>, buf: &mut [u8]) -> std::io::Result<usize> {
    match s {
        Some(s) => s.read(buf).await,
        None => std::future::pending().await,
    }
}

async fn sleep_opt(until: Option<tokio::time::Instant>) {
    match until {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

/// The processes of a session other than `leader`: its cgroup's members when it has one,
/// else the members of its process group.
pub fn members(cgroup: Option<&CallCgroup>, leader: u32) -> Vec<i32> {
    let all = match cgroup {
        Some(cg) => cg.members(),
        None => group_members(leader),
    };
    all.into_iter().filter(|p| *p as u32 != leader).collect()
}

fn group_members(pgid: u32) -> Vec<i32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
        let pgrp = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(2))
            .and_then(|p| p.parse::<u32>().ok());
        if pgrp == Some(pgid) {
            out.push(pid);
        }
    }
    out
}

/// The shell text that runs `command` with stdin from /dev/null and then reports
/// `<nonce> <seq> <status> <folder>` and a NUL back through the shell's socket (its stdin,
/// see [`Records`]) — a channel the command's output cannot reach. The command travels as
/// data in a quoted here-document whose delimiter holds the session's secret nonce.
pub fn wrap(command: &str, nonce: &str, seq: u64) -> String {
    let delimiter = format!("__TS_{nonce}_{seq}");
    let newline = if command.ends_with('\n') { "" } else { "\n" };
    format!(
        "IFS= read -r -d '' __ts_cmd <<'{delimiter}' || :\n{command}{newline}{delimiter}\n\
         eval \"$__ts_cmd\" </dev/null\n\
         builtin printf '%s %d %d %s\\0' {nonce} {seq} \"$?\" \"$PWD\" >&0\n"
    )
}
