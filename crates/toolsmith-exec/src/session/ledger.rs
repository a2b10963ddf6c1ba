//! Sessions' process groups written down where no cgroup holds them (`--no-cgroups`, or a
//! machine without a writable pids controller). A server killed outright (SIGKILL, the OOM
//! killer) cannot end its sessions, and a dev server or a shell's background job would run on
//! for good; so the next engine that starts on this machine ends what such a server left.
//!
//! One file per engine in `$TMPDIR/toolsmith-sessions-<uid>/` (mode 0700, this user's),
//! named `<server pid>.<its start time>.<n>`, one line per live session: `<pgid> <the
//! leader's start time>`. At start, an engine sweeps every file whose server is gone (no such
//! pid, or that pid with another start time): a group whose leader still runs with the
//! recorded start time is killed whole; a group whose leader is gone loses the members that
//! started after the leader did (a pid is not handed out again while a group still uses it
//! as its id); a pid now held by another process means the group is not ours any more. Start times are the kernel's (clock ticks since boot, from /proc), so a
//! recycled pid is never taken for one of ours.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rustix::process::{Pid, Signal, kill_process, kill_process_group};

/// This engine's record of its sessions' process groups.
#[derive(Debug)]
pub(crate) struct Ledger {
    file: PathBuf,
    /// pgid → the leader's start time.
    groups: Mutex<BTreeMap<u32, u64>>,
}

impl Ledger {
    /// Sweeps what killed servers left in `dir`, then opens this engine's file there.
    /// `None` when the folder cannot be made private to this user.
    pub(crate) fn open(dir: &Path) -> Option<Self> {
        use std::os::unix::fs::{DirBuilderExt, MetadataExt};
        let _ = std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir);
        let meta = std::fs::symlink_metadata(dir).ok()?;
        if !meta.is_dir()
            || meta.uid() != rustix::process::getuid().as_raw()
            || meta.mode() & 0o077 != 0
        {
            tracing::warn!(
                "{}: not a private folder of this user; a killed server's sessions will not be ended by the next one",
                dir.display()
            );
            return None;
        }
        sweep(dir);
        static ENGINES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let me = std::process::id();
        let name = format!(
            "{me}.{}.{}",
            start_time(me).unwrap_or(0),
            ENGINES.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        Some(Self {
            file: dir.join(name),
            groups: Mutex::default(),
        })
    }

    /// The default folder: per user, under the temporary directory.
    pub(crate) fn default_dir() -> PathBuf {
        std::env::temp_dir().join(format!(
            "toolsmith-sessions-{}",
            rustix::process::getuid().as_raw()
        ))
    }

    /// Records the group `pgid` (its leader running now).
    pub(crate) fn add(&self, pgid: u32) {
        if let Some(start) = start_time(pgid) {
            let mut groups = self.groups.lock().unwrap_or_else(|e| e.into_inner());
            groups.insert(pgid, start);
            self.write(&groups);
        }
    }

    /// Forgets the group `pgid` (its session ended and was killed).
    pub(crate) fn remove(&self, pgid: u32) {
        let mut groups = self.groups.lock().unwrap_or_else(|e| e.into_inner());
        if groups.remove(&pgid).is_some() {
            self.write(&groups);
        }
    }

    fn write(&self, groups: &BTreeMap<u32, u64>) {
        if groups.is_empty() {
            let _ = std::fs::remove_file(&self.file);
            return;
        }
        let text: String = groups
            .iter()
            .map(|(pgid, start)| format!("{pgid} {start}\n"))
            .collect();
        // Written aside then renamed: a sweep never reads half a file.
        let tmp = self.file.with_extension("tmp");
        if let Err(e) = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, &self.file))
        {
            tracing::warn!("{}: {e}", self.file.display());
        }
    }
}

impl Drop for Ledger {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.file);
    }
}

/// Ends the groups recorded by servers that are gone, and removes their files.
fn sweep(dir: &Path) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let mut parts = name.split('.');
        let (Some(Ok(pid)), Some(Ok(start)), Some(_), None) = (
            parts.next().map(str::parse::<u32>),
            parts.next().map(str::parse::<u64>),
            parts.next(),
            parts.next(),
        ) else {
            continue; // a file being written (`.tmp`), or not ours
        };
        if start_time(pid) == Some(start) {
            continue; // its server is alive
        }
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        for line in text.lines() {
            let mut fields = line.split_whitespace().map(str::parse::<u64>);
            if let (Some(Ok(pgid)), Some(Ok(started))) = (fields.next(), fields.next())
                && let Ok(pgid) = u32::try_from(pgid)
            {
                end_group(pgid, started);
            }
        }
        let _ = std::fs::remove_file(entry.path());
    }
}

/// Kills the group `pgid` whose leader started at `started`, as described above.
fn end_group(pgid: u32, started: u64) {
    let Some(id) = i32::try_from(pgid).ok().and_then(Pid::from_raw) else {
        return;
    };
    match start_time(pgid) {
        Some(t) if t == started => {
            tracing::info!("ending session process group {pgid}, left by a killed server");
            let _ = kill_process_group(id, Signal::KILL);
            return;
        }
        // Another process has that pid now: the group is not ours any more.
        Some(_) => return,
        None => {}
    }
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Some((group, start)) = stat(pid).map(|s| (s.pgid, s.start))
            && group == pgid
            && start >= started
            && let Some(p) = i32::try_from(pid).ok().and_then(Pid::from_raw)
        {
            tracing::info!("ending process {pid} of session group {pgid}, left by a killed server");
            let _ = kill_process(p, Signal::KILL);
        }
    }
}

struct Stat {
    pgid: u32,
    start: u64,
}

/// A process's group and start time, from `/proc/<pid>/stat`.
fn stat(pid: u32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command name's closing parenthesis: state (field 3), ppid, pgrp (5), …,
    // starttime (22).
    let fields: Vec<&str> = text.rsplit_once(") ")?.1.split_whitespace().collect();
    Some(Stat {
        pgid: fields.get(2)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

fn start_time(pid: u32) -> Option<u64> {
    stat(pid).map(|s| s.start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dead_servers_groups_are_ended_and_a_live_ones_kept() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ledger_dir = dir.path().join("ledger");
        let spawn = || {
            use std::os::unix::process::CommandExt;
            std::process::Command::new("sleep")
                .arg("60")
                .process_group(0)
                .spawn()
                .expect("sleep")
        };
        let (mut ours, mut left) = (spawn(), spawn());
        // A live engine's ledger (this process) holds one group.
        let ledger = Ledger::open(&ledger_dir).expect("ledger");
        ledger.add(ours.id());
        // A server that is gone (pid 1 with another start time: not that server) left one.
        std::fs::write(
            ledger_dir.join("1.999999999.0"),
            format!("{} {}\n", left.id(), start_time(left.id()).expect("start")),
        )
        .expect("write");
        // And a line whose leader's start time does not match: a recycled pid, kept.
        let mut stranger = spawn();
        std::fs::write(
            ledger_dir.join("1.999999998.0"),
            format!("{} 1\n", stranger.id()),
        )
        .expect("write");
        let other = Ledger::open(&ledger_dir).expect("a second engine sweeps");
        let status = left.wait().expect("wait");
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(9)
        );
        assert!(
            ours.try_wait().expect("try_wait").is_none(),
            "a live engine's"
        );
        assert!(stranger.try_wait().expect("try_wait").is_none(), "not ours");
        let names: Vec<String> = std::fs::read_dir(&ledger_dir)
            .expect("dir")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 1, "only the live engine's file: {names:?}");
        ledger.remove(ours.id());
        assert_eq!(std::fs::read_dir(&ledger_dir).expect("dir").count(), 0);
        drop((ledger, other));
        for c in [&mut ours, &mut stranger] {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
