//! Working folders for calls: each call gets an empty folder of its own, private to this user
//! (mode 0700). Creating and removing one costs ~100 µs on ext4 (two journalled directory
//! operations) — more than the rest of the engine's work on a call — so a folder a call left
//! exactly as it found it is kept for a later call instead of being removed.
//!
//! A folder is reused only when all of this holds once the call is over:
//! - every process of the call is known to be gone: the call's cgroup was emptied (a process
//!   that left the group with `setsid` is still in the cgroup). Without a cgroup nothing
//!   proves that, and the folder is removed;
//! - it is still a folder there (not a symlink; on the same device and inode — a folder
//!   removed and made again may get the same inode, and is then just as empty and private),
//!   owned by this user, mode 0700 exactly, and empty;
//! - it carries the same extended attributes (names and values) and inode flags as when it
//!   was made: a caller's `setxattr` would otherwise be read by later callers of other tools,
//!   and a `chattr +i` (as root) would hand every later call a folder it cannot write.
//!
//! Anything else — files left behind, a changed mode, an attribute or a flag, a folder moved
//! away — removes it (clearing the immutable and append-only flags first, so it can be
//! removed) and the next call gets a new one. At most [`KEEP`] folders wait; the rest are
//! removed.
//!
//! The folders live in one folder per engine, `toolsmith-calls-<pid>-…` in the temporary
//! directory, removed when the engine is dropped. A process killed outright leaves its folder
//! behind; the next engine removes those whose process is gone ([`sweep`]).

use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Mutex;

use rustix::fs::{IFlags, Mode, OFlags};
use tempfile::TempDir;

/// Empty folders kept for reuse, at most.
const KEEP: usize = 64;

/// The pool of idle folders. Dropping it removes them.
#[derive(Debug, Default)]
pub struct Folders {
    idle: Mutex<Vec<Folder>>,
    /// The folder this engine's call folders are made in (0700), which no sandboxed process
    /// may reach but its own call's; `None`: the temporary directory.
    root: Option<TempDir>,
}

/// One working folder and what it was when made.
#[derive(Debug)]
pub struct Folder {
    dir: TempDir,
    dev: u64,
    ino: u64,
    marks: Marks,
}

/// What a folder carries besides its entries and mode: extended attributes (names and
/// values, sorted) and inode flags (`None` where the filesystem has none).
#[derive(Debug, PartialEq, Eq)]
struct Marks {
    xattrs: Vec<(Vec<u8>, Vec<u8>)>,
    flags: Option<u32>,
}

fn open_dir(path: &Path) -> std::io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    Ok(rustix::fs::open(path, flags, Mode::empty())?)
}

impl Marks {
    fn of(fd: &OwnedFd) -> std::io::Result<Self> {
        let mut names = vec![0u8; rustix::fs::flistxattr_query(fd)?];
        let n = rustix::fs::flistxattr(fd, &mut names[..])?;
        names.truncate(n);
        let mut xattrs = Vec::new();
        for name in names.split(|b| *b == 0).filter(|n| !n.is_empty()) {
            let name = std::ffi::CString::new(name).map_err(std::io::Error::other)?;
            let mut value = vec![0u8; rustix::fs::fgetxattr_query(fd, name.as_c_str())?];
            let n = rustix::fs::fgetxattr(fd, name.as_c_str(), &mut value[..])?;
            value.truncate(n);
            xattrs.push((name.into_bytes(), value));
        }
        xattrs.sort();
        let flags = rustix::fs::ioctl_getflags(fd).ok().map(|f| f.bits());
        Ok(Self { xattrs, flags })
    }
}

impl Folder {
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Whether the folder is as it was made: the same directory, this user's, 0700, empty,
    /// with the same extended attributes and inode flags.
    fn untouched(&self) -> bool {
        let Ok(fd) = open_dir(self.path()) else {
            return false;
        };
        let Ok(meta) = std::fs::symlink_metadata(self.path()) else {
            return false;
        };
        let Ok(stat) = rustix::fs::fstat(&fd) else {
            return false;
        };
        meta.is_dir()
            && (stat.st_dev, stat.st_ino) == (meta.dev(), meta.ino())
            && meta.dev() == self.dev
            && meta.ino() == self.ino
            && meta.uid() == rustix::process::geteuid().as_raw()
            && meta.mode() & 0o7777 == 0o700
            && meta.nlink() == 2
            && Marks::of(&fd).is_ok_and(|m| m == self.marks)
            && std::fs::read_dir(self.path()).is_ok_and(|mut d| d.next().is_none())
    }

    /// Removes the folder, clearing the flags that would keep it (immutable, append-only)
    /// on it and on what it holds first.
    fn discard(self) {
        let stuck = IFlags::IMMUTABLE | IFlags::APPEND;
        let unstick = |path: &Path| {
            if let Ok(fd) = open_dir(path).or_else(|_| {
                let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
                rustix::fs::open(path, flags, Mode::empty()).map_err(std::io::Error::from)
            }) && let Ok(f) = rustix::fs::ioctl_getflags(&fd)
                && f.intersects(stuck)
            {
                let _ = rustix::fs::ioctl_setflags(&fd, f - stuck);
            }
        };
        unstick(self.path());
        for entry in std::fs::read_dir(self.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            unstick(&entry.path());
        }
        drop(self.dir);
    }
}

impl Folders {
    /// A pool whose folders are made in a folder of its own in the temporary directory.
    pub fn new() -> Self {
        sweep(&std::env::temp_dir());
        let prefix = format!("{PREFIX}{}-", std::process::id());
        let root = tempfile::Builder::new()
            .prefix(&prefix)
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .tempdir()
            .inspect_err(|e| {
                tracing::warn!("no folder for call folders ({e}); using the temporary directory")
            })
            .ok();
        Self {
            idle: Mutex::default(),
            root,
        }
    }

    /// Where call folders are made.
    pub fn root(&self) -> Option<&Path> {
        self.root.as_ref().map(TempDir::path)
    }

    /// An empty folder: an idle one, or a new one.
    pub fn take(&self) -> std::io::Result<Folder> {
        if let Some(f) = self.lock().pop() {
            return Ok(f);
        }
        let mut builder = tempfile::Builder::new();
        builder
            .prefix("toolsmith-call-")
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700));
        let dir = match &self.root {
            Some(root) => builder.tempdir_in(root.path())?,
            None => builder.tempdir()?,
        };
        let meta = std::fs::symlink_metadata(dir.path())?;
        let marks = Marks::of(&open_dir(dir.path())?)?;
        Ok(Folder {
            dir,
            dev: meta.dev(),
            ino: meta.ino(),
            marks,
        })
    }

    /// Gives a folder back after its call. `contained` says every process of the call is
    /// known to be gone; only then, and only if the folder is untouched, is it kept.
    /// Otherwise it is removed.
    pub fn give_back(&self, folder: Folder, contained: bool) {
        if contained && folder.untouched() {
            let mut idle = self.lock();
            if idle.len() < KEEP {
                idle.push(folder);
                return;
            }
        }
        folder.discard();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Folder>> {
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What an engine's folder of call folders is named first.
const PREFIX: &str = "toolsmith-calls-";

/// Removes the folders of call folders in `tmp` that engines killed outright left behind:
/// named `toolsmith-calls-<pid>-…`, owned by this user, a real folder (not a link), and
/// `<pid>` no longer running. Best effort: what cannot be read or removed stays.
fn sweep(tmp: &Path) {
    let me = rustix::process::geteuid().as_raw();
    for entry in std::fs::read_dir(tmp).into_iter().flatten().flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let path = entry.path();
        let ours = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir() && m.uid() == me);
        if ours && pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn sweep_removes_only_what_a_gone_process_left() {
        let tmp = tempfile::tempdir().expect("tmp");
        let mut child = std::process::Command::new("true").spawn().expect("spawn");
        let dead = child.id();
        child.wait().expect("wait");
        let me = std::process::id();
        let left = tmp.path().join(format!("{PREFIX}{dead}-abc"));
        std::fs::create_dir_all(left.join("toolsmith-call-x")).expect("mkdir");
        std::fs::write(left.join("toolsmith-call-x/file"), "x").expect("write");
        let mine = tmp.path().join(format!("{PREFIX}{me}-def"));
        let odd = tmp.path().join(format!("{PREFIX}notapid"));
        let target = tmp.path().join("elsewhere");
        for d in [&mine, &odd, &target] {
            std::fs::create_dir(d).expect("mkdir");
        }
        let link = tmp.path().join(format!("{PREFIX}{dead}-link"));
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        sweep(tmp.path());
        assert!(!left.exists(), "a gone process's folder stays");
        for kept in [&mine, &odd, &target] {
            assert!(kept.exists(), "{} was removed", kept.display());
        }
        assert!(
            std::fs::symlink_metadata(&link).is_ok(),
            "a link was followed or removed"
        );
    }

    #[test]
    fn only_an_untouched_folder_of_a_contained_call_is_reused() {
        let pool = Folders::default();
        let a = pool.take().expect("folder");
        let path = a.path().to_path_buf();
        pool.give_back(a, true);
        let a = pool.take().expect("folder");
        assert_eq!(a.path(), path, "an untouched folder is reused");

        // Not contained: removed, whatever its state.
        pool.give_back(a, false);
        assert!(!path.exists(), "removed");

        // Each change the next call could see makes the pool drop the folder.
        type Change = fn(&Path);
        let changes: [(&str, Change); 6] = [
            ("an extended attribute set", |p| {
                rustix::fs::setxattr(
                    p,
                    "user.left",
                    b"by a caller",
                    rustix::fs::XattrFlags::empty(),
                )
                .expect("setxattr")
            }),
            ("made immutable (needs root: CAP_LINUX_IMMUTABLE)", |p| {
                let fd = open_dir(p).expect("open");
                let flags = rustix::fs::ioctl_getflags(&fd).expect("flags");
                rustix::fs::ioctl_setflags(&fd, flags | IFlags::IMMUTABLE).expect("chattr +i");
            }),
            ("a file left", |p| {
                std::fs::write(p.join("x"), b"1").expect("write")
            }),
            ("a folder left", |p| {
                std::fs::create_dir(p.join("d")).expect("mkdir")
            }),
            ("its mode changed", |p| {
                std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o777)).expect("chmod")
            }),
            ("replaced by a symlink to an empty folder", |p| {
                std::fs::remove_dir(p).expect("rmdir");
                let elsewhere = p.with_extension("elsewhere");
                std::fs::create_dir(&elsewhere).expect("mkdir");
                std::fs::set_permissions(&elsewhere, std::fs::Permissions::from_mode(0o700))
                    .expect("chmod");
                std::os::unix::fs::symlink(&elsewhere, p).expect("symlink");
            }),
        ];
        for (what, change) in changes {
            if what.contains("needs root") && !rustix::process::geteuid().is_root() {
                eprintln!("skipped, not root: {what}");
                continue;
            }
            let f = pool.take().expect("folder");
            let path = f.path().to_path_buf();
            change(&path);
            pool.give_back(f, true);
            assert!(pool.lock().is_empty(), "{what}: not kept");
            assert!(!path.exists(), "{what}: removed");
            let _ = std::fs::remove_dir(path.with_extension("elsewhere"));
        }
    }
}
